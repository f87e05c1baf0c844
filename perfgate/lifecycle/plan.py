"""How a baseline changes over its life, decided on plain data: which kernels take new values
from new captures, which values they replace, and what stays as people wrote it.

- `accept`: the named kernels (default: those that regressed or went missing) take the new
  values, with a reason; their previous values go into the entry's history. The whole-program
  GPU time is taken only when named too (`--program`), or by default when it regressed itself;
  `accept -k ONE` never takes it (a new kernel elsewhere would move it).
- `update`: every kernel is re-recorded from new captures. A kernel that regressed is only
  taken with a reason (then it is accepted like above); kernels new in the capture are added.
  The program time likewise: re-recorded within its bound, taken past it only with a reason.
- `update --ratchet`: only what improved beyond its bound takes the new value, and no bound
  or range ever widens: the median moves only the better way, the recorded launch range only
  inward, and of two bounds the one that lets the value move less stays. Captures of another
  scope or time basis than the baseline's give it nothing. Safe to run unattended on the
  main branch after a merge.

Whatever is taken is named in the history of what took it (a kernel's entry, or the program
time's own `history`).

What people wrote is never replaced: the file's choice of metrics per kernel, explicit
`function:`/`regex:` matches, categorical checks, top-level `thresholds:`, and any numeric
threshold that is not the one perfgate calibrated (its `calibration` text says which bound it
gave). Comments are kept by the writer (perfgate.lifecycle.edit).

The edits are computed from a check of the captures against the baseline (compare.check),
so "regressed" and "improved" mean exactly what the gate would have said.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from perfgate.baseline.fingerprint import Fingerprint
from perfgate.baseline.model import (
    Baseline,
    HistoryEntry,
    KernelBaseline,
    MetricBaseline,
    ProgramBaseline,
)
from perfgate.baseline.selection import assign
from perfgate.common import patterns as user_patterns
from perfgate.common.errors import UsageError
from perfgate.identity.grouping import KernelGroup, group_launches, new_ids
from perfgate.identity.matching import SPLIT, match, pick_work
from perfgate.ingest.launches import Capture
from perfgate.judge.comparison import State, merged_bounds
from perfgate.judge.policy import acceptable, failing
from perfgate.judge.states import KernelState
from perfgate.lifecycle.calibrate import floor_for
from perfgate.lifecycle.program import record_program
from perfgate.lifecycle.record import capture_fingerprint, record_kernel
from perfgate.metrics.catalog import default_metrics
from perfgate.metrics.thresholds import Direction, ThresholdOverride
from perfgate.verdicts.check import (
    CAPTURE_TYPE_METRICS,
    SCOPED_METRICS,
    TIME_METRICS,
    CheckSettings,
    check,
)
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict, RatchetTakes

HISTORY_KEPT = 10  # entries per kernel; older ones are in the repository's history


class Action(enum.Enum):
    ACCEPT = "accept"  # a change taken with a reason
    UPDATE = "update"  # re-recorded within its bounds
    RATCHET = "ratchet"  # improved values taken, bounds tightened
    ADD = "add"  # a kernel new to the baseline
    REMOVE = "remove"  # a kernel that no longer runs, accepted as gone


@dataclass(frozen=True)
class KernelEdit:
    kernel: str  # the id in the baseline (a new readable id for ADD)
    action: Action
    fresh: KernelBaseline | None  # as recorded from the captures; None for REMOVE
    metrics: tuple[str, ...] = ()  # the metrics that take fresh values
    previous: Mapping[str, float | str] = field(default_factory=dict)  # what moved, before
    state: KernelState | None = None  # the check's verdict on the kernel


@dataclass(frozen=True)
class EditPlan:
    edits: tuple[KernelEdit, ...]
    fingerprint: Fingerprint | None  # the captures' fingerprint (update); None: unchanged
    left: tuple[str, ...] = ()  # what was not taken, and why
    result: CheckResult | None = None
    # The whole-program GPU time to write, its history included (None: the file's stays). It
    # is taken only when named (accept --program, or accept of what failed when it did), by an
    # update within its bound or with a reason, and by the ratchet where it improved beyond it.
    program: ProgramBaseline | None = None
    program_action: Action | None = None  # how it was taken (None: not taken)


@dataclass(frozen=True)
class Stamp:
    date: str
    by: str | None


# --------------------------------------------------------------------------- who and when


def _git_user() -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = []
        for key in ("user.name", "user.email"):
            proc = subprocess.run(
                [git, "config", "--get", key],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if proc.returncode == 0 and proc.stdout.strip():
                out.append(proc.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None
    if not out:
        return None
    return f"{out[0]} <{out[1]}>" if len(out) == 2 else out[0]


def who(env: Mapping[str, str] | None = None) -> str | None:
    """Who accepts a change: the CI run that does it (the actor and a link to the run), else
    git's configured user, else the login name."""
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") == "true" and env.get("GITHUB_ACTOR"):
        run = ""
        if (
            env.get("GITHUB_SERVER_URL")
            and env.get("GITHUB_REPOSITORY")
            and env.get("GITHUB_RUN_ID")
        ):
            run = (
                f" ({env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}/actions/runs/"
                f"{env['GITHUB_RUN_ID']})"
            )
        return f"{env['GITHUB_ACTOR']} via GitHub Actions{run}"
    if env.get("GITLAB_CI") == "true" and env.get("GITLAB_USER_LOGIN"):
        return f"{env['GITLAB_USER_LOGIN']} via GitLab CI"
    return _git_user() or env.get("USER") or env.get("USERNAME") or None


