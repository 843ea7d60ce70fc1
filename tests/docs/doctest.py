#!/usr/bin/python3
"""Every command block of README.md and docs/*.md is a test: it runs, and what it prints is
compared with what the block shows, byte for byte, so that a doc cannot go stale silently.

How a block is written (the language after the opening fence decides what is checked):

  ```console   a transcript: each line `$ COMMAND` is run (by a fresh bash, in the document's
               scratch directory, `$?` the exit code of the command before) and the lines after
               it, up to the next `$ `, are what it prints (stdout and stderr together). Each command must exit 0 unless `exit=` says
               otherwise. A line that is only `...` (indented or not) stands for any number
               of lines left out; nothing else is approximate unless `normalise=` says so.
  ```sh        a script, run by `bash -e`; it shows no output, so it must exit 0.
  ```python    run by the Python the bindings are built for, with them importable; exit 0.
  ```cpp       must be, byte for byte, the program named by `source=` (examples/cpp/NAME.cpp,
               which the build compiles as `example_NAME`); the program is run and must exit 0.
  ```json      unchecked, unless `file=PATH` (write it to PATH in the scratch directory, for
               the blocks after it) or `source=PATH` (it must be the file PATH of the
               repository, byte for byte).
  ```text      never run. With `output`, it is what the runnable block before it (python,
               cpp) prints, compared as a transcript's output is.
  ```yaml, ```ebnf, ...   never run.

A fence without a language is an error (say `text`), and so is a `text` block showing a
`$ clampai` command (say `console`): either would escape this test.

How a block is checked is said by an HTML comment on the line just before it (blank lines
between are allowed), its settings separated by spaces:

  <!-- doctest: normalise=digest,time exit=0,1 -->
  <!-- doctest: skip=needs an LLM vendor's API key -->

  skip=REASON        not run; the reason (the rest of the comment, so it comes last) is
                     required, and the test lists every skipped block.
  normalise=KINDS    in both the shown and the actual output, before comparing: `digest`
                     (sha256:HEX, sha256:HEX... and sha256:... are one digest, and so are
                     any two 64-digit hex strings), `time` (durations such as `0.076 s` or
                     `12 ms`, ISO 8601 times, a trace entry's "time":MICROSECONDS), `path`
                     (the scratch directory's absolute path is `.`).
  exit=N | N,M,...   the exit code of every command of a transcript, or of each in turn.
  file=PATH, source=PATH, output   as above.

README.md must link every page of docs/ (its table of contents), and each synopsis of
docs/CLI.md must name every option its command's --help lists.

Each document runs in its own scratch directory, in order, so a block may use what an earlier
block of the same document wrote. The directory holds `examples` (the repository's, read-only
by convention), and `clampai` is first on PATH. The docs are written for a user in the
repository's root directory, so their paths are relative to it.

Environment: CLAMPAI (the built command), CLAMPAI_SOURCE_DIR, CLAMPAI_PYTHON_DIR (where the
built Python package is; without it the python blocks are skipped, and listed), and
CLAMPAI_EXAMPLES_DIR (where the example_* programs are built). The python blocks run with the
interpreter running this script.
Arguments: the documents to check (default README.md and docs/*.md), relative to the source.
Exit status 0 if every block passed, 1 if one did not.
"""

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(os.environ.get("CLAMPAI_SOURCE_DIR", Path(__file__).resolve().parents[2]))
CLAMPAI = os.environ.get("CLAMPAI", "")
PYTHON_DIR = os.environ.get("CLAMPAI_PYTHON_DIR", "")
EXAMPLES_DIR = os.environ.get("CLAMPAI_EXAMPLES_DIR", "")
COMMAND_TIMEOUT = 120  # seconds: only so that a hang fails instead of blocking ctest

RUNNABLE = {"console", "sh", "python", "cpp"}
KNOWN_SETTINGS = {"skip", "normalise", "exit", "file", "source", "output"}
NORMALISERS = {"digest", "time", "path"}
FENCE = re.compile(r"^(\s*)```(.*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*doctest:(.*?)-->\s*$")


class DocError(Exception):
    """A block that is malformed (not a stale output: a mistake in how it is written)."""


class Block:
    def __init__(self, doc, line, lang, body, settings):
        self.doc, self.line, self.lang, self.body, self.settings = doc, line, lang, body, settings

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def parse_settings(text, where):
    settings = {}
    text, skip, reason = text.partition("skip=")
    if skip:
        if not reason.strip():
            raise DocError(f"{where}: `skip=` needs a reason")
        settings["skip"] = " ".join(reason.split())
    for item in text.split():
        key, _, value = item.partition("=")
        if key not in KNOWN_SETTINGS:
            raise DocError(f"{where}: unknown doctest setting `{key}` "
                           f"(known: {', '.join(sorted(KNOWN_SETTINGS))})")
        if key != "output" and not value:
            raise DocError(f"{where}: `{key}=` needs a value")
        settings[key] = value
    for kind in filter(None, settings.get("normalise", "").split(",")):
        if kind not in NORMALISERS:
            raise DocError(f"{where}: unknown normaliser `{kind}` "
                           f"(known: {', '.join(sorted(NORMALISERS))})")
    return settings


