"""The CLI's console: the whole program's settings, the one line-escaping helper (`say`) and
the one writer of reporters' documents (`show`), a command's outcome written out (`emit`), and
the guard that turns every error into one line on stderr and a documented exit code."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from perfgate import __version__
from perfgate.common import patterns as user_patterns
from perfgate.common.errors import ExitCode, PerfgateError
from perfgate.common.escape import log_line

if TYPE_CHECKING:
    from perfgate.usecases.console import Outcome, Said

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Settings:
    """The whole program's options, kept on click's context for every subcommand."""

    debug: bool = False
    quiet: bool = False
    colour: bool = False


def settings() -> Settings:
    obj = click.get_current_context().find_root().obj
    return obj if isinstance(obj, Settings) else Settings()


def say(line: str, *, err: bool = False) -> None:
    """One line of perfgate's own console output, through the one escaping helper
    (common.escape.log_line): a kernel name, baseline id, note or file name holding a newline,
    `::` (a GitHub workflow command), a control, bidi or zero-width character is shown escaped
    (`\\x0a`, `\\u202e`). Every click.echo of the CLI but `show`'s is this one
    (tests/hostile/test_hostile.py holds it so)."""
    click.echo(log_line(line), err=err)


def show(document: str, *, err: bool = False, colour: bool | None = None) -> None:
    """A document a reporter rendered (reports/: text, markdown, JSON, JUnit, GitHub workflow
    commands), whose reporter escaped each line itself; it goes out as it is."""
    click.echo(document, nl=False, err=err, color=colour)


def to_stderr(text: str) -> None:
    show(text, err=True)


def say_all(said: Sequence[Said]) -> None:
    from perfgate.usecases.console import Line

    for item in said:
        if isinstance(item, Line):
            say(item.text, err=item.err)
        else:
            show(item.text, err=item.err, colour=item.colour)


def emit(outcome: Outcome) -> None:
    """Write a use case's outcome: what it says in order, then its errors and exit code. A
    command that exits 0 returns (click exits 0)."""
    say_all(outcome.said)
    if outcome.errors:
        fail(list(outcome.errors), outcome.exit_code)
    if outcome.exit_code:
        sys.exit(int(outcome.exit_code))


def fail(lines: list[str], code: ExitCode) -> None:
    for line in lines:
        # A message may quote a kernel name or a file's text: one line each, whatever it holds.
        say(f"perfgate: error: {line}", err=True)
    sys.exit(int(code))


def internal_error(exc: Exception) -> str:
    return (
        f"internal error: {type(exc).__name__}: {exc} "
        f"(a bug in perfgate {__version__}; --debug shows the traceback)"
    )


def guard(fn: F) -> F:
    """Turn perfgate's errors into one line and an exit code; a bug into exit 3."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = settings().debug
        user_patterns.reset_budget()  # one budget for all the user's regexes of a command
        try:
            return fn(*args, **kwargs)
        except PerfgateError as exc:
            if debug:
                traceback.print_exc()
            fail(exc.lines(), exc.exit_code)
        except (KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as exc:  # a bug: say so, without a traceback unless asked
            if debug:
                traceback.print_exc()
            fail([internal_error(exc)], ExitCode.INTERNAL_ERROR)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper  # type: ignore[return-value]
