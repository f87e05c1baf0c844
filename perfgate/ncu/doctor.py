"""`perfgate doctor`: can this machine make the captures the baselines need?

Each check says what it found and, when it fails, the fix. The checks read the machine through
programs run as argument lists (ncu, nvidia-smi) and files under /proc; the parsers are pure
functions, tested with the outputs recorded on an H200 (tests/data/h200/capture/).
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.common.escape import log_text
from perfgate.ncu.machine import (
    Gpu,
    find_ncu,
    gpus,
    parse_ncu_version,
    run_program,
)

NCU_INSTALL_FIX = (
    "install NVIDIA Nsight Compute (it comes with the CUDA toolkit, or alone from "
    "developer.nvidia.com/nsight-compute) and put its folder on PATH, or pass --ncu PATH"
)
_CAP_SYS_ADMIN = 21
_CAP_PERFMON = 38


class Status(enum.Enum):
    OK = "ok"
    WARN = "warn"  # works, with a caveat
    FAIL = "FAIL"  # captures will not work until fixed
    SKIP = "skip"  # not checked (what it needs is missing)


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


def parse_admin_only(params: str) -> bool | None:
    """/proc/driver/nvidia/params: `RmProfilingAdminOnly: 1` restricts counters to admins."""
    m = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", params, re.MULTILINE)
    return None if m is None else m.group(1) != "0"


def parse_capabilities(status: str) -> int:
    m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status, re.MULTILINE)
    return int(m.group(1), 16) if m else 0


def permission_check(params: str | None, status: str | None, euid: int) -> Check:
    admin_only = parse_admin_only(params) if params is not None else None
    caps = parse_capabilities(status or "")
    privileged = euid == 0 or bool(caps & (1 << _CAP_SYS_ADMIN)) or bool(caps & (1 << _CAP_PERFMON))
    if admin_only is False:
        return Check("counter permission", Status.OK, "counters open to every user")
    if privileged:
        who = "root" if euid == 0 else "CAP_SYS_ADMIN/CAP_PERFMON"
        return Check("counter permission", Status.OK, f"running as {who}")
    if admin_only is None:
        return Check(
            "counter permission", Status.WARN,
            "cannot read /proc/driver/nvidia/params; the sanity capture decides",
        )  # fmt: skip
    from perfgate.ingest.ncu_log import PERMISSION_FIX

    return Check(
        "counter permission", Status.FAIL,
        "RmProfilingAdminOnly is 1 and this user is not root: ncu will fail with "
        "ERR_NVGPUCTRPERM", PERMISSION_FIX,
    )  # fmt: skip


def _read(path: str) -> str | None:
    with contextlib.suppress(OSError):
        return Path(path).read_text()
    return None


def gpu_checks(found: list[Gpu] | None) -> list[Check]:
    if found is None:
        return [
            Check(
                "GPU", Status.FAIL, "nvidia-smi not found or failed: no NVIDIA GPU or driver",
                "run on a machine with an NVIDIA GPU and its driver (containers: --gpus all)",
            )
        ]  # fmt: skip
    if not found:
        return [Check("GPU", Status.FAIL, "nvidia-smi lists no GPU", "check the driver")]
    checks = []
    for index, gpu in enumerate(found):
        checks.append(
            Check(
                f"GPU {index}", Status.OK,
                f"{gpu.name}, compute capability {gpu.cc or '?'}, driver {gpu.driver or '?'}",
            )
        )  # fmt: skip
        if gpu.mig == "Enabled":
            checks.append(
                Check(
                    f"GPU {index} MIG", Status.WARN,
                    "MIG is enabled: ncu profiles one MIG instance, device-wide counters "
                    "(DRAM, L2) are shared with the other instances and clock control is off",
                    "record and check baselines on the same MIG profile, or profile on a GPU "
                    "without MIG",
                )
            )  # fmt: skip
    return checks


def ncu_checks(ncu: str) -> tuple[list[Check], str | None]:
    path = find_ncu(ncu)
    if path is None:
        return [Check("ncu", Status.FAIL, f"ncu not found ({ncu!r})", NCU_INSTALL_FIX)], None
    out = run_program([path, "--version"])
    version = parse_ncu_version(out[1]) if out else None
    if version is None:
        return [
            Check("ncu", Status.FAIL, f"{path} --version printed no version", NCU_INSTALL_FIX)
        ], None
    return [Check("ncu", Status.OK, f"{path}, version {version}")], path


def run_doctor(
    ncu: str = "ncu",
    baselines: Sequence[str] = (),
    program: Sequence[str] = (),
    sanity: Callable[[str, Sequence[str], Sequence[str]], list[Check]] | None = None,
) -> list[Check]:
    checks, path = ncu_checks(ncu)
    found = gpus()
    checks += gpu_checks(found)
    if found:
        checks.append(
            permission_check(_read("/proc/driver/nvidia/params"), _read("/proc/self/status"),
                             os.geteuid())
        )  # fmt: skip
    else:  # without a GPU and its driver there are no counters to be allowed to read
        checks.append(Check("counter permission", Status.SKIP, "needs a GPU and its driver"))
    if path is None or not found:
        checks.append(Check("sanity capture", Status.SKIP, "needs ncu and a GPU"))
    elif not baselines or not program:
        checks.append(
            Check(
                "sanity capture", Status.SKIP,
                "give --baseline and a program (perfgate doctor -b B -- ./app ARGS) to prove "
                "each gated metric returns data here",
            )
        )  # fmt: skip
    else:
        checks += (sanity or sanity_capture)(path, baselines, program)
    return checks


def sanity_capture(ncu: str, baselines: Sequence[str], program: Sequence[str]) -> list[Check]:
    """Profile the program's first matching launch with every metric the baselines gate, and
    say which of them came back without a value."""
    import io
    import tempfile

    from perfgate.common.errors import PerfgateError
    from perfgate.ncu.command import CaptureOptions
    from perfgate.ncu.runner import run_capture

    with tempfile.TemporaryDirectory(prefix="perfgate-doctor-") as tmp:
        options = CaptureOptions(
            tuple(baselines), tuple(program), output=str(Path(tmp) / "sanity.csv"),
            launch_count=1, ncu=ncu, allow_program_failure=False,
        )  # fmt: skip
        sink = io.StringIO()
        try:
            result = run_capture(options, err=sink)
        except PerfgateError as exc:
            return [Check("sanity capture", Status.FAIL, str(exc), _fix_for(str(exc)))]
        empty = _empty_metrics(result.output, result.gated)
    absent = list(result.absent)
    if absent or empty:
        from perfgate.metrics.names import describe_absent

        detail = "; ".join(describe_absent(absent, None) + [f"{m}: no value" for m in empty])
        return [
            Check(
                "sanity capture", Status.FAIL, detail,
                "capture with the metric names this chip and ncu know, and re-record the "
                "baselines from such captures",
            )
        ]  # fmt: skip
    return [
        Check(
            "sanity capture", Status.OK,
            f"1 launch, {result.passes[0] if result.passes else '?'} passes: every gated "
            "metric returned a value",
        )
    ]  # fmt: skip


def _empty_metrics(path: str, gated: Sequence[str]) -> list[str]:
    """Gated metrics whose column is there but holds no value for any launch."""
    from perfgate.ingest import MetricSelection, read_capture

    capture = read_capture(path, MetricSelection(gated))
    return [
        name
        for name in gated
        if name in capture.columns
        and all(launch.metrics.get(name) is None for launch in capture.launches)
    ]


def _fix_for(message: str) -> str:
    from perfgate.ingest.ncu_log import NO_KERNELS_HINTS, PERMISSION_FIX

    if "ERR_NVGPUCTRPERM" in message:
        return PERMISSION_FIX
    if "profiled no kernels" in message:
        return NO_KERNELS_HINTS
    return "run the same ncu command by hand (perfgate capture --dry-run prints it)"


def failed(checks: Sequence[Check]) -> bool:
    return any(c.status is Status.FAIL for c in checks)


def render(checks: Sequence[Check]) -> str:
    lines = []
    for c in checks:
        lines.append(f"[{c.status.value:>4}] {c.name}: {c.detail}")
        if c.fix and c.status in (Status.FAIL, Status.WARN):
            lines.append(f"       fix: {c.fix}")
    bad = sum(c.status is Status.FAIL for c in checks)
    lines.append(f"{bad} problem(s)" if bad else "ready to capture")
    return log_text(lines)  # a GPU name or ncu's text is shown escaped (common.escape)
