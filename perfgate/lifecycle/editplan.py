"""An edit plan (perfgate.lifecycle.plan, perfgate.lifecycle.ratchet): the kernels it edits
and how, the program time it writes, and the history entries that name each change."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from perfgate.baseline.fingerprint import Fingerprint
from perfgate.baseline.model import Baseline, HistoryEntry, KernelBaseline, ProgramBaseline
from perfgate.judge.states import KernelState
from perfgate.lifecycle.stamps import Stamp, stamp
from perfgate.verdicts.model import CheckResult

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


def history_entry(edit: KernelEdit, reason: str, when: Stamp) -> HistoryEntry:
    return HistoryEntry(
        date=when.date, reason=reason, by=when.by, action=edit.action.value, previous=edit.previous
    )


PROGRAM = "program GPU time"
PROGRAM_KEY = "gpu_time"  # the program time's key in a history entry's `previous`
RATCHET_REASON = "improved beyond its bound (perfgate baseline update --ratchet)"


def program_taken(
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