def now(env: Mapping[str, str] | None = None) -> str:
    """UTC now; SOURCE_DATE_EPOCH (the reproducible-builds convention) fixes it."""
    env = os.environ if env is None else env
    epoch = env.get("SOURCE_DATE_EPOCH")
    moment = dt.datetime.now(dt.timezone.utc)
    if epoch and epoch.isascii() and epoch.isdigit():
        try:
            moment = dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:  # past the year 9999
            raise UsageError(
                f"SOURCE_DATE_EPOCH={epoch[:40]} is not a time perfgate can write "
                "(seconds since 1970, before the year 10000)"
            ) from exc
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(by: str | None = None) -> Stamp:
    return Stamp(now(), by or who())


def history_entry(edit: KernelEdit, reason: str, when: Stamp) -> HistoryEntry:
    return HistoryEntry(
        date=when.date, reason=reason, by=when.by, action=edit.action.value, previous=edit.previous
    )


# ------------------------------------------------------------------------------ ownership

_CALIBRATED = re.compile(
    r": (?:floor|spread|launch range) (?P<relative>[0-9.]+)%"
    r"(?:, absolute (?P<absolute>[0-9.e+-]+))?$"
)


def calibrated_bound(text: str | None) -> tuple[float, float] | None:
    """The (relative, absolute) bound a `calibration` text says perfgate chose, or None."""
    if not text:
        return None
    m = _CALIBRATED.search(text)
    if not m:
        return None
    return round(float(m["relative"]) / 100, 4), float(m["absolute"] or 0.0)


# Runs whose median is 0: the text states the absolute part it chose, as `{:g}`; the relative
# part beside it is the catalog floor's (perfgate.lifecycle.calibrate.calibrate).
_AROUND_ZERO = re.compile(r" runs around 0: absolute (?P<absolute>[0-9.e+-]+) \(")


def _is_around_zero_bound(metric: MetricBaseline, t: ThresholdOverride) -> bool:
    m = _AROUND_ZERO.search(metric.calibration or "")
    return (
        m is not None
        and (t.relative or 0.0) == floor_for(metric.definition, None).relative
        and f"{t.absolute or 0.0:g}" == m["absolute"]
    )


def threshold_is_perfgates(metric: MetricBaseline) -> bool:
    """A numeric threshold is perfgate's to replace when it is exactly the bound its
    `calibration` text states; anything else is somebody's decision and stays."""
    t = metric.threshold
    if t is None:
        return True
    if metric.check is not None and any(
        getattr(metric.check, k) is not None for k in ("stable", "expect", "forbid", "margin")
    ):
        return False
    if t.direction is not None:
        return False
    if _is_around_zero_bound(metric, t):
        return True
    bound = calibrated_bound(metric.calibration)
    if bound is None:
        return False
    relative, absolute = bound
    return (t.relative or 0.0) == relative and (t.absolute or 0.0) == absolute


