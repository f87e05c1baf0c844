"""Reporters: pure functions from a CheckResult to text, in one registry that feeds both the
CLI's dispatch and its --format choices."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfgate.compare import CheckResult
from perfgate.reports import junit, markdown, text


@dataclass(frozen=True)
class Reporter:
    name: str
    render: Callable[[CheckResult], str]
    description: str


REPORTERS: dict[str, Reporter] = {
    r.name: r
    for r in (
        Reporter("text", text.render, "a status line and one line per problem (the default)"),
        Reporter("markdown", markdown.render, "a summary table for people, regressions first"),
        Reporter("junit", junit.render, "JUnit XML, one testcase per (kernel, metric)"),
    )
}
