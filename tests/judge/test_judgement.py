"""The gate's judgement at the edges of each bound, through the whole check.

Every test builds a baseline from YAML text and a small synthetic capture derived from a real
one: the first launch of tests/data/h100/zoo-good-short-run1.csv (its real kernel name, launch
shape, GPU and compute capability) with its metric values replaced by the values under test.
Expected states come from docs/baselines.md ("Threshold semantics"), never from a run:

- a change counts only when it exceeds BOTH the relative bound (a share of the median) and the
  absolute one;
- a default bound is judged from the edge of the recorded range (min, max), a calibrated one
  (`calibration:` beside its threshold) from the recorded value.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace

import pytest

from perfgate.baseline.load import parse_baseline
from perfgate.baseline.model import MetricBaseline
from perfgate.common.errors import ExitCode
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.comparison import Bounds, State, compare_metric
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.metrics.catalog import lookup
from perfgate.metrics.thresholds import CategoricalCheck
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.model import CheckResult
from tests.conftest import data

DURATION = "gpu__time_duration.sum"  # duration: higher is worse
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"  # achieved_occupancy: lower
L1TEX = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"  # l1tex_throughput: any change
RAW = {"duration": DURATION, "achieved_occupancy": OCCUPANCY, "l1tex_throughput": L1TEX}
CALIBRATION = "3 runs: spread 0.40% x 2 = 0.80%, floor 10.00% (kernel of 1 us): floor 10.00%"


@functools.cache
def _real_launch() -> Launch:
    return read_capture(data("zoo-good-short-run1.csv")).launches[0]


def _capture(*per_kernel: dict[str, float], names: tuple[str, ...] = ()) -> Capture:
    """One launch per kernel: the real launch with only `metrics` (names default to the real
    one, then the real one with a suffix, so that each is a kernel of its own)."""
    real = _real_launch()
    launches = tuple(
        replace(
            real,
            index=i,
            name=names[i] if names else real.name.replace("(", f"_{i}(" if i else "(", 1),
            metrics=metrics,
        )
        for i, metrics in enumerate(per_kernel)
    )
    columns = frozenset(k for m in per_kernel for k in m)
    return Capture((real.source,), launches, columns)


def _kernel(i: int, metrics: str) -> str:
    real = _real_launch()
    name = real.name.replace("(", f"_{i}(" if i else "(", 1)
    grid, block = list(real.grid or ()), list(real.block or ())
    return (
        f"- id: k{i}\n"
        f"  match: {{name: '{name}', grid: {grid}, block: {block}}}\n"
        f"  metrics:\n{metrics}"
    )


def _baseline(*kernels: str) -> str:
    body = "".join(_kernel(i, m) for i, m in enumerate(kernels))
    return f"format_version: 2\nkernels:\n{body}"


def _metric(name: str, value: float, low: float, high: float, bound: str, extra: str = "") -> str:
    return (
        f"    {name}: {{value: {value!r}, min: {low!r}, max: {high!r}, "
        f"threshold: {{{bound}}}{extra}}}\n"
    )


def _judge(metric: str, current: float, value: float, low: float, high: float, bound: str,
           extra: str = "") -> State:  # fmt: skip
    text = _baseline(_metric(metric, value, low, high, bound, extra))
    result = check(parse_baseline(text, "b.yaml"), _capture({RAW[metric]: current}))
    (comparison,) = [c for v in result.verdicts for c in v.comparisons if c.metric == metric]
    return comparison.state


P, R, I = State.PASS, State.REGRESSED, State.IMPROVED  # noqa: E741

# (metric, bound, (value, min, max), [(current, expected state), ...]). The edge values sit
# exactly on a bound (not beyond it: within) and half a unit past it (beyond: it counts).
EDGES = [
    # relative only, 10% of 1000 = 100 from the range [1000, 1000]
    ("duration", "relative: 0.1, absolute: 0", (1000.0, 1000.0, 1000.0),
     [(1100.0, P), (1100.5, R), (900.0, P), (899.5, I)]),
    # absolute only: 50 ns
    ("duration", "relative: 0, absolute: 50", (1000.0, 1000.0, 1000.0),
     [(1050.0, P), (1050.5, R), (950.0, P), (949.5, I)]),
    # both, the absolute one wider: 120 is beyond 10% but not beyond 150
    ("duration", "relative: 0.1, absolute: 150", (1000.0, 1000.0, 1000.0),
     [(1120.0, P), (1150.0, P), (1150.5, R), (880.0, P), (850.0, P), (849.5, I)]),
    # both, the relative one wider: 150 is beyond 50 but not beyond 20%
    ("duration", "relative: 0.2, absolute: 50", (1000.0, 1000.0, 1000.0),
     [(1150.0, P), (1200.0, P), (1200.5, R), (850.0, P), (800.0, P), (799.5, I)]),
    # lower is worse: relative 10% of 50 = 5 points, absolute 2 points
    ("achieved_occupancy", "relative: 0.1, absolute: 2", (50.0, 50.0, 50.0),
     [(45.0, P), (44.5, R), (47.0, P), (55.0, P), (55.5, I)]),
    ("achieved_occupancy", "relative: 0.02, absolute: 4", (50.0, 50.0, 50.0),
     [(47.0, P), (46.0, P), (45.5, R), (54.0, P), (54.5, I)]),
    # any change: beyond the bound either way is a regression, never an improvement
    ("l1tex_throughput", "relative: 0.1, absolute: 1", (50.0, 50.0, 50.0),
     [(55.0, P), (55.5, R), (45.0, P), (44.5, R)]),
    ("l1tex_throughput", "relative: 0.01, absolute: 3", (50.0, 50.0, 50.0),
     [(52.0, P), (53.0, P), (53.5, R), (47.0, P), (46.5, R)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "bound", "recorded", "current", "expected"),
    [(m, b, rec, cur, exp) for m, b, rec, cases in EDGES for cur, exp in cases],
)
def test_each_bound_counts_a_change_only_beyond_its_edge(
    metric: str, bound: str, recorded: tuple[float, float, float], current: float, expected: State
) -> None:
    assert _judge(metric, current, *recorded, bound) is expected


# A default bound from the edge of the recorded range [950, 1050] (median 1000): 1140 is 90
# past the edge (within 100) but 140 past the median; 860 likewise on the other side.
DEFAULT_FROM_EDGE = [(1140.0, P), (1150.5, R), (860.0, P), (849.5, I)]
# A calibrated bound from the median: 1120 is 120 past it (beyond 100) but only 70 past the
# edge; 880 likewise on the other side; 1090 is within either way.
CALIBRATED_FROM_MEDIAN = [(1120.0, R), (1090.0, P), (880.0, I), (910.0, P)]


@pytest.mark.parametrize(("current", "expected"), DEFAULT_FROM_EDGE)
def test_a_default_bound_is_judged_from_the_edge_of_the_recorded_range(
    current: float, expected: State
) -> None:
    bound = "relative: 0.1, absolute: 0"
    assert _judge("duration", current, 1000.0, 950.0, 1050.0, bound) is expected


@pytest.mark.parametrize(("current", "expected"), CALIBRATED_FROM_MEDIAN)
def test_a_calibrated_bound_is_judged_from_the_recorded_value(
    current: float, expected: State
) -> None:
    bound = "relative: 0.1, absolute: 0"
    extra = f", calibration: '{CALIBRATION}'"
    # A kernel of 100 us: under 10 us its time alone would be evidence (noted), not judged
    # here (tests/judge/test_evidence.py holds that rule).
    scaled = _judge("duration", current * 100, 100_000.0, 95_000.0, 105_000.0, bound, extra)
    assert scaled is expected


@pytest.mark.parametrize(
    ("median", "noisy"), [(0.3, 0.1 + 0.2), (1e12, 1e12 + 1.5e-4), (0.0, 1e-12)]
)
def test_float_noise_in_the_value_read_is_no_change_of_an_exact_bound(
    median: float, noisy: float
) -> None:
    # 0.1 + 0.2 is 0.30000000000000004; at 1e12 one step of a double is about 1.2e-4; a share
    # computed as 0 can come out as 1e-12.
    assert noisy != median
    bound = "relative: 0, absolute: 0"
    assert _judge("duration", noisy, median, median, median, bound) is State.PASS
    assert _judge("duration", median * 1.001 or 1e-6, median, median, median, bound) is R


# ------------------------------------------------------------------ exit-code precedence

_ONE = "relative: 0.1, absolute: 0"
# state -> (the baseline's metrics for the kernel, its capture metrics; None: not captured)
KERNELS: dict[KernelState, tuple[str, dict[str, float | str] | None]] = {
    KernelState.PASS: (_metric("duration", 1000.0, 1000.0, 1000.0, _ONE), {DURATION: 1000.0}),
    KernelState.IMPROVED: (_metric("duration", 1000.0, 1000.0, 1000.0, _ONE), {DURATION: 500.0}),
    KernelState.REGRESSED: (_metric("duration", 1000.0, 1000.0, 1000.0, _ONE), {DURATION: 2e3}),
    KernelState.MISSING: (_metric("duration", 1000.0, 1000.0, 1000.0, _ONE), None),
    # a raw metric the launch has no value for
    KernelState.INCOMPLETE: ("    launch__grid_size: {value: 3}\n", {DURATION: 1000.0}),
    # a label recorded for a metric the capture gives as a number: the gate cannot judge
    KernelState.ERROR: ("    launch__grid_size: {value: big}\n", {"launch__grid_size": 5.0}),
}
EXIT = {KernelState.PASS: ExitCode.OK, KernelState.IMPROVED: ExitCode.OK,
        KernelState.REGRESSED: ExitCode.GATE_FAILED, KernelState.MISSING: ExitCode.GATE_FAILED,
        KernelState.INCOMPLETE: ExitCode.GATE_FAILED, KernelState.ERROR: ExitCode.INPUT_ERROR}  # fmt: skip


def _check_kernels(states: tuple[KernelState, ...]) -> CheckResult:
    text = _baseline(*(KERNELS[s][0] for s in states))
    real = _real_launch()
    launches = tuple(
        replace(real, index=i, name=real.name.replace("(", f"_{i}(" if i else "(", 1), metrics=m)
        for i, s in enumerate(states)
        if (m := KERNELS[s][1]) is not None
    )
    columns = frozenset(k for la in launches for k in la.metrics)
    return check(parse_baseline(text, "b.yaml"), Capture((real.source,), launches, columns))


@pytest.mark.parametrize("state", list(KERNELS))
def test_each_kernel_state_alone_and_its_exit_code(state: KernelState) -> None:
    result = _check_kernels((state,))
    assert [v.state for v in result.verdicts] == [state]
    assert result.exit_code is EXIT[state]


@pytest.mark.parametrize(
    "order",
    list(itertools.permutations([KernelState.ERROR, KernelState.REGRESSED, KernelState.PASS]))
    + list(itertools.permutations([KernelState.ERROR, KernelState.MISSING, KernelState.IMPROVED]))
    + list(itertools.permutations([KernelState.INCOMPLETE, KernelState.PASS, KernelState.ERROR]))
    + list(itertools.permutations([KernelState.REGRESSED, KernelState.IMPROVED, KernelState.PASS]))
    + list(itertools.permutations([KernelState.INCOMPLETE, KernelState.IMPROVED])),
    ids=lambda order: "-".join(s.value for s in order),
)
def test_the_worst_exit_code_wins_in_every_order(order: tuple[KernelState, ...]) -> None:
    """An input error outranks a gate failure (the gate could not judge), which outranks a
    pass, whichever kernel comes first."""
    result = _check_kernels(order)
    assert sorted(v.state.value for v in result.verdicts) == sorted(s.value for s in order)
    expected = max((EXIT[s] for s in order), key=lambda c: (c is ExitCode.INPUT_ERROR, c.value))
    assert result.exit_code is expected


# One kernel's comparisons: the worst of them is the kernel's state (ERROR, then REGRESSED,
# then a metric that could not be measured, then IMPROVED).
WITHIN_ONE_KERNEL = [
    (("error", "regressed"), KernelState.ERROR),
    (("regressed", "incomplete"), KernelState.REGRESSED),
    (("incomplete", "improved"), KernelState.INCOMPLETE),
    (("improved", "pass"), KernelState.IMPROVED),
    (("pass", "improved"), KernelState.IMPROVED),
]
_PARTS: dict[str, tuple[str, dict[str, float | str]]] = {
    "pass": (_metric("l1tex_throughput", 50.0, 50.0, 50.0, _ONE), {L1TEX: 50.0}),
    "improved": (_metric("duration", 1000.0, 1000.0, 1000.0, _ONE), {DURATION: 500.0}),
    "regressed": (_metric("achieved_occupancy", 50.0, 50.0, 50.0, _ONE), {OCCUPANCY: 10.0}),
    "incomplete": ("    launch__grid_size: {value: 3}\n", {}),
    "error": ("    launch__block_size: {value: big}\n", {"launch__block_size": 5.0}),
}


@pytest.mark.parametrize(("parts", "expected"), WITHIN_ONE_KERNEL)
@pytest.mark.parametrize("reverse", [False, True])
def test_a_kernel_takes_the_worst_state_of_its_metrics(
    parts: tuple[str, str], expected: KernelState, reverse: bool
) -> None:
    parts = parts[::-1] if reverse else parts
    text = "".join(_PARTS[p][0] for p in parts)
    metrics = {k: v for p in parts for k, v in _PARTS[p][1].items()}
    result = check(parse_baseline(_baseline(text), "b.yaml"), _capture(metrics))
    assert [v.state for v in result.verdicts] == [expected]
    assert result.exit_code is EXIT[expected]


def test_a_value_that_is_not_a_number_is_never_a_pass() -> None:
    # ncu writes n/a or nan where a counter could not be collected: not measured, so the
    # kernel is incomplete (exit 1), never judged within its bound.
    bound = "relative: 0.1, absolute: 0"
    assert _judge("duration", float("nan"), 1000.0, 1000.0, 1000.0, bound) is State.MISSING_METRIC


# ---------------------------------------------------------------- the dominant stall's margin

_REASONS = ["barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
            "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar", "mio_throttle",
            "misc", "no_instruction", "short_scoreboard", "sleeping", "tex_throttle", "wait"]  # fmt: skip


def _stalls(**shares: float) -> dict[str, float]:
    """The per-warp-active stall counters of the real capture, zero but for `shares` (which
    add up to 100, so they are the shares themselves)."""
    out = {f"smsp__warp_issue_stalled_{r}_per_warp_active.pct": 0.0 for r in _REASONS}
    for reason in ("selected", "not_selected"):
        out[f"smsp__warp_issue_stalled_{reason}_per_warp_active.pct"] = 0.0
    out.update({f"smsp__warp_issue_stalled_{r}_per_warp_active.pct": v for r, v in shares.items()})
    return out


@pytest.mark.parametrize(("margin", "expected"), [(20.0, P), (19.5, R)])
def test_a_new_dominant_stall_counts_only_when_it_leads_by_more_than_the_margin(
    margin: float, expected: State
) -> None:
    # The baseline's dominant stall was `wait`; now `long_scoreboard` leads it by 60 - 40 = 20.
    stall = (
        "    dominant_stall:\n      value: wait\n"
        "      shares: {wait: 60.0, long_scoreboard: 40.0}\n"
        f"      reasons: [{', '.join(_REASONS)}]\n      family: per_warp_active\n"
        f"      threshold: {{margin: {margin}}}\n"
    )
    result = check(
        parse_baseline(_baseline(stall), "b.yaml"),
        _capture(_stalls(long_scoreboard=60.0, wait=40.0)),
    )
    (comparison,) = [c for v in result.verdicts for c in v.comparisons]
    assert comparison.current == "long_scoreboard"
    assert comparison.state is expected


# ------------------------------------------- metrics another architecture does not measure

DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
_SKIPPED = _metric("dram_throughput", 50.0, 50.0, 50.0, _ONE)  # not measured on CC 8.7


@pytest.mark.parametrize(
    ("metrics", "current", "expected"),
    [
        (_SKIPPED, {DRAM_PCT: 50.0}, KernelState.SKIPPED),
        (
            _SKIPPED + KERNELS[KernelState.PASS][0],
            {DRAM_PCT: 50.0, DURATION: 1000.0},
            KernelState.PASS,
        ),
        (_SKIPPED + KERNELS[KernelState.IMPROVED][0], {DURATION: 500.0}, KernelState.IMPROVED),
        (_SKIPPED + KERNELS[KernelState.REGRESSED][0], {DURATION: 2e3}, KernelState.REGRESSED),
    ],
)
def test_a_metric_another_architecture_does_not_measure_is_skipped_only_when_waived(
    metrics: str, current: dict[str, float], expected: KernelState
) -> None:
    # The real launch on an 8.7 GPU (Jetson Orin), where ncu measures no DRAM throughput.
    capture = _capture(current)
    capture = replace(capture, launches=tuple(replace(la, cc="8.7") for la in capture.launches))
    baseline = parse_baseline(_baseline(metrics), "b.yaml")
    # Waived by name (as --allow-other-gpu does): skipped, and the rest judged as always.
    result = check(baseline, capture, CheckSettings(waived=frozenset({Skip.ARCHITECTURE})))
    assert [v.state for v in result.verdicts] == [expected]
    assert any(c.state is State.SKIPPED for v in result.verdicts for c in v.comparisons)
    assert result.exit_code is EXIT.get(expected, ExitCode.OK)
    # Not waived: the gate the baseline holds (its own bound) was not judged, so the kernel is
    # not judged and the check fails (exit 2), unless something of it regressed (exit 1).
    plain = check(baseline, capture)
    fails = KernelState.REGRESSED if expected is KernelState.REGRESSED else KernelState.UNJUDGED
    assert [v.state for v in plain.verdicts] == [fails]
    assert any(c.state is State.UNJUDGED for v in plain.verdicts for c in v.comparisons)
    assert plain.exit_code is EXIT.get(fails, ExitCode.INPUT_ERROR)


# compare_metric is the one judgement of a metric (perfgate.judge.comparison): called directly
# here for what a check of real captures does not reach at an edge.


def _bounds(name: str, **check: object) -> Bounds:
    defn = lookup(name)
    return Bounds(defn.threshold, CategoricalCheck(**check), defn.direction)  # type: ignore[arg-type]


def test_the_bound_is_worded_from_the_bounds_unless_given() -> None:
    metric = MetricBaseline("registers_per_thread", 32.0, 32.0, 32.0)
    bounds = _bounds("registers_per_thread")
    worded = compare_metric("k", metric, lookup("registers_per_thread"), 40.0, "", bounds)
    assert worded.state is State.REGRESSED
    assert worded.bound == "+0 (exact)"  # an exact counter: any growth counts
    given = compare_metric("k", metric, lookup("registers_per_thread"), 40.0, "", bounds, "b")
    assert given.bound == "b"


def test_a_dominant_stall_absent_from_the_shares_counts_as_no_share() -> None:
    # The old dominant reason has no share in the current capture: it counts as 0 points, so
    # the new one leads by its whole share. 2.5 points against a margin of 2: a regression.
    metric = MetricBaseline("dominant_stall", "long_scoreboard")
    defn = lookup("dominant_stall")
    bounds = _bounds("dominant_stall", stable=True, margin=2.0)
    shares = {"wait": 2.5, "math_pipe_throttle": 1.0}
    got = compare_metric("k", metric, defn, "wait", "", bounds, current_shares=shares)
    assert got.state is State.REGRESSED
    # And a new top reason at 1.5 points leads by no more than the margin: within it.
    shares = {"wait": 1.5, "math_pipe_throttle": 1.0}
    got = compare_metric("k", metric, defn, "wait", "", bounds, current_shares=shares)
    assert got.state is State.PASS


def test_the_margin_is_for_the_dominant_stall_alone() -> None:
    # The occupancy limiter has no shares and no margin: any change of it counts, even when
    # shares are at hand.
    metric = MetricBaseline("occupancy_limiter", "registers")
    defn = lookup("occupancy_limiter")
    bounds = _bounds("occupancy_limiter", stable=True, margin=50.0)
    shares = {"shared_mem": 10.0, "registers": 9.0}
    got = compare_metric("k", metric, defn, "shared_mem", "", bounds, current_shares=shares)
    assert got.state is State.REGRESSED
