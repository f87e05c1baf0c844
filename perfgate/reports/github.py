"""GitHub Actions: workflow-command annotations, escaped as GitHub's toolkit escapes them.

@actions/core escapes a command's message with %25 for '%', %0D for CR and %0A for LF, and its
properties (title=...) additionally with %3A for ':' and %2C for ','. One `::error` per failing
kernel, leading with its root cause and lever, at most ten, worst first, then one `::notice`
saying how many more there are: GitHub shows only the first ten errors of a step anyway.
"""

from __future__ import annotations

from perfgate.reports.format import headline
from perfgate.verdict import KernelState, KernelVerdict, Report

MAX_ERRORS = 10
_FAILING = (
    KernelState.ERROR,
    KernelState.REGRESSED,
    KernelState.MISSING,
    KernelState.INCOMPLETE,
)


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _worst_first(v: KernelVerdict) -> tuple[int, int]:
    return _FAILING.index(v.state), -len(v.failing)


def render(report: Report) -> str:
    lines = [
        f"::error title={escape_property('perfgate: input')}::{escape_data(p)}"
        for p in report.problems
    ]
    failing = sorted((v for v in report.verdicts if v.state in _FAILING), key=_worst_first)
    room = max(MAX_ERRORS - len(lines), 0)
    for v in failing[:room]:
        title = f"perfgate: {v.kernel} {v.state.value}"
        lines.append(f"::error title={escape_property(title)}::{escape_data(headline(v))}")
    rest = len(failing) - room
    if rest > 0:
        lines.append(
            f"::notice title=perfgate::{rest} more failing kernels; "
            "see the step summary or the JUnit report"
        )
    return "\n".join(lines) + ("\n" if lines else "")