# ---------------------------------------------------------------------------------- plans


def _moved(verdict: KernelVerdict) -> dict[str, float | str]:
    """The baseline values of the comparisons that moved beyond their bound."""
    out: dict[str, float | str] = {}
    for c in verdict.comparisons:
        if c.state in (State.REGRESSED, State.IMPROVED) and c.baseline is not None:
            out[c.metric] = c.baseline
    return out


def _fresh(
    baseline: Baseline,
    capture: Capture,
    other_scope: str = "",
    other_basis: str = "",
    only: frozenset[str] | None = None,
    judged: CheckResult | None = None,
) -> tuple[CheckResult, dict[str, KernelBaseline], list[KernelBaseline], _Classes]:
    """The check of the captures against the baseline, each baselined kernel recorded afresh
    from the launches the check gave it (with the metrics the file gates for it), and the
    kernels new to the baseline recorded with the default set. A baselined kernel whose
    launches split into work classes its entry does not have is recorded as the class nearest
    its recorded work (its match gets `work:`), and its other classes as entries of their own,
    taken with it (never pooled: the next check would split them again).

    `only`: record just these baselined kernels and no new one (the ratchet takes nothing
    else); `judged`: the check, where the caller has made it with these settings already."""
    result = judged or check(
        baseline,
        capture,
        CheckSettings(report_new_kernels=True, other_scope=other_scope, other_basis=other_basis),
    )
    if only is not None and not only:
        return result, {}, [], {}  # nothing to record: no grouping, no matching
    dropped = _dropped(other_scope, other_basis)
    groups = group_launches(capture.launches, by_nvtx=baseline.by_nvtx)
    matching = match(baseline, groups)
    fresh: dict[str, KernelBaseline] = {}
    others: list[tuple[KernelBaseline, KernelGroup]] = []
    for entry in baseline.kernels:
        found = matching.groups.get(entry.id) or []
        if not found or (only is not None and entry.id not in only):
            continue
        group = found[0]
        if matching.how.get(entry.id, "").startswith(SPLIT):
            group = pick_work(entry, found)
            others.extend((entry, g) for g in found if g is not group)
        elif len(found) > 1:  # an explicit function/regex match over several shapes
            group = KernelGroup(found[0].key, tuple(la for g in found for la in g.launches))
        names = [m.name for m in entry.metrics]
        kernel, _ = record_kernel(group, entry.id, names, capture)
        if kernel is not None:
            fresh[entry.id] = _in_scope(kernel, dropped)
    cc = next((la.cc for la in capture.launches if la.cc), None)
    taken = {k.id for k in baseline.kernels}
    ids = new_ids([g.key for g in matching.unclaimed], taken)
    added = []
    for group in matching.unclaimed if only is None else ():
        kernel, _ = record_kernel(
            group, ids[group.key], default_metrics(capture.columns, cc), capture
        )
        if kernel is not None:
            added.append(_in_scope(kernel, dropped))
    class_ids = new_ids([g.key for _, g in others], taken | set(ids.values()))
    classes: _Classes = {}
    for entry, group in others:
        names = [m.name for m in entry.metrics]
        kernel, _ = record_kernel(group, class_ids[group.key], names, capture)
        if kernel is not None:
            kernel = _in_scope(kernel, dropped)
            classes.setdefault(entry.id, []).append(kernel)
    return result, fresh, added, classes


# A split kernel's id -> its other work classes, recorded as entries of their own.
_Classes = dict[str, list[KernelBaseline]]


def _for_gpu(baseline: Baseline, capture: Capture) -> tuple[Capture, str, str]:
    """The captures' launches on the baseline's GPU (launches from another GPU are refused:
    a baseline takes values from its own GPU only), why their launch counts do not compare
    with the baseline's, and why their durations do not (another time basis: a gate capture
    against a baseline of full captures); "" when they do."""
    plan = assign([baseline], [True], capture)
    a = plan.assignments[0]
    return a.capture, a.other_scope, a.other_basis


