"""The machine a capture runs on: where ncu is, its version, and the GPUs nvidia-smi lists.

Both `perfgate capture` (runner) and `perfgate doctor` need these; they live here so that
neither imports the other for them. The parsers are pure functions, tested with the outputs
recorded on an H200 (tests/data/h200/capture/)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Where Nsight Compute installs itself when it is not on PATH.
NCU_FOLDERS = (
    "/usr/local/cuda/bin/ncu",
    "/usr/local/cuda-*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
    "/usr/local/NVIDIA-Nsight-Compute*/ncu",
    "/opt/cuda/bin/ncu",
)
_VERSION = re.compile(r"Version (\d+(?:\.\d+)+)")
SMI_FIELDS = ("name", "compute_cap", "driver_version", "mig.mode.current")


@dataclass(frozen=True)
class Gpu:
    name: str
    cc: str | None
    driver: str | None
    mig: str | None


def _matches(pattern: str) -> list[str]:
    root = Path("/")
    found = (str(p) for p in root.glob(pattern.lstrip("/")))
    return sorted(found, reverse=True)  # newest version folder first


def find_ncu(ncu: str = "ncu") -> str | None:
    """ncu's path: the one given (a path or a name on PATH), else the usual install folders."""
    if os.sep in ncu:
        return ncu if os.access(ncu, os.X_OK) and Path(ncu).is_file() else None
    found = shutil.which(ncu)
    if found:
        return found
    if ncu != "ncu":
        return None
    for pattern in NCU_FOLDERS:
        for path in _matches(pattern):
            if os.access(path, os.X_OK):
                return path
    return None


def parse_ncu_version(text: str) -> str | None:
    """ "2025.3.1.0" from `ncu --version`'s "Version 2025.3.1.0 (build 36398880) ..."."""
    m = _VERSION.search(text)
    return m.group(1) if m else None


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """`nvidia-smi --query-gpu=name,compute_cap,driver_version,mig.mode.current
    --format=csv,noheader`: one GPU a line."""
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(SMI_FIELDS) or not fields[0]:
            continue

        def known(value: str) -> str | None:
            return None if value in ("", "[N/A]", "N/A", "[Not Supported]") else value

        gpus.append(Gpu(fields[0], known(fields[1]), known(fields[2]), known(fields[3])))
    return gpus


def run_program(cmd: Sequence[str], timeout: float = 60) -> tuple[int, str, str] | None:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.returncode, proc.stdout, proc.stderr


def gpus() -> list[Gpu] | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    out = run_program([smi, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader"])
    return parse_nvidia_smi(out[1]) if out and out[0] == 0 else None


def query_gpu() -> tuple[str | None, str | None, str | None]:
    """(name, compute capability, driver) of the first GPU, Nones when unknown."""
    found = gpus() or []
    if not found:
        return None, None, None
    return found[0].name, found[0].cc, found[0].driver


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def visible_uuids(uuids: Sequence[str], visible: str | None) -> list[str]:
    """The UUIDs of the cards a program sees under CUDA_VISIBLE_DEVICES (`visible`): its
    entries are nvidia-smi's indices or UUIDs (a prefix will do); unset, empty or naming no
    card nvidia-smi lists: every card. Why: on a runner of several GPUs each job is given one
    card, and two cards of one boot are two starts for a kernel's time (a card's own speed
    is part of what moves between starts). Assumes CUDA numbers the cards as nvidia-smi does
    (PCI order; CUDA_DEVICE_ORDER=PCI_BUS_ID makes sure), as it does on a host of one model."""
    chosen: list[str] = []
    for item in (visible or "").split(","):
        item = item.strip()
        if item.isdigit():
            found = [uuids[int(item)]] if int(item) < len(uuids) else []
        else:
            found = [u for u in uuids if item and u.startswith(item)]
        chosen += [u for u in found if u not in chosen]
    return chosen or list(uuids)


def machine_start(boot_id: Path = BOOT_ID) -> str | None:
    """Which machine start a capture ran on: a digest of the kernel's boot id (new on every
    boot) and the UUIDs of the cards it sees (visible_uuids), or None where either is unknown
    (not Linux, no nvidia-smi). Why: a kernel's time moves more between machine starts than
    between the runs of one start (docs/noise.md), so a baseline recorded from several starts
    takes the median over starts (perfgate.lifecycle.pooled), which needs to know which runs
    share a start."""
    try:
        boot = boot_id.read_text("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    smi = shutil.which("nvidia-smi")
    out = run_program([smi, "--query-gpu=uuid", "--format=csv,noheader"]) if smi else None
    uuids = out[1].split() if out and out[0] == 0 else []
    if not boot or not uuids:
        return None
    cards = visible_uuids(uuids, os.environ.get("CUDA_VISIBLE_DEVICES"))
    return hashlib.sha256("\n".join([boot, *cards]).encode()).hexdigest()[:16]
