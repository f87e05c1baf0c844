"""Matching a baseline's kernels to the kernel groups of a capture.

The order of trust: the exact name and launch shape; then, for entries still unmatched, the
normalised name at the same shape where exactly one entry and one group are left (a renumbered
lambda or Inductor kernel); then, where one entry and one group of a normalised name are still
left, the same kernel at another launch shape. What is left is missing or new, and each
missing kernel is paired with the new kernels that took its place: itself at other shapes,
else the same library family, else the kernels that now run where it ran (between the
baselined kernels launched before and after it).
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from perfgate.baseline.model import Baseline, KernelBaseline
from perfgate.identity.configs import (
    configurations,
    describe_change,
    describe_reconfig,
    median_traffic,
    recorded_traffic,
    sized_groups,
)
from perfgate.identity.families import family_of
from perfgate.identity.grouping import (
    WORK_GAP,
    KernelGroup,
    KernelKey,
    log_distance,
    pair_work_classes,
)
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


def recorded_work(entry: KernelBaseline) -> float | None:
    """The work an entry recorded: its instruction count (gated or in `info`), the measure
    work classes are split by (perfgate.identity.grouping.WORK_METRIC)."""
    value = entry.value("instructions_executed")
    return float(value) if isinstance(value, float | int) and value > 0 else None


def pick_work(entry: KernelBaseline, candidates: list[KernelGroup]) -> KernelGroup:
    """Of one name and shape split by work, the class nearest the entry's recorded work; by
    the class number only where no work was recorded (the number follows size, so one new
    smaller class renumbers the others)."""
    recorded = recorded_work(entry)
    if recorded is not None:
        return min(candidates, key=lambda g: log_distance(g.instructions or 0.0, recorded))
    if entry.match.work is not None:
        for group in candidates:
            if group.key.work == entry.match.work:
                return group
    return candidates[0]


def _identity(entry: KernelBaseline, by_nvtx: bool) -> tuple[object, ...]:
    m = entry.match
    return (m.name, m.grid, m.block, m.nvtx if by_nvtx else None)


def _work_pairs(
    entries: Sequence[KernelBaseline],
    groups: Sequence[KernelGroup],
    by_name: dict[str, list[int]],
    by_nvtx: bool,
) -> dict[str, int | None]:
    """Entry id -> group index (None: no class is this one) for every entry recorded as a work
    class (`work:` in its match): the entries of one name and shape are paired with that name
    and shape's groups by their work (perfgate.identity.grouping.pair_work_classes), never by
    the class number, which follows size and is renumbered by one new smaller class."""
    classes: dict[tuple[object, ...], list[KernelBaseline]] = {}
    for entry in entries:
        if entry.match.work is not None and not entry.match.explicit and not entry.tuned:
            classes.setdefault(_identity(entry, by_nvtx), []).append(entry)
    out: dict[str, int | None] = {}
    for members in classes.values():
        first = members[0]
        present = [
            i
            for i in by_name.get(first.match.name or "", ())
            if _same_shape(first, groups[i], by_nvtx)
        ]
        recorded = [recorded_work(e) for e in members]
        out.update(
            _paired(members, present, groups, recorded, [groups[i].instructions for i in present])
        )
    return out


def _paired(
    members: Sequence[KernelBaseline],
    present: Sequence[int],
    groups: Sequence[KernelGroup],
    recorded: Sequence[float | None],
    current: Sequence[float | None],
) -> dict[str, int | None]:
    """Entry id -> group index of one name's entries and groups, paired by a measure of their
    work (pair_work_classes); with no measure on a side, by the class number, the only thing
    left to go by (an unsplit group, a capture without the counts, is the first class's)."""
    pairs = pair_work_classes(recorded, current)
    if pairs is None:
        numbered = {groups[i].key.work or 1: i for i in reversed(present)}
        pairs = {
            r: present.index(numbered[e.match.work or 0])
            for r, e in enumerate(members)
            if (e.match.work or 0) in numbered
        }
    return {entry.id: present[pairs[r]] if r in pairs else None for r, entry in enumerate(members)}


def _sized(entry: KernelBaseline) -> bool:
    """One problem size of an autotuned kernel (perfgate.identity.configs.sized_groups)."""
    return entry.tuned and entry.match.work is not None and not entry.match.explicit


def _by_size(baseline: Baseline, groups: Sequence[KernelGroup]) -> list[KernelGroup]:
    """The groups with the launches of each kernel the baseline recorded by problem size (an
    autotuned kernel at several sizes) split by size as recording split them, whatever grid
    and block each launch ran at, in order of first launch."""
    nvtx = baseline.by_nvtx
    names = {(e.match.name, e.match.nvtx if nvtx else None) for e in baseline.kernels if _sized(e)}
    if not names:
        return list(groups)
    pooled: dict[tuple[str | None, str | None], list[Launch]] = {}
    out: list[KernelGroup] = []
    for group in groups:
        identity = (group.key.name, group.key.nvtx if nvtx else None)
        if identity in names:
            pooled.setdefault(identity, []).extend(group.launches)
        else:
            out.append(group)
    for (name, range_), launches in pooled.items():
        out.extend(sized_groups(KernelKey(name or "", None, None, range_), launches))
    return sorted(out, key=lambda g: min(la.index for la in g.launches))


def _size_pairs(
    entries: Sequence[KernelBaseline],
    groups: Sequence[KernelGroup],
    by_name: dict[str, list[int]],
    by_nvtx: bool,
) -> dict[str, int | None]:
    """Entry id -> group index (None: no size is this one) for every problem size of an
    autotuned kernel: paired with the sizes of the capture by their traffic
    (perfgate.identity.configs.traffic), as work classes are by their instructions, so each
    size's choices are judged against that size's best configuration."""
    sizes: dict[tuple[object, ...], list[KernelBaseline]] = {}
    for entry in entries:
        if _sized(entry):
            sizes.setdefault(_identity(entry, by_nvtx), []).append(entry)
    out: dict[str, int | None] = {}
    for members in sizes.values():
        first = members[0]
        present = [
            i
            for i in by_name.get(first.match.name or "", ())
            if not (by_nvtx and groups[i].key.nvtx != first.match.nvtx)
        ]
        recorded = [recorded_traffic(e) for e in members]
        current = [median_traffic(groups[i].launches) for i in present]
        out.update(_paired(members, present, groups, recorded, current))
    return out


def _other_class(entry: KernelBaseline, group: KernelGroup, by_nvtx: bool) -> bool:
    """A group of a work-class entry's own name and shape that the pairing by work did not
    give it: another class of the kernel (new), never the entry "renamed" or "reshaped"."""
    return (
        entry.match.work is not None
        and group.key.name == entry.match.name
        and _same_shape(entry, group, by_nvtx)
    )


# How an entry's launches were found when they fall into work classes its entry does not have.
SPLIT = "split"
# Why a missing work class is paired with new classes of its own name and shape.
OTHER_WORK = "the same kernel at its launch shape with other work"


def _split(
    entry: KernelBaseline, chosen: KernelGroup, others: list[int], groups: Sequence[KernelGroup]
) -> list[int]:
    """Where an entry without a work class finds its name and shape split by work, the group
    indices of every class of that shape (the chosen one's included); else nothing."""
    if entry.match.work is not None or chosen.key.work is None:
        return []
    key = chosen.key
    same = [
        i
        for i in others
        if (groups[i].key.name, groups[i].key.grid, groups[i].key.block, groups[i].key.nvtx)
        == (key.name, key.grid, key.block, key.nvtx)
        and groups[i].key.work is not None
    ]
    if not same:
        return []
    return [next(i for i, g in enumerate(groups) if g is chosen), *same]


def _tuned(entry: KernelBaseline, chosen: list[KernelGroup]) -> tuple[list[KernelGroup], str]:
    """An autotuned entry's groups, and "autotuned", or where the configuration is not the
    one most recorded runs used, what it changed from and to."""
    now = configurations([la for g in chosen for la in g.launches])
    return chosen, describe_change(entry.configurations, now) or "autotuned"


def _pooled(entry: KernelBaseline, groups: Sequence[KernelGroup]) -> list[int]:
    """An explicit match (a function or a regex) is a choice to pool every launch that fits:
    each group whose first launch it matches, whichever pass or entry took the group too."""
    return [
        i
        for i, group in enumerate(groups)
        if all(entry.match.matches(la) for la in group.launches[:1])
    ]


@dataclass(frozen=True)
class _Pass:
    """What one pass decided: entry id -> (its groups, how they were matched) in baseline
    order, every group index claimed so far, and the entries left to the next pass."""

    taken: dict[str, tuple[list[KernelGroup], str]]
    claimed: frozenset[int]
    left: list[KernelBaseline]


def _by_name(
    entries: Sequence[KernelBaseline], groups: Sequence[KernelGroup], by_nvtx: bool
) -> _Pass:
    """Pass 1, the exact name and launch shape: each entry takes the first group still
    unclaimed of its name and shape; an entry recorded as a work class, the class of its name
    and shape whose work is nearest its own (_work_pairs), else none (missing, never renamed
    or reshaped into another class of its kernel). An explicit entry (function or regex) pools
    every group it matches, and is never left to a later pass."""
    taken: dict[str, tuple[list[KernelGroup], str]] = {}
    claimed: set[int] = set()
    left: list[KernelBaseline] = []
    # Group indices by name, in order: a baseline of K kernels costs K lookups, not K x groups.
    by_name: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        by_name.setdefault(group.key.name, []).append(i)
    paired = _work_pairs(entries, groups, by_name, by_nvtx)
    sized = _size_pairs(entries, groups, by_name, by_nvtx)
    # Held for their entries: no entry of another identity takes a class paired by work.
    claimed.update(i for i in (*paired.values(), *sized.values()) if i is not None)
    for entry in entries:
        if entry.id in sized:
            size = sized[entry.id]
            if size is None:
                left.append(entry)
            else:
                taken[entry.id] = _tuned(entry, [groups[size]])
            continue
        if entry.id in paired:
            index = paired[entry.id]
            if index is None:
                left.append(entry)
            else:
                taken[entry.id] = ([groups[index]], "name")
            continue
        if entry.match.explicit:
            pooled = _pooled(entry, groups)
            claimed.update(pooled)
            if pooled:
                how = "regex" if entry.match.regex else "function"
                taken[entry.id] = ([groups[i] for i in pooled], how)
            continue
        candidates = [
            i
            for i in by_name.get(entry.match.name or "", ())
            if i not in claimed and _same_shape(entry, groups[i], by_nvtx)
        ]
        if candidates and entry.tuned:
            # An autotuned kernel is every launch of its name, at whichever configuration.
            claimed.update(candidates)
            taken[entry.id] = _tuned(entry, [groups[i] for i in candidates])
            continue
        if not candidates:
            left.append(entry)
            continue
        chosen = pick_work(entry, [groups[i] for i in candidates])
        split = _split(entry, chosen, [i for i in candidates if groups[i] is not chosen], groups)
        if split:
            # Launches of one identity the baseline recorded as one kernel: every work class
            # stays its kernel, judged against its entry (verdicts.check), never "new".
            claimed.update(split)
            classes = sorted((groups[i] for i in split), key=lambda g: g.key.work or 0)
            taken[entry.id] = (classes, f"{SPLIT}: {len(classes)} work classes")
            continue
        claimed.add(next(i for i in candidates if groups[i] is chosen))
        taken[entry.id] = ([chosen], "name")
    return _Pass(taken, frozenset(claimed), left)


def _index(
    groups: Sequence[KernelGroup], key: Callable[[KernelGroup], str]
) -> dict[str, list[int]]:
    """Group indices by a name, in order: a pass over K entries costs K lookups, not K x
    groups (100,000 kernel names took 27 s when each entry scanned every group; issue 23)."""
    out: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        out.setdefault(key(group), []).append(i)
    return out


def _one_to_one(
    entries: Sequence[KernelBaseline],
    groups: Sequence[KernelGroup],
    claimed: frozenset[int],
    fits: Callable[[KernelBaseline, KernelGroup], bool],
    how: Callable[[KernelBaseline, KernelGroup], str],
) -> _Pass:
    """Each entry whose normalised name no other of `entries` shares takes the one group
    still unclaimed of that normalised name that `fits` it; with several of either, nothing
    is guessed and the entry is left."""
    taken: dict[str, tuple[list[KernelGroup], str]] = {}
    now = set(claimed)
    left: list[KernelBaseline] = []
    rivals = Counter(normalise(e.match.name or "") for e in entries)
    by_norm = _index(groups, lambda g: g.key.normalised)
    for entry in entries:
        norm = normalise(entry.match.name or "")
        candidates = [i for i in by_norm.get(norm, ()) if i not in now and fits(entry, groups[i])]
        if rivals[norm] == 1 and len(candidates) == 1:
            index = candidates[0]
            now.add(index)
            taken[entry.id] = ([groups[index]], how(entry, groups[index]))
        else:
            left.append(entry)
    return _Pass(taken, frozenset(now), left)


def _tuned_renamed(
    entries: Sequence[KernelBaseline],
    groups: Sequence[KernelGroup],
    claimed: frozenset[int],
    by_nvtx: bool = False,
) -> _Pass:
    """Pass 1b, for entries that recorded their configuration (perfgate.identity.configs) and
    were not found at it by their exact name:
    - a fully gated Triton/Inductor entry (one configuration) takes the unclaimed groups of
      its exact name, else of its normalised name (renumbered by Inductor in another
      process), at another grid or block: "reconfigured" (not "missing" + "new");
    - an autotuned entry takes the unclaimed groups of its normalised name at any
      configuration (an Inductor kernel renumbered in another process).
    Only where it is the only such entry of that name and the groups share one exact name;
    otherwise it is left to the passes after (a renamed kernel at its own shape included)."""
    taken: dict[str, tuple[list[KernelGroup], str]] = {}
    now = set(claimed)
    left: list[KernelBaseline] = []
    rivals = Counter(normalise(e.match.name or "") for e in entries)
    exact_rivals = Counter(e.match.name or "" for e in entries)
    by_name = _index(groups, lambda g: g.key.name)
    by_norm = _index(groups, lambda g: g.key.normalised)
    for entry in entries:
        pinned = entry.pinned
        name = entry.match.name or ""
        norm = normalise(name)

        nvtx = entry.match.nvtx

        def free(indices: Sequence[int], nvtx: str | None = nvtx) -> list[int]:
            return [
                i for i in indices if i not in now and not (by_nvtx and groups[i].key.nvtx != nvtx)
            ]

        exact = free(by_name.get(name, ()))
        renamed = not exact
        candidates = exact or free(by_norm.get(norm, ()))
        names = {groups[i].key.name for i in candidates}
        moved = pinned is not None and all(
            (groups[i].key.grid, groups[i].key.block) != (pinned.grid, pinned.block)
            for i in candidates
        )
        wanted = (entry.tuned and renamed) or moved
        if not candidates or not wanted or len(names) != 1 or exact_rivals[name] != 1:
            left.append(entry)
            continue
        if renamed and rivals[norm] != 1:
            left.append(entry)
            continue
        now.update(candidates)
        chosen = [groups[i] for i in candidates]
        if pinned is not None:
            how = describe_reconfig(
                pinned, configurations([la for g in chosen for la in g.launches])
            )
        else:
            chosen, how = _tuned(entry, chosen)
        if renamed:
            # "renamed" first: reports and the diagnosis treat it as any renamed kernel.
            changed = "" if how == "autotuned" else f"; {how}"
            how = f"renamed: was {name}{changed}"
        taken[entry.id] = (chosen, how)
    return _Pass(taken, frozenset(now), left)


def _renamed(
    entries: Sequence[KernelBaseline],
    groups: Sequence[KernelGroup],
    claimed: frozenset[int],
    by_nvtx: bool,
) -> _Pass:
    """Pass 2, renamed: the normalised name at the same shape, one entry to one group (a
    renumbered lambda, Inductor or XLA kernel); where several entries or groups of one
    normalised name and shape are left, each pair whose work tells them apart
    (_renamed_by_work)."""

    def fits(entry: KernelBaseline, group: KernelGroup) -> bool:
        return _same_shape(entry, group, by_nvtx) and not _other_class(entry, group, by_nvtx)

    single = _one_to_one(
        entries, groups, claimed, fits, lambda entry, _: f"renamed: was {entry.match.name}"
    )
    return _renamed_by_work(single, groups, fits)


def _renamed_by_work(
    before: _Pass,
    groups: Sequence[KernelGroup],
    fits: Callable[[KernelBaseline, KernelGroup], bool],
) -> _Pass:
    """The entries a one-to-one renaming left, paired with the unclaimed groups of their
    normalised name and shape by their work (instructions), as work classes are: XLA numbers
    its fusions per module, so remat renumbered jax-train's gemm_fusion_dot_general_8 and _12
    to _10, _14 and _18 (fam-b/jax-remat), three groups for two entries of one normalised
    name, and no one-to-one rule can say which is which; their instruction counts can
    (15,466,496 and 15,450,112, each found again exactly). A pair is taken only where the
    group's work is within WORK_GAP of the entry's and no other group is as near (a tie is
    never guessed); an autotuned entry, whose instructions follow its configuration, is left."""
    taken = dict(before.taken)
    now = set(before.claimed)
    buckets: dict[tuple[object, ...], list[KernelBaseline]] = {}
    for entry in before.left:
        if recorded_work(entry) is not None and not entry.tuned and not entry.match.explicit:
            m = entry.match
            buckets.setdefault((normalise(m.name or ""), m.grid, m.block, m.nvtx), []).append(entry)
    if not buckets:
        return before
    by_norm = _index(groups, lambda g: g.key.normalised)
    for members in buckets.values():
        norm = normalise(members[0].match.name or "")
        present = [
            i
            for i in by_norm.get(norm, ())
            if i not in now and all(fits(e, groups[i]) for e in members[:1])
        ]
        recorded = [recorded_work(e) for e in members]
        current = [groups[i].instructions for i in present]
        pairs = pair_work_classes(recorded, current) if present else None
        for r, c in (pairs or {}).items():
            work, found = recorded[r] or 0.0, current[c] or 0.0
            near = log_distance(found, work)
            # A tie on either side (two groups as near the entry, two entries as near the
            # group) is two kernels the work cannot tell apart: nothing is guessed.
            groups_tied = sum(log_distance(w or 0.0, work) == near for w in current) > 1
            entries_tied = sum(log_distance(found, w or 0.0) == near for w in recorded) > 1
            if near > math.log(WORK_GAP) or groups_tied or entries_tied:
                continue
            now.add(present[c])
            taken[members[r].id] = ([groups[present[c]]], f"renamed: was {members[r].match.name}")
    left = [e for e in before.left if e.id not in taken]
    return _Pass(taken, frozenset(now), left)


def _reshaped(
    entries: Sequence[KernelBaseline], groups: Sequence[KernelGroup], claimed: frozenset[int]
) -> _Pass:
    """Pass 3, reshaped: one entry and one group of a normalised name left, at different
    launch shapes. The same kernel launched differently (a vectorised version with a quarter
    of the blocks, a new problem size): compare it and say the shape changed. With several
    of either left, a shape is never guessed: they stay missing and new."""
    return _one_to_one(
        entries,
        groups,
        claimed,
        lambda entry, group: not _other_class(entry, group, False),
        lambda entry, group: (
            f"reshaped: grid {entry.match.grid} block {entry.match.block} -> "
            f"grid {group.key.grid} block {group.key.block}"
        ),
    )


def match(baseline: Baseline, groups: Sequence[KernelGroup]) -> Matching:
    """The passes in their order of trust, each on what the one before left; then each
    entry still unmatched is missing, and is paired with the new groups that took its place.
    An autotuned kernel recorded by problem size has its launches split by size first."""
    groups = _by_size(baseline, groups)
    exact = _by_name(baseline.kernels, groups, baseline.by_nvtx)
    retuned = _tuned_renamed(exact.left, groups, exact.claimed, baseline.by_nvtx)
    renamed = _renamed(retuned.left, groups, retuned.claimed, baseline.by_nvtx)
    reshaped = _reshaped(renamed.left, groups, renamed.claimed)
    result = Matching()
    for taken in (exact.taken, retuned.taken, renamed.taken, reshaped.taken):
        for kernel, (matched, how) in taken.items():
            result.groups[kernel] = matched
            result.how[kernel] = how
    result.unclaimed = [g for i, g in enumerate(groups) if i not in reshaped.claimed]
    result.replaced_by = _replacements(baseline, reshaped.left, result)
    return result


def _position(launches: Sequence[Launch], source: str) -> int | None:
    """Where a kernel first ran in one capture file (launch IDs restart in every file)."""
    return min((la.index for la in launches if la.source == source), default=None)


class _Unclaimed:
    """The unclaimed groups indexed once by normalised name, family and first position, so
    that pairing each missing kernel with them costs no pass over all of them (a 2,000-kernel
    baseline with every kernel missing took 35 s when each pass was redone; issue 23). Each
    index is built when first needed."""

    def __init__(self, unclaimed: Sequence[KernelGroup], source: str) -> None:
        self.groups = list(unclaimed)
        self.source = source

    @functools.cached_property
    def by_name(self) -> dict[str, list[KernelGroup]]:
        out: dict[str, list[KernelGroup]] = {}
        for g in self.groups:
            out.setdefault(g.key.normalised, []).append(g)
        return out

    @functools.cached_property
    def by_family(self) -> dict[str, list[KernelGroup]]:
        out: dict[str, list[KernelGroup]] = {}
        for g in self.groups:
            family = family_of(g.key.name)
            if family is not None:
                out.setdefault(family.name, []).append(g)
        return out

    @functools.cached_property
    def placed(self) -> tuple[list[int], list[int]]:
        """The first positions in `source`, sorted, and the groups' indices in that order."""
        pairs = sorted(
            (p, n)
            for n, g in enumerate(self.groups)
            if (p := _position(g.launches, self.source)) is not None
        )
        return [p for p, _ in pairs], [n for _, n in pairs]

    def between(self, before: int, after: int | None) -> list[KernelGroup]:
        """The groups first launched after `before` and before `after`, in their order."""
        positions, order = self.placed
        lo = bisect.bisect_right(positions, before)
        hi = len(positions) if after is None else bisect.bisect_left(positions, after)
        return [self.groups[n] for n in sorted(order[lo:hi])]


def _same_kernel(name: str, unclaimed: _Unclaimed) -> list[KernelGroup]:
    """The new groups of the missing kernel's normalised name: itself at another shape."""
    return list(unclaimed.by_name.get(normalise(name), ()))


def _same_family(name: str, unclaimed: _Unclaimed) -> tuple[list[KernelGroup], str]:
    """The new groups of the missing kernel's library family, and why they are named: a
    library picks its kernel at run time, so another of its kernels is a substitution."""
    family = family_of(name)
    if family is None:
        return [], ""
    kin = list(unclaimed.by_family.get(family.name, ()))
    return kin, f"another {family.name} kernel"


def _neighbours(order: list[str], result: Matching, source: str) -> list[tuple[int, int | None]]:
    """Per baselined kernel, in order: where the nearest matched kernel baselined before it
    first ran in `source` (-1: none) and where the nearest one after it did (None: none)."""
    first = [_position(result.launches(k), source) for k in order]
    out: list[tuple[int, int | None]] = []
    before = -1
    for at in range(len(order)):
        out.append((before, None))
        if first[at] is not None:
            before = first[at]  # type: ignore[assignment]
    after: int | None = None
    for at in range(len(order) - 1, -1, -1):
        out[at] = (out[at][0], after)
        if first[at] is not None:
            after = first[at]
    return out


def _launched_where(around: tuple[int, int | None], unclaimed: _Unclaimed) -> list[KernelGroup]:
    """The new groups that now run where the missing kernel ran: after the nearest matched
    kernel baselined before it and before the nearest one after it, in the first capture
    file of the unclaimed groups. Nothing when it has no matched neighbour at all."""
    before, after = around
    if before < 0 and after is None:
        return []
    return unclaimed.between(before, after)


def _replacements(
    baseline: Baseline, missing: Sequence[KernelBaseline], result: Matching
) -> dict[str, tuple[list[KernelGroup], str]]:
    """Missing kernel id -> the new groups that took its place and why, by the first rule
    that names any: the same kernel at another launch shape; a kernel of the same library
    family (a substitution); the kernels launched where it used to run."""
    order = [k.id for k in baseline.kernels]
    source = result.unclaimed[0].launches[0].source if result.unclaimed else ""
    unclaimed = _Unclaimed(result.unclaimed, source)
    where = {k: i for i, k in reversed(list(enumerate(order)))}
    around = _neighbours(order, result, source) if missing else []
    replaced: dict[str, tuple[list[KernelGroup], str]] = {}
    for entry in missing:
        name = entry.name or entry.match.name or ""
        same = _same_kernel(name, unclaimed)
        if (
            same
            and entry.match.work is not None
            and all(_other_class(entry, g, baseline.by_nvtx) for g in same)
        ):
            replaced[entry.id] = (same, OTHER_WORK)
            continue
        if same:
            replaced[entry.id] = (same, "the same kernel at another launch shape")
            continue
        kin, why = _same_family(name, unclaimed)
        if kin:
            replaced[entry.id] = (kin, why)
            continue
        window = _launched_where(around[where[entry.id]], unclaimed)
        if window:
            replaced[entry.id] = (window, "launched where it used to run")
    return replaced
