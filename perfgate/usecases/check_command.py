"""`perfgate check` as its options ask: judge (check.py), write every report asked for
(outputs.py), and give what stdout shows and the exit code under --fail-on. The CLI builds
the command; this module never touches click."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from perfgate.common.errors import (
    ExitCode,
    PerfgateError,
    UsageError,
)
from perfgate.common.escape import log_line
from perfgate.common.exhaustive import never
from perfgate.common.fileio import check_outputs
from perfgate.judge.policy import EXIT_WORDS, FailOn
from perfgate.usecases.check import CheckRequest, check_inputs, run_check
from perfgate.usecases.choices import Format
from perfgate.usecases.outputs import (
    GitHubEnvironment,
    ReportOutputs,
    github_commands,
    remove_report,
    replace_stale_reports,
    report_files,
    report_problem,
    safe_outputs,
    without_output,
    write_reports,
    write_step_outputs,
)
from perfgate.verdicts.model import Report


@dataclass(frozen=True)
class ReportPaths:
    """The report files `perfgate check` was asked to write; None: not written."""

    junit: str | None = None
    markdown: str | None = None
    json: str | None = None
    pr_comment: str | None = None


@dataclass(frozen=True)
class CheckCommand:
    """`perfgate check` as its options ask: what to check, what fails the build, where the
    reports go and what stdout shows."""

    request: CheckRequest
    policy: frozenset[FailOn]
    reports: ReportPaths = ReportPaths()
    github: bool | None = None  # annotations and step files; None: when GITHUB_ACTIONS=true
    junit_locations: bool = True
    fmt: Format = Format.TEXT  # what stdout shows
    verbose: bool = False
    quiet: bool = False  # text: the status line only
    colour: bool = False
    history: str | None = None  # --history: the kept runs the markdown's trends are drawn from
    # --drift: this run held to the branch's recent history in --history (flagged on stderr;
    # the exit code is the check's).
    drift_branch: str | None = None


@dataclass(frozen=True)
class CheckOutcome:
    stdout: str
    exit_code: ExitCode  # after --fail-on
    # For stderr when --fail-on made the exit code other than the check's verdict.
    policy_note: str | None = None


def policy_exit_code(report: Report, policy: frozenset[FailOn]) -> ExitCode:
    """The exit code under --fail-on: a failed check the policy does not fail on exits 0."""
    return report.exit_code_under(policy)


def _uses_github(command: CheckCommand, gh: GitHubEnvironment) -> bool:
    return gh.active if command.github is None else command.github


def report_outputs(command: CheckCommand, gh: GitHubEnvironment) -> ReportOutputs:
    """Where a check writes: the files asked for, and GitHub's step files when on."""
    use_github = _uses_github(command, gh)
    paths = command.reports
    return ReportOutputs(
        junit=paths.junit, markdown=paths.markdown, json=paths.json, pr_comment=paths.pr_comment,
        step_summary=gh.step_summary if use_github else None,
        github_output=gh.output if use_github else None,
        repository_root=gh.workspace,
        junit_locations=command.junit_locations,
    )  # fmt: skip


def _check_report_paths(
    request: CheckRequest,
    outputs: ReportOutputs,
    history: str | None = None,
    drift: bool = False,
) -> None:
    """Refuse, before judging, a report or GitHub step file that is one of the inputs (the
    --history file among them), and a --markdown whose stall charts, MARKDOWN-STEM.N.KERNEL.svg
    beside it, could be one."""
    inputs = check_inputs(request)
    if drift and not history:
        raise UsageError("--drift holds this run to the runs a history keeps: give --history")
    if history:
        from perfgate.history.store import is_url

        if not outputs.markdown and not drift:
            raise UsageError(
                "--history draws trends beside the markdown report (give --markdown) or holds "
                "this run to a branch's recent runs (give --drift BRANCH)"
            )
        inputs += [] if is_url(history) else [history]
    named: list[tuple[str, str | None]] = [
        ("--junit", outputs.junit), ("--markdown", outputs.markdown), ("--json", outputs.json),
        ("--pr-comment", outputs.pr_comment),
        ("$GITHUB_STEP_SUMMARY", outputs.step_summary), ("$GITHUB_OUTPUT", outputs.github_output),
    ]  # fmt: skip
    check_outputs(
        named,
        inputs,
        regular_only=[outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment],
    )
    if outputs.markdown:
        target = Path(os.path.realpath(outputs.markdown))
        for given in inputs:
            real = Path(os.path.realpath(given))
            if (
                real.parent == target.parent
                and real.suffix == ".svg"
                and real.name.startswith(f"{target.stem}.")
            ):
                raise UsageError(
                    f"--markdown's stall charts ({target.stem}.N.KERNEL.svg beside it) could "
                    f"replace an input ({given}); write the markdown to another file",
                    outputs.markdown,
                )


