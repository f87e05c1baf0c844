"""The gate's use cases on plain data: check captures, explain them, record a baseline, and
write the reports. The CLI builds the requests; this module never touches click."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import load_baseline, parse_baseline, read_baseline_text
from perfgate.baseline.model import Baseline
from perfgate.baseline.selection import assign, expand
from perfgate.causes.without_baseline import ExplainResult, diagnose, raw_inputs
from perfgate.common.errors import (
    BaselineError,
    CaptureError,
    EditError,
    ExitCode,
    PerfgateError,
    UsageError,
)
from perfgate.common.escape import log_line
from perfgate.common.fileio import (
    append_regular,
    check_outputs,
    locked,
    remove_own_files,
    remove_stale,
    write_text_atomic,
)
from perfgate.identity.grouping import group_launches, readable_ids, select
from perfgate.ingest import MetricSelection, read_captures
from perfgate.ingest.launches import Capture
from perfgate.judge.policy import EXIT_WORDS, FailOn
from perfgate.judge.skips import Skip, parse_waivers
from perfgate.judge.states import KernelState
from perfgate.metrics.thresholds import ThresholdOverride
from perfgate.metrics.values import check_values
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.model import CheckResult, Report

if TYPE_CHECKING:
    # Loaded where they are used: a check needs none of them (docs/scale.md).
    from perfgate.lifecycle.plan import EditPlan
    from perfgate.lifecycle.record import RecordResult, RecordSettings
    from perfgate.lifecycle.views import BaselineDiff, BaselineView
    from perfgate.ncu.command import CaptureOptions
    from perfgate.ncu.runner import CaptureResult


@dataclass(frozen=True)
class CheckRequest:
    baselines: tuple[str, ...]  # files and directories of baselines
    capture_files: tuple[str, ...]
    report_new_kernels: bool = True
    allow_other_gpu: bool = False  # one baseline may judge captures from another GPU
    # Reasons a gate may go unjudged without failing, by name (check --waive; docs/check.md).
    waived: frozenset[Skip] = frozenset()
    # check --threshold METRIC=BOUND: a metric's bound for every kernel, this run only.
    thresholds: Mapping[str, ThresholdOverride] = field(default_factory=dict)
    # perfgate compare: the baseline is recorded from these captures, in memory.
    recorded_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordRequest:
    capture_files: tuple[str, ...]
    output: str
    settings: RecordSettings
    overwrite: bool = False  # replace an existing baseline (its hand edits are lost)
    # Full captures of the same build beside gate captures: the diagnosis side only.
    diagnosis_files: tuple[str, ...] = ()
    # The scope of captures made by hand, declared (`--scope`): ncu's launch filters or "all".
    scope: str | None = None


@dataclass(frozen=True)
class ExplainRequest:
    capture_files: tuple[str, ...]
    kernel_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportOutputs:
    """Where `perfgate check` writes its reports; None: not written."""

    junit: str | None = None
    markdown: str | None = None
    json: str | None = None
    pr_comment: str | None = None
    step_summary: str | None = None  # GitHub's $GITHUB_STEP_SUMMARY, appended to
    github_output: str | None = None  # GitHub's $GITHUB_OUTPUT: verdict and counts, appended
    # Annotations and JUnit name baseline files relative to this directory (the repository
    # root: GITHUB_WORKSPACE, else the working directory); None: as the results name them.
    repository_root: str | None = None
    junit_locations: bool = True  # JUnit file/line attributes (not in junit-10.xsd)


def run_check(request: CheckRequest) -> Report:
    try:
        return _run_check(request)
    except (BaselineError, CaptureError) as exc:
        from perfgate.baseline.swapped import hinted

        # A capture given as the baseline (or the other way round): said as that.
        better = hinted(exc, compare=bool(request.recorded_from))
        if better is None:
            raise
        raise better from exc


def _run_check(request: CheckRequest) -> Report:
    paths = expand(request.baselines)
    baselines = [load_baseline(p.path) for p in paths]
    named = [not p.from_directory for p in paths]
    if request.recorded_from:  # perfgate compare: BEFORE is the baseline, named as a file
        from perfgate.lifecycle.compare import recorded

        baselines.append(recorded(request.recorded_from))
        named.append(True)
    notes: list[str] = []
    files = {b.path: b for b in baselines}  # as the ratchet reads them: without --threshold
    if request.thresholds:
        from perfgate.baseline.overrides import unused, with_thresholds

        for b in baselines:
            notes.extend(
                f"--threshold {name}: {b.path} gates no {name}; it changes nothing there"
                for name in unused(b, request.thresholds)
            )
        baselines = [with_thresholds(b, request.thresholds) for b in baselines]
    if request.allow_other_gpu and len(baselines) > 1:
        raise UsageError(
            "--allow-other-gpu lets one baseline judge another GPU's captures; "
            f"{len(baselines)} baselines were given (pass the one to compare against)"
        )
    # Read only the columns the baselines and the diagnosis can use: --set full has ~2,200.
    wanted: set[str] = raw_inputs()
    for baseline in baselines:
        wanted |= baseline.raw_metrics()
    capture = read_captures(request.capture_files, MetricSelection(wanted))
    check_values(capture)
    plan = assign(baselines, named, capture, request.allow_other_gpu)
    results = tuple(
        check(
            a.baseline,
            a.capture,
            CheckSettings(
                report_new_kernels=request.report_new_kernels,
                extra_warnings=a.warnings,
                other_scope=a.other_scope,
                other_basis=a.other_basis,
                waived=request.waived | _allowed_by(request) | parse_waivers(a.baseline.waive),
            ),
        )
        for a in plan.assignments
    )
    if not request.recorded_from and not request.allow_other_gpu:
        # perfgate compare's baseline is no file to ratchet; the ratchet refuses another GPU.
        results = tuple(
            _with_ratchet(r, files[a.baseline.path], a.capture, request)
            for r, a in zip(results, plan.assignments, strict=True)
        )
    return Report(results, notes=(*plan.notes, *notes))


def _with_ratchet(
    result: CheckResult, baseline: Baseline, capture: Capture, request: CheckRequest
) -> CheckResult:
    """The result with what `baseline update --ratchet` would tighten from these captures,
    worked out by the ratchet's own plan where something improved beyond its bound (the
    reports suggest the ratchet only for that, and name it)."""
    if not result.improved() and not request.thresholds:
        return result  # it takes only improvements (--threshold may have hidden one)
    from perfgate.lifecycle.plan import plan_ratchet, ratchet_takes

    # The ratchet judges by the file's own bounds and no waiver: this check's result is its
    # own where no --threshold changed a bound and nothing went unjudged, else it checks anew.
    unjudged = any(c.skip is not None for v in result.verdicts for c in v.comparisons) or (
        result.program is not None and result.program.skip is not None
    )
    same = not request.thresholds and not unjudged
    plan = plan_ratchet(baseline, capture, judged=result if same else None)
    return replace(result, ratchet=ratchet_takes(plan))


def _allowed_by(request: CheckRequest) -> frozenset[Skip]:
    """--allow-other-gpu names what it lets go unjudged: the metrics the other GPU's
    architecture lacks."""
    return frozenset({Skip.ARCHITECTURE}) if request.allow_other_gpu else frozenset()


# YAML reads these as line breaks; a baseline's text would not come back as it was given.
_UNICODE_BREAKS = {"\x85": "a NEL (U+0085)", "\u2028": "a U+2028", "\u2029": "a U+2029"}


def check_kept_text(option: str, value: str | None) -> None:
    """Text that perfgate keeps in a baseline (--reason, --by) must come back as it was given:
    bytes that are not UTF-8 (Python hands them over as lone surrogates) and Unicode line
    separators are refused, before anything is written."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"{option}: not UTF-8 text (an undecodable byte at character {exc.start + 1}); "
            "a baseline holds UTF-8 text only"
        ) from exc
    for ch, what in _UNICODE_BREAKS.items():
        if ch in value:
            raise UsageError(
                f"{option}: {what} character at character {value.index(ch) + 1}, which YAML "
                "reads as a line break; use a plain newline"
            )


