"""`perfgate baseline accept`, `update`, `show` and `diff`: a baseline's edits, made under a
lock on the file and written only if it still holds the text validated, and its views."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from perfgate.baseline.load import load_baseline, parse_baseline, read_baseline_text
from perfgate.common.errors import (
    BaselineError,
    EditError,
    ExitCode,
    PerfgateError,
)
from perfgate.common.exhaustive import never
from perfgate.common.fileio import (
    check_outputs,
    locked,
    write_text_atomic,
)
from perfgate.ingest import read_captures
from perfgate.metrics.values import check_values
from perfgate.usecases.choices import ReviewFormat
from perfgate.usecases.console import Document, Line, Outcome
from perfgate.usecases.record import check_kept_text

if TYPE_CHECKING:
    # Loaded where they are used: a check needs none of them (docs/scale.md).
    from perfgate.lifecycle.plan import EditPlan
    from perfgate.lifecycle.views import BaselineDiff, BaselineView


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


class EditVerb(str, Enum):
    """What an edit is called in its summary: accept, update, or update --ratchet."""

    ACCEPT = "accept"
    UPDATE = "update"
    RATCHET = "ratchet"

    def past(self) -> str:
        if self is EditVerb.ACCEPT:
            return "accepted"
        if self is EditVerb.UPDATE:
            return "updated"
        if self is EditVerb.RATCHET:
            return "ratcheted"
        never(self)


def edit_summary(result: EditResult, verb: EditVerb) -> Outcome:
    """What an edit took into which file, each kernel with the values it replaced; what it
    left, on stderr."""
    from perfgate.reports.format import value

    plan = result.plan
    said: list[Line] = []
    if not result.changed:
        said.append(Line(f"{result.path}: nothing to {verb.value}"))
    else:
        n = len(plan.edits)
        what = [f"{n} kernel{'s' if n != 1 else ''}"] if n or plan.program is None else []
        if plan.program is not None:
            what.append("the program GPU time")
        said.append(Line(f"{verb.past()} {' and '.join(what)} into {result.path}:"))
        for edit in plan.edits:
            moved = ", ".join(f"{m} was {value(v)}" for m, v in edit.previous.items())
            said.append(
                Line(f"  {edit.action.value:<8} {edit.kernel}" + (f" ({moved})" if moved else ""))
            )
        if plan.program is not None and plan.program_action is not None:
            entry = plan.program.history[-1:] if plan.program.history else ()
            was = ", ".join(f"was {value(v, 'ns')}" for h in entry for v in h.previous.values())
            now = value(plan.program.value, "ns")
            said.append(
                Line(
                    f"  {plan.program_action.value:<8} program GPU time {now}"
                    + (f" ({was})" if was else "")
                )
            )
    said += [Line(f"  left     {line}", err=True) for line in plan.left]
    return Outcome(tuple(said))


def show_outcome(path: str, patterns: tuple[str, ...], fmt: ReviewFormat) -> Outcome:
    """`perfgate baseline show`: the baseline condensed for review, rendered."""
    from perfgate.reports.review import SHOW

    return Outcome((Document(SHOW[fmt.value](run_show(path, patterns))),))


def diff_outcome(
    before: str, after: str, fmt: ReviewFormat, every: bool, exit_code: bool
) -> Outcome:
    """`perfgate baseline diff`: what changed, rendered (`every`: values that moved within
    their bounds too); exit 1 with `exit_code` when the baselines differ."""
    from perfgate.reports.review import DIFF

    result = run_diff(before, after)
    code = ExitCode.GATE_FAILED if exit_code and not result.identical else ExitCode.OK
    return Outcome((Document(DIFF[fmt.value](result, every)),), code)


def accept_outcome(request: EditRequest) -> Outcome:
    return edit_summary(run_accept(request), EditVerb.ACCEPT)


def update_outcome(request: EditRequest) -> Outcome:
    return edit_summary(
        run_update(request), EditVerb.RATCHET if request.ratchet else EditVerb.UPDATE
    )
