"""The command line: options become a request, the core does the work, and every error
becomes one line on stderr with a documented exit code (docs/check.md)."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from perfgate import __version__
from perfgate.common import patterns as user_patterns
from perfgate.common.errors import ExitCode, PerfgateError
from perfgate.common.escape import log_line
from perfgate.judge.skips import WAIVABLE
from perfgate.reports import REPORTERS

F = TypeVar("F", bound=Callable[..., Any])

FORMATS = tuple(REPORTERS)


@dataclass(frozen=True)
class Settings:
    """The whole program's options, kept on click's context for every subcommand."""

    debug: bool = False
    quiet: bool = False
    colour: bool = False


def _settings() -> Settings:
    obj = click.get_current_context().find_root().obj
    return obj if isinstance(obj, Settings) else Settings()


def _say(line: str, *, err: bool = False) -> None:
    """One line of perfgate's own console output, through the one escaping helper
    (common.escape.log_line): a kernel name, baseline id, note or file name holding a newline,
    `::` (a GitHub workflow command), a control, bidi or zero-width character is shown escaped
    (`\\x0a`, `\\u202e`). Every click.echo of this module but `_show`'s is this one
    (tests/test_hostile.py holds it so)."""
    click.echo(log_line(line), err=err)


def _show(document: str, *, err: bool = False, colour: bool | None = None) -> None:
    """A document a reporter rendered (reports/: text, markdown, JSON, JUnit, GitHub workflow
    commands), whose reporter escaped each line itself; it goes out as it is."""
    click.echo(document, nl=False, err=err, color=colour)


def _fail(lines: list[str], code: ExitCode) -> None:
    for line in lines:
        # A message may quote a kernel name or a file's text: one line each, whatever it holds.
        _say(f"perfgate: error: {line}", err=True)
    sys.exit(int(code))


def _internal_error(exc: Exception) -> str:
    return (
        f"internal error: {type(exc).__name__}: {exc} "
        f"(a bug in perfgate {__version__}; --debug shows the traceback)"
    )


def _guard(fn: F) -> F:
    """Turn perfgate's errors into one line and an exit code; a bug into exit 3."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = _settings().debug
        user_patterns.reset_budget()  # one budget for all the user's regexes of a command
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
            _fail([_internal_error(exc)], ExitCode.INTERNAL_ERROR)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper  # type: ignore[return-value]


def _capture_files_option(help_text: str) -> Callable[[F], F]:
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


def _hoist_global_options(args: list[str], end: int | None = None) -> list[str]:
    """`end`: where a program's own arguments begin (a lone `--` by default)."""
    if end is None:
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


def _takes_value(command: click.Command) -> dict[str, bool]:
    out = {name: True for name in _GLOBAL_VALUED}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                out[name] = not param.is_flag and not param.count
    return out


def _program_start(group: click.Group, args: list[str]) -> int | None:
    """Where the program of `perfgate capture ./bench -q` (a command that runs one) begins:
    its first argument that is neither an option nor an option's value. What follows is the
    program's, as `--` would say: `-q` there is the program's flag, not perfgate's."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":  # perfgate's own
        i += 2 if args[i] in _GLOBAL_VALUED else 1
    command = group.commands.get(args[i]) if i < len(args) else None
    if command is None or not any(p.name == "program" for p in command.params):
        return None
    values = _takes_value(command)
    i += 1
    while i < len(args):
        arg = args[i]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return i
        name, eq, _ = arg.partition("=")
        i += 2 if values.get(name) and not eq else 1
    return None


def _misplaced(command: click.Command, args: list[str], param: click.Parameter | None) -> str:
    """The hint for a required option that was given after the program (`perfgate capture
    -- ./app -b x.yaml`), where it is the program's argument; "" when it was not given."""
    if param is None:
        return ""
    values = _takes_value(command)
    i = 0
    while i < len(args) and args[i] != "--" and args[i].startswith("-") and args[i] != "-":
        name, eq, _ = args[i].partition("=")
        i += 2 if values.get(name) and not eq else 1
    program = args[i + 1 :] if i < len(args) and args[i] == "--" else args[i:]
    names = [n for n in param.opts if n.startswith("-")]
    for j, arg in enumerate(program):
        if arg in names or any(arg.startswith(f"{n}=") for n in names if n.startswith("--")):
            given = " ".join(program[j : j + (1 if "=" in arg else 2)])
            return (
                f"{given} comes after the program ({program[0]}), so it is the program's "
                f"argument: give perfgate's options before the program: perfgate "
                f"{command.name} {given} ... -- {program[0]} ..."
            )
    return ""


