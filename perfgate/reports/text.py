"""The console report: a status line, then one line per kernel that needs attention, with its
root cause and lever first and the evidence under it."""

from __future__ import annotations

from perfgate.judge.states import KernelState
from perfgate.reports.escape import log_text
from perfgate.reports.format import (
    KERNEL_VERDICT,
    change,
    comparison_line,
    counted,
    evidence_text,
    headline,
)
from perfgate.reports.summary import status_line
from perfgate.verdicts.model import CheckResult, KernelVerdict, Report

_QUIET = {KernelState.PASS, KernelState.IMPROVED, KernelState.NEW, KernelState.SKIPPED}


def kernel_lines(v: KernelVerdict, verbose: bool = False) -> list[str]:
    label = KERNEL_VERDICT[v.state]
    label = label if v.state in _QUIET else label.upper()
    said = headline(v)
    lines = [f"  {label:<11} {v.kernel}" + (f": {said}" if said else "")]
    if v.state in _QUIET and not verbose:
        return lines
    pad = " " * 14
    if v.matched_by in ("renamed", "reshaped") and v.message:
        lines.append(f"{pad}matched as {v.message}")
    shown_cause = v.headline if v.state in (KernelState.REGRESSED, KernelState.IMPROVED) else None
    for cause in v.causes:
        if cause is not shown_cause and v.state is not KernelState.MISSING:
            lines.append(f"{pad}also {cause.kind.value}: {cause.title}: {cause.detail}")
        if cause.evidence and v.state is not KernelState.MISSING:
            lines.append(f"{pad}evidence: {evidence_text(cause)}")
        if cause.explains:
            follows = [c for c in v.failing if c.metric in cause.explains]
            if follows:
                lines.append(
                    f"{pad}follows from it: "
                    + ", ".join(f"{c.metric} {change(c) or c.current}" for c in follows)
                )
    unexplained = list(v.unexplained())
    if not v.causes and unexplained and headline(v).startswith(comparison_line(unexplained[0])):
        unexplained = unexplained[1:]  # already the headline
    for c in unexplained:
        lines.append(f"{pad}{comparison_line(c)}")
    if v.state is not KernelState.PASS and v.captures:
        lines.append(f"{pad}in {', '.join(v.captures)}")
    return lines


def _result_summary(result: CheckResult) -> str:
    counts = result.counts()
    parts = [f"{n} {state.value}" for state, n in counts.items() if n]
    return ", ".join(parts) or "nothing to compare"


def render(report: Report, verbose: bool = False) -> str:
    lines = [status_line(report)]
    lines.extend(f"note: {n}" for n in report.notes)
    for result in report.results:
        if len(report.results) > 1:
            gpu = f" ({result.baseline_gpu})" if result.baseline_gpu else ""
            lines.append(f"{result.baseline_path}{gpu}: {_result_summary(result)}")
        lines.extend(f"warning: {w}" for w in result.warnings)
        if result.notice:
            lines.append(f"notice: {result.notice}")
        for v in result.ordered():
            if not verbose and v.state in (KernelState.PASS, KernelState.SKIPPED):
                continue
            if not verbose and v.state is KernelState.NEW:
                continue  # counted below; those that replaced a kernel are named in its line
            lines.extend(kernel_lines(v, verbose))
    new = sum(1 for v in report.verdicts if v.state is KernelState.NEW)
    improved = sum(1 for v in report.verdicts if v.state is KernelState.IMPROVED)
    tail = []
    if new and not verbose:
        tail.append(f"{counted(new, 'new kernel')} not in the baseline")
    if improved:
        tail.append(
            "lock the improvements in with perfgate baseline update --ratchet -b BASELINE -c "
            "CAPTURE..."
        )
    if tail:
        lines.append(f"  ({'; '.join(tail)}; -v lists every kernel)")
    return log_text(lines)
