"""The calibration floors against the cross-start noise of the tuning starts (docs/noise.md).

The figures are recomputed from the real captures each run (benchmarks/noise_model.py), so a
floor that someone tightens below what the data shows (a false alarm on an unchanged build)
or loosens well past it (a regression the data does not excuse slips through) fails here.
Held-back starts (h100-c, h200-b, H200 start3-) are never read: they are for evaluation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfgate.lifecycle.calibrate import (
    FLOORS,
    NEARLY_EXACT_FLOOR,
    STEADY_KERNEL_NS,
    TIME_FLOOR_POINTS,
    KernelNoise,
    calibrate,
    floor_for,
    time_floor,
)
from perfgate.metrics.catalog import Role, lookup, role_of
from perfgate.metrics.timefloors import two_run_floor_at

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import noise_model

# How much looser than the data a floor may be: the larger of +1.5 points and x1.5. One more
# machine start may drift a little past the tuning starts (the held-back starts do, by up to
# a few points on kernels under 20 us: docs/noise.md); 1.5 points is the smallest change the
# issue asks to catch (+1.5% instructions), so a floor looser than that by more than 1.5
# points hides a goal-sized regression with no data behind it; x1.5 scales for wide floors.
MARGIN_POINTS = 0.015
MARGIN_FACTOR = 1.5


@pytest.fixture(scope="module")
def needs() -> list[noise_model.FloorNeed]:
    pairs = [p for p in noise_model.tuning_pairs() if not p.within]
    results = [r for r in noise_model.compare_all(pairs) if noise_model.modelled(r)]
    assert "held back" not in " ".join(r.pair.label for r in results)
    found = noise_model.floor_needs(c for r in results for c in r.changes)
    assert found, "no cross-start change reached any floor: the corpus was not read"
    return found


def test_no_floor_is_tighter_than_the_tuning_data(needs: list[noise_model.FloorNeed]) -> None:
    tight = [n for n in needs if n.need > n.floor]
    assert not tight, [(n.metric, n.band, n.floor, n.need, n.where) for n in tight]


def test_no_floor_is_much_looser_than_the_tuning_data(needs: list[noise_model.FloorNeed]) -> None:
    # H100's time floors come from every trio of tuning gate starts pooled against every other
    # start, which this data (one baseline start per workload) understates; that data holds
    # them (tests/judge/test_two_runs.py, each floor within 1.25x of its largest move).
    loose = [
        n
        for n in needs
        if n.floor > max(n.need + MARGIN_POINTS, n.need * MARGIN_FACTOR) + 1e-9
        and not (n.metric in ("duration", "total_time") and n.band.endswith("(H100)"))
    ]
    assert not loose, [(n.metric, n.band, n.floor, n.need) for n in loose]


def test_floors_the_data_never_reached_stay_near_exact(
    needs: list[noise_model.FloorNeed],
) -> None:
    """A floor no cross-start change came near has nothing to justify it beyond the margin."""
    reached = {n.metric for n in needs}
    # An evidence metric's floor only keeps its notes quiet (noise_model.floor_needs leaves
    # evidence out): it is not held to the data.
    unreached = {
        m: FLOORS[m](KernelNoise(None)).relative
        for m in FLOORS
        if m not in reached and role_of(m) is Role.PRIMARY
    }
    assert unreached, "every floor was reached: this test checks nothing"
    assert {m: f for m, f in unreached.items() if f > MARGIN_POINTS} == {}


def test_every_time_band_was_measured(needs: list[noise_model.FloorNeed]) -> None:
    # Per GPU kind; a kernel under 5 us is under catalog.SHORT_KERNEL_NS, its time evidence
    # (unless it moved over 1.5 us a launch), so no floor of its band must cover anything.
    bands = {n.band for n in needs if n.metric == "duration"}
    assert bands == {
        f"{label} ({kind})" for _, label in noise_model.BANDS[1:] for kind in TIME_FLOOR_POINTS
    }


def test_the_floors_leave_the_issue_goals_detectable() -> None:
    """+5% duration from 20 us, +1.5% instructions, +3% DRAM bytes must exceed their floors:
    a duration in a check of two runs (one run's floor on H100 is 6.5% from 20 us: docs/noise.md
    "A baseline from several machine starts")."""
    for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        for corrected in (False, True):
            floor = two_run_floor_at(STEADY_KERNEL_NS, gpu, corrected)
            assert floor is not None and floor < 0.05
    assert time_floor(STEADY_KERNEL_NS).relative > 0.05  # one run on H100: not this goal
    assert NEARLY_EXACT_FLOOR < 0.015
    assert floor_for(lookup("instructions_executed"), None).relative < 0.015
    assert floor_for(lookup("dram_bytes"), None).relative < 0.03


@pytest.mark.parametrize("metric", sorted(FLOORS))
def test_calibration_never_narrows_a_bound_below_its_floor(metric: str) -> None:
    defn = lookup(metric)
    quiet = calibrate(defn, [100.0, 100.0, 100.0], 50_000.0)
    assert quiet.relative == pytest.approx(floor_for(defn, 50_000.0).relative)
    wide = calibrate(defn, [100.0, 150.0, 120.0], 50_000.0)
    assert wide.relative > floor_for(defn, 50_000.0).relative
