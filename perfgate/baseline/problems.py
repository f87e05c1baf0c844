"""A baseline's problems, each worded at its place: a YAML mark as (line, column), a message
at the value a JSON path leads to, a YAML error's place, problems in document order."""

from __future__ import annotations

from typing import Any

import yaml

from perfgate.baseline import yamlload
from perfgate.common.errors import BaselineError, located
from perfgate.common.schemas import format_path


def mark_position(mark: yaml.Mark) -> yamlload.Position:
    return mark.line + 1, mark.column + 1


def problem(path: str, message: str, problems: list[str] | None = None) -> BaselineError:
    return BaselineError(message, path, problems=problems)


def here(line_of: Any, where: list[str | int], message: str) -> str:
    """`LINE:COL: $.path: message`, at the value `where` leads to."""
    at = line_of(where)
    text = f"{format_path(where)}: {message}"
    return located(at[0], at[1], text) if at else text


def add_problem(problems: list[str], line_of: Any, where: list[str | int], message: str) -> None:
    problems.append(here(line_of, where, message))


def document_order(problem: str) -> tuple[int, ...]:
    """A located problem's (line, column), to sort problems in document order."""
    head = problem.split(": ", 1)[0].split(":")
    return tuple(int(n) for n in head) if all(n.isdigit() for n in head) else (0,)


def error_place(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    return located(*mark_position(mark), "") if mark else ""
