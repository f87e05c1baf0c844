"""Issue 33's judging rules one at a time, at their edges: what the mutation run over them
(docs/mutation.md "Issue 33") found no test deciding. The expected values come from the rules'
stated facts (docs/noise.md, the docstrings' figures), never from running the code under test;
kernel names are those of the real captures under tests/data/field/families (fam-a, fam-b).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace

import pytest

from perfgate.baseline.model import Baseline, KernelBaseline, KernelMatch, MetricBaseline
from perfgate.causes import diagnose
from perfgate.causes.changes_model import MISSING, NEW, SCALED, ChangeKernel
from perfgate.causes.changes_paths import _optimizer, optimizer_rule
from perfgate.causes.changes_types import dtype_rule, element_type_rule
from perfgate.causes.changes_work import _grew, _repeated_gemm, recomputation_rule, scaled_work_rule
from perfgate.causes.model import CauseKind, KernelDelta, Side
from perfgate.causes.rules_memory import vectorized_access, wider_stores
from perfgate.causes.rules_work import more_work
from perfgate.identity.configs import (
    _SIZE_WHY,
    CONFIG_INDEPENDENT,
    TRAFFIC,
    TRAFFIC_INFO,
    config_of,
    median_traffic,
    merge_tuned,
    problem_sizes,
    recorded_traffic,
    sized_groups,
    traffic,
    with_traffic,
)
from perfgate.identity.families import family_of
from perfgate.identity.grouping import KernelKey, group_launches, split_work
from perfgate.identity.matching import match
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Launch, merge
from perfgate.ingest.names import normalise, short_name
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.rules import KernelFacts, moved_per_launch, note_evidence, why_noted
from perfgate.judge.states import KernelState
from perfgate.lifecycle.calibrate import (
    DRAM_ABSOLUTE_FLOOR,
    NON_EXACT_COUNT_FLOOR,
    NON_EXACT_EFFICIENCY_POINTS,
    STEADY_KERNEL_NS,
    Floor,
    dram_bytes_floor,
    kernel_varies,
    lookback_floor,
    lookback_time_floor,
)
from perfgate.lifecycle.record import RecordSettings, _metric_baseline, record, record_kernel
from perfgate.metrics.catalog import SHORT_KERNEL_NS, lookup
from perfgate.metrics.measure import Measured
from perfgate.verdicts.check import check
from tests.conftest import ROOT

MiB = float(1 << 20)


def _family(name: str) -> str | None:
    found = family_of(name)
    return found.name if found is not None else None


# -- calibrate: kernels that are not exact, small DRAM traffic ---------------------------------


def test_a_kernel_varies_from_a_spread_of_exactly_one_in_a_thousand() -> None:
    # "Differ": by 0.1% or more (VARIES_SPREAD); (max - min) / median of 1000, 1000, 1001.
    assert kernel_varies([1000.0, 1000.0, 1001.0])
    assert not kernel_varies([10_000.0, 10_000.0, 10_009.0])  # 0.09%
    # Three runs are the fewest that say anything about a spread (MIN_RUNS), however large.
    assert not kernel_varies([1000.0, 2000.0])
    assert kernel_varies([1000.0, 2000.0, 1500.0])


@pytest.mark.parametrize("name", ["global_load_sectors", "global_atomic_requests",
                                  "l2_atomic_requests"])  # fmt: skip
def test_a_not_exact_kernels_load_and_atomic_counts_take_the_count_floor_alone(name: str) -> None:
    floor = lookback_floor(name, kernel_not_exact=True)
    assert floor is not None
    assert (floor.relative, floor.absolute, floor.adds_spread) == (0.025, 0.0, False)
    assert lookback_floor(name, kernel_not_exact=False) is None


@pytest.mark.parametrize("name", ["global_load_efficiency", "global_store_efficiency"])
def test_a_not_exact_kernels_efficiency_is_a_ratio_of_two_counts_and_in_points(name: str) -> None:
    floor = lookback_floor(name, kernel_not_exact=True)
    assert floor is not None
    # Each side of the ratio may move by the count floor: twice it, and 2.5 points as well.
    assert floor.relative == pytest.approx(2 * 0.025)
    assert floor.absolute == 2.5
    assert "points" in floor.why


def test_a_not_exact_kernels_sectors_per_request_is_a_ratio_without_points() -> None:
    floor = lookback_floor("sectors_per_request_ld", kernel_not_exact=True)
    assert floor is not None
    assert floor.relative == pytest.approx(0.05)
    assert floor.absolute == 0.0
    assert "points" not in floor.why
    # Stores, time and the configuration keep their own rules whatever the instructions do.
    for other in ("global_store_sectors", "sectors_per_request_st", "duration", "dram_bytes"):
        assert lookback_floor(other, kernel_not_exact=True) is None


def test_a_not_exact_kernel_under_20_us_adds_its_spread_to_the_time_floor() -> None:
    base = Floor(0.065, 0.0, "kernel of 10 us on H100")
    short = lookback_time_floor(base, 14_000.0, kernel_not_exact=True)  # fam-b's 14 us select
    assert short.adds_spread
    assert (short.relative, short.absolute) == (base.relative, base.absolute)
    assert short.why.startswith(base.why) and "spread" in short.why
    # The edge: from 20 us the rule stays max(); just under it, the sum.
    assert lookback_time_floor(base, STEADY_KERNEL_NS, kernel_not_exact=True) == base
    assert lookback_time_floor(base, STEADY_KERNEL_NS - 1, kernel_not_exact=True).adds_spread
    # An exact kernel, or one of unknown duration, keeps the floor as it is.
    assert lookback_time_floor(base, 14_000.0, kernel_not_exact=False) == base
    assert lookback_time_floor(base, None, kernel_not_exact=True) == base


def test_dram_bytes_under_4_mib_take_3_percent_of_4_mib_as_their_absolute_floor() -> None:
    # docs/noise.md: +3% of 4 MiB below the promise's smallest traffic, 64 KiB from it.
    assert pytest.approx(0.03 * 4 * MiB) == DRAM_ABSOLUTE_FLOOR
    small = dram_bytes_floor(1.1e6)  # fam-b's train-step reduce_kernel: 1.1 MB
    assert small.relative == 0.021
    assert small.absolute == pytest.approx(0.03 * 4 * MiB)
    assert "4 MiB" in small.why
    just_under = dram_bytes_floor(4 * MiB - 1)
    assert just_under.absolute == pytest.approx(0.03 * 4 * MiB)
    for large in (4 * MiB, 64 * MiB, None):
        floor = dram_bytes_floor(large)
        assert (floor.relative, floor.absolute) == (0.021, 64 * 1024.0)
        assert "4 MiB" not in floor.why


def test_the_not_exact_floors_are_the_documented_figures() -> None:
    # docs/noise.md: 2.5% for a not-exact count, 2.5 points for a not-exact efficiency.
    assert (NON_EXACT_COUNT_FLOOR, NON_EXACT_EFFICIENCY_POINTS) == (0.025, 2.5)


# -- changes: the rules of the kernels still there (a problem grown, a forward recomputed) ----

GEMM = "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT"  # fam-a train-step's cuBLAS GEMM
ADD = "void at::vectorized_elementwise_kernel<4, at::CUDAFunctorOnSelf_add<float>, std::array<char *, 2>>(int, T2, T3)"
FUSION = "loop_multiply_fusion_2"  # an XLA fusion (jax-train), a generated family


def _scaled(
    i: int,
    ratio: float,
    name: str = ADD,
    mechanisms: tuple[str, ...] = ("more-work",),
    launches: float | None = None,
) -> ChangeKernel:
    """A kernel still there whose work grew: launches x `launches` (default: x ratio),
    instructions a launch x `ratio`."""
    work = (("launches", ratio if launches is None else launches),
            ("instructions_executed", ratio))  # fmt: skip
    return ChangeKernel(f"k{i}", name, _family(name), SCALED, 1000.0 * (i + 1), 4.0,
                        recorded_ns=500.0, work=work, mechanisms=mechanisms)  # fmt: skip


def test_a_work_measure_moved_from_1_15_either_way() -> None:
    assert _grew(_scaled(0, 1.15)) == 1.15
    assert _grew(_scaled(0, 1.14)) is None
    # Work that fell anywhere is not a grown problem, from 1 / 1.15 down.
    fell = ChangeKernel("f", ADD, "ATen", SCALED, 1.0, 1.0,
                        work=(("launches", 2.0), ("global_load_sectors", 1 / 1.15)),
                        mechanisms=("more-work",))  # fmt: skip
    assert _grew(fell) is None
    kept = replace(fell, work=(("launches", 2.0), ("global_load_sectors", 1 / 1.14)))
    assert _grew(kept) == 2.0
    # A kernel with a mechanism of its own (loads less coalesced) is not "more of the same".
    assert _grew(_scaled(0, 2.0, mechanisms=("more-work", "uncoalesced-loads"))) is None
    assert _grew(_scaled(0, 2.0, mechanisms=("launch-count",))) == 2.0


def test_scaled_work_needs_three_kernels_at_one_factor() -> None:
    two = [_scaled(0, 2.0), _scaled(1, 2.0)]
    assert scaled_work_rule([], [], two) is None
    three = [*two, _scaled(2, 2.1)]  # within 6% of x2
    got = scaled_work_rule([], [], three)
    assert got is not None
    kind, title, lever, claimed = got
    assert kind == "scaled-work"
    # The middle of the factors the kernels at it grew by: x2.00 (2.0, 2.0, 2.1).
    assert title.startswith("More work: x2.00 across 3 kernels"), title
    assert "grew less" not in title
    assert "re-record the baseline" in lever
    assert {k.id for k in claimed} == {"k0", "k1", "k2"}
    # Beyond 6% of the factor it is another one: 2.0, 2.0 and 2.2 are not three at one factor.
    assert scaled_work_rule([], [], [*two, _scaled(2, 2.2)]) is None


def test_scaled_work_is_the_programs_only_when_most_grown_kernels_share_the_factor() -> None:
    at = [_scaled(i, 2.0) for i in range(3)]
    # Three others, each grown by its own factor: half of six is still "most" (not fewer).
    others = [_scaled(3, 3.0), _scaled(4, 4.5), _scaled(5, 7.0)]
    got = scaled_work_rule([], [], at + others)
    assert got is not None and got[1].startswith("More work: x2.00 across 3 kernels")
    # Above the factor they are not its consequence; none grew less.
    assert {k.id for k in got[3]} == {"k0", "k1", "k2"}
    # A fourth other: 3 of 7 is under half.
    assert scaled_work_rule([], [], [*at, *others, _scaled(6, 10.0)]) is None


def test_scaled_work_takes_the_kernels_that_grew_less_along() -> None:
    at = [_scaled(i, 2.0) for i in range(3)]
    less = _scaled(3, 1.6)  # a compaction's launches 3 -> 5
    unrelated = _scaled(4, 2.0, mechanisms=("uncoalesced-loads",))
    got = scaled_work_rule([], [], [*at, less, unrelated])
    assert got is not None
    assert got[1].endswith("(1 more grew less)"), got[1]
    assert {k.id for k in got[3]} == {"k0", "k1", "k2", "k3"}


def test_the_factor_is_the_middle_of_those_at_it() -> None:
    # Four kernels within 6% of each other: 2.0, 2.04, 2.08, 2.1 -> the middle (upper) 2.08.
    got = scaled_work_rule([], [], [_scaled(i, r) for i, r in enumerate((2.1, 2.0, 2.08, 2.04))])
    assert got is not None
    assert got[1].startswith("More work: x2.08 across 4 kernels"), got[1]


def test_a_gemm_launched_twice_at_the_same_work_a_launch_is_repeated() -> None:
    twice = _scaled(0, 1.0, name=GEMM, launches=2.0)
    assert _repeated_gemm(twice)
    assert _repeated_gemm(_scaled(0, 1.05, name=GEMM, launches=3.04))  # 5% a launch, x3
    assert not _repeated_gemm(_scaled(0, 1.0, name=GEMM, launches=1.0))  # not again
    assert not _repeated_gemm(_scaled(0, 1.0, name=GEMM, launches=2.5))  # not a whole number
    assert not _repeated_gemm(_scaled(0, 1.0, name=GEMM, launches=2.1))
    assert not _repeated_gemm(_scaled(0, 1.1, name=GEMM, launches=2.0))  # more work a launch
    assert not _repeated_gemm(_scaled(0, 1.0, name=ADD, launches=2.0))  # not a GEMM
    assert not _repeated_gemm(
        _scaled(0, 1.0, name=GEMM, launches=2.0, mechanisms=("more-work", "tensor-cores-lost"))
    )
    no_launches = replace(twice, work=(("instructions_executed", 1.0),))
    assert not _repeated_gemm(no_launches)


def test_recomputation_needs_a_repeated_gemm_and_more_work_or_new_fusions() -> None:
    gemm = _scaled(0, 1.0, name=GEMM, launches=2.0)
    grown = _scaled(1, 1.5, name=FUSION)
    fusion = ChangeKernel("n1", "loop_multiply_fusion_7", "XLA", NEW, 100.0, 1.0)
    library = ChangeKernel("n2", GEMM.replace("128x128", "64x64"), "cuBLAS", NEW, 100.0, 1.0)
    assert recomputation_rule([], [], [gemm]) is None
    assert recomputation_rule([], [fusion], [grown]) is None  # no GEMM launched again
    got = recomputation_rule([], [], [gemm, grown])
    assert got is not None and got[0] == "recomputation"
    assert [k.id for k in got[3]] == ["k0", "k1"]
    # The compiler's new fusions come along; a library's kernel is not the graph's.
    got = recomputation_rule([], [fusion, library], [gemm])
    assert got is not None and [k.id for k in got[3]] == ["k0", "n1"]
    assert "jax.checkpoint" in got[2]


# -- changes: the element type of a library call, the optimizer --------------------------------

# fam-a cub's onesweep and histogram kernels (int keys) and fam-b cub-int64's (long keys).
_HUB = "radix_sort::DeviceRadixSort{k}<radix::policy_hub<{t}, cuda::OpaqueType<8>, unsigned long long>::Policy1000, 0, {t}, unsigned long long>(T2 *)"


def _sort(kernel: str, key: str, side: str, launches: float) -> ChangeKernel:
    name = "void " + _HUB.format(k=kernel, t=key)
    return ChangeKernel(f"{kernel}-{key}", name, _family(name), side, 1000.0, launches)


def test_the_sort_keys_type_names_the_first_type_that_differs_and_the_passes() -> None:
    gone = [_sort("OnesweepKernel", "int", MISSING, 4.0),
            _sort("HistogramKernel", "int", MISSING, 1.0)]  # fmt: skip
    came = [_sort("OnesweepKernel", "long", NEW, 8.0),
            _sort("HistogramKernel", "long", NEW, 1.0)]  # fmt: skip
    got = element_type_rule(gone, came)
    assert got is not None
    kind, title, lever, claimed = got
    assert kind == "element-type"
    # One onesweep pass per 8 bits of key: 4 for int32, 8 for int64.
    assert title == "key type of a CUB radix sort: int -> long (onesweep passes x4 -> x8)"
    assert "int32 keys" in lever
    assert len(claimed) == 4
    # The same passes: no count in the title.
    same = element_type_rule(gone, [replace(came[0], launches=4.0), came[1]])
    assert same is not None and same[1] == "key type of a CUB radix sort: int -> long"
    # Without a onesweep kernel on a side there are no passes to count.
    assert element_type_rule(gone[1:], came[1:]) == (
        kind, "key type of a CUB radix sort: int -> long", lever, [gone[1], came[1]],
    )  # fmt: skip


def test_a_kernel_at_another_type_needs_its_twin_on_the_other_side() -> None:
    gone = [_sort("OnesweepKernel", "int", MISSING, 4.0)]
    assert element_type_rule(gone, []) is None
    assert element_type_rule([], [_sort("OnesweepKernel", "long", NEW, 8.0)]) is None
    # Another kernel, not the same one at another type.
    assert element_type_rule(gone, [_sort("HistogramKernel", "long", NEW, 1.0)]) is None
    # A kernel whose name is on both sides did not change type.
    assert element_type_rule(gone, [replace(gone[0], side=NEW)]) is None


def test_another_libraries_element_type_names_the_kernel() -> None:
    name = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<{t}, at::native::MeanOps<{t}, {t}, {t}, {t}>, unsigned int, {t}, 4, 4>>(T3)"
    gone = ChangeKernel("r", name.format(t="float"), "ATen", MISSING, 1.0, 1.0)
    came = ChangeKernel("r2", name.format(t="double"), "ATen", NEW, 1.0, 1.0)
    got = element_type_rule([gone], [came])
    assert got is not None
    assert got[1].startswith("element type of ") and got[1].endswith(": float -> double")
    assert "wider type" in got[2]


# fam-a train-step's fused AdamW and foreach add; fam-b train-step-forloop's update kernels.
FUSED = "void at::<unnamed>::multi_tensor_apply_kernel<at::<unnamed>::FusedOptimizerTensorListMetadata<4>, at::<unnamed>::FusedAdamMathFunctor<float, 4, 1, 0>, const float *>(T1, T2, T3...)"
FOREACH = "void at::<unnamed>::multi_tensor_apply_kernel<at::<unnamed>::TensorListMetadata<1>, at::<unnamed>::BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float>(T1, T2, T3...)"
LERP = "void at::vectorized_elementwise_kernel<4, at::<unnamed>::lerp_scalar_kernel(at::TensorIteratorBase &, const c10::Scalar &)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 2)]::operator ()() const::[lambda(float, float) (instance 1)], std::array<char *, 3>>(int, T2, T3)"
SQRT = "void at::vectorized_elementwise_kernel<4, at::sqrt_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)], std::array<char *, 2>>(int, T2, T3)"
MUL = "void at::vectorized_elementwise_kernel<4, at::AUnaryFunctor<float, float, float, binary_internal::MulFunctor<float>>, std::array<char *, 2>>(int, T2, T3)"
GRAPH_COPY = "void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<2>, at::native::<unnamed>::CopyFunctor<float, float, 2, 1, 1>, at::native::<unnamed>::Copy<float, float>>(T1, T2, T3...)"


def _k(i: str, name: str, side: str) -> ChangeKernel:
    return ChangeKernel(i, name, _family(name), side, 1000.0, 1.0)


def test_the_optimizer_fused_foreach_or_for_loop() -> None:
    assert _family(LERP) == "ATen"  # the for-loop's kernels are ATen's
    assert _optimizer([_k("a", FUSED, NEW), _k("b", FOREACH, NEW)]) == "fused"
    assert _optimizer([_k("b", FOREACH, NEW)]) == "foreach"
    # Two of the update's pointwise kernels make a for-loop; one is any program's.
    assert _optimizer([_k("l", LERP, NEW), _k("s", SQRT, NEW)]) == "for-loop"
    assert _optimizer([_k("l", LERP, NEW), _k("m", MUL, NEW)]) is None
    # A graph's multi-tensor copy is no optimizer.
    assert _optimizer([_k("c", GRAPH_COPY, NEW)]) is None


def test_fused_to_for_loop_claims_the_multi_tensor_and_the_pointwise_kernels() -> None:
    missing = [_k("f", FUSED, MISSING), _k("e", FOREACH, MISSING)]
    new = [_k("l", LERP, NEW), _k("s", SQRT, NEW), _k("m", MUL, NEW), _k("c", GRAPH_COPY, NEW)]
    got = optimizer_rule(missing, new)
    assert got is not None
    kind, title, lever, claimed = got
    assert (kind, title) == ("optimizer", "optimizer implementation: fused -> for-loop")
    assert "fused=True" in lever
    # The graph's copy is not the optimizer's; every other kernel that came or went is.
    assert [k.id for k in claimed] == ["f", "e", "l", "s", "m"]
    # The same implementation on both sides, or none on one: no finding.
    assert optimizer_rule(missing, [_k("f2", FUSED, NEW)]) is None
    assert optimizer_rule(missing, [_k("m", MUL, NEW)]) is None
    assert optimizer_rule([_k("m", MUL, MISSING)], new) is None


# -- rules: the output written in a wider type -------------------------------------------------

SOFTMAX = "softmax_kernel"  # fam-b triton-sizes-fp32-out's Triton softmax


def _stores(
    stored: float = 1.6,
    used: float = 1.25,
    per_request: float = 1.6,
    loaded: float = 1.0,
    **more: tuple[float, float],
) -> KernelDelta:
    """A kernel's delta from baseline values of 100 (efficiency 50%): store sectors, bytes used
    per stored sector, store sectors per request and load sectors multiplied as given."""
    before: dict[str, float] = {
        "global_store_sectors": 100.0,
        "global_store_efficiency": 50.0,
        "sectors_per_request_st": 4.0,
        "global_load_sectors": 100.0,
    }
    after = {
        "global_store_sectors": 100.0 * stored,
        "global_store_efficiency": 50.0 * used,
        "sectors_per_request_st": 4.0 * per_request,
        "global_load_sectors": 100.0 * loaded,
    }
    for name, (b, a) in more.items():
        before[name], after[name] = b, a
    b_side = Side(SOFTMAX, dict(before), launches=1.0)
    a_side = Side(SOFTMAX, dict(after), launches=1.0)
    return KernelDelta(SOFTMAX, b_side, a_side, ())  # fmt: skip


def test_bf16_to_fp32_output_is_store_bytes_x2_at_the_same_requests() -> None:
    # A bf16 row of 1000 fills its last sector partly: sectors x1.6, bytes a sector x1.25.
    cause = wider_stores(_stores())
    assert cause is not None and cause.mechanism == "wider-stores"
    assert "store bytes x2.00 with loads unchanged" in cause.detail
    assert cause.kind is CauseKind.REGRESSION
    # Without the efficiency the sectors alone are the bytes: x2 sectors, x2 bytes.
    no_eff = _stores(stored=2.0, per_request=2.0)
    plain = KernelDelta(
        SOFTMAX,
        replace(no_eff.baseline, values={k: v for k, v in no_eff.baseline.values.items()
                                         if k != "global_store_efficiency"}),
        no_eff.current, (),
    )  # fmt: skip
    found = wider_stores(plain)
    assert found is not None and "store bytes x2.00" in found.detail
    assert wider_stores(_stores(stored=4.0, used=1.0, per_request=4.0)) is not None  # x4


def test_wider_stores_edges_of_loads_sectors_requests_and_width() -> None:
    # Loads held within 10% either way, inclusive.
    assert wider_stores(_stores(global_load_sectors=(100.0, 110.0))) is not None  # 1.1 exactly
    assert wider_stores(_stores(global_load_sectors=(100.0, 90.0))) is not None  # 0.9 exactly
    assert wider_stores(_stores(loaded=1.11)) is None
    assert wider_stores(_stores(loaded=0.89)) is None
    # Store sectors up by 30% at least (x1.3 at 2/1.3 the bytes a sector is x2 bytes).
    assert wider_stores(_stores(stored=1.3, used=2 / 1.3, per_request=1.3)) is not None
    assert wider_stores(_stores(stored=1.29, used=2 / 1.29, per_request=1.29)) is None
    # The same requests, each moving more sectors: sectors / (sectors a request) within 10%.
    assert wider_stores(_stores(stored=2.2, used=1.0, per_request=2.0)) is not None  # 1.1
    assert wider_stores(_stores(stored=2.0, used=1.0, per_request=2.0 / 0.91)) is not None
    assert wider_stores(_stores(stored=1.8, used=1.0, per_request=2.0)) is not None  # 0.9
    assert wider_stores(_stores(stored=2.0, used=1.0, per_request=1.8)) is None  # more requests
    assert wider_stores(_stores(stored=2.0, used=1.0, per_request=2.3)) is None
    # The bytes grew by a type's width (x2 or x4) within 10%: x3 is more elements.
    assert wider_stores(_stores(stored=3.0, used=1.0, per_request=3.0)) is None
    assert wider_stores(_stores(stored=2.0, used=0.9, per_request=2.0)) is not None  # x1.8
    assert wider_stores(_stores(stored=2.0, used=0.89, per_request=2.0)) is None
    assert wider_stores(_stores(stored=4.0, used=1.1, per_request=4.0)) is not None  # x4.4
    assert wider_stores(_stores(stored=4.0, used=1.12, per_request=4.0)) is None


def test_wider_stores_needs_both_sides_and_their_counters() -> None:
    d = _stores()
    assert wider_stores(replace(d, baseline=Side(SOFTMAX, {}))) is None  # explain: one side
    no_loads = {k: v for k, v in d.current.values.items() if k != "global_load_sectors"}
    assert wider_stores(replace(d, current=replace(d.current, values=no_loads))) is None
    no_spr = {k: v for k, v in d.current.values.items() if k != "sectors_per_request_st"}
    assert wider_stores(replace(d, current=replace(d.current, values=no_spr))) is None
    no_st = {k: v for k, v in d.current.values.items() if k != "global_store_sectors"}
    assert wider_stores(replace(d, current=replace(d.current, values=no_st))) is None


def test_wider_elements_are_neither_more_work_nor_wider_vectors() -> None:
    # The same counters with more instructions: more_work would read "more", and the store
    # requests' sectors x1.6 would read as wider vector stores; both leave it to wider_stores.
    d = _stores(instructions_executed=(1000.0, 1300.0))
    assert wider_stores(d) is not None
    assert more_work(d) is None
    assert vectorized_access(d) is None
    # Not wider elements (x3 bytes): the same delta is more work and wider vector stores.
    other = _stores(stored=3.0, used=1.0, per_request=3.0, instructions_executed=(1000.0, 1300.0))
    assert wider_stores(other) is None
    grown = more_work(other)
    assert grown is not None and grown.mechanism == "more-work"
    wider = vectorized_access(other)
    assert wider is not None and wider.mechanism == "vectorized-access"


# -- record: which metrics a recorded baseline calibrates ----------------------------------------


def _measured(name: str, value: float | str, low: float | None = None,
              high: float | None = None) -> Measured:  # fmt: skip
    reasons = ("long_scoreboard", "wait") if name.startswith("stall") else ()
    return Measured(name, value, low, high, 3, "test", "test", "", reasons=reasons,
                    family="latency" if reasons else "")  # fmt: skip


def test_an_exact_count_of_a_not_exact_kernel_is_calibrated_though_its_runs_agree() -> None:
    sectors = lookup("global_load_sectors")  # an exact count (docs/noise.md)
    m = _measured("global_load_sectors", 1000.0, 1000.0, 1000.0)
    runs = [1000.0, 1000.0, 1000.0]
    look_back = _metric_baseline(m, sectors, runs, 14_000.0, "H100", not_exact=True)
    assert look_back.threshold is not None
    assert look_back.threshold.relative == 0.025  # the not-exact count floor
    assert look_back.calibration is not None and "not exact" in look_back.calibration
    # The same count of an exact kernel stays exact: no line in the file.
    exact = _metric_baseline(m, sectors, runs, 14_000.0, "H100")
    assert exact.threshold is None and exact.calibration is None
    # Its own runs differing calibrate it as well.
    moved = _metric_baseline(m, sectors, [1000.0, 1010.0, 1000.0], 14_000.0, "H100")
    assert moved.threshold is not None
    assert (moved.threshold.relative or 0.0) > 0
    # The bound is written to 4 decimals: twice a spread of 1/3000 is 0.0007.
    fine = _metric_baseline(m, sectors, [3000.0, 3001.0, 3000.0], 14_000.0, "H100")
    assert fine.threshold is not None and fine.threshold.relative == round(2 / 3000, 4)
    # Two runs say nothing about a spread: the catalog's defaults stand.
    two = _metric_baseline(m, sectors, runs[:2], 14_000.0, "H100", not_exact=True)
    assert two.threshold is None
    # A configuration metric of a not-exact kernel has no look-back floor: still exact.
    regs = _metric_baseline(_measured("registers_per_thread", 32.0, 32.0, 32.0),
                            lookup("registers_per_thread"), [32.0] * 3, 14_000.0, "H100",
                            not_exact=True)  # fmt: skip
    assert regs.threshold is None


def test_a_noisy_metric_is_calibrated_whether_its_runs_agree_or_not() -> None:
    duration = lookup("duration")
    same = _metric_baseline(_measured("duration", 30_000.0, 30_000.0, 30_000.0), duration,
                            [30_000.0] * 3, 30_000.0, "H100")  # fmt: skip
    assert same.threshold is not None and same.threshold.relative == 0.065  # H100 from 20 us


def test_a_median_metrics_launch_range_widens_its_bound_and_needs_both_ends() -> None:
    dram = lookup("dram_bytes")  # a median over the launches
    runs = [8.0 * MiB] * 3
    ranged = _metric_baseline(_measured("dram_bytes", 8.0 * MiB, 7.6 * MiB, 8.4 * MiB), dram,
                              [*runs[:2], 8.01 * MiB], 30_000.0, "H100")  # fmt: skip
    assert ranged.threshold is not None
    assert ranged.threshold.relative == pytest.approx(0.1)  # (8.4 - 7.6) / 8
    # One end unknown: no range, the floor (2.1%, docs/noise.md) and spread decide.
    open_end = _metric_baseline(_measured("dram_bytes", 8.0 * MiB, None, 8.4 * MiB), dram,
                                [*runs[:2], 8.01 * MiB], 30_000.0, "H100")  # fmt: skip
    assert open_end.threshold is not None
    assert (open_end.threshold.relative or 1.0) < 0.1
    # A value of 0 has no relative range: the floor alone (L2 sectors: 5%, docs/noise.md).
    zero = _metric_baseline(_measured("l2_sectors", 0.0, 0.0, 0.0), lookup("l2_sectors"),
                            [0.0] * 3, 30_000.0, "H100")  # fmt: skip
    assert zero.threshold is not None and zero.threshold.relative == 0.05


def test_categorical_and_raw_metrics_keep_their_defaults_and_stall_shares_their_reasons() -> None:
    dominant = _metric_baseline(_measured("dominant_stall", "long_scoreboard"),
                                lookup("dominant_stall"), [1.0, 2.0, 3.0], 30_000.0, "H100",
                                not_exact=True)  # fmt: skip
    assert dominant.threshold is None
    raw = "smsp__inst_executed.sum"
    got = _metric_baseline(_measured(raw, 10.0, 10.0, 10.0), lookup(raw), [10.0, 12.0, 11.0],
                           30_000.0, "H100")  # fmt: skip
    assert got.threshold is None
    # A share depends on the reason set it is taken over: kept; cycles per instruction not.
    share = _metric_baseline(_measured("stall.long_scoreboard", 40.0, 40.0, 40.0),
                             lookup("stall.long_scoreboard"), [40.0] * 3, 30_000.0)  # fmt: skip
    assert share.reasons == ("long_scoreboard", "wait") and share.family == "latency"
    cpi = _metric_baseline(_measured("stall_cpi.long_scoreboard", 4.0, 4.0, 4.0),
                           lookup("stall_cpi.long_scoreboard"), [4.0] * 3, 30_000.0)  # fmt: skip
    assert cpi.reasons is None and cpi.family is None


# -- identity: an autotuned kernel's problem sizes, told by its traffic --------------------------

_STORED, _READ = TRAFFIC


def _launch(index: int, stored: float | None, read: float | None,
            instructions: float = 1e6, block: int = 128) -> Launch:  # fmt: skip
    metrics: dict[str, float | str] = {"smsp__inst_executed.sum": instructions}
    if stored is not None:
        metrics[_STORED] = stored
    if read is not None:
        metrics[_READ] = read
    return Launch(index, SOFTMAX, SOFTMAX, (block, 1, 1), (16384, 1, 1), metrics,
                  source=f"run{index % 3 + 1}.csv")  # fmt: skip


def test_traffic_is_store_sectors_plus_dram_read_sectors() -> None:
    assert traffic(_launch(0, 1000.0, 64_000.0)) == 1000.0 + 64_000.0 / 32
    assert traffic(_launch(0, None, 64_000.0)) is None
    assert traffic(_launch(0, 1000.0, None)) is None
    # The median launch's (the upper middle of an even count), none where none is known.
    launches = [_launch(i, s, 0.0) for i, s in enumerate((30.0, 10.0, 20.0, 40.0))]
    assert median_traffic(launches) == 30.0
    assert median_traffic(launches[:3]) == 20.0
    assert median_traffic([_launch(0, None, None)]) is None


def test_problem_sizes_split_by_traffic_beyond_the_gap_and_the_floor() -> None:
    # N=1000 and N=3000 on 16384 rows (fam-a triton-sizes): stores x3, far beyond 1.25.
    small = [_launch(i, 512_000.0, 2 * 32 * 512_000.0, block=64 * (i + 1)) for i in range(3)]
    large = [_launch(3 + i, 1_536_000.0, 2 * 32 * 1_536_000.0) for i in range(3)]
    sizes = problem_sizes(large + small)
    assert [[la.index for la in s] for s in sizes] == [[0, 1, 2], [3, 4, 5]]  # smallest first
    # x3 of a few sectors is within the 2048-sector floor: one size.
    tiny = [_launch(0, 100.0, 0.0), _launch(1, 300.0, 0.0)]
    assert len(problem_sizes(tiny)) == 1
    # Beyond the floor by one sector splits; at the floor does not.
    assert len(problem_sizes([_launch(0, 100.0, 0.0), _launch(1, 2149.0, 0.0)])) == 2
    assert len(problem_sizes([_launch(0, 100.0, 0.0), _launch(1, 2148.0, 0.0)])) == 1
    # Traffic unknown on a launch: one size.
    assert len(problem_sizes([*small, _launch(9, None, 1.0)])) == 1


def test_work_classes_split_beyond_the_gap_only() -> None:
    def at(values: tuple[float, ...]) -> list[list[int]]:
        launches = [_launch(i, 0.0, 0.0, instructions=v) for i, v in enumerate(values)]
        return [[la.index for la in c] for c in split_work(launches)]

    assert at((1000.0, 1250.0)) == [[0, 1]]  # x1.25 is the gap itself
    assert at((1000.0, 1251.0)) == [[0], [1]]
    assert at((1251.0, 1000.0, 2000.0)) == [[1], [0], [2]]
    assert at((0.0, 1000.0)) == [[0, 1]]  # a count of 0: not decidable
    assert at((1.0, 2.0)) == [[0], [1]]  # instructions have no floor: x2 of 1 is two kernels
    assert split_work([]) == [[]]


def test_sized_groups_key_each_size_by_name_and_class_only_when_several() -> None:
    small = [_launch(i, 512_000.0, 0.0, block=64 * (i + 1)) for i in range(3)]
    large = [_launch(3 + i, 1_536_000.0, 0.0) for i in range(3)]
    key = KernelKey(SOFTMAX, (16384, 1, 1), (128, 1, 1), None)
    groups = sized_groups(key, large + small)
    assert [(g.key.grid, g.key.block, g.key.work) for g in groups] == [
        (None, None, 1), (None, None, 2),
    ]  # fmt: skip
    one = sized_groups(key, small)
    assert len(one) == 1 and one[0].key.work is None


def test_a_tuned_sizes_entry_records_its_traffic_for_the_check_to_pair() -> None:
    launches = [_launch(i, 512_000.0, 32 * 1000.0, block=64 * (i + 1)) for i in range(3)]
    # Autotuned: its configuration differed between the recorded runs.
    configs = tuple(config_of(la) for la in launches)
    base = KernelBaseline("softmax", KernelMatch(name=SOFTMAX, work=1), (), configurations=configs)
    assert base.tuned
    got = with_traffic(base, launches)
    assert got.info[TRAFFIC_INFO] == 512_000.0 + 1000.0
    assert recorded_traffic(got) == 512_000.0 + 1000.0
    # Not tuned, not one size of several, or no traffic: as it is.
    untuned = replace(base, configurations=())
    assert with_traffic(untuned, launches) == untuned
    unsized = replace(base, match=KernelMatch(name=SOFTMAX))
    assert with_traffic(unsized, launches) == unsized
    assert with_traffic(base, [_launch(0, None, None)]) == base
    assert recorded_traffic(base) is None
    # Written to a tenth of a sector (a byte read is 1/32 of one); one sector is traffic.
    odd = [_launch(i, 512_000.0, 32 * 1000.0 + 11, block=64 * (i + 1)) for i in range(3)]
    assert with_traffic(base, odd).info[TRAFFIC_INFO] == 513_000.3  # 513,000 + 11/32
    assert recorded_traffic(replace(base, info={TRAFFIC_INFO: 1.0})) == 1.0
    assert recorded_traffic(replace(base, info={TRAFFIC_INFO: 0.0})) is None
    assert recorded_traffic(replace(base, info={TRAFFIC_INFO: "x"})) is None


# -- names: XLA's renumbered fusions ---------------------------------------------------------------


def test_xla_fusion_numbers_are_normalised_and_inductors_rule_comes_first() -> None:
    # fam-a jax-train -> fam-b jax-remat: gemm_fusion_dot_general_8 -> _10, and the first
    # of a name unnumbered (loop_multiply_fusion -> loop_multiply_fusion_2).
    assert normalise("gemm_fusion_dot_general_8") == normalise("gemm_fusion_dot_general_10")
    assert normalise("loop_multiply_fusion") == normalise("loop_multiply_fusion_2")
    assert normalise("wrapped_transpose") == normalise("wrapped_transpose_3")
    # Inductor's numbered names: its own rule, once (not a second "_#" by XLA's).
    assert normalise("triton_poi_fused_add_mul_relu_1") == "triton_poi_fused_add_mul_relu_#"
    # A C++ kernel is no XLA fusion.
    cxx = "void at::native::reduce_kernel<512, 1>(T3)"
    assert normalise(cxx) == cxx


def test_short_names_show_three_template_arguments_at_most() -> None:
    assert short_name("void k<1, 2, 3, 4>(int)") == "k<1, 2, 3, …>"
    assert short_name("void k<1, 2>(int)") == "k<1, 2>"
    assert short_name("k<1, 2>(int)") == "k<1, 2>"  # the name at the start of the text
    assert short_name("void ns::k<float, 2>(float *)") == "k<float, 2>"
    assert short_name("") == ""


def test_short_names_keep_xlas_fusion_number() -> None:
    # The names are bare identifiers, told apart by their number alone.
    assert short_name("gemm_fusion_dot_general_12") == "gemm_fusion_dot_general_12"
    assert short_name("loop_multiply_fusion_2") != short_name("loop_multiply_fusion")
    # Inductor's number goes, as it always did.
    assert short_name("triton_poi_fused_add_mul_relu_1") == short_name(
        "triton_poi_fused_add_mul_relu_0"
    )


# -- record on fam-a's real captures --------------------------------------------------------------

FAM_A = ROOT / "tests" / "data" / "field" / "families" / "fam-a"


@functools.cache
def _recorded(family: str) -> Baseline:
    runs = [read_captures([str(FAM_A / f"{family}-run{i}.csv.gz")]) for i in (1, 2, 3)]
    return record(merge(runs), RecordSettings()).baseline


def test_cubs_look_back_kernels_calibrate_their_load_sectors_and_exact_kernels_do_not() -> None:
    base = _recorded("cub")
    look_back = [k for k in base.kernels if re.search(r"Onesweep|SelectSweep", k.name or "")]
    assert len(look_back) >= 3
    for k in look_back:
        sectors = next(m for m in k.metrics if m.name == "global_load_sectors")
        assert sectors.threshold is not None, k.id
        assert (sectors.threshold.relative or 0.0) >= 0.025, k.id  # the not-exact count floor
    fill = next(k for k in base.kernels if "fill_reverse_indices_kernel" in (k.name or ""))
    assert next(m for m in fill.metrics if m.name == "global_load_sectors").threshold is None


def test_an_autotuned_sizes_entry_gates_what_its_configuration_does_not_decide() -> None:
    base = _recorded("triton-sizes")
    sizes = [k for k in base.kernels if k.tuned]
    assert len(sizes) == 2  # softmax_kernel at N=1000 and N=3000
    for k in sizes:
        gated = {m.name for m in k.metrics}
        assert gated <= set(CONFIG_INDEPENDENT) and "duration" in gated, gated
        # What it does not gate is in `info`, never both.
        assert not gated & set(k.info), gated & set(k.info)
        assert "achieved_occupancy" in k.info
        # Its time: one configuration's noise; its counts: their own calibration.
        duration = next(m for m in k.metrics if m.name == "duration")
        assert duration.calibration is not None
        assert duration.calibration.startswith("per configuration"), duration.calibration
        others = [m for m in k.metrics if m.name != "duration" and m.calibration is not None]
        assert all(
            not m.calibration.startswith("per configuration") for m in others if m.calibration
        )
        assert recorded_traffic(k) is not None
        assert k.launches == 1  # each size once a run (tests/data/field/families/README.md)


# -- changes: the model's dtype takes ATen's type-erased copies along ----------------------------

_CAT = "void at::<unnamed>::CatArrayBatchedCopy<at::<unnamed>::OpaqueType<{n}>, unsigned int, 3, 64, 64>(T1 *, at::<unnamed>::CatArrInputTensorMetadata<T1, T2, T4, T5>, at::<unnamed>::TensorSizeStride<T2, 4>, int, T2)"
_NORM = "void at::<unnamed>::vectorized_layer_norm_kernel<{t}, float, 0>(int, T2, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)"


def test_fp16_to_fp32_folds_the_cat_copies_of_either_width_and_no_other() -> None:
    # fam-a vit (fp16) against fam-b vit-fp32: a GEMM, a layer norm and the cat copy each side.
    missing = [
        _k("g16", "nvjet_sm90_hsh_128x144_64x6_2x1_v_bz_coopA_bias_TNT", MISSING),
        _k("n16", _NORM.format(t="c10::Half"), MISSING),
        _k("c2", _CAT.format(n=2), MISSING),
        _k("c8", _CAT.format(n=8), MISSING),  # 8-byte elements: neither type's
    ]
    new = [
        _k(
            "g32",
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
            NEW,
        ),
        _k("n32", _NORM.format(t="float"), NEW),
        _k("c4", _CAT.format(n=4), NEW),
    ]
    got = dtype_rule(missing, new)
    assert got is not None
    kind, title, lever, claimed = got
    # fp16 GEMMs ran on tensor cores, the fp32 ones on FFMA.
    assert (kind, title) == ("dtype", "dtype of the whole model: FP16 -> FP32 (tensor cores lost)")
    assert "torch.float32" in lever and "float16 was the recorded one" in lever
    assert {k.id for k in claimed} == {"g16", "n16", "c2", "g32", "n32", "c4"}
    # ATen's copies new with it (the casts of a model moved to another type) go along; no
    # other new ATen kernel, nor a copy of the user's own, does.
    cast = "void at::unrolled_elementwise_kernel<at::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(long) (instance 1)], std::array<char *, 2>, 4>(int, T1, T2, T3, T4, T5, T6)"
    fill = "void at::native::<unnamed>::fill_reverse_indices_kernel(long *, int, at::cuda::detail::IntDivider<unsigned int>)"
    extra = [_k("cast", cast, NEW), _k("fill", fill, NEW), _k("own", "copy_kernel", NEW)]
    with_copies = dtype_rule(missing, new + extra)
    assert with_copies is not None
    assert {k.id for k in with_copies[3]} == {"g16", "n16", "c2", "g32", "n32", "c4", "cast"}
    # The other way they are gained; between two tensor-core types neither.
    back = dtype_rule(
        [replace(k, side=MISSING) for k in new], [replace(k, side=NEW) for k in missing]
    )
    assert back is not None
    assert back[1].endswith("FP32 -> FP16 (tensor cores gained)"), back[1]
    bf16 = [_k("g", "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT", NEW),
            _k("n", _NORM.format(t="c10::BFloat16"), NEW)]  # fmt: skip
    both = dtype_rule(missing, bf16)
    assert both is not None
    assert both[1] == "dtype of the whole model: FP16 -> BF16", both[1]
    # Without a GEMM on a side it is no whole-model change.
    assert dtype_rule(missing[1:], new) is None
    assert dtype_rule(missing, new[1:]) is None


def test_two_factors_as_common_the_first_kernels_is_the_programs() -> None:
    # Three kernels at x2 and three at x3 (the check lists them heaviest first): the first
    # listed factor is taken, not the last one seen, and the x3 kernels are not "grew less".
    kernels = [_scaled(i, 2.0) for i in range(3)] + [_scaled(3 + i, 3.0) for i in range(3)]
    got = scaled_work_rule([], [], kernels)
    assert got is not None
    assert got[1] == (
        "More work: x2.00 across 3 kernels: launches, instructions and sectors scaled together"
    )
    assert {k.id for k in got[3]} == {"k0", "k1", "k2"}


def test_wider_stores_and_more_work_rank_among_the_other_causes() -> None:
    # The output's type is the kernel's own change: it leads a launch count that moved with
    # it, and a mechanism that costs more (divergence) leads it.
    d = _stores(instructions_executed=(1000.0, 1300.0))
    twice = replace(d, current=replace(d.current, launches=2.0))
    assert [c.mechanism for c in diagnose(twice).causes] == ["wider-stores", "launch-count"]
    diverged = _stores(instructions_executed=(1000.0, 1300.0),
                       warp_execution_efficiency=(90.0, 60.0))  # fmt: skip
    assert [c.mechanism for c in diagnose(diverged).causes] == ["divergence", "wider-stores"]
    # More work, a regression, leads the wider vector stores beside it, a change.
    other = _stores(stored=3.0, used=1.0, per_request=3.0, instructions_executed=(1000.0, 1300.0))
    assert [c.mechanism for c in diagnose(other).causes] == ["more-work", "vectorized-access"]


# -- matching: an autotuned kernel's sizes in a check ---------------------------------------------


def _n_cols(launch: Launch) -> int:
    """A softmax launch's row length from its DRAM reads: 16384 bf16 rows (its input)."""
    read = launch.metrics[_READ]
    assert isinstance(read, float)
    return round(read / (16384 * 2) / 100) * 100


