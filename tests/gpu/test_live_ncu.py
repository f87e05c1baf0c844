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

from perfgate.catalog import ncu_metrics
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

    junit = tmp_path / "junit.xml"
    regressed = _perfgate(
        "check", "--baseline", str(baseline), "--capture", str(bad), "--junit", str(junit)
    )
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    import xml.etree.ElementTree as ET

    failed: dict[str, set[str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None:
            failed.setdefault(case.get("classname", ""), set()).add(case.get("name", ""))
    assert unmet(failed) == [], json.dumps({k: sorted(v) for k, v in failed.items()}, indent=1)


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
