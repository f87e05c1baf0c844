"""The Action in a GPU matrix (perfgate-gpu.yml), end to end on real captures: each job is
given every GPU's baseline (a list of files, or the folder baselines/<gpu>/) and gates its
own GPU's capture against its own GPU's baseline; the merged pull-request comment passes
perfgate-comment.yml's sanitizer whole.

The H200 job captures with `program`: ncu is tests/fake_ncu.py replaying a real `perfgate
capture` of the PyTorch model on an H200 (tests/data/h200/capture/torch-capture.csv) and
nvidia-smi prints what the H200 printed; the H100 job gates a real H100 capture."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import perfgate
from tests.ci.test_workflows import _emulate_action, _installed, _post_comment, _script
from tests.conftest import ROOT, data

H200_REAL = ROOT / "tests" / "data" / "h200" / "real"
H200_CAPTURE = ROOT / "tests" / "data" / "h200" / "capture"
MARKER = "<!-- perfgate:pr-comment -->"


@pytest.fixture(scope="module")
def per_gpu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository's baselines/: <gpu>/torch.yaml for the H100 and the H200."""
    root = tmp_path_factory.mktemp("repo") / "baselines"
    (root / "h100").mkdir(parents=True)
    (root / "h200").mkdir()
    shutil.copyfile(ROOT / "baselines" / "h100" / "torch.yaml", root / "h100" / "torch.yaml")
    runs = [str(H200_REAL / f"torch-flash-run{n}.csv") for n in (1, 2, 3)]
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "baseline", "record", *(a for r in runs for a in ("-c", r)),
         "-o", str(root / "h200" / "torch.yaml"), "--reason", "the H200 job's baseline"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # A new baseline records the version that made it, the one `perfgate --version` says.
    recorded = (root / "h200" / "torch.yaml").read_text()
    assert f"  recorded_by: perfgate {perfgate.__version__}\n" in recorded
    return root


def _h200_runner(tmp_path: Path) -> Path:
    """A bin folder with the H200's nvidia-smi and an ncu replaying its capture (the runner
    emulation passes the step's environment only, so the replay's settings are in the
    script)."""
    fake = tmp_path / "fake-bin"
    fake.mkdir(exist_ok=True)
    replay = {
        "FAKE_NCU_VERSION": H200_CAPTURE / "ncu-version.txt",
        "FAKE_NCU_LOG": H200_CAPTURE / "torch-capture.csv.log",
        "FAKE_NCU_CSV": H200_CAPTURE / "torch-capture.csv",
        "FAKE_NCU_ARGV_ALL": tmp_path / "ncu-argv",
    }
    exports = "".join(f'export {k}="{v}"\n' for k, v in replay.items())
    (fake / "ncu").write_text(
        f'#!/bin/sh\n{exports}exec "{sys.executable}" "{ROOT / "tests" / "fake_ncu.py"}" "$@"\n'
    )
    (fake / "nvidia-smi").write_text(f'#!/bin/sh\ncat "{H200_CAPTURE / "nvidia-smi-query.txt"}"\n')
    for tool in ("ncu", "nvidia-smi"):
        (fake / tool).chmod(0o755)
    return fake


def _reports(tmp_path: Path, job: str) -> dict[str, str]:
    out = tmp_path / f"perfgate-gpu-{job}"
    return {
        "junit": str(out / "junit.xml"), "markdown": str(out / "summary.md"),
        "json": str(out / "result.json"), "pr_comment": str(out / "pr-comment.md"),
        "capture_output": str(out / "capture.csv"),
    }  # fmt: skip


def _h200_job(tmp_path: Path, baseline: str) -> Any:
    _installed(tmp_path)
    return _emulate_action(
        tmp_path, path=str(_h200_runner(tmp_path)), baseline=baseline,
        program=f"{sys.executable} -c 'print(1)'", **_reports(tmp_path, "h200"),
    )  # fmt: skip