class _ProgramCommand(click.Command):
    """A command that runs a program given last (capture, pre-merge): a required option
    missing because it was typed after the program says so, naming it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, list(args))
        except click.MissingParameter as exc:
            hint = _misplaced(self, args, exc.param)
            if not hint:
                raise
            raise click.UsageError(f"{exc.format_message()} {hint}", ctx) from exc


class _Main(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_global_options(args, _program_start(self, args)))


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


def run() -> None:
    """The `perfgate` program: main(), then out of the process without tearing the
    interpreter down. Freeing a large check's objects one by one (a capture's launches, a
    baseline of 1,000 kernels, 37,000 comparisons) took 0.2 to 0.4 s after the answer was
    known (docs/scale.md). Every file perfgate writes is closed before main() returns, so
    only the standard streams are left to flush. Tests call main() and keep the usual exit."""
    try:
        main()
        code: int = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("text"): Python prints it and exits 1
            sys.stderr.write(log_line(str(exc.code)) + "\n")
            code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that went away (perfgate check | head)
            stream.flush()
    os._exit(code)


class _MachineFormatCommand(click.Command):
    """A command whose stdout is a machine format when asked (--format json|junit|github),
    even when its own arguments are refused (exit 2): an error document, not nothing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        asked = _asked_format(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if asked is not None:
                _problem_stdout(asked, (exc.format_message(),), ExitCode.INPUT_ERROR)
            raise


def _asked_format(args: list[str]) -> str | None:
    """The --format value among `args` (the last one given), None when not given."""
    asked = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--format" and i + 1 < len(args):
            asked = args[i + 1]
        elif arg.startswith("--format="):
            asked = arg.partition("=")[2]
    return asked


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
@_capture_files_option(
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
    allow_other_gpu: bool,
    waive: tuple[str, ...],
    thresholds: tuple[str, ...],
    history: str | None = None,
    compare_with: str | None = None,  # perfgate compare: the baseline is recorded from it
) -> None:
    """Check captures against baselines; exit 1 when a counter regressed, 2 when a gate
    could not be judged (unless waived by name with --waive)."""
    from perfgate.baseline.overrides import parse_thresholds
    from perfgate.gate import (
        CheckCommand,
        CheckRequest,
        ReportPaths,
        github_environment,
        run_check_command,
    )
    from perfgate.judge.policy import parse_fail_on
    from perfgate.judge.skips import parse_waivers

    settings = _settings()
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
            fmt=fmt,
            verbose=verbose,
            quiet=settings.quiet,
            colour=settings.colour,
            history=history,
        )
        outcome = run_check_command(command, github_environment(), _to_stderr)
    except PerfgateError as exc:
        _problem_stdout(fmt, tuple(exc.lines()), exc.exit_code)
        raise  # _guard says it on stderr and exits with its code
    except Exception as exc:  # a bug: stdout stays the format asked for all the same
        _problem_stdout(fmt, (_internal_error(exc),), ExitCode.INTERNAL_ERROR)
        raise
    # click strips escape codes from what is not a terminal unless told: colour was decided.
    _show(outcome.stdout, colour=settings.colour and fmt == "text")
    if outcome.policy_note:
        _say(outcome.policy_note, err=True)
    sys.exit(int(outcome.exit_code))