def test_each_recorded_size_takes_the_checks_launches_of_that_size_whatever_their_config() -> None:
    base = _recorded("triton-sizes")
    capture = read_captures([str(FAM_A.parent / "fam-b" / "triton-sizes-run1.csv.gz")])
    groups = group_launches(capture.launches)
    matched = match(base, groups)
    sizes = [k for k in base.kernels if k.tuned]
    assert len(sizes) == 2
    by_size: dict[int, set[int]] = {}
    for la in capture.launches:
        if la.name == SOFTMAX:
            by_size.setdefault(_n_cols(la), set()).add(la.index)
    assert sorted(by_size) == [1000, 3000]
    took = {k.id: {la.index for la in matched.launches(k.id)} for k in sizes}
    # Each entry one size, all of its launches (at any grid and block), none of the other's.
    assert sorted(took.values(), key=min) == [by_size[1000], by_size[3000]]
    # The launches of the other kernel stay its own.
    norm = next(k for k in base.kernels if k.match.name == "layernorm_kernel")
    assert {la.name for la in matched.launches(norm.id)} == {"layernorm_kernel"}
    assert not [g for g in matched.unclaimed if g.key.name == SOFTMAX]


def test_without_traffic_the_sizes_pair_by_their_number() -> None:
    base = _recorded("triton-sizes")
    capture = read_captures([str(FAM_A.parent / "fam-b" / "triton-sizes-run1.csv.gz")])
    # A capture without DRAM reads: no size can be told, one class of all the launches,
    # which the first size's entry takes; the second is missing.
    bare = [replace(la, metrics={k: v for k, v in la.metrics.items() if k != _READ})
            for la in capture.launches]  # fmt: skip
    matched = match(base, group_launches(bare))
    first, second = sorted((k for k in base.kernels if k.tuned), key=lambda k: k.match.work or 0)
    assert {la.index for la in matched.launches(first.id)} == {
        la.index for la in bare if la.name == SOFTMAX
    }
    assert not list(matched.launches(second.id))


