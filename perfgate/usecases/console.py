"""What a command leaves on the console, as data: the use case says what, the CLI writes it.
A `Line` is perfgate's own line, which the CLI escapes (common.escape.log_line); a `Document`
is a reporter's, escaped line by line already, written as it is."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.common.errors import ExitCode


@dataclass(frozen=True)
class Line:
    text: str
    err: bool = False  # on stderr


@dataclass(frozen=True)
class Document:
    text: str
    err: bool = False
    colour: bool | None = None  # None: click's own choice (escape codes stripped off a pipe)


Said = Line | Document


@dataclass(frozen=True)
class Outcome:
    """A command's console output in order, then either its errors (each said as
    `perfgate: error: ...` on stderr, then exit `exit_code`) or its exit code."""

    said: tuple[Said, ...] = ()
    exit_code: ExitCode = ExitCode.OK
    errors: tuple[str, ...] = ()
