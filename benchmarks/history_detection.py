"""Change points and drift over main's history, on series built from real unchanged re-captures.

For every kernel of the corpus (tests/data/field: the field workloads on H100 and H200, the
gate captures, the seven families), each metric is measured per capture file as `perfgate
baseline record` measures it (benchmarks/noise_model.kernels_of: perfgate.metrics.measure).
Only kernels present in every run of every start are used (an autotuned choice that differs
between runs is another kernel, not noise). A series of main's history is built by resampling
the machine starts in order: a start is drawn at random (the one just drawn included), and 1
to all of its runs follow in the order they were captured, as a CI runner kept for a few merges
would give them; then another start. So every series holds the real cross-start noise.

Into such a series one change is injected at run T0 = 40, in the metric's worse direction: a
step of +3% or +5% (every run from T0 on), or a drift of +1% per merge (run T0 + i is
(1 + 0.01 (i + 1)) times its real value). Then `perfgate history detect` is replayed as main
grows: after each run from T0 on, the change points of the series so far
(perfgate.history.changepoints.change_points) and the drift rule on the newest run (its
last N runs before it). A change is caught when a change point at T0 - 2 or later is found
(or the drift rule flags a run from T0 on); the delay is the number of runs of the new level
kept when it was caught (1: the first run after the change). False alarms: on unchanged
series of 20 + 100 runs, each change point that appears as the history grows from 20 to 120
runs (one that moves by 2 runs or less is the same), and each run the drift rule flags, per
100 runs.

One start per GPU kind and corpus is held back while the parameters are chosen (h100-f,
h200-c, gate h100-l, gate h200-f, families fam-d); `--held-back` builds the series from every
start, the held-back one included, and reports apart.

    python benchmarks/history_detection.py                 # tuning starts, default parameters
    python benchmarks/history_detection.py --held-back     # every start, the held-back ones in
    python benchmarks/history_detection.py --metric dram_bytes --metric instructions_executed
    python benchmarks/history_detection.py --quick         # every 4th kernel (a smoke run)
    python benchmarks/history_detection.py --cost          # seconds per series of 100 to 3000 runs
    python benchmarks/history_detection.py --noise         # one run's spread per duration band
    python benchmarks/history_detection.py --drift-only    # the drift rule alone, in seconds
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from noise_model import band_of, kernels_of  # noqa: E402

from perfgate.history import changepoints  # noqa: E402
from perfgate.history.changepoints import (  # noqa: E402
    DEFAULT,
    DEFAULT_DRIFT,
    Detection,
    DriftRule,
    change_points,
    drift,
)
from perfgate.metrics.catalog import lookup  # noqa: E402
from perfgate.metrics.thresholds import Direction, Noise  # noqa: E402

FIELD = ROOT / "tests" / "data" / "field"
FIELD_H100 = ("hf-decoder", "hf-encoder", "cnn-fp32", "cnn-tf32", "cnn-bf16-cl",
              "compile-default", "compile-max-autotune", "cuda-graph", "gemms", "reductions",
              "triton-autotune")  # fmt: skip
FIELD_H200 = ("hf-encoder", "cuda-graph", "gemms", "reductions", "triton-autotune")
FAMILIES = ("moe", "train-step", "cub", "nvrtc", "vit", "jax-train", "triton-sizes")

T0 = 40  # runs of history before the injected change
WARMUP = 20  # runs kept before the unchanged series is first looked at
UNCHANGED = 100  # runs looked at on the unchanged series
HORIZON = 15  # runs after T0 looked at
TOLERANCE = 2  # a change point this close to one already found is the same one


@dataclass(frozen=True)
class Corpus:
    label: str  # "H100 field"
    gpu: str
    folder: Path
    starts: tuple[str, ...]
    held_back: str
    workloads: tuple[str, ...]


CORPORA = (
    Corpus("H100 field", "H100", FIELD / "h100",
           ("h100-a", "h100-b", "h100-c", "h100-d", "h100-e", "h100-f"), "h100-f", FIELD_H100),
    Corpus("H200 field", "H200", FIELD / "h200", ("h200-a", "h200-b", "h200-c"), "h200-c",
           FIELD_H200),
    Corpus("H100 gate", "H100", FIELD / "gate", ("h100-j", "h100-k", "h100-l"), "h100-l",
           FIELD_H100),
    Corpus("H200 gate", "H200", FIELD / "gate", ("h200-e", "h200-f"), "h200-f", FIELD_H200),
    Corpus("H100 families", "H100", FIELD / "families", ("fam-a", "fam-b", "fam-c", "fam-d"),
           "fam-d", FAMILIES),
)  # fmt: skip


@dataclass(frozen=True)
class KernelSeries:
    """One kernel's values of one metric, per machine start, runs in capture order."""

    gpu: str
    corpus: str
    workload: str
    kernel: str
    metric: str
    band: str
    starts: tuple[tuple[float, ...], ...]