def _check_trends(
    report: Report, history: str | None, outputs: ReportOutputs, stderr: Callable[[str], None]
) -> list[Any]:
    """The trends of the kernels that changed (perfgate.history.trends.check_trends), read
    from --history for the markdown report. The verdict never depends on the history: one
    that cannot be read (a file not there yet, a server down) is a warning, and no trends."""
    if not history or not outputs.markdown:
        return []
    from perfgate.history.base import now
    from perfgate.history.context import GivenContext, context
    from perfgate.history.store import open_store
    from perfgate.history.trends import check_trends

    try:
        with open_store(history, create=False) as store:
            return check_trends(report, store, context(GivenContext(), os.environ, now()))
    except PerfgateError as exc:
        why = "; ".join(exc.lines())
        stderr(log_line(f"perfgate: warning: no trends drawn: {why}") + "\n")
        return []


def _drift_warnings(
    report: Report, history: str | None, branch: str | None, stderr: Callable[[str], None]
) -> None:
    """Each gating metric of this run beyond the branch's recent history on its fingerprint
    (perfgate.history.detect.held_to_history, the rule of `history detect --drift`): a slow
    drift that each check passes, flagged as a warning. Flagged, never the verdict: to fail
    on it, keep the run (`history add`) and run `history detect --drift --fail-on-change`."""
    if not history or branch is None:
        return
    from perfgate.history.base import now
    from perfgate.history.context import GivenContext, context
    from perfgate.history.detect import held_to_history
    from perfgate.history.detect_report import drift_lines
    from perfgate.history.records import from_report
    from perfgate.history.store import open_store

    try:
        record = from_report(report, context(GivenContext(), os.environ, now()))
        with open_store(history, create=False) as store:
            flags = held_to_history(record, store, branch=branch)
    except PerfgateError as exc:
        why = "; ".join(exc.lines())
        stderr(log_line(f"perfgate: warning: drift not examined: {why}") + "\n")
        return
    worse = [f for f in flags if f.gates]
    if not worse:
        return
    lines = [
        f"perfgate: warning: {len(worse)} metric(s) beyond the recent history of branch "
        f"{branch} (each within its check's bound: a slow drift)"
    ]
    for flag in worse:
        lines += drift_lines(flag)
    stderr("".join(log_line(line) + "\n" for line in lines))


def _skip_irregular_step_files(
    outputs: ReportOutputs, stderr: Callable[[str], None]
) -> ReportOutputs:
    """GitHub's step files that are not regular files (a FIFO would block the check) are
    skipped, with a warning."""
    from perfgate.common.fileio import regular_or_absent

    steps = (("step_summary", "GITHUB_STEP_SUMMARY"), ("github_output", "GITHUB_OUTPUT"))
    for name, variable in steps:
        path = getattr(outputs, name)
        kind = regular_or_absent(path) if path else None
        if kind:
            stderr(
                log_line(f"perfgate: warning: ${variable} ({path}) is {kind}: not written") + "\n"
            )
            dropped: dict[str, Any] = {name: None}
            outputs = replace(outputs, **dropped)
    return outputs


