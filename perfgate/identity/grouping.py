"""Which launches are one kernel, and what a baseline calls it.

A kernel's identity is what makes it the same kernel across builds (docs/identity.md):
- its demangled name with the template arguments (two instantiations are two kernels),
- its launch configuration (grid and block: one name run at several shapes is several kernels),
- optionally the NVTX range it ran in (the same kernel in two regions, when asked for),
- and for a name and shape that run clearly different amounts of work (a persistent cuBLAS
  kernel serving two GEMMs of a model), the work class: launches whose instruction counts
  differ by more than `WORK_GAP` are different kernels, numbered by size within one capture.
  The number is a label, not the identity: a baseline's classes are paired with a capture's
  by their work (`pair_work_classes`), so one new smaller class renumbers nothing.
Matching a baseline entry tries the exact name first and falls back to the normalised name
(lambda instances, anonymous namespaces, Inductor's graph index) only where that is
unambiguous, so renumbering is recognised without ever merging two real kernels.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from perfgate.common.errors import UsageError
from perfgate.common.patterns import checked, search
from perfgate.ingest.launches import Dim3, Launch
from perfgate.ingest.names import normalise, short_name

# Instruction counts of one kernel at one shape are exact (a cuDNN kernel's vary within 0.3%);
# two GEMMs served by one persistent kernel differ by their problem size, far more than this.
WORK_GAP = 1.25
WORK_METRIC = "smsp__inst_executed.sum"
_NVTX_RANGE = re.compile(r'"[^":]*:([^":]+):')


def select(launches: Sequence[Launch], patterns: Sequence[str]) -> list[Launch]:
    """The launches whose name matches one of the --kernel regular expressions (all when
    none is given); an invalid expression, or one that matches nothing, is a usage error."""
    for pattern in patterns:
        checked(pattern, "--kernel")
    # Each name once: a capture repeats a few names over thousands of launches.
    picked: dict[str, bool] = {}
    for la in launches:
        if la.name not in picked:
            picked[la.name] = not patterns or any(search(p, la.name) for p in patterns)
    chosen = [la for la in launches if picked[la.name]]
    if not chosen:
        names = sorted({short_name(la.name) for la in launches})
        raise UsageError(
            f"no kernel in the capture matches --kernel {' / '.join(patterns)}; "
            f"the capture holds: {', '.join(names[:10])}"
        )
    return chosen


def nvtx_range(launch: Launch) -> str | None:
    """The push/pop NVTX range path a launch ran in ("perfgate/attn"), from ncu's --nvtx
    columns: `TID  "domain:range:..." "domain:range:..."`, outermost first."""
    for column in launch.nvtx:
        names = _NVTX_RANGE.findall(column)
        if names:
            return "/".join(names)
    return None


@dataclass(frozen=True)
class KernelKey:
    name: str  # as ncu printed it
    grid: Dim3 | None
    block: Dim3 | None
    nvtx: str | None = None
    work: int | None = None  # 1-based work class, only where one name and shape has several

    @functools.cached_property
    def normalised(self) -> str:  # the regexes of normalise() once per key, not per lookup
        return normalise(self.name)


@dataclass(frozen=True)
class KernelGroup:
    key: KernelKey
    launches: tuple[Launch, ...]

    @property
    def instructions(self) -> float | None:
        values = [v for la in self.launches if isinstance(v := la.metrics.get(WORK_METRIC), float)]
        return sorted(values)[len(values) // 2] if values else None


def _instructions(launch: Launch) -> float | None:
    value = launch.metrics.get(WORK_METRIC)
    return float(value) if isinstance(value, int | float) else None


def split_work(
    launches: Sequence[Launch],
    work: Callable[[Launch], float | None] = _instructions,
    floor: float = 0.0,
) -> list[list[Launch]]:
    """Launches split where their work jumps by more than WORK_GAP (and by more than `floor`,
    so that counts of a few units never split); one class where any launch's work is unknown.
    `work`: instructions by default; an autotuned kernel's problem sizes are told by the
    memory traffic it asks for (perfgate.identity.configs.traffic), which its configuration
    does not change."""
    counted = [(work(la), la) for la in launches]
    if not counted or any(v is None or v <= 0 for v, _ in counted):
        return [list(launches)]
    ordered = sorted(counted, key=lambda pair: pair[0] or 0.0)
    classes: list[list[Launch]] = [[ordered[0][1]]]
    previous = ordered[0][0] or 0.0
    for value, launch in ordered[1:]:
        current = value or 0.0
        if current / previous > WORK_GAP and current - previous > floor:
            classes.append([])
        classes[-1].append(launch)
        previous = current
    return classes


def group_launches(launches: Sequence[Launch], by_nvtx: bool = False) -> list[KernelGroup]:
    """One group per kernel identity, in order of first launch."""
    buckets: dict[tuple[str, Dim3 | None, Dim3 | None, str | None], list[Launch]] = {}
    for launch in launches:
        nvtx = nvtx_range(launch) if by_nvtx else None
        buckets.setdefault((launch.name, launch.grid, launch.block, nvtx), []).append(launch)
    groups: list[KernelGroup] = []
    for (name, grid, block, nvtx), members in buckets.items():
        classes = split_work(members)
        for index, cls in enumerate(classes, start=1):
            work = index if len(classes) > 1 else None
            order = sorted(cls, key=lambda la: la.index)
            groups.append(KernelGroup(KernelKey(name, grid, block, nvtx, work), tuple(order)))
    groups.sort(key=lambda g: min(la.index for la in g.launches))
    return groups


def _dims(d: Dim3 | None) -> str:
    return "?" if d is None else "x".join(str(v) for v in d)


def readable_ids(keys: Sequence[KernelKey]) -> dict[KernelKey, str]:
    """An id per key that says what the kernel is: its short name, then only as much of the
    shape, NVTX range and work class as it takes to tell keys of one short name apart.
    Deterministic, so re-recording the same captures gives the same ids; no hashes."""
    by_short: dict[str, list[KernelKey]] = {}
    for key in keys:
        by_short.setdefault(short_name(key.name), []).append(key)
    out: dict[KernelKey, str] = {}
    for short, members in by_short.items():
        if len(members) == 1:
            out[members[0]] = short
            continue
        labels = {k: short for k in members}
        for part in ("names", "grid", "block", "nvtx", "work"):
            if len(set(labels.values())) == len(members):
                break
            if part == "names" and len({k.name for k in members}) > 1:
                # Same short name, different instantiations: number them by full name.
                names = sorted({k.name for k in members})
                labels = {k: f"{labels[k]} ~{names.index(k.name) + 1}" for k in members}
            elif part == "grid" and len({k.grid for k in members}) > 1:
                labels = {k: f"{labels[k]} [grid {_dims(k.grid)}]" for k in members}
            elif part == "block" and len({k.block for k in members}) > 1:
                labels = {k: f"{labels[k]} [block {_dims(k.block)}]" for k in members}
            elif part == "nvtx" and len({k.nvtx for k in members}) > 1:
                labels = {k: f"{labels[k]} @{k.nvtx or '-'}" for k in members}
            elif part == "work" and len({k.work for k in members}) > 1:
                # A key without a work class is the one its name and shape run alone: unlabelled.
                labels = {
                    k: labels[k] if k.work is None else f"{labels[k]} #work{k.work}"
                    for k in members
                }
        out.update(labels)
    return out


def new_ids(keys: Sequence[KernelKey], taken: Iterable[str]) -> dict[KernelKey, str]:
    """readable_ids for kernels new to a baseline, none of them an id the baseline already
    holds: a kernel also launched at a second grid is a new entry that says its shape
    ("zoo_add [grid 8192x1x1]"), never a second entry of the baselined one's id."""
    used = set(taken)
    # The ids whose kernel has work classes, without the class: a new class of such a kernel
    # takes the next free class number ("nvjet... #work3"), never a baselined class's id.
    classed = {u.rsplit(" #work", 1)[0] for u in used if " #work" in u}
    out: dict[KernelKey, str] = {}
    for key, kid in readable_ids(keys).items():
        label = f" #work{key.work}"
        base = kid[: -len(label)] if key.work is not None and kid.endswith(label) else kid
        if key.work is not None and (kid in used or base in used or base in classed):
            n = key.work
            while f"{base} #work{n}" in used:
                n += 1
            kid = f"{base} #work{n}"
            classed.add(base)
        elif kid in used:
            shaped = f"{kid} [grid {_dims(key.grid)}]"
            if shaped in used:
                shaped = f"{kid} [grid {_dims(key.grid)}] [block {_dims(key.block)}]"
            kid, n = shaped, 2
            while kid in used:
                kid, n = f"{shaped} #{n}", n + 1
        used.add(kid)
        out[key] = kid
    return out


