"""The time floors of a check of two runs or more (perfgate.judge.two_runs,
perfgate.metrics.timefloors.TWO_RUN_FLOOR_POINTS and TWO_RUN_CORRECTED_FLOOR_POINTS), on rules and on the corpus's real
re-captures: each floor covers the largest two-run move of its GPU kind and band, with a margin
no wider than the data supports, and a one-run check keeps one run's bounds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from perfgate.judge.common_mode import SPREAD_K
from perfgate.judge.two_runs import MIN_RUNS, runs_words, two_run_bound
from perfgate.metrics.timefloors import (
    CORRECTED_FLOOR_POINTS,
    TWO_RUN_CORRECTED_FLOOR_POINTS,
    TWO_RUN_FLOOR_POINTS,
    corrected_floor_at,
    time_floor_at,
    two_run_floor_at,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import detection
import pooled
import two_runs as analysis

H200 = "NVIDIA H200"
H100 = "NVIDIA H100 80GB HBM3"


def test_a_check_of_one_run_keeps_its_bound() -> None:
    floor = time_floor_at(50_000.0, H100)
    assert MIN_RUNS == 2
    assert two_run_bound(floor, floor, 50_000.0, H100, 0.0, 1) is None
    assert two_run_bound(floor, floor, 50_000.0, H100, 0.0, 2) == 0.03
    assert two_run_bound(floor, floor, 50_000.0, H100, 0.0, 3) == 0.03


def test_only_a_bound_the_time_floor_set_is_tightened() -> None:
    floor = time_floor_at(50_000.0, H100)
    # A kernel's own spread, or a user's threshold, set the bound: kept.
    assert two_run_bound(0.06, 0.06, 50_000.0, H100, 0.03, 2) is None
    assert two_run_bound(floor + 0.001, floor + 0.001, 50_000.0, H100, 0.0, 2) is None
    # Set by the floor, the kernel's own spread still counts: K x it where larger.
    assert two_run_bound(floor, floor, 50_000.0, H100, 0.016, 2) == SPREAD_K * 0.016
    # Never looser than the bound it would be judged under otherwise (the corrected one),
    # and no tighter bound where it only equals it: nothing to say "two runs" about.
    assert two_run_bound(floor, 0.02, 50_000.0, H100, 0.0, 2) is None
    assert two_run_bound(floor, 0.03, 50_000.0, H100, 0.0, 2) is None
    assert two_run_bound(floor, 0.0301, 50_000.0, H100, 0.0, 2) == 0.03


def test_two_run_floors_are_per_kind_from_10_us() -> None:
    assert two_run_floor_at(9_999.0, H100) is None and two_run_floor_at(5_000.0, H200) is None
    assert two_run_floor_at(50_000.0, "NVIDIA A100-SXM4-80GB") is None  # nothing measured
    # One floor for 10-20 us and a step down at 20 us (docs/noise.md "A baseline from several
    # machine starts": the moves of 10-20 us do not shrink with the duration).
    for ns in (10_000.0, 15_000.0, 19_999.0):
        assert two_run_floor_at(ns, H100) == pytest.approx(0.0575)
        assert two_run_floor_at(ns, H200) == pytest.approx(0.0575)
        assert two_run_floor_at(ns, H200, corrected=True) == pytest.approx(0.0575)
    assert two_run_floor_at(20_000.0, H100) == pytest.approx(0.03)
    assert two_run_floor_at(20_000.0, H200) == pytest.approx(0.04)
    # After the common factor (H200 only): tighter from 20 us; H100 has no corrected table.
    assert two_run_floor_at(20_000.0, H200, corrected=True) == pytest.approx(0.0325)
    assert two_run_floor_at(50_000.0, H100, corrected=True) == two_run_floor_at(50_000.0, H100)
    # Every two-run floor is below one run's floor of its duration: it only tightens.
    for gpu in (H100, H200):
        for ns in (10_000.0, 14_000.0, 20_000.0, 80_000.0):
            got = two_run_floor_at(ns, gpu)
            assert got is not None and got < time_floor_at(ns, gpu)


def test_a_corrected_time_gets_the_corrected_two_run_floor() -> None:
    corrected = corrected_floor_at(50_000.0, H200)
    assert corrected is not None
    # The corrected one-run bound it would be judged under, tightened by two runs only when
    # the factor applied.
    assert two_run_bound(0.055, corrected, 50_000.0, H200, 0.0, 2, corrected=True) == 0.0325
    assert two_run_bound(0.055, 0.055, 50_000.0, H200, 0.0, 2) == 0.04
    assert two_run_bound(0.055, corrected, 50_000.0, H200, 0.0, 1, corrected=True) is None


def test_the_words_name_the_runs_and_the_bound() -> None:
    assert runs_words(2, 0.0275).startswith("two runs: bound 2.75%")
    assert runs_words(3, 0.04).startswith("3 runs: bound 4%")


@pytest.fixture(scope="module")
def moves() -> list[analysis.Move]:
    return analysis.both()


@pytest.fixture(scope="module")
def pooled_moves() -> dict[str, list[pooled.Move]]:
    return {kind: pooled.moves(kind) for kind in ("h100", "h200")}


def _floor_of(m: pooled.Move, kind: str) -> float:
    gpu = H100 if kind == "h100" else H200
    if m.runs >= MIN_RUNS:
        got = two_run_floor_at(m.ns, gpu, m.corrected)
    else:
        got = corrected_floor_at(m.ns, gpu) if m.corrected else time_floor_at(m.ns, gpu)
    assert got is not None
    return got


@pytest.mark.parametrize(
    ("kind", "runs", "corrected", "low", "high", "largest"),
    [
        # benchmarks/pooled.py --moves: every three tuning starts pooled, checked against every
        # other start; the largest move past a kernel's own bound parts (timefloors' comments)
        ("h100", 2, False, 20_000.0, float("inf"), 0.0248),  # 3%: 1.21x
        ("h100", 2, False, 10_000.0, 20_000.0, 0.0487),  # 5.75%: 1.18x
        ("h200", 2, True, 10_000.0, 20_000.0, 0.0493),  # 5.75%: 1.17x
        ("h200", 2, True, 20_000.0, float("inf"), 0.0277),  # 3.25%: 1.17x
        ("h100", 1, False, 20_000.0, float("inf"), 0.0552),  # 6.5%: 1.18x
        ("h100", 1, False, 10_000.0, 20_000.0, 0.0801),  # 9.25%: 1.15x
        ("h200", 1, True, 10_000.0, 20_000.0, 0.0638),  # 7.5%: 1.18x
        ("h200", 1, True, 20_000.0, float("inf"), 0.0346),  # 4%: 1.16x
    ],
)
def test_each_time_floor_covers_its_largest_pooled_move_with_a_margin(
    pooled_moves: dict[str, list[pooled.Move]],
    kind: str,
    runs: int,
    corrected: bool,
    low: float,
    high: float,
    largest: float,
) -> None:
    band = [
        m
        for m in pooled_moves[kind]
        if m.runs == runs and m.corrected == corrected and low <= m.ns < high
    ]
    worst = max(band, key=lambda m: m.move / _floor_of(m, kind))
    floor = _floor_of(worst, kind)
    assert worst.move == pytest.approx(largest, abs=5e-4)  # the data the comment states
    # Too tight: held-back starts exceeded tuning ones by 10-30% before.
    assert floor >= 1.15 * worst.move
    # Too loose: a wider floor misses +5% on kernels the start ran faster.
    assert floor <= 1.25 * worst.move


def test_the_floors_step_at_20_us() -> None:
    # The 10-20 us moves do not shrink with the duration (H100, two runs: 4.87% at 15.1 us,
    # 1.19% at 10-12 us): one floor up to 20 us, the narrower one from it.
    for gpu, corrected in ((H100, False), (H200, True)):
        at10, at19, at20 = (two_run_floor_at(ns, gpu, corrected) for ns in (1e4, 19_999.0, 2e4))
        assert at10 is not None and at19 is not None and at20 is not None
        assert at10 == at19 > at20


def test_h200_judged_as_measured_keeps_the_corrected_one_run_floor() -> None:
    # Judged as measured (no common factor) an H200 kernel of 56 us moved 3.52% in two runs
    # with its factor taken off: no tighter than the corrected one-run floor.
    assert TWO_RUN_FLOOR_POINTS["H200"][-1] == CORRECTED_FLOOR_POINTS["H200"][-1]
    assert TWO_RUN_CORRECTED_FLOOR_POINTS["H200"][-1][1] < CORRECTED_FLOOR_POINTS["H200"][-1][1]


def test_no_two_run_check_of_the_corpus_raises_a_time_false_alarm(
    moves: list[analysis.Move],
) -> None:
    two = [m for m in moves if m.runs == 2 and m.recorded_ns >= 10_000.0]
    assert len(two) == 412  # 349 before h100-s and h200-i were tuning data, +63
    assert [m for m in two if m.move > m.bound] == []


def _duration(result: object, kernel: str) -> tuple[str, str]:
    verdict = next(v for v in result.verdicts if v.kernel == kernel)  # type: ignore[attr-defined]
    c = next(c for c in verdict.comparisons if c.metric == "duration")
    return c.bound, c.message


def test_a_two_run_check_uses_the_tighter_bound_and_a_one_run_check_does_not() -> None:
    from perfgate.verdicts.check import check

    gate = detection.GATE
    base = detection._baseline(
        tuple(gate / "h100-j" / f"cnn-fp32-run{i}.csv.gz" for i in (1, 2, 3))
    )
    runs = tuple(gate / "h100-k" / f"cnn-fp32-run{i}.csv.gz" for i in (1, 2))
    both = check(base, detection._read(detection.RunSet(runs)))
    alone = check(base, detection._read(runs[0]))
    long = {
        k.id: (m.high - m.low) / m.value
        for k in base.kernels
        if isinstance(d := k.value("duration"), float) and d >= 20_000.0
        for m in k.metrics
        if m.name == "duration" and m.threshold and m.threshold.relative == 0.065
        and isinstance(m.value, float) and m.low is not None and m.high is not None
    }  # fmt: skip
    assert len(long) >= 3
    # The two-run floor, or twice the kernel's own spread where that is wider.
    assert any(SPREAD_K * spread < 0.03 for spread in long.values())
    for kid, spread in long.items():
        bound, message = _duration(both, kid)
        want = f"{max(0.03, round(SPREAD_K * spread, 4)) * 100:.3g}%"
        assert bound == f"+{want}" and f"two runs: bound {want}" in message
        bound, message = _duration(alone, kid)
        assert bound == "+6.5%" and "runs: bound" not in message


def test_the_program_floor_of_two_runs_is_per_kind_and_only_tightens() -> None:
    from perfgate.judge.program import check_bound
    from perfgate.metrics.timefloors import (
        PROGRAM_FLOORS,
        TWO_RUN_PROGRAM_FLOORS,
        program_floor,
        two_run_program_floor,
    )

    assert two_run_program_floor(H100) == TWO_RUN_PROGRAM_FLOORS["H100"] == 0.015
    assert TWO_RUN_PROGRAM_FLOORS["H100"] < PROGRAM_FLOORS["H100"] == program_floor(H100)
    assert check_bound(program_floor(H100), H100, 2) == (0.015, 2)
    assert two_run_program_floor("NVIDIA A100-SXM4-80GB") is None
    assert two_run_program_floor(H200) == TWO_RUN_PROGRAM_FLOORS["H200"] == 0.02
    assert TWO_RUN_PROGRAM_FLOORS["H200"] < PROGRAM_FLOORS["H200"] == program_floor(H200)
    floor = program_floor(H200)
    assert check_bound(floor, H200, 2) == (0.02, 2)
    assert check_bound(floor, H200, 3) == (0.02, 2)
    assert check_bound(floor, H200, 1) == (floor, 0)
    # A bound the baseline runs' own spread set is kept.
    assert check_bound(0.031, H200, 2) == (0.031, 0)
    assert check_bound(0.031, H100, 2) == (0.031, 0)


def test_the_two_run_program_floor_covers_the_largest_two_run_move() -> None:
    """benchmarks/two_runs.py: the fastest of two runs moved at most +1.70% on H200 (one run at
    a time +2.04%, the same runs) and +0.88% on H100 (+0.94% one at a time); each floor sits
    1.15x above it or more and above every one-run move of its kind, and no looser than the
    data: H100's 1.5% under 2x, H200's 2% under 1.25x one run's largest."""
    from perfgate.metrics.timefloors import TWO_RUN_PROGRAM_FLOORS

    moves = analysis.both_programs()
    two = [m.move for m in moves if m.kind == "H200" and m.runs == 2]
    assert len(two) >= 30
    assert (
        max(two) * 1.15
        <= TWO_RUN_PROGRAM_FLOORS["H200"]
        < max(m.move for m in moves if m.kind == "H200" and m.runs == 1) * 1.25
    )
    h100 = [m.move for m in moves if m.kind == "H100" and m.runs == 2]
    assert len(h100) >= 40
    assert max(h100) == pytest.approx(0.0088, abs=5e-4)
    h100_one = max(m.move for m in moves if m.kind == "H100" and m.runs == 1)
    assert max(max(h100) * 1.15, h100_one) < TWO_RUN_PROGRAM_FLOORS["H100"] < 2 * h100_one


