"""The noise model: how far each gated metric moves across machine starts of unchanged builds.

For every kernel present on two starts, each metric is measured per capture file (one separate
ncu run) the way `perfgate baseline record` measures it (perfgate.metrics.measure: the fastest
launch for time and rates, the median launch otherwise, per-file counts for launches), and the
relative change is taken for every run of one start against every run of the other. Changes are
grouped by kernel class: duration band, library family (perfgate.identity.families) and whether
the kernel is exact (its instructions identical in every run of both starts).

Kernels whose launch configuration varies between runs (an autotuner or a heuristic picked a
different grid, block or register count in another process) are left out of the model and
counted: their changes are a different kernel, not noise (engineer B's part of issue 21).

    python benchmarks/noise_model.py              # tuning starts: summary and per-class tables
    python benchmarks/noise_model.py --full       # every metric by every class
    python benchmarks/noise_model.py --held-back  # the held-back starts (evaluation only)
    python benchmarks/noise_model.py --write-docs # rewrite the section of docs/noise.md
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.identity.families import family_of  # noqa: E402
from perfgate.identity.grouping import KernelKey, group_launches  # noqa: E402
from perfgate.ingest import read_capture  # noqa: E402
from perfgate.lifecycle.calibrate import FLOORS, VARIES_SPREAD, K, KernelNoise  # noqa: E402
from perfgate.metrics.catalog import (  # noqa: E402
    CATALOG_LIST,
    Aggregate,
    Role,
    default_metrics,
    lookup,
    role_of,
)
from perfgate.metrics.measure import Measured, measure  # noqa: E402
from perfgate.metrics.thresholds import Direction  # noqa: E402

TIME_METRICS = ("duration", "total_time")
# Floors that widen when the kernel's own recorded runs differ (calibrate._count, _efficiency).
VARYING_FLOORS = ("instructions_executed", "tensor_instructions", "warp_execution_efficiency")

DATA = ROOT / "tests" / "data"
FIELD = DATA / "field"
H200_REAL = DATA / "h200" / "real"
H100_OLD = DATA / "h100"

FIELD_H100 = ("hf-decoder", "hf-encoder", "cnn-fp32", "cnn-tf32", "cnn-bf16-cl",
              "compile-default", "compile-max-autotune", "cuda-graph", "gemms", "reductions",
              "triton-autotune")  # fmt: skip
FIELD_H200 = ("hf-encoder", "cuda-graph", "gemms", "reductions", "triton-autotune")
REAL_H200 = ("torch-flash", "compiled-a", "triton-good", "changes-base")
OLD_H100 = ("zoo-good-short", "torch-short")
FAMILIES = ("moe", "train-step", "cub", "nvrtc", "vit", "jax-train", "triton-sizes")


@dataclass(frozen=True)
class Pair:
    """Two sets of runs of one workload compared run against run. `within`: both sides are
    runs of ONE machine start (no cross-start change; labelled so)."""

    label: str  # "H100 field h100-a vs h100-b"
    gpu: str
    workload: str
    a: tuple[Path, ...]
    b: tuple[Path, ...]
    within: bool = False

    def run_pairs(self) -> Iterator[tuple[Path, Path]]:
        if self.within:
            yield from itertools.combinations(self.a, 2)
        else:
            yield from itertools.product(self.a, self.b)


def _runs(folder: Path, stem: str, n: int, suffix: str = ".csv.gz") -> tuple[Path, ...]:
    return tuple(folder / f"{stem}-run{i}{suffix}" for i in range(1, n + 1))


def tuning_pairs() -> list[Pair]:
    """The starts bounds may be tuned on."""
    h100 = FIELD / "h100"
    counts = {"h100-a": 3, "h100-b": 2, "h100-c": 2, "h100-d": 1}
    # The start of 3 runs (what a baseline is recorded from) against every other H100 start
    # looked at so far (h100-c and h100-d were each held back for one evaluation, tuning data
    # since: tests/data/field/README.md).
    pairs = [
        Pair(f"H100 field h100-a vs {sb}", "H100", w, _runs(h100 / "h100-a", w, 3),
             _runs(h100 / sb, w, counts[sb]))
        for sb in ("h100-b", "h100-c", "h100-d")
        for w in FIELD_H100
    ]  # fmt: skip
    pairs += [
        Pair("H200 field h200-a vs h200-b", "H200", w,
             _runs(FIELD / "h200" / "h200-a", w, 3), _runs(FIELD / "h200" / "h200-b", w, 2))
        for w in FIELD_H200
    ]  # fmt: skip
    pairs += [
        Pair(f"H200 real {s} vs start3", "H200", w, _runs(H200_REAL, p + w, 3, ".csv"),
             _runs(H200_REAL, f"start3-{w}", 2, ".csv"))
        for s, p in (("start1", ""), ("start2", "start2-"))
        for w in REAL_H200
    ]  # fmt: skip
    pairs += [
        Pair("H200 real start1 vs start2", "H200", w, _runs(H200_REAL, w, 3, ".csv"),
             _runs(H200_REAL, f"start2-{w}", 3, ".csv"))
        for w in REAL_H200
    ]  # fmt: skip
    capture = DATA / "h200" / "capture"
    pairs += [
        Pair(f"H200 real start1 vs {label} (perfgate capture)", "H200", "torch-flash",
             _runs(H200_REAL, "torch-flash", 3, ".csv"), files)
        for label, files in (
            ("start 3", (capture / "torch-capture.csv", capture / "torch-capture-2.csv")),
            ("start 4", (capture / "torch-start4-1.csv", capture / "torch-start4-2.csv")),
        )
    ]  # fmt: skip
    pairs += [
        Pair("H200 field h200-a (within one start)", "H200", w,
             _runs(FIELD / "h200" / "h200-a", w, 3), (), within=True)
        for w in FIELD_H200
    ]  # fmt: skip
    # The seven families (tests/data/field/families): fam-a's 3 runs against fam-b, fam-c and
    # fam-d (fam-c and fam-d each held back for one evaluation, tuning data since).
    fams = FIELD / "families"
    pairs += [
        Pair(f"H100 families fam-a vs {sb}", "H100", w, _runs(fams / "fam-a", w, 3),
             _runs(fams / sb, w, 1))
        for sb in ("fam-b", "fam-c", "fam-d")
        for w in FAMILIES
    ]  # fmt: skip
    old = {"root": (H100_OLD, ".csv"), "session1": (H100_OLD / "session1", ".csv.gz"),
           "session2": (H100_OLD / "session2", ".csv.gz")}  # fmt: skip
    for (na, (da, sa)), (nb, (db, sb)) in itertools.combinations(old.items(), 2):
        pairs += [
            Pair(f"H100 old {na} vs {nb}", "H100", w, _runs(da, w, 3, sa), _runs(db, w, 3, sb))
            for w in OLD_H100
        ]
    return pairs


def held_back_pairs() -> list[Pair]:
    """The starts kept for evaluation, captured after the last rule change: never tune on
    these."""
    h100 = FIELD / "h100"
    pairs = [
        Pair(f"H100 field h100-a vs {s} (held back)", "H100", w, _runs(h100 / "h100-a", w, 3),
             _runs(h100 / s, w, 1))
        for s in ("h100-e", "h100-f")
        for w in FIELD_H100
    ]  # fmt: skip
    h200c = FIELD / "h200" / "h200-c"
    pairs += [
        Pair("H200 field h200-a vs h200-c (held back)", "H200", w,
             _runs(FIELD / "h200" / "h200-a", w, 3),
             tuple(p for p in _runs(h200c, w, 2) if p.exists()))
        for w in FIELD_H200
        if (h200c / f"{w}-run1.csv.gz").exists()
    ]  # fmt: skip
    return pairs


Value = float | str


@dataclass(frozen=True)
class KernelRun:
    """One kernel's values in one capture file."""

    key: KernelKey
    duration_ns: float | None
    values: dict[str, Value]
    ranges: dict[str, float] = field(default_factory=dict)  # a median's launch range


