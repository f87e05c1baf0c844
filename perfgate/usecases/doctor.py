"""`perfgate doctor`: whether this machine can capture (perfgate.ncu.doctor's checks), as a
document and an exit code."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.common.errors import ExitCode
from perfgate.usecases.console import Document, Outcome


@dataclass(frozen=True)
class DoctorRequest:
    baselines: tuple[str, ...] = ()  # whose metrics the sanity capture must prove
    ncu: str = "ncu"
    program: tuple[str, ...] = ()  # the sanity capture's program; none: no capture


def run_doctor_command(request: DoctorRequest) -> Outcome:
    """Every check said; exit 2 on any problem."""
    from perfgate.ncu.doctor import failed, render, run_doctor

    checks = run_doctor(request.ncu, request.baselines, request.program)
    code = ExitCode.INPUT_ERROR if failed(checks) else ExitCode.OK
    return Outcome((Document(render(checks)),), code)
