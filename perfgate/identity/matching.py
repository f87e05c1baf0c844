"""Matching a baseline's kernels to the kernel groups of a capture.

The order of trust: the exact name and launch shape; then, for entries still unmatched, the
normalised name at the same shape where exactly one entry and one group are left (a renumbered
lambda or Inductor kernel); then what is left is missing or new, and each missing kernel is
paired with the new kernels that took its place: the same library family first, else the
kernels that now run where it ran (between the baselined kernels launched before and after it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.identity.families import family_of
from perfgate.identity.grouping import KernelGroup, log_distance
from perfgate.ingest.launches import Launch
from perfgate.ingest.names import normalise


@dataclass
class Matching:
    """Which groups each baseline entry took, and how."""

    groups: dict[str, list[KernelGroup]] = field(default_factory=dict)  # kernel id -> groups
    how: dict[str, str] = field(default_factory=dict)  # kernel id -> "name", "renamed ...", ...
    unclaimed: list[KernelGroup] = field(default_factory=list)
    # missing kernel id -> the new groups that took its place, and why they are named
    replaced_by: dict[str, tuple[list[KernelGroup], str]] = field(default_factory=dict)

    def launches(self, kernel: str) -> list[Launch]:
        return sorted(
            (la for g in self.groups.get(kernel, []) for la in g.launches), key=lambda la: la.index
        )


def _same_shape(entry: KernelBaseline, group: KernelGroup, by_nvtx: bool) -> bool:
    m, k = entry.match, group.key
    if m.grid is not None and m.grid != k.grid:
        return False
    if m.block is not None and m.block != k.block:
        return False
    return not (by_nvtx and m.nvtx != k.nvtx)


def _pick_work(entry: KernelBaseline, candidates: list[KernelGroup]) -> KernelGroup:
    """Of one name and shape split by work, the class the entry recorded."""
    if entry.match.work is not None:
        for group in candidates:
            if group.key.work == entry.match.work:
                return group
    recorded = entry.value("instructions_executed")
    if isinstance(recorded, float):
        return min(candidates, key=lambda g: log_distance(g.instructions or 0.0, recorded))
    return candidates[0]


def match(baseline: Baseline, groups: Sequence[KernelGroup]) -> Matching:
    result = Matching()
    claimed: set[int] = set()
    by_nvtx = baseline.by_nvtx
    pending: list[KernelBaseline] = []
    # Group indices by name, in order: a baseline of K kernels costs K lookups, not K x groups.
    by_name: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        by_name.setdefault(group.key.name, []).append(i)
    for entry in baseline.kernels:
        if entry.match.explicit:
            # function or regex: an explicit choice to pool every launch that fits.
            taken = []
            for i, group in enumerate(groups):
                if all(entry.match.matches(la) for la in group.launches[:1]):
                    taken.append(group)
                    claimed.add(i)
            if taken:
                result.groups[entry.id] = taken
                result.how[entry.id] = "regex" if entry.match.regex else "function"
            continue
        candidates = [
            (i, groups[i])
            for i in by_name.get(entry.match.name or "", ())
            if i not in claimed and _same_shape(entry, groups[i], by_nvtx)
        ]
        if not candidates:
            pending.append(entry)
            continue
        chosen = _pick_work(entry, [g for _, g in candidates])
        index = next(i for i, g in candidates if g is chosen)
        claimed.add(index)
        result.groups[entry.id] = [chosen]
        result.how[entry.id] = "name"
    # Renamed: the normalised name at the same shape, one entry to one group only.
    still: list[KernelBaseline] = []
    for entry in pending:
        norm = normalise(entry.match.name or "")
        rivals = [e for e in pending if normalise(e.match.name or "") == norm]
        candidates = [
            (i, g)
            for i, g in enumerate(groups)
            if i not in claimed and g.key.normalised == norm and _same_shape(entry, g, by_nvtx)
        ]
        if len(rivals) == 1 and len(candidates) == 1:
            index, group = candidates[0]
            claimed.add(index)
            result.groups[entry.id] = [group]
            result.how[entry.id] = f"renamed: was {entry.match.name}"
        else:
            still.append(entry)
    # Reshaped: one entry and one group of a name left, at different launch shapes. The same
    # kernel launched differently (a vectorised version with a quarter of the blocks, a new
    # problem size): compare it and say the shape changed. With several of either left, a
    # shape is never guessed: they stay missing and new.
    missing: list[KernelBaseline] = []
    for entry in still:
        norm = normalise(entry.match.name or "")
        rivals = [e for e in still if normalise(e.match.name or "") == norm]
        candidates = [
            (i, g) for i, g in enumerate(groups) if i not in claimed and g.key.normalised == norm
        ]
        if len(rivals) == 1 and len(candidates) == 1:
            index, group = candidates[0]
            claimed.add(index)
            result.groups[entry.id] = [group]
            result.how[entry.id] = (
                f"reshaped: grid {entry.match.grid} block {entry.match.block} -> "
                f"grid {group.key.grid} block {group.key.block}"
            )
        else:
            missing.append(entry)
    result.unclaimed = [g for i, g in enumerate(groups) if i not in claimed]
    _pair_replacements(baseline, missing, result)
    return result


def _position(launches: Sequence[Launch], source: str) -> int | None:
    """Where a kernel first ran in one capture file (launch IDs restart in every file)."""
    return min((la.index for la in launches if la.source == source), default=None)


def _first_index(result: Matching, kernel: str, source: str) -> int | None:
    return _position(result.launches(kernel), source)


def _pair_replacements(baseline: Baseline, missing: list[KernelBaseline], result: Matching) -> None:
    order = [k.id for k in baseline.kernels]
    source = result.unclaimed[0].launches[0].source if result.unclaimed else ""
    for entry in missing:
        name = entry.name or entry.match.name or ""
        same_name = [g for g in result.unclaimed if normalise(g.key.name) == normalise(name)]
        if same_name:
            result.replaced_by[entry.id] = (same_name, "the same kernel at another launch shape")
            continue
        family = family_of(name)
        if family is not None:
            kin = [g for g in result.unclaimed if family_of(g.key.name) == family]
            if kin:
                result.replaced_by[entry.id] = (kin, f"another {family.name} kernel")
                continue
        # What now runs where it ran: between the nearest matched neighbours in launch order.
        at = order.index(entry.id)
        before = next(
            (i for k in reversed(order[:at]) if (i := _first_index(result, k, source)) is not None),
            -1,
        )
        after = next(
            (i for k in order[at + 1 :] if (i := _first_index(result, k, source)) is not None),
            None,
        )
        window = [
            g
            for g in result.unclaimed
            if (p := _position(g.launches, source)) is not None
            and p > before
            and (after is None or p < after)
        ]
        if window and (before >= 0 or after is not None):
            result.replaced_by[entry.id] = (window, "launched where it used to run")
