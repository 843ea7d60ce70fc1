"""The Python examples of README.md and docs/PYTHON.md run as written (from the source tree)."""

import os
import re

import pytest

from conftest import SOURCE_DIR


def python_blocks(path, heading):
    """The ```python blocks of the section `heading` of a Markdown file."""
    text = (SOURCE_DIR / path).read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else None]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("path, heading", [("README.md", "Python"),
                                           ("docs/PYTHON.md", "Quick start")])
def test_the_documented_example_runs(path, heading, capsys):
    blocks = python_blocks(path, heading)
    assert blocks, f"no Python example under `{heading}` in {path}"
    cwd = os.getcwd()
    os.chdir(SOURCE_DIR)  # the examples name files relative to the repository
    try:
        for block in blocks:
            exec(compile(block, f"{path}:{heading}", "exec"), {"__name__": "__doc_example__"})
    finally:
        os.chdir(cwd)
    if path == "docs/PYTHON.md":
        out = capsys.readouterr().out
        assert "State({'errors': 0, 'processed': 10}) 4.000" in out
