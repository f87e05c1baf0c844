"""A baseline recorded from captures of several machine starts (perfgate.lifecycle.pooled,
docs/noise.md "A baseline from several machine starts"), on the real gate captures of
tests/data/field/gate/. Each start's folder is its machine start (as benchmarks/detection.py
`_baseline` names them: those sidecars were written before perfgate recorded machine_start).
Expected values are computed here from the captures' raw rows (the csv module alone), never
taken from the baseline under test."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.ingest import read_captures
from perfgate.ingest.launches import Capture
from perfgate.lifecycle.calibrate import calibrate_pooled
from perfgate.lifecycle.pooled import CROSS_K, Starts, pooled_value, starts_of
from perfgate.lifecycle.record import RecordResult, RecordSettings, record
from perfgate.metrics.catalog import lookup
from perfgate.metrics.timefloors import (
    corrected_floor_at,
    program_floor,
    time_floor_at,
    two_run_floor_at,
)
from tests.conftest import ROOT

GATE = ROOT / "tests" / "data" / "field" / "gate"
H200 = "NVIDIA H200"
TIME = "gpu__time_duration.sum"
# Three H200 starts of two runs each (2026-11-23 and 2026-11-25).
THREE = ("h200-f", "h200-g", "h200-h")
# cuBLAS's 77.5 us gemmSN kernel of the gemms workload, launched once a run; its name is unique
# in the capture. Its three starts' fastest launches are 77.54, 77.18 and 79.39 us: the median
# is not the fastest launch of all (which one start's record would take).
GEMM_SN = "void gemmSN_NN_kernel<float, 256, 4, 2, 8, 4, 4, 0"


# ------------------------------------------------------------------------------- raw rows


def raw_launches(path: Path) -> list[dict[str, str]]:
    """The launch rows of a real capture, read with gzip and csv alone (an oracle independent
    of perfgate's reader); the time column must be in ns."""
    rows = list(csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode())))
    at = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    header, units = rows[at], rows[at + 1]
    assert units[header.index(TIME)] == "ns"
    return [dict(zip(header, r)) for r in rows[at + 2 :] if len(r) == len(header)]


def number(text: str) -> float:
    return float(text.replace(",", ""))


def runs(start: str, workload: str) -> list[Path]:
    found = sorted(GATE.glob(f"{start}/{workload}-run*.csv.gz"))
    assert found, f"no {workload} captures of {start}"
    return found


def pooled_capture(paths: Sequence[Path]) -> Capture:
    """The captures read as perfgate reads them, each file's start its folder (the field
    sidecars predate machine_start)."""
    capture = read_captures(paths)
    return replace(capture, starts=tuple((str(p), p.parent.name) for p in paths))


def kernel_rows(path: Path, name: str, grid: str) -> list[dict[str, str]]:
    return [r for r in raw_launches(path) if r["Kernel Name"] == name and r["Grid Size"] == grid]


def entry(baseline: Baseline, name_prefix: str) -> KernelBaseline:
    found = [k for k in baseline.kernels if (k.match.name or "").startswith(name_prefix)]
    assert len(found) == 1, [k.id for k in baseline.kernels]
    return found[0]


def metric(kernel: KernelBaseline, name: str) -> MetricBaseline:
    return next(m for m in kernel.metrics if m.name == name)


def _grid(kernel: KernelBaseline) -> str:
    assert kernel.match.grid is not None
    return str(tuple(kernel.match.grid))  # as ncu prints it: "(64, 4, 1)"


@pytest.fixture(scope="module")
def gemms_three() -> tuple[list[Path], RecordResult, RecordResult]:
    """The gemms captures of three H200 starts, recorded pooled and as one start's runs."""
    paths = [p for s in THREE for p in runs(s, "gemms")]
    assert len(paths) == 6
    pooled = record(pooled_capture(paths), RecordSettings())
    one = record(read_captures(paths), RecordSettings())
    return paths, pooled, one


# ------------------------------------------------------------- 1. the value over starts