def _fusion(index: int, name: str, instructions: float) -> Launch:
    return Launch(index, name, name, (256, 1, 1), (64, 1, 1),
                  {"smsp__inst_executed.sum": instructions})  # fmt: skip


def _entry(name: str, instructions: float) -> KernelBaseline:
    return KernelBaseline(name, KernelMatch(name=name, grid=(64, 1, 1), block=(256, 1, 1)),
                          (MetricBaseline("instructions_executed", instructions),))  # fmt: skip


def test_renumbered_fusions_pair_by_work_but_a_tie_is_never_guessed() -> None:
    # jax-remat renumbered two fusions of one name into three (fam-b): each recorded one
    # finds the group of its own work; the third is new.
    base = Baseline((_entry("gemm_fusion_dot_general_8", 15_466_496.0),
                     _entry("gemm_fusion_dot_general_12", 3_000_000.0)))  # fmt: skip
    now = [_fusion(0, "gemm_fusion_dot_general_10", 15_466_496.0),
           _fusion(1, "gemm_fusion_dot_general_14", 3_000_000.0),
           _fusion(2, "gemm_fusion_dot_general_18", 40_000_000.0)]  # fmt: skip
    matched = match(base, group_launches(now))
    assert [la.index for la in matched.launches("gemm_fusion_dot_general_8")] == [0]
    assert [la.index for la in matched.launches("gemm_fusion_dot_general_12")] == [1]
    assert matched.how["gemm_fusion_dot_general_8"] == "renamed: was gemm_fusion_dot_general_8"
    assert [g.key.name for g in matched.unclaimed] == ["gemm_fusion_dot_general_18"]
    # Two groups as near the entry's work: which is it cannot be told, so neither.
    tied = [_fusion(0, "gemm_fusion_dot_general_10", 15_466_496.0),
            _fusion(1, "gemm_fusion_dot_general_14", 15_466_496.0),
            _fusion(2, "gemm_fusion_dot_general_18", 3_000_000.0)]  # fmt: skip
    matched = match(base, group_launches(tied))
    assert not list(matched.launches("gemm_fusion_dot_general_8"))
    assert [la.index for la in matched.launches("gemm_fusion_dot_general_12")] == [2]
    # Beyond the work gap (x1.25) the nearest group is another kernel.
    far = [_fusion(0, "gemm_fusion_dot_general_10", 15_466_496.0 * 1.3),
           _fusion(1, "gemm_fusion_dot_general_14", 3_000_000.0),
           _fusion(2, "gemm_fusion_dot_general_18", 40_000_000.0)]  # fmt: skip
    matched = match(base, group_launches(far))
    assert not list(matched.launches("gemm_fusion_dot_general_8"))
    # Two entries as near one group: neither takes it.
    twins = Baseline((_entry("gemm_fusion_dot_general_8", 15_466_496.0),
                      _entry("gemm_fusion_dot_general_12", 15_466_496.0)))  # fmt: skip
    matched = match(twins, group_launches(now))
    assert not list(matched.launches("gemm_fusion_dot_general_8"))
    assert not list(matched.launches("gemm_fusion_dot_general_12"))