def _metric_names(columns: frozenset[str], cc: str | None) -> list[str]:
    """The default gate's metrics for this capture, plus the opt-in catalog metrics it holds."""
    names = default_metrics(columns, cc)
    names += [m.name for m in CATALOG_LIST if not m.default and m.resolve(columns, cc)]
    return names


@cache
def kernels_of(path: Path) -> dict[KernelKey, KernelRun]:
    capture = read_capture(path)
    cc = next((la.cc for la in capture.launches if la.cc), None)
    names = _metric_names(capture.columns, cc)
    out: dict[KernelKey, KernelRun] = {}
    for group in group_launches(capture.launches):
        values: dict[str, Value] = {}
        ranges: dict[str, float] = {}
        for name in names:
            defn = lookup(name)
            got = measure(defn, group.launches, capture.columns)
            if isinstance(got, Measured):
                values[name] = got.value
                # What record adds to a median's bound (calibrate's launch_range).
                if (defn.aggregate is Aggregate.MEDIAN and got.low is not None
                        and got.high is not None and isinstance(got.value, float)
                        and got.value):  # fmt: skip
                    ranges[name] = (got.high - got.low) / abs(got.value)
        duration = values.get("duration")
        out[group.key] = KernelRun(
            group.key, duration if isinstance(duration, float) else None, values, ranges
        )
    return out


