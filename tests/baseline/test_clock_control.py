"""A capture taken at another ncu --clock-control than its baseline: its durations are not
compared (UNJUDGED, exit 2 unless waived), on real gate captures whose sidecar says which
clock control they ran under."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.baseline.fingerprint import OTHER_BASIS, Fingerprint, basis_difference

ROOT = Path(__file__).resolve().parents[2]
GATE = ROOT / "tests" / "data" / "field" / "gate"


def perfgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT
    )


def _copy(start: str, run: int, tmp: Path, clock: str | None = None) -> Path:
    src = GATE / start / f"gemms-run{run}.csv.gz"
    dst = tmp / f"{start}-gemms-run{run}.csv.gz"
    shutil.copyfile(src, dst)
    meta = json.loads(Path(f"{src}.meta.json").read_text())
    if clock is not None:
        meta["clock_control"] = clock
    Path(f"{dst}.meta.json").write_text(json.dumps(meta))
    return dst


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("clock")
    runs = [_copy("h100-j", i, tmp) for i in (1, 2, 3)]
    out = tmp / "gemms.yaml"
    args = [a for r in runs for a in ("-c", str(r))]
    proc = perfgate("baseline", "record", *args, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_same_clock_control_is_judged(baseline: Path, tmp_path: Path) -> None:
    proc = perfgate("check", "-b", str(baseline), "-c", str(_copy("h100-k", 1, tmp_path)))
    assert proc.returncode == 0, proc.stdout
    assert "not judged" not in proc.stdout.lower()


def test_another_clock_control_leaves_durations_unjudged(baseline: Path, tmp_path: Path) -> None:
    capture = _copy("h100-k", 1, tmp_path, clock="base")
    proc = perfgate("-q", "check", "-b", str(baseline), "-c", str(capture))
    assert proc.returncode == 2, proc.stdout
    assert "NOT JUDGED" in proc.stdout and "time-basis" in proc.stdout
    # Judged as a capture of another time basis: what depends on the capture's setup goes
    # unjudged, and only waiving each reason by name lets the check pass.
    waived = perfgate("check", "-b", str(baseline), "-c", str(capture), "--waive", "time-basis",
                      "--waive", "capture-type")  # fmt: skip
    assert waived.returncode == 0, waived.stdout
    assert "--clock-control base" in waived.stdout


def test_the_reason_names_both_clock_controls() -> None:
    none, base = Fingerprint(clock_control="none"), Fingerprint(clock_control="base")
    why = basis_difference(none, base)
    assert why is not None and "--clock-control base" in why and "with none" in why
    assert basis_difference(none, none) is None
    # Unknown on one side (a capture by hand) is no difference.
    assert basis_difference(none, Fingerprint()) is None


def test_another_time_basis_is_named_when_the_clocks_agree() -> None:
    gate, full = (
        Fingerprint(clock_control="none", time_basis="gate"),
        Fingerprint(clock_control="none"),
    )
    assert basis_difference(gate, full) == OTHER_BASIS
    assert basis_difference(gate, gate) is None
