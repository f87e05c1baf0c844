"""How a baseline changes over its life, decided on plain data: which kernels take new values
from new captures, which values they replace, and what stays as people wrote it.

- `accept`: the named kernels (default: those that regressed or went missing) take the new
  values, with a reason; their previous values go into the entry's history.
- `update`: every kernel is re-recorded from new captures. A kernel that regressed is only
  taken with a reason (then it is accepted like above); kernels new in the capture are added.
- `update --ratchet`: only what improved beyond its bound takes the new value, and a bound
  only ever tightens: safe to run unattended on the main branch after a merge.

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
from perfgate.judge.comparison import State
from perfgate.judge.policy import acceptable
from perfgate.judge.states import KernelState
from perfgate.lifecycle.calibrate import floor_for
from perfgate.lifecycle.program import record_program
from perfgate.lifecycle.record import capture_fingerprint, record_kernel
from perfgate.metrics.catalog import default_metrics
from perfgate.metrics.thresholds import ThresholdOverride
from perfgate.verdicts.check import SCOPED_METRICS, TIME_METRICS, CheckSettings, check
from perfgate.verdicts.model import CheckResult, KernelVerdict

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
    # The whole-program GPU time to write (None: the file's stays). Accepting or updating
    # takes the captured build as the new normal, the program's time included; the ratchet
    # takes it only where it got faster.
    program: ProgramBaseline | None = None


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
    baseline: Baseline, capture: Capture, other_scope: str = "", other_basis: str = ""
) -> tuple[CheckResult, dict[str, KernelBaseline], list[KernelBaseline], _Classes]:
    """The check of the captures against the baseline, each baselined kernel recorded afresh
    from the launches the check gave it (with the metrics the file gates for it), and the
    kernels new to the baseline recorded with the default set. A baselined kernel whose
    launches split into work classes its entry does not have is recorded as the class nearest
    its recorded work (its match gets `work:`), and its other classes as entries of their own,
    taken with it (never pooled: the next check would split them again)."""
    result = check(
        baseline,
        capture,
        CheckSettings(report_new_kernels=True, other_scope=other_scope, other_basis=other_basis),
    )
    dropped = _dropped(other_scope, other_basis)
    groups = group_launches(capture.launches, by_nvtx=baseline.by_nvtx)
    matching = match(baseline, groups)
    fresh: dict[str, KernelBaseline] = {}
    others: list[tuple[KernelBaseline, KernelGroup]] = []
    for entry in baseline.kernels:
        found = matching.groups.get(entry.id) or []
        if not found:
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
    for group in matching.unclaimed:
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
        out.update(TIME_METRICS)
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


def plan_accept(
    baseline: Baseline, capture: Capture, patterns: Sequence[str] = (), add_new: bool = False
) -> EditPlan:
    """The kernels named by `patterns` (regexes over id and name), or by default every kernel
    that regressed or went missing, take the values of the captures."""
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
    if not edits:
        what = "named by --kernel" if patterns else "that regressed or went missing"
        raise UsageError(
            f"no kernel {what}: nothing to accept (perfgate check shows what changed)",
            baseline.path,
        )
    # A sum over launches of their durations: of another scope or time basis, not taken.
    program = record_program(capture) if not (other_scope or other_basis) else None
    return EditPlan(tuple(edits), None, tuple(left), result, program)


def _ratcheted(baseline: Baseline, fresh: ProgramBaseline | None) -> ProgramBaseline | None:
    old = baseline.program
    return fresh if fresh is not None and (old is None or fresh.value < old.value) else None


def plan_update(
    baseline: Baseline,
    capture: Capture,
    ratchet: bool = False,
    take_regressions: bool = False,
    add_new: bool = True,
) -> EditPlan:
    """Every kernel of the captures re-recorded; see the module's text for what is kept."""
    capture, other_scope, other_basis = _for_gpu(baseline, capture)
    if not ratchet and baseline.gpu.scope is None:
        # A baseline of unknown scope (recorded before scopes were kept) is re-recorded whole
        # by an update, launch counts and the captures' scope with them. A ratchet takes only
        # improvements, and fewer launches of another scope are none.
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
        if ratchet:
            better = tuple(c.metric for c in verdict.comparisons if c.state is State.IMPROVED)
            if regressed:
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
            if better:
                edits.append(
                    KernelEdit(
                        verdict.kernel,
                        Action.RATCHET,
                        kernel,
                        better,
                        {m: v for m, v in _moved(verdict).items() if m in better},
                        verdict.state,
                    )
                )
            continue
        if regressed and not take_regressions:
            left.append(
                f"{verdict.kernel}: regressed; left as it was (give --reason to take it, or "
                "perfgate baseline accept)"
            )
            continue
        edits.append(_taken(verdict, Action.ACCEPT if regressed else Action.UPDATE, kernel))
        edits.extend(_added(classes.get(verdict.kernel, ())))
    if add_new and not ratchet:
        edits.extend(_added(added))
    fingerprint = (
        None if ratchet else capture_fingerprint(capture, baseline.kernels, capture.launches)[0]
    )
    if fingerprint is not None and other_scope:
        # The launch counts were not taken: the baseline's stay, and with them its scope.
        fingerprint = replace(fingerprint, scope=baseline.gpu.scope)
    if fingerprint is not None and other_basis:
        # The durations were not taken: the baseline's stay, and with them its time basis.
        fingerprint = replace(fingerprint, time_basis=baseline.gpu.time_basis)
    fresh_program = record_program(capture) if not (other_scope or other_basis) else None
    program = _ratcheted(baseline, fresh_program) if ratchet else fresh_program
    return EditPlan(tuple(edits), fingerprint, tuple(left), result, program)
