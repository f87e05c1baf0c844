"""The command line: options become a request, the core does the work, and every error
becomes one line on stderr with a documented exit code (docs/exit-codes.md)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import click

from perfgate import __version__
from perfgate.errors import ExitCode, PerfgateError

F = TypeVar("F", bound=Callable[..., Any])

# Kept in step with perfgate.reports.REPORTERS by a test (the registry would import pandas here).
FORMATS = ("text", "markdown", "junit", "json", "github")


def _fail(lines: list[str], code: ExitCode) -> None:
    from perfgate.reports.escape import log_line

    for line in lines:
        # A message may quote a kernel name or a file's text: one line each, whatever it holds.
        click.echo(f"perfgate: error: {log_line(line)}", err=True)
    sys.exit(int(code))


def _guard(fn: F) -> F:
    """Turn perfgate's errors into one line and an exit code; a bug into exit 3."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = click.get_current_context().find_root().params.get("debug", False)
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


_kernels_option = click.option(
    "--kernel",
    "-k",
    "kernels",
    multiple=True,
    help="Only kernels whose name matches this regex (repeatable).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="perfgate")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def main(debug: bool) -> None:
    """Gate GPU kernel performance on Nsight Compute counters.

    \b
    Exit codes: 0 every gated metric holds; 1 a metric regressed, or a baselined
    kernel or metric is missing from the capture; 2 unusable input or usage
    (capture, baseline, options); 3 an internal error.
    """


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
    verbose: bool,
) -> None:
    """Check captures against baselines; exit 1 when a counter regressed."""

    from perfgate.fileio import check_outputs
    from perfgate.gate import CheckRequest, ReportOutputs, github_outputs, run_check, write_reports
    from perfgate.reports import REPORTERS, text
    from perfgate.verdict import Report

    on_actions, summary_file = github_outputs()
    use_github = on_actions if github is None else github
    outputs = ReportOutputs(
        junit=junit_path, markdown=markdown_path, json=json_path, pr_comment=pr_comment_path,
        step_summary=summary_file if use_github else None,
    )  # fmt: skip
    try:
        check_outputs([junit_path, markdown_path, json_path, pr_comment_path], baselines + captures)
        report = run_check(CheckRequest(baselines, captures, report_new_kernels=not no_new_kernels))
    except PerfgateError as exc:
        # An output that is an input, or not a regular file, is never written to.
        outputs = _without(outputs, exc.path)
        # CI reads the reports, not stderr: say what went wrong there too, then fail.
        problem = Report(problems=tuple(exc.lines()))
        if use_github:
            click.echo(REPORTERS["github"].render(problem), nl=False)
        try:
            write_reports(problem, outputs)
        except PerfgateError as also:  # the report could not be written either: say both
            _fail([*exc.lines(), *also.lines()], exc.exit_code)
        raise
    except Exception as exc:  # a bug: no report of an earlier run may stay to claim a result
        _replace_stale(outputs, exc)
        raise
    try:
        write_reports(report, outputs)
    except PerfgateError:
        raise
    except Exception as exc:
        _replace_stale(outputs, exc)
        raise
    if use_github:
        click.echo(REPORTERS["github"].render(report), nl=False)
    output = text.render(report, verbose) if fmt == "text" else REPORTERS[fmt].render(report)
    click.echo(output, nl=False)
    sys.exit(int(report.exit_code))


def _without(outputs: Any, path: str | None) -> Any:
    """The report outputs less the one a problem is about (it may be an input)."""
    from dataclasses import fields, replace

    if path is None:
        return outputs
    return replace(
        outputs, **{f.name: None for f in fields(outputs) if getattr(outputs, f.name) == path}
    )


def _replace_stale(outputs: Any, exc: Exception) -> None:
    """After an internal error, each report file asked for says so, or is removed: a report
    left from an earlier run must not read as this run's result."""
    from dataclasses import replace

    from perfgate.fileio import remove_stale
    from perfgate.gate import write_reports
    from perfgate.verdict import Report

    problem = Report(problems=(f"internal error: {type(exc).__name__}: {exc}",))
    try:
        write_reports(problem, replace(outputs, step_summary=None))
    except Exception:  # the reporters themselves fail: leave no report at all
        for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
            if path:
                remove_stale(path)


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
    from perfgate.fileio import check_outputs
    from perfgate.gate import RecordRequest, run_record
    from perfgate.record import RecordSettings

    check_outputs([output], captures)
    settings = RecordSettings(kernels, metrics, reason, by_nvtx)
    result = run_record(RecordRequest(captures, output, settings))
    kernels_n = len(result.baseline.kernels)
    metrics_n = sum(len(k.metrics) for k in result.baseline.kernels)
    click.echo(f"wrote {output}: {kernels_n} kernels, {metrics_n} metrics")
    for note in result.notes:
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

    problems: list[str] = []
    for path in paths:
        try:
            baseline = load_baseline(path)
            click.echo(f"ok {path}: {len(baseline.kernels)} kernels")
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
    "--cc", default="9.0", show_default=True, help="Compute capability to resolve raw metrics for."
)
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
    from perfgate.thresholds import describe_bound

    if ncu:
        click.echo(",".join(ncu_metrics(cc)))
        return
    if as_markdown:
        click.echo(catalog_markdown(), nl=False)
        return
    for m in CATALOG_LIST:
        bound = "categorical" if m.categorical else describe_bound(m.threshold, m.direction, m.unit)
        flag = "default" if m.default else "opt-in"
        click.echo(f"{m.name:<28} {m.noise.value:<6} {flag:<8} {bound:<24} {m.title}")
        click.echo(f"{'':<28} from: {' | '.join(f.text for f in m.formulas)}")
    cold = ", ".join(sorted(COLD_START_STALLS))
    bound = describe_bound(STALL_THRESHOLD, m.direction, "%")
    click.echo(
        f"{STALL_PREFIX + '<reason>':<28} noisy  default  {bound:<24} "
        f"Share of one stall reason ({cold}: +25 points)"
    )