def test_a_two_run_h200_check_judges_its_program_under_the_two_run_floor() -> None:
    from perfgate.reports.summary import program_text
    from perfgate.verdicts.check import check

    gate = detection.GATE
    base = detection._baseline(tuple(gate / "h200-e" / f"gemms-run{i}.csv.gz" for i in (1, 2, 3)))
    assert base.program is not None and base.program.relative == 0.025
    runs = tuple(gate / "h200-f" / f"gemms-run{i}.csv.gz" for i in (1, 2))
    both = check(base, detection._read(detection.RunSet(runs))).program
    alone = check(base, detection._read(runs[0])).program
    assert both is not None and both.bound == 0.02 and both.floor_runs == 2
    assert "bound 2.0% (two runs): " in program_text(both)
    assert alone is not None and alone.bound == 0.025 and alone.floor_runs == 0
    assert "(two runs)" not in program_text(alone)


@pytest.mark.parametrize("workload", detection.GATE_TWO_RUN_TUNING, ids=lambda w: w.name)
def test_the_first_two_run_starts_raise_no_false_alarm(workload: detection.Workload) -> None:
    """h100-s and h200-i (held back for the first two-run floors, evaluated once, tuning data
    since: docs/noise.md "Held back: two fresh starts"): checked two runs at a time, no kernel
    fails but Triton's autotuner's choice, which the report names as the autotuner's."""
    from perfgate.judge.states import KernelState
    from perfgate.verdicts.check import check

    base = detection._baseline(workload.baseline_runs)
    assert len(workload.other_start_runs) == 2
    result = check(base, detection._read(detection.RunSet(workload.other_start_runs)))
    failing = [v for v in result.verdicts if int(v.exit_code) != 0]
    if "triton-autotune" in workload.name:
        assert all(v.headline and "autotuner" in v.headline.title for v in failing), failing
    else:
        assert not failing, [(v.kernel, v.state) for v in failing]
    assert result.program is None or result.program.state is not KernelState.REGRESSED