@pytest.mark.parametrize("form", ["files", "folder"])
def test_an_h200_job_gates_against_the_h200_baseline(
    per_gpu: Path, tmp_path: Path, form: str
) -> None:
    """The issue's H200 job: `baseline:` lists one file per GPU (docs/action.md) or names
    the folder. The capture covers the H200 baseline, the check judges the H200 capture
    against it alone: an unchanged build passes (it got `verdict=fail missing=10` when the
    H100 file was checked too, and captured with the H100 file only)."""
    baseline = (
        f"{per_gpu / 'h100' / 'torch.yaml'}\n{per_gpu / 'h200' / 'torch.yaml'}\n"
        if form == "files"
        else f"{per_gpu}/"
    )
    run = _h200_job(tmp_path, baseline)
    assert run.failed is None, run.log
    out = run.outputs
    assert out["verdict"] == "pass" and out["exit-code"] == "0", run.log
    assert out["kernels"] == "12" and out["passed"] == "12" and out["missing"] == "0"
    assert out["perfgate-version"] == perfgate.__version__  # from the git history
    log: str = run.log
    # perfgate capture was given both baselines and covered the H200's.
    capture_line = next(line for line in log.splitlines() if line.startswith("$ perfgate capture"))
    for given in baseline.split():
        assert f"--baseline {given}" in capture_line
    assert "1 of 2 baselines were recorded on NVIDIA H200" in log
    argv = (tmp_path / "ncu-argv").read_text().splitlines()[0].split("\x1f")
    kernel_filter = argv[argv.index("--kernel-name") + 1]
    assert "flash_fwd_kernel" in kernel_filter and "zoo_" not in kernel_filter
    check_line = next(line for line in log.splitlines() if line.startswith("$ perfgate check"))
    if form == "files":  # the H100 file is left out of the check, and the log says so
        assert str(per_gpu / "h100") not in check_line
        assert f"not checked against {per_gpu / 'h100' / 'torch.yaml'} (NVIDIA H100" in log
    else:  # the folder: its H100 baseline is noted, not checked
        assert f"--baseline {per_gpu}/" in check_line
        assert "h100/torch.yaml (NVIDIA H100 80GB HBM3 (cc 9.0)): no capture from this GPU" in log
    result = json.loads(Path(_reports(tmp_path, "h200")["json"]).read_text())
    assert [r["baseline"] for r in result["results"]] == [str(per_gpu / "h200" / "torch.yaml")]


def test_an_h100_job_of_the_same_matrix_gates_against_the_h100_baseline(
    per_gpu: Path, tmp_path: Path
) -> None:
    _installed(tmp_path)
    run = _emulate_action(
        tmp_path,
        baseline=f"{per_gpu / 'h100' / 'torch.yaml'}\n{per_gpu / 'h200' / 'torch.yaml'}",
        captures=str(data("torch-short-run1.csv")),
        **{k: v for k, v in _reports(tmp_path, "h100").items() if k != "capture_output"},
    )
    assert run.failed is None and run.outputs["verdict"] == "pass", run.log
    assert run.outputs["kernels"] == "8" and run.outputs["missing"] == "0"
    assert "not checked against" in run.log and "h200/torch.yaml (NVIDIA H200" in run.log


def test_the_merged_comment_of_the_matrix_survives_the_sanitizer(
    per_gpu: Path, tmp_path: Path
) -> None:
    """perfgate-gpu.yml's report job merges the jobs' comments (scripts/merge_reports.py);
    perfgate-comment.yml's script (run under node) posts it: every tag it keeps is balanced
    and none is shown as escaped text."""
    files = f"{per_gpu / 'h100' / 'torch.yaml'}\n{per_gpu / 'h200' / 'torch.yaml'}"
    h200 = _h200_job(tmp_path, files)
    assert h200.outputs["verdict"] == "pass"
    # The H100 job of the same run, on a regressed build: its section carries <details>.
    h100 = _emulate_action(
        tmp_path, baseline=files, captures=str(data("zoo-bad-short-run1.csv")),
        **{k: v for k, v in _reports(tmp_path, "h100").items() if k != "capture_output"},
    )  # fmt: skip
    assert h100.outputs["verdict"] in ("fail", "error"), h100.log
    merge = _script("merge_reports")
    reports = [str(tmp_path / "perfgate-gpu-h100"), str(tmp_path / "perfgate-gpu-h200")]
    assert merge.main([*reports, "--out", str(tmp_path / "merged")]) == 0
    merged = (tmp_path / "merged" / "pr-comment.md").read_text()
    assert merged.startswith(MARKER) and "## h100" in merged and "## h200" in merged
    (tmp_path / "post").mkdir()
    result = _post_comment(tmp_path / "post", merged)
    assert result["failed"] is None, result
    (posted,) = result["posted"]
    for tag in ("details", "summary", "code", "sub"):
        opened = len(re.findall(rf"<{tag}>", posted))
        assert opened == len(re.findall(rf"</{tag}>", posted)), tag
    assert posted.count("<details>") >= 1
    assert "&lt;" not in posted, "a tag was escaped: the reviewer would see it as text"
    assert posted == merged  # nothing needed escaping