def _dropped(other_scope: str, other_basis: str) -> frozenset[str]:
    """The metrics a capture of another scope or time basis does not give the baseline."""
    out: set[str] = set()
    if other_scope:
        out.update(SCOPED_METRICS)
    if other_basis:
        # Durations, and DRAM bytes a gate capture reads 2-8% lower than a full capture.
        out.update(TIME_METRICS, CAPTURE_TYPE_METRICS)
    return frozenset(out)


def _in_scope(kernel: KernelBaseline, dropped: frozenset[str]) -> KernelBaseline:
    """A kernel recorded from a capture of another scope less its launch counts, of another
    time basis less its durations: they are not the baseline's to take (the ratchet, accept
    and update leave them as they are)."""
    if not dropped:
        return kernel
    return replace(
        kernel,
        launches=None if "launches" in dropped else kernel.launches,
        metrics=tuple(m for m in kernel.metrics if m.name not in dropped),
    )


def _taken(verdict: KernelVerdict, action: Action, kernel: KernelBaseline) -> KernelEdit:
    """The kernel takes every fresh value; the values that moved are kept as its history."""
    metrics = tuple(m.name for m in kernel.metrics)
    return KernelEdit(verdict.kernel, action, kernel, metrics, _moved(verdict), verdict.state)


def _added(kernels: Sequence[KernelBaseline]) -> list[KernelEdit]:
    return [KernelEdit(k.id, Action.ADD, k, tuple(m.name for m in k.metrics)) for k in kernels]


def _selected(patterns: Sequence[str], verdict: KernelVerdict) -> bool:
    return any(
        user_patterns.search(p, verdict.kernel) or user_patterns.search(p, verdict.name)
        for p in patterns
    )


PROGRAM = "program GPU time"
PROGRAM_KEY = "gpu_time"  # the program time's key in a history entry's `previous`
RATCHET_REASON = "improved beyond its bound (perfgate baseline update --ratchet)"


def _program_change(verdict: ProgramVerdict | None) -> str:
    change = verdict.change if verdict is not None else None
    return f" ({change:+.1%})" if change is not None else ""


def _program_taken(
    baseline: Baseline,
    fresh: ProgramBaseline,
    action: Action,
    reason: str | None,
    when: Stamp | None,
) -> ProgramBaseline | None:
    """The program time to write: `fresh` with the file's history, and an entry naming this
    change where a kernel's entry would get one (a reason given, or accepted or ratcheted).
    None when it is the file's as it is (nothing to write)."""
    old = baseline.program
    history = old.history if old is not None else ()
    if old is not None and (fresh.value, fresh.relative, fresh.runs, fresh.calibration) == (
        old.value,
        old.relative,
        old.runs,
        old.calibration,
    ):
        return None
    if reason is not None or action in (Action.ACCEPT, Action.RATCHET):
        when = when or stamp()
        previous: dict[str, float | str] = {}
        if old is not None and old.value != fresh.value:
            previous[PROGRAM_KEY] = old.value
        if reason is None and old is None:
            reason = "recorded where the baseline had none (perfgate baseline update --ratchet)"
        entry = HistoryEntry(
            date=when.date,
            reason=reason or RATCHET_REASON,
            by=when.by,
            action=action.value,
            previous=previous,
        )
        history = (*history, entry)[-HISTORY_KEPT:]
    return replace(fresh, history=history)