def test_an_autotuned_kernel_at_its_configuration_gets_the_two_run_floor() -> None:
    """An autotuned kernel's recorded range spans every configuration its runs chose
    (perfgate_rmsnorm_kernel on h100-j: 42.4-45.2 us, 6.6%); judged at one configuration,
    that range is no noise of it and must not hold off the two-run floor."""
    from perfgate.verdicts.check import check

    gate = detection.GATE
    base = detection._baseline(
        tuple(gate / "h100-j" / f"triton-autotune-run{i}.csv.gz" for i in (1, 2, 3))
    )
    entry = next(k for k in base.kernels if k.id == "perfgate_rmsnorm_kernel")
    duration = next(m for m in entry.metrics if m.name == "duration")
    assert entry.tuned and duration.low is not None and duration.high is not None
    assert SPREAD_K * (duration.high - duration.low) / duration.low > 0.065  # the whole range
    runs = tuple(gate / "h100-k" / f"triton-autotune-run{i}.csv.gz" for i in (1, 2))
    bound, message = _duration(check(base, detection._read(detection.RunSet(runs))), entry.id)
    assert bound == "+3%" and "two runs: bound 3%" in message
    bound, message = _duration(check(base, detection._read(runs[0])), entry.id)
    assert bound == "+6.5%" and "runs: bound" not in message


