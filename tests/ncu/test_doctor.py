"""`perfgate doctor`: its parsers on outputs recorded on an H200, and what it says on a machine
without ncu or a GPU (CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from perfgate.ncu.doctor import (
    Check,
    Status,
    failed,
    gpu_checks,
    parse_admin_only,
    parse_capabilities,
    permission_check,
    render,
    run_doctor,
)
from perfgate.ncu.machine import find_ncu, parse_ncu_version, parse_nvidia_smi
from tests.conftest import ROOT

TEXTS = ROOT / "tests" / "data" / "h200" / "capture"


def test_ncu_version() -> None:
    assert parse_ncu_version((TEXTS / "ncu-version.txt").read_text()) == "2025.3.1.0"
    assert parse_ncu_version("ncu: command not found") is None


def test_nvidia_smi_query() -> None:
    (gpu,) = parse_nvidia_smi((TEXTS / "nvidia-smi-query.txt").read_text())
    assert (gpu.name, gpu.cc, gpu.driver, gpu.mig) == (
        "NVIDIA H200",
        "9.0",
        "580.159.04",
        "Disabled",
    )
    two = parse_nvidia_smi("NVIDIA A100-SXM4-80GB, 8.0, 550.54, Enabled\nA, [N/A], [N/A], [N/A]\n")
    assert two[0].mig == "Enabled" and two[1].cc is None and two[1].mig is None
    assert parse_nvidia_smi("garbage") == []


def test_mig_is_a_warning_with_a_fix() -> None:
    (gpu, mig) = gpu_checks(parse_nvidia_smi("NVIDIA H100, 9.0, 580.1, Enabled"))
    assert gpu.status is Status.OK and mig.status is Status.WARN and mig.fix
    assert [c.status for c in gpu_checks(None)] == [Status.FAIL]


def test_counter_permission() -> None:
    params = (TEXTS / "nvidia-params.txt").read_text()
    assert parse_admin_only(params) is False  # the H200 machine: counters open
    restricted = params.replace("RmProfilingAdminOnly: 0", "RmProfilingAdminOnly: 1")
    assert parse_admin_only(restricted) is True
    status = (TEXTS / "proc-status.txt").read_text()
    assert parse_capabilities(status) & (1 << 21)  # root there: CAP_SYS_ADMIN
    check = permission_check(restricted, "CapEff:\t0000000000000000\n", euid=1000)
    assert check.status is Status.FAIL and "NVreg_RestrictProfilingToAdminUsers=0" in check.fix
    assert permission_check(restricted, status, euid=1000).status is Status.OK
    assert permission_check(params, None, euid=1000).status is Status.OK
    assert permission_check(None, None, euid=1000).status is Status.WARN


def test_find_ncu(tmp_path: Path) -> None:
    assert find_ncu(str(tmp_path / "missing")) is None
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert find_ncu(str(exe)) == str(exe)


def test_render_and_failure() -> None:
    checks = [Check("a", Status.OK, "fine"), Check("b", Status.FAIL, "broken", "do this")]
    text = render(checks)
    assert "[FAIL] b: broken" in text and "fix: do this" in text and "1 problem(s)" in text
    assert failed(checks) and not failed(checks[:1])


def test_doctor_without_ncu_exits_2() -> None:
    env = {**os.environ, "PATH": "/nonexistent"}
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", "doctor", "--ncu", "/nonexistent/ncu"],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        "[FAIL] ncu: ncu not found" in proc.stdout and "fix: install NVIDIA Nsight" in proc.stdout
    )


def test_sanity_capture_runs_only_with_a_program(tmp_path: Path) -> None:
    exe = tmp_path / "ncu"
    exe.write_text(f"#!/bin/sh\ncat {TEXTS / 'ncu-version.txt'}\n")
    exe.chmod(0o755)
    seen: list[tuple[str, tuple[str, ...]]] = []

    def sanity(ncu: str, baselines: object, program: object) -> list[Check]:
        seen.append((ncu, tuple(program)))  # type: ignore[arg-type]
        return [Check("sanity capture", Status.OK, "fine")]

    checks = run_doctor(str(exe), ["b.yaml"], ["./app"], sanity=sanity)
    names = {c.name: c for c in checks}
    assert names["ncu"].status is Status.OK and "2025.3.1.0" in names["ncu"].detail
    if "GPU" in names:  # no nvidia-smi here: nothing to profile on
        assert names["sanity capture"].status is Status.SKIP and not seen
    else:
        assert seen == [(str(exe), ("./app",))]