def _one_time_basis(paths: Sequence[str], gate_files: Sequence[str]) -> None:
    """Captures of one record share a time basis: a gate capture's durations run 2-4% longer
    than a full capture's (docs/capture.md), so files of both would give a baseline whose
    durations match neither."""
    from perfgate.baseline.fingerprint import bases_of
    from perfgate.ingest.meta import FULL, GATE, read_meta

    bases = bases_of(paths, {p: read_meta(p) for p in paths}, gate_files)
    if len(bases) > 1:
        raise UsageError(
            f"gate captures ({', '.join(bases[GATE])}) and full captures "
            f"({', '.join(bases[FULL])}) in one record: their durations differ by 2-4% "
            "(docs/capture.md); record the baseline from captures of the same phase (all "
            "perfgate capture --phases gate, or all --phases full)",
            bases[GATE][0],
        )


def _declare_scope(baseline: Baseline, text: str) -> Baseline:
    """The baseline with the scope its captures were made with, as declared: a hand capture
    has no sidecar to say it, and launch counts compare only within one scope."""
    from perfgate.ingest.scope import declared

    scope = declared(text)
    if scope is None:
        raise UsageError(
            f"--scope {text!r}: give `all` (no launch filter) or the ncu launch filters the "
            "captures were made with, e.g. --scope '--nvtx-include step/'"
        )
    known = baseline.gpu.scope
    if known is not None and known != scope:
        raise UsageError(
            f"--scope {text!r} ({scope}): the captures' sidecars say they were scoped "
            f"{known}; leave --scope out for captures of perfgate capture"
        )
    return replace(baseline, fingerprint=replace(baseline.gpu, scope=scope))