def _problem_stdout(fmt: str, problems: tuple[str, ...], code: ExitCode) -> None:
    from perfgate.gate import problem_stdout

    text = problem_stdout(fmt, problems, code)
    if text is not None:
        _show(text)


def _to_stderr(text: str) -> None:
    _show(text, err=True)


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
@_capture_files_option(
    "ncu raw CSV page (plain or .gz) or .ncu-rep report; repeat for several runs."
)
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
    _show(explain.RENDERERS[fmt](result))


@main.group("baseline")
def baseline_group() -> None:
    """Record, validate, review and change baseline files."""


@baseline_group.command("record", short_help="Record a baseline from captures of a good build.")
@_capture_files_option(
    "Capture of the known-good build; repeat for several ncu runs (recommended: 3)."
)
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
@_guard
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
    from perfgate.common.fileio import check_outputs
    from perfgate.gate import RecordRequest, run_record
    from perfgate.lifecycle.record import RecordSettings

    check_outputs([output], (*captures, *diagnosis))
    settings = RecordSettings(kernels, metrics, reason, by_nvtx)
    result = run_record(RecordRequest(captures, output, settings, overwrite, diagnosis, scope))
    from perfgate.reports.format import counted

    kernels_n = len(result.baseline.kernels)
    metrics_n = sum(len(k.metrics) for k in result.baseline.kernels)
    quiet = _settings().quiet
    if not quiet:
        _say(f"wrote {output}: {counted(kernels_n, 'kernel')}, {counted(metrics_n, 'metric')}")
    for note in result.notes:
        if not quiet:
            _say(f"note: {note}", err=True)
    for warning in result.warnings:
        _say(f"warning: {warning}", err=True)
    for line in result.skipped:
        if metrics:  # asked for by name: say where a metric could not be recorded
            _say(f"  skipped {line}", err=True)


_PAST = {"accept": "accepted", "update": "updated", "ratchet": "ratcheted"}


def _edit_summary(result: Any, verb: str) -> None:
    from perfgate.reports.format import value

    plan = result.plan
    if not result.changed:
        _say(f"{result.path}: nothing to {verb}")
    else:
        n = len(plan.edits)
        what = [f"{n} kernel{'s' if n != 1 else ''}"] if n or plan.program is None else []
        if plan.program is not None:
            what.append("the program GPU time")
        _say(f"{_PAST[verb]} {' and '.join(what)} into {result.path}:")
        for edit in plan.edits:
            moved = ", ".join(f"{m} was {value(v)}" for m, v in edit.previous.items())
            _say(f"  {edit.action.value:<8} {edit.kernel}" + (f" ({moved})" if moved else ""))
        if plan.program is not None and plan.program_action is not None:
            entry = plan.program.history[-1:] if plan.program.history else ()
            was = ", ".join(f"was {value(v, 'ns')}" for h in entry for v in h.previous.values())
            now = value(plan.program.value, "ns")
            _say(
                f"  {plan.program_action.value:<8} program GPU time {now}"
                + (f" ({was})" if was else "")
            )
    for line in plan.left:
        _say(f"  left     {line}", err=True)


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
@_capture_files_option(
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
@_guard
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
    from perfgate.gate import EditRequest, run_accept

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
    _edit_summary(run_accept(request), "accept")


@baseline_group.command(
    "update", short_help="Re-record a baseline from new captures, keeping hand edits."
)
@click.option("--baseline", "-b", required=True, type=click.Path(), help="Baseline YAML to edit.")
@_capture_files_option("Capture of the build to re-record from; repeat (3 runs calibrate bounds).")
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
@_guard
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
    from perfgate.gate import EditRequest, run_update

    request = EditRequest(
        baseline, captures, reason, add_new=not no_new, ratchet=ratchet, by=by, output=output
    )
    _edit_summary(run_update(request), "ratchet" if ratchet else "update")


@baseline_group.command("show", short_help="A baseline condensed for review.")
@click.argument("path", type=click.Path())
@_kernels_option
@click.option("--format", "fmt", type=click.Choice(("text", "markdown")), default="text")
@_guard
def show_command(path: str, kernels: tuple[str, ...], fmt: str) -> None:
    """A baseline condensed for review: fingerprint, each kernel's gated values and the bound
    the check applies, and the history of accepted changes."""
    from perfgate.gate import run_show
    from perfgate.reports.review import SHOW

    _show(SHOW[fmt](run_show(path, kernels)))


@baseline_group.command("diff", short_help="What changed between two baselines.")
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(("text", "markdown")), default="text")
@click.option("--exit-code", is_flag=True, help="Exit 1 when the baselines differ.")
@click.option(
    "--all", "all_values", is_flag=True,
    help="List values that moved within their bounds too (default: only those beyond).",
)  # fmt: skip
@_guard
def diff_command(before: str, after: str, fmt: str, exit_code: bool, all_values: bool) -> None:
    """What changed between two baselines (e.g. main's and a pull request's): kernels added
    and removed, values and bounds moved, fingerprint, accepted changes with their reasons."""
    from perfgate.gate import run_diff
    from perfgate.reports.review import DIFF

    result = run_diff(before, after)
    _show(DIFF[fmt](result, all_values))
    if exit_code and not result.identical:
        sys.exit(int(ExitCode.GATE_FAILED))