def _runs(folder: Path, workload: str) -> list[Path]:
    return sorted(
        (p for p in folder.glob(f"{workload}-run*.csv.gz") if "crashed" not in p.name),
        key=lambda p: p.name,
    )


def kernel_series(corpus: Corpus, metrics: Sequence[str], held_back: bool) -> list[KernelSeries]:
    starts = [s for s in corpus.starts if held_back or s != corpus.held_back]
    out = []
    for workload in corpus.workloads:
        files = {s: _runs(corpus.folder / s, workload) for s in corpus.starts}
        if not all(files.values()):
            continue
        # Present in every run of every start, held-back ones included: one kernel set for
        # both evaluations.
        every = [kernels_of(p) for s in corpus.starts for p in files[s]]
        keys = set(every[0]).intersection(*every[1:])
        for key in sorted(keys, key=repr):
            durations = [k[key].duration_ns for k in every if k[key].duration_ns is not None]
            band = band_of(statistics.median(durations) if durations else None)
            for metric in metrics:
                per_start = []
                for s in starts:
                    values = [kernels_of(p)[key].values.get(metric) for p in files[s]]
                    per_start.append(tuple(v for v in values if isinstance(v, float)))
                counts = [len(files[s]) for s in starts]
                if [len(v) for v in per_start] == counts:
                    name = key.name[:40]
                    out.append(KernelSeries(corpus.gpu, corpus.label, workload, name, metric,
                                            band, tuple(per_start)))  # fmt: skip
    return out


def resample(
    starts: Sequence[Sequence[float]], length: int, rng: np.random.Generator
) -> list[float]:
    """Main's history over machine starts: a start at random (the same one again included),
    then 1 to all of its runs in capture order (from a random one, wrapping), then the next."""
    out: list[float] = []
    while len(out) < length:
        runs = starts[int(rng.integers(0, len(starts)))]
        block = int(rng.integers(1, len(runs) + 1))
        first = int(rng.integers(0, len(runs)))
        out += [runs[(first + j) % len(runs)] for j in range(block)]
    return out[:length]


def injected(values: Sequence[float], kind: str, direction: Direction) -> list[float]:
    sign = -1.0 if direction is Direction.LOWER_IS_WORSE else 1.0
    out = list(values)
    for i in range(T0, len(out)):
        factor = 0.01 * (i - T0 + 1) if kind == "drift" else STEPS[kind]
        out[i] = values[i] * (1 + sign * factor)
    return out


STEPS = {"step3": 0.03, "step5": 0.05}
Finder = Callable[[Sequence[float]], list[int]]


def _new(found: Sequence[int], known: list[int]) -> list[int]:
    fresh = [c for c in found if all(abs(c - k) > TOLERANCE for k in known)]
    known.extend(fresh)
    return fresh


PERSIST = 1  # --drift-persist: runs in a row the drift rule must flag (1: the run alone)


def flagged(values: Sequence[float], t: int, rule: DriftRule, direction: Direction) -> bool:
    """Whether the drift rule flags run t (1-based) of main, and each of the PERSIST - 1 runs
    before it against its own recent history."""
    for j in range(t - PERSIST, t):
        got = drift(values[:j], values[j], direction, rule) if j >= 0 else None
        if got is None or not got.drifted:
            return False
    return True


def mean_absolute_spread(values: Sequence[float]) -> float:
    """--drift-spread mean-absolute: sqrt(pi)/2 times the mean absolute difference of
    consecutive runs, the estimator the mean square one replaced (docs/history.md)."""
    if len(values) < 2:
        return 0.0
    return (
        math.sqrt(math.pi) / 2 * statistics.fmean(abs(b - a) for a, b in itertools.pairwise(values))
    )


def false_alarms(
    values: Sequence[float], find: Finder, rule: DriftRule, direction: Direction
) -> tuple[int, int]:
    """(change points, drift flags) over runs WARMUP+1 .. WARMUP+UNCHANGED."""
    known: list[int] = []
    points = flags = 0
    for t in range(WARMUP + 1, WARMUP + UNCHANGED + 1):
        points += len(_new(find(values[:t]), known))
        flags += flagged(values, t, rule, direction)
    return points, flags


