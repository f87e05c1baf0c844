"""`perfgate capture`'s traps (issue 33): a push/pop NVTX range around a training step, which
covers only the thread that opened it (the census and its warning), and JAX's segmentation
fault under ncu (the hint). Real texts from one H100 start (tests/data/field/families/fam-a):
the census ncu printed for the training step, a capture of that step in a push/pop range (14
launches, no backward pass) and one in a process-wide start/end range (27 launches), and the
log of a JAX capture that died of SIGSEGV."""

from __future__ import annotations

import csv
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.ingest import ncu_log
from perfgate.ncu.census import CENSUS_FILTER, compare, pushpop_ranges, warning
from tests.conftest import ROOT
from tests.ncu.test_capture import FAKE_NCU, TEXTS, perfgate

FAM = ROOT / "tests" / "data" / "field" / "families" / "fam-a"
CENSUS = FAM / "trap-census.txt"
# The step's backward pass, which the push/pop range never profiled (autograd's thread), and
# the weights' random initialisation, launched before either range.
BACKWARD = {
    "elementwise_kernel",  # mse_backward
    "nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT",
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT",
}
SETUP = "distribution_elementwise_grid_stride_kernel"


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def _names(capture: Path) -> list[str]:
    lines = [line for line in _text(capture).splitlines() if line.startswith('"')]
    rows = list(csv.reader(lines))
    col = rows[0].index("Kernel Name")
    return [row[col] for row in rows[2:] if len(row) == len(rows[0])]


def _census_list() -> list[str]:
    return ncu_log.scan(CENSUS.read_text().splitlines()).available_kernels


def test_the_real_census_is_read_by_the_no_kernels_parser() -> None:
    names = _census_list()
    assert len(names) == 10 and SETUP in names and set(names) >= BACKWARD


def test_push_pop_trap_is_suspicious_and_a_start_end_range_is_not() -> None:
    trapped = compare(_census_list(), _names(FAM / "trap-pushpop.csv.gz"))
    assert len(_names(FAM / "trap-pushpop.csv.gz")) == 14
    assert set(trapped.never) == {*BACKWARD, SETUP}
    assert len(trapped.profiled) == 6 and len(trapped.launched) == 10
    assert trapped.suspicious  # 4 names never profiled against 6: at least half
    covered = compare(_census_list(), _names(FAM / "train-step-run1.csv.gz"))
    assert len(_names(FAM / "train-step-run1.csv.gz")) == 27
    assert covered.never == (SETUP,) and len(covered.profiled) == 9
    assert not covered.suspicious  # set-up only: 1 name against 9


def test_the_rule_is_half_as_many_names() -> None:
    # 3 names never profiled against 6 profiled warns, 2 against 6 does not; none never does.
    profiled = [f"k{i}" for i in range(6)]
    assert compare([*profiled, "a", "b", "c"], profiled).suspicious
    assert not compare([*profiled, "a", "b"], profiled).suspicious
    assert not compare(profiled, profiled).suspicious
    assert compare(["a"], []).suspicious  # nothing profiled at all in the range


def test_warning_names_the_kernels_and_the_fix() -> None:
    trapped = compare(_census_list(), _names(FAM / "trap-pushpop.csv.gz"))
    line = warning(trapped, ("perfgate/",), filtered=False, counted=False)
    assert line is not None and "\n" not in line
    assert line.startswith("4 of the 10 kernel names the program launched were never profiled")
    for name in (*BACKWARD, SETUP):
        assert name in line
    assert "6 profiled in the push/pop range 'perfgate/'" in line
    assert "torch.cuda.nvtx.range_start" in line and "without the slash" in line
    assert "not baselined" not in line and "--launch-count" not in line
    both = warning(trapped, ("perfgate/",), filtered=True, counted=True)
    assert both is not None and "(or not baselined or past --launch-skip/--launch-count)" in both
    covered = compare(_census_list(), _names(FAM / "train-step-run1.csv.gz"))
    assert warning(covered, ("perfgate/",), filtered=False, counted=False) is None


def test_push_pop_ranges_are_the_values_with_a_slash() -> None:
    argv = ["ncu", "--nvtx-include", "perfgate/", "--nvtx-include", "whole", "--nvtx-include",
            "train step/", "--nvtx-exclude", "warm/", "./app", "--nvtx-include"]  # fmt: skip
    assert pushpop_ranges(argv) == ("perfgate/", "train step/")
    assert pushpop_ranges(["ncu", "--nvtx-include", "perfgate", "./app"]) == ()