def pair_work_classes(
    recorded: Sequence[float | None], current: Sequence[float | None]
) -> dict[int, int] | None:
    """Which current work class each recorded class of one name and shape is, by their work
    (the instruction counts the classes are split by), never by their number: index into
    `recorded` -> index into `current`.

    Each current class goes to the recorded class whose work is nearest (in log distance);
    where several current classes are nearest to one recorded class, the nearest of them takes
    it and the others are left (new kernels), never handed to a farther recorded class: with
    classes of 0.5M and 1.5M instructions recorded and 0.15M, 0.5M and 1.5M now, the 0.15M
    class is new and the others keep their own baselines (hf-encoder's
    nvjet_sm90_hsh_96x64_64x10_1x2_h_bz_bias_TNN, tests/identity/test_work_classes.py). A
    recorded class no current class is nearest to is left (missing). None where a work value is
    unknown on either side (a capture without instruction counts is one class): not decidable by
    work."""
    known = [v for v in (*recorded, *current) if v is not None and v > 0]
    if len(known) < len(recorded) + len(current):
        return None
    nearest: dict[int, tuple[float, int]] = {}  # recorded index -> (distance, current index)
    for c, work in enumerate(current):
        distances = [log_distance(work, r) for r in recorded]  # type: ignore[arg-type]
        r = min(range(len(recorded)), key=lambda i: (distances[i], i))
        if r not in nearest or distances[r] < nearest[r][0]:
            nearest[r] = (distances[r], c)
    return {r: c for r, (_, c) in sorted(nearest.items())}


def log_distance(a: float, b: float) -> float:
    # The difference of the logs: a / b underflows to 0 for 5e-324 / 1e6 (math domain error).
    return abs(math.log(a) - math.log(b)) if a > 0 and b > 0 else math.inf
