"""The console report: a status line, then one line per kernel that needs attention, with its
root cause and lever first and the evidence under it."""

from __future__ import annotations

import shlex

from perfgate.judge.policy import COUNTED, counted_word, passes_quietly
from perfgate.judge.states import KernelState
from perfgate.reports.escape import log_text
from perfgate.reports.format import change_lines, counted, kernel_lines, noted_count
from perfgate.reports.summary import not_judged_lines, program_text, status_line
from perfgate.verdicts.model import CheckResult, Report


def _result_summary(result: CheckResult) -> str:
    # In the status line's words and order (judge.policy's status table).
    counts = result.counts()
    parts = [f"{counts[state]} {counted_word(state)}" for state in COUNTED if counts[state]]
    return ", ".join(parts) or "nothing to compare"


# Kernels the ratchet's line names; `baseline update --ratchet` itself lists every one.
_RATCHET_NAMED = 3


def _ratchet_line(result: CheckResult) -> str | None:
    """The command that locks the improvements in, with what it would tighten: the ratchet's
    own plan of these captures (CheckResult.ratchet); None where it would tighten nothing."""
    takes = result.ratchet
    if takes is None or takes.empty:
        return None
    what = [f"{', '.join(metrics)} of {kernel}" for kernel, metrics in takes.kernels]
    if len(what) > _RATCHET_NAMED:
        what[_RATCHET_NAMED:] = [counted(len(what) - _RATCHET_NAMED, "more kernel")]
    if takes.program:
        what.append("the program GPU time")
    files = [arg for path in result.capture_paths for arg in ("-c", path)]
    command = shlex.join(
        ["perfgate", "baseline", "update", "--ratchet", "-b", result.baseline_path, *files]
    )
    return f"  lock the improvements in with {command}: it tightens {'; '.join(what)}"


def render(report: Report, verbose: bool = False) -> str:
    lines = [status_line(report)]
    lines.extend(f"note: {n}" for n in report.notes)
    for result in report.results:
        if len(report.results) > 1:
            gpu = f" ({result.baseline_gpu})" if result.baseline_gpu else ""
            lines.append(f"{result.baseline_path}{gpu}: {_result_summary(result)}")
        lines.extend(f"warning: {w}" for w in result.warnings)
        if result.program is not None and result.program.state in (
            KernelState.SKIPPED,
            KernelState.UNJUDGED,
        ):
            lines.append(f"note: {program_text(result.program)}")
        if result.notice:
            lines.append(f"notice: {result.notice}")
        for change in result.changes:
            lines.extend(change_lines(change, result.program))
        explained = result.explained()
        folded = {m for c in result.changes for m in c.folded}
        for v in result.ordered():
            if not verbose and passes_quietly(v.state):
                continue  # new kernels are counted below; one that replaced a kernel is named
            recounted = v.headline is not None and v.headline.mechanism == "launch-count"
            under = v.state is KernelState.MISSING or recounted or v.kernel in folded
            if not verbose and v.kernel in explained and under:
                continue  # under its change finding; -v lists it too
            lines.extend(kernel_lines(v, verbose))
    # What was not judged, and the fix, once per reason: the status line already names each
    # reason with its count, and the change findings and regressions read first.
    lines.extend(not_judged_lines(report))
    lines.extend(line for r in report.results if (line := _ratchet_line(r)) is not None)
    new = sum(1 for v in report.verdicts if v.state is KernelState.NEW)
    tail = []
    notes = noted_count(report.verdicts)
    if notes and not verbose:
        tail.append(
            f"{counted(notes, 'evidence metric')} beyond bound, noted (evidence alone is not gated)"
        )
    if new and not verbose:
        tail.append(f"{counted(new, 'new kernel')} not in the baseline")
    if tail:
        lines.append(f"  ({'; '.join(tail)}; -v lists every kernel)")
    return log_text(lines)