def run_record(request: RecordRequest) -> RecordResult:
    from perfgate.lifecycle.record import record

    check_kept_text("--reason", request.settings.reason)
    for path in request.capture_files:  # each file's name is kept in the provenance
        check_kept_text(f"the capture file name {path!r}", Path(path).name)
    if Path(request.output).exists() and not request.overwrite:
        raise UsageError(
            "exists; re-record it keeping its hand edits with perfgate baseline update -b "
            f"{request.output} -c CAPTURE..., or replace it with --overwrite",
            request.output,
        )
    capture = read_captures(request.capture_files)
    if capture.gate:
        _one_time_basis(capture.paths, capture.gate_files)
    check_values(capture)
    diagnosis = None
    if request.diagnosis_files:
        from perfgate.ingest.meta import DIAGNOSIS, GATE, read_meta

        for path in request.diagnosis_files:  # read_captures would ask for its gate capture
            if read_meta(path).phase == DIAGNOSIS:
                raise UsageError(
                    "a --diagnosis-capture is a diagnosis capture of perfgate capture --phases "
                    "auto (its sidecar says so): it holds only the kernels that failed a check, "
                    "a launch or two each; give a full capture of the same build (perfgate "
                    "capture --phases full)",
                    path,
                )
        diagnosis = read_captures(request.diagnosis_files)
        if diagnosis.gate:
            raise UsageError(
                "a --diagnosis-capture is a gate capture: give a full capture of the same "
                "build (perfgate capture --phases full), whose metrics the gate set lacks",
                next(p for p in diagnosis.paths if read_meta(p).phase == GATE),
            )
        gpus = {la.device for la in capture.launches if la.device}
        other = {la.device for la in diagnosis.launches if la.device} - gpus
        if other and gpus:
            raise UsageError(
                f"a --diagnosis-capture of another GPU ({', '.join(sorted(other))}; the "
                f"captures: {', '.join(sorted(gpus))}): its metrics would explain another chip",
                diagnosis.paths[0],
            )
        check_values(diagnosis)
    result = record(capture, request.settings, diagnosis)
    if request.scope is not None:
        result = replace(result, baseline=_declare_scope(result.baseline, request.scope))
    write_text_atomic(request.output, dump_baseline(result.baseline))
    return result


@dataclass(frozen=True)
class EditRequest:
    """`baseline accept` and `baseline update`: new values from captures into a baseline."""

    baseline: str
    capture_files: tuple[str, ...]
    reason: str | None = None
    kernel_patterns: tuple[str, ...] = ()  # accept: the kernels to take (default: regressed)
    add_new: bool = False  # take kernels new to the baseline too
    ratchet: bool = False  # update: only improvements, bounds only tighten
    program: bool = False  # accept: take the whole-program time too (named)
    by: str | None = None  # who (default: CI actor, git user, login)
    output: str | None = None  # default: the baseline itself, edited in place


@dataclass(frozen=True)
class EditResult:
    path: str
    plan: EditPlan
    changed: bool


def _edit(request: EditRequest, accept: bool) -> EditResult:
    check_kept_text("--reason", request.reason)
    check_kept_text("--by", request.by)
    target = request.output or request.baseline
    # The baseline itself is the intended output (an edit in place); a capture never is.
    check_outputs([target], request.capture_files)
    # Under a lock on the baseline (fileio.locked), the edit applies to the very text that
    # was validated, and is written only if the file still holds it (compare-and-swap).
    with locked(request.baseline):
        return _edit_locked(request, accept, target)


def _edit_locked(request: EditRequest, accept: bool, target: str) -> EditResult:
    # ruamel.yaml is only needed to edit a baseline: checks never import it.
    from perfgate.lifecycle.edit import apply as apply_plan
    from perfgate.lifecycle.plan import plan_accept, plan_update, stamp

    text = read_baseline_text(request.baseline)
    baseline = parse_baseline(text, request.baseline)
    capture = read_captures(request.capture_files)
    check_values(capture)
    when = stamp(request.by)
    if accept:
        plan = plan_accept(
            baseline,
            capture,
            request.kernel_patterns,
            request.add_new,
            program=request.program,
            reason=request.reason,
            when=when,
        )
    else:
        plan = plan_update(
            baseline,
            capture,
            ratchet=request.ratchet,
            take_regressions=request.reason is not None,
            add_new=request.add_new,
            reason=request.reason,
            when=when,
        )
    if not plan.edits and plan.program is None and plan.fingerprint in (None, baseline.fingerprint):
        return EditResult(target, plan, False)
    edited = apply_plan(text, baseline, plan, request.reason, when)
    try:
        parse_baseline(edited, target)  # what is written must load: a bug here must not land
    except PerfgateError as exc:
        raise EditError(
            f"perfgate's edit of it would not load, so nothing was written (a perfgate bug; "
            f"please report it): {'; '.join(exc.problems) or exc.message}",
            request.baseline,
        ) from exc
    if _read_again(request.baseline) != text:
        raise BaselineError("changed while perfgate was editing it; run again", request.baseline)
    write_text_atomic(target, edited)
    return EditResult(target, plan, True)


