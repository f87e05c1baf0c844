"""Autotuned launch configurations (issue 21, item 4) on the real field captures: Triton's
@autotune and Inductor pick another grid/block/registers per process or machine start."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import load_baseline
from perfgate.identity.configs import CONFIG_INDEPENDENT
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Capture
from perfgate.judge.comparison import State
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import CheckSettings, check

FIELD = Path(__file__).parents[1] / "data" / "field" / "h100"
DURATION = "gpu__time_duration.sum"


def _runs(start: str, workload: str, runs: tuple[int, ...]) -> list[str]:
    return [str(FIELD / start / f"{workload}-run{r}.csv.gz") for r in runs]


def _record(workload: str):  # type: ignore[no-untyped-def]
    return record(read_captures(_runs("h100-a", workload, (1, 2, 3))), RecordSettings())


def _slower(capture: Capture, name: str, factor: float) -> Capture:
    """A synthetic capture derived from a real one: `name`'s launches `factor` x longer."""
    launches = tuple(
        replace(la, metrics={**la.metrics, DURATION: float(la.metrics[DURATION]) * factor})
        if la.name == name
        else la
        for la in capture.launches
    )
    return replace(capture, launches=launches)


def _states(result) -> dict[str, KernelState]:  # type: ignore[no-untyped-def]
    return {v.kernel: v.state for v in result.verdicts}


def test_triton_autotune_records_one_entry_per_kernel_with_its_configurations() -> None:
    result = _record("triton-autotune")
    names = [k.match.name for k in result.baseline.kernels]
    assert sorted(names) == ["perfgate_autotuned_mm", "perfgate_rmsnorm_kernel"]
    mm = next(k for k in result.baseline.kernels if k.match.name == "perfgate_autotuned_mm")
    assert mm.match.grid is None and mm.match.block is None
    # Three runs, three choices (grid 512 block 128 at two register counts, grid 128 block 256).
    assert {(c.grid, c.block) for c in mm.configurations} == {
        ((512, 1, 1), (128, 1, 1)),
        ((128, 1, 1), (256, 1, 1)),
    }
    assert sum(c.runs for c in mm.configurations) == 3
    assert {m.name for m in mm.metrics} <= set(CONFIG_INDEPENDENT)
    assert "registers_per_thread" in mm.info and "duration" in {m.name for m in mm.metrics}
    warning = next(w for w in result.warnings if w.startswith("perfgate_autotuned_mm"))
    assert "grid 512x1x1 block 128x1x1" in warning and "grid 128x1x1 block 256x1x1" in warning
    assert "triton.Config" in warning


def test_configurations_survive_the_file(tmp_path: Path) -> None:
    baseline = _record("triton-autotune").baseline
    path = tmp_path / "b.yaml"
    path.write_text(dump_baseline(baseline))
    loaded = load_baseline(str(path))
    assert [k.configurations for k in loaded.kernels] == [
        k.configurations for k in baseline.kernels
    ]


def _more_registers(capture: Capture, name: str) -> Capture:
    """A synthetic capture derived from a real one: `name` at one more register per thread,
    at its own grid and block (what the detection benchmark injects)."""
    key = "launch__registers_per_thread"
    launches = tuple(
        replace(la, metrics={**la.metrics, key: float(la.metrics[key]) + 1})
        if la.name == name
        else la
        for la in capture.launches
    )
    return replace(capture, launches=launches)


def _verdict(result, kernel: str):  # type: ignore[no-untyped-def]
    return next(v for v in result.verdicts if v.kernel == kernel)


def _duration(verdict):  # type: ignore[no-untyped-def]
    return next(c for c in verdict.comparisons if c.metric == "duration")


