"""`perfgate baseline`: record, accept, update, show, diff and validate baseline files; each
command's options into a request for its use case (perfgate.usecases.record, .edit,
.validate)."""

from __future__ import annotations

import click

from perfgate.cli.console import emit, guard, settings
from perfgate.cli.main import main
from perfgate.cli.parsing import capture_files_option, kernels_option
from perfgate.usecases.choices import DataFormat, ReviewFormat, values


@main.group("baseline")
def baseline_group() -> None:
    """Record, validate, review and change baseline files."""


@baseline_group.command("record", short_help="Record a baseline from captures of a good build.")
@capture_files_option(
    "Capture of the known-good build; repeat for several ncu runs (recommended: 3)."
)
@click.option("--output", "-o", required=True, type=click.Path(), help="Baseline YAML to write.")
@kernels_option
@click.option(
    "--metric",
    "-m",
    "metrics",
    multiple=True,
    help="Gate this metric (repeatable; default: the catalog's default set).",
)
@click.option("--reason", help="Why this baseline is recorded (kept in its provenance).")
@click.option(
    "--nvtx", "by_nvtx", is_flag=True,
    help="Make the NVTX range part of a kernel's identity (capture with ncu --nvtx): the same "
    "kernel in two ranges becomes two entries.",
)  # fmt: skip
@click.option(
    "--overwrite", is_flag=True,
    help="Replace an existing baseline file, dropping its hand edits (default: refuse; "
    "perfgate baseline update re-records keeping them).",
)  # fmt: skip
@click.option(
    "--diagnosis-capture", "diagnosis", multiple=True, type=click.Path(),
    help="A full capture of the same build beside gate captures (repeatable): the kernels' "
    "diagnosis side comes from it too, never their gates or durations (docs/capture.md).",
)  # fmt: skip
@click.option(
    "--scope", "scope", metavar="FILTERS",
    help="For captures made by hand (no sidecar): the ncu launch filters they were made with, "
    "e.g. '--nvtx-include step/', or 'all'. Launch counts and program time compare only "
    "between captures of one scope (docs/check.md).",
)  # fmt: skip
@guard
def record_command(
    captures: tuple[str, ...],
    output: str,
    kernels: tuple[str, ...],
    metrics: tuple[str, ...],
    reason: str | None,
    by_nvtx: bool,
    overwrite: bool,
    diagnosis: tuple[str, ...],
    scope: str | None,
) -> None:
    """Record a baseline from captures of a good build (each file one separate ncu run; from
    3 runs on, bounds are calibrated to the noise they show)."""
    from perfgate.usecases.record import RecordRequest, run_record_command
    from perfgate.usecases.settings import RecordSettings

    record = RecordSettings(kernels, metrics, reason, by_nvtx)
    request = RecordRequest(captures, output, record, overwrite, diagnosis, scope)
    emit(run_record_command(request, quiet=settings().quiet))


_by_option = click.option(
    "--by", help="Who accepts it (default: the CI actor, else git's user.name <user.email>)."
)
_output_option = click.option(
    "--output", "-o", type=click.Path(),
    help="Write the edited baseline here (default: edit the baseline file in place).",
)  # fmt: skip


@baseline_group.command(
    "accept", short_help="Take the new values of an intended change, with a reason."
)
@click.option("--baseline", "-b", required=True, type=click.Path(), help="Baseline YAML to edit.")
@capture_files_option(
    "Capture of the build whose values are accepted; repeat for several ncu runs."
)
@click.option("--reason", required=True, help="Why the change is intended (kept in the file).")
@click.option(
    "--kernel", "-k", "kernels", multiple=True,
    help="Accept the kernels whose id or name matches this regex (repeatable; default: every "
    "kernel that regressed or went missing).",
)  # fmt: skip
@click.option("--add-new", is_flag=True, help="Also add kernels that are new to the baseline.")
@click.option(
    "--program", "program", is_flag=True,
    help="Also take the whole-program GPU time (default: only without --kernel, and only "
    "when it regressed itself).",
)  # fmt: skip
@_by_option
@_output_option
@guard
def accept_command(
    baseline: str,
    captures: tuple[str, ...],
    reason: str,
    kernels: tuple[str, ...],
    add_new: bool,
    program: bool,
    by: str | None,
    output: str | None,
) -> None:
    """Take new values for kernels whose change is intended, with a reason; thresholds and
    comments people wrote are kept, and the previous values go into the kernel's history.
    The whole-program GPU time changes only when named (--program), or without --kernel when
    it regressed itself; its history names the change."""
    from perfgate.usecases.edit import EditRequest, accept_outcome

    request = EditRequest(
        baseline,
        captures,
        reason,
        kernels,
        add_new=add_new,
        program=program,
        by=by,
        output=output,
    )
    emit(accept_outcome(request))


