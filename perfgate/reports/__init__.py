"""Reporters, in one registry that feeds both the CLI's dispatch and its --format choices.

A reporter's module is imported when it first renders, not here: the CLI reads the names at
start-up, and the formatters bring in the whole diagnosis and junit-xml (about 0.1 s)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perfgate.verdicts.model import Report


@dataclass(frozen=True)
class Reporter:
    name: str
    module: str  # perfgate.reports.<module>, whose render(report) writes this format

    def render(self, report: Report) -> str:
        text: str = importlib.import_module(f"perfgate.reports.{self.module}").render(report)
        return text


REPORTERS: dict[str, Reporter] = {
    r.name: r
    for r in (
        Reporter("text", "text"),
        Reporter("markdown", "markdown"),
        Reporter("junit", "junit"),
        Reporter("json", "json_report"),
        Reporter("github", "github"),
    )
}