def _read_again(path: str) -> str | None:
    """The baseline's text now (None: it cannot be read any more)."""
    try:
        return read_baseline_text(path)
    except PerfgateError:
        return None


def run_accept(request: EditRequest) -> EditResult:
    return _edit(request, accept=True)


def run_update(request: EditRequest) -> EditResult:
    return _edit(request, accept=False)


def run_show(path: str, patterns: tuple[str, ...]) -> BaselineView:
    from perfgate.lifecycle.views import view

    return view(load_baseline(path), patterns)


def run_diff(before: str, after: str) -> BaselineDiff:
    from perfgate.lifecycle.views import diff

    return diff(load_baseline(before), load_baseline(after))


def run_explain(request: ExplainRequest) -> ExplainResult:
    capture = read_captures(request.capture_files, MetricSelection(raw_inputs()))
    check_values(capture)
    launches = select(capture.launches, request.kernel_patterns)
    groups = group_launches(launches)
    ids = readable_ids([g.key for g in groups])
    diagnoses = tuple(diagnose(ids[g.key], list(g.launches), capture.columns) for g in groups)
    return ExplainResult(capture.paths, diagnoses, capture.warnings)


def _pictures(report: Report, markdown_path: str) -> dict[str, str]:
    """Write a stall chart beside the markdown file for every regressed kernel with stall
    shares; return kernel id -> the file's name relative to the markdown."""
    from perfgate.reports import svg

    target = Path(markdown_path)
    names: dict[str, str] = {}
    for verdict in report.verdicts:
        if verdict.state is not KernelState.REGRESSED:
            continue
        for c in verdict.comparisons:
            if c.metric != "dominant_stall" or not (c.baseline_shares or c.current_shares):
                continue
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", verdict.kernel)[:60]
            name = f"{target.stem}.{len(names) + 1}.{safe}.svg"
            chart = svg.stall_chart(
                f"{verdict.kernel}: stall shares",
                c.baseline_shares,
                c.current_shares,
                report=target.name,
            )
            write_text_atomic(target.with_name(name), chart)
            names[verdict.kernel] = name
    return names