def plan_accept(
    baseline: Baseline,
    capture: Capture,
    patterns: Sequence[str] = (),
    add_new: bool = False,
    program: bool = False,
    reason: str | None = None,
    when: Stamp | None = None,
) -> EditPlan:
    """The kernels named by `patterns` (regexes over id and name), or by default every kernel
    that regressed or went missing, take the values of the captures. The whole-program time
    is taken when `program` names it, or by default (no `patterns`) when it regressed: a
    kernel named alone never takes it. `reason` and `when`: for the program's history."""
    for pattern in patterns:
        user_patterns.checked(pattern, "--kernel")
    capture, other_scope, other_basis = _for_gpu(baseline, capture)
    result, fresh, added, classes = _fresh(baseline, capture, other_scope, other_basis)
    edits: list[KernelEdit] = []
    left: list[str] = []
    for verdict in result.verdicts:
        if verdict.state is KernelState.NEW:
            continue
        chosen = _selected(patterns, verdict) if patterns else acceptable(verdict.state)
        if not chosen:
            continue
        if verdict.state is KernelState.MISSING:
            edits.append(KernelEdit(verdict.kernel, Action.REMOVE, None, state=verdict.state))
            continue
        kernel = fresh.get(verdict.kernel)
        if kernel is None:
            left.append(f"{verdict.kernel}: no metric of it could be measured in the captures")
            continue
        edits.append(_taken(verdict, Action.ACCEPT, kernel))
        edits.extend(_added(classes.get(verdict.kernel, ())))
    if add_new:
        edits.extend(_added(added))
    taken, action = _accepted_program(
        capture, result, patterns, program, other_scope or other_basis, left
    )
    new_program = (
        _program_taken(baseline, taken, action, reason, when) if taken is not None else None
    )
    if not edits and new_program is None:
        what = "named by --kernel" if patterns else "that regressed or went missing"
        if program:
            raise UsageError(
                f"the {PROGRAM} is as the captures give it, and no kernel {what}: nothing "
                "to accept",
                baseline.path,
            )
        raise UsageError(
            f"no kernel {what}: nothing to accept (perfgate check shows what changed)",
            baseline.path,
        )
    return EditPlan(
        tuple(edits),
        None,
        tuple(left),
        result,
        new_program,
        action if new_program is not None else None,
    )


def _accepted_program(
    capture: Capture,
    result: CheckResult,
    patterns: Sequence[str],
    named: bool,
    other: str,
    left: list[str],
) -> tuple[ProgramBaseline | None, Action]:
    """The program time `accept` takes: named (--program), or by default (no --kernel)
    when it fails the check. What it leaves, and why, goes to `left`."""
    verdict = result.program
    failed = verdict is not None and acceptable(verdict.state)
    if not named and (patterns or not failed):
        if failed or (verdict is not None and verdict.state is KernelState.IMPROVED):
            state = verdict.state.value if verdict is not None else ""
            left.append(
                f"{PROGRAM}: {state}{_program_change(verdict)}; not named, kept as it was "
                "(--program takes it)"
            )
        return None, Action.ACCEPT
    # A sum over launches of their durations: of another scope or time basis, not taken.
    fresh = record_program(capture) if not other else None
    if fresh is None:
        why = other or "a capture file holds no gpu__time_duration.sum for some launch"
        if named:
            raise UsageError(f"cannot take the {PROGRAM} from these captures: {why}")
        left.append(f"{PROGRAM}: {why}; kept as it was")
        return None, Action.ACCEPT
    return fresh, Action.ACCEPT


# ------------------------------------------------------------------------------ the ratchet


def _allowance(relative: float, absolute: float, value: float) -> float:
    """How far a bound lets a value move: beyond both parts counts (perfgate.judge.outcome)."""
    return max(absolute, relative * abs(value))


def passing_range(metric: MetricBaseline, baseline: Baseline) -> tuple[float, float]:
    """The values a check lets pass as not worse for `metric` (as judge.outcome judges them:
    from the edge of the recorded launch range, or from the median under a calibrated bound,
    widened by the bound's allowance on each worse side); -inf/inf on a side that is never
    worse. A ratchet's edit must leave this range as it was or narrower."""
    value = float(metric.value)
    bounds = merged_bounds(metric.definition, metric, baseline)
    ranged = metric.calibration is None or metric.threshold is None
    low = min(metric.low, value) if ranged and metric.low is not None else value
    high = max(metric.high, value) if ranged and metric.high is not None else value
    allow = _allowance(bounds.threshold.relative, bounds.threshold.absolute, value)
    direction = bounds.direction
    top = high + allow if direction is not Direction.LOWER_IS_WORSE else math.inf
    bottom = low - allow if direction is not Direction.HIGHER_IS_WORSE else -math.inf
    return bottom, top