def test_an_autotuned_kernel_is_held_to_the_best_configuration_the_baseline_saw() -> None:
    """Issue 31: perfgate_autotuned_mm forced onto the slowest configuration one recording
    run used (h100-a run 2: grid 512 block 128, 126 registers, 39.1 us), 3% slower still
    (40.4 us), passed: each launch was held to its own configuration's time. The baseline's
    best was grid 128 block 256 (h100-a run 3, 29.5 us): +37% fails, and says so by name.
    Synthetic from a real capture: h100-a run 2 with that kernel's durations x 40.4/39.1."""
    baseline = _record("triton-autotune").baseline
    mm = next(k for k in baseline.kernels if k.id == "perfgate_autotuned_mm")
    # Each configuration keeps its own best duration (h100-a: 29.5, 35.0 and 39.1 us), and
    # the bound is one configuration's noise, not the 33% spread across them.
    assert sorted(round((c.duration or 0) / 1000, 1) for c in mm.configurations) == [
        29.5, 35.0, 39.1,
    ]  # fmt: skip
    bound = next(m for m in mm.metrics if m.name == "duration").threshold
    assert bound is not None and bound.relative < 0.1
    run2 = read_captures(_runs("h100-a", "triton-autotune", (2,)))
    for capture in (run2, _slower(run2, "perfgate_autotuned_mm", 40.4 / 39.1)):
        result = check(baseline, capture)
        verdict = _verdict(result, mm.id)
        assert verdict.state is KernelState.REGRESSED and int(result.exit_code) == 1
        duration = _duration(verdict)
        assert duration.state is State.REGRESSED
        assert round(float(duration.baseline) / 1000, 1) == 29.5  # type: ignore[arg-type]
        # The configuration it ran at, and the best one, by name (block 128 = 4 warps: a
        # Triton kernel's num_warps=4; block 256 = num_warps=8).
        said = duration.message
        assert "the autotuner chose grid 512x1x1 block 128x1x1 (4 warps) registers 126" in said
        assert "the baseline's best was grid 128x1x1 block 256x1x1 (8 warps) registers 204" in said
        assert "(29.5 us)" in said
        assert verdict.headline is not None
        assert verdict.headline.mechanism == "autotuned-configuration"
        assert "triton.Config" in verdict.headline.lever
    slow = _duration(
        _verdict(check(baseline, _slower(run2, "perfgate_autotuned_mm", 40.4 / 39.1)), mm.id)
    )
    assert "(40.4 us)" in slow.message and round(slow.relative_change or 0, 2) == 0.37
    # The run that chose the best configuration passes.
    best = check(baseline, read_captures(_runs("h100-a", "triton-autotune", (3,))))
    assert _verdict(best, mm.id).state is KernelState.PASS


def test_the_autotuners_own_choices_on_another_start_are_judged_against_the_best() -> None:
    """h100-b, the same build on a fresh machine, unmodified: run 1 chose the best matmul
    configuration (passes) and RMSNorm at num_warps 1 (block 32, 44.4 us against the best
    recorded, num_warps 4 at 42.2 us: +5.1%); run 2 chose the matmul at grid 512 block 128
    (35.4 us against 29.5: +20%) and RMSNorm at num_warps 8, a configuration never recorded
    but no slower than the best (passes). RMSNorm's +5.1% was beyond one configuration's noise
    while H100's floor from 20 us was 4%; under the pooled floors (6.5% for one run,
    perfgate.metrics.timefloors) it is within it, still judged against the best, and the same
    choice 2% slower fails naming both configurations."""
    baseline = _record("triton-autotune").baseline
    capture1 = read_captures(_runs("h100-b", "triton-autotune", (1,)))
    one = check(baseline, capture1)
    assert _states(one) == {
        "perfgate_autotuned_mm": KernelState.PASS,
        "perfgate_rmsnorm_kernel": KernelState.PASS,
    }
    rms = next(k for k in baseline.kernels if k.id == "perfgate_rmsnorm_kernel")
    best = min(c.duration or float("inf") for c in rms.configurations)
    ran = min(float(la.metrics[DURATION]) for la in capture1.launches
              if la.name == "perfgate_rmsnorm_kernel")  # fmt: skip
    judged = _duration(_verdict(one, "perfgate_rmsnorm_kernel"))
    assert judged.baseline == best and round(best / 1000, 1) == 42.2
    assert judged.relative_change == pytest.approx(ran / best - 1)
    assert 0.05 < ran / best - 1 < 0.065 and judged.bound == "+6.5%"  # H100 from 20 us
    slower = check(baseline, _slower(capture1, "perfgate_rmsnorm_kernel", 1.02))
    assert _states(slower)["perfgate_rmsnorm_kernel"] is KernelState.REGRESSED
    said = _duration(_verdict(slower, "perfgate_rmsnorm_kernel")).message
    assert (
        f"chose grid 8192x1x1 block 32x1x1 (1 warp) registers 210 ({ran * 1.02 / 1000:.1f} us)"
        in said
    )
    assert (
        "best was grid 8192x1x1 block 128x1x1 (4 warps) registers 60 shared 16 B (42.2 us)" in said
    )
    two = check(baseline, read_captures(_runs("h100-b", "triton-autotune", (2,))))
    assert _states(two) == {
        "perfgate_autotuned_mm": KernelState.REGRESSED,
        "perfgate_rmsnorm_kernel": KernelState.PASS,
    }
    assert (
        "block 128x1x1 (4 warps) registers 128"
        in _duration(_verdict(two, "perfgate_autotuned_mm")).message
    )
    # A slowdown at the best configuration fails too (+20% on run 1's matmul).
    capture = read_captures(_runs("h100-b", "triton-autotune", (1,)))
    slow = check(baseline, _slower(capture, "perfgate_autotuned_mm", 1.2))
    assert _states(slow)["perfgate_autotuned_mm"] is KernelState.REGRESSED
    # Run 1's matmul ran at grid 128 block 256, which h100-a run 3 chose too: not the
    # configuration most recorded runs used (each of three was used once; the first listed).
    verdict = _verdict(one, "perfgate_autotuned_mm")
    assert verdict.matched_by == "reconfigured" and "->" in verdict.message


