"""ncu's failures, read from real texts recorded on an H200 (tests/data/h200/capture/): each is
said loudly whatever ncu's exit code, in a capture perfgate reads and in a run it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.common.errors import CaptureError
from perfgate.ingest import read_capture
from perfgate.ingest.ncu_log import crash_signal, describe_error, scan
from perfgate.metrics.names import absent_note, alternatives, architecture, describe_absent
from tests.conftest import ROOT

TEXTS = ROOT / "tests" / "data" / "h200" / "capture"


def _scan(name: str):  # type: ignore[no-untyped-def]
    return scan((TEXTS / name).read_text().splitlines())


def test_a_clean_run_has_no_problem_and_its_passes() -> None:
    log = _scan("zoo-capture-1.csv.log")
    assert log.problems() == []
    assert [p for _, p in log.passes] == [9] * 27
    assert log.passes[0][0] == "init_random(float *, int, unsigned int)"
    assert log.connected == log.disconnected


def test_no_kernels_lists_what_ran() -> None:
    log = _scan("no-kernels.log")
    assert log.no_kernels
    assert len(log.available_kernels) == 10 and "zoo_coalescing" in log.available_kernels
    (problem,) = log.problems()
    assert "zoo_coalescing" in problem and "--target-processes all" in problem


@pytest.mark.parametrize(
    ("name", "code"), [("exit-code-3.log", 3), ("abort.log", 6), ("segfault.log", 11)]
)
def test_application_error_code(name: str, code: int) -> None:
    log = _scan(name)
    assert log.app_exit_code == code
    assert any(f"exited with code {code}" in p for p in log.problems())


def test_a_crash_is_named_and_an_exit_code_is_not() -> None:
    assert crash_signal(11) == "SIGSEGV" and crash_signal(6) == "SIGABRT"
    assert crash_signal(139) == "SIGSEGV"  # a shell's 128 + N
    assert crash_signal(3) is None and crash_signal(1) is None
    assert "SIGSEGV" in describe_error("==ERROR== The application returned an error code (11).")
    assert "SIG" not in describe_error("==ERROR== The application returned an error code (3).")


def test_a_process_that_never_disconnects_crashed() -> None:
    lines = (TEXTS / "python-args.log").read_text().splitlines()
    cut = [line for line in lines if "Disconnected" not in line]
    log = scan(cut)
    assert log.crashed and any("crashed or was killed mid-run" in p for p in log.problems())


def test_permission_error_gives_the_fixes() -> None:
    # NVIDIA's documented text: the device runs as root, so it could not be provoked there.
    line = (
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0."
    )
    log = scan(["==PROF== Connected to process 1 (/app)", line])
    (problem, *_) = log.problems()
    assert "CAP_SYS_ADMIN" in problem and "NVreg_RestrictProfilingToAdminUsers=0" in problem


def test_library_not_loaded() -> None:
    text = describe_error("==ERROR== Failed to initialize the profiler: LibraryNotLoaded")
    assert "profiling library" in text and "perfgate doctor" in text


@pytest.mark.parametrize(
    ("name", "words"),
    [("no-program.stdout", "absolute, or ./name"), ("bad-option.stdout", "option's value")],
)
def test_errors_ncu_prints_before_its_log(name: str, words: str) -> None:
    log = _scan(name)
    assert len(log.errors) == 1 and words in log.problems()[0]


def test_reading_a_capture_with_an_error_refuses_it(tmp_path: Path) -> None:
    # ncu's log lines and the CSV in one file, as ncu writes them with --log-file --csv.
    capture = tmp_path / "c.csv"
    capture.write_text(
        (TEXTS / "exit-code-3.log").read_text() + (TEXTS / "ok.import.csv").read_text()
    )
    with pytest.raises(CaptureError, match="exited with code 3"):
        read_capture(capture)


def test_dropped_metrics_are_absent_from_the_real_capture() -> None:
    capture = read_capture(TEXTS / "dropped-metrics.import.csv")
    for name in ("fb__bytes_read.sum", "no_such__metric.sum", "dram__bytes_op_read.sum"):
        assert name not in capture.columns  # asked for, silently dropped by ncu on sm_90
    assert "launch__registers_per_thread" in capture.columns


def test_absent_metrics_are_named_with_alternatives() -> None:
    assert architecture("9.0") == "CC 9.0 (GH100 (Hopper))"
    assert "dram__bytes_op_read.sum" in alternatives("dram__bytes_read.sum")
    assert "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" in alternatives(
        "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    )
    stall = alternatives("smsp__warp_issue_stalled_drain_per_warp_active.pct")
    assert "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio" in stall
    (line,) = describe_absent(["fb__bytes_read.sum"], "9.0")
    assert line.startswith("fb__bytes_read.sum: absent") and "dram__bytes_read.sum" in line
    assert alternatives("no_such__metric.sum") == ()
    note = absent_note(["a__x.sum", "dram__bytes_read.sum"], frozenset({"a__x.sum"}), "12.0")
    assert "dram__bytes_read.sum -> dram__bytes_op_read.sum" in note and "a__x.sum," not in note
    assert absent_note(["a__x.sum"], frozenset({"a__x.sum"}), "9.0") == ""


def test_check_names_the_absent_metric(tmp_path: Path) -> None:
    import subprocess
    import sys

    import yaml

    base = tmp_path / "b.yaml"
    rec = subprocess.run(
        [sys.executable, "-m", "perfgate", "baseline", "record", "-c",
         str(TEXTS / "zoo-capture-1.csv"), "-o", str(base)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert rec.returncode == 0, rec.stderr
    data = yaml.safe_load(base.read_text())
    data["kernels"][0]["metrics"]["fb__bytes_read.sum"] = {"value": 1}
    base.write_text(yaml.safe_dump(data))
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "-b", str(base), "-c",
         str(TEXTS / "zoo-capture-1.csv"), "-v"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "absent from the capture on CC 9.0 (GH100 (Hopper)): fb__bytes_read.sum" in proc.stdout
