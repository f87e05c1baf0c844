"""A capture's scope: which launches ncu profiled, from the launch filters of its command.

Launch counts (the `launches` metric, `total_time`, a kernel's `launches:`) depend on how the
capture was scoped: `--launch-count 3` stops after three launches, `--launch-skip`,
`--nvtx-include` and `--range-filter` leave launches out. Two captures' counts compare only
when their scopes are the same (perfgate.verdicts.check skips them otherwise, and a ratchet
never takes them). A kernel-name filter (`-k`) leaves whole kernels out, not some of a kernel's
launches: it is part of the scope only with a launch count or skip, which it then steers
(perfgate capture's own `-k` names the baseline's kernels, and changes with them).

The scope is a canonical text: ALL (no launch filter) or the filters in a fixed order, e.g.
`--launch-count 3 --nvtx-include step/`. None: unknown (no sidecar, or one without a command).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

ALL = "all launches"

# ncu's launch filters, each with its short spelling (docs: ncu --help, "Filter Profiling").
_FILTERS: dict[str, str] = {
    "--launch-skip": "--launch-skip",
    "-s": "--launch-skip",
    "--launch-count": "--launch-count",
    "-c": "--launch-count",
    "--launch-skip-before-match": "--launch-skip-before-match",
    "--nvtx-include": "--nvtx-include",
    "--nvtx-exclude": "--nvtx-exclude",
    "--range-filter": "--range-filter",
    "--kernel-id": "--kernel-id",
    "--profile-from-start": "--profile-from-start",
}
_KERNEL_NAME = {
    "-k": "--kernel-name",
    "--kernel-name": "--kernel-name",
    "--kernel-regex": "--kernel-name",
    "--kernel-name-base": "--kernel-name-base",
}
# ncu options that take no value (the others used before a program do).
_FLAGS = frozenset(
    {"--nvtx", "-f", "--force-overwrite", "--print-summary", "--quiet",
     "--csv", "--call-stack", "--print-units", "--list-sets", "--list-sections"}
)  # fmt: skip
_ORDER = (*dict.fromkeys(_FILTERS.values()), "--kernel-name-base", "--kernel-name")
# The options a canonical scope text holds (for reading one back: perfgate.ncu.command), and
# of those, the kernel-name filters.
SCOPE_FILTERS: tuple[str, ...] = _ORDER
SCOPE_NAMES: frozenset[str] = frozenset({"--kernel-name-base", "--kernel-name"})
_COUNTED = {"--launch-count", "--launch-skip", "--launch-skip-before-match", "--kernel-id"}


def capture_scope(command: Sequence[str]) -> str:
    """The scope of the ncu command `command` (ncu, its options, then the program)."""
    found: list[tuple[str, str]] = []
    names: list[tuple[str, str]] = []
    i = 1
    while i < len(command):
        token = command[i]
        if not token.startswith("-"):
            break  # the program: its own arguments are not ncu's
        option, eq, value = token.partition("=")
        takes_value = not eq and option not in _FLAGS
        if takes_value:
            value = command[i + 1] if i + 1 < len(command) else ""
        i += 2 if takes_value else 1
        if option in _FILTERS:
            found.append((_FILTERS[option], value))
        elif option in _KERNEL_NAME:
            names.append((_KERNEL_NAME[option], value))
    if any(opt in _COUNTED for opt, _ in found):
        found += names
    if found and all(o == "--profile-from-start" and v == "on" for o, v in found):
        found = []
    if not found:
        return ALL
    found.sort(key=lambda ov: _ORDER.index(ov[0]))
    return " ".join(f"{o} {v}" for o, v in found)


def declared(text: str) -> str | None:
    """The scope a user declares for captures made by hand (`baseline record --scope`): `all`
    (no launch filter), or the ncu launch filters they were made with, as ncu's options
    (`--nvtx-include step/ --launch-count 20`). None: the text holds no launch filter."""
    if text.strip().lower() in ("all", ALL):
        return ALL
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    scope = capture_scope(["ncu", *words, "PROGRAM"])
    return None if scope == ALL else scope


def differ(baseline: str | None, capture: str | None) -> bool:
    """Whether launch counts of the two scopes must not be compared. Unknown on one side is
    a difference only when the other side is known to leave launches out (a baseline
    recorded before scopes were kept, from a whole run, still compares with a whole run)."""
    if baseline is None and capture is None:
        return False
    if baseline is None or capture is None:
        return (baseline or capture) != ALL
    return baseline != capture
