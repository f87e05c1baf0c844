"""`perfgate capture --phases`: the gate capture (ncu's one-pass metric set) or the full
capture, and with `auto` the diagnosis capture of the kernels that failed the gate capture's
check."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.common.errors import ExitCode, PerfgateError
from perfgate.common.exhaustive import never
from perfgate.common.fileio import check_outputs
from perfgate.judge.policy import diagnosed
from perfgate.usecases.check import CheckRequest, run_check
from perfgate.usecases.choices import Phases
from perfgate.usecases.console import Line, Outcome

if TYPE_CHECKING:
    # Loaded where they are used: a check needs none of them (docs/scale.md).
    from perfgate.ncu.command import CaptureOptions
    from perfgate.ncu.runner import CaptureResult


@dataclass(frozen=True)
class PhasedCapture:
    """What `perfgate capture --phases ...` did: the gate (or full) capture, and the diagnosis
    capture of the kernels that failed the gate capture's check, when there was one."""

    first: CaptureResult
    diagnosis: CaptureResult | None = None  # of the diagnosis phase; None: none was run
    failing: tuple[str, ...] = ()  # the kernels the gate check failed (auto), by name
    checked: bool = False  # the gate capture was checked (auto)
    unchecked: str = ""  # why the gate capture could not be checked (auto), "" when it was

    def summary(self) -> str:
        """ "gate capture: N kernels, M launches, 1 pass per kernel, 23.0 s; diagnosis: ..." """
        text = self.first.summary()
        if self.diagnosis is not None:
            d = self.diagnosis
            text += (
                f"; diagnosis: {d.kernels} kernel(s), {d.launches} launch(es), "
                f"{d.passes_text()} per kernel, {d.wall_s:.1f} s"
            )
        elif self.checked:
            text += "; diagnosis: none needed (the gate check passed)"
        elif self.unchecked:
            text += f"; diagnosis: none ({self.unchecked})"
        return text


def diagnosis_output(output: str) -> str:
    """OUTPUT.csv -> OUTPUT.diagnosis.csv (beside the gate capture)."""
    path = Path(output)
    stem, suffix = (path.stem, path.suffix) if path.suffix else (path.name, ".csv")
    return str(path.with_name(f"{stem}.diagnosis{suffix}"))


def first_phase(phases: Phases) -> tuple[str, bool]:
    """The phase of the first capture (perfgate.ingest.meta's GATE or FULL), and whether the
    baselines' time basis decides it instead (auto)."""
    from perfgate.ingest.meta import FULL, GATE

    if phases is Phases.AUTO:
        return GATE, True
    if phases is Phases.GATE:
        return GATE, False
    if phases is Phases.FULL:
        return FULL, False
    never(phases)


def run_capture_phases(options: CaptureOptions, phases: Phases) -> PhasedCapture:
    """`perfgate capture`: a gate capture (`gate`, `auto`) or the single-phase full capture
    (`full`); with `auto`, the gate capture is checked against the baselines and a diagnosis
    capture of only the kernels that failed is taken beside it (OUTPUT.diagnosis.csv), which
    `check` merges for its metrics (perfgate.ingest.phases)."""
    from perfgate.ingest.meta import DIAGNOSIS, GATE
    from perfgate.ncu.command import baseline_files
    from perfgate.ncu.runner import link_diagnosis, remove_capture, run_capture

    second = diagnosis_output(options.output)
    inputs = [*baseline_files(options.baselines), *options.program[:1]]
    check_outputs([("-o (its diagnosis capture)", second)], [p for p in inputs if p])
    remove_capture(second)  # an earlier run's diagnosis never sits beside this gate capture
    phase, follow_baseline = first_phase(phases)
    first = run_capture(replace(options, phase=phase, follow_baseline=follow_baseline))
    if not follow_baseline or first.absent or first.phase != GATE:
        # A full capture (asked for, or the baseline's basis) holds every gated metric.
        return PhasedCapture(first)
    try:
        report = run_check(CheckRequest(options.baselines, (first.output,)))
    except PerfgateError as exc:  # the capture stands; `check` will say this again
        return PhasedCapture(
            first, unchecked=f"the gate check could not run ({exc.message}): no diagnosis capture"
        )
    failing = tuple(
        dict.fromkeys(
            v.name for r in report.results for v in r.verdicts if diagnosed(v.state) and v.name
        )
    )
    if not failing:
        return PhasedCapture(first, checked=True)
    try:
        diagnosis = run_capture(
            replace(options, output=second, phase=DIAGNOSIS, diagnose=failing, keep_report=False)
        )
    except PerfgateError as exc:  # the gate capture stands and checks alone
        return PhasedCapture(
            first, failing=failing, unchecked=f"the diagnosis capture failed: {exc.message}"
        )
    link_diagnosis(first.output, diagnosis.output)
    return PhasedCapture(first, diagnosis, failing, checked=True)


