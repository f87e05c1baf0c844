"""Differential diagnosis on real captures: each zoo regression's delta (good build against
regressed build) gets the cause that names its mechanism FIRST, with that mechanism's lever.
Mechanisms without a real capture yet are built from real sides with the moved counters
changed, so a rule that fires on the wrong counter fails here."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from statistics import median

import pytest

from perfgate.causes import diagnose, metrics, side_from_launches, substitution_cause
from perfgate.causes.facts import share
from perfgate.causes.levers import ACCEPT, LEVERS
from perfgate.causes.model import CauseKind, KernelDelta, Side
from perfgate.identity.grouping import group_launches
from perfgate.ingest import read_capture, read_captures
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check
from perfgate.verdicts.model import KernelVerdict
from tests.conftest import data
from tests.zoo.expectations import EXPECTED_MECHANISMS

FORMS = ["short-run1.csv", "short-run3.csv", "full-run2.csv.gz"]

EXPECTED = EXPECTED_MECHANISMS


@functools.cache
def sides(name: str) -> dict[str, Side]:
    cap = read_capture(data(name))
    return {
        g.launches[0].function: side_from_launches(list(g.launches), cap.columns, metrics())
        for g in group_launches(cap.launches)
    }


def delta(
    kernel: str,
    form: str = FORMS[0],
    before: str = "good",
    after: str = "bad",
    family: str | None = None,
    comparisons: tuple[Comparison, ...] = (),
) -> KernelDelta:
    b = sides(f"zoo-{before}-{form}")[kernel]
    a = sides(f"zoo-{after}-{form}")[kernel]
    return KernelDelta(kernel, b, a, comparisons, family)


def with_values(side: Side, **values: float | str) -> Side:
    return replace(side, values={**side.values, **values})


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_each_regression_gets_its_mechanism_and_lever_first(kernel: str, form: str) -> None:
    d = diagnose(delta(kernel, form))
    head = d.headline
    assert head is not None, kernel
    assert head.mechanism == EXPECTED[kernel], [c.mechanism for c in d.causes]
    assert head.kind is CauseKind.REGRESSION
    assert head.lever == LEVERS[EXPECTED[kernel]]
    assert head.evidence and all(e.raw for e in head.evidence), head.evidence


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_no_regression_cause_between_two_runs_of_the_good_build(kernel: str) -> None:
    d = diagnose(
        KernelDelta(
            kernel,
            sides("zoo-good-short-run1.csv")[kernel],
            sides("zoo-good-short-run3.csv")[kernel],
            (),
        )
    )
    assert [c for c in d.causes if c.kind is CauseKind.REGRESSION] == []


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_fixing_a_regression_is_never_blamed_as_one(kernel: str) -> None:
    d = diagnose(delta(kernel, before="bad", after="good"))
    assert all(
        c.mechanism != EXPECTED[kernel] or c.kind is not CauseKind.REGRESSION for c in d.causes
    ), d.causes


def test_coalescing_falls_back_to_sectors_per_request_without_bytes_per_sector() -> None:
    d = delta("zoo_coalescing")
    strip = {k: v for k, v in d.current.values.items() if k != "global_load_efficiency"}
    base = {k: v for k, v in d.baseline.values.items() if k != "global_load_efficiency"}
    got = diagnose(
        replace(
            d, baseline=replace(d.baseline, values=base), current=replace(d.current, values=strip)
        )
    )
    assert got.headline is not None and got.headline.mechanism == "uncoalesced-loads"


def test_float4_loads_are_vector_accesses_not_uncoalesced() -> None:
    good = sides("zoo-good-short-run1.csv")["zoo_coalescing"]
    wide = with_values(
        good,
        sectors_per_request_ld=16.0,
        global_load_efficiency=100.0,
        instructions_executed=float(good.values["instructions_executed"]) / 3,
    )
    d = diagnose(KernelDelta("zoo_coalescing", good, wide, ()))
    assert [c.mechanism for c in d.causes][:1] == ["vectorized-access"]
    assert not any(c.mechanism.startswith("uncoalesced") for c in d.causes)


def test_consequences_are_listed_under_the_cause_not_as_failures() -> None:
    moved = (
        "duration",
        "total_time",
        "dram_throughput",
        "sectors_per_request_ld",
        "global_load_efficiency",
        "stall.long_scoreboard",
        "l1tex_throughput",
    )
    comparisons = tuple(Comparison("zoo_coalescing", m, State.REGRESSED) for m in moved)
    d = diagnose(delta("zoo_coalescing", comparisons=comparisons))
    assert d.headline is not None and set(moved) <= set(d.headline.explains)
    verdict = KernelVerdict(
        "zoo_coalescing", "zoo_coalescing", KernelState.REGRESSED, comparisons, d.causes
    )
    assert verdict.unexplained() == ()


def test_a_gated_counter_worse_but_the_kernel_faster_is_a_trade_off() -> None:
    d = delta("zoo_registers")
    quick = with_values(d.current, duration=float(d.baseline.values["duration"]) * 0.5)
    got = diagnose(replace(d, current=quick))
    assert got.headline is not None and got.headline.kind is CauseKind.TRADE_OFF
    assert got.headline.lever.startswith(ACCEPT)
    assert "perfgate baseline accept --reason" in got.headline.lever


def _spills() -> KernelDelta:
    """chg_spills' shape: ~48 registers with spills, then ~64 registers, no spills, faster."""
    good = sides("zoo-good-short-run1.csv")["zoo_registers"]
    base = with_values(
        good,
        registers_per_thread=48.0,
        local_memory_sectors=4_000_000.0,
        theoretical_occupancy=62.5,
        occupancy_limiter="registers",
        duration=120_000.0,
    )
    now = with_values(
        good,
        registers_per_thread=64.0,
        local_memory_sectors=0.0,
        theoretical_occupancy=50.0,
        occupancy_limiter="registers",
        duration=90_000.0,
    )
    comparisons = (
        Comparison("k", "registers_per_thread", State.REGRESSED),
        Comparison("k", "theoretical_occupancy", State.REGRESSED),
    )
    return KernelDelta("chg_spills", base, now, comparisons)