def test_record_says_which_recorded_choices_a_check_would_fail() -> None:
    warning = next(
        w for w in _record("triton-autotune").warnings if w.startswith("perfgate_autotuned_mm")
    )
    assert "holds its duration to the best configuration seen" in warning
    assert "grid 128x1x1 block 256x1x1 (8 warps) registers 204 shared 147456 B (29.5 us)" in warning
    assert "registers 126 shared 98304 B 39.1 us (+32.6%)" in warning


def test_compile_default_inductor_kernels_record_their_one_configuration() -> None:
    result = _record("compile-default")
    add = next(k for k in result.baseline.kernels if "triton_poi_fused_add" in (k.name or ""))
    # One configuration in every h100-a run: a normal, fully gated entry that says which.
    assert not add.tuned and add.pinned is not None
    assert add.match.grid == (4096, 1, 1) and add.pinned.grid == (4096, 1, 1)
    assert "registers_per_thread" in {m.name for m in add.metrics}
    # The library GEMMs keep their identity and record no configuration.
    assert all(not k.configurations for k in result.baseline.kernels if k.family == "cuBLAS")


def test_compile_default_another_start_is_reconfigured_not_missing_and_new() -> None:
    baseline = _record("compile-default").baseline
    add = next(k for k in baseline.kernels if "triton_poi_fused_add" in (k.name or ""))
    capture = read_captures(_runs("h100-b", "compile-default", (1,)))
    # Its configuration-dependent counters were gated and cannot be compared: not judged,
    # which fails the check unless waived by name (docs/check.md "Not judged").
    plain = next(v for v in check(baseline, capture).verdicts if v.kernel == add.id)
    assert plain.state is KernelState.UNJUDGED
    assert {c.skip for c in plain.comparisons if c.state is State.UNJUDGED} == {Skip.CONFIGURATION}
    waived = CheckSettings(waived=frozenset({Skip.CONFIGURATION}))
    passed = check(baseline, capture, waived)
    verdict = next(v for v in passed.verdicts if v.kernel == add.id)
    assert verdict.state is KernelState.PASS
    # h100-b launched it at grid 2048 block 128 registers 18.
    assert verdict.matched_by == "reconfigured"
    assert "grid 4096x1x1 block 256x1x1" in verdict.message
    assert "grid 2048x1x1 block 128x1x1" in verdict.message
    skipped = {c.metric for c in verdict.comparisons if c.message == "configuration changed"}
    judged = {c.metric for c in verdict.comparisons} - skipped
    assert "registers_per_thread" in skipped and judged <= set(CONFIG_INDEPENDENT)
    assert "duration" in judged
    assert not any(v.state in (KernelState.MISSING, KernelState.NEW) for v in passed.verdicts)
    # Slower by 20%: the kernel runs for about 3 us, so its time alone is evidence (a kernel
    # under 10 us: docs/check.md) and is noted, not failed; with its time doubled the
    # program's GPU time moves beyond its bound and the check fails.
    slow = check(baseline, _slower(capture, add.name or "", 1.2), waived)
    assert _states(slow)[add.id] is KernelState.PASS
    noted = next(v for v in slow.verdicts if v.kernel == add.id)
    assert {c.metric: c.state for c in noted.comparisons}["duration"] is State.NOTED
    much = check(baseline, _slower(capture, add.name or "", 4.0), waived)
    assert much.program is not None and much.program.state is KernelState.REGRESSED
    assert int(much.exit_code) == 1


def test_one_more_register_at_the_same_grid_and_block_is_gated() -> None:
    """Registers alone changing is not a reconfiguration (docs/identity.md)."""
    baseline = _record("compile-default").baseline
    gelu = next(k for k in baseline.kernels if "triton_poi_fused_gelu" in (k.name or ""))
    capture = read_captures(_runs("h100-a", "compile-default", (1,)))
    result = check(baseline, _more_registers(capture, gelu.name or ""))
    verdict = next(v for v in result.verdicts if v.kernel == gelu.id)
    assert verdict.matched_by == "name" and verdict.state is KernelState.REGRESSED
    registers = next(c for c in verdict.comparisons if c.metric == "registers_per_thread")
    assert registers.state is State.REGRESSED


def test_several_shapes_in_every_run_stay_several_kernels() -> None:
    """Synthetic from real launches: each of three runs launches perfgate_autotuned_mm at
    both configurations h100-a's runs 1 and 3 chose, like one kernel at two shapes."""
    one = read_captures(_runs("h100-a", "triton-autotune", (1,)))
    three = read_captures(_runs("h100-a", "triton-autotune", (3,)))
    mm = [la for la in one.launches + three.launches if la.name == "perfgate_autotuned_mm"]
    launches = tuple(
        replace(la, source=f"run{r}", index=i) for r in (1, 2, 3) for i, la in enumerate(mm)
    )
    capture = replace(one, paths=("run1", "run2", "run3"), launches=launches)
    baseline = record(capture, RecordSettings()).baseline
    assert len(baseline.kernels) == 2
    assert not any(k.tuned for k in baseline.kernels)
