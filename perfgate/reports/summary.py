"""Counts and the one-line status shared by every report."""

from __future__ import annotations

from perfgate.compare import CheckResult, State
from perfgate.errors import ExitCode


def kernels_with(result: CheckResult, *states: State) -> int:
    return len({c.kernel for c in result.comparisons if c.state in states})


def status_line(result: CheckResult) -> str:
    counts = result.counts()
    gated = {c.kernel for c in result.comparisons if c.state is not State.NEW_KERNEL}
    parts = [
        f"{counts[s]} {label}"
        for s, label in (
            (State.ERROR, "errors"),
            (State.REGRESSED, "regressed"),
            (State.MISSING_KERNEL, "missing (kernel)"),
            (State.MISSING_METRIC, "missing (metric)"),
            (State.IMPROVED, "improved"),
            (State.PASS, "passed"),
            (State.NEW_KERNEL, "new kernels"),
        )
        if counts[s]
    ]
    code = result.exit_code
    verdict = {
        ExitCode.OK: "PASSED",
        ExitCode.GATE_FAILED: "FAILED",
        ExitCode.INPUT_ERROR: "ERROR",
    }.get(code, "ERROR")
    return f"perfgate check {verdict}: {', '.join(parts)} ({len(gated)} baselined kernels)"
