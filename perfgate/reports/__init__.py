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
    module: str  # perfgate.reports.<module>, whose `function`(report) writes this format
    function: str = "render"

    def render(self, report: Report) -> str:
        module = importlib.import_module(f"perfgate.reports.{self.module}")
        text: str = getattr(module, self.function)(report)
        return text


REPORTERS: dict[str, Reporter] = {
    r.name: r
    for r in (
        Reporter("text", "text"),
        Reporter("markdown", "markdown"),
        Reporter("junit", "junit"),
        Reporter("json", "json_report"),
        Reporter("github", "github"),
        # The compact table: a row per kernel and metric that moved (reports/delta.py).
        Reporter("delta", "delta"),
        Reporter("delta-markdown", "delta", "render_markdown"),
    )
}