@pytest.mark.parametrize("workload", detection.GATE_TWO_RUN_HELD_BACK, ids=lambda w: w.name)
def test_the_sealed_starts_raise_no_false_alarm_in_two_runs(workload: detection.Workload) -> None:
    """h100-t, h100-u, h200-j, h200-k, h200-l (captured while these floors were tuned, sealed
    until they were fixed, evaluated once: docs/noise.md "Held back: five sealed starts"):
    checked two runs at a time, a kernel fails only for a configuration its baseline never
    recorded or its autotuner's choice, each named so."""
    from perfgate.judge.comparison import State
    from perfgate.judge.skips import Skip
    from perfgate.judge.states import KernelState
    from perfgate.verdicts.check import check

    base = detection._baseline(workload.baseline_runs)
    assert len(workload.other_start_runs) == 2
    result = check(base, detection._read(detection.RunSet(workload.other_start_runs)))
    for v in result.verdicts:
        if int(v.exit_code) == 0:
            continue
        by_config = v.state is KernelState.UNJUDGED and all(
            c.skip is Skip.CONFIGURATION for c in v.comparisons if c.state is State.UNJUDGED
        )
        by_autotuner = v.headline is not None and "autotuner" in v.headline.title
        assert by_config or by_autotuner, (v.kernel, v.state)
    assert result.program is None or result.program.state is not KernelState.REGRESSED