def test_a_pooled_duration_is_the_median_of_each_starts_fastest_launch(
    gemms_three: tuple[list[Path], RecordResult, RecordResult],
) -> None:
    """Every non-autotuned kernel of 20 us or more: its recorded duration is the median over the
    three starts of each start's fastest launch; its high the median over starts of each
    start's slowest/fastest; and for gemmSN that median is not the fastest launch of all,
    which a record of the same files as one start's runs takes."""
    paths, pooled, one = gemms_three
    long = [
        k for k in pooled.baseline.kernels
        if not k.tuned and isinstance(d := k.value("duration"), float) and d >= 20_000.0
    ]  # fmt: skip
    assert len(long) >= 4, [k.id for k in pooled.baseline.kernels]
    for kernel in long:
        assert kernel.match.name is not None
        per_start: dict[str, list[float]] = {}
        for p in paths:
            rows = kernel_rows(p, kernel.match.name, _grid(kernel))
            assert rows, (kernel.id, p)
            per_start.setdefault(p.parent.name, []).extend(number(r[TIME]) for r in rows)
        assert len(per_start) == 3
        fastest = [min(times) for times in per_start.values()]
        duration = metric(kernel, "duration")
        assert duration.value == statistics.median(fastest), kernel.id
        slowest = statistics.median(max(t) / min(t) for t in per_start.values())
        assert duration.high == pytest.approx(statistics.median(fastest) * slowest), kernel.id

    sn = entry(pooled.baseline, GEMM_SN)
    assert sn.match.name is not None
    every = [number(r[TIME]) for p in paths for r in kernel_rows(p, sn.match.name, _grid(sn))]
    assert len(every) == 6  # launched once a run
    name, grid = sn.match.name, _grid(sn)
    median = statistics.median(
        min(number(r[TIME]) for p in runs(s, "gemms") for r in kernel_rows(p, name, grid))
        for s in THREE
    )
    assert metric(sn, "duration").value == median != min(every)
    assert entry(one.baseline, GEMM_SN).value("duration") == min(every)


def test_pooled_total_time_and_dram_bytes_are_medians_of_the_starts_values(
    gemms_three: tuple[list[Path], RecordResult, RecordResult],
) -> None:
    """Every gated numeric metric is pooled, not only the duration. For each kernel of 20 us or
    more: its total time (a run's total, the median over a start's runs) and its DRAM bytes
    (read + write, the median over a start's launches) are the median over starts of those;
    for some kernel each differs from what a record of the six files as one start gives."""
    paths, pooled, one = gemms_three
    long = [
        k for k in pooled.baseline.kernels
        if not k.tuned and isinstance(d := k.value("duration"), float) and d >= 20_000.0
    ]  # fmt: skip
    assert len(long) >= 4
    differs = {"total_time": 0, "dram_bytes": 0}
    for kernel in long:
        assert kernel.match.name is not None
        totals: dict[str, list[float]] = {}
        dram: dict[str, list[float]] = {}
        for p in paths:
            rows = kernel_rows(p, kernel.match.name, _grid(kernel))
            totals.setdefault(p.parent.name, []).append(sum(number(r[TIME]) for r in rows))
            dram.setdefault(p.parent.name, []).extend(
                number(r["dram__bytes_read.sum"]) + number(r["dram__bytes_write.sum"]) for r in rows
            )
        for name, by_start in (("total_time", totals), ("dram_bytes", dram)):
            want = statistics.median(statistics.median(v) for v in by_start.values())
            assert metric(kernel, name).value == pytest.approx(want), (kernel.id, name)
            unpooled = next(k for k in one.baseline.kernels if k.id == kernel.id).value(name)
            differs[name] += unpooled != pytest.approx(want)
    assert all(differs.values()), differs


# ------------------------------------------------------- 2. the bound and the program