@baseline_group.command(
    "validate", short_help="Check baseline files against the schema and the metric catalog."
)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
    help="json: one document on stdout, each problem's file, line, column, JSON path and "
    "message as fields, and a status (docs/baselines.md).",
)  # fmt: skip
@_guard
def validate_command(paths: tuple[str, ...], fmt: str) -> None:
    """Check baseline files (or the baselines in a directory) against the schema and the
    metric catalog."""
    from perfgate.baseline.load import load_baseline
    from perfgate.baseline.selection import expand
    from perfgate.reports.format import counted
    from perfgate.reports.validation import Validated, render_json

    results: list[Validated] = []
    for given in paths:
        try:
            files = [p.path for p in expand((given,))]
        except PerfgateError as exc:  # a folder with no baseline in it
            results.append(Validated(given, problems=tuple(exc.lines())))
            continue
        for path in files:
            try:
                baseline = load_baseline(path)
            except PerfgateError as exc:
                results.append(Validated(path, problems=tuple(exc.lines())))
                continue
            results.append(Validated(path, len(baseline.kernels)))
            if fmt == "text" and not _settings().quiet:
                _say(f"ok {path}: {counted(len(baseline.kernels), 'kernel')}")
    problems = [line for r in results for line in r.problems]
    if fmt == "json":
        _show(render_json(results))
        if problems:
            sys.exit(int(ExitCode.INPUT_ERROR))
        return
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
    from perfgate.metrics.catalog import (
        CATALOG_LIST,
        COLD_START_STALLS,
        STALL_CPI_PREFIX,
        STALL_CPI_THRESHOLD,
        STALL_PREFIX,
        STALL_THRESHOLD,
        catalog_markdown,
        ncu_metrics,
        role_of,
    )
    from perfgate.metrics.thresholds import Direction, describe_bound

    if ncu:
        _say(",".join(ncu_metrics(cc)))
        return
    if as_markdown:
        _show(catalog_markdown())
        return
    rows = [("METRIC", "ROLE", "NOISE", "GATED", "DEFAULT BOUND", "WHAT")]
    sources = []
    for m in CATALOG_LIST:
        bound = "categorical" if m.categorical else describe_bound(m.threshold, m.direction, m.unit)
        default = "default" if m.default else "opt-in"
        rows.append((m.name, m.role.value, m.noise.value, default, bound, m.title))
        sources.append(" | ".join(f.text for f in m.formulas))
    cold = ", ".join(sorted(COLD_START_STALLS))
    rows.append(
        (
            f"{STALL_PREFIX}<reason>", role_of(STALL_PREFIX).value, "noisy", "opt-in",
            describe_bound(STALL_THRESHOLD, Direction.HIGHER_IS_WORSE, "%"),
            f"Share of one stall reason ({cold}: +25 points)",
        )
    )  # fmt: skip
    sources.append("the stall family's counters for <reason>")
    rows.append(
        (
            f"{STALL_CPI_PREFIX}<reason>", role_of(STALL_CPI_PREFIX).value, "noisy", "default",
            describe_bound(STALL_CPI_THRESHOLD, Direction.HIGHER_IS_WORSE, "cycle/inst"),
            "Stall cycles per instruction of one reason",
        )
    )  # fmt: skip
    sources.append("<reason> / selected of the stall family's counters")
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for n, row in enumerate(rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        _say("  ".join([*cells, row[5]]).rstrip())
        if n:  # the header has no source line
            _say(f"{'':<{widths[0]}}  from: {sources[n - 1]}")


@main.command(
    "capture",
    cls=_ProgramCommand,
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
    "--replay-mode", type=click.Choice(("kernel", "application")), default="kernel",
    show_default=True, help="ncu's replay mode (application: the program runs once per pass).",
)  # fmt: skip
@_kernels_option
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
    "--phases", type=click.Choice(("auto", "gate", "full")), default="auto", show_default=True,
    help="auto: the phase the baselines were recorded from (their time basis: durations "
    "compare only within one phase): for a baseline recorded from full captures (or by hand) "
    "a full capture, for one recorded from gate captures the gate capture and, when it fails, "
    "a diagnosis capture of the failing kernels (OUTPUT.diagnosis.csv, merged by check); "
    "with no launch filter given, the baselines' own launch filters. gate: only the one-pass "
    "gate set of every baselined kernel (1 replay pass per kernel). full: every gated metric "
    "at once.",
)  # fmt: skip
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
@_guard
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
    from perfgate.ncu.command import CaptureOptions, ClockControl

    options = CaptureOptions(
        baselines, tuple(program), output=output, replay_mode=replay_mode, kernels=kernels,
        launch_skip=launch_skip, launch_count=launch_count, nvtx_include=nvtx_include,
        all_kernels=all_kernels, ncu=ncu, allow_program_failure=allow_program_failure,
        keep_report=keep_report, phase="full" if phases == "full" else "gate",
        follow_baseline=phases == "auto", census=not no_census,
        clock_control=ClockControl(clock_control),
    )  # fmt: skip
    if dry_run:
        from perfgate.gate import diagnosis_output
        from perfgate.ncu.runner import dry_run as plan_only

        plan = plan_only(options)
        for note in plan.notes:
            _say(f"note: {note}", err=True)
        if phases == "auto" and plan.phase == "gate":
            _say(
                "note: the gate capture below; when it fails the baselines, a diagnosis capture "
                f"of the failing kernels follows ({diagnosis_output(output)})",
                err=True,
            )
        _say(plan.shell_text())
        _say(" ".join(plan.import_command(ncu, f"{output}.tmp.ncu-rep")) + f" > {output}")
        return
    from perfgate.gate import run_capture_phases

    phased = run_capture_phases(options, phases)
    result = phased.first
    _say_capture(phased)
    if result.absent:
        _fail(
            [f"{result.output}: {len(result.absent)} gated metric(s) came back absent; see the "
             "warnings above"],
            ExitCode.INPUT_ERROR,
        )  # fmt: skip


