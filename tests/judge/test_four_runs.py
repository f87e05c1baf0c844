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