def test_the_pooled_bound_names_the_starts_and_counts_spread_across_and_floor(
    gemms_three: tuple[list[Path], RecordResult, RecordResult],
) -> None:
    """Every kernel's duration: the rule names the machine starts; the bound is max(2 x the
    median spread within a start, 1.15 x the largest distance of a start from the median, the
    H200 floor at the pooled duration, not at the fastest launch of all: the floor of a kernel
    under 20 us moves with its duration), each part computed here from the raw launches."""
    paths, pooled, _ = gemms_three
    assert len(pooled.baseline.kernels) >= 10 and not any(k.tuned for k in pooled.baseline.kernels)
    floors_differ = 0
    for kernel in pooled.baseline.kernels:
        assert kernel.match.name is not None
        by_start: dict[str, list[float]] = {}
        for p in paths:
            rows = kernel_rows(p, kernel.match.name, _grid(kernel))
            by_start.setdefault(p.parent.name, []).append(min(number(r[TIME]) for r in rows))
        values = [min(v) for v in by_start.values()]
        value = statistics.median(values)
        within = statistics.median(
            (max(v) - min(v)) / statistics.median(v) for v in by_start.values()
        )
        across = max(abs(v / value - 1) for v in values)
        floor = time_floor_at(value, H200)
        floors_differ += round(floor, 4) != round(time_floor_at(min(values), H200), 4)
        duration = metric(kernel, "duration")
        assert duration.calibration is not None and duration.threshold is not None
        assert duration.threshold.relative is not None
        assert duration.calibration.startswith(
            "3 machine starts, 6 runs: the median of the starts; spread within a start"
        ), kernel.id
        assert f"across starts {across:.2%} x {CROSS_K:g}" in duration.calibration
        assert duration.threshold.relative >= round(floor, 4)
        want = round(max(2 * within, CROSS_K * across, floor), 4)
        assert duration.threshold.relative == want, (kernel.id, duration.calibration)
    assert floors_differ
    assert "recorded from 3 machine starts" in " ".join(pooled.notes)


def test_the_provenance_names_each_files_start(
    gemms_three: tuple[list[Path], RecordResult, RecordResult],
) -> None:
    paths, pooled, one = gemms_three
    captures = pooled.baseline.provenance["captures"]
    assert [c["machine_start"] for c in captures] == [p.parent.name for p in paths]
    assert all("machine_start" not in c for c in one.baseline.provenance["captures"])
    assert not any("machine start" in n for n in one.notes)


def test_the_pooled_program_is_the_median_of_each_starts_fastest_total(
    gemms_three: tuple[list[Path], RecordResult, RecordResult],
) -> None:
    """A run's total: gpu__time_duration.sum over every launch of its file
    (perfgate.metrics.program.time_per_run); the program value: the median over starts of
    each start's fastest total, which here is not the fastest total of all."""
    paths, pooled, one = gemms_three
    totals: dict[str, list[float]] = {}
    for p in paths:
        totals.setdefault(p.parent.name, []).append(sum(number(r[TIME]) for r in raw_launches(p)))
    fastest = [min(t) for t in totals.values()]
    value = statistics.median(fastest)
    program = pooled.baseline.program
    assert program is not None and program.calibration is not None
    assert program.value == value != min(min(t) for t in totals.values())
    assert program.runs == tuple(t for ts in totals.values() for t in ts)
    assert program.calibration.startswith("3 machine starts, 6 runs")
    within = statistics.median((max(t) - min(t)) / min(t) for t in totals.values())
    across = max(abs(f / value - 1) for f in fastest)
    want = max(2 * within, program_floor(H200), CROSS_K * across)
    assert program.relative == round(want, 4) >= program_floor(H200)
    assert one.baseline.program is not None
    assert one.baseline.program.value == min(min(t) for t in totals.values())


# --------------------------------------------------------------------------- 3. starts_of


def test_starts_of_pools_only_two_starts_or_more_every_file_named() -> None:
    """Real captures of two starts, their starts set by hand (this test is about the rule, not
    the sidecar): one start -> nothing to pool and nothing to say; two starts, every file
    named -> Starts; two starts named beside a file naming none -> not pooled, with a note."""
    f, g = runs("h200-f", "gemms"), runs("h200-g", "gemms")
    capture = read_captures([*f, *g])
    paths = capture.paths

    one = replace(capture, starts=tuple((p, "A") for p in paths))
    assert starts_of(one) == (None, None)
    assert starts_of(replace(capture, starts=())) == (None, None)

    two = replace(capture, starts=tuple((p, "F" if "h200-f" in p else "G") for p in paths))
    starts, note = starts_of(two)
    assert note is None and isinstance(starts, Starts)
    assert starts.count == 2
    assert dict(starts.by_file) == dict(two.starts)
    split = starts.split(capture.launches)
    assert [len(s) for s in split] == [
        sum(1 for la in capture.launches if "h200-f" in la.source),
        sum(1 for la in capture.launches if "h200-g" in la.source),
    ]
    assert {la.source for la in split[0]} == {str(p) for p in f}

    partly = replace(two, starts=tuple(s for s in two.starts if s[0] != str(g[1])))
    starts, note = starts_of(partly)
    assert starts is None and note is not None
    assert "3 of 4 captures name their machine start and 1 do not" in note
    assert "not pooled" in note