def _within(inner: tuple[float, float], outer: tuple[float, float]) -> bool:
    slack = 1e-9 * max([1.0, *(abs(x) for x in (*inner, *outer) if math.isfinite(x))])
    return inner[0] >= outer[0] - slack and inner[1] <= outer[1] + slack


def ratcheted_metric(
    baseline: Baseline, old: MetricBaseline, fresh: MetricBaseline
) -> MetricBaseline | None:
    """`old` tightened by what `fresh` (recorded from the captures) improved, or None when it
    cannot be without widening something. The median moves only the better way; the launch
    range only inward on the worse side (on the better side no further than the new median);
    the bound is the old one, or the freshly calibrated one where perfgate calibrated the old
    (threshold_is_perfgates) and the new lets less through. Everything else is the old
    entry's: unit, formula, shares, categorical rules."""
    if isinstance(old.value, str) or isinstance(fresh.value, str):
        return None
    value, new = float(old.value), float(fresh.value)
    direction = merged_bounds(old.definition, old, baseline).direction
    if direction is Direction.ANY_CHANGE or new == value:
        return None
    if (new < value) != (direction is Direction.HIGHER_IS_WORSE):
        return None  # not better: the median never moves the worse way
    low = min(old.low if old.low is not None else value, value)
    high = max(old.high if old.high is not None else value, value)
    fresh_low = min(fresh.low if fresh.low is not None else new, new)
    fresh_high = max(fresh.high if fresh.high is not None else new, new)
    # Inward of both ranges, and never so far that the range leaves out the new median.
    new_low, new_high = min(max(fresh_low, low), new), max(min(fresh_high, high), new)
    options = [(old.threshold, old.calibration)]
    if threshold_is_perfgates(old) and fresh.calibration is not None:
        # The bound the new runs calibrated, where it lets the new median move no further
        # than the one in force (as the writer, perfgate.lifecycle.edit, decides it too).
        in_force = merged_bounds(old.definition, old, baseline).threshold
        proposed = merged_bounds(
            fresh.definition, replace(old, threshold=fresh.threshold), baseline
        )
        if _allowance(proposed.threshold.relative, proposed.threshold.absolute, new) <= (
            _allowance(in_force.relative, in_force.absolute, new)
        ):
            options.insert(0, (fresh.threshold, fresh.calibration))
    before = passing_range(old, baseline)
    best: tuple[float, MetricBaseline] | None = None
    for threshold, calibration in options:
        lo, hi = new_low, new_high
        if calibration is None or threshold is None:
            # Judged from the range's worse edge: that edge plus the bound's allowance at the
            # new median (larger, for a value that is better when higher) stays inside.
            bound = merged_bounds(old.definition, replace(old, threshold=threshold), baseline)
            allow = _allowance(bound.threshold.relative, bound.threshold.absolute, new)
            if direction is Direction.HIGHER_IS_WORSE:
                hi = min(hi, before[1] - allow)
            else:
                lo = max(lo, before[0] + allow)
            if not lo <= new <= hi:
                continue
        candidate = replace(
            old, value=new, low=lo, high=hi, threshold=threshold, calibration=calibration
        )
        after = passing_range(candidate, baseline)
        if not _within(after, before):
            continue
        # The worse side's edge: the lower, the tighter (higher is better: the higher).
        edge = after[1] if direction is Direction.HIGHER_IS_WORSE else -after[0]
        if best is None or edge < best[0]:
            best = (edge, candidate)
    return best[1] if best is not None else None


def _ratchet_edit(
    baseline: Baseline, verdict: KernelVerdict, entry: KernelBaseline, kernel: KernelBaseline
) -> tuple[KernelEdit | None, list[str]]:
    """The ratchet's edit of one kernel that improved: each improved metric tightened
    (ratcheted_metric), its entry otherwise as the file has it (match, launches, info)."""
    better = [c.metric for c in verdict.comparisons if c.state is State.IMPROVED]
    olds = {m.name: m for m in entry.metrics}
    news = {m.name: m for m in kernel.metrics}
    taken: list[MetricBaseline] = []
    skipped: list[str] = []
    for name in better:
        old, fresh = olds.get(name), news.get(name)
        tightened = ratcheted_metric(baseline, old, fresh) if old and fresh else None
        if tightened is None:
            skipped.append(name)
        else:
            taken.append(tightened)
    left = []
    if skipped:
        left.append(
            f"{verdict.kernel}: {', '.join(skipped)} improved, but taking "
            f"{'it' if len(skipped) == 1 else 'them'} would widen a bound or range; the "
            "ratchet leaves them as they were"
        )
    if not taken:
        return None, left
    edit = KernelEdit(
        verdict.kernel,
        Action.RATCHET,
        replace(entry, metrics=tuple(taken), history=()),
        tuple(m.name for m in taken),
        {m.name: olds[m.name].value for m in taken},
        verdict.state,
    )
    return edit, left


