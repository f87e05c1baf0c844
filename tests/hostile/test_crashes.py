"""Inputs that crashed perfgate or its readers (issue 23): each ends in one clear line and
exit code 2, or in a correct verdict, never a traceback or a stale report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.common.errors import CaptureError
from perfgate.ingest import read_capture
from tests.conftest import DATA, ROOT

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
CAPTURE = DATA / "zoo-good-short-run1.csv"

# A stand-in for NVIDIA's ncu_report (absent here): it aborts the process as the real one does
# on a corrupt length field, or reads one launch of zoo_coalescing.
_FAKE_READER = """
import os

class IAction:
    NameBase_DEMANGLED = 1

class _Metric:
    def __init__(self, value, unit=""):
        self._value, self._unit = value, unit
    def has_value(self):
        return True
    def value(self):
        return self._value
    def unit(self):
        return self._unit

_METRICS = {
    "gpu__time_duration.sum": _Metric(13.5, "usecond"),
    "launch__block_dim_x": _Metric(256), "launch__block_dim_y": _Metric(1),
    "launch__block_dim_z": _Metric(1), "launch__grid_dim_x": _Metric(4096),
    "launch__grid_dim_y": _Metric(1), "launch__grid_dim_z": _Metric(1),
    "device__attribute_display_name": _Metric("NVIDIA H100 80GB HBM3"),
}

class _Action:
    def metric_names(self):
        return list(_METRICS)
    def metric_by_name(self, name):
        return _METRICS.get(name)
    def name(self, base):
        return "zoo_coalescing(const float *, float *, int)"

class _Range:
    def num_actions(self):
        return 1
    def action_by_idx(self, i):
        return _Action()

class _Report:
    def num_ranges(self):
        return 1
    def range_by_idx(self, i):
        return _Range()

def load_report(path):
    if os.environ.get("FAKE_NCU_REPORT") == "abort":
        os.abort()
    if os.environ.get("FAKE_NCU_REPORT") == "exit":
        raise SystemExit(7)
    return _Report()
"""


@pytest.fixture
def fake_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ncu_report module, importable here and in the reading child; a report file."""
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "ncu_report.py").write_text(_FAKE_READER)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), str(ROOT)]))
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)
    report = tmp_path / "corrupt.ncu-rep"
    report.write_bytes(b"NVR\x00" + b"\xff" * 64)
    return report


def test_a_report_is_read_in_a_child_and_comes_back_whole(fake_reader: Path) -> None:
    capture = read_capture(fake_reader)
    (launch,) = capture.launches
    assert launch.function == "zoo_coalescing"
    assert launch.grid == (4096, 1, 1) and launch.block == (256, 1, 1)
    assert launch.metrics["gpu__time_duration.sum"] == pytest.approx(13500.0)
    assert launch.source == str(fake_reader) and launch.device == "NVIDIA H100 80GB HBM3"


def test_a_reader_that_aborts_is_an_input_error_naming_the_file(fake_reader: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("FAKE_NCU_REPORT", "abort")
    with pytest.raises(CaptureError, match=r"ncu_report crashed reading this report \(SIGABRT\)") as exc:  # fmt: skip
        read_capture(fake_reader)
    assert exc.value.path == str(fake_reader)
    monkeypatch.setenv("FAKE_NCU_REPORT", "exit")
    with pytest.raises(
        CaptureError, match=r"ncu_report failed reading this report \(exit code 7\)"
    ):
        read_capture(fake_reader)


def test_an_aborting_reader_leaves_no_stale_passed_report(fake_reader: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("FAKE_NCU_REPORT", "abort")
    out = fake_reader.parent
    json_path, junit = out / "r.json", out / "r.xml"
    for p in (json_path, junit):
        p.write_text("passed (an earlier run)")
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "-b", str(ZOO), "-c", str(fake_reader),
         "--json", str(json_path), "--junit", str(junit)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perfgate: error: {fake_reader}"), proc.stderr
    assert "SIGABRT" in lines[0] and "Traceback" not in proc.stderr
    assert all("earlier run" not in p.read_text() for p in (json_path, junit) if p.exists())


def _check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args],
        capture_output=True, cwd=ROOT, timeout=120, env=env,
    )  # fmt: skip


def test_a_file_name_that_is_not_utf8_is_one_input_error(tmp_path: Path) -> None:
    # Its name in the JSON report, or any report, was an internal error (UnicodeEncodeError).
    path = os.path.join(os.fsencode(tmp_path), b"run\xe9.csv")
    Path(os.fsdecode(path)).write_bytes(CAPTURE.read_bytes())
    proc = _check("check", "-b", str(ZOO), "-c", os.fsdecode(path), "--json", str(tmp_path / "r.json"))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and b"Traceback" not in proc.stderr
    assert lines[0].startswith(f"perfgate: error: {tmp_path}/run\\xe9.csv: the file name is not UTF-8")  # fmt: skip


def test_a_subnormal_instruction_count_never_divides_into_infinity() -> None:
    from perfgate.identity.grouping import log_distance

    assert log_distance(5e-324, 1e6) == pytest.approx(758.26, abs=0.01)  # a math domain error


def test_source_date_epoch_past_the_year_9999_is_a_usage_error() -> None:
    from perfgate.common.errors import ExitCode, UsageError
    from perfgate.lifecycle.stamps import now

    assert now({"SOURCE_DATE_EPOCH": "0"}) == "1970-01-01T00:00:00Z"
    for epoch in ("253402300800", "9" * 5000):
        with pytest.raises(UsageError, match=r"SOURCE_DATE_EPOCH=.* is not a time perfgate can write") as exc:  # fmt: skip
            now({"SOURCE_DATE_EPOCH": epoch})
        assert exc.value.exit_code == ExitCode.INPUT_ERROR


def test_the_fake_ncu_exit_code_variable_set_to_text_is_one_line() -> None:
    env = {**os.environ, "FAKE_NCU_STDOUT": str(CAPTURE), "FAKE_NCU_RC": "one"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fake_ncu.py"), "--csv"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "fake_ncu: FAKE_NCU_RC must be an integer exit code, not 'one'\n"