def run_check_command(
    command: CheckCommand, gh: GitHubEnvironment, stderr: Callable[[str], None]
) -> CheckOutcome:
    """Check, write every report asked for, and give what stdout shows and the exit code.
    GitHub annotations go to `stderr` once the report is written (stdout stays exactly the
    format asked for). A problem with the input goes into the reports too, then is raised;
    after a bug, no report of an earlier run is left to claim a result."""
    outputs = report_outputs(command, gh)
    # GitHub reads workflow commands from stdout and stderr alike; with --format github
    # they are the stdout.
    annotate = _uses_github(command, gh) and command.fmt != "github"
    outputs = _skip_irregular_step_files(outputs, stderr)
    try:
        _check_report_paths(
            command.request, outputs, command.history, command.drift_branch is not None
        )
        report = run_check(command.request)
        trends = _check_trends(report, command.history, outputs, stderr)
        _drift_warnings(report, command.history, command.drift_branch, stderr)
    except PerfgateError as exc:
        # An output that is an input, or not a regular file, is never written to.
        request = command.request
        inputs = request.baselines + request.capture_files + request.recorded_from
        outputs = safe_outputs(without_output(outputs, exc.path), inputs)
        # CI reads the reports, not stderr: say what went wrong there too, then fail.
        problem = Report(problems=tuple(exc.lines()))
        if annotate:
            stderr(github_commands(problem, command.policy, gh.workspace))
        report_problem(problem, outputs, exc)
        raise
    except Exception as exc:  # a bug: no report of an earlier run may stay to claim a result
        replace_stale_reports(outputs, exc)
        raise
    code = policy_exit_code(report, command.policy)
    try:
        write_reports(report, outputs, trends)
    except PerfgateError as exc:  # a report file could not be written (disk full, say)
        # None may claim the result: not the earlier run's file at that path, nor this
        # run's reports already written; they say why the check failed instead.
        remove_report(outputs, exc.path)
        report_problem(Report(problems=tuple(exc.lines())), without_output(outputs, exc.path), exc)
        raise
    except Exception as exc:
        replace_stale_reports(outputs, exc)
        raise
    write_step_outputs(report, outputs, code)
    if annotate:
        stderr(github_commands(report, command.policy, gh.workspace))
    return CheckOutcome(
        stdout_reporter(command, gh.workspace)(report),
        code,
        None if command.quiet else policy_note(report, code, command.policy),
    )


def stdout_reporter(command: CheckCommand, workspace: str) -> Callable[[Report], str]:
    """The reporter of stdout, built with the options its format takes: from here on every
    format is one function of the report. The one dispatch over --format."""
    fmt = command.fmt
    if fmt is Format.TEXT:
        return partial(_text, verbose=command.verbose, quiet=command.quiet, colour=command.colour)
    if fmt is Format.GITHUB:
        return partial(github_commands, policy=command.policy, workspace=workspace)
    if fmt is Format.JUNIT:
        return partial(_junit, workspace=workspace, locations=command.junit_locations)
    if (
        fmt is Format.MARKDOWN
        or fmt is Format.JSON
        or fmt is Format.DELTA
        or fmt is Format.DELTA_MARKDOWN
    ):
        from perfgate.reports import REPORTERS

        return REPORTERS[fmt.value].render
    never(fmt)


def _text(report: Report, *, verbose: bool, quiet: bool, colour: bool) -> str:
    from perfgate.reports import text

    output = text.render(report, verbose)
    if quiet:
        output = output.split("\n", 1)[0] + "\n"
    if colour:
        from perfgate.reports.colour import paint

        output = paint(output)
    return output


def _junit(report: Report, *, workspace: str, locations: bool) -> str:
    from perfgate.reports import junit

    return junit.render(report, report_files(report, workspace), locations=locations)


def problem_stdout(fmt: Format, problems: tuple[str, ...], code: ExitCode) -> str | None:
    """What stdout shows in a machine format (json, junit, github) when the check stopped on
    unusable input or a bug: an error document with the message and the exit code, so that
    stdout is that format whatever the exit code. None for the human formats (stderr says it)."""
    problem = Report(problems=problems)
    if fmt is Format.JSON:
        import json

        from perfgate.reports.json_report import to_dict

        document = {**to_dict(problem), "status": "error", "exit_code": int(code)}
        return json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    if fmt is Format.JUNIT:
        from perfgate.reports import junit

        return junit.render(problem)
    if fmt is Format.GITHUB:
        from perfgate.reports import github as github_report

        return github_report.render(problem)
    if (
        fmt is Format.TEXT
        or fmt is Format.MARKDOWN
        or fmt is Format.DELTA
        or fmt is Format.DELTA_MARKDOWN
    ):
        return None
    never(fmt)


def policy_note(report: Report, code: ExitCode, policy: frozenset[FailOn]) -> str | None:
    """A line saying that --fail-on changed the exit code from the check's verdict; None
    when it did not."""
    if code is report.exit_code:
        return None
    verdict = EXIT_WORDS[report.exit_code].json
    asked = ",".join(sorted(p.value for p in policy)) or "never"
    return f"perfgate: the gate {verdict}; exit {int(code)} (--fail-on {asked})"
