"""`perfgate pre-merge`: before you merge, on a machine with the GPU the baselines were recorded
on, capture the program with `perfgate capture` and gate the capture with `perfgate check`,
leaving in one folder the reports CI would write (docs/ci.md, "Before you merge"). One use case
over the two that `capture` and `check` run; it adds only where the files go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from perfgate.common.errors import CaptureError, UsageError
from perfgate.gate import (
    CheckCommand,
    CheckOutcome,
    CheckRequest,
    GitHubEnvironment,
    PhasedCapture,
    ReportPaths,
    run_capture_phases,
    run_check_command,
)
from perfgate.judge.policy import parse_fail_on
from perfgate.judge.skips import Skip
from perfgate.ncu.command import CaptureOptions

CAPTURE = "capture.csv"
REPORTS = ReportPaths(junit="junit.xml", markdown="summary.md", json="result.json")


@dataclass(frozen=True)
class PreMergeRequest:
    baselines: tuple[str, ...]
    program: tuple[str, ...] = ()  # the program to capture (with its arguments)
    captures: tuple[str, ...] = ()  # or captures already made, gated as they are
    out: str = "perfgate-report"  # the folder of the capture and the reports
    warn_only: bool = False  # report everything, exit 0 when the gate fails
    ncu: str = "ncu"
    phases: str = "auto"  # perfgate capture --phases
    waived: frozenset[Skip] = frozenset()


@dataclass(frozen=True)
class PreMergeResult:
    capture: PhasedCapture | None  # None: the captures were given
    check: CheckOutcome
    reports: ReportPaths  # where the reports were written


def report_paths(out: str) -> ReportPaths:
    folder = Path(out)
    return ReportPaths(
        junit=str(folder / str(REPORTS.junit)),
        markdown=str(folder / str(REPORTS.markdown)),
        json=str(folder / str(REPORTS.json)),
    )


def run_pre_merge(
    request: PreMergeRequest,
    gh: GitHubEnvironment,
    stderr: Callable[[str], None],
    *,
    quiet: bool = False,
    colour: bool = False,
    captured: Callable[[PhasedCapture], None] | None = None,
) -> PreMergeResult:
    """Capture (unless captures are given), then check with every report written to
    `request.out`. `captured` hears of the capture before the check runs (the CLI says where
    it went). A capture that fails, or comes back without a gated metric, stops here (exit 2),
    as `perfgate capture` does; the check exits as `perfgate check` does."""
    if bool(request.program) == bool(request.captures):
        raise UsageError(
            "give a program to capture after -- (perfgate pre-merge -b BASELINE -- ./bench), "
            "or --capture FILE to gate a capture already made, not both"
            if request.program
            else "give a program to capture after -- (perfgate pre-merge -b BASELINE -- "
            "./bench), or --capture FILE to gate a capture already made"
        )
    try:
        Path(request.out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot make the report folder: {exc.strerror or exc}", request.out
        ) from exc
    phased = None
    captures = request.captures
    if request.program:
        options = CaptureOptions(
            request.baselines,
            request.program,
            output=str(Path(request.out) / CAPTURE),
            ncu=request.ncu,
        )
        phased = run_capture_phases(options, request.phases)
        if captured is not None:
            captured(phased)
        if phased.first.absent:
            raise CaptureError(
                f"{len(phased.first.absent)} gated metric(s) came back absent (see the warnings "
                "above); nothing was checked",
                phased.first.output,
            )
        captures = (phased.first.output,)
    reports = report_paths(request.out)
    command = CheckCommand(
        CheckRequest(request.baselines, captures, waived=request.waived),
        policy=parse_fail_on("never" if request.warn_only else "regression,missing"),
        reports=reports,
        quiet=quiet,
        colour=colour,
    )
    return PreMergeResult(phased, run_check_command(command, gh, stderr), reports)