def _ratcheted_program(
    baseline: Baseline, fresh: ProgramBaseline | None, result: CheckResult
) -> ProgramBaseline | None:
    """The program time the ratchet writes: where it improved beyond its bound and no kernel
    fails (a faster total beside a regressed or missing kernel is the other side of that
    change), the faster value with the tighter of the two bounds; a baseline without one gets
    the fresh one."""
    old, verdict = baseline.program, result.program
    if fresh is None or any(failing(v.state) for v in result.verdicts):
        return None
    if old is None:
        return fresh
    if verdict is None or verdict.state is not KernelState.IMPROVED or fresh.value >= old.value:
        return None
    if fresh.relative <= old.relative:
        return fresh
    return replace(fresh, relative=old.relative, calibration=old.calibration)


def _other_captures(other_scope: str, other_basis: str) -> str:
    return "; ".join(x for x in (other_scope, other_basis) if x)


def _improved(verdict: KernelVerdict) -> bool:
    return any(c.state is State.IMPROVED for c in verdict.comparisons)


def _ratchet_kernels(
    baseline: Baseline, result: CheckResult, fresh: Mapping[str, KernelBaseline]
) -> tuple[list[KernelEdit], list[str]]:
    """The ratchet's edit of each kernel that improved, from `fresh` (the improved kernels
    recorded from the captures), and what it leaves, with why."""
    entries = {k.id: k for k in baseline.kernels}
    edits: list[KernelEdit] = []
    left: list[str] = []
    for verdict in result.verdicts:
        if verdict.state is KernelState.NEW:
            continue
        if verdict.state is KernelState.MISSING:
            left.append(f"{verdict.kernel}: not in the captures; kept as it was")
            continue
        if verdict.state is KernelState.REGRESSED:
            # Its improvements may be the other side of a trade-off: taking them alone
            # would leave a baseline its own build fails.
            left.append(f"{verdict.kernel}: regressed; the ratchet leaves it as it was")
            continue
        if verdict.matched_by == SPLIT:
            # One work class's values are not the kernel's: nothing to tighten from.
            left.append(
                f"{verdict.kernel}: its launches split into work classes the baseline "
                "does not have; the ratchet leaves it as it was"
            )
            continue
        if not _improved(verdict):
            continue  # nothing beyond its bound the better way: nothing to take
        kernel = fresh.get(verdict.kernel)
        if kernel is None:
            left.append(f"{verdict.kernel}: not in the captures; kept as it was")
            continue
        edit, kept = _ratchet_edit(baseline, verdict, entries[verdict.kernel], kernel)
        left.extend(kept)
        if edit is not None:
            edits.append(edit)
    return edits, left


