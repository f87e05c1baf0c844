"""The command line: options become a request, a use case (perfgate.usecases) does the work,
and every error becomes one line on stderr with a documented exit code (docs/check.md).

`perfgate` is `run` (pyproject.toml's [project.scripts], `python -m perfgate`); `main` is the
click group, which importing each command's module fills."""

from __future__ import annotations

from perfgate.cli import baseline, capture, check, history
from perfgate.cli.check import FORMATS, check_command
from perfgate.cli.main import global_options_in_help, main, run

__all__ = ["FORMATS", "baseline", "capture", "check", "check_command", "history", "main", "run"]

global_options_in_help(main)
