"""Inputs that cost quadratic time (issue 23): each is made by a generator of
benchmarks/hostile.py and must finish within a bound far below what it took before (the
times in the comments were measured on a loaded 2-core machine)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path

from perfgate.baseline.load import load_baseline
from perfgate.identity.grouping import KernelGroup, KernelKey
from perfgate.identity.matching import match
from perfgate.ingest import read_capture
from perfgate.ingest.launches import Capture
from perfgate.verdicts.check import check
from tests.conftest import DATA, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import hostile

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
CAPTURE = DATA / "zoo-good-short-run1.csv"


def _perfgate(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    return proc, time.perf_counter() - start


def test_a_32_kb_lambda_style_kernel_name_is_named_in_linear_time(tmp_path: Path) -> None:
    path = tmp_path / "lambda.csv"
    hostile.lambda_name(
        path
    )  # 19-29 s when the enclosing function was searched for from every letter
    proc, took = _perfgate("check", "-b", str(ZOO), "-c", str(path))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert took < 8, took


def test_a_baseline_whose_kernels_are_all_missing_is_judged_in_linear_time(tmp_path: Path) -> None:  # fmt: skip
    path = tmp_path / "missing.yaml"
    hostile.missing_baseline(path, 3000, lean=True)  # ~40 s: each missing kernel scanned all
    baseline = load_baseline(path)
    capture = read_capture(CAPTURE)
    start = time.perf_counter()
    result = check(baseline, capture)
    took = time.perf_counter() - start
    assert sum(v.state.name == "MISSING" for v in result.verdicts) == 3000
    assert took < 8, took


def test_launches_are_counted_per_file_in_one_pass() -> None:
    # 1,500 capture files: the launch count per kernel was launches x files (30 s).
    one = read_capture(CAPTURE)
    paths = tuple(f"run{i}.csv" for i in range(1500))
    launches = tuple(dataclasses.replace(la, source=p) for p in paths for la in one.launches)
    capture = Capture(paths=paths, launches=launches, columns=one.columns)
    start = time.perf_counter()
    result = check(load_baseline(ZOO), capture)
    took = time.perf_counter() - start
    passed = [v for v in result.verdicts if v.launches.current]
    assert passed and all(v.launches.current == (v.launches.current[0],) * 1500 for v in passed)
    assert took < 8, took


def test_50000_kernel_names_are_matched_in_linear_time() -> None:
    # Each baselined kernel scanned every group in each matching pass, normalising its name
    # each time: 24-30 s for 100,000 names (134 s on a loaded machine; 50,000 here).
    one = read_capture(CAPTURE).launches[0]
    groups = [
        KernelGroup(KernelKey(f"kernel_{i}(float *, int)", one.grid, one.block), (one,))
        for i in range(50_000)
    ]
    baseline = load_baseline(ZOO)
    start = time.perf_counter()
    result = match(baseline, groups)
    took = time.perf_counter() - start
    assert len(result.unclaimed) == 50_000
    assert took < 8, took