def capture_lines(phased: PhasedCapture, err: bool = False) -> tuple[Line, ...]:
    """What a capture wrote and how long it took (`err`: on stderr, as pre-merge says it,
    whose stdout is the check's report); its warnings on stderr."""
    result = phased.first
    passes = sorted(set(result.passes))
    shown = "/".join(map(str, passes)) if passes else "?"
    said = [
        Line(
            f"wrote {result.output}: {result.launches} launch(es), {shown} replay passes per "
            f"kernel, {result.wall_s:.1f} s (log {result.log}, metadata {result.meta})",
            err,
        )
    ]
    if phased.diagnosis is not None:
        d = phased.diagnosis
        said.append(
            Line(
                f"wrote {d.output}: diagnosis of {len(phased.failing)} kernel(s) that failed the "
                f"gate; check merges it (perfgate check -b ... -c {result.output})",
                err,
            )
        )
    said.append(Line(phased.summary(), err))
    for line in [*result.warnings, *(phased.diagnosis.warnings if phased.diagnosis else ())]:
        said.append(Line(f"perfgate: warning: {line}", err=True))
    return tuple(said)


@dataclass(frozen=True)
class CaptureRequest:
    options: CaptureOptions  # its phase and follow_baseline are set from `phases`
    phases: Phases = Phases.AUTO
    dry_run: bool = False  # print the ncu command and run nothing


def run_capture_command(request: CaptureRequest) -> Outcome:
    """`perfgate capture`: the captures, or with --dry-run the commands that would run. Exit
    2 when a gated metric came back absent (the capture is written all the same)."""
    phase, follow_baseline = first_phase(request.phases)
    options = replace(request.options, phase=phase, follow_baseline=follow_baseline)
    if request.dry_run:
        return Outcome(_dry_run(options, request.phases))
    phased = run_capture_phases(options, request.phases)
    said = capture_lines(phased)
    result = phased.first
    if result.absent:
        return Outcome(
            said,
            ExitCode.INPUT_ERROR,
            errors=(
                f"{result.output}: {len(result.absent)} gated metric(s) came back absent; see "
                "the warnings above",
            ),
        )
    return Outcome(said)


def _dry_run(options: CaptureOptions, phases: Phases) -> tuple[Line, ...]:
    from perfgate.ncu.runner import dry_run

    plan = dry_run(options)
    said = [Line(f"note: {note}", err=True) for note in plan.notes]
    if phases is Phases.AUTO and plan.phase == "gate":
        said.append(
            Line(
                "note: the gate capture below; when it fails the baselines, a diagnosis capture "
                f"of the failing kernels follows ({diagnosis_output(options.output)})",
                err=True,
            )
        )
    said.append(Line(plan.shell_text()))
    output = options.output
    said.append(
        Line(" ".join(plan.import_command(options.ncu, f"{output}.tmp.ncu-rep")) + f" > {output}")
    )
    return tuple(said)
