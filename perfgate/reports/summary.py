"""Counts and the one-line status every report starts with."""

from __future__ import annotations

from perfgate.compare import Report, State
from perfgate.errors import ExitCode

_LABELS = (
    (State.ERROR, "errors"),
    (State.REGRESSED, "regressed"),
    (State.MISSING_KERNEL, "missing (kernel)"),
    (State.MISSING_METRIC, "missing (metric)"),
    (State.IMPROVED, "improved"),
    (State.PASS, "passed"),
    (State.SKIPPED, "skipped"),
    (State.NEW_KERNEL, "new kernels"),
)


def status_line(report: Report) -> str:
    if report.problems:
        more = (
            f" (and {len(report.problems) - 1} more problems)" if len(report.problems) > 1 else ""
        )
        return f"perfgate check ERROR: could not check: {report.problems[0]}{more}"
    counts = report.counts()
    gated = {
        (r.baseline_path, c.kernel)
        for r in report.results
        for c in r.comparisons
        if c.state is not State.NEW_KERNEL
    }
    parts = [f"{counts[s]} {label}" for s, label in _LABELS if counts[s]]
    verdict = {ExitCode.OK: "PASSED", ExitCode.GATE_FAILED: "FAILED"}.get(report.exit_code, "ERROR")
    baselines = f", {len(report.results)} baselines" if len(report.results) > 1 else ""
    return (
        f"perfgate check {verdict}: {', '.join(parts)} ({len(gated)} baselined kernels{baselines})"
    )