@dataclass(frozen=True)
class Change:
    pair: str
    gpu: str
    workload: str
    kernel: str  # name as ncu printed it (shortened)
    metric: str
    run_a: str
    run_b: str
    change: float  # |b - a| / |a|; 1.0 for a categorical metric that changed
    worse: float  # the change toward the metric's worse direction, 0 when it moved the other way
    band: str
    family: str
    exact: bool
    delta: float = 0.0  # |b - a| in the metric's unit (for floors with an absolute part)
    spread_a: float = (
        0.0  # (max - min) / |median| of side A's per-run values: what K x spread covers
    )
    duration_ns: float | None = None  # side A's kernel duration (the time floor depends on it)
    within: bool = False  # both runs from one machine start
    range_a: float = 0.0  # side A's launch range of a median metric (record's bound covers it)
    value_a: float | None = None  # side A's value (DRAM bytes' floor depends on the size)
    kernel_varies: bool = False  # the kernel's instructions differ between side A's runs
    reuse_a: float | None = None  # side A's L2 bytes over its DRAM bytes (calibrate.reuse_floor)


BANDS = ((5_000.0, "< 5 us"), (20_000.0, "5-20 us"), (math.inf, ">= 20 us"))


def band_of(duration_ns: float | None) -> str:
    if duration_ns is None:
        return "unknown"
    return next(label for limit, label in BANDS if duration_ns < limit)


def _config(run: KernelRun) -> tuple[object, ...]:
    return (run.key.grid, run.key.block, run.values.get("registers_per_thread"),
            run.values.get("shared_memory_per_block"))  # fmt: skip


def config_varying(files: Sequence[Path]) -> set[str]:
    """Kernel names whose launch configurations (grid, block, registers, shared memory) are
    not the same multiset in every run: autotuned or heuristic choices, not noise."""
    per_file = []
    for path in files:
        configs: dict[str, list[tuple[object, ...]]] = {}
        for run in kernels_of(path).values():
            configs.setdefault(run.key.name, []).append(_config(run))
        per_file.append({n: sorted(map(repr, c)) for n, c in configs.items()})
    names = set().union(*per_file)
    return {n for n in names if len({repr(f.get(n)) for f in per_file}) > 1}


def relative(defn_direction: Direction, a: Value, b: Value) -> tuple[float, float]:
    if isinstance(a, str) or isinstance(b, str):
        moved = 0.0 if a == b else 1.0
        return moved, moved
    if a == b:
        return 0.0, 0.0
    rel = (b - a) / abs(a) if a else math.inf
    if defn_direction is Direction.HIGHER_IS_WORSE:
        worse = max(rel, 0.0)
    elif defn_direction is Direction.LOWER_IS_WORSE:
        worse = max(-rel, 0.0)
    else:
        worse = abs(rel)
    return abs(rel), worse


def _spreads(runs: Sequence[KernelRun]) -> dict[str, float]:
    out: dict[str, float] = {}
    for metric in runs[0].values:
        values = [r.values.get(metric) for r in runs]
        numbers = [v for v in values if isinstance(v, float)]
        if len(numbers) == len(values) and len(numbers) >= 2:
            mid = statistics.median(numbers)
            rng = max(numbers) - min(numbers)
            out[metric] = rng / abs(mid) if mid else (0.0 if rng == 0 else math.inf)
    return out


@dataclass(frozen=True)
class PairResult:
    pair: Pair
    changes: tuple[Change, ...]
    excluded: frozenset[str]  # config-varying kernel names
    matched: int  # kernels present on both sides
    unmatched: int  # kernels (by name, grid, block) on one side only


