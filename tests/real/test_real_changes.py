"""The gate on real workloads captured on an H200 (tests/data/h200/real, made by
tests/workloads/capture.sh): PyTorch (cuDNN conv, FlashAttention, cuBLAS nvjet, ATen), a
torch.compile'd module, Triton kernels and CUDA changes. Baselines come from 3 separate ncu
runs of one machine start; re-captures of the unchanged builds come from another start."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline.model import Baseline
from perfgate.causes.model import CauseKind
from perfgate.common.errors import ExitCode
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture, merge
from perfgate.judge.comparison import State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check
from perfgate.verdicts.model import CheckResult, KernelVerdict
from tests.conftest import ROOT

REAL = ROOT / "tests" / "data" / "h200" / "real"


def cap(name: str) -> Capture:
    path = REAL / name
    assert path.exists(), f"missing capture {path}"
    return read_capture(path)


@functools.cache
def baseline(build: str, nvtx: bool = False) -> Baseline:
    runs = merge([cap(f"{build}-run{i}.csv") for i in (1, 2, 3)])
    return record(runs, RecordSettings(by_nvtx=nvtx)).baseline


def verdict(result: CheckResult, contains: str) -> KernelVerdict:
    found = [v for v in result.verdicts if contains in v.kernel and v.state is not KernelState.NEW]
    assert len(found) == 1, [v.kernel for v in result.verdicts]
    return found[0]


def failing(result: CheckResult) -> list[str]:
    return [
        f"{v.kernel}: {v.state.value} "
        + ", ".join(f"{c.metric} {c.relative_change}" for c in v.failing)
        for v in result.verdicts
        if v.exit_code is not ExitCode.OK
    ]


@pytest.mark.parametrize("build", ["torch-flash", "compiled-a", "triton-good", "changes-base"])
@pytest.mark.parametrize("run", [1, 2, 3])
def test_unchanged_builds_pass_on_another_machine_start(build: str, run: int) -> None:
    result = check(baseline(build), cap(f"start2-{build}-run{run}.csv"))
    assert result.exit_code is ExitCode.OK, failing(result)
    assert not [v for v in result.verdicts if v.state is KernelState.NEW]


def test_one_name_at_several_shapes_is_several_kernels_with_readable_ids() -> None:
    ids = [k.id for k in baseline("torch-flash").kernels]
    adds = [
        i for i in ids if i.startswith("vectorized_elementwise_kernel<4, CUDAFunctor_add<float>")
    ]
    assert sorted(adds) == sorted(
        f"vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char *, 3>> [grid {g}x1x1]"
        for g in (1024, 4096, 16384)
    )
    # Two GEMMs of one persistent nvjet kernel (same name, different grid) stay apart.
    gemms = [i for i in ids if i.startswith("nvjet_")]
    assert len(gemms) == 2 and len(set(gemms)) == 2
    assert all("#" not in i or "#work" in i for i in ids)


def test_a_redundant_launch_is_a_regression_of_that_kernel_only() -> None:
    result = check(baseline("torch-flash"), cap("torch-redundant-run1.csv"))
    bad = [v for v in result.verdicts if v.exit_code is not ExitCode.OK]
    assert [v.kernel for v in bad] == [
        "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char *, 3>> [grid 16384x1x1]"
    ]
    (v,) = bad
    assert v.launches is not None and v.launches.baseline == 2 and v.launches.current == (4,)
    assert v.headline is not None and v.headline.mechanism == "launch-count"
    assert {c.metric for c in v.comparisons if c.state is State.REGRESSED} == {
        "launches",
        "total_time",
    }


def test_attention_backend_change_is_one_finding_naming_the_math_path() -> None:
    result = check(baseline("torch-flash"), cap("torch-math-run1.csv"))
    missing = [v for v in result.verdicts if v.state is KernelState.MISSING]
    assert len(missing) == 1
    flash = missing[0]
    assert "flash_fwd_kernel" in flash.name and flash.family == "FlashAttention"
    assert flash.comparisons == ()
    assert flash.causes[0].title.startswith("FlashAttention was replaced by")
    new = {v.kernel for v in result.verdicts if v.state is KernelState.NEW}
    assert set(flash.related) <= new and len(flash.related) >= 8
    # The math path runs attention as fp32 cuBLAS GEMMs and a softmax: both are named.
    assert any("gemm" in k for k in flash.related) and any("softmax" in k for k in flash.related)
    assert result.exit_code is ExitCode.GATE_FAILED


def test_memory_format_change_says_the_layout_conversions_no_longer_run() -> None:
    result = check(baseline("torch-flash"), cap("torch-channels_last-run1.csv"))
    missing = [v for v in result.verdicts if v.state is KernelState.MISSING]
    assert {("nchwToNhwc" in v.name or "nhwcToNchw" in v.name) for v in missing} == {True}
    assert all(v.causes[0].title.endswith("no longer runs") for v in missing)
    # The convolution itself is still there and passes.
    assert verdict(result, "xmma_fprop").state is KernelState.PASS


def test_renumbered_inductor_kernels_are_the_same_kernels() -> None:
    result = check(baseline("compiled-a"), cap("start2-compiled-b-run1.csv"))
    renamed = [v for v in result.verdicts if v.matched_by == "renamed"]
    assert len(renamed) == 4  # every kernel of a moved up by two indices
    assert all(v.kernel.endswith("_#") for v in renamed)
    assert not [v for v in result.verdicts if v.state is KernelState.MISSING]
    new = [v for v in result.verdicts if v.state is KernelState.NEW]
    assert sorted(v.kernel for v in new) == [
        "triton_per_fused_cos_mean_#",
        "triton_red_fused_cos_mean_#",
    ]
    # Variant b feeds the new reduction into the first kernel: it really does more work.
    first = verdict(result, "softmax")
    assert first.state is KernelState.REGRESSED
    assert first.headline is not None and first.headline.mechanism == "more-work"
    # The kernels the change did not touch pass.
    assert verdict(result, "triton_red_fused_mean").state is KernelState.PASS


def test_a_kernel_added_at_the_end_of_the_graph_is_new_and_the_program_pays_for_it() -> None:
    result = check(baseline("compiled-a"), cap("compiled-tail-run1.csv"))
    assert [v.kernel for v in result.verdicts if v.state is KernelState.NEW] == [
        "triton_poi_fused_cos_mul_#"
    ]
    # Every baselined kernel passes; the new kernel's time makes the program slower than its
    # bound (issue 21: a change that makes the program slower fails though each kernel passes).
    assert all(v.state in (KernelState.PASS, KernelState.NEW) for v in result.verdicts)
    program = result.program
    assert program is not None and program.state is KernelState.REGRESSED
    assert program.change is not None and program.bound is not None
    assert program.change > program.bound
    # The new kernel accounts for most of the change.
    assert program.baseline is not None and program.current is not None
    assert program.new_time > 0.5 * (program.current - program.baseline)
    assert result.exit_code is ExitCode.GATE_FAILED


def test_lost_pipelining_leads_with_num_stages_not_occupancy() -> None:
    result = check(baseline("triton-good"), cap("triton-regressed-run1.csv"))
    matmul = verdict(result, "perfgate_matmul_kernel")
    assert matmul.state is KernelState.REGRESSED
    assert matmul.headline is not None and matmul.headline.mechanism == "lost-pipelining"
    assert (
        "num_stages" in matmul.headline.lever and "__launch_bounds__" not in matmul.headline.lever
    )


def test_strided_softmax_leads_with_uncoalesced_loads() -> None:
    result = check(baseline("triton-good"), cap("triton-regressed-run1.csv"))
    softmax = verdict(result, "perfgate_softmax_kernel")
    assert softmax.headline is not None and softmax.headline.mechanism == "uncoalesced-loads"
    assert {"global_load_sectors", "global_load_efficiency"} <= {
        c.metric for c in softmax.comparisons if c.state is State.REGRESSED
    }


@pytest.fixture(scope="module")
def changes() -> CheckResult:
    return check(baseline("changes-base"), cap("changes-changed-run1.csv"))


def test_vectorised_loads_pass(changes: CheckResult) -> None:
    # float4 loads: a quarter of the requests and the blocks, the same sectors, faster.
    v = verdict(changes, "chg_vector_loads")
    assert v.exit_code is ExitCode.OK and v.state is KernelState.IMPROVED
    assert v.matched_by == "reshaped"
    assert not [c for c in v.comparisons if c.state is State.REGRESSED]


def test_removing_spills_is_a_trade_off_never_cut_registers(changes: CheckResult) -> None:
    v = verdict(changes, "chg_spills")
    assert v.state is KernelState.REGRESSED  # registers are an exact gate: users pin them
    assert v.headline is not None and v.headline.mechanism == "spills-removed"
    assert v.headline.kind is CauseKind.TRADE_OFF
    assert "baseline accept" in v.headline.lever and "__launch_bounds__" not in v.headline.lever


def test_a_kernel_launched_twice_as_often_fails_on_its_launch_count(changes: CheckResult) -> None:
    v = verdict(changes, "chg_redundant")
    assert v.state is KernelState.REGRESSED
    assert v.launches is not None and (v.launches.baseline, v.launches.current) == (3, (6,))


def test_the_untouched_kernel_passes(changes: CheckResult) -> None:
    assert verdict(changes, "chg_stable").state is KernelState.PASS


def test_fewer_bytes_and_faster_does_not_fail_on_dram_throughput(changes: CheckResult) -> None:
    v = verdict(changes, "chg_fewer_bytes")
    dram = next(c for c in v.comparisons if c.metric == "dram_throughput")
    assert dram.state is State.PASS and "dram_bytes fell" in dram.explained
    assert (dram.relative_change or 0) < -0.15  # the rate really fell


def test_fewer_bytes_and_faster_passes_when_nothing_else_changed() -> None:
    # Derived from the real capture, for the rate rule alone: the changed build also converts
    # fp16 to fp32 (4 more registers, 17% more instructions, which the exact gates rightly
    # fail); here those two counters are set back to the base build's.
    base = baseline("changes-base")
    kernel = next(k for k in base.kernels if k.id == "chg_fewer_bytes")
    regs = kernel.value("registers_per_thread")
    inst = kernel.value("instructions_executed")
    assert isinstance(regs, float) and isinstance(inst, float)
    before = next(
        la for la in cap("changes-base-run1.csv").launches if la.name.startswith("chg_fewer_bytes")
    )
    changed = cap("changes-changed-run1.csv")
    launches = tuple(
        replace(la, metrics={**la.metrics, "launch__registers_per_thread": regs,
                             "smsp__inst_executed.sum": inst,
                             "smsp__thread_inst_executed.sum": inst * 32,
                             "launch__occupancy_limit_registers": before.metrics["launch__occupancy_limit_registers"]})
        if la.name.startswith("chg_fewer_bytes") else la
        for la in changed.launches
    )  # fmt: skip
    result = check(base, replace(changed, launches=launches))
    v = verdict(result, "chg_fewer_bytes")
    assert v.exit_code is ExitCode.OK, failing(result)


def test_a_baseline_of_four_stall_reasons_passes_a_capture_of_all_of_them() -> None:
    four = record(cap("zoo-good-4stalls-run1.csv"), RecordSettings()).baseline
    stalls = {m.name for k in four.kernels for m in k.metrics if "stall" in m.name}
    assert stalls and all(
        m.reasons is not None and len(m.reasons) <= 4
        for k in four.kernels
        for m in k.metrics
        if m.name == "dominant_stall"
    )
    for run in (1, 2, 3):
        result = check(four, cap(f"start2-zoo-good-run{run}.csv"))
        stall_states = {
            c.state for v in result.verdicts for c in v.comparisons if "stall" in c.metric
        }
        assert State.REGRESSED not in stall_states, failing(result)
        assert State.MISSING_METRIC not in stall_states


def test_nvtx_ranges_split_a_kernel_only_when_asked() -> None:
    plain = baseline("torch-flash")
    by_range = baseline("torch-flash", nvtx=True)
    assert by_range.by_nvtx and all(k.match.nvtx for k in by_range.kernels)
    assert len(by_range.kernels) >= len(plain.kernels)
    result = check(by_range, cap("start2-torch-flash-run1.csv"))
    assert result.exit_code is ExitCode.OK, failing(result)


def test_real_reports_name_the_capture_file(tmp_path: Path) -> None:
    result = check(baseline("torch-flash"), cap("torch-redundant-run1.csv"))
    bad = next(v for v in result.verdicts if v.state is KernelState.REGRESSED)
    assert bad.captures == (str(REAL / "torch-redundant-run1.csv"),)


def test_ncu_rules_that_newly_fire_are_reported_from_ncu_rep_reports() -> None:
    pytest.importorskip("ncu_report")
    base = record(cap("triton-good-full.ncu-rep"), RecordSettings()).baseline
    softmax = next(k for k in base.kernels if "softmax" in k.id)
    assert "ncu_rule.UncoalescedGlobalAccess" not in softmax.info
    result = check(base, cap("triton-regressed-full.ncu-rep"))
    v = verdict(result, "perfgate_softmax_kernel")
    assert v.headline is not None and v.headline.mechanism == "uncoalesced-loads"
    # The report's source counters name the line of the strided load (tests/workloads/
    # triton_kernels.py as it was when the report was made: line 70 is the tl.load).
    assert "source lines: triton_kernels.py:70 (14,680,064 excessive sectors)" in v.headline.detail
    source = (ROOT / "tests" / "workloads" / "triton_kernels.py").read_text().splitlines()
    assert "tl.load(in_ptr" in source[69] and "IN_COL_STRIDE" in source[69]
    rules = next(c for c in v.causes if c.mechanism == "ncu-rules")
    assert "UncoalescedGlobalAccess" in rules.title and "excessive sectors" in rules.detail
    # The matmul's CPIStall estimate grew by 20 points: reported; rules that held are not.
    mm = verdict(result, "perfgate_matmul_kernel")
    mm_rules = next(c for c in mm.causes if c.mechanism == "ncu-rules")
    assert mm_rules.title.endswith("CPIStall") and "TheoreticalOccupancy" not in mm_rules.title