# -- check: evidence noted, never improved ------------------------------------------------------


def test_why_an_evidence_move_is_noted_says_which_way_it_went() -> None:
    worse = why_noted("achieved_occupancy")
    better = why_noted("achieved_occupancy", better=True)
    assert worse.startswith("evidence only") and "no primary metric" in worse
    assert better.startswith("evidence only") and "no improvement to lock in" in better
    # A time metric is primary in general: evidence only for a short kernel, which it says.
    short = why_noted("duration")
    assert f"under {SHORT_KERNEL_NS / 1000:g} us" in short and "no primary metric" in short
    assert why_noted("duration", better=True).endswith("no improvement to lock in")


def test_a_time_comparison_moves_per_launch() -> None:
    kernel = replace(_entry("k", 1.0), launches=4)
    total = Comparison("k", "total_time", State.REGRESSED, 4000.0, 6000.0)
    assert moved_per_launch(total, kernel) == 500.0  # total_time is per run: 4 launches
    duration = Comparison("k", "duration", State.REGRESSED, 1000.0, 1500.0)
    assert moved_per_launch(duration, kernel) == 500.0
    assert moved_per_launch(replace(total, current="x"), kernel) is None
    assert moved_per_launch(replace(total, baseline=None), kernel) is None
    assert moved_per_launch(total, replace(kernel, launches=None)) == 2000.0