def _reuse(run: KernelRun) -> float | None:
    """A kernel's L2 bytes over its DRAM bytes in one run (perfgate.lifecycle.record._reuse)."""
    l2, dram = run.values.get("l2_sectors"), run.values.get("dram_bytes")
    if isinstance(l2, float) and isinstance(dram, float) and dram > 0:
        return l2 * 32.0 / dram
    return None


def compare(pair: Pair) -> PairResult:
    files = [*pair.a, *pair.b]
    excluded = config_varying(files)
    runs = {p: kernels_of(p) for p in files}
    all_keys = [set(r) for r in runs.values()]
    common = set.intersection(*all_keys)
    unmatched = {k.name for k in set.union(*all_keys) - common} - excluded
    kept = [k for k in common if k.name not in excluded]
    exact = {
        k: len({repr(runs[p][k].values.get("instructions_executed")) for p in files}) == 1
        for k in kept
    }
    spreads = {k: _spreads([runs[p][k] for p in pair.a]) for k in kept}
    changes = []
    for pa, pb in pair.run_pairs():
        for key in kept:
            ra, rb = runs[pa][key], runs[pb][key]
            fam = family_of(key.name)
            for metric, va in ra.values.items():
                vb = rb.values.get(metric)
                if vb is None:
                    continue
                change, worse = relative(lookup(metric).direction, va, vb)
                changes.append(Change(
                    pair.label, pair.gpu, pair.workload, key.name[:40], metric, pa.name,
                    pb.name, change, worse, band_of(ra.duration_ns),
                    fam.name if fam else "custom", exact[key],
                    abs(vb - va) if isinstance(va, float) and isinstance(vb, float) else 0.0,
                    spreads[key].get(metric, 0.0), ra.duration_ns, pair.within,
                    max(runs[p][key].ranges.get(metric, 0.0) for p in pair.a),
                    va if isinstance(va, float) else None,
                    spreads[key].get("instructions_executed", 0.0) >= VARIES_SPREAD,
                    _reuse(ra),
                ))  # fmt: skip
    return PairResult(pair, tuple(changes), frozenset(excluded), len(kept), len(unmatched))


def compare_all(pairs: Iterable[Pair]) -> list[PairResult]:
    return [compare(p) for p in pairs]


@dataclass(frozen=True)
class Stats:
    count: int
    median: float
    p95: float
    max: float
    where: str


def stats(changes: Sequence[Change], key: Callable[[Change], float] = lambda c: c.change) -> Stats:
    values = sorted(key(c) for c in changes)
    top = max(changes, key=key)
    p95 = values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)]
    where = f"{top.kernel} ({top.workload}, {top.pair.split(' (')[0]})" if key(top) else "-"
    return Stats(len(values), statistics.median(values), p95, values[-1], where)


def _pct(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x * 100:.2f}%"


# The classification (docs/noise.md): EXACT when no kept kernel's metric moved at all; BOUNDED
# when its largest worse-direction move on the tuning pairs stays within BOUNDED_LIMIT, small
# enough to gate on alone with a floor above it; EVIDENCE-ONLY otherwise.
BOUNDED_LIMIT = 0.10
PRIMARY = frozenset({
    "duration", "total_time", "launches", "instructions_executed", "tensor_instructions",
    "global_load_sectors", "global_store_sectors", "local_memory_sectors", "l2_atomic_requests",
    "global_atomic_requests", "dram_bytes", "registers_per_thread", "shared_memory_per_block",
    "theoretical_occupancy", "occupancy_limiter", "global_load_efficiency",
    "global_store_efficiency", "sectors_per_request_ld", "sectors_per_request_st",
    "warp_execution_efficiency",
})  # fmt: skip


def classify(metric: str, changes: Sequence[Change]) -> str:
    worst = max(c.worse for c in changes)
    if max(c.change for c in changes) == 0:
        return "EXACT"
    if metric in ("duration", "total_time"):
        # Time is banded by the floor: bounded where kernels of 5 us or more stay within it.
        long = [c.worse for c in changes if c.band != "< 5 us"]
        return "BOUNDED (by duration)" if long and max(long) <= BOUNDED_LIMIT else "EVIDENCE-ONLY"
    return "BOUNDED" if worst <= BOUNDED_LIMIT else "EVIDENCE-ONLY"