def test_spills_removed_is_a_trade_off_and_never_says_cut_registers() -> None:
    d = diagnose(_spills())
    assert d.headline is not None and d.headline.mechanism == "spills-removed"
    assert d.headline.kind in (CauseKind.TRADE_OFF, CauseKind.IMPROVEMENT)
    assert {"registers_per_thread", "theoretical_occupancy"} <= set(d.headline.explains)
    for c in d.causes:
        assert "__launch_bounds__" not in c.lever and "fewer live values" not in c.lever


def _pipelining() -> KernelDelta:
    """A Triton matmul from num_stages 3 to 1: a third of the shared memory, theoretical
    occupancy up, warps wait on global loads, the tensor pipe idles, same instructions."""
    good = sides("zoo-good-short-run1.csv")["zoo_tensor_cores"]
    shares = {"long_scoreboard": 55.0, "wait": 10.0, "short_scoreboard": 5.0}
    base = replace(
        with_values(
            good,
            shared_memory_per_block=98_304.0,
            theoretical_occupancy=12.5,
            occupancy_limiter="shared_mem",
            tensor_pipe_utilization=40.0,
            registers_per_thread=128.0,
            duration=100_000.0,
            **{"stall.long_scoreboard": 25.0},
        ),
        shares={**shares, "long_scoreboard": 25.0, "math_pipe_throttle": 40.0},
    )
    now = replace(
        with_values(
            good,
            shared_memory_per_block=32_768.0,
            theoretical_occupancy=18.75,
            occupancy_limiter="registers",
            tensor_pipe_utilization=22.0,
            registers_per_thread=128.0,
            duration=160_000.0,
            **{"stall.long_scoreboard": 55.0},
        ),
        shares={**shares, "math_pipe_throttle": 20.0},
    )
    return KernelDelta("matmul_kernel", base, now, ())


def test_lost_pipelining_is_not_blamed_on_occupancy() -> None:
    d = diagnose(_pipelining())
    assert d.headline is not None and d.headline.mechanism == "lost-pipelining"
    assert "num_stages" in d.headline.lever and "__launch_bounds__" not in d.headline.lever
    assert not any(
        c.mechanism.startswith("occupancy") and c.kind is CauseKind.REGRESSION for c in d.causes
    )


def test_short_scoreboard_is_never_blamed_on_registers() -> None:
    good = sides("zoo-good-short-run1.csv")["zoo_bank_conflicts"]
    shares = dict(good.shares or {})
    more = {**shares, "short_scoreboard": shares.get("short_scoreboard", 0) + 40}
    now = replace(
        with_values(
            good,
            duration=float(good.values["duration"]) * 2,
            theoretical_occupancy=100.0,
            **{"stall.short_scoreboard": more["short_scoreboard"]},
        ),
        shares=more,
    )
    d = diagnose(KernelDelta("k", with_values(good, theoretical_occupancy=100.0), now, ()))
    assert d.headline is not None and d.headline.mechanism == "stall-short_scoreboard"
    lever = d.headline.lever.lower()
    assert "register" not in lever.replace("in registers", "") and "occupancy" not in lever
    assert "__launch_bounds__" not in lever and "shared" in lever


