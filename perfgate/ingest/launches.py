"""What perfgate reads out of an ncu capture: launches with their raw metric values.

Values are normalised at ingest (base units, no thousands separators), so everything after
ingest works with plain floats and strings.

"Capture" names three things, and names say which: a capture file (ncu's raw CSV page or
.ncu-rep report; its path is a `capture_file`/`capture_path`), the in-memory `Capture` read
from one or more of them (`read_captures`), and the `perfgate capture` command that runs ncu
to write one (perfgate.ncu: `CaptureOptions`, `run_capture`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Value = float | str | None
Dim3 = tuple[int, int, int]
# NCU rule results of a .ncu-rep ride in a launch's metrics as `ncu_rule.<id>`: the estimated
# speedup in percent.
RULE_PREFIX = "ncu_rule."


def cc_version(cc: str | None) -> tuple[int, int] | None:
    """(9, 0) from ncu's "9.0"; None when unknown."""
    if not cc:
        return None
    major, _, minor = cc.partition(".")
    try:
        return int(major), int(minor or 0)
    except ValueError:
        return None


@dataclass(frozen=True)
class Launch:
    """One profiled kernel launch (one row of ncu's raw page, one action of a report)."""

    index: int
    name: str  # the kernel name as ncu printed it (demangled by default)
    function: str  # the qualified function name derived from `name`
    block: Dim3 | None
    grid: Dim3 | None
    metrics: Mapping[str, Value]  # raw ncu metric name -> value in base units
    units: Mapping[str, str] = field(default_factory=dict)  # raw metric name -> base unit
    device: str | None = None  # device__attribute_display_name, when captured
    cc: str | None = None  # compute capability "9.0"
    nvtx: tuple[str, ...] = ()
    source: str = ""  # the file this launch came from
    # NCU's rule results in a .ncu-rep (rule id -> its first sentence); their estimated
    # speedups (%) are in `metrics` as `ncu_rule.<id>`.
    rules: Mapping[str, str] = field(default_factory=dict)
    # Source lines that account for a source counter (a .ncu-rep with SourceCounters):
    # counter -> ((file:line, value), ...), largest first.
    lines: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Capture:
    """All launches read from one or more capture files, with what ncu said about them."""

    paths: tuple[str, ...]
    launches: tuple[Launch, ...]
    columns: frozenset[str]  # raw metric names present in the capture (before any filtering)
    warnings: tuple[str, ...] = ()  # ncu ==WARNING== lines worth showing to the user
    # Launches of a gate capture (`perfgate capture --phases gate`): a metric outside the
    # one-pass gate set is skipped for them, not missing (perfgate.metrics.passes).
    gate: bool = False
    # The files read as gate captures (their sidecar says so, or their columns: a gate
    # capture that lost its sidecar); the others are full captures.
    gate_files: tuple[str, ...] = ()
    # Diagnosis captures folded in for their metrics only (perfgate.ingest.phases).
    diagnosis_paths: tuple[str, ...] = ()
    # (file, machine start) for each file whose sidecar names its machine start
    # (perfgate.ncu.machine.machine_start): a baseline recorded from several starts pools them.
    starts: tuple[tuple[str, str], ...] = ()

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(sorted({launch.device for launch in self.launches if launch.device}))


def per_file(launches: Iterable[Launch], paths: Sequence[str]) -> tuple[int, ...]:
    """How many of the launches came from each capture file: one pass over the launches, not
    one per file (launches x files: 1,500 files took 30 s; issue 23)."""
    counts = Counter(la.source for la in launches)
    return tuple(counts.get(p, 0) for p in paths)


def merge(captures: list[Capture]) -> Capture:
    """Concatenate captures (several ncu runs of one workload) into one."""
    launches: list[Launch] = []
    columns: set[str] = set()
    warnings: dict[str, None] = {}  # in their order, each once, without a list scan per line
    gate = False
    for cap in captures:
        gate = gate or cap.gate
        launches.extend(cap.launches)
        columns |= cap.columns
        warnings.update(dict.fromkeys(cap.warnings))
    return Capture(
        paths=tuple(p for cap in captures for p in cap.paths),
        launches=tuple(launches),
        columns=frozenset(columns),
        warnings=tuple(warnings),
        gate=gate,
        gate_files=tuple(p for cap in captures for p in cap.gate_files),
        diagnosis_paths=tuple(p for cap in captures for p in cap.diagnosis_paths),
        starts=tuple(s for cap in captures for s in cap.starts),
    )
