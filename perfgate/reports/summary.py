"""Counts and the one-line status every report starts with."""

from __future__ import annotations

from perfgate.judge.policy import COUNTED, EXIT_WORDS, counted_word, verdict_word
from perfgate.judge.skips import describe
from perfgate.judge.states import KernelState
from perfgate.judge.two_runs import FOUR_RUNS, MIN_RUNS
from perfgate.reports.format import counted
from perfgate.verdicts.model import NotJudged, ProgramVerdict, Report

# The floor a check of several runs judged the program under (ProgramVerdict.floor_runs).
_FLOOR_RUNS = {MIN_RUNS: " (two runs)", FOUR_RUNS: " (four runs)"}


def _us(ns: float) -> str:
    return f"{ns / 1000:,.1f} us"


def program_text(program: ProgramVerdict) -> str:
    """'program GPU time 168.2 us -> 173.4 us (+3.1%, bound 2.0%: regressed; new kernels
    0.0 us, missing 0.0 us)': what the check decided, in words."""
    if program.state is KernelState.UNJUDGED:
        return f"program GPU time NOT JUDGED: {program.reason}"
    if program.state is KernelState.INCOMPLETE:
        return f"program GPU time incomplete: {program.reason}"
    if program.state is KernelState.SKIPPED or program.current is None:
        return f"program GPU time not gated: {program.reason}"
    change = program.change
    shown = f"{change:+.1%}, " if change is not None else ""
    runs = _FLOOR_RUNS.get(program.floor_runs, "")
    bound = f"bound {program.bound:.1%}{runs}: " if program.bound is not None else ""
    before = _us(program.baseline) if program.baseline is not None else "?"
    return (
        f"program GPU time {before} -> {_us(program.current)} ({shown}{bound}"
        f"{verdict_word(program.state)}; new kernels {_us(program.new_time)}, missing "
        f"{_us(program.missing_time)})"
    )


def status_line(report: Report) -> str:
    """'perfgate check FAILED: 2 regressed (3 root causes), 1 missing, 12 passed, 3 new
    (15 baselined kernels)': counted in kernels, as a reviewer thinks of them."""
    if report.problems:
        more = (
            f" (and {counted(len(report.problems) - 1, 'more problem')})"
            if len(report.problems) > 1
            else ""
        )
        verdict = EXIT_WORDS[report.exit_code].status_line
        return f"perfgate check {verdict}: could not check: {report.problems[0]}{more}"
    counts = report.counts()
    parts = []
    for state in COUNTED:
        if not counts[state]:
            continue
        text = f"{counts[state]} {counted_word(state)}"
        if state is KernelState.REGRESSED:
            found = [
                f"{n} {word}{'s' if n != 1 else ''}"
                for n, word in (
                    (report.cause_count, "root cause"),
                    (report.trade_off_count, "trade-off"),
                )
                if n
            ]
            if found:
                text += f" with {' and '.join(found)}"
        parts.append(text)
    gated = sum(1 for v in report.verdicts if v.state is not KernelState.NEW)
    code = report.exit_code
    verdict = EXIT_WORDS[code].status_line
    baselines = f", {len(report.results)} baselines" if len(report.results) > 1 else ""
    # A skipped program time (a baseline recorded before it) leaves the line as it was; the
    # reason and the hint to re-record are a note of the text report, the JSON and JUnit.
    programs = [
        program_text(r.program)
        for r in report.results
        if r.program is not None
        and r.program.state not in (KernelState.SKIPPED, KernelState.UNJUDGED)
    ]
    # Gates not judged are named on the status line itself: -q shows nothing else.
    unjudged = [n for n in report.not_judged() if n.fails]
    waived = [n.skip.value for n in report.not_judged() if not n.fails]
    return (
        f"perfgate check {verdict}: {', '.join(parts) or 'nothing to compare'} "
        f"({gated} baselined kernel{'s' if gated != 1 else ''}{baselines})"
        + "".join(f"; {p}" for p in programs)
        + (
            "; NOT JUDGED, failing unless waived (--waive REASON): "
            + ", ".join(f"{n.skip.value} ({_gates(n)})" for n in unjudged)
            if unjudged
            else ""
        )
        + (f"; not gated (waived): {', '.join(waived)}" if waived else "")
    )


def _gates(n: NotJudged) -> str:
    parts = [f"{counted(n.comparisons, 'gate')} of {counted(n.kernels, 'kernel')}"]
    if n.program:
        parts.append("program time")
    return ", ".join(parts) if n.comparisons else "program time"


def not_judged_lines(report: Report) -> list[str]:
    """One line per reason some gates were not judged: the failing ones, then the waived."""
    return [
        ("not judged: " if n.fails else "not gated: ")
        + describe(n.skip, n.fails, n.metrics, n.kernels, n.program)
        for n in report.not_judged()
    ]
