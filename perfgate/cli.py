"""The command line: options become a request, the core does the work, and every error
becomes one line on stderr with a documented exit code (docs/exit-codes.md)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from perfgate import __version__
from perfgate.errors import ExitCode, PerfgateError

F = TypeVar("F", bound=Callable[..., Any])

# Kept in step with perfgate.reports.REPORTERS by a test (the registry would import pandas here).
FORMATS = ("text", "markdown", "junit", "json", "github")


@dataclass(frozen=True)
class Settings:
    """The whole program's options, kept on click's context for every subcommand."""

    debug: bool = False
    quiet: bool = False
    colour: bool = False


def _settings() -> Settings:
    obj = click.get_current_context().find_root().obj
    return obj if isinstance(obj, Settings) else Settings()


def _fail(lines: list[str], code: ExitCode) -> None:
    for line in lines:
        click.echo(f"perfgate: error: {line}", err=True)
    sys.exit(int(code))


def _guard(fn: F) -> F:
    """Turn perfgate's errors into one line and an exit code; a bug into exit 3."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = _settings().debug
        try:
            return fn(*args, **kwargs)
        except PerfgateError as exc:
            if debug:
                traceback.print_exc()
            _fail(exc.lines(), exc.exit_code)
        except (KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as exc:  # a bug: say so, without a traceback unless asked
            if debug:
                traceback.print_exc()
            _fail(
                [
                    f"internal error: {type(exc).__name__}: {exc} "
                    f"(a bug in perfgate {__version__}; --debug shows the traceback)"
                ],
                ExitCode.INTERNAL_ERROR,
            )

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper  # type: ignore[return-value]


def _captures_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--capture",
        "-c",
        "captures",
        required=True,
        multiple=True,
        type=click.Path(),
        help=help_text,
    )


