"""`pip install --no-build-isolation --no-index ./python` into a fresh venv made with
`--system-site-packages`: the setuptools backend builds the extension with CMake from the
source tree, offline, and the installed package works from anywhere."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import SOURCE_DIR


def test_pip_installs_the_package_offline_into_a_fresh_venv(tmp_path):
    venv = Path(os.environ.get("CLAMPAI_PIP_VENV", tmp_path / "venv"))
    subprocess.run([sys.executable, "-m", "venv", "--clear", "--system-site-packages", str(venv)],
                   check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CLAMPAI_SOURCE_DIR")}
    # A kept CMake build directory (and ccache) make a re-run cheap; pip itself is offline.
    env["CLAMPAI_BUILD_DIR"] = os.environ.get("CLAMPAI_PIP_BUILD_DIR", str(tmp_path / "cmake"))
    env["CLAMPAI_CMAKE_ARGS"] = os.environ.get("CLAMPAI_PIP_CMAKE_ARGS", "")
    env["PIP_NO_INDEX"] = "1"
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-build-isolation", "--no-index",
         "--no-cache-dir", str(SOURCE_DIR / "python")],
        env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    script = textwrap.dedent(f"""
        import clampai, sys
        assert clampai.__file__.startswith({str(venv)!r}), clampai.__file__
        assert "site-packages" in clampai.__file__
        k = clampai.SafetyKernel(clampai.load_spec({str(SOURCE_DIR / "examples" / "quickstart.json")!r}))
        assert k.execute("process_batch").approved
        assert clampai.verify({str(SOURCE_DIR / "examples" / "quickstart.json")!r}).all_proved
        from clampai.invariants import pii_guard_invariant
        from clampai.hardening import SubprocessAttestor
        assert pii_guard_invariant("note").predicate["template"] == "pii_pattern"
        assert SubprocessAttestor(["/usr/bin/true"], {{"/usr/bin/true"}}).attest().passed
        import pathlib
        import clampai.adapters
        from clampai.adapters import SafeMCPServer
        assert pathlib.Path(clampai.adapters.__file__).with_name("mcp_server.pyi").is_file()
        print("ok", sys.prefix)
    """)
    run = subprocess.run([str(python), "-c", script], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ok ") and str(venv) in run.stdout
