"""`perfgate capture`, `perfgate pre-merge`, `perfgate doctor` and `perfgate metrics`: the
commands about what ncu collects and runs; each one's options into a request for its use case
(perfgate.usecases.capture, .premerge, .doctor, .metrics)."""

from __future__ import annotations

import click

from perfgate.cli.console import emit, guard, say_all, settings, to_stderr
from perfgate.cli.main import main
from perfgate.cli.parsing import ProgramCommand, compute_capability, kernels_option
from perfgate.usecases.choices import Phases, ReplayMode, values
from perfgate.usecases.requests import WAIVABLE


@main.command("metrics")
@click.option(
    "--ncu", is_flag=True, help="Print the raw metrics to pass to ncu --metrics, comma-separated."
)
@click.option(
    "--markdown", "as_markdown", is_flag=True, help="Print the catalog as a markdown table."
)
@click.option(
    "--cc", default="9.0", show_default=True, callback=compute_capability,
    help="Compute capability to resolve raw metrics for (MAJOR.MINOR, e.g. 8.0, 9.0, 10.0).",
)  # fmt: skip
@guard
def metrics_command(ncu: bool, as_markdown: bool, cc: str) -> None:
    """List the metric catalog (or the ncu metric list it needs)."""
    from perfgate.usecases.metrics import MetricsRequest, run_metrics

    emit(run_metrics(MetricsRequest(ncu, as_markdown, cc)))


@main.command(
    "capture",
    cls=ProgramCommand,
    short_help="Run a program under ncu, collecting only what the baselines gate.",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--baseline", "-b", "baselines", required=True, multiple=True, type=click.Path(),
    help="Baseline file or directory of them (*.yaml, *.yml); repeatable. Its metrics and "
    "kernels decide what ncu collects.",
)  # fmt: skip
@click.option(
    "--output", "-o", default="capture.csv", show_default=True, type=click.Path(),
    help="Capture to write (ncu's raw CSV page); ncu's log goes to OUTPUT.log, the run's "
    "metadata to OUTPUT.meta.json.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the ncu command and run nothing.")
@click.option(
    "--replay-mode", type=click.Choice(values(ReplayMode)), default=ReplayMode.KERNEL.value,
    show_default=True, help="ncu's replay mode (application: the program runs once per pass).",
)  # fmt: skip
@kernels_option
@click.option("--launch-skip", type=click.IntRange(min=0), help="ncu --launch-skip N.")
@click.option("--launch-count", type=click.IntRange(min=1), help="ncu --launch-count N.")
@click.option(
    "--nvtx-include", "nvtx_include", multiple=True,
    help="Only kernels in this NVTX range (ncu --nvtx-include; repeatable).",
)  # fmt: skip
@click.option(
    "--no-census", is_flag=True,
    help="With a push/pop --nvtx-include range (NAME/), skip the census run that looks for "
    "kernels launched outside it (the program once more under ncu, nothing replayed).",
)  # fmt: skip
@click.option(
    "--all-kernels", is_flag=True,
    help="Profile every kernel, not only the baselined ones (costs more; shows new kernels).",
)  # fmt: skip
@click.option(
    "--allow-program-failure", is_flag=True,
    help="Write the capture even when the program exits non-zero (still reported).",
)  # fmt: skip
@click.option("--keep-report", is_flag=True, help="Keep ncu's report as OUTPUT.ncu-rep.")
@click.option("--ncu", "ncu", default="ncu", show_default=True, help="ncu to run.")
@click.option(
    "--clock-control", "clock_control", type=click.Choice(("none", "base")), default="none",
    show_default=True,
    help="ncu's clock control: none, the clocks the GPU picks (as production runs); base, "
    "locked to base clock per kernel where the runner allows it (steadier, slower). "
    "Recorded; a baseline and a capture must agree (docs/noise.md).",
)  # fmt: skip
@click.option(
    "--phases", type=click.Choice(values(Phases)), default=Phases.AUTO.value, show_default=True,
    help="auto: the phase the baselines were recorded from (their time basis: durations "
    "compare only within one phase): for a baseline recorded from full captures (or by hand) "
    "a full capture, for one recorded from gate captures the gate capture and, when it fails, "
    "a diagnosis capture of the failing kernels (OUTPUT.diagnosis.csv, merged by check); "
    "with no launch filter given, the baselines' own launch filters. gate: only the one-pass "
    "gate set of every baselined kernel (1 replay pass per kernel). full: every gated metric "
    "at once.",
)  # fmt: skip
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
@guard
def capture_command(
    baselines: tuple[str, ...],
    output: str,
    dry_run: bool,
    replay_mode: str,
    kernels: tuple[str, ...],
    launch_skip: int | None,
    launch_count: int | None,
    nvtx_include: tuple[str, ...],
    no_census: bool,
    all_kernels: bool,
    allow_program_failure: bool,
    keep_report: bool,
    ncu: str,
    clock_control: str,
    phases: str,
    program: tuple[str, ...],
) -> None:
    """Run PROGRAM under ncu, collecting only what the baselines gate:

    \b
      perfgate capture -b baselines/ -o cap.csv -- ./app --size 4096
      perfgate capture -b b.yaml --dry-run -- python3 bench.py "two words"

    The program and its arguments are passed to ncu as they are (no shell). Exit 2 when ncu
    or the program fails, no kernel was profiled, or a gated metric came back absent."""
    from perfgate.usecases.capture import CaptureRequest, run_capture_command
    from perfgate.usecases.settings import CaptureOptions, ClockControl

    options = CaptureOptions(
        baselines, tuple(program), output=output, replay_mode=ReplayMode(replay_mode).value,
        kernels=kernels, launch_skip=launch_skip, launch_count=launch_count,
        nvtx_include=nvtx_include, all_kernels=all_kernels, ncu=ncu,
        allow_program_failure=allow_program_failure, keep_report=keep_report,
        census=not no_census, clock_control=ClockControl(clock_control),
    )  # fmt: skip
    emit(run_capture_command(CaptureRequest(options, Phases(phases), dry_run)))


