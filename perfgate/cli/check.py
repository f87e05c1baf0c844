"""`perfgate check`, `perfgate compare` and `perfgate explain`: options into a request, the
use case (perfgate.usecases.check_command, .explain) does the work."""

from __future__ import annotations

import sys
from typing import Any

import click

from perfgate.cli.console import (
    emit,
    guard,
    internal_error,
    say,
    settings,
    show,
    to_stderr,
)
from perfgate.cli.main import main
from perfgate.cli.parsing import capture_files_option, kernels_option
from perfgate.common.errors import ExitCode, PerfgateError
from perfgate.usecases.choices import ExplainFormat, Format, values
from perfgate.usecases.requests import WAIVABLE

FORMATS = values(Format)


class _MachineFormatCommand(click.Command):
    """A command whose stdout is a machine format when asked (--format json|junit|github),
    even when its own arguments are refused (exit 2): an error document, not nothing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        asked = _asked_format(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if asked is not None:
                problem_stdout(asked, (exc.format_message(),), ExitCode.INPUT_ERROR)
            raise


def _asked_format(args: list[str]) -> Format | None:
    """The --format value among `args` (the last one given), None when not given or not one
    of the formats."""
    asked = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--format" and i + 1 < len(args):
            asked = args[i + 1]
        elif arg.startswith("--format="):
            asked = arg.partition("=")[2]
    try:
        return None if asked is None else Format(asked)
    except ValueError:
        return None


@main.command(
    "check",
    cls=_MachineFormatCommand,
    short_help="Check captures against baselines; exit 1 on a regression.",
)
@click.option(
    "--baseline",
    "-b",
    "baselines",
    required=True,
    multiple=True,
    type=click.Path(),
    help="Baseline YAML file, or a directory of them (one per GPU); repeatable. Each capture is "
    "judged by the baseline recorded on its GPU.",
)
@capture_files_option(
    "ncu raw CSV page (plain or .gz) or .ncu-rep report; repeat for several runs."
)
@click.option("--junit", "junit_path", type=click.Path(), help="Write JUnit XML here.")
@click.option(
    "--markdown", "markdown_path", type=click.Path(),
    help="Write the markdown summary here (stall charts as SVG files beside it).",
)  # fmt: skip
@click.option(
    "--json",
    "json_path",
    type=click.Path(),
    help="Write the whole result as JSON here.",
)
@click.option(
    "--pr-comment", "pr_comment_path", type=click.Path(),
    help="Write a pull-request comment (with a stable hidden marker, under 65,536 characters).",
)  # fmt: skip
@click.option(
    "--github/--no-github", default=None,
    help="GitHub Actions annotations and step summary (default: on when GITHUB_ACTIONS=true).",
)  # fmt: skip
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=Format.TEXT.value,
    show_default=True,
    help="What to print on stdout.",
)
@click.option(
    "--no-new-kernels", is_flag=True, help="Do not report kernels that are not in the baseline."
)
@click.option(
    "--fail-on", "fail_on", default="regression,missing", show_default=True, metavar="LIST",
    help="What fails the build (exit 1), comma-separated: regression (a gated metric got "
    "worse), missing (a baselined kernel or metric is not in the capture), or never.",
)  # fmt: skip
@click.option(
    "--warn-only", is_flag=True,
    help="Report everything, exit 0 even when the gate fails (same as --fail-on never); "
    "unusable input still exits 2.",
)  # fmt: skip
@click.option(
    "--junit-locations/--no-junit-locations", default=True, show_default=True,
    help="file and line attributes on JUnit testcases (the baseline entry); junit-10.xsd "
    "does not define them.",
)  # fmt: skip
@click.option("--verbose", "-v", is_flag=True, help="List passing comparisons too (text format).")
@click.option(
    "--allow-other-gpu", is_flag=True,
    help="Let the one baseline given judge captures from another GPU or compute capability "
    "(refused by default: counters differ between GPUs).",
)  # fmt: skip
@click.option(
    "--waive", "waive", multiple=True, type=click.Choice(WAIVABLE), metavar="REASON",
    help="Let gates not judged for this reason pass (repeatable; the report still names "
    f"them): {', '.join(WAIVABLE)}. Without it a gate not judged fails (exit 2).",
)  # fmt: skip
@click.option(
    "--threshold", "thresholds", multiple=True, metavar="METRIC=BOUND",
    help="This run only: bound METRIC for every kernel, over the baseline's own (repeatable): "
    "duration=5% a relative bound, registers_per_thread=4 an absolute one in the metric's "
    "unit (perfgate metrics lists them; points for a metric in %).",
)  # fmt: skip
@click.option(
    "--history", "history", default=None, metavar="FILE|URL",
    help="A perfgate history: the markdown report gets the trend of each kernel that "
    "changed, its earlier runs on this fingerprint and this run (docs/history.md).",
)  # fmt: skip
@click.option(
    "--drift", "drift_branch", default=None, metavar="BRANCH",
    help="With --history: hold this run to BRANCH's recent runs on its fingerprint and warn "
    "of each gated metric beyond them (a slow drift each check passes); the exit code is "
    "the check's (docs/history.md).",
)  # fmt: skip
@guard
def check_command(
    baselines: tuple[str, ...],
    captures: tuple[str, ...],
    junit_path: str | None,
    markdown_path: str | None,
    json_path: str | None,
    pr_comment_path: str | None,
    github: bool | None,
    fmt: str,
    no_new_kernels: bool,
    fail_on: str,
    warn_only: bool,
    junit_locations: bool,
    verbose: bool,
    allow_other_gpu: bool,
    waive: tuple[str, ...],
    thresholds: tuple[str, ...],
    history: str | None = None,
    drift_branch: str | None = None,
    compare_with: str | None = None,  # perfgate compare: the baseline is recorded from it
) -> None:
    """Check captures against baselines; exit 1 when a counter regressed, 2 when a gate
    could not be judged (unless waived by name with --waive)."""
    from perfgate.usecases.check import CheckRequest
    from perfgate.usecases.check_command import CheckCommand, ReportPaths, run_check_command
    from perfgate.usecases.outputs import github_environment
    from perfgate.usecases.requests import parse_fail_on, parse_thresholds, parse_waivers

    given = settings()
    stdout = Format(fmt)
    try:
        command = CheckCommand(
            CheckRequest(
                baselines,
                captures,
                report_new_kernels=not no_new_kernels,
                allow_other_gpu=allow_other_gpu,
                waived=parse_waivers(waive),
                thresholds=parse_thresholds(thresholds),
                recorded_from=(compare_with,) if compare_with else (),
            ),
            policy=parse_fail_on("never" if warn_only else fail_on),
            reports=ReportPaths(junit_path, markdown_path, json_path, pr_comment_path),
            github=github,
            junit_locations=junit_locations,
            fmt=stdout,
            verbose=verbose,
            quiet=given.quiet,
            colour=given.colour,
            history=history,
            drift_branch=drift_branch,
        )
        outcome = run_check_command(command, github_environment(), to_stderr)
    except PerfgateError as exc:
        problem_stdout(stdout, tuple(exc.lines()), exc.exit_code)
        raise  # guard says it on stderr and exits with its code
    except Exception as exc:  # a bug: stdout stays the format asked for all the same
        problem_stdout(stdout, (internal_error(exc),), ExitCode.INTERNAL_ERROR)
        raise
    # click strips escape codes from what is not a terminal unless told: colour was decided.
    show(outcome.stdout, colour=given.colour and stdout is Format.TEXT)
    if outcome.policy_note:
        say(outcome.policy_note, err=True)
    sys.exit(int(outcome.exit_code))


def problem_stdout(fmt: Format, problems: tuple[str, ...], code: ExitCode) -> None:
    from perfgate.usecases.check_command import problem_stdout as document

    text = document(fmt, problems, code)
    if text is not None:
        show(text)


@main.command(
    "compare",
    cls=_MachineFormatCommand,
    short_help="Compare two captures, without a baseline; exit 1 on a regression.",
)
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
def compare_command(before: str, after: str, **options: Any) -> None:
    """Compare capture AFTER with capture BEFORE, without a baseline file: the baseline
    `perfgate baseline record -c BEFORE` would write is recorded in memory (the catalog's
    default metrics and bounds; one run calibrates nothing), and AFTER is checked against it
    as `perfgate check` checks, with the same reports and exit codes (docs/compare.md).

    \b
      perfgate compare main.csv branch.csv
      perfgate compare main.csv branch.csv --format delta --threshold duration=5%
    """
    check_command.callback(baselines=(), captures=(after,), compare_with=before, **options)  # type: ignore[misc]


# Every option of check but what names the inputs: compare reports and fails as check does.
compare_command.params.extend(
    p for p in check_command.params if p.name not in ("baselines", "captures")
)


@main.command("explain", short_help="Diagnose the kernels of a capture, without a baseline.")
@capture_files_option(
    "ncu raw CSV page (plain or .gz) or .ncu-rep report; repeat for several runs."
)
@kernels_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(values(ExplainFormat)),
    default=ExplainFormat.TEXT.value,
    show_default=True,
)
@guard
def explain_command(captures: tuple[str, ...], kernels: tuple[str, ...], fmt: str) -> None:
    """Diagnose the kernels of a capture, without a baseline: bottleneck and lever to try."""
    from perfgate.usecases.explain import ExplainRequest, explain_outcome

    emit(explain_outcome(ExplainRequest(captures, kernels), ExplainFormat(fmt)))