@baseline_group.command(
    "update", short_help="Re-record a baseline from new captures, keeping hand edits."
)
@click.option("--baseline", "-b", required=True, type=click.Path(), help="Baseline YAML to edit.")
@capture_files_option("Capture of the build to re-record from; repeat (3 runs calibrate bounds).")
@click.option(
    "--reason", help="Why; with a reason, kernels that regressed are taken too (and recorded "
    "as accepted), and so is a regressed whole-program GPU time.",
)  # fmt: skip
@click.option(
    "--ratchet", is_flag=True,
    help="Take only values that improved beyond their bound, and only ever tighten bounds.",
)  # fmt: skip
@click.option("--no-new", is_flag=True, help="Do not add kernels that are new to the baseline.")
@_by_option
@_output_option
@guard
def update_command(
    baseline: str,
    captures: tuple[str, ...],
    reason: str | None,
    ratchet: bool,
    no_new: bool,
    by: str | None,
    output: str | None,
) -> None:
    """Re-record a baseline from new captures, keeping hand-written thresholds, metric
    choices and comments; kernels that regressed are left alone unless --reason is given."""
    from perfgate.usecases.edit import EditRequest, update_outcome

    request = EditRequest(
        baseline, captures, reason, add_new=not no_new, ratchet=ratchet, by=by, output=output
    )
    emit(update_outcome(request))


@baseline_group.command("show", short_help="A baseline condensed for review.")
@click.argument("path", type=click.Path())
@kernels_option
@click.option(
    "--format", "fmt", type=click.Choice(values(ReviewFormat)), default=ReviewFormat.TEXT.value
)
@guard
def show_command(path: str, kernels: tuple[str, ...], fmt: str) -> None:
    """A baseline condensed for review: fingerprint, each kernel's gated values and the bound
    the check applies, and the history of accepted changes."""
    from perfgate.usecases.edit import show_outcome

    emit(show_outcome(path, kernels, ReviewFormat(fmt)))


@baseline_group.command("diff", short_help="What changed between two baselines.")
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
@click.option(
    "--format", "fmt", type=click.Choice(values(ReviewFormat)), default=ReviewFormat.TEXT.value
)
@click.option("--exit-code", is_flag=True, help="Exit 1 when the baselines differ.")
@click.option(
    "--all", "all_values", is_flag=True,
    help="List values that moved within their bounds too (default: only those beyond).",
)  # fmt: skip
@guard
def diff_command(before: str, after: str, fmt: str, exit_code: bool, all_values: bool) -> None:
    """What changed between two baselines (e.g. main's and a pull request's): kernels added
    and removed, values and bounds moved, fingerprint, accepted changes with their reasons."""
    from perfgate.usecases.edit import diff_outcome

    emit(diff_outcome(before, after, ReviewFormat(fmt), all_values, exit_code))


@baseline_group.command(
    "validate", short_help="Check baseline files against the schema and the metric catalog."
)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format", "fmt", type=click.Choice(values(DataFormat)), default=DataFormat.TEXT.value,
    show_default=True,
    help="json: one document on stdout, each problem's file, line, column, JSON path and "
    "message as fields, and a status (docs/baselines.md).",
)  # fmt: skip
@guard
def validate_command(paths: tuple[str, ...], fmt: str) -> None:
    """Check baseline files (or the baselines in a directory) against the schema and the
    metric catalog."""
    from perfgate.usecases.validate import ValidateRequest, run_validate

    emit(run_validate(ValidateRequest(paths, DataFormat(fmt), quiet=settings().quiet)))