def delays(
    values: Sequence[float], find: Finder, rule: DriftRule, direction: Direction
) -> tuple[int | None, int | None]:
    """Runs of the new level kept when a change point (resp. the drift rule) caught it."""
    point = flag = None
    for t in range(T0 + 1, T0 + HORIZON + 1):
        if point is None and any(c >= T0 - TOLERANCE for c in find(values[:t])):
            point = t - T0
        if flag is None and flagged(values, t, rule, direction):
            flag = t - T0
        if point is not None and flag is not None:
            break
    return point, flag


KINDS = ("step3", "step5", "drift")
KIND_TITLES = {"step3": "+3% step", "step5": "+5% step", "drift": "+1%/merge drift"}
GOALS = {"step3": None, "step5": 3, "drift": 10}


METHODS = ("change points", "drift rule", "either")


def _first(a: int | None, b: int | None) -> int | None:
    return min((d for d in (a, b) if d is not None), default=None)


@dataclass
class Tally:
    series: int = 0
    runs: int = 0
    alarms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METHODS, 0))
    # method -> kind of change -> per series, the delay (None: not caught in HORIZON runs)
    delays: dict[str, dict[str, list[int | None]]] = field(
        default_factory=lambda: {m: {k: [] for k in KINDS} for m in METHODS}
    )


def evaluate(
    all_series: Sequence[KernelSeries],
    detection: Detection,
    rule: DriftRule,
    seed: int,
    with_points: bool = True,
) -> dict[tuple[str, str, str], Tally]:
    """with_points=False (--drift-only): no change points looked for; the drift rule alone."""
    tallies: dict[tuple[str, str, str], Tally] = {}
    for i, ks in enumerate(all_series):
        defn = lookup(ks.metric)
        exact = defn.noise is Noise.EXACT

        def find(v: Sequence[float], exact: bool = exact) -> list[int]:
            return change_points(v, exact=exact, detection=detection) if with_points else []

        rng = np.random.default_rng([seed, i])
        for key in ((ks.gpu, ks.metric, ks.band), (ks.gpu, ks.metric, "all")):
            tallies.setdefault(key, Tally())
        plain = resample(ks.starts, WARMUP + UNCHANGED, rng)
        points, flags = false_alarms(plain, find, rule, defn.direction)
        base = resample(ks.starts, T0 + HORIZON, rng)
        caught = {k: delays(injected(base, k, defn.direction), find, rule, defn.direction)
                  for k in KINDS}  # fmt: skip
        for key in ((ks.gpu, ks.metric, ks.band), (ks.gpu, ks.metric, "all")):
            t = tallies[key]
            t.series += 1
            t.runs += UNCHANGED
            # Either rule's alarm is an alarm: a run both flag counts twice (an upper bound).
            for method, n in zip(METHODS, (points, flags, points + flags), strict=True):
                t.alarms[method] += n
            for k in KINDS:
                point, flag = caught[k]
                for method, d in zip(METHODS, (point, flag, _first(point, flag)), strict=True):
                    t.delays[method][k].append(d)
    return tallies


def _caught(delay_list: Sequence[int | None], goal: int | None) -> str:
    got = [d for d in delay_list if d is not None]
    n = len(delay_list)
    rate = f"{len(got) / n:.0%}" if n else "-"
    if not got:
        return f"{rate} (-)"
    median = statistics.median(got)
    within = f", {sum(d <= goal for d in got) / n:.0%} within {goal}" if goal else ""
    return f"{rate}{within} (median {median:g}, max {max(got)})"


def report(tallies: dict[tuple[str, str, str], Tally], out: Callable[[str], None]) -> None:
    head = " | ".join(f"{KIND_TITLES[k]}: caught (delay in runs)" for k in KINDS)
    out(f"| GPU | metric | duration band | series | method | {head} | false alarms per 100 runs |")
    out("|---|---|---|---|---|" + "---|" * len(KINDS) + "---|")
    order = {"all": 0, "< 5 us": 1, "5-20 us": 2, ">= 20 us": 3, "unknown": 4}
    for key in sorted(tallies, key=lambda k: (k[0], k[1], order.get(k[2], 9))):
        t = tallies[key]
        gpu, metric, band = key
        per100 = 100.0 / t.runs if t.runs else 0.0
        for method in METHODS:
            cells = " | ".join(_caught(t.delays[method][k], GOALS[k]) for k in KINDS)
            out(f"| {gpu} | `{metric}` | {band} | {t.series} | {method} | {cells} | "
                f"{t.alarms[method] * per100:.2f} |")  # fmt: skip