def test_a_kernel_without_a_time_or_any_metric_recorded() -> None:
    capture = merge([read_captures([str(FAM_A / f"nvrtc-run{i}.csv.gz")]) for i in (1, 2, 3)])
    group = group_launches(capture.launches)[0]
    # No metric of the list in the capture: no entry, and why for each metric.
    entry, skipped = record_kernel(group, "k", ["smsp__no_such_counter.sum"], capture)
    assert entry is None and len(skipped) == 1 and skipped[0].startswith("k: smsp__no_such")
    # Without the time column the counts are still recorded, their floors by an unknown
    # duration.
    untimed = replace(capture, launches=tuple(
        replace(la, metrics={k: v for k, v in la.metrics.items()
                             if k != "gpu__time_duration.sum"})
        for la in group.launches
    ))  # fmt: skip
    entry, _ = record_kernel(group_launches(untimed.launches)[0], "k",
                             ["instructions_executed", "duration"], untimed)  # fmt: skip
    assert entry is not None and [m.name for m in entry.metrics] == ["instructions_executed"]


def test_a_size_at_one_configuration_in_every_run_is_autotuned_for_the_other_sizes() -> None:
    # fam-a triton-sizes: softmax_kernel at N=1000 took several configurations across the
    # three runs, at N=3000 8 warps in each (tests/data/field/families/README.md).
    runs = merge([read_captures([str(FAM_A / f"triton-sizes-run{i}.csv.gz")]) for i in (1, 2, 3)])
    groups, reasons = merge_tuned(group_launches(runs.launches), 3)
    sized = {g.key: g for g in groups if g.key in reasons}
    assert len(sized) == 2
    by_cols = {_n_cols(g.launches[0]): key for key, g in sized.items()}
    assert reasons[by_cols[3000]] == _SIZE_WHY
    assert (
        reasons[by_cols[1000]] != _SIZE_WHY
        and "differs between the recorded runs" in (reasons[by_cols[1000]])
    )


