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

This module plans accept and update; the ratchet's plan is perfgate.lifecycle.ratchet,
the plan's model and history perfgate.lifecycle.editplan, the captures recorded afresh
perfgate.lifecycle.fresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perfgate.baseline.model import Baseline, KernelBaseline, ProgramBaseline
from perfgate.common import patterns as user_patterns
from perfgate.common.errors import UsageError
from perfgate.ingest.launches import Capture
from perfgate.judge.comparison import State
from perfgate.judge.policy import acceptable
from perfgate.judge.states import KernelState
from perfgate.lifecycle.editplan import PROGRAM, Action, EditPlan, KernelEdit, program_taken
from perfgate.lifecycle.fresh import for_gpu, record_fresh
from perfgate.lifecycle.program import record_program
from perfgate.lifecycle.ratchet import plan_ratchet, ratchet_takes
from perfgate.lifecycle.record import capture_fingerprint
from perfgate.lifecycle.stamps import Stamp, stamp
from perfgate.verdicts.model import CheckResult, KernelVerdict, ProgramVerdict

# What the use cases import from here: the plans and what they are made of.
__all__ = [
    "EditPlan",
    "Stamp",
    "plan_accept",
    "plan_ratchet",
    "plan_update",
    "ratchet_takes",
    "stamp",
]


def _moved(verdict: KernelVerdict) -> dict[str, float | str]:
    """The baseline values of the comparisons that moved beyond their bound."""
    out: dict[str, float | str] = {}
    for c in verdict.comparisons:
        if c.state in (State.REGRESSED, State.IMPROVED) and c.baseline is not None:
            out[c.metric] = c.baseline
    return out


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


def _program_change(verdict: ProgramVerdict | None) -> str:
    change = verdict.change if verdict is not None else None
    return f" ({change:+.1%})" if change is not None else ""


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
    capture, other_scope, other_basis = for_gpu(baseline, capture)
    result, fresh, added, classes = record_fresh(baseline, capture, other_scope, other_basis)
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
        program_taken(baseline, taken, action, reason, when) if taken is not None else None
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
    capture, other_scope, other_basis = for_gpu(baseline, capture)
    if baseline.gpu.scope is None:
        # A baseline of unknown scope (recorded before scopes were kept) is re-recorded whole
        # by an update, launch counts and the captures' scope with them.
        other_scope = ""
    result, fresh, added, classes = record_fresh(baseline, capture, other_scope, other_basis)
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
    written = program_taken(baseline, program, action, reason, when) if program else None
    return EditPlan(
        tuple(edits),
        fingerprint,
        tuple(left),
        result,
        written,
        action if written is not None else None,
    )