def plan_ratchet(
    baseline: Baseline,
    capture: Capture,
    reason: str | None = None,
    when: Stamp | None = None,
    judged: CheckResult | None = None,
) -> EditPlan:
    """`update --ratchet` (the module's text): the improved metrics of kernels that did not
    regress, tightened, and the program time where it improved and no kernel fails.

    `judged`: the check of `capture` against `baseline` as this function makes it (the
    file's own bounds, no waiver), where the caller has it already. perfgate check's
    suggestion to ratchet is this plan, so it names what the ratchet takes and nothing else.
    Only the kernels that improved are recorded afresh: the ratchet takes nothing else."""
    capture, other_scope, other_basis = _for_gpu(baseline, capture)
    result = judged or check(
        baseline,
        capture,
        CheckSettings(report_new_kernels=True, other_scope=other_scope, other_basis=other_basis),
    )
    if other_scope or other_basis:
        # Values of another scope (other launches) or capture type (another metric set: its
        # durations and DRAM bytes differ) are never the baseline's to tighten from.
        why = _other_captures(other_scope, other_basis)
        return EditPlan((), None, (f"nothing ratcheted: {why}",), result, None)
    only = frozenset(v.kernel for v in result.verdicts if _improved(v))
    _, fresh, _, _ = _fresh(baseline, capture, only=only, judged=result)
    edits, left = _ratchet_kernels(baseline, result, fresh)
    program = _ratcheted_program(baseline, record_program(capture), result)
    written = _program_taken(baseline, program, Action.RATCHET, reason, when) if program else None
    return EditPlan(
        tuple(edits),
        None,
        tuple(left),
        result,
        written,
        Action.RATCHET if written is not None else None,
    )


def ratchet_takes(plan: EditPlan) -> RatchetTakes:
    """What a ratchet plan tightens, for a report to name."""
    kernels = tuple((e.kernel, e.metrics) for e in plan.edits if e.action is Action.RATCHET)
    return RatchetTakes(kernels, plan.program is not None)


def plan_update(
    baseline: Baseline,
    capture: Capture,
    ratchet: bool = False,
    take_regressions: bool = False,
    add_new: bool = True,
    reason: str | None = None,
    when: Stamp | None = None,
) -> EditPlan:
    """Every kernel of the captures re-recorded; see the module's text for what is kept.
    `reason` and `when`: for the program's history. `ratchet`: plan_ratchet."""
    if ratchet:
        return plan_ratchet(baseline, capture, reason, when)
    capture, other_scope, other_basis = _for_gpu(baseline, capture)
    if baseline.gpu.scope is None:
        # A baseline of unknown scope (recorded before scopes were kept) is re-recorded whole
        # by an update, launch counts and the captures' scope with them.
        other_scope = ""
    result, fresh, added, classes = _fresh(baseline, capture, other_scope, other_basis)
    edits: list[KernelEdit] = []
    left: list[str] = []
    for verdict in result.verdicts:
        if verdict.state is KernelState.NEW:
            continue
        kernel = fresh.get(verdict.kernel)
        if verdict.state is KernelState.MISSING or kernel is None:
            left.append(f"{verdict.kernel}: not in the captures; kept as it was")
            continue
        regressed = verdict.state is KernelState.REGRESSED
        if regressed and not take_regressions:
            left.append(
                f"{verdict.kernel}: regressed; left as it was (give --reason to take it, or "
                "perfgate baseline accept)"
            )
            continue
        edits.append(_taken(verdict, Action.ACCEPT if regressed else Action.UPDATE, kernel))
        edits.extend(_added(classes.get(verdict.kernel, ())))
    if add_new:
        edits.extend(_added(added))
    fingerprint = capture_fingerprint(capture, baseline.kernels, capture.launches)[0]
    if fingerprint is not None and other_scope:
        # The launch counts were not taken: the baseline's stay, and with them its scope.
        fingerprint = replace(fingerprint, scope=baseline.gpu.scope)
    if fingerprint is not None and other_basis:
        # The durations were not taken: the baseline's stay, and with them its time basis.
        fingerprint = replace(fingerprint, time_basis=baseline.gpu.time_basis)
    fresh_program = record_program(capture) if not (other_scope or other_basis) else None
    judged = result.program
    program: ProgramBaseline | None = None
    action = Action.UPDATE
    if fresh_program is not None:
        if judged is not None and judged.state is KernelState.REGRESSED:
            if take_regressions:
                program, action = fresh_program, Action.ACCEPT
            else:
                left.append(
                    f"{PROGRAM}: regressed{_program_change(judged)}; left as it was (give "
                    "--reason to take it, or perfgate baseline accept --program)"
                )
        else:
            program = fresh_program
    written = _program_taken(baseline, program, action, reason, when) if program else None
    return EditPlan(
        tuple(edits),
        fingerprint,
        tuple(left),
        result,
        written,
        action if written is not None else None,
    )
