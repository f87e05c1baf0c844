"""Work classes keep their identity by their work, not their rank (issue 31).

The real captures: tests/data/field/h100/h100-a/hf-encoder-run{1,2,3} (the baseline) and
h100-b/hf-encoder-run1 (the check, a fresh machine start). cuBLAS's persistent
nvjet_sm90_hsh_96x64_64x10_1x2_h_bz_bias_TNN serves two GEMMs of the BERT layer at one grid
(2x64x1) and block: four launches of 505,261 instructions (#work1, 6.3 us) and one of 1,494,588
(#work2, 13.5 us). The classes are numbered by size within a capture, so matching them by their
number let one new smaller launch renumber them: #work1 took the new launch, #work2 the old
small class, and the big class went "new", whatever it now took.

Each check capture here is SYNTHETIC, derived from the real h100-b run 1 in memory: the test
says which launches were added or changed; every other value is the real capture's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline.model import Baseline
from perfgate.identity.grouping import KernelKey, new_ids, pair_work_classes
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.comparison import State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check

FIELD = Path(__file__).parents[1] / "data" / "field" / "h100"
NVJET = "nvjet_sm90_hsh_96x64_64x10_1x2_h_bz_bias_TNN"
SMALL, BIG = f"{NVJET} #work1", f"{NVJET} #work2"
WORK = "smsp__inst_executed.sum"
TIME = "gpu__time_duration.sum"


@pytest.fixture(scope="module")
def baseline() -> Baseline:
    runs = [FIELD / "h100-a" / f"hf-encoder-run{i}.csv.gz" for i in (1, 2, 3)]
    return record(read_captures(runs), RecordSettings()).baseline


@pytest.fixture(scope="module")
def capture() -> Capture:
    return read_captures([FIELD / "h100-b" / "hf-encoder-run1.csv.gz"])


def _nvjet(capture: Capture) -> list[Launch]:
    return sorted((la for la in capture.launches if la.name == NVJET), key=lambda la: la.index)


def _work(launch: Launch) -> float:
    return float(launch.metrics[WORK])  # type: ignore[arg-type]


def _changed(capture: Capture, launch: Launch, **metrics: float) -> Capture:
    """`capture` with one launch's metrics replaced."""
    new = replace(launch, metrics={**launch.metrics, **metrics})
    return replace(capture, launches=tuple(new if la is launch else la for la in capture.launches))


def _with_small_launch(capture: Capture, factor: float = 0.3) -> Capture:
    """`capture` with one more launch of the kernel, after the last one: a copy of a #work1
    launch with `factor` x its instructions (a new, smaller GEMM served by the same kernel)."""
    small = next(la for la in _nvjet(capture) if _work(la) < 1e6)
    last = max(la.index for la in capture.launches)
    extra = replace(small, index=last + 1, metrics={**small.metrics, WORK: _work(small) * factor})
    return replace(capture, launches=(*capture.launches, extra))


def _states(result) -> dict[str, KernelState]:  # type: ignore[no-untyped-def]
    return {v.kernel: v.state for v in result.verdicts}


def test_the_real_baseline_has_two_work_classes(baseline: Baseline) -> None:
    classes = {k.id: k for k in baseline.kernels if k.match.name == NVJET}
    assert set(classes) == {SMALL, BIG}
    assert classes[SMALL].launches == 4 and classes[BIG].launches == 1
    assert classes[SMALL].value("instructions_executed") == 505_261.0
    assert classes[BIG].value("instructions_executed") == 1_494_588.0


def test_the_unchanged_capture_passes(baseline: Baseline, capture: Capture) -> None:
    result = check(baseline, capture)
    assert set(_states(result).values()) == {KernelState.PASS}
    assert int(result.exit_code) == 0


