"""The bound calibrated from 3 runs or more, against what docs/noise.md says it is: max(2 x the
relative spread of the per-run values, the metric's floor, the launches' range), the floors of
its table, and the rule text that tells a reviewer which of them won."""

from __future__ import annotations

import re

import pytest

from perfgate.lifecycle.calibrate import (
    FLOORS,
    TIME_FLOOR_LONG,
    TIME_FLOOR_POINTS,
    KernelNoise,
    calibrate,
    floor_for,
    relative_spread,
    time_floor,
)
from perfgate.metrics.catalog import lookup, stall_cpi
from tests.conftest import ROOT

NOISE = (ROOT / "docs" / "noise.md").read_text()


def _table() -> dict[str, tuple[float, float, str]]:
    """docs/noise.md's floors of fixed metrics: name -> (relative, absolute, why). A floor
    that widens when the recorded runs differ says so after a `;`, in both columns."""
    out = {}
    for m in re.finditer(
        r"^\s*\| `(\w+)` \| ([0-9.]+)%(?: and ([0-9.]+))?(?:; [^|]*)? \| (.*?) \|$", NOISE, re.M
    ):
        out[m[1]] = (round(float(m[2]) / 100, 6), float(m[3] or 0), m[4])
    return out


def test_the_floors_are_those_docs_noise_md_gives() -> None:
    table = _table()
    fixed = {name for name in FLOORS if name not in ("duration", "total_time")}
    assert set(table) == fixed
    for name, (relative, absolute, why) in table.items():
        floor = FLOORS[name](KernelNoise(50_000.0))
        assert (round(floor.relative, 6), floor.absolute) == (relative, absolute)
        assert why == floor.why or why.startswith(floor.why + "; ")


@pytest.mark.parametrize(
    ("gpu", "us", "floor"),
    # docs/noise.md: per GPU kind, linear between the points (H100: a step at 20 us); another
    # kind takes H200's.
    [("NVIDIA H100 80GB HBM3", 0.5, 0.0925), ("NVIDIA H100 80GB HBM3", 2, 0.0925),
     ("NVIDIA H100 80GB HBM3", 6, 0.0925), ("NVIDIA H100 80GB HBM3", 10, 0.0925),
     ("NVIDIA H100 80GB HBM3", 15, 0.0925), ("NVIDIA H100 80GB HBM3", 19.9, 0.0925),
     ("NVIDIA H100 80GB HBM3", 20, 0.065), ("NVIDIA H100 80GB HBM3", 2000, 0.065),
     ("NVIDIA H200", 2, 0.08), ("NVIDIA H200", 6, (0.08 + 0.11) / 2), ("NVIDIA H200", 10, 0.11),
     ("NVIDIA H200", 15, 0.11 - (0.11 - 0.075) * 5 / 9.999), ("NVIDIA H200", 19.999, 0.075),
     ("NVIDIA H200", 20, 0.055),
     ("NVIDIA H200", 2000, 0.055), ("NVIDIA B200", 2000, 0.055), (None, 10, 0.11)],
)  # fmt: skip
def test_the_time_floor_follows_the_kernels_duration_and_gpu(
    gpu: str | None, us: float, floor: float
) -> None:
    for metric in ("duration", "total_time"):
        assert FLOORS[metric](KernelNoise(us * 1000, gpu)).relative == pytest.approx(floor)
    assert time_floor(us * 1000, gpu).absolute == 0.0
    assert TIME_FLOOR_POINTS["H100"][-1][1] == TIME_FLOOR_LONG


def test_an_unknown_duration_takes_the_kinds_widest_floor() -> None:
    assert (time_floor(None).relative, time_floor(None).absolute) == (0.0925, 0.0)
    assert time_floor(None, "NVIDIA H200").relative == 0.11


def test_a_count_whose_recorded_runs_differ_is_not_exact() -> None:
    for name in ("instructions_executed", "tensor_instructions"):
        exact = FLOORS[name](KernelNoise(5e4, "NVIDIA H100 80GB HBM3"))
        varies = FLOORS[name](KernelNoise(5e4, "NVIDIA H100 80GB HBM3", varies=True))
        assert (exact.relative, varies.relative) == (0.01, 0.025)
        assert exact.absolute == varies.absolute == 0.0
    wee = FLOORS["warp_execution_efficiency"]
    assert wee(KernelNoise(5e4)).absolute == 0.5
    assert (wee(KernelNoise(5e4, varies=True)).relative, wee(KernelNoise(5e4)).relative) == (0, 0)
    assert wee(KernelNoise(5e4, varies=True)).absolute == 2.5
    # calibrate() says "varies" when the runs differ: a 0.5% spread gets the 2.5% floor.
    cal = calibrate(lookup("instructions_executed"), [1000.0, 1005.0, 1002.0], 5e4)
    assert cal.relative == pytest.approx(0.025)
    assert calibrate(lookup("instructions_executed"), [1e3, 1e3, 1e3], 5e4).relative == 0.01
    # 0.1% exactly differs; an nvjet GEMM's 0.05% between runs does not: it keeps the 1%.
    assert calibrate(lookup("instructions_executed"), [1e3, 1e3 + 1, 1e3], 5e4).relative == 0.025
    assert calibrate(lookup("instructions_executed"), [1e4, 1e4 + 5, 1e4], 5e4).relative == 0.01


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
    # 100 us kernel on an H100: floor 6.5%. Spread 0.2% x 2 = 0.4%: the floor.
    cal = calibrate(duration, [100e3, 100.1e3, 100.2e3], 100e3)
    assert cal.relative == 0.065 and cal.runs == 3 and cal.absolute == 0.0
    assert cal.rule.endswith(": floor 6.50%")
    # The same runs on an H200: 5.5%.
    h200 = calibrate(duration, [100e3, 100.1e3, 100.2e3], 100e3, gpu="NVIDIA H200")
    assert h200.relative == 0.055 and "on H200" in h200.rule
    # Spread 4% x 2 = 8%: the spread.
    cal = calibrate(duration, [100e3, 102e3, 104e3], 100e3)
    assert cal.relative > 0.065
    assert cal.relative == pytest.approx(2 * 4e3 / 102e3)
    assert cal.rule.endswith(f": spread {cal.relative:.2%}")
    # A launch range of 12% beyond both.
    cal = calibrate(duration, [100e3, 102e3, 104e3], 100e3, launch_range=0.12)
    assert cal.relative == 0.12
    assert cal.rule.endswith(", launch range 12.00%: launch range 12.00%")
    # A launch range under the floor changes nothing but the rule's note.
    cal = calibrate(duration, [100e3, 100.1e3, 100.2e3], 100e3, launch_range=0.01)
    assert cal.relative == 0.065 and cal.rule.endswith(", launch range 1.00%: floor 6.50%")


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