@pytest.fixture(scope="module")
def step_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline of the training step, recorded from its three start/end-range captures;
    gating what those captures hold (they were made with a list of their own, metrics.txt)."""
    out = tmp_path_factory.mktemp("b") / "train-step.yaml"
    runs = [a for i in (1, 2, 3) for a in ("-c", str(FAM / f"train-step-run{i}.csv.gz"))]
    proc = perfgate("baseline", "record", "-m", "duration", "-m", "registers_per_thread", *runs, "-o",
                    str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out


def _replay(capture: Path, tmp_path: Path) -> dict[str, str]:
    """The stand-in ncu replaying a real capture of the step: its CSV as ncu's import wrote
    it, and a log of its launches (SYNTHETIC: ncu's line format, one line per launch of the
    CSV, since the capture was made with --csv to stdout and kept no log of its own)."""
    csv_text = _text(capture)
    (tmp_path / "import.csv").write_text(csv_text)
    names = [re.sub(r"[<(].*", "", n).rsplit("::", 1)[-1] for n in _names(capture)]
    log = ["==PROF== Connected to process 12323 (/usr/bin/python3.12)"]
    log += [f'==PROF== Profiling "{n}" - {i}: 0%....50%....100% - 1 pass'
            for i, n in enumerate(names)]  # fmt: skip
    log += ["==PROF== Disconnected from process 12323"]
    (tmp_path / "ncu.log").write_text("\n".join(log) + "\n")
    return {
        "FAKE_NCU_VERSION": str(TEXTS / "ncu-version.txt"),
        "FAKE_NCU_LOG": str(tmp_path / "ncu.log"),
        "FAKE_NCU_CSV": str(tmp_path / "import.csv"),
        "FAKE_NCU_CENSUS": str(CENSUS),
        "FAKE_NCU_CENSUS_ARGV": str(tmp_path / "census-argv"),
        "FAKE_NCU_ARGV": str(tmp_path / "argv"),
    }


def _capture(
    baseline: Path, out: Path, env: dict[str, str], *options: str
) -> subprocess.CompletedProcess[str]:
    return perfgate("capture", "-b", str(baseline), "-o", str(out), "--ncu", FAKE_NCU,
                    "--phases", "full", *options, "--",
                    sys.executable, "-c", "print('train-step optimizer fused')", env=env)  # fmt: skip


def test_a_push_pop_step_warns_with_the_never_profiled_kernels(
    tmp_path: Path, step_baseline: Path
) -> None:
    out = tmp_path / "cap.csv"
    env = _replay(FAM / "trap-pushpop.csv.gz", tmp_path)
    proc = _capture(step_baseline, out, env, "--nvtx-include", "perfgate/")
    assert proc.returncode == 0, proc.stderr
    assert "a census run follows the capture" in proc.stderr  # said before ncu runs
    warned = [line for line in proc.stderr.splitlines() if "were never profiled" in line]
    assert len(warned) == 1 and warned[0].startswith("perfgate: warning: 4 of the 10 kernel")
    for name in (*BACKWARD, SETUP):
        assert name in warned[0]
    assert "(or not baselined)" in warned[0]  # the baseline's kernel filter applied
    assert "--nvtx-include NAME without the slash" in warned[0]
    assert out.exists()  # a warning: the capture stands
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert set(meta["census"]["never_profiled"]) == {*BACKWARD, SETUP}
    assert len(meta["census"]["launched"]) == 10
    # The census: the same program, a filter matching nothing, no range, nothing replayed.
    census = (tmp_path / "census-argv").read_text().splitlines()
    profile = (tmp_path / "argv").read_text().splitlines()
    assert CENSUS_FILTER in census
    assert "--nvtx" not in census and "--metrics" not in census and "--export" not in census
    assert census[-3:] == profile[-3:]
    # The program ran twice; the census run's output is dropped (the capture passed it on once).
    assert proc.stderr.count("train-step optimizer fused") == 1
    assert (tmp_path / "census-argv").exists()


def test_a_step_the_range_covers_does_not_warn(tmp_path: Path, step_baseline: Path) -> None:
    out = tmp_path / "cap.csv"
    env = _replay(FAM / "train-step-run1.csv.gz", tmp_path)
    proc = _capture(step_baseline, out, env, "--nvtx-include", "perfgate/")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "census-argv").exists()  # the census ran
    assert "never profiled" not in proc.stderr
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["census"]["never_profiled"] == [SETUP]


@pytest.mark.parametrize(
    "options",
    [("--nvtx-include", "perfgate"), ("--nvtx-include", "perfgate/", "--no-census"), ()],
    ids=["start-end-range", "no-census", "no-range"],
)
def test_no_census_without_a_push_pop_range_or_with_no_census(
    tmp_path: Path, step_baseline: Path, options: tuple[str, ...]
) -> None:
    out = tmp_path / "cap.csv"
    env = _replay(FAM / "trap-pushpop.csv.gz", tmp_path)
    proc = _capture(step_baseline, out, env, *options)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "census-argv").exists()
    assert "census" not in proc.stderr and "never profiled" not in proc.stderr
    assert "census" not in json.loads(Path(f"{out}.meta.json").read_text())


def test_a_census_that_lists_nothing_is_a_note(tmp_path: Path, step_baseline: Path) -> None:
    out = tmp_path / "cap.csv"
    env = {**_replay(FAM / "trap-pushpop.csv.gz", tmp_path), "FAKE_NCU_CENSUS": ""}
    proc = _capture(step_baseline, out, env, "--nvtx-include", "perfgate/")
    assert proc.returncode == 0, proc.stderr
    assert "note: the census gave no list" in proc.stderr
    assert "never profiled" not in proc.stderr


def test_dry_run_says_the_census_will_run(step_baseline: Path) -> None:
    proc = perfgate("capture", "-b", str(step_baseline), "--dry-run", "--nvtx-include",
                    "step/", "--", "python3", "train.py")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "'step/' is a push/pop NVTX range" in proc.stderr and "--no-census" in proc.stderr
    quiet = perfgate("capture", "-b", str(step_baseline), "--dry-run", "--nvtx-include",
                     "step/", "--no-census", "--", "python3", "train.py")  # fmt: skip
    assert "push/pop" not in quiet.stderr


def _jax_crash(tmp_path: Path, **more: str) -> dict[str, str]:
    """The stand-in replaying the real log of a JAX capture that died of SIGSEGV (ncu printed
    it to stdout: `--csv` without `--log-file`)."""
    log = tmp_path / "crash.log"
    log.write_text(_text(FAM / "jax-train-run3-crashed-139.csv.gz"))
    return {
        "FAKE_NCU_VERSION": str(TEXTS / "ncu-version.txt"),
        "FAKE_NCU_LOG": str(log),
        "FAKE_NCU_CSV": str(TEXTS / "ok.import.csv"),
        **more,
    }


@pytest.mark.parametrize("how", [{"FAKE_NCU_SIGNAL": "11"}, {"FAKE_NCU_RC": "139"}],
                         ids=["killed-by-sigsegv", "exit-139"])  # fmt: skip
def test_a_segfault_says_what_to_try_for_jax(
    tmp_path: Path, step_baseline: Path, how: dict[str, str]
) -> None:
    out = tmp_path / "cap.csv"
    proc = perfgate("capture", "-b", str(step_baseline), "-o", str(out), "--ncu", FAKE_NCU,
                    "--", "true", env=_jax_crash(tmp_path, **how))  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # the error path's exit code, as before
    assert "crashed or was killed mid-run" in proc.stderr
    assert "XLA_FLAGS=--xla_gpu_autotune_level=0" in proc.stderr and "re-run" in proc.stderr
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in proc.stderr
    assert not out.exists()
    # XLA's autotuner already off: only the re-run is left to try.
    again = perfgate("capture", "-b", str(step_baseline), "-o", str(out), "--ncu", FAKE_NCU,
                     "--", "true",
                     env=_jax_crash(tmp_path, XLA_FLAGS="--xla_gpu_autotune_level=0", **how))  # fmt: skip
    assert again.returncode == 2
    assert "already turns XLA's autotuner off" in again.stderr and "re-run" in again.stderr
    assert "set XLA_FLAGS" not in again.stderr


def test_a_program_exiting_3_gets_no_jax_hint(tmp_path: Path, step_baseline: Path) -> None:
    out = tmp_path / "cap.csv"
    env = {
        "FAKE_NCU_VERSION": str(TEXTS / "ncu-version.txt"),
        "FAKE_NCU_LOG": str(TEXTS / "e-exit3.csv.log"),
        "FAKE_NCU_CSV": str(TEXTS / "ok.import.csv"),
        "FAKE_NCU_RC": "3",
    }
    proc = perfgate("capture", "-b", str(step_baseline), "-o", str(out), "--ncu", FAKE_NCU,
                    "--", "true", env=env)  # fmt: skip
    assert proc.returncode == 2 and "exited with code 3" in proc.stderr
    assert "XLA" not in proc.stderr


def test_docs_say_what_pytorch_and_jax_users_pass() -> None:
    doc = (ROOT / "docs" / "capture.md").read_text()
    start = doc.index("## Training steps, other threads, JAX")
    section = doc[start : doc.index("\n## ", start + 1)]
    for needed in (
        "torch.cuda.nvtx.range_start", "range_push", "--nvtx-include perfgate ",
        "14 of 27", "--no-census", "No kernels were profiled",
        "XLA_FLAGS=--xla_gpu_autotune_level=0", "XLA_PYTHON_CLIENT_PREALLOCATE=false",
        "block_until_ready", "139", "trap-pushpop.csv.gz", "trap-census.txt",
    ):  # fmt: skip
        assert needed in section, needed