def verdict_on_split(metric: str, cls: str) -> str:
    primary = metric in PRIMARY
    if cls == "EXACT" or cls.startswith("BOUNDED"):
        return "yes" if primary else "yes (could be primary)"
    return "NO: move to evidence" if primary else "yes"


def summary_table(results: Sequence[PairResult], out: Callable[[str], None]) -> None:
    changes = [c for r in results for c in r.changes]
    by_metric: dict[str, list[Change]] = {}
    for c in changes:
        by_metric.setdefault(c.metric, []).append(c)
    out("| metric | A's split | class (this data) | split supported | comparisons | median "
        "&#124;change&#124; | p95 | max | worst-direction max | where the max is |")  # fmt: skip
    out("|---|---|---|---|---|---|---|---|---|---|")
    for metric in sorted(by_metric, key=lambda m: (m.startswith("stall"), m)):
        cs = by_metric[metric]
        s, w = stats(cs), stats(cs, lambda c: c.worse)
        cls = classify(metric, cs)
        split = "primary" if metric in PRIMARY else "evidence"
        out(f"| `{metric}` | {split} | {cls} | {verdict_on_split(metric, cls)} | {s.count} | "
            f"{_pct(s.median)} | {_pct(s.p95)} | {_pct(s.max)} | {_pct(w.max)} | {w.where} |")  # fmt: skip


CLASSES: tuple[tuple[str, Callable[[Change], str]], ...] = (
    ("duration band", lambda c: c.band),
    ("family", lambda c: c.family),
    ("exact kernel", lambda c: "exact" if c.exact else "not exact"),
)
CLASS_METRICS = ("duration", "total_time", "instructions_executed", "dram_bytes", "l2_sectors",
                 "global_store_sectors", "achieved_occupancy", "dram_throughput",
                 "tensor_pipe_utilization")  # fmt: skip


def class_table(
    results: Sequence[PairResult], metrics: Iterable[str], out: Callable[[str], None]
) -> None:
    changes = [c for r in results for c in r.changes]
    out("| metric | class | kernels x run pairs | median &#124;change&#124; | p95 | max | "
        "worst-direction max | where the worst-direction max is |")  # fmt: skip
    out("|---|---|---|---|---|---|---|---|")
    for metric in metrics:
        cs = [c for c in changes if c.metric == metric]
        if not cs:
            continue
        for title, of in CLASSES:
            groups: dict[str, list[Change]] = {}
            for c in cs:
                groups.setdefault(of(c), []).append(c)
            for label in sorted(groups):
                g = groups[label]
                s, w = stats(g), stats(g, lambda c: c.worse)
                out(f"| `{metric}` | {title}: {label} | {s.count} | {_pct(s.median)} | "
                    f"{_pct(s.p95)} | {_pct(s.max)} | {_pct(w.max)} | {w.where} |")  # fmt: skip


def pairs_table(results: Sequence[PairResult], out: Callable[[str], None]) -> None:
    out("| pair | workloads | kernels compared | kernels on one side only | config-varying "
        "kernels left out | run pairs |")  # fmt: skip
    out("|---|---|---|---|---|---|")
    by_label: dict[str, list[PairResult]] = {}
    for r in results:
        by_label.setdefault(r.pair.label, []).append(r)
    for label, rs in by_label.items():
        names = sorted({n[:30] for r in rs for n in r.excluded})
        runs = sum(len(list(r.pair.run_pairs())) for r in rs)
        out(f"| {label} | {len(rs)} | {sum(r.matched for r in rs)} | "
            f"{sum(r.unmatched for r in rs)} | {sum(len(r.excluded) for r in rs)}"
            f"{' (' + ', '.join(f'`{n}`' for n in names) + ')' if names else ''} | {runs} |")  # fmt: skip


def modelled(result: PairResult) -> bool:
    """The pairs the classification and the floors rest on: separate machine starts of the
    current metric list. The older H100 sessions' lists differ (their tensor counters sum other
    pipes: tensor_instructions moves 50-100% between lists, not between starts), and runs of
    one start show no cross-start change."""
    return not result.pair.within and not result.pair.label.startswith("H100 old")