def test_starts_of_notes_one_named_start_beside_a_file_naming_none() -> None:
    """One file names its start and the other names none: the files cannot be told apart by
    start, so they are not pooled, and (as where two starts are named) the record says so
    rather than treat a file of an unknown start as that start's run in silence."""
    f, g = runs("h200-f", "gemms")[0], runs("h200-g", "gemms")[0]
    capture = read_captures([f, g])
    starts, note = starts_of(replace(capture, starts=((str(f), "F"),)))
    assert starts is None
    assert note is not None and "1 of 2 captures name their machine start" in note


# ------------------------------------------------------------------------ 4. pooled_value


def test_pooled_value_is_the_median_start_with_relative_range() -> None:
    got = pooled_value(
        [100.0, 103.0, 110.0],
        [(100.0, 104.0), (103.0, 105.0), (110.0, 121.0)],
        [0.01, 0.03, 0.02],
    )
    assert got.value == 103.0 and got.starts == 3
    # low/high: the median over starts of low_s/v_s (1, 1, 1) and high_s/v_s (1.04, 1.0194,
    # 1.1), times the value.
    assert got.low == pytest.approx(103.0)
    assert got.high == pytest.approx(103.0 * 1.04)
    assert got.within == pytest.approx(0.02)  # the median spread, not the widest 0.03
    assert got.across == pytest.approx(110.0 / 103.0 - 1)  # 6.80%, not 100's 2.91%


def test_pooled_value_of_two_starts_without_spreads_or_ranges() -> None:
    got = pooled_value([100.0, 110.0], [(None, None), (None, 120.0)], [])
    assert got.value == 105.0 and got.starts == 2
    assert got.low is None and got.high is None  # no start gave both ends
    assert got.within == 0.0
    assert got.across == pytest.approx(5.0 / 105.0)


def test_pooled_value_skips_a_start_without_a_range() -> None:
    got = pooled_value([100.0, 200.0, 300.0], [(90.0, 110.0), (None, None), (270.0, 360.0)], [0.1])
    assert got.value == 200.0
    # ranges of the first and third: low 0.9, 0.9; high 1.1, 1.2 -> median 1.15
    assert got.low == pytest.approx(180.0) and got.high == pytest.approx(230.0)
    assert got.within == pytest.approx(0.1)
    assert got.across == pytest.approx(0.5)


# ---------------------------------------------------------------------- 5. calibrate_pooled


def _pooled_rule(
    within: float, across: float, launch_range: float = 0.0, duration: float = 50_000.0,
    not_exact: bool = False,
) -> tuple[float, str]:  # fmt: skip
    cal = calibrate_pooled(
        lookup("duration"), 6, within, across, duration, duration, launch_range, H200,
        not_exact, None, 3,
    )  # fmt: skip
    assert cal.rule.startswith("3 machine starts, 6 runs: the median of the starts;")
    assert cal.spread == within
    return cal.relative, cal.rule