def test_fusions_of_two_names_at_one_shape_pair_within_their_own_name() -> None:
    base = Baseline((_entry("gemm_fusion_dot_general_8", 15_466_496.0),
                     _entry("gemm_fusion_dot_general_12", 3_000_000.0),
                     _entry("loop_add_fusion_2", 500_000.0),
                     _entry("loop_add_fusion_3", 90_000.0)))  # fmt: skip
    now = [_fusion(0, "gemm_fusion_dot_general_10", 15_466_496.0),
           _fusion(1, "gemm_fusion_dot_general_14", 3_000_000.0),
           _fusion(2, "gemm_fusion_dot_general_18", 40_000_000.0),
           _fusion(3, "loop_add_fusion_4", 500_000.0),
           _fusion(4, "loop_add_fusion_5", 90_000.0),
           _fusion(5, "loop_add_fusion_6", 7_000_000.0)]  # fmt: skip
    matched = match(base, group_launches(now))
    took = {e.id: [la.name for la in matched.launches(e.id)] for e in base.kernels}
    assert took == {
        "gemm_fusion_dot_general_8": ["gemm_fusion_dot_general_10"],
        "gemm_fusion_dot_general_12": ["gemm_fusion_dot_general_14"],
        "loop_add_fusion_2": ["loop_add_fusion_4"],
        "loop_add_fusion_3": ["loop_add_fusion_5"],
    }


