"""`perfgate pre-merge`: before you merge, on a machine with the GPU the baselines were recorded
on, capture the program with `perfgate capture` and gate the capture with `perfgate check`,
leaving in one folder the reports CI would write (docs/ci.md, "Before you merge"). One use case
over the two that `capture` and `check` run; it adds only where the files go."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.common.errors import CaptureError, UsageError
from perfgate.judge.policy import parse_fail_on
from perfgate.judge.skips import Skip
from perfgate.ncu.command import CaptureOptions
from perfgate.usecases.capture import PhasedCapture, capture_lines, run_capture_phases
from perfgate.usecases.check import CheckRequest
from perfgate.usecases.check_command import (
    CheckCommand,
    CheckOutcome,
    ReportPaths,
    run_check_command,
)
from perfgate.usecases.choices import Phases
from perfgate.usecases.console import Document, Line, Outcome, Said
from perfgate.usecases.outputs import GitHubEnvironment

CAPTURE = "capture.csv"
REPORTS = ReportPaths(junit="junit.xml", markdown="summary.md", json="result.json")


@dataclass(frozen=True)
class PreMergeRequest:
    baselines: tuple[str, ...]
    program: tuple[str, ...] = ()  # the program to capture (with its arguments)
    captures: tuple[str, ...] = ()  # or captures already made, gated as they are
    out: str = "perfgate-report"  # the folder of the capture and the reports
    warn_only: bool = False  # report everything, exit 0 when the check fails
    ncu: str = "ncu"
    phases: Phases = Phases.AUTO  # perfgate capture --phases
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
    captured: Callable[[Sequence[Said]], None] | None = None,
) -> PreMergeResult:
    """Capture (unless captures are given), then check with every report written to
    `request.out`. `captured` is given what to say of the capture before the check runs
    (where it went, on stderr). A capture that fails, or comes back without a gated metric,
    stops here (exit 2), as `perfgate capture` does; the check exits as `perfgate check`
    does."""
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
            captured(capture_lines(phased, err=True))
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


def pre_merge_outcome(result: PreMergeResult, out: str, colour: bool) -> Outcome:
    """The check's report on stdout, the rest on stderr, and the check's exit code."""
    said: list[Said] = [Document(result.check.stdout, colour=colour)]
    if result.check.policy_note:
        said.append(Line(result.check.policy_note, err=True))
    r = result.reports
    said.append(Line(f"pre-merge: reports in {out} ({r.markdown}, {r.junit}, {r.json})", err=True))
    return Outcome(tuple(said), result.check.exit_code)
