#!/usr/bin/python3
"""doctest.py fails on a stale or malformed doc and passes on a true one: each case writes a
small Markdown document into a scratch source tree and runs doctest.py on it with the built
`clampai` (CLAMPAI). Run by ctest as docs_examples_selftest."""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

DOCTEST = Path(__file__).resolve().parent / "doctest.py"
CLAMPAI = os.environ.get("CLAMPAI", "")
SOURCE = Path(os.environ.get("CLAMPAI_SOURCE_DIR", Path(__file__).resolve().parents[2]))

CHECK = """spec examples/quickstart.json (quickstart)
  digest      sha256:e1ba201856bf21951cfda302ec5177c9535feceb9c22ad798f563c74f5e0bebb
  variables   2: processed:int errors:int
  actions     1: process_batch(2.000)
  invariants  1 (1 blocking, 0 monitoring)
  budget      20.000, min action cost 0.100, step bound (T2) 200
ok: well-formed and well-typed; the initial state satisfies every blocking invariant
"""


def run_doc(text, extra_files=None, name="doc.md"):
    """Runs doctest.py on `text` as `name`; returns (exit code, output)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "examples").mkdir()
        (root / "examples" / "quickstart.json").write_text(
            (SOURCE / "examples" / "quickstart.json").read_text())
        for name, content in (extra_files or {}).items():
            (root / name).write_text(content)
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        env = dict(os.environ, CLAMPAI=CLAMPAI, CLAMPAI_SOURCE_DIR=str(root))
        p = subprocess.run([sys.executable, str(DOCTEST), name], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        return p.returncode, p.stdout.decode()


def console(body, directive=""):
    head = f"<!-- doctest: {directive} -->\n" if directive else ""
    return f"# A doc\n\n{head}```console\n{body}```\n"


class DocTest(unittest.TestCase):
    def passes(self, text, **kw):
        code, out = run_doc(text, **kw)
        self.assertEqual(code, 0, out)
        return out

    def fails(self, text, expected, **kw):
        code, out = run_doc(text, **kw)
        self.assertEqual(code, 1, out)
        self.assertIn(expected, out)
        return out

    def test_a_true_transcript_passes(self):
        self.passes(console("$ clampai check examples/quickstart.json\n" + CHECK))

    def test_a_changed_output_fails_with_a_diff(self):
        stale = CHECK.replace("step bound (T2) 200", "step bound (T2) 201")
        out = self.fails(console("$ clampai check examples/quickstart.json\n" + stale),
                         "printed something else")
        self.assertIn("-  budget      20.000, min action cost 0.100, step bound (T2) 201", out)
        self.assertIn("+  budget      20.000, min action cost 0.100, step bound (T2) 200", out)

    def test_a_missing_line_fails(self):
        self.fails(console("$ clampai check examples/quickstart.json\n" +
                           CHECK.replace("  actions     1: process_batch(2.000)\n", "")),
                   "printed something else")

    def test_exit_codes_are_checked(self):
        self.fails(console("$ clampai check nope.json\n"
                           "clampai: error: cannot read `nope.json`: No such file or directory\n"),
                   "exited 2, the doc says 0")
        self.passes(console("$ clampai check nope.json\n"
                            "clampai: error: cannot read `nope.json`: No such file or directory\n",
                            "exit=2"))
        self.fails(console("$ true\n$ false\n", "exit=0,0,1"), "gives 3 exit codes for 2 commands")
        self.passes(console("$ false\n$ echo $?\n1\n", "exit=1,0"))

    def test_ellipsis_stands_for_lines_only_where_shown(self):
        lines = CHECK.splitlines(True)
        self.passes(console("$ clampai check examples/quickstart.json\n" + lines[0] + "...\n" +
                            lines[-1]))
        self.passes(console("$ clampai check examples/quickstart.json\n" + lines[0] + "  ...\n"))
        self.fails(console("$ clampai check examples/quickstart.json\n" + lines[0] + "...\n" +
                           "not printed\n" + lines[-1]), "printed something else")

    def test_digests_are_normalised_only_where_marked(self):
        elided = CHECK.replace("e1ba201856bf21951cfda302ec5177c9535feceb9c22ad798f563c74f5e0bebb",
                               "...")
        self.fails(console("$ clampai check examples/quickstart.json\n" + elided),
                   "printed something else")
        self.passes(console("$ clampai check examples/quickstart.json\n" + elided,
                            "normalise=digest"))
        self.fails(console("$ echo took 0.5 s\ntook 0.7 s\n"), "printed something else")
        self.passes(console("$ echo took 0.5 s\ntook 0.7 s\n", "normalise=time"))

    def test_skips_need_a_reason_and_are_listed(self):
        out = self.passes("```sh\nexit 0\n```\n\n<!-- doctest: skip=needs a database -->\n"
                          "```sh\nexit 1\n```\n")
        self.assertIn("skipped doc.md:6 (sh): needs a database", out)
        self.fails("<!-- doctest: skip= -->\n```sh\nexit 1\n```\n", "`skip=` needs a reason")

    def test_malformed_blocks_fail(self):
        self.fails("```\n$ clampai check x.json\n```\n", "a fence without a language")
        self.fails("```sh\nexit 0\n", "a fence that is never closed")
        self.fails("```text\n$ clampai check x.json\n```\n", "make it `console`")
        self.fails("<!-- doctest: nromalise=time -->\n```console\n$ true\n```\n",
                   "unknown doctest setting `nromalise`")
        self.fails(console("$ true\n", "normalise=date"), "unknown normaliser `date`")
        self.fails(console("output first\n$ true\n"), "must start with `$ COMMAND`")

    def test_scripts_and_files(self):
        self.fails("```sh\ntrue\nfalse\ntrue\n```\n", "the script exited 1")
        self.passes("<!-- doctest: file=t.txt -->\n```json\n{}\n```\n\n"
                    "```console\n$ cat t.txt\n{}\n```\n")
        self.passes("<!-- doctest: source=examples/quickstart.json -->\n```json\n" +
                    (SOURCE / "examples" / "quickstart.json").read_text() + "```\n")
        self.fails("<!-- doctest: source=examples/quickstart.json -->\n```json\n{}\n```\n",
                   "the block is not examples/quickstart.json")

    def test_the_cli_page_names_every_option_of_each_command(self):
        page = "## `check`\n\n```text\nclampai check SPEC [--format text|json] [--quiet]\n```\n"
        self.passes(page, name="docs/CLI.md")
        self.fails(page.replace(" [--quiet]", ""), "the synopsis of `check` lacks --quiet",
                   name="docs/CLI.md")

    def test_python_blocks_run_and_their_output_is_compared(self):
        env_python = os.environ.get("CLAMPAI_PYTHON_DIR")
        if not env_python:
            self.skipTest("CLAMPAI_PYTHON_DIR not set")
        self.passes("```python\nprint(1 + 1)\n```\n\n<!-- doctest: output -->\n```text\n2\n```\n")
        self.fails("```python\nprint(1 + 1)\n```\n\n<!-- doctest: output -->\n```text\n3\n```\n",
                   "printed something else")
        self.fails("```python\nraise SystemExit(3)\n```\n", "the program exited 3")


if __name__ == "__main__":
    if not CLAMPAI:
        sys.exit("set CLAMPAI to the built clampai command")
    unittest.main(verbosity=2)