def _say_capture(phased: Any, err: bool = False) -> None:
    """What a capture wrote and how long it took (`err`: on stderr, as pre-merge says it,
    whose stdout is the check's report); its warnings on stderr."""
    result = phased.first
    passes = sorted(set(result.passes))
    shown = "/".join(map(str, passes)) if passes else "?"
    _say(
        f"wrote {result.output}: {result.launches} launch(es), {shown} replay passes per "
        f"kernel, {result.wall_s:.1f} s (log {result.log}, metadata {result.meta})",
        err=err,
    )
    if phased.diagnosis is not None:
        d = phased.diagnosis
        _say(
            f"wrote {d.output}: diagnosis of {len(phased.failing)} kernel(s) that failed the "
            f"gate; check merges it (perfgate check -b ... -c {result.output})",
            err=err,
        )
    _say(phased.summary(), err=err)
    for line in [*result.warnings, *(phased.diagnosis.warnings if phased.diagnosis else ())]:
        _say(f"perfgate: warning: {line}", err=True)


@main.command(
    "pre-merge",
    cls=_ProgramCommand,
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
    "--phases", type=click.Choice(("auto", "gate", "full")), default="auto", show_default=True,
    help="As capture --phases.",
)  # fmt: skip
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
@_guard
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
    from perfgate.gate import github_environment
    from perfgate.judge.skips import parse_waivers
    from perfgate.premerge import PreMergeRequest, run_pre_merge

    settings = _settings()
    request = PreMergeRequest(
        baselines, tuple(program), captures, out, warn_only=warn_only, ncu=ncu, phases=phases,
        waived=parse_waivers(waive),
    )  # fmt: skip
    result = run_pre_merge(
        request, github_environment(), _to_stderr, quiet=settings.quiet, colour=settings.colour,
        captured=lambda phased: _say_capture(phased, err=True),
    )  # fmt: skip
    _show(result.check.stdout, colour=settings.colour)
    if result.check.policy_note:
        _say(result.check.policy_note, err=True)
    r = result.reports
    _say(f"pre-merge: reports in {out} ({r.markdown}, {r.junit}, {r.json})", err=True)
    sys.exit(int(result.check.exit_code))


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
@_guard
def doctor_command(baselines: tuple[str, ...], ncu: str, program: tuple[str, ...]) -> None:
    """Check that this machine can capture: ncu and its version, the GPU, its driver and
    compute capability, counter permission, MIG, and (with -b and a program after --) a
    one-launch capture proving each gated metric returns data. Exit 2 on any problem."""
    from perfgate.ncu.doctor import failed, render, run_doctor

    checks = run_doctor(ncu, baselines, program)
    _show(render(checks))
    if failed(checks):
        sys.exit(int(ExitCode.INPUT_ERROR))


