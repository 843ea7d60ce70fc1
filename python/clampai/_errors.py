"""The exceptions of the clampai package: the C++ library's errors, by kind.

Every one means the caller gave something wrong (a bad spec, a missing file, a misuse); a
rejected action is never an exception but a value (`Decision`).
"""

from __future__ import annotations

from typing import List, Optional, Tuple


class ClampAIError(Exception):
    """Base of every error the library raises."""


class SpecError(ClampAIError, ValueError):
    """A task spec is malformed or ill-typed; nothing was built.

    The message is the command line's: one line per problem, `FILE:LINE:COLUMN: json.path:
    message` for a file, `json.path: message` for a TaskDefinition.
    """

    path: str = ""
    problems: List[Tuple[str, str, int, int]] = []
    file: Optional[str] = None
    line: int = 0
    column: int = 0


class FileError(ClampAIError, OSError):
    """An input file is missing, unreadable, not a regular file or too large."""


class TraceError(ClampAIError, OSError):
    """A trace file cannot be read or written."""


class InvalidArgument(ClampAIError, ValueError):
    """A documented precondition was violated (for example rolling back the wrong receipt)."""


class InternalError(ClampAIError, RuntimeError):
    """A bug in clampai (a counterexample the kernel does not confirm); please report it."""
