from __future__ import annotations

import statistics

import pytest

from perfgate.ingest import read_capture
from perfgate.judge.outcome import Outcome, numeric_outcome
from perfgate.lifecycle.calibrate import calibrate, time_floor
from perfgate.metrics.catalog import lookup
from perfgate.metrics.measure import Measured, measure
from perfgate.metrics.thresholds import Direction, Threshold
from perfgate.metrics.timefloors import two_run_floor_at
from tests.conftest import data

# Measured (docs/noise.md): kernels of 10-20 us move up to 3.3% across starts, so a bound that
# passes them cannot also catch +5% on their lowest re-capture; the goal holds from 20 us.
CATCH_FROM_NS = 20_000

STARTS = {
    "top": [f"zoo-good-short-run{i}.csv" for i in (1, 2, 3)],
    "session1": [f"session1/zoo-good-short-run{i}.csv.gz" for i in (1, 2, 3)],
    "session2": [f"session2/zoo-good-short-run{i}.csv.gz" for i in (1, 2, 3)],
}


def test_one_or_two_runs_keep_the_catalog_default_and_say_so() -> None:
    defn = lookup("duration")
    for runs in ([50_000.0], [50_000.0, 50_500.0]):
        cal = calibrate(defn, runs, 50_000.0)
        assert (cal.relative, cal.absolute) == (defn.threshold.relative, defn.threshold.absolute)
        assert "catalog default" in cal.rule and "3 separate ncu runs" in cal.rule
    assert calibrate(defn, [1.0], 1.0).rule.startswith("1 run:")


def test_exact_metrics_stay_exact_unless_the_runs_disagree() -> None:
    regs = lookup("registers_per_thread")
    assert calibrate(regs, [32.0, 32.0, 32.0], 5e4).relative == 0.0
    moved = calibrate(lookup("global_load_sectors"), [1000.0, 1000.0, 1010.0], 5e4)
    assert moved.relative == pytest.approx(2 * 0.01)


def test_time_floor_depends_on_the_kernels_duration() -> None:
    # One run per check on H100 (docs/noise.md "A baseline from several machine starts"): a
    # kernel of 10-20 us moved up to 8.01% with nothing changed, one from 20 us 5.52%; the
    # floors sit above both, one value below 20 us and a step down from it. +5% from 20 us is
    # caught by two runs per check, whose floor is under 5%.
    assert time_floor(2e6).relative == time_floor(20e3).relative > 0.0552
    assert time_floor(20e3).relative < time_floor(19.9e3).relative == time_floor(10e3).relative
    assert time_floor(10e3).relative > 0.0801
    floor = two_run_floor_at(20e3, "NVIDIA H100 80GB HBM3")
    assert floor is not None and floor < 0.05
    assert time_floor(2e3).relative >= 0.06  # 2 us kernels moved about 6% across starts


def test_a_wide_spread_widens_the_bound_beyond_the_floor() -> None:
    cal = calibrate(lookup("duration"), [100e3, 104e3, 102e3], 100e3)
    assert cal.relative == pytest.approx(2 * 4e3 / 102e3)
    assert "spread" in cal.rule and cal.runs == 3


def _per_run(paths: list[str], metric: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for path in paths:
        cap = read_capture(data(path))
        kernels: dict[str, list] = {}
        for la in cap.launches:
            kernels.setdefault(la.function, []).append(la)
        for function, launches in kernels.items():
            m = measure(lookup(metric), launches, cap.columns)
            if isinstance(m, Measured):
                out.setdefault(function, []).append(float(m.value))
    return out


# Duration: +9% since the H100 one-run time floor from 20 us became 6.5% (a 23.2 us norm
# reduce_kernel moved 5.52% in one run against a baseline pooled from three other starts,
# docs/noise.md): +8% on a run that came in 2.1% under the baseline's median is within it.
# benchmarks/pooled.py measures +5% on real re-captures, two runs per check.
@pytest.mark.parametrize("metric,regression", [
    ("duration", 0.09), ("dram_bytes", 0.03), ("instructions_executed", 0.015)])  # fmt: skip
def test_a_three_run_baseline_passes_other_starts_and_catches_the_goal(
    metric: str, regression: float
) -> None:
    # Real captures of one build on three machine starts: a baseline calibrated from one
    # start's 3 runs must pass every run of the other starts and catch the regression on
    # every kernel of 10 us or more, judged by the gate's own rule from the per-run range.
    defn = lookup(metric)
    durations = {k: statistics.median(v) for k, v in _per_run(STARTS["top"], "duration").items()}
    runs = {start: _per_run(paths, metric) for start, paths in STARTS.items()}
    checked = 0
    for start, baseline in runs.items():
        for kernel, values in baseline.items():
            if len(values) < 3 or not statistics.median(values):
                continue
            cal = calibrate(defn, values, durations.get(kernel))
            t = Threshold(cal.relative, cal.absolute)
            mid, lo, hi = statistics.median(values), min(values), max(values)
            for other, current in runs.items():
                if other == start:
                    continue
                for value in current.get(kernel, []):
                    v = numeric_outcome(mid, value, t, Direction.HIGHER_IS_WORSE, low=lo, high=hi)
                    assert v is not Outcome.WORSE, (metric, kernel, start, other, value)
                    # Kernels of 10 us or more; DRAM bytes only where 3% is more than the
                    # absolute floor (init_random writes 40 KB: its bytes stay in L2).
                    # A baseline whose own runs spread widely gets a wider bound by design
                    # (session1's zoo_bank_conflicts: 2.7%); the goal holds where the floor
                    # rules.
                    if (
                        durations.get(kernel, 0.0) >= CATCH_FROM_NS
                        and value * regression > t.absolute
                        and "floor" in cal.rule.rsplit(":", 1)[-1]
                    ):
                        worse = numeric_outcome(mid, value * (1 + regression), t,
                                              Direction.HIGHER_IS_WORSE, low=lo, high=hi)  # fmt: skip
                        assert worse is Outcome.WORSE, (metric, kernel, value)
                        checked += 1
    assert checked > 0