@main.group("history")
def history_group() -> None:
    """Keep check results on a database; read a kernel's series back.

    Every run is kept with its context and the capture's fingerprint (docs/history.md)."""


_db_option = click.option(
    "--db", "db", required=True, metavar="FILE|URL",
    help="The history: an SQLite file (created by add and import), or a PostgreSQL "
    "database as postgresql://... (the postgres extra).",
)  # fmt: skip
_history_format_option = click.option(
    "--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
    help="json: one document on stdout (docs/history.md, JSON output).",
)  # fmt: skip


def _context_options(fn: F) -> F:
    for name, what in reversed(
        (
            ("--run-id", "The run's id (default: GitHub's run, attempt and job; else a new one)."),
            ("--commit", "The commit checked (default: GITHUB_SHA)."),
            ("--branch", "The branch (default: GITHUB_HEAD_REF or GITHUB_REF_NAME)."),
            ("--pull-request", "The pull request's number (default: from GITHUB_REF)."),
            ("--ci-job", "The CI job (default: GITHUB_JOB)."),
        )
    ):
        fn = click.option(name, default=None, metavar="TEXT", help=what)(fn)
    return fn


def _given(options: dict[str, Any]) -> Any:
    from perfgate.history.context import GivenContext

    return GivenContext(
        options["run_id"],
        options["commit"],
        options["branch"],
        options["pull_request"],
        options["ci_job"],
    )


