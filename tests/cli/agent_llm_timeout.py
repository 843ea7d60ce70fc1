"""`clampai agent --llm-timeout-ms` against an LLM that never answers (issue 35): a listener on
127.0.0.1 that never accepts, so the connection completes in its queue, the request is sent and
no answer comes. The request fails as a `timeout` naming the configured limit, the step falls
back, and the run ends normally. No duration is asserted. Run by ctest with CLAMPAI and
CLAMPAI_SOURCE_DIR in the environment."""

import json
import os
import socket
import subprocess
import sys
import tempfile

CLAMPAI = os.environ["CLAMPAI"]
SOURCE = os.environ["CLAMPAI_SOURCE_DIR"]


def main():
    spec = os.path.join(SOURCE, "examples", "autoscale.json")
    env = dict(os.environ, OPENAI_API_KEY="sk-test-0123456789")
    env.pop("ANTHROPIC_API_KEY", None)
    with socket.socket() as stalled, tempfile.TemporaryDirectory() as tmp:
        stalled.bind(("127.0.0.1", 0))
        stalled.listen(16)
        url = "http://127.0.0.1:%d/v1" % stalled.getsockname()[1]
        transcript = os.path.join(tmp, "transcript.jsonl")
        p = subprocess.run([CLAMPAI, "agent", spec, "--llm", "openai", "--base-url", url,
                            "--llm-timeout-ms", "200", "--max-steps", "1", "--format", "json",
                            "--transcript", transcript],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode in (0, 1), (p.returncode, p.stdout, p.stderr)
        report = json.loads(p.stdout)
        assert report["llm_calls"] >= 1, report
        assert report["failures"]["timeout"] == report["llm_calls"], report
        with open(transcript) as f:
            lines = [json.loads(line) for line in f]
        assert lines, "no transcript line"
        for line in lines:
            assert line["error"]["kind"] == "timeout", line
            assert "within the total timeout of 200 ms" in line["error"]["message"], line
    # Out of range, or with the mock: refused before any request, naming the option.
    for args, message in ((["--llm", "openai", "--llm-timeout-ms", "0"], "--llm-timeout-ms"),
                          (["--llm", "openai", "--llm-timeout-ms", "3600001"], "--llm-timeout-ms"),
                          (["--llm", "openai", "--llm-timeout-ms", "soon"], "--llm-timeout-ms"),
                          (["--llm", "mock", "--llm-timeout-ms", "100"], "--llm-timeout-ms")):
        p = subprocess.run([CLAMPAI, "agent", spec, *args], capture_output=True, text=True,
                           env=env, timeout=60)
        assert p.returncode == 2, (args, p.returncode, p.stderr)
        assert message in p.stderr, (args, p.stderr)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
