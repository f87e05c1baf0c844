"""Issue 25's rough edges: help that exits 0 and says what each command does, and counts
that agree with their nouns."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

from click.testing import CliRunner

from perfgate.cli import main
from perfgate.verdicts.absent import notice
from tests.conftest import ROOT


def test_pre_merge_help_exits_0_and_a_mistake_exits_2() -> None:
    # perfgate pre-merge (scripts/pre-merge.sh forwards to it).
    script = str(ROOT / "scripts" / "pre-merge.sh")
    env = {**os.environ, "PERFGATE": f"{sys.executable} -m perfgate", "PYTHONPATH": str(ROOT)}
    ok = subprocess.run(["bash", script, "--help"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "--baseline PATH" in ok.stdout and not ok.stderr
    bad = subprocess.run(["bash", script, "--bogus"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "No such option '--bogus'" in bad.stderr and not bad.stdout


def test_top_level_help_gives_every_command_a_whole_summary() -> None:
    out = CliRunner().invoke(main, ["--help"], terminal_width=200).output
    commands = out.split("Commands:", 1)[1].strip().splitlines()
    assert len(commands) >= 6
    for line in commands:
        assert not line.rstrip().endswith((":", "...")), line


def _group(name: str) -> Any:
    return SimpleNamespace(key=SimpleNamespace(name=name))


def test_one_kernel_is_one_kernel() -> None:
    baseline: Any = SimpleNamespace(kernels=[object()])
    capture: Any = SimpleNamespace(paths=["c.csv"])
    text = notice(baseline, capture, [_group("add_kernel")])
    assert "1 kernels" not in text and "1 baselined kernels" not in text
    assert text.startswith("the baselined kernel is not in c.csv")
    assert text.endswith("It holds 1 kernel: add_kernel")
    two: Any = SimpleNamespace(kernels=[object(), object()])
    assert notice(two, capture, [_group("a"), _group("b")]).startswith(
        "none of the 2 baselined kernels is in c.csv"
    )


def test_check_help_names_the_global_options_it_takes() -> None:
    for argv in (["check", "--help"], ["baseline", "record", "--help"], ["capture", "--help"]):
        out = CliRunner().invoke(main, argv, terminal_width=200).output
        assert "-q/--quiet" in out and "--color" in out, argv


def test_scale_against_a_missing_checkout_is_one_line_not_a_traceback(tmp_path: Any) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale.py"),
            "--against",
            str(tmp_path / "nope"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert "not a perfgate checkout" in proc.stderr


def test_zoo_capture_exits_1_when_ncu_runs_fail(tmp_path: Any) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "PHASES": "short",
        "RUNS": "1",
        "NCU": "false",
        "DEST": str(tmp_path / "captures"),
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "tests" / "zoo" / "capture.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "runs failed" in proc.stderr


def test_doctor_does_not_vouch_for_counter_permission_without_a_gpu(monkeypatch: Any) -> None:
    from perfgate.ncu import doctor

    monkeypatch.setattr(doctor, "gpus", lambda: [])
    monkeypatch.setattr(doctor, "_read", lambda path: "RmProfilingAdminOnly: 0\n")
    checks = doctor.run_doctor(ncu="/nonexistent/ncu")
    (permission,) = [c for c in checks if c.name == "counter permission"]
    assert permission.status is doctor.Status.SKIP, permission