def _say_stored(stored: Any, fmt: str = "text") -> None:
    if fmt == "json":
        from perfgate.history.render import stored_json

        _show(stored_json(stored))
    elif stored.stored:
        _say(
            f"stored run {stored.run_id}: {stored.kernels} kernels, {stored.metrics} metrics "
            f"(the check {stored.status})"
        )
    else:
        _say(f"run {stored.run_id} is kept already: nothing changed")


@history_group.command("add", short_help="Check captures and keep the result in the history.")
@_db_option
@click.option(
    "--baseline", "-b", "baselines", required=True, multiple=True, type=click.Path(),
    help="Baseline YAML file, or a directory of them; as for perfgate check.",
)  # fmt: skip
@_capture_files_option("ncu capture; repeat for several runs (as for perfgate check).")
@click.option("--allow-other-gpu", is_flag=True, help="As for perfgate check: compare across GPUs.")
@_context_options
@_history_format_option
@_guard
def history_add_command(
    db: str, baselines: tuple[str, ...], captures: tuple[str, ...], allow_other_gpu: bool,
    fmt: str, **context: Any,
) -> None:  # fmt: skip
    """Check the captures as perfgate check does and keep the result with its context. Exit
    0 once kept, whatever the check's verdict (perfgate check is the gate)."""
    from perfgate.gate import CheckRequest, HistoryAdd, run_history_add

    request = CheckRequest(baselines, captures, allow_other_gpu=allow_other_gpu)
    _say_stored(run_history_add(HistoryAdd(db, request, _given(context))), fmt)


@history_group.command("import", short_help="Keep JSON results of perfgate check.")
@_db_option
@click.argument("results", nargs=-1, required=True, type=click.Path())
@_context_options
@_history_format_option
@_guard
def history_import_command(db: str, results: tuple[str, ...], fmt: str, **context: Any) -> None:
    """Keep the results `perfgate check --format json` (or --json FILE) wrote. Without
    --run-id a file's run id is named by its content: importing it again changes nothing."""
    from perfgate.gate import run_history_import

    kept = run_history_import(db, results, _given(context))
    if fmt == "json":
        from perfgate.history.render import stored_json

        _show(stored_json(*kept))
        return
    for stored in kept:
        _say_stored(stored)


@history_group.command("show", short_help="A kernel's series per fingerprint.")
@_db_option
@click.argument("kernel")
@click.option("--metric", "-m", default=None, help="Only this metric (perfgate metrics).")
@_history_format_option
@_guard
def history_show_command(db: str, kernel: str, metric: str | None, fmt: str) -> None:
    """KERNEL (the baseline's id) over the runs kept, one series per fingerprint (GPU,
    driver, ncu, clock and cache control, scope, time basis) and metric, oldest first."""
    from perfgate.gate import run_history_show

    _show(run_history_show(db, kernel, metric, fmt))


@history_group.command("prune", short_help="Delete old runs from the history.")
@_db_option
@click.option(
    "--older-than", "older_than", type=click.FloatRange(min=0), default=None, metavar="DAYS",
    help="Delete the runs recorded more than DAYS ago.",
)  # fmt: skip
@click.option(
    "--keep", type=click.IntRange(min=0), default=None, metavar="N",
    help="Keep only the newest N runs.",
)  # fmt: skip
@_history_format_option
@_guard
def history_prune_command(db: str, older_than: float | None, keep: int | None, fmt: str) -> None:
    """Delete runs by age, by count, or both (a run goes when either says so)."""
    from perfgate.gate import run_history_prune

    gone = run_history_prune(db, older_than, keep)
    if fmt == "json":
        from perfgate.history.render import pruned_json

        _show(pruned_json(gone))
        return
    _say(f"deleted {len(gone)} run{'s' if len(gone) != 1 else ''}")


