"""End to end on a real GPU: build the zoo, capture it live with ncu and the catalog's metric
list, record a baseline from the good build, and check a second good run (must pass) and the
regressed build (must fail on the expected metrics).

Run on a machine with an NVIDIA GPU, nvcc and ncu:  pytest -m gpu
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.metrics.catalog import ncu_metrics
from tests.zoo.expectations import unmet

pytestmark = pytest.mark.gpu
ZOO = Path(__file__).resolve().parents[1] / "zoo" / "zoo.cu"


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not on PATH: GPU tests need nvcc and ncu"
    return path


@pytest.fixture(scope="module")
def zoo_binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("zoo")
    nvcc = _tool("nvcc")
    bins = {}
    for variant, flags in (("good", []), ("bad", ["-DPERFGATE_REGRESSED"])):
        exe = out / f"zoo_{variant}"
        subprocess.run([nvcc, "-O3", "-arch=sm_90", *flags, "-o", str(exe), str(ZOO)], check=True)
        bins[variant] = exe
    return bins


def _capture(exe: Path, dest: Path) -> Path:
    ncu = _tool("ncu")
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--csv",
        "--page",
        "raw",
        "--metrics",
        ",".join(ncu_metrics("9.0")),
        str(exe),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    dest.write_text(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dest


def _perfgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perfgate", *args], capture_output=True, text=True)


def test_live_capture_gates_the_zoo(zoo_binaries: dict[str, Path], tmp_path: Path) -> None:
    good1 = _capture(zoo_binaries["good"], tmp_path / "good1.csv")
    good2 = _capture(zoo_binaries["good"], tmp_path / "good2.csv")
    bad = _capture(zoo_binaries["bad"], tmp_path / "bad.csv")
    baseline = tmp_path / "baseline.yaml"
    rec = _perfgate("baseline", "record", "--capture", str(good1), "-o", str(baseline))
    assert rec.returncode == 0, rec.stderr

    same = _perfgate("check", "--baseline", str(baseline), "--capture", str(good2))
    assert same.returncode == 0, same.stdout + same.stderr

    report = tmp_path / "result.json"
    regressed = _perfgate(
        "check", "--baseline", str(baseline), "--capture", str(bad), "--json", str(report)
    )
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    failed: dict[str, set[str]] = {}
    for kernel in json.loads(report.read_text())["results"][0]["kernels"]:
        for c in kernel["comparisons"]:
            if c["state"] == "regressed":
                failed.setdefault(kernel["kernel"], set()).add(c["metric"])
    assert unmet(failed) == [], json.dumps({k: sorted(v) for k, v in failed.items()}, indent=1)


TRITON = Path(__file__).resolve().parents[1] / "workloads" / "triton_kernels.py"


def _capture_python(args: list[str], dest: Path) -> Path:
    cmd = [_tool("ncu"), "--clock-control", "none", "--csv", "--page", "raw", "--nvtx",
           "--nvtx-include", "perfgate/", "--metrics", ",".join(ncu_metrics("9.0")),
           sys.executable, *args]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    dest.write_text(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dest


def test_live_triton_pipelining_loss_is_diagnosed(tmp_path: Path) -> None:
    runs = [
        _capture_python([str(TRITON), "--variant", "good"], tmp_path / f"good{i}.csv")
        for i in (1, 2, 3)
    ]
    bad = _capture_python([str(TRITON), "--variant", "regressed"], tmp_path / "bad.csv")
    baseline = tmp_path / "triton.yaml"
    args = [a for r in runs for a in ("--capture", str(r))]
    rec = _perfgate("baseline", "record", *args, "-o", str(baseline))
    assert rec.returncode == 0, rec.stderr
    again = _capture_python([str(TRITON), "--variant", "good"], tmp_path / "good4.csv")
    same = _perfgate("check", "--baseline", str(baseline), "--capture", str(again))
    assert same.returncode == 0, same.stdout + same.stderr
    report = tmp_path / "result.json"
    proc = _perfgate("check", "-b", str(baseline), "-c", str(bad), "--json", str(report))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    heads = {
        k["kernel"]: k["causes"][0]["mechanism"]
        for k in json.loads(report.read_text())["results"][0]["kernels"]
        if k["causes"]
    }
    assert heads.get("perfgate_matmul_kernel") == "lost-pipelining", heads
    assert heads.get("perfgate_softmax_kernel") == "uncoalesced-loads", heads


def test_live_capture_is_explained(zoo_binaries: dict[str, Path], tmp_path: Path) -> None:
    bad = _capture(zoo_binaries["bad"], tmp_path / "bad.csv")
    proc = _perfgate("explain", "--capture", str(bad), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    rules = {
        d["kernel"]: {f["rule"] for f in d["findings"]}
        for d in json.loads(proc.stdout)["diagnoses"]
    }
    assert "atomic-contention" in rules["zoo_atomics"]
    assert "uncoalesced-loads" in rules["zoo_coalescing"]
    assert "bank-conflicts" in rules["zoo_bank_conflicts"]
