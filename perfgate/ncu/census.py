"""The census of a capture in a push/pop NVTX range: which kernels the program launched that the
range never let ncu profile.

An NVTX push/pop range (`torch.cuda.nvtx.range_push`/`range_pop`, ncu `--nvtx-include NAME/`)
belongs to the thread that opened it. PyTorch's autograd launches the backward kernels from a
thread of its own, so a training step bracketed by push/pop is profiled without its backward
pass, and ncu says nothing (seen on an H100: 14 of the step's 27 launches profiled, no backward
GEMM; tests/data/field/families/fam-a/trap-pushpop.csv.gz). The census runs the program once
more under ncu with a kernel filter that matches nothing: ncu then profiles nothing (no replay)
and lists, after "No kernels were profiled.", the base name of every kernel the program
launched (tests/data/field/families/fam-a/trap-census.txt). Names the capture never profiled
were launched outside the range, on another thread, or (with a kernel filter) are not baselined.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.ingest import ncu_log
from perfgate.ingest.names import function_name

# Matches no kernel name: ncu then profiles nothing and lists every kernel the program launched.
CENSUS_FILTER = "regex:^perfgate-census-matches-nothing$"
# How many names a warning lists before "...": one line stays readable.
SHOWN = 6


def pushpop_ranges(argv: Sequence[str]) -> tuple[str, ...]:
    """The push/pop ranges among an ncu command's --nvtx-include values: ncu reads a value
    ending in "/" as a push/pop range (one thread's), one without as a start/end range."""
    return tuple(
        argv[i + 1]
        for i, arg in enumerate(argv[:-1])
        if arg == "--nvtx-include" and argv[i + 1].endswith("/")
    )


def census_command(ncu: str, log: str, program: Sequence[str]) -> tuple[str, ...]:
    """ncu with a filter that matches nothing: the program runs once, no launch is replayed.
    No --nvtx: the list must hold the kernels launched outside the range too."""
    return (
        ncu, "--clock-control", "none", "--target-processes", "all",
        "--kernel-name-base", "function", "--kernel-name", CENSUS_FILTER,
        "--log-file", log, *program,
    )  # fmt: skip


def base_name(name: str) -> str:
    """A kernel's function name without namespace, template arguments or parameters: what ncu's
    census lists (`multi_tensor_apply_kernel`, `init_half(__half *, ...)` -> `init_half`)."""
    return (function_name(name) or name).rsplit("::", 1)[-1]


@dataclass(frozen=True)
class Census:
    launched: tuple[str, ...]  # base names the program launched (the census' list)
    profiled: tuple[str, ...]  # base names the capture holds
    never: tuple[str, ...]  # launched and never profiled

    @property
    def suspicious(self) -> bool:
        """The rule: the names never profiled are at least half as many as the names profiled.

        Names, not launches: the census lists names only. A strict majority would have missed
        the real trap (4 names never profiled against 6 profiled): backward kernels share most
        base names with forward ones (`vectorized_elementwise_kernel`, `reduce_kernel`), so
        only their GEMMs and a loss-gradient kernel stand out. A step in a range that covers it
        leaves out only set-up kernels (the same program in a start/end range: 1 name of 10,
        the weights' random initialisation)."""
        return bool(self.never) and 2 * len(self.never) >= len(self.profiled)

    def as_meta(self) -> dict[str, object]:
        return {"launched": list(self.launched), "never_profiled": list(self.never)}


def compare(available: Iterable[str], profiled: Iterable[str]) -> Census:
    """The census' names against the kernel names of the capture, both by base name."""
    launched = tuple(sorted({base_name(n) for n in available if n.strip()}))
    mine = tuple(sorted({base_name(n) for n in profiled if n.strip()}))
    never = tuple(n for n in launched if n not in set(mine))
    return Census(launched, mine, never)


def warning(census: Census, ranges: Sequence[str], filtered: bool, counted: bool) -> str | None:
    """One line when the census is suspicious (Census.suspicious), with the fix; None otherwise.
    `filtered`: a kernel filter was applied (a kernel no baseline names is never profiled
    either); `counted`: --launch-skip/--launch-count cut the launches too."""
    if not census.suspicious:
        return None
    shown = ", ".join(census.never[:SHOWN]) + (", ..." if len(census.never) > SHOWN else "")
    also = []
    if filtered:
        also.append("not baselined")
    if counted:
        also.append("past --launch-skip/--launch-count")
    other = f" (or {' or '.join(also)})" if also else ""
    quoted = ", ".join(repr(r) for r in ranges)
    return (
        f"{len(census.never)} of the {len(census.launched)} kernel names the program launched "
        f"were never profiled ({shown}), against {len(census.profiled)} profiled in the push/pop "
        f"range {quoted}: launched outside it or on another thread{other}. A push/pop range "
        "covers only the thread that opened it (PyTorch's autograd launches the backward pass "
        "from its own thread): bracket the step with a process-wide range, "
        "torch.cuda.nvtx.range_start(NAME) ... torch.cuda.nvtx.range_end(id), and pass "
        "--nvtx-include NAME without the slash (docs/capture.md; --no-census skips this check)"
    )


def run_census(ncu: str, program: Sequence[str], log: Path) -> tuple[list[str] | None, str]:
    """Run the census; the names ncu listed (None when it listed none), and why not."""
    cmd = census_command(ncu, str(log), program)
    try:
        # Same environment as the capture (inherited). The program's output is dropped: it is
        # the same program's second run, and the capture already passed the first one's on.
        proc = subprocess.run(list(cmd), stdout=subprocess.DEVNULL, check=False)
    except OSError as exc:
        return None, f"cannot start ncu: {exc.strerror or exc}"
    text = ""
    with contextlib.suppress(OSError):
        text = log.read_text("utf-8", "replace")
    scan = ncu_log.scan(text.splitlines())
    if scan.available_kernels:
        return scan.available_kernels, ""
    why = "; ".join(ncu_log.describe_error(e) for e in scan.errors) or (
        f"ncu exited with code {proc.returncode} and listed no kernel"
    )
    return None, why