def blocks_of(doc):
    """The fenced blocks of `doc` (a path relative to SOURCE), each with its settings."""
    lines = (SOURCE / doc).read_text().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).strip()
        start = i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        if i == len(lines):
            raise DocError(f"{doc}:{start + 1}: a fence that is never closed")
        i += 1
        where = f"{doc}:{start + 1}"
        if not lang:
            raise DocError(f"{where}: a fence without a language: say `console` for a transcript, "
                           "`sh` for commands, `text` for anything that is not run")
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        d = DIRECTIVE.match(lines[j]) if j >= 0 else None
        settings = parse_settings(d.group(1), where) if d else {}
        if lang == "text" and any(l.startswith("$ clampai") for l in body) and "skip" not in settings:
            raise DocError(f"{where}: a `text` block showing a command: make it `console`")
        out.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", settings))
    return out


def normalise(text, kinds, scratch):
    if "path" in kinds:
        text = text.replace(str(scratch) + "/", "").replace(str(scratch), ".")
    if "digest" in kinds:
        text = re.sub(r"sha256:(?:[0-9a-f]{16,64}(?:\.\.\.)?|\.\.\.)", "sha256:<digest>", text)
        text = re.sub(r"\b[0-9a-f]{64}\b", "<digest>", text)
    if "time" in kinds:
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", "<time>", text)
        text = re.sub(r'"time":\d+', '"time":<time>', text)
        text = re.sub(r"\b\d+(?:\.\d+)? ?(?:s|ms|µs|us)\b", "<time>", text)
    return text


def matches(expected, actual):
    """True iff `actual` is `expected`, where a line `...` stands for any lines."""
    pattern = ""
    for line in expected.splitlines():
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += re.escape(line) + r"\n"
    return re.fullmatch(pattern, actual) is not None


