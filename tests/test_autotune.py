"""Autotuned launch configurations (issue 21, item 4) on the real field captures: Triton's
@autotune and Inductor pick another grid/block/registers per process or machine start."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import load_baseline
from perfgate.identity.configs import CONFIG_INDEPENDENT
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Capture
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.verdicts.check import check

FIELD = Path(__file__).parent / "data" / "field" / "h100"
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


def test_triton_autotune_checks_another_start_and_catches_a_slowdown() -> None:
    baseline = _record("triton-autotune").baseline
    for run in (1, 2):
        capture = read_captures(_runs("h100-b", "triton-autotune", (run,)))
        result = check(baseline, capture)
        assert set(_states(result).values()) == {KernelState.PASS}, _states(result)
    capture = read_captures(_runs("h100-b", "triton-autotune", (1,)))
    # h100-a's three configs ran 29.5, 35.4 and 39.1 us: the duration bound covers that
    # spread (x2, lifecycle.calibrate), so +20% on the fastest config still passes; a
    # slowdown beyond every config seen fails.
    mm = next(k for k in baseline.kernels if k.id == "perfgate_autotuned_mm")
    duration = next(m for m in mm.metrics if m.name == "duration")
    assert duration.threshold is not None and duration.threshold.relative > 0.2
    slow = check(baseline, _slower(capture, "perfgate_autotuned_mm", 1.7))
    assert _states(slow)["perfgate_autotuned_mm"] is KernelState.REGRESSED
    verdict = next(v for v in slow.verdicts if v.kernel == "perfgate_autotuned_mm")
    # h100-b run 1 chose grid 128 block 256, which h100-a run 3 chose too: not the majority.
    assert verdict.matched_by == "reconfigured" and "->" in verdict.message


def test_compile_default_inductor_kernels_are_tuned_per_machine_start() -> None:
    result = _record("compile-default")
    add = next(k for k in result.baseline.kernels if "triton_poi_fused_add" in (k.name or ""))
    assert add.tuned and add.match.grid is None
    # The library GEMMs keep their identity: their configuration agreed in every run.
    assert all(not k.tuned for k in result.baseline.kernels if k.family == "cuBLAS")
    capture = read_captures(_runs("h100-b", "compile-default", (1,)))
    passed = check(result.baseline, capture)
    assert _states(passed)[add.id] is KernelState.PASS
    assert not any(v.state in (KernelState.MISSING, KernelState.NEW) for v in passed.verdicts)
    slow = check(result.baseline, _slower(capture, add.name or "", 1.2))
    assert _states(slow)[add.id] is KernelState.REGRESSED


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
