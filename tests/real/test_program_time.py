"""Whole-program GPU time on real captures (tests/data/field, tests/data/h200/real): the floor
against the corpus, and record -> check on compile-default of two H100 machine starts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.load import parse_baseline
from perfgate.baseline.model import Baseline
from perfgate.ingest import read_capture, read_captures
from perfgate.ingest.launches import Capture
from perfgate.judge.skips import Skip
from perfgate.judge.states import KernelState
from perfgate.lifecycle.program import FLOOR, FLOORS
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.program import GPU_TIME, time_per_run
from perfgate.verdicts.check import CheckSettings, check
from perfgate.verdicts.model import Report

ROOT = Path(__file__).resolve().parents[2]
FIELD = ROOT / "tests" / "data" / "field" / "h100"
H200 = ROOT / "tests" / "data" / "h200" / "real"
WORKLOADS = sorted({p.name.rsplit("-run", 1)[0] for p in (FIELD / "h100-a").glob("*.csv.gz")})
# Tuning starts only: h100-c, h200-b and H200 start3 are held back (docs/noise.md).
H200_WORKLOADS = ("torch-flash", "compiled-a", "triton-good", "changes-base")
# Inductor's max-autotune chose other configurations on h100-b (3 kernels' grid and block
# changed): the same build, a program 15% slower; no floor that catches +3% covers it
# (docs/noise.md "Whole-program time").
AUTOTUNE_CHOICE = "h100:compile-max-autotune"


def _fastest(paths: list[Path]) -> float:
    capture = read_captures([str(p) for p in paths], lambda n: n == GPU_TIME)
    totals = time_per_run(capture.launches, capture.paths)
    assert None not in totals
    return min(t for t in totals if t is not None)


def _pairs() -> dict[str, tuple[list[Path], list[Path]]]:
    pairs = {
        f"h100:{w}": (
            sorted((FIELD / "h100-a").glob(f"{w}-run*.csv.gz")),
            sorted((FIELD / "h100-b").glob(f"{w}-run*.csv.gz")),
        )
        for w in WORKLOADS
    }
    # Every later start of the families, one run each (the NVRTC program ran +1.36%).
    families = FIELD.parent / "families"
    for w in ("moe", "train-step", "cub", "nvrtc", "vit", "jax-train"):
        for s in ("fam-b", "fam-c", "fam-d", "fam-e"):
            pairs[f"h100:{w}@{s}"] = (
                sorted((families / "fam-a").glob(f"{w}-run[123].csv.gz")),
                [families / s / f"{w}-run1.csv.gz"],
            )
    for w in H200_WORKLOADS:
        pairs[f"h200:{w}"] = (
            sorted(H200.glob(f"{w}-run*.csv")),
            sorted(H200.glob(f"start2-{w}-run*.csv")),
        )
    # The H200 field start the floor of H200 comes from: its reductions program ran +2.04%.
    for w in ("hf-encoder", "cuda-graph", "gemms", "reductions"):
        pairs[f"h200:field-{w}"] = (
            sorted((FIELD.parent / "h200" / "h200-a").glob(f"{w}-run*.csv.gz")),
            sorted((FIELD.parent / "h200" / "h200-b").glob(f"{w}-run*.csv.gz")),
        )
    return pairs


@pytest.mark.parametrize("kind", ["h100", "h200"])
def test_floor_is_what_the_cross_start_changes_support(kind: str) -> None:
    pairs = {w: ab for w, ab in _pairs().items() if w.startswith(kind)}
    assert len(pairs) in (35, 8) and all(len(a) >= 3 and b for a, b in pairs.values())
    changes = {w: _fastest(b) / _fastest(a) - 1 for w, (a, b) in pairs.items()}
    floor = FLOORS[kind.upper()]
    worst = max(abs(c) for w, c in changes.items() if w != AUTOTUNE_CHOICE)
    assert worst <= floor, f"too tight: a tuning pair changed {worst:.2%} across starts"
    assert worst + 0.01 >= floor, f"too loose: the largest change is {worst:.2%}"
    assert floor < 0.03  # +3% whole-program time is caught
    if kind == "h100":
        # The one pair the floor leaves out is a real change of the program, not time noise.
        assert changes[AUTOTUNE_CHOICE] > 0.10


def _capture(run: str) -> Capture:
    return read_capture(str(FIELD / run))


@pytest.fixture(scope="module")
def baseline() -> Baseline:
    capture = read_captures(
        [str(FIELD / f"h100-a/compile-default-run{i}.csv.gz") for i in (1, 2, 3)]
    )
    recorded = record(capture, RecordSettings()).baseline
    # Through the file, as a check reads it.
    return parse_baseline(dump_baseline(recorded), "compile-default.yaml")


def _scaled(capture: Capture, factor: float) -> Capture:
    launches = tuple(
        dataclasses.replace(
            la, metrics={**la.metrics, GPU_TIME: float(la.metrics[GPU_TIME]) * factor}
        )  # type: ignore[arg-type]
        for la in capture.launches
    )
    return dataclasses.replace(capture, launches=launches)


def test_record_writes_each_runs_total_and_the_bound(baseline: Baseline) -> None:
    program = baseline.program
    assert program is not None and len(program.runs) == 3
    totals = [_fastest([FIELD / f"h100-a/compile-default-run{i}.csv.gz"]) for i in (1, 2, 3)]
    assert list(program.runs) == pytest.approx(totals)
    assert program.value == pytest.approx(min(totals))
    spread = (max(totals) - min(totals)) / min(totals)
    assert program.relative == pytest.approx(max(2 * spread, FLOOR), abs=1e-4)
    assert program.calibration and "floor 2%" in program.calibration


@pytest.mark.parametrize("run", [1, 2])
def test_another_start_of_the_same_build_passes(baseline: Baseline, run: int) -> None:
    result = check(baseline, _capture(f"h100-b/compile-default-run{run}.csv.gz"))
    assert result.program is not None and result.program.state is KernelState.PASS
    assert result.program.change is not None and abs(result.program.change) < FLOOR


def test_three_percent_slower_everywhere_fails_the_program_alone(baseline: Baseline) -> None:
    # A synthetic capture derived from a real one: every launch of h100-b run 1 3% slower.
    real = _capture("h100-b/compile-default-run1.csv.gz")
    # Inductor launched one of its kernels at another grid on h100-b: its configuration's
    # counters are not judged (exit 2 unwaived, docs/check.md "Not judged"); waived here, so
    # that the program time is what decides.
    waived = CheckSettings(waived=frozenset({Skip.CONFIGURATION}))
    unwaived = check(baseline, real)
    assert int(unwaived.exit_code) == 2
    plain, slower = check(baseline, real, waived), check(baseline, _scaled(real, 1.03), waived)
    assert int(plain.exit_code) == 0
    program = slower.program
    assert program is not None and program.state is KernelState.REGRESSED
    assert program.change is not None and 0.02 < program.change < 0.03
    # Every kernel ends as it did unscaled (each kernel's time bound is wider than 3%; what
    # else differs between the two starts is parts A and B of issue 21): only the program
    # time tells the two captures apart.
    assert [v.state for v in slower.verdicts] == [v.state for v in plain.verdicts]
    timed = [c for v in slower.verdicts for c in v.comparisons if c.metric == "duration"]
    assert timed and all(c.state.value != "regressed" for c in timed)
    assert program.exit_code == 1 and slower.exit_code == 1
    assert Report((slower,)).exit_code == 1


def test_a_redundant_launch_adds_its_time(baseline: Baseline) -> None:
    # A synthetic capture derived from a real one: h100-b run 1 with its longest launch twice.
    capture = _capture("h100-b/compile-default-run1.csv.gz")
    longest = max(capture.launches, key=lambda la: float(la.metrics[GPU_TIME]))  # type: ignore[arg-type]
    extra = dataclasses.replace(longest, index=len(capture.launches))
    plain = check(baseline, capture).program
    doubled = check(
        baseline, dataclasses.replace(capture, launches=(*capture.launches, extra))
    ).program
    assert plain is not None and doubled is not None
    assert plain.current is not None and doubled.current is not None
    assert doubled.current - plain.current == pytest.approx(float(longest.metrics[GPU_TIME]))  # type: ignore[arg-type]
    assert doubled.state is KernelState.REGRESSED


def test_a_baseline_without_the_section_skips_with_a_hint(baseline: Baseline) -> None:
    old = dataclasses.replace(baseline, program=None)
    assert "program:" not in dump_baseline(old)
    result = check(old, _capture("h100-b/compile-default-run1.csv.gz"))
    assert result.program is not None and result.program.state is KernelState.SKIPPED
    assert "re-record" in result.program.reason
    assert (
        result.exit_code
        == check(baseline, _capture("h100-b/compile-default-run1.csv.gz")).exit_code
    )