def _trend_pictures(
    trends: Sequence[Any], markdown_path: str, start: int
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Write each trend (perfgate.history.trends.Trend) beside the markdown file, numbered on
    from the stall charts and marked as they are; return (baseline, kernel) -> [(metric, the
    file's name)]."""
    from perfgate.history.svg import ChartSize, trend_chart
    from perfgate.history.trends import change_indexes, detected
    from perfgate.reports import svg

    target = Path(markdown_path)
    names: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for n, trend in enumerate(trends, start):
        safe = ".".join(
            re.sub(r"[^A-Za-z0-9_.-]+", "_", part)[:width]
            for part, width in ((trend.kernel, 60), (trend.metric, 30))
        )
        name = f"{target.stem}.{n}.{safe}.svg"
        chart = trend_chart(
            trend.series,
            title=f"{trend.metric} of {trend.kernel}",
            change_points=change_indexes(trend.series, detected),
            this_run=True,
            size=ChartSize(640, 240),
            mark=svg.chart_mark(target.name),
        )
        write_text_atomic(target.with_name(name), chart)
        names.setdefault((trend.baseline, trend.kernel), []).append((trend.metric, name))
    return names


def _remove_earlier_charts(markdown_path: str, names: Iterable[str]) -> None:
    """An earlier run's charts beside the markdown that this run did not write again would
    read as this run's: removed once the markdown that no longer names them is in place (so
    the markdown at that path never names a chart that is gone). Only perfgate's charts of
    this markdown file: its naming pattern and its mark (svg.chart_mark)."""
    from perfgate.reports import svg

    target = Path(markdown_path)
    own = re.compile(re.escape(target.stem) + r"\.[0-9]+\.[A-Za-z0-9_.-]+\.svg")
    remove_own_files(target.parent, own, names, svg.chart_mark(target.name))


def write_reports(report: Report, outputs: ReportOutputs, trends: Sequence[Any] = ()) -> None:
    """Write the reports asked for; `trends` (perfgate.history.trends.Trend, from --history)
    are drawn beside the markdown report."""
    from perfgate.reports import json_report, junit, markdown

    if outputs.junit:
        files = report_files(report, outputs.repository_root)
        text = junit.render(report, files, locations=outputs.junit_locations)
        write_text_atomic(outputs.junit, text)
    if outputs.json:
        write_text_atomic(outputs.json, json_report.render(report))
    if outputs.markdown:
        charts = _pictures(report, outputs.markdown)
        drawn = _trend_pictures(trends, outputs.markdown, len(charts) + 1)
        pictures = markdown.Pictures(svg=charts, trends=drawn)
        write_text_atomic(outputs.markdown, markdown.render(report, pictures))
        trend_files = [name for files in drawn.values() for _, name in files]
        _remove_earlier_charts(outputs.markdown, [*charts.values(), *trend_files])
    full = outputs.markdown or outputs.json or outputs.junit
    if outputs.pr_comment:
        text = markdown.render(
            report,
            budget=markdown.PR_COMMENT_BUDGET,
            full_report=full,
            marker=markdown.PR_COMMENT_MARKER,
        )
        write_text_atomic(outputs.pr_comment, text)
    if outputs.step_summary:
        text = markdown.render(report, budget=markdown.STEP_SUMMARY_BUDGET, full_report=full)
        _append(outputs.step_summary, text, "the step summary")


def write_step_outputs(report: Report, outputs: ReportOutputs, exit_code: ExitCode) -> None:
    if outputs.github_output:
        text = step_outputs(report, outputs, exit_code)
        _append(outputs.github_output, text, "the step outputs ($GITHUB_OUTPUT)")


def _append(path: str, text: str, what: str) -> None:
    # GitHub owns these files and collects what each step appends to them.
    # Not a regular file any more (replaced since the check began): skipped, never blocked on.
    # A failed append leaves the file as it was (append_regular), and the file is never
    # removed after (_remove_report): earlier steps' text in it is not perfgate's.
    try:
        append_regular(path, text)
    except OSError as exc:
        raise UsageError(
            f"cannot append to {what}: {exc.strerror or exc} (left as it was)", path
        ) from exc


_REPORT_FILES = ("junit", "markdown", "json", "pr_comment")


def _remove_report(outputs: ReportOutputs, path: str | None) -> None:
    """Remove `path` when it is one of the report files perfgate writes whole (an earlier
    run's, or this run's cut short), so it cannot claim a result; never GitHub's step files,
    which perfgate only appends to."""
    if path and path in {getattr(outputs, name) for name in _REPORT_FILES}:
        remove_stale(path)


def step_outputs(report: Report, outputs: ReportOutputs, exit_code: ExitCode) -> str:
    """`name=value` lines for $GITHUB_OUTPUT: the gate's verdict (pass, fail, error), the exit
    code perfgate exits with (after --fail-on), kernel counts by state and the reports
    written. Every value is one line: numbers, words, and paths the user gave (a newline in
    one is replaced, so it cannot start another output)."""
    counts = report.counts()
    values: dict[str, str | int] = {
        "verdict": EXIT_WORDS[report.exit_code].output,
        "exit-code": int(exit_code),
        "kernels": sum(n for state, n in counts.items() if state is not KernelState.NEW),
    }
    for state, n in counts.items():
        values[state.value.replace(" ", "-")] = n
    values["problems"] = len(report.problems)
    for name in ("junit", "markdown", "json", "pr_comment"):
        values[f"{name.replace('_', '-')}-path"] = getattr(outputs, name) or ""
    return "".join(f"{k}={_one_line(str(v))}\n" for k, v in values.items())


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def policy_exit_code(report: Report, policy: frozenset[FailOn]) -> ExitCode:
    """The exit code under --fail-on: a gate failure the policy does not fail on exits 0."""
    return report.exit_code_under(policy)


@dataclass(frozen=True)
class GitHubEnvironment:
    """What GitHub Actions tells a step through its environment."""

    active: bool  # GITHUB_ACTIONS=true
    step_summary: str | None
    output: str | None
    workspace: str  # the repository root: GITHUB_WORKSPACE, else the working directory


def github_environment() -> GitHubEnvironment:
    env = os.environ
    return GitHubEnvironment(
        active=env.get("GITHUB_ACTIONS") == "true",
        step_summary=env.get("GITHUB_STEP_SUMMARY") or None,
        output=env.get("GITHUB_OUTPUT") or None,
        workspace=env.get("GITHUB_WORKSPACE") or str(Path.cwd()),
    )


def report_files(report: Report, root: str | None) -> dict[str, str]:
    """Each baseline file the report judged with (a directory given on the command line is
    expanded by then) -> its path relative to `root`."""
    if root is None:
        return {}
    return repository_paths(tuple(r.baseline_path for r in report.results), root)


def repository_paths(paths: tuple[str, ...], root: str) -> dict[str, str]:
    """Each baseline path as GitHub and CI tools resolve it: relative to the repository root,
    '/'-separated. A path outside the root is kept as given (an annotation there cannot land
    on the diff, and an absolute path at least names the file)."""
    out: dict[str, str] = {}
    base = Path(root).resolve()
    for path in paths:
        try:
            relative = Path(path).resolve().relative_to(base)
        except (ValueError, OSError):
            out[path] = path
            continue
        out[path] = relative.as_posix()
    return out


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
    fmt: str = "text"  # what stdout shows: a name of perfgate.reports.REPORTERS
    verbose: bool = False
    quiet: bool = False  # text: the status line only
    colour: bool = False
    history: str | None = None  # --history: the kept runs the markdown's trends are drawn from


@dataclass(frozen=True)
class CheckOutcome:
    stdout: str
    exit_code: ExitCode  # after --fail-on
    # For stderr when --fail-on made the exit code other than the gate's verdict.
    policy_note: str | None = None


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


def _github_commands(report: Report, policy: frozenset[FailOn], workspace: str) -> str:
    """The report as GitHub workflow commands: errors when the gate fails the build,
    warnings when --fail-on never."""
    from perfgate.reports import github as github_report

    level: github_report.Level = "error" if policy else "warning"
    files = {
        **report_files(report, workspace),
        **repository_paths(github_report.problem_files(report), workspace),
    }
    return github_report.render(report, files, level)


class _ProblemUnreported(PerfgateError):
    """A check's problem whose report could not be written either: both are said."""

    def __init__(self, problem: PerfgateError, also: PerfgateError) -> None:
        super().__init__(problem.message, problem.path, problem.problems)
        self.exit_code = problem.exit_code
        self._lines = [*problem.lines(), *also.lines()]

    def lines(self) -> list[str]:
        return self._lines


def without_output(outputs: ReportOutputs, path: str | None) -> ReportOutputs:
    """The report outputs less the one a problem is about (it may be an input)."""
    if path is None:
        return outputs
    dropped: dict[str, Any] = {
        f.name: None for f in fields(outputs) if getattr(outputs, f.name) == path
    }
    return replace(outputs, **dropped)


def replace_stale_reports(outputs: ReportOutputs, exc: Exception) -> None:
    """After an internal error, each report file asked for says so, or is removed: a report
    left from an earlier run must not read as this run's result."""
    from perfgate.common.fileio import remove_stale

    problem = Report(problems=(f"internal error: {type(exc).__name__}: {exc}",))
    try:
        write_reports(problem, replace(outputs, step_summary=None))
    except Exception:  # the reporters themselves fail: leave no report at all
        for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
            if path:
                remove_stale(path)


def _safe_outputs(outputs: ReportOutputs, inputs: tuple[str, ...]) -> ReportOutputs:
    """The report outputs less any that check_outputs refuses on its own (after it refused
    another, the rest were never looked at): the report files, and GitHub's step files, which
    are never appended to when they are an input either (a capture, its sidecar, a baseline
    in a folder given)."""
    every = _every_input(inputs)
    for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
        try:
            check_outputs([path], every)
        except PerfgateError:
            outputs = without_output(outputs, path)
    for path in (outputs.step_summary, outputs.github_output):
        try:
            check_outputs([path], every, regular_only=())
        except PerfgateError:
            outputs = without_output(outputs, path)
    return outputs


def _every_input(paths: tuple[str, ...]) -> list[str]:
    """`paths` (baselines and captures as given), the baselines of a folder among them (its
    subfolders too, as expand finds them), the diagnosis captures that gate sidecars link, and
    every capture's sidecar."""
    from perfgate.baseline.selection import below
    from perfgate.ingest.meta import sidecar_path
    from perfgate.ingest.phases import linked

    folders = [p for p in paths if Path(p).is_dir()]
    files = linked([p for p in paths if p not in folders])
    inside = [str(c) for folder in folders for c in below(Path(folder))]
    return [*paths, *inside, *files, *(str(sidecar_path(f)) for f in files)]


def _report_problem(problem: Report, outputs: ReportOutputs, exc: PerfgateError) -> None:
    """Write a problem's report to each output. One that cannot be written is removed (no
    report of an earlier run may stay there) and the others say both problems; if they
    cannot be written either, every report file asked for is removed. Both are raised."""
    try:
        write_reports(problem, outputs)
        write_step_outputs(problem, outputs, exc.exit_code)
        return
    except PerfgateError as also:
        unreported = _ProblemUnreported(exc, also)
        rest = without_output(outputs, also.path) if also.path else outputs
        _remove_report(outputs, also.path)
    try:
        both = Report(problems=tuple(unreported.lines()))
        write_reports(both, rest)
        write_step_outputs(both, rest, exc.exit_code)
    except PerfgateError:
        for path in (outputs.junit, outputs.markdown, outputs.json, outputs.pr_comment):
            if path:
                remove_stale(path)
    raise unreported


def check_inputs(request: CheckRequest) -> list[str]:
    """Every file a check reads: the baselines (each *.yaml/*.yml of a directory given) and
    the captures with their sidecars."""
    from perfgate.ingest.meta import sidecar_path

    try:
        baselines = [p.path for p in expand(request.baselines)]
    except PerfgateError:  # an empty directory: run_check says so
        baselines = []
    from perfgate.ingest.phases import linked

    files = linked((*request.capture_files, *request.recorded_from))
    sidecars = [str(sidecar_path(c)) for c in files]
    return [*request.baselines, *baselines, *files, *sidecars]


def _check_report_paths(
    request: CheckRequest, outputs: ReportOutputs, history: str | None = None
) -> None:
    """Refuse, before judging, a report or GitHub step file that is one of the inputs (the
    --history file among them), and a --markdown whose stall charts, MARKDOWN-STEM.N.KERNEL.svg
    beside it, could be one."""
    inputs = check_inputs(request)
    if history:
        from perfgate.history.store import is_url

        if not outputs.markdown:
            raise UsageError("--history draws trends beside the markdown report: give --markdown")
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


def _skip_irregular_step_files(
    outputs: ReportOutputs, stderr: Callable[[str], None]
) -> ReportOutputs:
    """GitHub's step files that are not regular files (a FIFO would block the gate) are
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
        _check_report_paths(command.request, outputs, command.history)
        report = run_check(command.request)
        trends = _check_trends(report, command.history, outputs, stderr)
    except PerfgateError as exc:
        # An output that is an input, or not a regular file, is never written to.
        request = command.request
        inputs = request.baselines + request.capture_files + request.recorded_from
        outputs = _safe_outputs(without_output(outputs, exc.path), inputs)
        # CI reads the reports, not stderr: say what went wrong there too, then fail.
        problem = Report(problems=tuple(exc.lines()))
        if annotate:
            stderr(_github_commands(problem, command.policy, gh.workspace))
        _report_problem(problem, outputs, exc)
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
        _remove_report(outputs, exc.path)
        _report_problem(Report(problems=tuple(exc.lines())), without_output(outputs, exc.path), exc)
        raise
    except Exception as exc:
        replace_stale_reports(outputs, exc)
        raise
    write_step_outputs(report, outputs, code)
    if annotate:
        stderr(_github_commands(report, command.policy, gh.workspace))
    return CheckOutcome(
        stdout_report(report, command, gh.workspace),
        code,
        None if command.quiet else policy_note(report, code, command.policy),
    )


def stdout_report(report: Report, command: CheckCommand, workspace: str) -> str:
    """What `perfgate check` prints on stdout in the format asked for."""
    from perfgate.reports import junit, text

    if command.fmt == "text":
        output = text.render(report, command.verbose)
        if command.quiet:
            output = output.split("\n", 1)[0] + "\n"
        if command.colour:
            from perfgate.reports.colour import paint

            output = paint(output)
        return output
    if command.fmt == "github":
        return _github_commands(report, command.policy, workspace)
    if command.fmt == "junit":
        files = report_files(report, workspace)
        return junit.render(report, files, locations=command.junit_locations)
    from perfgate.reports import REPORTERS

    return REPORTERS[command.fmt].render(report)


def problem_stdout(fmt: str, problems: tuple[str, ...], code: ExitCode) -> str | None:
    """What stdout shows in a machine format (json, junit, github) when the check stopped on
    unusable input or a bug: an error document with the message and the exit code, so that
    stdout is that format whatever the exit code. None for the human formats (stderr says it)."""
    problem = Report(problems=problems)
    if fmt == "json":
        import json

        from perfgate.reports.json_report import to_dict

        document = {**to_dict(problem), "status": "error", "exit_code": int(code)}
        return json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    if fmt == "junit":
        from perfgate.reports import junit

        return junit.render(problem)
    if fmt == "github":
        from perfgate.reports import github as github_report

        return github_report.render(problem)
    return None


def policy_note(report: Report, code: ExitCode, policy: frozenset[FailOn]) -> str | None:
    """A line saying that --fail-on changed the exit code from the gate's verdict; None
    when it did not."""
    if code is report.exit_code:
        return None
    verdict = "failed" if report.exit_code else "passed"
    asked = ",".join(sorted(p.value for p in policy)) or "never"
    return f"perfgate: the gate {verdict}; exit {int(code)} (--fail-on {asked})"


# The kernel states that send a kernel to the diagnosis capture: what the gate found wrong
# with a kernel it measured (a missing kernel has nothing to profile).
_DIAGNOSE = frozenset({KernelState.REGRESSED, KernelState.INCOMPLETE, KernelState.ERROR})
PHASE_CHOICES = ("auto", "gate", "full")


@dataclass(frozen=True)
class PhasedCapture:
    """What `perfgate capture --phases ...` did: the gate (or full) capture, and the diagnosis
    capture of the kernels that failed the gate, when there was one."""

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


def run_capture_phases(options: CaptureOptions, phases: str) -> PhasedCapture:
    """`perfgate capture`: a gate capture (`gate`, `auto`) or the single-phase full capture
    (`full`); with `auto`, the gate capture is checked against the baselines and a diagnosis
    capture of only the kernels that failed is taken beside it (OUTPUT.diagnosis.csv), which
    `check` merges for its metrics (perfgate.ingest.phases)."""
    from perfgate.ingest.meta import DIAGNOSIS, FULL, GATE
    from perfgate.ncu.command import baseline_files
    from perfgate.ncu.runner import link_diagnosis, remove_capture, run_capture

    if phases not in PHASE_CHOICES:
        raise UsageError(f"--phases must be one of {', '.join(PHASE_CHOICES)}")
    second = diagnosis_output(options.output)
    inputs = [*baseline_files(options.baselines), *options.program[:1]]
    check_outputs([("-o (its diagnosis capture)", second)], [p for p in inputs if p])
    remove_capture(second)  # an earlier run's diagnosis never sits beside this gate capture
    first = run_capture(
        replace(options, phase=FULL if phases == "full" else GATE, follow_baseline=phases == "auto")
    )
    if phases != "auto" or first.absent or first.phase != GATE:
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
            v.name for r in report.results for v in r.verdicts if v.state in _DIAGNOSE and v.name
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


# perfgate history (docs/history.md): the check's own use case judges; these only keep it.


@dataclass(frozen=True)
class HistoryAdd:
    db: str
    check: CheckRequest
    given: Any  # perfgate.history.context.GivenContext (loaded only by history commands)


@dataclass(frozen=True)
class HistoryStored:
    run_id: str
    stored: bool  # False: this very run was kept already (nothing changed)
    kernels: int
    metrics: int
    status: str


def _keep(db: str, record: Any) -> HistoryStored:
    from perfgate.history.store import open_store

    with open_store(db) as store:
        stored = store.store(record)
    return HistoryStored(
        record.context.run_id, stored, record.kernel_count, record.metric_count, record.status
    )


def run_history_add(request: HistoryAdd) -> HistoryStored:
    """Check as `perfgate check` does, then keep the result with its context."""
    from perfgate.history.context import context
    from perfgate.history.records import from_report
    from perfgate.history.store import now

    report = run_check(request.check)
    return _keep(request.db, from_report(report, context(request.given, os.environ, now())))


def run_history_import(db: str, paths: Sequence[str], given: Any) -> list[HistoryStored]:
    """Keep the results of JSON reports written by `perfgate check --format json`."""
    import json

    from perfgate.history.context import imported_context
    from perfgate.history.records import from_json

    if given.run_id is not None and len(paths) > 1:
        raise UsageError(f"--run-id names one run; {len(paths)} JSON files were given")
    out = []
    for path in paths:
        try:
            content = Path(path).read_bytes()
            mtime = Path(path).stat().st_mtime
        except OSError as exc:
            raise UsageError(f"cannot read: {exc.strerror or exc}", path) from exc
        try:
            doc = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise UsageError(f"not a JSON check result: {exc}", path) from exc
        try:
            record = from_json(doc, imported_context(given, content, mtime))
        except UsageError as exc:
            raise UsageError(exc.message, path) from exc
        out.append(_keep(db, record))
    return out


def run_history_show(db: str, kernel: str, metric: str | None, fmt: str) -> str:
    """A kernel's series per fingerprint, rendered (text with sparklines, or json)."""
    from perfgate.history import render
    from perfgate.history.queries import series
    from perfgate.history.store import open_store

    with open_store(db, create=False) as store:
        found = series(store, kernel, metric)
    return render.to_json(kernel, found) if fmt == "json" else render.text(kernel, found)


def run_history_prune(db: str, older_than_days: float | None, keep: int | None) -> list[str]:
    """Delete runs older than the days given and beyond the newest `keep`: the run ids."""
    from datetime import datetime, timedelta, timezone

    from perfgate.history.store import open_store

    if older_than_days is None and keep is None:
        raise UsageError("say what to prune: --older-than DAYS, --keep N, or both")
    before = None
    if older_than_days is not None:
        cut = datetime.now(timezone.utc) - timedelta(days=older_than_days)
        before = cut.isoformat(timespec="microseconds")
    with open_store(db, create=False) as store:
        return store.prune(before=before, keep=keep)


@dataclass(frozen=True)
class HistoryPage:
    path: str
    runs: int
    kernels: int
    charts: int


def run_history_html(db: str, baseline: str | None, output: str, last: int = 60) -> HistoryPage:
    """One baseline's newest `last` runs (0: all) as a static HTML page
    (perfgate.history.html), written atomically to `output`, which may not be the history."""
    from perfgate.history import html
    from perfgate.history.store import is_url, open_store
    from perfgate.history.trends import baseline_trends, detected

    check_outputs([("-o", output)], [] if is_url(db) else [db])
    with open_store(db, create=False) as store:
        records = [r for r in map(store.load, store.run_ids()) if r is not None]
        source = store.where
    trends = baseline_trends(records, baseline, last)
    page = html.page(trends, source=source, change_points=detected)
    write_text_atomic(output, page.text)
    return HistoryPage(output, trends.runs, page.kernels, page.charts)