@history_group.command("detect", short_help="Change points and drift on a branch's series.")
@_db_option
@click.argument("kernels", nargs=-1)
@click.option("--metric", "-m", default=None, help="Only this metric (perfgate metrics).")
@click.option(
    "--branch", default="main", show_default=True,
    help="The branch whose runs form the series ('' for every run, whatever its branch).",
)  # fmt: skip
@click.option(
    "--last", type=click.IntRange(min=1), default=None, metavar="N",
    help="Only the change points among each series' last N runs.",
)  # fmt: skip
@click.option(
    "--drift", is_flag=True,
    help="Hold the newest run (or --run) to the branch's recent runs on its fingerprint: the "
    "median and spread of the last 30 (docs/history.md).",
)  # fmt: skip
@click.option("--run", "run_id", default=None, metavar="ID", help="With --drift: the run held.")
@click.option(
    "--fail-on-change", is_flag=True,
    help="Exit 1 when a gated metric changed for the worse (a change point, or with --drift "
    "a metric beyond its limit).",
)  # fmt: skip
@click.option(
    "--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True
)
@_guard
def history_detect_command(
    db: str, kernels: tuple[str, ...], metric: str | None, branch: str, last: int | None,
    drift: bool, run_id: str | None, fail_on_change: bool, fmt: str,
) -> None:  # fmt: skip
    """Change points (E-divisive means with a permutation test) in each KERNEL's metrics over
    the branch's runs, per fingerprint; every kernel when none is named. Each names the first
    run of the new level, its commit and the finding the check gave the kernel there. Exit 0,
    or 1 with --fail-on-change when a gated metric changed for the worse; 2 on bad input."""
    from perfgate.common.errors import UsageError
    from perfgate.history import detect_report
    from perfgate.history.detect import DetectRequest, run_detect

    if run_id is not None and not drift:
        raise UsageError("--run names the run --drift holds to the history")
    request = DetectRequest(kernels, metric, branch or None, last, drift, run_id)
    found = run_detect(db, request)
    _show(detect_report.to_json(found) if fmt == "json" else detect_report.text(found))
    if fail_on_change and found.failing:
        sys.exit(int(ExitCode.GATE_FAILED))


@history_group.command("html", short_help="One baseline's trends as a static HTML page.")
@_db_option
@click.option(
    "--baseline", "-b", "baseline", default=None, metavar="BASELINE",
    help="The baseline, as the checks named it (default: the one the history holds).",
)  # fmt: skip
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="The HTML page to write.")  # fmt: skip
@click.option(
    "--last", type=click.IntRange(min=0), default=60, show_default=True, metavar="N",
    help="Draw the newest N runs of the baseline (0: every run kept).",
)  # fmt: skip
@_history_format_option
@_guard
def history_html_command(
    db: str, baseline: str | None, output: str, last: int, fmt: str
) -> None:  # fmt: skip
    """Every kernel's charts of one baseline, per fingerprint and metric, change points
    marked, on one self-contained page (inline SVG, no script, nothing fetched)."""
    from perfgate.gate import run_history_html

    page = run_history_html(db, baseline, output, last)
    if fmt == "json":
        from perfgate.history.render import page_json

        _show(page_json(page))
        return
    _say(f"wrote {page.path}: {page.kernels} kernels, {page.charts} charts, {page.runs} runs")


def _global_options_in_help(group: click.Group) -> None:
    """Each command's --help names the global options it takes (they are hoisted from
    anywhere before a program's `--`): `check --help` omitted -q and --color."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _global_options_in_help(command)
            continue
        note = (
            "Global options, also accepted here: -q/--quiet (the status line only), "
            "--color auto|always|never, --no-color, --debug (tracebacks)."
        )
        command.epilog = f"{command.epilog}\n\n{note}" if command.epilog else note


_global_options_in_help(main)