def test_a_regressed_label_alone_is_noted_evidence() -> None:
    # The dominant stall changed (a label: no move in ns), nothing primary regressed.
    kernel = _entry("k", 1.0)
    stall = Comparison("k", "dominant_stall", State.REGRESSED, "long_scoreboard", "wait")
    facts = KernelFacts(kernel, Baseline((kernel,)))
    (got,) = note_evidence((stall,), facts)
    assert got.state is State.NOTED and "no primary metric" in got.explained
    # Evidence within its bound stays as it was.
    held = Comparison("k", "achieved_occupancy", State.PASS, 50.0, 51.0)
    assert note_evidence((stall, held), facts)[1] == held


def test_only_the_slower_size_names_the_autotuners_choice_with_its_time() -> None:
    base = _recorded("triton-sizes")
    result = check(base, read_captures([str(FAM_A.parent / "fam-b" / "triton-sizes-run1.csv.gz")]))
    tuned = [v for v in result.verdicts if v.kernel in {k.id for k in base.kernels if k.tuned}]
    slower = [v for v in tuned if v.state is KernelState.REGRESSED]
    assert len(tuned) == 2 and len(slower) == 1  # fam-b chose 16 warps for N=1000 only
    duration = next(c for c in slower[0].comparisons if c.metric == "duration")
    assert re.search(r"the autotuner chose [^;]*\(\d+(\.\d+)? us\)", duration.message), (
        duration.message
    )
    (other,) = [v for v in tuned if v is not slower[0]]
    assert all(c.mechanism != "autotuned-configuration" for c in other.causes)
    assert all("autotuner chose" not in c.message for c in other.comparisons)