def run(argv_or_script, scratch, env, shell=True, stdin=None):
    try:
        p = subprocess.run(["bash", "-c", argv_or_script] if shell else argv_or_script,
                           cwd=scratch, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"(still running after {COMMAND_TIMEOUT} s)\n"
    return p.returncode, p.stdout.decode(errors="replace")


def compare(block, expected, actual, scratch):
    kinds = set(filter(None, block.settings.get("normalise", "").split(",")))
    e, a = normalise(expected, kinds, scratch), normalise(actual, kinds, scratch)
    if matches(e, a):
        return None
    diff = "".join(difflib.unified_diff(e.splitlines(True), a.splitlines(True),
                                        "shown in " + block.where, "printed"))
    return diff


def exits_of(block, count):
    spec = block.settings.get("exit", "0")
    try:
        codes = [int(c) for c in spec.split(",")]
    except ValueError:
        raise DocError(f"{block.where}: exit={spec}: expected N or N,M,...")
    if len(codes) == 1:
        return codes * count
    if len(codes) != count:
        raise DocError(f"{block.where}: exit={spec} gives {len(codes)} exit codes for "
                       f"{count} commands")
    return codes


def check_console(block, scratch, env):
    commands = []  # (command, shown output)
    for line in block.body.splitlines():
        if line.startswith("$ "):
            commands.append([line[2:], ""])
        elif not commands:
            raise DocError(f"{block.where}: a transcript must start with `$ COMMAND`")
        else:
            commands[-1][1] += line + "\n"
    failures = []
    code = 0
    for (command, shown), want in zip(commands, exits_of(block, len(commands))):
        code, out = run(f"(exit {code or 0}); {command}", scratch, env)  # `$?`: the one before
        if code != want:
            failures.append(f"`{command}` exited {code}, the doc says {want}:\n{out}")
        diff = compare(block, shown, out, scratch)
        if diff:
            failures.append(f"`{command}` printed something else:\n{diff}")
    return failures


def check_block(block, scratch, env, last_output):
    """Returns the failures of `block` (an empty list if it passed)."""
    s = block.settings
    if block.lang == "console":
        return check_console(block, scratch, env)
    if block.lang == "sh":
        code, out = run_script(["bash", "-e"], block.body, scratch, env)
        return [] if code == 0 else [f"the script exited {code}:\n{out}"]
    if block.lang == "python":
        if not PYTHON_DIR:
            last_output[0] = False  # nor is its output block compared
            return None  # skipped: see main
        code, out = run_script([sys.executable, "-"], block.body, scratch, env)
        last_output[0] = out
        return [] if code == 0 else [f"the program exited {code}:\n{out}"]
    if block.lang == "cpp":
        source = s.get("source")
        if not source:
            raise DocError(f"{block.where}: a cpp block needs source=examples/cpp/NAME.cpp "
                           "(the program it shows, which the build compiles and this runs)")
        failures = same_as_source(block, source)
        name = Path(source).stem
        binary = Path(EXAMPLES_DIR) / f"example_{name}"
        if not binary.exists():
            last_output[0] = False  # its output block is not compared: this failure says why
            return failures + [f"{binary} is not built (build the target example_{name})"]
        code, out = run([str(binary)], scratch, env, shell=False)
        last_output[0] = out
        if code != 0:
            failures.append(f"{binary.name} exited {code}:\n{out}")
        return failures
    if block.lang == "text" and "output" in s:
        if last_output[0] is False:
            last_output[0] = None
            return []
        if last_output[0] is None:
            raise DocError(f"{block.where}: an `output` block after no python or cpp block")
        diff = compare(block, block.body, last_output[0], scratch)
        last_output[0] = None
        return [f"the program before it printed something else:\n{diff}"] if diff else []
    failures = []
    if "source" in s:
        failures += same_as_source(block, s["source"])
    if "file" in s:
        target = scratch / s["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.body)
    return failures


def run_script(argv, script, scratch, env):
    try:
        p = subprocess.run(argv, cwd=scratch, env=env, input=script.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"(still running after {COMMAND_TIMEOUT} s)\n"
    return p.returncode, p.stdout.decode(errors="replace")


def same_as_source(block, source):
    path = SOURCE / source
    if not path.is_file():
        return [f"source={source}: no such file in the repository"]
    if path.read_text() == block.body:
        return []
    diff = "".join(difflib.unified_diff(path.read_text().splitlines(True),
                                        block.body.splitlines(True), source, block.where))
    return [f"the block is not {source}:\n{diff}"]


def environment(bin_dir):
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    if PYTHON_DIR:
        env["PYTHONPATH"] = PYTHON_DIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["CLAMPAI_PROGRESS_INTERVAL_MS"] = "3600000"  # no progress lines: a command is done sooner
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CLAMPAI_CACHE_KEY", "CLAMPAI_MAX_INPUT_BYTES"):
        env.pop(key, None)
    env["LC_ALL"] = "C.UTF-8"
    env["COLUMNS"] = "100"
    return env


def options_missing_from_cli_page(env):
    """The options `clampai COMMAND --help` lists that docs/CLI.md's synopses do not."""
    text = (SOURCE / "docs" / "CLI.md").read_text()
    synopses = {}
    for m in re.finditer(r"^## `([a-z ]+?)(?: --ledger)?`\n\n```text\n(.*?)```", text, re.M | re.S):
        synopses[m.group(1)] = synopses.get(m.group(1), "") + m.group(2)
    problems = []
    for command, synopsis in synopses.items():
        code, out = run(f"clampai {command} --help", Path("/"), env)
        if code != 0:
            problems.append(f"`clampai {command} --help` exited {code}")
            continue
        listed = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z-]*)", out, re.M)) - {"--help"}
        problems += [f"the synopsis of `{command}` lacks {o} (in its --help)"
                     for o in sorted(listed) if not re.search(re.escape(o) + r"\b", synopsis)]
    return problems


def main(argv):
    if not CLAMPAI or not Path(CLAMPAI).is_file():
        print("set CLAMPAI to the built clampai command", file=sys.stderr)
        return 2
    docs = argv or ["README.md"] + sorted(str(p.relative_to(SOURCE))
                                          for p in (SOURCE / "docs").glob("*.md"))
    failed, skipped, passed = [], [], 0
    if "README.md" in docs:  # its table of contents names every page of docs/
        readme = (SOURCE / "README.md").read_text()
        for page in sorted((SOURCE / "docs").glob("*.md")):
            if f"](docs/{page.name})" not in readme:
                failed.append(("README.md", [f"the table of contents lacks docs/{page.name}"]))
    with tempfile.TemporaryDirectory(prefix="clampai-doctest-") as tmp:
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        (bin_dir / "clampai").symlink_to(CLAMPAI)
        env = environment(bin_dir)
        if "docs/CLI.md" in docs:  # every option of every command is on its page
            problems = options_missing_from_cli_page(env)
            if problems:
                failed.append(("docs/CLI.md", problems))
        for doc in docs:
            try:
                blocks = blocks_of(doc)
            except DocError as e:
                failed.append((doc, [str(e)]))
                continue
            scratch = Path(tmp) / doc.replace("/", "_")
            scratch.mkdir()
            (scratch / "examples").symlink_to(SOURCE / "examples")
            last_output = [None]
            for block in blocks:
                if "skip" in block.settings:
                    skipped.append((block, block.settings["skip"]))
                    continue
                if block.lang not in RUNNABLE and not block.settings:
                    continue
                try:
                    failures = check_block(block, scratch, env, last_output)
                except DocError as e:
                    failures = [str(e)]
                if failures is None:
                    skipped.append((block, "the Python bindings are not built (CLAMPAI_PYTHON_DIR)"))
                elif failures:
                    failed.append((block.where, failures))
                else:
                    passed += 1
            shutil.rmtree(scratch, ignore_errors=True)
    for block, reason in skipped:
        print(f"skipped {block.where} ({block.lang}): {reason}")
    for where, failures in failed:
        for f in failures:
            print(f"FAILED {where}: {f}")
    print(f"{passed} blocks passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