@main.command(
    "pre-merge",
    cls=ProgramCommand,
    short_help="Capture a program and gate it, leaving CI's reports (before you merge).",
    context_settings={"allow_interspersed_args": False},
)
@click.option(
    "--baseline", "-b", "baselines", required=True, multiple=True, type=click.Path(),
    help="Baseline file or directory of them (one per GPU); repeatable.",
)  # fmt: skip
@click.option(
    "--capture", "-c", "captures", multiple=True, type=click.Path(),
    help="Gate this capture instead of making one (repeatable); then give no program.",
)  # fmt: skip
@click.option(
    "--out", "out", default="perfgate-report", show_default=True, type=click.Path(),
    help="Folder of the capture (capture.csv) and the reports (summary.md, junit.xml, "
    "result.json).",
)  # fmt: skip
@click.option(
    "--warn-only", is_flag=True,
    help="Report everything, exit 0 even when the gate fails; unusable input still exits 2.",
)  # fmt: skip
@click.option(
    "--waive", "waive", multiple=True, type=click.Choice(WAIVABLE), metavar="REASON",
    help=f"As check --waive (repeatable): {', '.join(WAIVABLE)}.",
)  # fmt: skip
@click.option("--ncu", "ncu", default="ncu", show_default=True, help="ncu to run.")
@click.option(
    "--phases", type=click.Choice(values(Phases)), default=Phases.AUTO.value, show_default=True,
    help="As capture --phases.",
)  # fmt: skip
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
@guard
def pre_merge_command(
    baselines: tuple[str, ...],
    captures: tuple[str, ...],
    out: str,
    warn_only: bool,
    waive: tuple[str, ...],
    ncu: str,
    phases: str,
    program: tuple[str, ...],
) -> None:
    """Before you merge, on a machine with the baselines' GPU: capture PROGRAM with perfgate
    capture and gate it with perfgate check, leaving the reports CI would write in OUT:

    \b
      perfgate pre-merge -b baselines/ -- python3 bench.py --steps 3
      perfgate pre-merge -b baselines/h100/zoo.yaml --capture existing.csv

    The check's report is the stdout, the capture's lines go to stderr. Exits as perfgate
    check does: 0 pass, 1 the gate failed, 2 unusable input or a failed capture."""
    from perfgate.usecases.outputs import github_environment
    from perfgate.usecases.premerge import PreMergeRequest, pre_merge_outcome, run_pre_merge
    from perfgate.usecases.requests import parse_waivers

    given = settings()
    request = PreMergeRequest(
        baselines, tuple(program), captures, out, warn_only=warn_only, ncu=ncu,
        phases=Phases(phases), waived=parse_waivers(waive),
    )  # fmt: skip
    result = run_pre_merge(
        request, github_environment(), to_stderr, quiet=given.quiet, colour=given.colour,
        captured=say_all,
    )  # fmt: skip
    emit(pre_merge_outcome(result, out, given.colour))


@main.command(
    "doctor",
    short_help="Check that this machine can capture (ncu, GPU, counter permission).",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "--baseline", "-b", "baselines", multiple=True, type=click.Path(),
    help="Baselines whose metrics the sanity capture must prove (file or directory).",
)  # fmt: skip
@click.option("--ncu", "ncu", default="ncu", show_default=True, help="ncu to check.")
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
@guard
def doctor_command(baselines: tuple[str, ...], ncu: str, program: tuple[str, ...]) -> None:
    """Check that this machine can capture: ncu and its version, the GPU, its driver and
    compute capability, counter permission, MIG, and (with -b and a program after --) a
    one-launch capture proving each gated metric returns data. Exit 2 on any problem."""
    from perfgate.usecases.doctor import DoctorRequest, run_doctor_command

    emit(run_doctor_command(DoctorRequest(baselines, ncu, program)))
