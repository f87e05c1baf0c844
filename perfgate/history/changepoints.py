"""Change points and drift over one series of a kernel's metric, oldest first (pure functions).

Change points: E-divisive means (Matteson and James 2014, "A nonparametric approach for
multiple change point analysis of multivariate data", JASA 109:505), the method MongoDB's
performance CI runs (Daly et al. 2020, "The Use of Change Point Detection to Identify Software
Performance Regressions in a Continuous Integration System", ICPE) and Apache Otava grew out
of. It splits a series where the energy distance between the two sides, weighted by their
sizes, is largest, and keeps the split only when a permutation test says that distance is not
what shuffling the same values gives (significance `Detection.significance`). Energy distance
compares whole distributions, not means, so one slow run of a heavy-tailed kernel moves it
far less than a t-test's mean; the hierarchical search finds every level of a long series.

The permutation test stops as soon as its answer is settled (Besag and Clifford 1991,
"Sequential Monte Carlo p-values", Biometrika 78:2): once enough shuffles beat the observed
split, no further shuffle can make it significant. The answer is exactly the full test's; a
series with no change costs a few dozen shuffles instead of all of them. Each shuffle costs
O(n log^2 n) (the pairwise distance sums by merge levels, not an n x n matrix), so a series
of a few thousand runs takes well under a second per split tested. The shuffles are drawn
from a generator seeded by the segment's place: the same series gives the same answer.

A significant split is reported only when the level moved by at least `min_change` (the
medians of the levels on either side): the history of unchanged builds holds machine starts
whose levels differ by about a percent (docs/noise.md), which a long series makes
significant and which no one should chase.

Exact counters (registers, sectors, instruction counts: `Noise.EXACT` in the catalog) do not
move between runs of one binary, so every change of their value is a new level:
`change_points(values, exact=True)` needs no statistics.

The drift rule holds one value to main's recent history: the median of the last `runs`
values and their spread, estimated from the differences of consecutive runs (a slow drift
within the window moves each difference little, so it does not widen the spread it is judged
against). The value is flagged when it stands beyond `spreads` spreads and `floor` of the
median, in the metric's worse direction. It also holds the level of the newest `level_runs`
runs, the value and the runs just before it: their mean against the median of the `runs` runs
before them, with the same number of spreads of that mean (the spread over the square root of
`level_runs`) and the same floor. A kernel whose runs move by a few percent from one machine
start to the next hides a +5% step in any one run, not in the mean of three. docs/history.md
gives the figures that chose every default here (benchmarks/history_detection.py)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perfgate.metrics.thresholds import Direction


@dataclass(frozen=True)
class Detection:
    """How change points are found (defaults chosen on the tuning starts: docs/history.md)."""

    significance: float = 0.01  # the permutation test's level
    permutations: int = 199  # shuffles at most per split tested
    min_size: int = 3  # runs of a level at least: a new level shows after this many runs
    min_change: float = 0.02  # relative move of the level's median below which none is reported
    seed: int = 20140101  # the shuffles' generator: one series, one answer


@dataclass(frozen=True)
class DriftRule:
    """A value held to the recent history of its series (defaults: docs/history.md)."""

    runs: int = 30  # the last N runs of main on the same fingerprint
    spreads: float = 3.0  # the value may stand this many spreads from their median
    floor: float = 0.03  # ... and at least this fraction of it
    min_runs: int = 10  # fewer runs kept: the rule does not judge
    level_runs: int = 3  # the newest runs whose mean is held too (1: the value alone)
    level_spreads: float = 3.5  # the mean may stand this many of its spreads from the median

    def exact(self) -> DriftRule:
        """The rule of an exact counter, which does not move between runs of one build: any
        move of the value the worse way, the value alone."""
        return replace(self, spreads=0.0, floor=0.0, level_runs=1, level_spreads=0.0)


@dataclass(frozen=True)
class Level:
    """The mean of the newest runs (the value and the runs just before it) held to the median
    of the runs before them."""

    runs: int  # how many newest runs the mean is of
    mean: float
    median: float  # of the runs before them
    spread: float  # sigma of one run of those, from consecutive differences
    reference: int  # how many runs the median and spread come from
    change: float  # (mean - median) / |median|
    limit: float  # the relative move of the mean allowed in the worse direction
    drifted: bool  # the mean moved beyond it, and the value at least half as far


@dataclass(frozen=True)
class DriftResult:
    median: float  # of the last runs
    spread: float  # sigma of one run, from consecutive differences (the metric's unit)
    runs: int  # how many runs the median and spread come from
    change: float  # (value - median) / |median|; inf when the median is 0 and the value not
    limit: float  # the relative move allowed in the worse direction
    drifted: bool  # the value, or the level of the newest runs, moved beyond its limit
    level: Level | None = None  # the newest runs' mean; None where too few runs are kept
    alone: bool = False  # the value by itself moved beyond `limit`


DEFAULT = Detection()
DEFAULT_DRIFT = DriftRule()


def change_points(
    values: Sequence[float], *, exact: bool = False, detection: Detection = DEFAULT
) -> list[int]:
    """The index of the first run of each new level, ascending. `exact`: the series is an
    exact counter, and every change of its value starts a new level."""
    if exact:
        return [i for i in range(1, len(values)) if values[i] != values[i - 1]]
    found = e_divisive(values, detection)
    return [c for c in found if abs(level_change(values, found, c)) >= detection.min_change]


def level_medians(values: Sequence[float], cuts: Sequence[int], at: int) -> tuple[float, float]:
    """The medians of the level before `at` and of the level from `at` on, each level bounded
    by the other cut points."""
    edges = [0, *sorted(set(cuts) | {at}), len(values)]
    i = edges.index(at)
    return statistics.median(values[edges[i - 1] : at]), statistics.median(
        values[at : edges[i + 1]]
    )


def level_change(values: Sequence[float], cuts: Sequence[int], at: int) -> float:
    """The relative move of the median at `at` (level_medians); inf when the level before is
    0 and the one after is not."""
    before, after = level_medians(values, cuts, at)
    return relative(after, before)


def relative(value: float, reference: float) -> float:
    if reference == 0:
        return 0.0 if value == 0 else math.copysign(math.inf, value)
    return (value - reference) / abs(reference)


def e_divisive(values: Sequence[float], detection: Detection = DEFAULT) -> list[int]:
    """Every significant split of E-divisive means (alpha = 1), hierarchical as Matteson and
    James give it: the best split over all current segments, tested by shuffling within each
    segment, until one is not significant. No magnitude filter (change_points applies it)."""
    x = _standardised(values)
    n = len(x)
    size = max(2, detection.min_size)
    if n < 2 * size:
        return []
    cuts: list[int] = []
    rng = np.random.default_rng(detection.seed)
    while True:
        segments = list(itertools.pairwise([0, *cuts, n]))
        best = [(_best_split(x[a:b], size), a) for a, b in segments]
        (tau, q), start = max(best, key=lambda item: item[0][1])
        if tau < 0 or not _significant(x, segments, q, size, detection, rng):
            return cuts
        cuts = sorted([*cuts, start + tau])


def _standardised(values: Sequence[float]) -> np.ndarray:
    """Centred on the median and scaled by the spread: the energy statistic does not change,
    and sums of large counters (10^9 sectors) lose no precision to their common offset."""
    x = np.asarray(values, dtype=np.float64)
    if not x.size:
        return x
    x = x - np.median(x)
    scale = float(np.median(np.abs(x))) or float(np.max(np.abs(x))) or 1.0
    return x / scale


def _significant(
    x: np.ndarray,
    segments: list[tuple[int, int]],
    observed: float,
    size: int,
    detection: Detection,
    rng: np.random.Generator,
) -> bool:
    """The permutation test: shuffled within each segment, how often does the best split of
    any segment reach the observed one? Stopped once the p-value can no longer be small
    enough (Besag and Clifford): (beaten + 1) / (permutations + 1) > significance."""
    # The epsilon: 0.29 * 100 is 28.999999999999996 in floating point, and 29 is meant.
    allowed = math.floor(detection.significance * (detection.permutations + 1) + 1e-9) - 1
    beaten = 0
    for _ in range(detection.permutations):
        best = -math.inf
        for a, b in segments:
            if b - a >= 2 * size:
                best = max(best, _best_split(rng.permutation(x[a:b]), size)[1])
        if best >= observed:
            beaten += 1
            if beaten > allowed:
                return False
    return True


def _best_split(x: np.ndarray, size: int) -> tuple[int, float]:
    """The split with the largest size-weighted energy distance: (tau, Q); (-1, -inf) when the
    segment is too short for two sides of `size` runs."""
    n = len(x)
    if n < 2 * size:
        return -1, -math.inf
    left = _left_distance_sums(x)
    total = _distance_sums(x)
    within_left_all = np.concatenate(([0.0], np.cumsum(left)))
    through = np.concatenate(([0.0], np.cumsum(total)))
    taus = np.arange(size, n - size + 1)
    m = taus.astype(np.float64)
    k = n - m
    within_left = within_left_all[taus]
    between = through[taus] - 2.0 * within_left
    within_right = within_left_all[n] - within_left - between
    pairs_left, pairs_right = m * (m - 1) / 2, k * (k - 1) / 2
    energy = 2.0 * between / (m * k) - within_left / pairs_left - within_right / pairs_right
    q = m * k / n * energy
    i = int(np.argmax(q))
    return int(taus[i]), float(q[i])


def _distance_sums(x: np.ndarray) -> np.ndarray:
    """sum_i |x_i - x_j| for every j, by sorting: O(n log n)."""
    n = len(x)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    prefix = np.concatenate(([0.0], np.cumsum(xs)))
    p = np.arange(n)
    sums = xs * p - prefix[:-1] + (prefix[-1] - prefix[1:]) - xs * (n - 1 - p)
    out = np.empty(n)
    out[order] = sums
    return out


def _left_distance_sums(x: np.ndarray) -> np.ndarray:
    """sum_{i<j} |x_i - x_j| for every j, in O(n log^2 n) by the levels of a merge sort: at
    each level, every position of a right block counts and sums the smaller values of its left
    block (one batched search over all blocks at once, by rank). A tie adds 0 either way."""
    n = len(x)
    order = np.argsort(x, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    width = 1 << max(0, (n - 1).bit_length())
    # Padding sits after every real position and ranks above every real value: it is never
    # on the left of a real position, so it adds nothing to a real sum.
    ranks = np.concatenate((rank, np.arange(n, width)))
    by_rank = np.concatenate((x[order], np.zeros(width - n)))
    below_count = np.zeros(width, dtype=np.int64)
    below_sum = np.zeros(width)
    half = 1
    while half < width:
        blocks = width // (2 * half)
        positions = np.arange(width).reshape(blocks, 2, half)
        left = np.sort(ranks[positions[:, 0, :]], axis=1)
        right = positions[:, 1, :].ravel()
        offset = np.arange(blocks, dtype=np.int64) * width
        keys = (left + offset[:, None]).ravel()
        block_of = np.repeat(np.arange(blocks), half)
        found = np.searchsorted(keys, ranks[right] + offset[block_of]) - block_of * half
        sums = np.concatenate((np.zeros((blocks, 1)), np.cumsum(by_rank[left], axis=1)), axis=1)
        below_count[right] += found
        below_sum[right] += sums[block_of, found]
        half *= 2
    j = np.arange(n)
    earlier = np.concatenate(([0.0], np.cumsum(x)))[:-1]
    result: np.ndarray = x * (2 * below_count[:n] - j) + earlier - 2.0 * below_sum[:n]
    return result


def spread(values: Sequence[float]) -> float:
    """sigma of one run, from the mean square successive difference (von Neumann et al. 1941,
    "The mean square successive difference", Ann. Math. Statist. 12:153: for independent noise
    E(x_i+1 - x_i)^2 = 2 sigma^2). A slow drift or one level shift inside the window moves each
    difference little, so it barely widens the spread the drift is judged against, as the
    spread around the median would (a 30-run ramp of 1% a run: 11%). Squares, not absolute
    values or their median: a CI runner keeps one machine start for a few merges, so most
    differences are one start's small noise and a few are the jumps between starts; the mean
    absolute difference weighs those jumps too little (on the tuning starts: 0.90 false alarms
    per 100 runs against 0.35), and a median of differences that are mostly 0 is 0 (1.9)."""
    if len(values) < 2:
        return 0.0
    squares = [(b - a) ** 2 for a, b in itertools.pairwise(values)]
    return math.sqrt(statistics.fmean(squares) / 2)


def drift(
    history: Sequence[float],
    value: float,
    direction: Direction,
    rule: DriftRule = DEFAULT_DRIFT,
) -> DriftResult | None:
    """`value` against the last `rule.runs` of `history` (oldest first, the value itself not
    in it); None when fewer than `rule.min_runs` are kept."""
    recent = list(history[-rule.runs :])
    if len(recent) < rule.min_runs:
        return None
    median = statistics.median(recent)
    sigma = spread(recent)
    change = relative(value, median)
    limit = _limit(rule.floor, rule.spreads, sigma, median, 1)
    alone = _worse(change, direction) > limit
    level = _level(history, value, direction, rule)
    drifted = alone or (level is not None and level.drifted)
    return DriftResult(median, sigma, len(recent), change, limit, drifted, level, alone)


def _limit(floor: float, spreads: float, sigma: float, median: float, runs: int) -> float:
    """The relative move allowed to the mean of `runs` runs: `spreads` times its spread (one
    run's over sqrt(runs)), and `floor` at least."""
    return max(floor, spreads * sigma / math.sqrt(runs) / abs(median) if median else 0.0)


def _worse(change: float, direction: Direction) -> float:
    if direction is Direction.HIGHER_IS_WORSE:
        return change
    if direction is Direction.LOWER_IS_WORSE:
        return -change
    return abs(change)


def _level(
    history: Sequence[float], value: float, direction: Direction, rule: DriftRule
) -> Level | None:
    """The newest `rule.level_runs` runs (the value and those just before it) held to the
    `rule.runs` runs before them; None for a rule of one run or too few runs kept. The value
    itself must stand at least halfway from that median to the mean, the worse way: it belongs
    to the new level, and a run back at the old one is not flagged for the runs before it."""
    k = rule.level_runs
    if k < 2:
        return None
    kept = len(history) - (k - 1)
    reference = list(history[: max(kept, 0)][-rule.runs :])
    if not reference or len(reference) < rule.min_runs:
        return None
    newest = [*history[kept:], value]
    median = statistics.median(reference)
    sigma = spread(reference)
    mean = statistics.fmean(newest)
    change = relative(mean, median)
    limit = _limit(rule.floor, rule.level_spreads, sigma, median, k)
    moved = _worse(change, direction)
    drifted = moved > limit and _worse(relative(value, median), direction) >= moved / 2
    return Level(k, mean, median, sigma, len(reference), change, limit, drifted)
