"""A folder of baselines laid out as this repository's, `baselines/<gpu>/<workload>.yaml`
(docs/ci.md, "A folder of baselines"): `--baseline baselines/` searches the subfolders; of
several baselines of one GPU each capture file is judged by the one that fits it; a folder's
baseline that judges nothing is noted, a named one is always checked. On the real captures
the bundled baselines were recorded from (tests/data/h100)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from perfgate.baseline.selection import expand
from tests.conftest import ROOT, data

FIELD = ROOT / "tests" / "data" / "field" / "h100" / "h100-a"


def perfgate(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )  # fmt: skip


def _judged(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [r["baseline"] for r in json.loads(proc.stdout)["results"]]


def test_a_folder_is_searched_with_its_subfolders(tmp_path: Path) -> None:
    root = tmp_path / "baselines"
    shutil.copytree(ROOT / "baselines", root)
    (root / ".cache").mkdir()
    (root / ".cache" / "old.yaml").write_text("not a baseline")  # hidden: skipped
    (root / "h100" / "notes.txt").write_text("not a baseline")
    found = [Path(b.path).relative_to(root).as_posix() for b in expand([str(root)])]
    assert found == ["h100/torch.yaml", "h100/zoo-full.yaml", "h100/zoo.yaml"]
    assert all(b.from_directory for b in expand([str(root)]))
    empty = tmp_path / "empty" / "h100"
    empty.mkdir(parents=True)
    proc = perfgate("check", "-b", str(empty.parent), "-c", str(data("zoo-good-short-run1.csv")))
    assert proc.returncode == 2 and "holds no baseline (*.yaml, *.yml) in it or its" in proc.stderr


def test_the_hooks_default_baselines_folder_judges_each_workload_by_its_own_baseline() -> None:
    """The issue's `check -b baselines/h100/` ("two baselines for NVIDIA H100 80GB HBM3"),
    and `-b baselines/`, the pre-commit hook's default."""
    for folder in ("baselines/", "baselines/h100/"):
        for capture, judged, code in (
            ("zoo-good-short-run1.csv", "zoo.yaml", 0),
            ("zoo-bad-short-run1.csv", "zoo.yaml", 1),
            ("torch-short-run2.csv", "torch.yaml", 0),
            # A --set full capture: zoo.yaml and zoo-full.yaml know its 8 kernels alike;
            # zoo-full.yaml was recorded with the metrics it holds.
            ("zoo-good-full-run1.csv.gz", "zoo-full.yaml", 0),
        ):
            proc = perfgate("check", "-b", folder, "-c", str(data(capture)), "--format", "json")
            assert proc.returncode == code, (folder, capture, proc.stderr)
            assert _judged(proc) == [f"baselines/h100/{judged}"], (folder, capture)
            notes = json.loads(proc.stdout)["notes"]
            assert len(notes) == 2 and all("better; not checked" in n for n in notes), notes


def test_runs_and_workloads_in_one_check() -> None:
    """Runs of one workload pool into its baseline; two workloads each get their own, and
    the baseline neither fits is noted with the ones that did."""
    proc = perfgate(
        "check", "-b", "baselines/",
        "-c", str(data("zoo-good-short-run1.csv")), "-c", str(data("zoo-good-short-run2.csv")),
        "-c", str(data("torch-short-run1.csv")),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "(18 baselined kernels, 2 baselines)" in proc.stdout
    assert (
        "note: baselines/h100/zoo-full.yaml (NVIDIA H100 80GB HBM3 (cc 9.0)): the captures "
        "from this GPU fit baselines/h100/zoo.yaml, baselines/h100/torch.yaml better; not "
        "checked"
    ) in proc.stdout + proc.stderr


def test_a_named_baseline_is_checked_even_when_no_capture_is_for_it() -> None:
    proc = perfgate(
        "check", "-b", "baselines/h100/zoo.yaml", "-b", "baselines/h100/torch.yaml",
        "-c", str(data("zoo-good-short-run1.csv")), "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert _judged(proc) == ["baselines/h100/zoo.yaml", "baselines/h100/torch.yaml"]
    torch = result["results"][1]
    assert {k["state"] for k in torch["kernels"]} == {"missing"}


def test_baselines_that_fit_alike_or_not_at_all_are_refused(tmp_path: Path) -> None:
    twice = tmp_path / "twice" / "h100"
    twice.mkdir(parents=True)
    for name in ("a.yaml", "b.yaml"):
        shutil.copyfile(ROOT / "baselines" / "h100" / "zoo.yaml", twice / name)
    capture = str(data("zoo-good-short-run1.csv"))
    proc = perfgate("check", "-b", str(twice.parent), "-c", capture)
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"perfgate: error: two baselines for NVIDIA H100 80GB HBM3 (cc 9.0): {twice / 'a.yaml'} "
        f"and {twice / 'b.yaml'}; both fit {capture} alike (each knows 10 of its kernels"
    )
    assert "name the one to check it against with --baseline FILE" in proc.stderr
    # A capture of a program none of them knows: which baseline is the user's call.
    other = str(FIELD / "cnn-fp32-run1.csv.gz")
    proc = perfgate("check", "-b", "baselines/h100/", "-c", other)
    assert proc.returncode == 2
    assert f"neither knows a kernel {other} ran" in proc.stderr
    # Named, the user has made that call.
    named = perfgate("check", "-b", "baselines/h100/zoo.yaml", "-c", other)
    assert named.returncode == 1


def test_capture_covers_the_baselines_of_the_runners_gpu_in_a_folder() -> None:
    proc = perfgate(
        "capture", "-b", "baselines/", "-o", "/nonexistent/cap.csv", "--dry-run",
        "--ncu", "/nonexistent/ncu", "--", "./app",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    kernel_filter = proc.stdout.split("--kernel-name 'regex:", 1)[1].split()[0]
    assert "zoo_coalescing" in kernel_filter and "perfgate_triton_scale_kernel" in kernel_filter