def test_calibrate_pooled_each_part_can_set_the_bound() -> None:
    """A 50 us H200 kernel: floor 5.5%. Whichever of 2 x within, 1.15 x across, the launch
    range and the floor is largest sets the bound, and the rule names it."""
    floor = time_floor_at(50_000.0, H200)
    assert floor == 0.055

    relative, rule = _pooled_rule(0.01, 0.01)
    assert relative == floor and rule.endswith(": floor 5.50%")

    relative, rule = _pooled_rule(0.04, 0.01)
    assert relative == pytest.approx(0.08) and rule.endswith(": spread 8.00%")

    relative, rule = _pooled_rule(0.01, 0.06)
    assert relative == pytest.approx(0.069) and rule.endswith(": across starts 6.90%")
    assert "across starts 6.00% x 1.15" in rule

    relative, rule = _pooled_rule(0.01, 0.01, launch_range=0.09)
    assert relative == pytest.approx(0.09) and rule.endswith(": launch range 9.00%")
    assert "launch range 9.00%:" in rule

    # A not-exact kernel under 20 us: its floor and its spread add (calibrate's rule).
    short = time_floor_at(10_000.0, H200)
    relative, rule = _pooled_rule(0.01, 0.01, duration=10_000.0, not_exact=True)
    assert relative == pytest.approx(short + 0.02)
    assert rule.endswith(f": floor + spread {short + 0.02:.2%}")


def test_calibrate_pooled_uses_the_across_factor_given() -> None:
    cal = calibrate_pooled(
        lookup("duration"), 6, 0.0, 0.06, 50_000.0, 50_000.0, gpu=H200, starts=2, across_k=1.5
    )
    assert cal.relative == pytest.approx(0.09)
    assert cal.rule.startswith("2 machine starts, 6 runs")
    assert cal.rule.endswith(": across starts 9.00%")


# ------------------------------------------------------------------ 6. autotuned kernels


def test_an_autotuned_kernel_is_not_pooled_over_starts() -> None:
    """Triton's autotuner picks a configuration per start: an autotuned entry's time is judged
    per configuration, never as the median over starts (perfgate.lifecycle.record)."""
    paths = [p for s in THREE for p in runs(s, "triton-autotune")]
    result = record(pooled_capture(paths), RecordSettings())
    assert any("recorded from 3 machine starts" in n for n in result.notes)
    tuned = {k.id: k for k in result.baseline.kernels if k.tuned}
    assert {"perfgate_autotuned_mm", "perfgate_rmsnorm_kernel"} <= set(tuned)
    for kernel in tuned.values():
        duration = metric(kernel, "duration")
        assert duration.calibration is not None
        assert duration.calibration.startswith("per configuration")
        for m in kernel.metrics:
            assert "machine starts" not in (m.calibration or ""), (kernel.id, m.name)


# ------------------------------------------------------------------- 7. two-run metrics


def test_a_two_run_check_gives_the_two_run_floor_to_duration_only() -> None:
    """A check of two runs of h200-f against h200-e's baseline (three runs): the cuBLAS tf32
    GEMM's (50 us) duration, the fastest launch of both runs, gets the two-run floor (corrected
    for the common factor); its total time, the median of the two runs' totals (their mean),
    keeps the corrected one-run floor, as in a check of one run."""
    from perfgate.verdicts.check import check

    base = record(read_captures(runs("h200-e", "gemms")), RecordSettings()).baseline
    two = runs("h200-f", "gemms")
    assert len(two) == 2
    name = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32"
    kernel = entry(base, name)
    recorded = kernel.value("duration")
    assert isinstance(recorded, float) and recorded >= 20_000.0
    one_run = corrected_floor_at(recorded, H200)
    two_run = two_run_floor_at(recorded, H200, corrected=True)
    assert one_run is not None and two_run is not None and two_run < one_run

    def comparisons(capture: Capture) -> dict[str, tuple[str, str]]:
        verdict = next(v for v in check(base, capture).verdicts if v.kernel == kernel.id)
        return {c.metric: (c.bound, c.message) for c in verdict.comparisons}

    both = comparisons(read_captures(two))
    alone = comparisons(read_captures(two[:1]))
    bound, message = both["duration"]
    assert bound == f"+{two_run * 100:.3g}%" and f"two runs: bound {two_run * 100:.3g}%" in message
    bound, message = both["total_time"]
    assert bound == f"+{one_run * 100:.3g}%" and "two runs" not in message
    assert bound == alone["total_time"][0]
    assert alone["duration"][0] == f"+{one_run * 100:.3g}%"


# -------------------------------------------------------------- 8. end to end, sidecars