def report(results: Sequence[PairResult], out: Callable[[str], None], full: bool) -> None:
    pairs_table(results, out)
    main = [r for r in results if modelled(r)]
    other = [r for r in results if not modelled(r)]
    out("")
    out("Separate machine starts, current metric list (the classification rests on these):")
    out("")
    summary_table(main, out)
    out("")
    metrics = sorted({c.metric for r in main for c in r.changes}) if full else CLASS_METRICS
    class_table(main, metrics, out)
    out("")
    out("What the calibration floors (perfgate/lifecycle/calibrate.py) must cover: the largest")
    out(f"worse-direction change not covered by K = {K:g} x the spread of side A's runs nor by")
    out("the floor's absolute part:")
    out("")
    floors_table(main, out)
    if other:
        out("")
        out("Other pairs (runs within one start; the older H100 sessions' metric lists):")
        out("")
        summary_table(other, out)


@dataclass(frozen=True)
class FloorNeed:
    """What the data asks of one floor: the largest worse-direction cross-start change that
    neither the kernel's own spread (K x spread of side A's runs) nor the floor's absolute part
    covers, as a multiple of the floor (above 1: a false alarm on the data)."""

    metric: str
    band: str
    floor: float  # the floor's relative part at the kernel with the largest need
    need: float  # the change it must cover there
    where: str


def floor_needs(changes: Iterable[Change]) -> list[FloorNeed]:
    """Per floor of perfgate.lifecycle.calibrate.FLOORS and duration band: the cross-start
    change the floor alone must cover, and the floor there."""
    best: dict[tuple[str, str], tuple[float, FloorNeed]] = {}
    for c in changes:
        if c.within or c.metric not in FLOORS or c.band == "unknown":
            continue
        # An evidence metric (a short kernel's time that moved 1.5 us or less a launch
        # included) fails nothing on its own: its floor only keeps its notes quiet.
        moved = c.delta if c.metric == "duration" else None
        if role_of(c.metric, c.duration_ns, moved) is Role.EVIDENCE:
            continue
        varies = c.spread_a >= VARIES_SPREAD
        noise = KernelNoise(c.duration_ns, c.gpu, varies, c.kernel_varies, c.value_a, c.reuse_a)
        floor = FLOORS[c.metric](noise)
        # Time: the floor alone covers every cross-start change, since a baseline's runs can
        # agree within 0.1% on a start and the next start still move 3.5% (the cuDNN
        # convolution of 52 us, h100-a against h100-d). Counts and bytes: what twice the
        # recorded spread (or a median's launch range) leaves.
        covered = 0.0 if c.metric in TIME_METRICS else max(K * c.spread_a, c.range_a)
        if floor.adds_spread:  # a not-exact kernel's time: floor plus K x its spread
            covered = K * c.spread_a
        if c.worse <= covered or c.delta <= floor.absolute:
            continue
        # What the floor alone must cover: all of it, or what the spread leaves when they add.
        left = c.worse - covered if floor.adds_spread else c.worse
        ratio = left / floor.relative if floor.relative else math.inf
        band = (
            f"{c.band} ({c.gpu})"
            if c.metric in TIME_METRICS
            else ("runs differ" if varies and c.metric in VARYING_FLOORS else "all")
        )
        key = (c.metric, band)
        where = f"{c.kernel} ({c.workload}, {c.pair}, {c.run_a} vs {c.run_b})"
        if key not in best or ratio > best[key][0]:
            best[key] = (ratio, FloorNeed(c.metric, band, floor.relative, left, where))
    return [need for _, need in sorted(best.values(), key=lambda x: (x[1].metric, x[1].band))]


def floors_table(results: Sequence[PairResult], out: Callable[[str], None]) -> None:
    out("| metric | duration band | floor there | largest change the floor must cover | "
        "where |")  # fmt: skip
    out("|---|---|---|---|---|")
    for n in floor_needs(c for r in results for c in r.changes):
        out(f"| `{n.metric}` | {n.band} | {_pct(n.floor)} | {_pct(n.need)} | {n.where} |")


BEGIN = "<!-- noise_model: begin (python benchmarks/noise_model.py --write-docs) -->"
END = "<!-- noise_model: end -->"


def write_docs(text: str) -> None:
    doc = ROOT / "docs" / "noise.md"
    body = doc.read_text()
    head, _, rest = body.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main(argv: Sequence[str]) -> int:
    held = "--held-back" in argv
    results = compare_all(held_back_pairs() if held else tuning_pairs())
    lines: list[str] = []
    report(results, lines.append, "--full" in argv)
    text = "\n".join(lines)
    if "--write-docs" in argv:
        write_docs(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
