"""The bound calibrated from 3 runs or more, against what docs/noise.md says it is: max(2 x the
relative spread of the per-run values, the metric's floor, the launches' range), the floors of
its table, and the rule text that tells a reviewer which of them won."""

from __future__ import annotations

import re

import pytest

from perfgate.lifecycle.calibrate import FLOORS, calibrate, floor_for, relative_spread, time_floor
from perfgate.metrics.catalog import lookup, stall_cpi
from tests.conftest import ROOT

NOISE = (ROOT / "docs" / "noise.md").read_text()


def _table() -> dict[str, tuple[float, float, str]]:
    """docs/noise.md's floors of fixed metrics: name -> (relative, absolute, why)."""
    out = {}
    for m in re.finditer(
        r"^\s*\| `(\w+)` \| ([0-9.]+)%(?: and ([0-9.]+))? \| (.*?) \|$", NOISE, re.M
    ):
        out[m[1]] = (round(float(m[2]) / 100, 6), float(m[3] or 0), m[4])
    return out


def test_the_floors_are_those_docs_noise_md_gives() -> None:
    table = _table()
    fixed = {name for name in FLOORS if name not in ("duration", "total_time")}
    assert set(table) == fixed
    for name, (relative, absolute, why) in table.items():
        floor = FLOORS[name](50_000.0)
        assert (round(floor.relative, 6), floor.absolute, floor.why) == (relative, absolute, why)


@pytest.mark.parametrize(
    ("us", "floor"),
    # docs/noise.md: 8% up to 2 us, 6% at 10 us, 3.5% from 20 us, linear between.
    [(0.5, 0.08), (2, 0.08), (6, (0.08 + 0.06) / 2), (10, 0.06), (15, (0.06 + 0.035) / 2),
     (20, 0.035), (2000, 0.035)],
)  # fmt: skip
def test_the_time_floor_follows_the_kernels_duration(us: float, floor: float) -> None:
    for metric in ("duration", "total_time"):
        assert FLOORS[metric](us * 1000).relative == pytest.approx(floor)
    assert time_floor(us * 1000).absolute == 0.0


def test_an_unknown_duration_takes_the_short_kernels_floor() -> None:
    unknown = time_floor(None)
    assert (unknown.relative, unknown.absolute) == (0.08, 0.0)


def test_other_metrics_take_half_the_catalog_default_and_exact_ones_none() -> None:
    for defn in (lookup("sm_throughput"), stall_cpi("long_scoreboard")):
        floor = floor_for(defn, 1e5)
        assert (floor.relative, floor.absolute) == (
            defn.threshold.relative / 2,
            defn.threshold.absolute,
        )
    exact = floor_for(lookup("registers_per_thread"), 1e5)
    assert (exact.relative, exact.absolute) == (0.0, 0.0)


def test_the_spread_is_the_range_over_the_median() -> None:
    assert relative_spread([90.0, 100.0, 120.0]) == pytest.approx(0.3)
    assert relative_spread([-120.0, -100.0, -90.0]) == pytest.approx(0.3)
    assert relative_spread([0.0, 0.0, 0.0]) == 0.0
    assert relative_spread([0.0, 0.0, 5.0]) == float("inf")


def test_the_widest_of_spread_floor_and_launch_range_is_the_bound_and_the_rule_says_which() -> None:
    duration = lookup("duration")
    # 100 us kernel: floor 3.5%. Spread 0.2% x 2 = 0.4%: the floor.
    cal = calibrate(duration, [100e3, 100.1e3, 100.2e3], 100e3)
    assert cal.relative == 0.035 and cal.runs == 3 and cal.absolute == 0.0
    assert cal.rule.endswith(": floor 3.50%")
    # Spread 4% x 2 = 8%: the spread.
    cal = calibrate(duration, [100e3, 102e3, 104e3], 100e3)
    assert cal.relative == pytest.approx(2 * 4e3 / 102e3)
    assert cal.rule.endswith(f": spread {cal.relative:.2%}")
    # A launch range of 12% beyond both.
    cal = calibrate(duration, [100e3, 102e3, 104e3], 100e3, launch_range=0.12)
    assert cal.relative == 0.12
    assert cal.rule.endswith(", launch range 12.00%: launch range 12.00%")
    # A launch range under the floor changes nothing but the rule's note.
    cal = calibrate(duration, [100e3, 100.1e3, 100.2e3], 100e3, launch_range=0.01)
    assert cal.relative == 0.035 and cal.rule.endswith(", launch range 1.00%: floor 3.50%")


def test_an_absolute_floor_is_kept_and_written() -> None:
    cal = calibrate(lookup("dram_bytes"), [1e8, 1e8, 1e8], 1e5)
    assert (cal.relative, cal.absolute) == (0.021, 65536.0)
    assert cal.rule.endswith(": floor 2.10%, absolute 65536")


def test_runs_around_zero_get_an_absolute_bound_of_twice_their_range() -> None:
    occupancy = lookup("achieved_occupancy")  # floor 9% and 2 points
    cal = calibrate(occupancy, [0.0, 0.0, 10.0], 1e5)
    assert (cal.relative, cal.absolute) == (0.09, 20.0)
    assert cal.rule.startswith("3 runs around 0: absolute 20 ")
    # A range smaller than the absolute floor keeps the floor.
    assert calibrate(occupancy, [0.0, 0.0, 0.5], 1e5).absolute == 2.0


def test_fewer_than_three_runs_keep_the_default_and_their_spread() -> None:
    duration = lookup("duration")
    cal = calibrate(duration, [100e3, 110e3], 100e3)
    assert (cal.relative, cal.absolute) == (
        duration.threshold.relative,
        duration.threshold.absolute,
    )
    assert cal.spread == pytest.approx(10e3 / 105e3) and cal.runs == 2
    assert cal.rule.startswith("2 runs: catalog default")
    assert calibrate(duration, [], None).spread == 0.0
