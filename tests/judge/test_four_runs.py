"""The floor of a check of four runs or more (perfgate.judge.two_runs.four_run_bound,
perfgate.metrics.timefloors.FOUR_RUN_FLOOR_POINTS): a kernel of 10-20 us judged as measured
under the four-run floor alone, on rules and on real checks of cards captured with four runs
(the floors against their data: tests/real/test_four_run_gate.py)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from perfgate.judge.comparison import Comparison
from perfgate.judge.two_runs import FOUR_RUNS, four_run_bound, runs_words
from perfgate.metrics.timefloors import (
    FOUR_RUN_FLOOR_POINTS,
    four_run_floor_at,
    time_floor_at,
    two_run_floor_at,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import pooled  # noqa: E402

H200 = "NVIDIA H200"
H100 = "NVIDIA H100 80GB HBM3"


def test_the_four_run_floor_covers_10_to_20_us_on_the_measured_kinds_only() -> None:
    assert FOUR_RUNS == 4
    for ns in (10_000.0, 15_000.0, 19_999.0):
        assert four_run_floor_at(ns, H100) == 0.03
        assert four_run_floor_at(ns, H200) == 0.0425
    for ns in (9_999.0, 20_000.0, 50_000.0):  # the two-run rules hold there
        assert four_run_floor_at(ns, H100) is None and four_run_floor_at(ns, H200) is None
    assert four_run_floor_at(15_000.0, "NVIDIA A100-SXM4-80GB") is None
    assert set(FOUR_RUN_FLOOR_POINTS) == {"H100", "H200"}


def test_the_four_run_floor_is_tighter_than_two_runs_where_it_applies() -> None:
    for gpu in (H100, H200):
        two = two_run_floor_at(15_000.0, gpu)
        four = four_run_floor_at(15_000.0, gpu)
        assert two is not None and four is not None and four < two


def test_only_four_runs_or_more_and_a_bound_the_floor_set_are_tightened() -> None:
    floor = time_floor_at(15_000.0, H100)
    assert four_run_bound(floor, 15_000.0, H100, 3) is None
    assert four_run_bound(floor, 15_000.0, H100, 4) == 0.03
    assert four_run_bound(floor, 15_000.0, H100, 5) == 0.03
    # A user's threshold or the kernel's own spread set the bound: the other rules judge it.
    assert four_run_bound(0.12, 15_000.0, H100, 4) is None
    assert four_run_bound(floor + 0.001, 15_000.0, H100, 4) is None
    # Outside 10-20 us, or another kind: none.
    assert four_run_bound(time_floor_at(25_000.0, H100), 25_000.0, H100, 4) is None
    assert (
        four_run_bound(time_floor_at(15_000.0, "NVIDIA A100"), 15_000.0, "NVIDIA A100", 4) is None
    )


def test_the_words_say_four_runs_and_as_measured() -> None:
    assert runs_words(4, 0.03, True) == (
        "4 runs: bound 3% (the floor of a check of four runs or more, judged as measured, "
        "docs/noise.md)"
    )
    assert "two runs or more" in runs_words(4, 0.03)


def _baseline(kind: str, starts: Sequence[str], workload: str) -> object:
    return pooled._baseline(tuple(p for s in starts for p in pooled.runs_of(s, workload)))


def _comparisons(
    base: object, card: str, workload: str, runs: int
) -> dict[tuple[str, str], Comparison]:
    from perfgate.verdicts.check import check

    files = pooled.runs_of(card, workload, 4)[:runs]
    got = check(base, pooled._read(pooled.RunSet(files)))  # type: ignore[arg-type]
    return {(v.kernel, c.metric): c for v in got.verdicts for c in v.comparisons}


def test_an_h100_check_of_four_runs_judges_a_15_us_gemm_under_the_four_run_floor() -> None:
    """h100-xag1's gemms, four runs and two, against h100-j+k+o pooled: the split-K GEMM of
    15.1 us (recorded bound 9.25%, the one-run floor) is judged at 3% in four runs, 5.75% in
    two; a 51 us GEMM keeps the two-run floor of 3% either way."""
    base = _baseline("h100", ("h100-j", "h100-k", "h100-o"), "gemms")
    four = _comparisons(base, "h100-xag1", "gemms", 4)
    two = _comparisons(base, "h100-xag1", "gemms", 2)
    gemm = ("nvjet_sm90_hsh_128x16_64x11_4x1_v_bz_splitK_NNT", "duration")
    assert four[gemm].bound == "+3%" and two[gemm].bound == "+5.75%"
    assert "4 runs: bound 3% (the floor of a check of four runs or more, judged as measured" in (
        four[gemm].message
    )
    assert "judged as measured" not in two[gemm].message
    long = next(k for k in four if k[1] == "duration" and k[0].startswith("sm90_xmma_gemm"))
    assert four[long].bound == two[long].bound == "+3%"
    assert "four runs" not in four[long].message


def test_an_h200_check_of_four_runs_takes_no_common_factor_off_a_10_to_20_us_time() -> None:
    """h200-xdg0's encoder, four runs, against h200-e+f+g pooled: its 13 us GEMM's duration is
    judged as measured at 4.25%, its total time still after the common factor."""
    base = _baseline("h200", ("h200-e", "h200-f", "h200-g"), "hf-encoder")
    four = _comparisons(base, "h200-xdg0", "hf-encoder", 4)
    name = "nvjet_sm90_hsh_192x128_64x5_1x2_h_bz_coopB_bias_TNT"
    duration, total = four[(name, "duration")], four[(name, "total_time")]
    assert duration.bound == "+4.25%" and "judged as measured" in duration.message
    assert "common factor" not in duration.message
    assert "common factor" in total.message
    assert duration.baseline == pytest.approx(12_992.0)  # the recorded time, not scaled


def test_four_runs_without_a_common_factor_get_the_four_run_floor_and_three_the_two_run_one() -> (
    None
):
    """time_bounds on the pooled entry of the 15.1 us split-K GEMM (h100-j+k+o, bound 9.25%, the
    one-run floor), where no common factor applies: four runs are judged as measured at 3%,
    three under the two-run floor, one as recorded."""
    from perfgate.verdicts.common_mode import time_bounds

    base = _baseline("h100", ("h100-j", "h100-k", "h100-o"), "gemms")
    entry = next(
        k
        for k in base.kernels  # type: ignore[attr-defined]
        if k.id == "nvjet_sm90_hsh_128x16_64x11_4x1_v_bz_splitK_NNT"
    )

    def relative(kernel: object) -> float | None:
        m = next(m for m in kernel.metrics if m.name == "duration")  # type: ignore[attr-defined]
        return m.threshold.relative if m.threshold else None

    assert relative(entry) == 0.0925

    def bound(runs: int) -> tuple[float | None, frozenset[str], frozenset[str]]:
        got = time_bounds(entry, None, H100, runs)
        return relative(got.kernel), got.two_run, got.as_measured

    assert bound(4) == (0.03, frozenset({"duration"}), frozenset({"duration"}))
    assert bound(5) == bound(4)
    assert bound(3) == (0.0575, frozenset({"duration"}), frozenset())
    assert bound(1) == (0.0925, frozenset(), frozenset())


def test_a_time_with_no_relative_bound_gets_no_noise_words() -> None:
    """rules.word_noise: a duration whose bound is a user's absolute one alone (no relative
    bound to read the change against) passes +60% with no words of noise, as measured or not."""
    from perfgate.baseline.model import Baseline, KernelBaseline, KernelMatch, MetricBaseline
    from perfgate.judge.comparison import State
    from perfgate.judge.rules import KernelFacts, word_noise
    from perfgate.metrics.thresholds import ThresholdOverride

    entry = MetricBaseline("duration", 10_000.0, threshold=ThresholdOverride(absolute=20_000.0))
    kernel = KernelBaseline("k", KernelMatch(name="k"), (entry,))
    passed = Comparison("k", "duration", State.PASS, 10_000.0, 16_000.0, relative_change=0.6)
    for measured in (frozenset(), frozenset({"duration"})):
        facts = KernelFacts(kernel, Baseline((kernel,)), two_run=measured, runs=4,
                            as_measured=measured)  # fmt: skip
        got = word_noise((passed,), facts)
        assert [c.message for c in got] == [
            "4 runs: bound 0% (the floor of a check of four runs or more, judged as measured, "
            "docs/noise.md)"
            if measured
            else ""
        ]


def test_the_four_run_program_floor_applies_from_four_runs_where_the_floor_set_the_bound() -> None:
    from perfgate.judge.program import check_bound
    from perfgate.metrics.timefloors import (
        FOUR_RUN_PROGRAM_FLOORS,
        four_run_program_floor,
        program_floor,
        two_run_program_floor,
    )

    assert set(FOUR_RUN_PROGRAM_FLOORS) == {"H100", "H200"}
    assert four_run_program_floor(H100) == four_run_program_floor(H200) == 0.015
    assert four_run_program_floor("NVIDIA A100-SXM4-80GB") is None
    h200 = program_floor(H200)
    assert check_bound(h200, H200, 4) == (0.015, 4)
    assert check_bound(h200, H200, 6) == (0.015, 4)
    assert check_bound(h200, H200, 3) == (two_run_program_floor(H200), 2)
    # On H100 the four-run floor is the two-run one: four runs say so, three say two runs.
    assert check_bound(program_floor(H100), H100, 4) == (0.015, 4)
    assert check_bound(program_floor(H100), H100, 3) == (0.015, 2)
    # The baseline runs' own spread set the bound, or a kind nothing was measured on: kept.
    assert check_bound(0.031, H200, 4) == (0.031, 0)
    a100 = program_floor("NVIDIA A100-SXM4-80GB")
    assert check_bound(a100, "NVIDIA A100-SXM4-80GB", 4) == (a100, 0)


def test_an_h200_check_of_four_runs_catches_3_percent_on_a_card_that_ran_fast() -> None:
    """h200-xcg2's cuda-graph ran 1.17% faster than h200-h+i+j pooled in four runs: +3% on every
    launch reads +1.8%, which the two-run floor (2%) passes and the four-run floor (1.5%) fails;
    the same check unchanged passes, and so do two runs of it with +3%."""
    from perfgate.judge.states import KernelState
    from perfgate.verdicts.check import check

    base = _baseline("h200", ("h200-h", "h200-i", "h200-j"), "cuda-graph")
    files = pooled.RunSet(pooled.runs_of("h200-xcg2", "cuda-graph", 4))
    plain = check(base, pooled._read(files)).program  # type: ignore[arg-type]
    assert plain is not None and plain.change is not None
    assert plain.change == pytest.approx(-0.0117, abs=0.0005)
    assert plain.state is KernelState.PASS and plain.bound == 0.015 and plain.floor_runs == 4
    slower = pooled.PROGRAM.change(pooled._read(files), frozenset())
    four = check(base, slower).program  # type: ignore[arg-type]
    assert four is not None and four.state is KernelState.REGRESSED
    assert four.change == pytest.approx(0.018, abs=0.001)
    two_files = pooled.RunSet(files[:2])
    two = check(base, pooled.PROGRAM.change(pooled._read(two_files), frozenset())).program  # type: ignore[arg-type]
    assert two is not None and two.floor_runs == 2 and two.bound == 0.02


def test_a_recorded_program_bound_within_a_hundredth_of_a_point_of_the_floor_is_the_floor() -> None:
    """Bounds are kept to four places, so one read back a hair off the floor is still it."""
    from perfgate.judge.program import check_bound

    assert check_bound(0.02504, H200, 4) == (0.015, 4)
    assert check_bound(0.02496, H200, 2) == (0.02, 2)
    assert check_bound(0.0252, H200, 4) == (0.0252, 0)


def test_a_capture_with_no_launch_of_the_baselines_gpu_skips_the_program_time() -> None:
    """judge_program: no launch to sum is no program time, said so, with the recorded value
    and bound kept for the report (every kernel is missing then, which fails the check)."""
    from dataclasses import replace

    from perfgate.judge.states import KernelState
    from perfgate.verdicts.program import judge_program

    files = pooled.runs_of("h200-xcg2", "cuda-graph", 4)
    base = pooled.program_baseline(tuple(pooled.runs_of("h200-h", "cuda-graph")))
    assert base.program is not None
    empty = replace(pooled._read(pooled.RunSet(files)), launches=())
    got = judge_program(base, empty, (), ())
    assert got.state is KernelState.SKIPPED
    assert got.reason == "no launch of this baseline's GPU in the captures"
    assert (got.baseline, got.bound) == (base.program.value, base.program.relative)