def test_a_redundant_launch_is_a_launch_count_cause() -> None:
    good = sides("zoo-good-short-run1.csv")["zoo_coalescing"]
    twice = replace(
        good,
        launches=(good.launches or 1) * 2,
        values={**good.values, "total_time": float(good.values["total_time"]) * 2},
    )
    comparisons = (
        Comparison("k", "launches", State.REGRESSED),
        Comparison("k", "total_time", State.REGRESSED),
    )
    d = diagnose(KernelDelta("chg_redundant", good, twice, comparisons))
    assert d.headline is not None and d.headline.mechanism == "launch-count"
    assert set(d.headline.explains) == {"launches", "total_time"}


@pytest.mark.parametrize("family", ["cuBLAS", "cuDNN", "FlashAttention", "CUTLASS", "NCCL"])
@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_library_kernels_get_caller_levers(family: str, kernel: str) -> None:
    d = diagnose(delta(kernel, family=family))
    for c in d.causes:
        assert "__launch_bounds__" not in c.lever and "__syncthreads" not in c.lever, c
    head = d.headline
    assert head is not None and head.mechanism == EXPECTED[kernel]
    if family == "cuBLAS":
        assert "multiples of 8" in head.lever


def test_rules_without_their_counters_say_what_to_capture() -> None:
    d = delta("zoo_bank_conflicts")
    drop = ("shared_bank_conflicts",)
    strip = lambda s: replace(s, values={k: v for k, v in s.values.items() if k not in drop})  # noqa: E731
    got = diagnose(replace(d, baseline=strip(d.baseline), current=strip(d.current)))
    assert all(c.mechanism != "bank-conflicts" for c in got.causes)
    note = next(n for n in got.not_evaluated if n.startswith("bank conflicts"))
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum" in note


def test_substitution_names_what_replaced_the_kernel() -> None:
    flash = Side("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Params)", {})
    math_path = [Side(f"void at::native::elementwise_kernel<{i}>(int)", {}) for i in range(8)]
    c = substitution_cause(flash, math_path, "FlashAttention")
    assert c.title == "FlashAttention was replaced by 8 kernels of the math path"
    assert c.kind is CauseKind.CHANGE and "sdpa_kernel" in c.lever
    gemm = substitution_cause(
        Side("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", {}),
        [Side("nvjet_sm90_tst_128x128_64x3_2x1_h_bz_NNT", {})],
        "cuBLAS",
    )
    assert gemm.title == (
        "cuBLAS picked a different GEMM kernel (tile 256x128_64x4 -> 128x128_64x3)"
    )


_REDUCE = "reduce_kernel<512, 1, at::ReduceOp<float, at::func_wrapper_t<float, at::sum_funct"
_STALL = "no_instruction"


def test_a_few_points_of_stall_share_are_never_a_root_cause() -> None:
    """tests/data/field/families: MoE routed with top-4 (fam-b) against the top-2 baseline
    (fam-a's three runs). ATen's float reduce_kernel ran slower at a new launch configuration,
    and its no_instruction share rose by a few points, about what it moves between the three
    recorded runs (24 to 29%): the launch configuration is the cause; a stall share that
    moved less than 10 points is noise (docs/noise.md), never "More no_instruction stalls"."""
    families = Path(__file__).parents[1] / "data" / "field" / "families"
    runs = [families / "fam-a" / f"moe-run{i}.csv.gz" for i in (1, 2, 3)]
    topk4 = families / "fam-b" / "moe-topk4-run1.csv.gz"

    def no_instruction(path: Path) -> float:
        cap = read_captures([path])
        (group,) = [g for g in group_launches(cap.launches) if _REDUCE in g.key.name]
        value = share(side_from_launches(list(group.launches), cap.columns, metrics()), _STALL)
        assert value is not None
        return value

    rise = no_instruction(topk4) - median(no_instruction(p) for p in runs)
    assert 1 <= rise < 10, rise
    baseline = record(read_captures(runs), RecordSettings()).baseline
    result = check(baseline, read_captures([topk4]))
    (verdict,) = [v for v in result.verdicts if v.name and _REDUCE in v.name]
    assert verdict.state is KernelState.REGRESSED
    assert verdict.causes, verdict
    assert not [c for c in verdict.causes if c.mechanism.startswith("stall-")], verdict.causes