def test_the_sealed_starts_raise_no_time_false_alarm_in_two_runs() -> None:
    # docs/noise.md "Held back: five sealed starts", the autotuned programs aside (as
    # benchmarks/two_runs.py counts): no two-run move past its bound under these floors.
    moves = analysis.both(detection.GATE_TWO_RUN_HELD_BACK)
    two = [m for m in moves if m.runs == 2 and m.recorded_ns >= 10_000.0]
    assert len(two) > 100
    assert [m for m in two if m.move > m.bound] == []


def _with_duration(kernel: object, **changes: object) -> object:
    from dataclasses import replace

    metrics = tuple(
        replace(m, **changes) if m.name == "duration" else m
        for m in kernel.metrics  # type: ignore[attr-defined]
    )
    return replace(kernel, metrics=metrics)  # type: ignore[type-var]


def test_a_bound_not_calibrated_is_kept_and_a_range_unknown_is_no_spread() -> None:
    """time_bounds on a real entry of h100-j's cnn-fp32 (a kernel of 20 us or more whose bound
    the 6.5% floor set), checked as two runs: as recorded it is tightened to the 3% floor; a
    user's bound (no calibration) of the same 6.5% is kept; an entry without a recorded range
    has no own spread to hold the floor off."""
    from perfgate.metrics.timefloors import time_floor_at as floor_at
    from perfgate.verdicts.common_mode import time_bounds

    gate = detection.GATE
    base = detection._baseline(
        tuple(gate / "h100-j" / f"cnn-fp32-run{i}.csv.gz" for i in (1, 2, 3))
    )
    kernel = next(
        k
        for k in base.kernels
        if isinstance(d := k.value("duration"), float)
        and d >= 20_000.0
        and any(
            m.name == "duration"
            and m.threshold is not None
            and m.threshold.relative == floor_at(d, H100)
            and m.calibration
            and m.low is not None
            and m.high is not None
            and SPREAD_K * (m.high - m.low) / m.value < 0.03
            for m in k.metrics
        )
    )

    def bound(entry: object) -> float | None:
        got = time_bounds(entry, None, H100, 2)  # type: ignore[arg-type]
        duration = next(m for m in got.kernel.metrics if m.name == "duration")
        assert duration.threshold is not None
        return duration.threshold.relative

    assert bound(kernel) == 0.03
    assert bound(_with_duration(kernel, calibration=None)) == 0.065
    assert bound(_with_duration(kernel, low=None, high=None)) == 0.03
    # A wide range recorded (twice it over the floor) holds the floor off, as a spread does.
    value = next(m.value for m in kernel.metrics if m.name == "duration")
    wide = _with_duration(kernel, low=value, high=value * 1.035)
    assert bound(wide) == 0.065
