"""Reporters: pure functions from a Report to text, in one registry that feeds both the CLI's
dispatch and its --format choices."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfgate.reports import github, json_report, junit, markdown, text
from perfgate.verdicts.model import Report


@dataclass(frozen=True)
class Reporter:
    name: str
    render: Callable[[Report], str]
    description: str


REPORTERS: dict[str, Reporter] = {
    r.name: r
    for r in (
        Reporter("text", text.render, "a status line and one line per problem (the default)"),
        Reporter("markdown", markdown.render, "a summary table for people, regressions first"),
        Reporter(
            "junit",
            junit.render,
            "JUnit XML, a testsuite per baseline, a testcase per kernel",
        ),
        Reporter(
            "json", json_report.render, "the whole result for machines (schemas/result.schema.json)"
        ),
        Reporter("github", github.render, "GitHub Actions ::error annotations, worst first"),
    )
}
