"""GitHub Actions: workflow-command annotations, escaped as GitHub's toolkit escapes them.

@actions/core escapes a command's message with %25 for '%', %0D for CR and %0A for LF, and its
properties (title=...) additionally with %3A for ':' and %2C for ','. At most ten `::error`
lines are written, worst first, then one `::notice` saying how many more there are: GitHub
shows only the first ten errors of a step anyway.
"""

from __future__ import annotations

import math

from perfgate.compare import Comparison, Report, State
from perfgate.reports.format import transition

MAX_ERRORS = 10
_FAILING = (State.ERROR, State.REGRESSED, State.MISSING_KERNEL, State.MISSING_METRIC)


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _worst_first(c: Comparison) -> tuple[int, float]:
    rank = _FAILING.index(c.state)
    size = (
        abs(c.relative_change)
        if c.relative_change is not None and math.isfinite(c.relative_change)
        else 0.0
    )
    return rank, -size


def render(report: Report) -> str:
    lines = [
        f"::error title={escape_property('perfgate: input')}::{escape_data(p)}"
        for p in report.problems
    ]
    failing = sorted((c for c in report.comparisons if c.state in _FAILING), key=_worst_first)
    room = max(MAX_ERRORS - len(lines), 0)
    for c in failing[:room]:
        title = f"perfgate: {c.kernel} {c.metric or ''} {c.state.value}".strip()
        if c.state is State.REGRESSED:
            message = (
                transition(c)
                + (f", bound {c.bound}" if c.bound else "")
                + (f"; {c.message}" if c.message else "")
            )
        else:
            message = c.message
        lines.append(f"::error title={escape_property(title)}::{escape_data(message)}")
    rest = len(failing) - room
    if rest > 0:
        lines.append(
            f"::notice title=perfgate::{rest} more failing comparisons; "
            "see the step summary or the JUnit report"
        )
    return "\n".join(lines) + ("\n" if lines else "")