def _compute_capability(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """MAJOR.MINOR as ncu prints it: a typo must not print another architecture's list."""
    import re

    if not re.fullmatch(r"[1-9][0-9]?\.[0-9]", value):
        raise click.BadParameter(f"{value!r} is not a compute capability such as 8.0 or 9.0")
    return value


_kernels_option = click.option(
    "--kernel",
    "-k",
    "kernels",
    multiple=True,
    help="Only kernels whose name matches this regex (repeatable).",
)


# Options of the whole program that a user may also type after the subcommand
# (`perfgate check ... --debug`): moved in front of it before click parses. Only arguments
# before a lone `--` are looked at: what follows it belongs to a program perfgate runs.
_GLOBAL_FLAGS = ("--debug", "--quiet", "-q", "--no-color")
_GLOBAL_VALUED = ("--color",)


def _hoist_global_options(args: list[str]) -> list[str]:
    end = args.index("--") if "--" in args else len(args)
    hoisted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < end:
        arg = args[i]
        if arg in _GLOBAL_FLAGS:
            hoisted.append(arg)
        elif arg.partition("=")[0] in _GLOBAL_VALUED:
            if "=" in arg or i + 1 >= end:
                hoisted.append(arg)
            else:
                hoisted.extend((arg, args[i + 1]))
                i += 1
        else:
            rest.append(arg)
        i += 1
    return hoisted + rest + args[end:]


class _Main(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_global_options(args))


@click.group(
    cls=_Main,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="perfgate")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors (anywhere on the line).")
@click.option(
    "--quiet", "-q", is_flag=True,
    help="Print only the status line (text) and errors; reports and annotations are written "
    "as usual.",
)  # fmt: skip
@click.option(
    "--color", "color", type=click.Choice(("auto", "always", "never")), default="auto",
    show_default=True,
    help="Colour the text output; auto: on a terminal, unless NO_COLOR is set.",
)  # fmt: skip
@click.option("--no-color", "no_color", is_flag=True, help="Same as --color never.")
@click.pass_context
def main(ctx: click.Context, debug: bool, quiet: bool, color: str, no_color: bool) -> None:
    """Gate GPU kernel performance on Nsight Compute counters.

    \b
    Exit codes: 0 every gated metric holds; 1 a metric regressed, or a baselined
    kernel or metric is missing from the capture; 2 unusable input or usage
    (capture, baseline, options); 3 an internal error.
    """
    from perfgate.reports.colour import use_colour

    ctx.obj = Settings(
        debug=debug,
        quiet=quiet,
        colour=use_colour("never" if no_color else color, os.environ, sys.stdout.isatty()),
    )


@main.command("check")
@click.option(
    "--baseline",
    "-b",
    "baselines",
    required=True,
    multiple=True,
    type=click.Path(),
    help="Baseline YAML file; repeat for several GPUs (each judges the captures from its GPU).",
)
@_captures_option("ncu raw CSV page (plain or .gz) or .ncu-rep report; repeat for several runs.")
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
    default="text",
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
@_guard
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
) -> None:
    """Check captures against baselines; exit 1 when a counter regressed."""
    from perfgate.gate import (
        CheckRequest,
        ReportOutputs,
        github_environment,
        parse_fail_on,
        policy_exit_code,
        report_files,
        run_check,
        write_reports,
        write_step_outputs,
    )
    from perfgate.reports import github as github_report
    from perfgate.reports import junit, text
    from perfgate.verdict import Report

    settings = _settings()
    policy = parse_fail_on("never" if warn_only else fail_on)
    gh = github_environment()
    use_github = gh.active if github is None else github
    outputs = ReportOutputs(
        junit=junit_path, markdown=markdown_path, json=json_path, pr_comment=pr_comment_path,
        step_summary=gh.step_summary if use_github else None,
        github_output=gh.output if use_github else None,
        repository_root=gh.workspace,
        junit_locations=junit_locations,
    )  # fmt: skip
    level: github_report.Level = "error" if policy else "warning"

    def annotate(report: Report) -> None:
        # GitHub reads workflow commands from a step's stdout and stderr alike (the runner
        # hands both streams to one command parser): they go to stderr, so that stdout stays
        # exactly the format asked for. With --format github they are the stdout.
        if use_github and fmt != "github":
            files = report_files(report, gh.workspace)
            click.echo(github_report.render(report, files, level), nl=False, err=True)

    try:
        report = run_check(CheckRequest(baselines, captures, report_new_kernels=not no_new_kernels))
    except PerfgateError as exc:
        # CI reads the reports, not stderr: say what went wrong there too, then fail.
        problem = Report(problems=tuple(exc.lines()))
        annotate(problem)
        try:
            write_reports(problem, outputs)
            write_step_outputs(problem, outputs, exc.exit_code)
        except PerfgateError as also:  # the report could not be written either: say both
            _fail([*exc.lines(), *also.lines()], exc.exit_code)
        raise
    code = policy_exit_code(report, policy)
    write_reports(report, outputs)
    write_step_outputs(report, outputs, code)
    annotate(report)
    if fmt == "text":
        output = text.render(report, verbose)
        if settings.quiet:
            output = output.split("\n", 1)[0] + "\n"
        if settings.colour:
            from perfgate.reports.colour import paint

            output = paint(output)
    elif fmt == "github":
        output = github_report.render(report, report_files(report, gh.workspace), level)
    elif fmt == "junit":
        files = report_files(report, gh.workspace)
        output = junit.render(report, files, locations=junit_locations)
    else:
        from perfgate.reports import REPORTERS

        output = REPORTERS[fmt].render(report)
    # click strips escape codes from what is not a terminal unless told: colour was decided.
    click.echo(output, nl=False, color=settings.colour and fmt == "text")
    if code is not report.exit_code and not settings.quiet:
        click.echo(
            f"perfgate: the gate {'failed' if report.exit_code else 'passed'}; exit "
            f"{int(code)} (--fail-on {','.join(sorted(p.value for p in policy)) or 'never'})",
            err=True,
        )
    sys.exit(int(code))


@main.command("explain")
@_captures_option("ncu raw CSV page (plain or .gz) or .ncu-rep report; repeat for several runs.")
@_kernels_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "markdown", "json")),
    default="text",
    show_default=True,
)
@_guard
def explain_command(captures: tuple[str, ...], kernels: tuple[str, ...], fmt: str) -> None:
    """Diagnose the kernels of a capture, without a baseline: bottleneck and lever to try."""
    from perfgate.gate import ExplainRequest, run_explain
    from perfgate.reports import explain

    result = run_explain(ExplainRequest(captures, kernels))
    click.echo(explain.RENDERERS[fmt](result), nl=False)