def test_a_new_smaller_class_is_new_and_the_big_class_is_judged_against_its_own_baseline(
    baseline: Baseline, capture: Capture
) -> None:
    """Synthetic: one new launch at 0.3 x #work1's instructions, and the #work2 launch 1.5 x
    slower. Matched by number this was "2 improved, 1 new" (#work1 took the new launch,
    #work2 the four small ones, and the slower big launch went new)."""
    big = next(la for la in _nvjet(capture) if _work(la) > 1e6)
    slower = _changed(capture, big, **{TIME: float(big.metrics[TIME]) * 1.5})  # type: ignore[arg-type]
    result = check(baseline, _with_small_launch(slower))
    states = _states(result)
    assert states[SMALL] is KernelState.PASS
    assert states[BIG] is KernelState.REGRESSED
    verdict = next(v for v in result.verdicts if v.kernel == BIG)
    duration = next(c for c in verdict.comparisons if c.metric == "duration")
    assert duration.state is State.REGRESSED and duration.relative_change is not None
    assert abs(duration.relative_change - 0.5) < 0.05
    # Judged against its own baseline: the same work, not the small class's.
    work = next(c for c in verdict.comparisons if c.metric == "instructions_executed")
    assert work.state is State.PASS
    # The new class is new, with an id of its own that says it is another class.
    new = [v for v in result.verdicts if v.state is KernelState.NEW]
    assert [v.kernel for v in new] == [f"{NVJET} #work3"]
    assert [v.launches.current for v in new if v.launches] == [(1,)]
    others = {k: s for k, s in states.items() if k not in (SMALL, BIG, f"{NVJET} #work3")}
    assert set(others.values()) == {KernelState.PASS}
    assert int(result.exit_code) == 1


def test_a_new_smaller_class_alone_changes_nothing_else(
    baseline: Baseline, capture: Capture
) -> None:
    result = check(baseline, _with_small_launch(capture))
    states = _states(result)
    assert states[SMALL] is KernelState.PASS and states[BIG] is KernelState.PASS
    assert states[f"{NVJET} #work3"] is KernelState.NEW


def test_a_class_whose_work_is_gone_is_missing_never_another_class_renamed(
    baseline: Baseline, capture: Capture
) -> None:
    """Synthetic: the #work2 launch at 0.3 x #work1's instructions (the big GEMM became a
    small one). Its nearest recorded class is #work1, which the four unchanged launches are
    nearer to: it is new, and #work2 is missing with the work that replaced it, not judged
    against a class of another size (nor "renamed" into it by a later pass)."""
    big = next(la for la in _nvjet(capture) if _work(la) > 1e6)
    small = next(la for la in _nvjet(capture) if _work(la) < 1e6)
    result = check(baseline, _changed(capture, big, **{WORK: _work(small) * 0.3}))
    states = _states(result)
    assert states[SMALL] is KernelState.PASS
    assert states[BIG] is KernelState.MISSING
    missing = next(v for v in result.verdicts if v.kernel == BIG)
    assert missing.message.startswith("work changed: recorded at 1,494,588 instructions")
    assert missing.related == (f"{NVJET} #work3",)
    assert int(result.exit_code) == 1


def test_a_class_that_grew_is_judged_against_the_class_it_was(
    baseline: Baseline, capture: Capture
) -> None:
    """Synthetic: the #work2 launch with 1.3 x its instructions: nearest to #work2 still, so
    an instruction regression of that class, not a new kernel."""
    big = next(la for la in _nvjet(capture) if _work(la) > 1e6)
    result = check(baseline, _changed(capture, big, **{WORK: _work(big) * 1.3}))
    verdict = next(v for v in result.verdicts if v.kernel == BIG)
    assert verdict.state is KernelState.REGRESSED
    work = next(c for c in verdict.comparisons if c.metric == "instructions_executed")
    assert work.state is State.REGRESSED
    assert not any(v.state is KernelState.NEW for v in result.verdicts)


def test_pairing_by_work() -> None:
    # Recorded 0.5M and 1.5M; now 0.15M, 0.5M, 1.5M: the new small class pairs with nothing.
    assert pair_work_classes([5e5, 1.5e6], [1.5e5, 5e5, 1.5e6]) == {0: 1, 1: 2}
    # The big class gone: the small one keeps its own; the new one is nearest a taken class.
    assert pair_work_classes([5e5, 1.5e6], [1.5e5, 5e5]) == {0: 1}
    # A class that moved stays the one it is nearest to.
    assert pair_work_classes([5e5, 1.5e6], [5e5, 2e6]) == {0: 0, 1: 1}
    # One class now, between the recorded ones: the nearer takes it.
    assert pair_work_classes([5e5, 1.5e6], [1.2e6]) == {1: 0}
    # No work known on a side: not decided by work (matching falls back to class numbers).
    assert pair_work_classes([5e5, 1.5e6], [None]) is None


def test_a_new_class_never_takes_a_baselined_class_id() -> None:
    key = KernelKey(NVJET, (2, 64, 1), (384, 1, 1), None, 1)
    assert new_ids([key], [SMALL, BIG]) == {key: f"{NVJET} #work3"}
    two = KernelKey(NVJET, (2, 64, 1), (384, 1, 1), None, 3)
    got = new_ids([key, two], [SMALL, BIG])
    assert sorted(got.values()) == [f"{NVJET} #work3", f"{NVJET} #work4"]
