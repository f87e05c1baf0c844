"""`perfgate capture` and `perfgate doctor` on a real GPU: the zoo captured with only what a
baseline gates, checked against that baseline (good build passes, regressed build fails on the
expected metrics), and the failures ncu hides behind exit code 0 said loudly.

Run on a machine with an NVIDIA GPU, nvcc and ncu:  pytest -m gpu tests/gpu/test_capture_live.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.zoo.expectations import unmet

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "tests" / "zoo" / "zoo.cu"
# The baseline is recorded from committed runs of the GPU the test runs on: a capture from
# another GPU is refused by the check (the baseline's fingerprint), as it should be.
GOOD_RUNS = {
    "NVIDIA H200": [
        ROOT / "tests/data/h200/real" / f"start2-zoo-good-run{i}.csv" for i in (1, 2, 3)
    ],
    "NVIDIA H100 80GB HBM3": [
        ROOT / "tests/data/h100" / f"zoo-good-short-run{i}.csv" for i in (1, 2, 3)
    ],
}


def _good_runs() -> list[Path]:
    smi = shutil.which("nvidia-smi")
    assert smi, "GPU tests need nvidia-smi on PATH"
    query = [smi, "--query-gpu=name", "--format=csv,noheader"]
    name = subprocess.run(query, capture_output=True, text=True, check=True).stdout
    gpu = name.splitlines()[0].strip()
    assert gpu in GOOD_RUNS, f"no committed zoo runs of {gpu} to record a baseline from"
    return GOOD_RUNS[gpu]


def _perfgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("zoo")
    nvcc = shutil.which("nvcc")
    assert nvcc, "GPU tests need nvcc on PATH"
    bins = {}
    for variant, flags in (("good", []), ("bad", ["-DPERFGATE_REGRESSED"])):
        exe = out / f"zoo_{variant}"
        subprocess.run([nvcc, "-O3", "-arch=sm_90", *flags, "-o", str(exe), str(ZOO)], check=True)
        bins[variant] = exe
    baseline = out / "zoo.yaml"
    args = [a for run in _good_runs() for a in ("-c", str(run))]
    rec = _perfgate("baseline", "record", *args, "-o", str(baseline))
    assert rec.returncode == 0, rec.stderr
    bins["baseline"] = baseline
    return bins


def test_capture_checks_against_the_baseline(zoo: dict[str, Path], tmp_path: Path) -> None:
    """The README's path on a real GPU: a baseline recorded from hand captures, then
    `perfgate capture -b` with its default phases, then `perfgate check`: the capture is a
    full one (the baseline's time basis), so every duration is judged."""
    good = tmp_path / "good.csv"
    proc = _perfgate("capture", "-b", str(zoo["baseline"]), "-o", str(good), "--",
                     str(zoo["good"]))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads(Path(f"{good}.meta.json").read_text())
    assert meta["program_exit_code"] == 0 and meta["clock_control"] == "none"
    assert meta["phase"] == "full" and not (tmp_path / "good.diagnosis.csv").exists()
    # Only what the baseline gates: 9 replay passes from the H200 runs' baseline, 10 from the
    # H100 runs' (their capture held a few more metrics); `--set full` takes about 40.
    assert meta["passes"] and max(meta["passes"]) <= 10, meta["passes"]
    assert "==PROF==" in Path(f"{good}.log").read_text()
    assert "perfgate zoo" not in good.read_text()  # the program's output stays out
    same = _perfgate("check", "-b", str(zoo["baseline"]), "-c", str(good))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "NOT JUDGED" not in same.stdout

    bad = tmp_path / "bad.csv"
    proc = _perfgate("capture", "-b", str(zoo["baseline"]), "-o", str(bad), "--",
                     str(zoo["bad"]))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = tmp_path / "r.json"
    regressed = _perfgate(
        "check", "-b", str(zoo["baseline"]), "-c", str(bad), "--json", str(report)
    )
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    assert json.loads(report.read_text())["not_judged"] == []
    failed: dict[str, set[str]] = {}
    for kernel in json.loads(report.read_text())["results"][0]["kernels"]:
        for c in kernel["comparisons"]:
            if c["state"] == "regressed":
                failed.setdefault(kernel["kernel"], set()).add(c["metric"])
    assert unmet(failed) == [], failed


def _regressed(report: Path) -> dict[str, set[str]]:
    failed: dict[str, set[str]] = {}
    for kernel in json.loads(report.read_text())["results"][0]["kernels"]:
        for c in kernel["comparisons"]:
            if c["state"] == "regressed":
                failed.setdefault(kernel["kernel"], set()).add(c["metric"])
    return failed


@pytest.fixture(scope="module")
def gate_baseline(zoo: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two-phase CI's baseline, recorded on this GPU: three gate captures of the good build,
    its diagnosis side from a full capture of the same build."""
    out = tmp_path_factory.mktemp("gate")
    runs = []
    for i in (1, 2, 3):
        cap = out / f"good-gate{i}.csv"
        proc = _perfgate("capture", "-b", str(zoo["baseline"]), "-o", str(cap), "--phases",
                         "gate", "--", str(zoo["good"]))  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        runs += ["-c", str(cap)]
    full = out / "good-full.csv"
    proc = _perfgate("capture", "-b", str(zoo["baseline"]), "-o", str(full), "--phases", "full",
                     "--", str(zoo["good"]))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    baseline = out / "zoo-gate.yaml"
    rec = _perfgate("baseline", "record", *runs, "--diagnosis-capture", str(full), "-o",
                    str(baseline))  # fmt: skip
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert "time_basis: gate" in baseline.read_text()
    return baseline


def test_two_phases_gate_then_diagnosis(
    zoo: dict[str, Path], gate_baseline: Path, tmp_path: Path
) -> None:
    """Against a baseline recorded from gate captures, `perfgate capture` (auto) takes a gate
    capture: the good build's passes alone; the regressed build's fails, the diagnosis capture
    of the failing kernels follows, and the check of the pair fails every regressed zoo kernel,
    each led by the mechanism a full capture names."""
    from tests.zoo.expectations import EXPECTED_MECHANISMS

    good = tmp_path / "good.csv"
    proc = _perfgate("capture", "-b", str(gate_baseline), "-o", str(good), "--",
                     str(zoo["good"]))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads(Path(f"{good}.meta.json").read_text())
    assert meta["phase"] == "gate" and meta["cache_control"] == "all"
    assert meta["kernels"] == len(meta["passes_per_kernel"]) and meta["launches"]
    if meta["gpu"].startswith("NVIDIA H100"):  # measured there (perfgate/metrics/passes.py)
        assert set(meta["passes_per_kernel"].values()) == {1}, meta["passes_per_kernel"]
    assert "gate capture: " in proc.stdout and "diagnosis: none needed" in proc.stdout
    assert not (tmp_path / "good.diagnosis.csv").exists()

    bad = tmp_path / "bad.csv"
    proc = _perfgate("capture", "-b", str(gate_baseline), "-o", str(bad), "--",
                     str(zoo["bad"]))  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    diag = tmp_path / "bad.diagnosis.csv"
    assert diag.exists() and "; diagnosis: " in proc.stdout
    assert json.loads(Path(f"{diag}.meta.json").read_text())["phase"] == "diagnosis"
    report = tmp_path / "r.json"
    regressed = _perfgate("check", "-b", str(gate_baseline), "-c", str(bad), "--json",
                          str(report))  # fmt: skip
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    result = json.loads(report.read_text())
    assert result["not_judged"] == []
    kernels = {k["kernel"]: k for k in result["results"][0]["kernels"]}
    failing = {k for k, v in kernels.items() if v["state"] == "regressed"}
    assert failing == set(EXPECTED_MECHANISMS), regressed.stdout
    led = {k: kernels[k]["causes"][0]["mechanism"] for k in failing if kernels[k]["causes"]}
    assert led == EXPECTED_MECHANISMS, led


def test_no_kernels_is_an_error(zoo: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "none.csv"
    proc = _perfgate("capture", "-b", str(zoo["baseline"]), "--all-kernels", "-k", "^nothing$",
                     "-o", str(out), "--", str(zoo["good"]))  # fmt: skip
    assert proc.returncode == 2
    assert "profiled no kernels" in proc.stderr and "zoo_coalescing" in proc.stderr
    assert not out.exists()


def test_program_failure_is_loud(zoo: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "fail.csv"
    proc = _perfgate("capture", "-b", str(zoo["baseline"]), "-o", str(out), "--",
                     str(zoo["good"]), "--fail")  # fmt: skip
    assert proc.returncode == 2
    assert "exited with code 3" in proc.stderr
    assert not out.exists()
    assert json.loads(Path(f"{out}.meta.json").read_text())["program_exit_code"] == 3


def test_dropped_metric_is_named(zoo: dict[str, Path], tmp_path: Path) -> None:
    data = yaml.safe_load(zoo["baseline"].read_text())
    data["kernels"][0]["metrics"]["fb__bytes_read.sum"] = {"value": 1}
    odd = tmp_path / "odd.yaml"
    odd.write_text(yaml.safe_dump(data))
    out = tmp_path / "odd.csv"
    proc = _perfgate("capture", "-b", str(odd), "-o", str(out), "--phases", "full", "--",
                     str(zoo["good"]))  # fmt: skip
    assert proc.returncode == 2
    assert "fb__bytes_read.sum: absent" in proc.stderr and "dram__bytes_read.sum" in proc.stderr


def test_python_arguments_pass_through(zoo: dict[str, Path], tmp_path: Path) -> None:
    script = (
        "import sys, torch; print(sys.argv[1:]); (torch.ones(8, device='cuda') + 1).sum().item()"
    )
    args = ["a b", 'it\'s "q"', "$HOME;ls"]
    data = yaml.safe_load(zoo["baseline"].read_text())
    data["kernels"] = [{"id": "any", "match": {"regex": "elementwise"},
                        "metrics": {"duration": {"value": 1000}}}]  # fmt: skip
    any_kernel = tmp_path / "any.yaml"
    any_kernel.write_text(yaml.safe_dump(data))
    out = tmp_path / "py.csv"
    proc = _perfgate("capture", "-b", str(any_kernel), "-o", str(out), "--",
                     sys.executable, "-c", script, *args)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert repr(args) in proc.stderr  # the program's stdout, passed through untouched


def test_doctor_proves_the_metrics(zoo: dict[str, Path]) -> None:
    proc = _perfgate("doctor", "-b", str(zoo["baseline"]), "--", str(zoo["good"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[  ok] sanity capture" in proc.stdout