@main.group("baseline")
def baseline_group() -> None:
    """Record and validate baseline files."""


@baseline_group.command("record")
@_captures_option("Capture of the known-good build; repeat for several ncu runs (recommended: 3).")
@click.option("--output", "-o", required=True, type=click.Path(), help="Baseline YAML to write.")
@_kernels_option
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
@_guard
def record_command(
    captures: tuple[str, ...],
    output: str,
    kernels: tuple[str, ...],
    metrics: tuple[str, ...],
    reason: str | None,
    by_nvtx: bool,
) -> None:
    """Record a baseline from captures of a good build (each file one separate ncu run; from
    3 runs on, bounds are calibrated to the noise they show)."""
    from perfgate.gate import RecordRequest, run_record
    from perfgate.record import RecordSettings

    settings = RecordSettings(kernels, metrics, reason, by_nvtx)
    result = run_record(RecordRequest(captures, output, settings))
    from perfgate.reports.format import counted

    kernels_n = len(result.baseline.kernels)
    metrics_n = sum(len(k.metrics) for k in result.baseline.kernels)
    quiet = _settings().quiet
    if not quiet:
        click.echo(
            f"wrote {output}: {counted(kernels_n, 'kernel')}, {counted(metrics_n, 'metric')}"
        )
    for note in result.notes:
        if not quiet:
            click.echo(f"note: {note}", err=True)
    for line in result.skipped:
        if metrics:  # asked for by name: say where a metric could not be recorded
            click.echo(f"  skipped {line}", err=True)


@baseline_group.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@_guard
def validate_command(paths: tuple[str, ...]) -> None:
    """Check baseline files against the schema and the metric catalog."""
    from perfgate.baseline import load_baseline
    from perfgate.reports.format import counted

    problems: list[str] = []
    for path in paths:
        try:
            baseline = load_baseline(path)
            if not _settings().quiet:
                click.echo(f"ok {path}: {counted(len(baseline.kernels), 'kernel')}")
        except PerfgateError as exc:
            problems.extend(exc.lines())
    if problems:
        _fail(problems, ExitCode.INPUT_ERROR)


@main.command("metrics")
@click.option(
    "--ncu", is_flag=True, help="Print the raw metrics to pass to ncu --metrics, comma-separated."
)
@click.option(
    "--markdown", "as_markdown", is_flag=True, help="Print the catalog as a markdown table."
)
@click.option(
    "--cc", default="9.0", show_default=True, callback=_compute_capability,
    help="Compute capability to resolve raw metrics for (MAJOR.MINOR, e.g. 8.0, 9.0, 10.0).",
)  # fmt: skip
@_guard
def metrics_command(ncu: bool, as_markdown: bool, cc: str) -> None:
    """List the metric catalog (or the ncu metric list it needs)."""
    from perfgate.catalog import (
        CATALOG_LIST,
        COLD_START_STALLS,
        STALL_PREFIX,
        STALL_THRESHOLD,
        catalog_markdown,
        ncu_metrics,
    )
    from perfgate.thresholds import Direction, describe_bound

    if ncu:
        click.echo(",".join(ncu_metrics(cc)))
        return
    if as_markdown:
        click.echo(catalog_markdown(), nl=False)
        return
    rows = [("METRIC", "NOISE", "GATED", "DEFAULT BOUND", "WHAT")]
    sources = []
    for m in CATALOG_LIST:
        bound = "categorical" if m.categorical else describe_bound(m.threshold, m.direction, m.unit)
        rows.append((m.name, m.noise.value, "default" if m.default else "opt-in", bound, m.title))
        sources.append(" | ".join(f.text for f in m.formulas))
    cold = ", ".join(sorted(COLD_START_STALLS))
    rows.append(
        (
            f"{STALL_PREFIX}<reason>", "noisy", "opt-in",
            describe_bound(STALL_THRESHOLD, Direction.HIGHER_IS_WORSE, "%"),
            f"Share of one stall reason ({cold}: +25 points)",
        )
    )  # fmt: skip
    sources.append("the stall family's counters for <reason>")
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for n, row in enumerate(rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[4]]).rstrip())
        if n:  # the header has no source line
            click.echo(f"{'':<{widths[0]}}  from: {sources[n - 1]}")