def _perfgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )  # fmt: skip


def _copy(src: Path, dest: Path, start: str | None) -> Path:
    """A real capture copied with its real sidecar, plus `machine_start` where given (derived
    from a real sidecar: the field sidecars predate the field)."""
    shutil.copy(src, dest)
    doc = json.loads(Path(f"{src}.meta.json").read_text())
    assert "machine_start" not in doc
    if start is not None:
        doc["machine_start"] = start
    Path(f"{dest}.meta.json").write_text(json.dumps(doc, indent=1))
    return dest


def _record(tmp_path: Path, files: Sequence[Path]) -> tuple[dict[str, object], str]:
    out = tmp_path / "b.yaml"
    proc = _perfgate(
        "baseline", "record", *(a for f in files for a in ("-c", str(f))), "-o", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(out.read_text())
    assert isinstance(doc, dict)
    return doc, proc.stderr


def test_the_cli_pools_captures_whose_sidecars_name_two_starts(tmp_path: Path) -> None:
    """Four real gemms captures (h200-f and h200-g, two runs each), copied with sidecars derived
    from their real ones plus a machine_start each: the baseline is pooled over two starts."""
    files = [
        _copy(p, tmp_path / f"{s}-{p.name}", f"{s}-start")
        for s in ("h200-f", "h200-g")
        for p in runs(s, "gemms")
    ]
    doc, stderr = _record(tmp_path, files)
    provenance = doc["provenance"]
    assert isinstance(provenance, dict)
    assert [c["machine_start"] for c in provenance["captures"]] == [
        "h200-f-start", "h200-f-start", "h200-g-start", "h200-g-start"
    ]  # fmt: skip
    assert "recorded from 2 machine starts" in stderr
    program = doc["program"]
    assert isinstance(program, dict)
    assert program["gpu_time"]["calibration"].startswith("2 machine starts, 4 runs")
    kernels = doc["kernels"]
    assert isinstance(kernels, list)
    sn = next(k for k in kernels if k["match"]["name"].startswith(GEMM_SN))
    rows = {
        s: [number(r[TIME]) for p in runs(s, "gemms") for r in raw_launches(p)
            if r["Kernel Name"] == sn["match"]["name"]]
        for s in ("h200-f", "h200-g")
    }  # fmt: skip
    duration = sn["metrics"]["duration"]
    assert duration["value"] == statistics.median(min(t) for t in rows.values())
    assert duration["calibration"].startswith("2 machine starts, 4 runs: the median of the starts")


def test_the_cli_does_not_pool_where_a_sidecar_names_no_start(tmp_path: Path) -> None:
    """Two starts named and a third file whose sidecar names none (a capture by hand, or by an
    older perfgate): recorded as one start's runs, and the note says why."""
    f = runs("h200-f", "gemms")
    g = runs("h200-g", "gemms")
    files = [
        _copy(f[0], tmp_path / "f1.csv.gz", "start-f"),
        _copy(g[0], tmp_path / "g1.csv.gz", "start-g"),
        _copy(g[1], tmp_path / "g2.csv.gz", None),
    ]
    doc, stderr = _record(tmp_path, files)
    provenance = doc["provenance"]
    assert isinstance(provenance, dict)
    assert [c.get("machine_start") for c in provenance["captures"]] == ["start-f", "start-g", None]
    assert "recorded from 2 machine starts" not in stderr
    assert "2 of 3 captures name their machine start and 1 do not" in " ".join(stderr.split())
    assert "not pooled" in stderr


def test_the_cli_notes_two_copies_of_which_one_names_no_start(tmp_path: Path) -> None:
    """Two real captures (h200-f, h200-g), one sidecar with a machine_start (derived from the
    real sidecar) and one without: not pooled, and the note that they were not."""
    files = [
        _copy(runs("h200-f", "gemms")[0], tmp_path / "f1.csv.gz", "start-f"),
        _copy(runs("h200-g", "gemms")[0], tmp_path / "g1.csv.gz", None),
    ]
    _, stderr = _record(tmp_path, files)
    assert "recorded from 2 machine starts" not in stderr
    assert "not pooled" in stderr
