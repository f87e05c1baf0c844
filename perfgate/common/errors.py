"""Errors perfgate reports to its user, and the exit codes they map to.

Every problem with what perfgate reads is raised as a PerfgateError carrying the file it is
about, so the CLI can print one line `perfgate: error: FILE: problem` and exit with a documented
code instead of a traceback.
"""

from __future__ import annotations

import enum
import re
from pathlib import Path

# A problem that knows where in its file it is starts `LINE:COL: ` (located()); the file is
# put in front of it, so the line reads `FILE:LINE:COL: message`, the form editors, compilers
# and GitHub problem matchers use (.github/perfgate-matcher.json).
_LOCATED = re.compile(r"[1-9]\d*:[1-9]\d*: ")


def located(line: int, column: int, message: str) -> str:
    """`message` at a 1-based line and column of its file."""
    return f"{line}:{column}: {message}"


def _in_file(path: str | None, message: str) -> str:
    if path is None:
        return message
    return f"{path}:{message}" if _LOCATED.match(message) else f"{path}: {message}"


class ExitCode(enum.IntEnum):
    """The documented exit codes (README, docs/check.md)."""

    OK = 0
    GATE_FAILED = 1  # a metric regressed, or a baselined kernel or metric is missing
    INPUT_ERROR = 2  # unusable input or usage: bad capture, bad baseline, ncu error text
    INTERNAL_ERROR = 3  # a bug in perfgate; --debug shows the traceback


class PerfgateError(Exception):
    """A problem with perfgate's input or usage, reported as one line."""

    exit_code: ExitCode = ExitCode.INPUT_ERROR

    def __init__(
        self, message: str, path: str | Path | None = None, problems: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        # Several problems of one file, each `LINE:COL: $.json.path: message` (located()).
        self.problems = problems or []

    def lines(self) -> list[str]:
        """One line per problem: `FILE:LINE:COL: message` (a baseline's problems: `FILE:LINE:
        COL: $.json.path: message`), or `FILE: message` for one of the whole file."""
        if self.problems:
            return [_in_file(self.path, p) for p in self.problems]
        return [str(self)]

    def __str__(self) -> str:
        return _in_file(self.path, self.message)


class CaptureError(PerfgateError):
    """A capture file that cannot be used: unreadable, empty, not ncu output, ncu error text."""


class BaselineError(PerfgateError):
    """A baseline file that cannot be used: unreadable, not YAML, or not schema-valid."""


class UsageError(PerfgateError):
    """Options that do not fit together, or name things that do not exist."""


class EditError(PerfgateError):
    """perfgate's own edit of a baseline would not load: a bug, and nothing was written."""

    exit_code = ExitCode.INTERNAL_ERROR
