"""ncu's own log lines (`==PROF==`, `==WARNING==`, `==ERROR==`) and what they mean for a gate.

ncu's exit code proves nothing (NCU_FACTS: a kernel filter that matches nothing exits 0), so a
capture is judged by its text: any `==ERROR==` line, or "No kernels were profiled", makes it
unusable. Warnings are kept and reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

PREFIXES = ("==PROF==", "==WARNING==", "==ERROR==")

# Known errors and the one-line fix that goes with them.
_HINTS = (
    (
        "ERR_NVGPUCTRPERM",
        "the user may not read GPU performance counters: run ncu as root or with "
        "CAP_SYS_ADMIN (--cap-add=SYS_ADMIN in containers), or set the nvidia module option "
        "NVreg_RestrictProfilingToAdminUsers=0 and reboot; perf_event_paranoid does not help",
    ),
    (
        "The application returned an error code",
        "the profiled program failed, so its counters describe a failed run",
    ),
    ("LibraryNotLoaded", "ncu could not load its profiling library on this machine"),
    ("Failed to prepare kernel for profiling", "ncu could not instrument a kernel"),
    ("Failed to parse options", "ncu rejected its command line"),
)


@dataclass
class LogScan:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    no_kernels: bool = False
    available_kernels: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        text = line.strip()
        if text.startswith("==ERROR=="):
            self.errors.append(text)
        elif text.startswith("==WARNING=="):
            if "No kernels were profiled" in text:
                self.no_kernels = True
            elif "Running with unmodified GPU clocks" not in text:
                self.warnings.append(text)
        elif (
            text.startswith("==PROF==") and "terminated before first instrumented API call" in text
        ):
            self.errors.append(text)


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


def describe_error(line: str) -> str:
    """ncu's error line with the hint that goes with it, if perfgate knows one."""
    for needle, hint in _HINTS:
        if needle in line:
            return f"ncu reported an error: {line!r} ({hint})"
    return f"ncu reported an error: {line!r}"


def describe_no_kernels(available: list[str]) -> str:
    message = "ncu profiled no kernels ('==WARNING== No kernels were profiled.')"
    if available:
        shown = ", ".join(available[:8]) + (", ..." if len(available) > 8 else "")
        message += f"; its kernel filter matched none of the launched kernels: {shown}"
    else:
        message += "; if the kernels run in a child process, pass --target-processes all to ncu"
    return message
