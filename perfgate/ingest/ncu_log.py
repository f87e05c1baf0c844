"""ncu's own log lines (`==PROF==`, `==WARNING==`, `==ERROR==`) and what they mean for a gate.

ncu's exit code proves nothing (a kernel filter that matches nothing exits 0), so a
capture is judged by its text: any `==ERROR==` line, or "No kernels were profiled", makes it
unusable. Warnings are kept and reported.

The texts below were seen on ncu 2025.3.1 (tests/data/h200/capture/), except
ERR_NVGPUCTRPERM, which cannot be provoked as root: its text is NVIDIA's documented one.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field

PREFIXES = ("==PROF==", "==WARNING==", "==ERROR==")

PERMISSION_FIX = (
    "the user may not read GPU performance counters: run ncu as root or with "
    "CAP_SYS_ADMIN (CAP_PERFMON from driver R565; --cap-add=SYS_ADMIN in containers), or set "
    "the nvidia module option NVreg_RestrictProfilingToAdminUsers=0 and reboot; "
    "perf_event_paranoid does not help"
)
NO_KERNELS_HINTS = (
    "the kernel filter (-k/--kernel-name, from the baselines or --kernel) matched no launched "
    "kernel, or --launch-skip skipped them all, or --nvtx-include named a range no kernel ran "
    "in; kernels launched by a child process need --target-processes all"
)

# Known errors and the one-line fix that goes with them.
_HINTS = (
    ("ERR_NVGPUCTRPERM", PERMISSION_FIX),
    (
        "The application returned an error code",
        "the profiled program failed, so its counters describe a failed run",
    ),
    (
        "LibraryNotLoaded",
        "ncu could not load its profiling library on this machine: check that the driver is "
        "new enough for this ncu and that the GPU is not behind a sandbox that hides the "
        "profiler interface (seen under gVisor); `perfgate doctor` checks the set-up",
    ),
    ("Failed to prepare kernel for profiling", "ncu could not instrument a kernel"),
    ("Failed to parse options", "ncu rejected its command line or its configuration file"),
    ("is invalid. Use --help", "ncu rejected an option's value"),
    (
        "does not exist or is not an executable",
        "give the program's path (absolute, or ./name), or a program on PATH",
    ),
    (
        "terminated before first instrumented API call",
        "the program ended before it used CUDA: check its arguments and that it runs without ncu",
    ),
)
_APP_CODE = re.compile(r"The application returned an error code \((-?\d+)\)")
_CONNECTED = re.compile(r"^==PROF== Connected to process (\d+)")
_DISCONNECTED = re.compile(r"^==PROF== Disconnected from process (\d+)")
# `==PROF== Profiling "name" - 3: 0%....50%....100% - 9 passes` (or without ` - 3`)
PROFILING = re.compile(r'^==PROF== Profiling "(?P<name>.*)"(?: - (?P<index>\d+))?:')
_PASSES = re.compile(r" - (\d+) pass(?:es)?\s*$")


@dataclass
class LogScan:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    no_kernels: bool = False
    available_kernels: list[str] = field(default_factory=list)
    app_exit_code: int | None = None  # "The application returned an error code (N)"
    connected: list[str] = field(default_factory=list)  # process ids ncu attached to
    disconnected: list[str] = field(default_factory=list)
    passes: list[tuple[str, int]] = field(default_factory=list)  # (kernel, passes) per launch

    def add(self, line: str) -> None:
        text = line.strip()
        if text.startswith("==ERROR=="):
            self.errors.append(text)
            code = _APP_CODE.search(text)
            if code:
                self.app_exit_code = int(code.group(1))
        elif text.startswith("==WARNING=="):
            if "No kernels were profiled" in text:
                self.no_kernels = True
            elif "Running with unmodified GPU clocks" not in text:
                self.warnings.append(text)
        elif text.startswith("==PROF=="):
            if "terminated before first instrumented API call" in text:
                self.errors.append(text)
            elif m := _CONNECTED.match(text):
                self.connected.append(m.group(1))
            elif m := _DISCONNECTED.match(text):
                self.disconnected.append(m.group(1))
            elif (m := PROFILING.match(text)) and (p := _PASSES.search(text)):
                self.passes.append((m.group("name"), int(p.group(1))))

    @property
    def crashed(self) -> list[str]:
        """Processes ncu attached to that never disconnected: the program died mid-run."""
        return [pid for pid in self.connected if pid not in self.disconnected]

    def problems(self) -> list[str]:
        """Every reason this run's capture cannot be trusted, one sentence each."""
        out = [describe_error(line) for line in self.errors]
        if self.crashed and self.app_exit_code is None:
            out.append(
                f"the profiled process {', '.join(self.crashed)} ended without ncu's "
                "'Disconnected' line: it crashed or was killed mid-run"
            )
        if self.no_kernels:
            out.append(describe_no_kernels(self.available_kernels))
        return out


def scan(lines: Iterable[str]) -> LogScan:
    """Collect ncu's log lines; also the "Available Kernels:" list that follows no-kernels."""
    result = LogScan()
    listing = False
    for line in lines:
        stripped = line.strip()
        if listing:
            head, dot, rest = stripped.partition(". ")
            if dot and head.isdigit():
                result.available_kernels.append(rest)
                continue
            listing = False
        if stripped == "Available Kernels:":
            listing = True
            continue
        if stripped.startswith(PREFIXES):
            result.add(stripped)
    return result


_CRASHES = frozenset(
    {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGKILL}
)


def crash_signal(code: int) -> str | None:
    """The signal a program's exit code most likely stands for. ncu reports a program killed
    by a signal with the signal's number (seen: 6 for abort, 11 for a segmentation fault); a
    shell says 128+N. Only signals that mean a crash are named: exit(3) is no SIGQUIT."""
    number = code - 128 if code > 128 else code
    try:
        sig = signal.Signals(number)
    except ValueError:
        return None
    return sig.name if code > 128 or sig in _CRASHES else None


def describe_error(line: str) -> str:
    """ncu's error line with the hint that goes with it, if perfgate knows one."""
    code = _APP_CODE.search(line)
    if code:
        value = int(code.group(1))
        name = crash_signal(value)
        crash = f"; {value} is {name}'s number: it crashed or was killed" if name else ""
        return (
            f"ncu reported an error: {line!r} (the profiled program exited with code {value}"
            f"{crash}; its counters describe a failed run)"
        )
    for needle, hint in _HINTS:
        if needle in line:
            return f"ncu reported an error: {line!r} ({hint})"
    return f"ncu reported an error: {line!r}"


def describe_no_kernels(available: list[str]) -> str:
    message = "ncu profiled no kernels ('==WARNING== No kernels were profiled.')"
    if available:
        shown = ", ".join(available[:8]) + (", ..." if len(available) > 8 else "")
        message += (
            f"; the program launched {len(available)} kernel name(s): {shown}. "
            f"Likely causes: {NO_KERNELS_HINTS}"
        )
    else:
        message += (
            "; if the kernels run in a child process, pass --target-processes all to ncu "
            "(perfgate capture passes it)"
        )
    return message