def noise(all_series: Sequence[KernelSeries], seed: int, out: Callable[[str], None]) -> None:
    """Per GPU and duration band: one run's spread (the drift rule's, over main's resampled
    history of WARMUP + UNCHANGED runs) relative to the kernel's median, and the share of
    series a +5% step moves beyond 3 such spreads."""
    out(
        "| GPU | duration band | series | spread: median | 75th percentile | +5% beyond 3 spreads |"
    )
    out("|---|---|---|---|---|---|")
    spreads: dict[tuple[str, str], list[float]] = {}
    for i, ks in enumerate(all_series):
        values = resample(ks.starts, WARMUP + UNCHANGED, np.random.default_rng([seed, i]))
        relative = changepoints.spread(values) / abs(statistics.median(values))
        spreads.setdefault((ks.gpu, ks.band), []).append(relative)
    for (gpu, band), got in sorted(spreads.items()):
        beyond = sum(3 * r < 0.05 for r in got) / len(got)
        out(f"| {gpu} | {band} | {len(got)} | {statistics.median(got):.2%} | "
            f"{float(np.percentile(got, 75)):.2%} | {beyond:.0%} |")  # fmt: skip


def cost(out: Callable[[str], None]) -> None:
    """Seconds for change_points on series of n runs: unchanged (real H100 decoder-kernel
    noise shape: Student t, 3 degrees of freedom, 0.5%) and with two levels."""
    out("| runs | no change | two changes (+5% at n/3, -4% at 2n/3) |")
    out("|---|---|---|")
    rng = np.random.default_rng(11)
    for n in (100, 300, 1000, 3000):
        flat = list(1000 * (1 + 0.005 * rng.standard_t(3, size=n)))
        stepped = [v * (1.05 if i >= n // 3 else 1) * (0.96 if i >= 2 * n // 3 else 1)
                   for i, v in enumerate(flat)]  # fmt: skip
        cells = []
        for values in (flat, stepped):
            began = time.perf_counter()
            found = change_points(values)
            cells.append(f"{time.perf_counter() - began:.3f} s ({len(found)} found)")
        out(f"| {n} | {cells[0]} | {cells[1]} |")


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held-back", action="store_true")
    parser.add_argument("--metric", action="append", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--noise", action="store_true", help="one run's spread per band")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--significance", type=float, default=DEFAULT.significance)
    parser.add_argument("--min-size", type=int, default=DEFAULT.min_size)
    parser.add_argument("--min-change", type=float, default=DEFAULT.min_change)
    parser.add_argument("--drift-runs", type=int, default=DEFAULT_DRIFT.runs)
    parser.add_argument("--drift-spreads", type=float, default=DEFAULT_DRIFT.spreads)
    parser.add_argument("--drift-floor", type=float, default=DEFAULT_DRIFT.floor)
    parser.add_argument("--drift-persist", type=int, default=1)
    parser.add_argument(
        "--drift-spread", choices=("mean-square", "mean-absolute"), default="mean-square"
    )
    parser.add_argument(
        "--drift-only", action="store_true", help="the drift rule alone (seconds, not minutes)"
    )
    args = parser.parse_args(argv)
    global PERSIST
    PERSIST = args.drift_persist
    if args.drift_spread == "mean-absolute":  # the rule's own estimator, replaced for a run
        changepoints.spread = mean_absolute_spread
    if args.cost:
        cost(print)
        return 0
    metrics = args.metric or ["duration"]
    detection = replace(DEFAULT, significance=args.significance, min_size=args.min_size,
                        min_change=args.min_change)  # fmt: skip
    rule = replace(DEFAULT_DRIFT, runs=args.drift_runs, spreads=args.drift_spreads,
                   floor=args.drift_floor)  # fmt: skip
    began = time.monotonic()
    series = [s for c in CORPORA for s in kernel_series(c, metrics, args.held_back)]
    if args.quick:
        series = series[::4]
    if args.noise:
        noise(series, args.seed, print)
        return 0
    tallies = evaluate(series, detection, rule, args.seed, with_points=not args.drift_only)
    print(f"{'every start, the held-back ones in' if args.held_back else 'tuning starts'}: "
          f"{len(series)} kernel series; {detection}; {rule}; spread {args.drift_spread}, "
          f"persist {args.drift_persist}{', drift rule only' if args.drift_only else ''}; "
          f"{time.monotonic() - began:.0f} s")  # fmt: skip
    report(tallies, print)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
