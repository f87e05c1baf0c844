"""Errors perfgate reports to its user, and the exit codes they map to.

Every problem with what perfgate reads is raised as a PerfgateError carrying the file it is
about, so the CLI can print one line `perfgate: error: FILE: problem` and exit with a documented
code instead of a traceback.
"""

from __future__ import annotations

import enum
from pathlib import Path


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
        # Several problems of one file, each `$.json.path: message` (schema validation).
        self.problems = problems or []

    def lines(self) -> list[str]:
        """One line per problem: `FILE::$.path: message`, or `FILE: message`."""
        if self.problems:
            return [f"{self.path}::{p}" if self.path else p for p in self.problems]
        return [str(self)]

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class CaptureError(PerfgateError):
    """A capture file that cannot be used: unreadable, empty, not ncu output, ncu error text."""


class BaselineError(PerfgateError):
    """A baseline file that cannot be used: unreadable, not YAML, or not schema-valid."""


class UsageError(PerfgateError):
    """Options that do not fit together, or name things that do not exist."""


class EditError(PerfgateError):
    """perfgate's own edit of a baseline would not load: a bug, and nothing was written."""

    exit_code = ExitCode.INTERNAL_ERROR
