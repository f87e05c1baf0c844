"""A baseline as perfgate holds it once loaded: per-kernel recorded values, their bounds and
checks, how each kernel is matched, its history, and where the numbers came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfgate.baseline.fingerprint import Fingerprint
from perfgate.baseline.fingerprint import from_document as fingerprint_from_document
from perfgate.common import patterns
from perfgate.ingest.launches import Dim3, Launch
from perfgate.metrics.catalog import MetricDef, lookup
from perfgate.metrics.program import GPU_TIME
from perfgate.metrics.thresholds import CategoricalOverride, ThresholdOverride

FORMAT_VERSION = 2


# Format 1 matched by bare function name by default, which merges template instantiations;
# it still loads (its `function` entries are an explicit choice now) with a warning.
READABLE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class KernelMatch:
    function: str | None = None
    name: str | None = None
    regex: str | None = None
    block: Dim3 | None = None
    grid: Dim3 | None = None
    nvtx: str | None = None  # the NVTX range path the launches ran in
    work: int | None = None  # work class of one name and shape (kernels.WORK_GAP)

    @property
    def explicit(self) -> bool:
        """Matched by a rule the user chose (function name, regex) rather than identity."""
        return self.name is None

    def matches(self, launch: Launch) -> bool:
        if self.function is not None and launch.function != self.function:
            return False
        if self.name is not None and launch.name != self.name:
            return False
        if self.regex is not None and not patterns.search(self.regex, launch.name):
            return False
        if self.block is not None and launch.block != self.block:
            return False
        return not (self.grid is not None and launch.grid != self.grid)

    def describe(self) -> str:
        parts = []
        for key in ("function", "name", "regex", "block", "grid", "nvtx", "work"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key} {value!r}" if isinstance(value, str) else f"{key} {value}")
        return ", ".join(parts)


@dataclass(frozen=True)
class MetricBaseline:
    name: str
    value: float | str
    low: float | None = None
    high: float | None = None
    unit: str = ""
    source: str = ""
    group: str | None = None
    shares: Mapping[str, float] | None = None
    threshold: ThresholdOverride | None = None
    check: CategoricalOverride | None = None
    reasons: tuple[str, ...] | None = None  # stall metrics: the reason set the shares cover
    family: str | None = None  # stall metrics: the stall family they were measured in
    calibration: str | None = None  # how the bound was derived, for a reviewer

    @property
    def definition(self) -> MetricDef:
        return lookup(self.name)

    @property
    def formula_group(self) -> str:
        """The comparability group the value was measured in (the catalog's first formula's
        group when the file does not say)."""
        return self.group or self.definition.formulas[0].group


@dataclass(frozen=True)
class HistoryEntry:
    """One change accepted into a kernel's entry (perfgate baseline accept/update)."""

    date: str
    reason: str
    by: str | None = None
    action: str | None = None  # accept, update, ratchet
    previous: Mapping[str, float | str] = field(default_factory=dict)  # metric -> old value


@dataclass(frozen=True)
class LaunchConfig:
    """One launch configuration a kernel ran with in the recorded runs of one build: an
    autotuner's or a library heuristic's choice (docs/identity.md, "Autotuned kernels")."""

    grid: Dim3 | None
    block: Dim3 | None
    registers: int | None = None  # per thread
    shared_memory: int | None = None  # bytes per block, static + dynamic
    runs: int = 0  # how many recorded runs used it
    # Its best duration (ns): the least of its per-run means. An autotuned entry's duration
    # is judged against the configuration the check ran at, not the spread across them.
    duration: float | None = None

    @property
    def shape(self) -> tuple[Dim3 | None, Dim3 | None, int | None, int | None]:
        """What tells two configurations apart (the run count does not)."""
        return (self.grid, self.block, self.registers, self.shared_memory)

    def describe(self) -> str:
        def dims(d: Dim3 | None) -> str:
            return "?" if d is None else "x".join(str(v) for v in d)

        text = f"grid {dims(self.grid)} block {dims(self.block)}"
        if self.registers is not None:
            text += f" registers {self.registers}"
        if self.shared_memory:
            text += f" shared {self.shared_memory} B"
        return text


@dataclass(frozen=True)
class KernelBaseline:
    id: str
    match: KernelMatch
    metrics: tuple[MetricBaseline, ...]
    name: str | None = None
    launches: int | None = None
    # Values of metrics recorded for the differential diagnosis, not gated.
    info: Mapping[str, float | str] = field(default_factory=dict)
    family: str | None = None
    history: tuple[HistoryEntry, ...] = ()
    # The launch configurations seen when recorded (perfgate.identity.configs): several where
    # they differed between the recorded runs (an autotuned entry: matched by name whatever
    # the grid and block, gating only what does not depend on the configuration); one for a
    # Triton/Inductor kernel at one configuration (fully gated). Empty for any other kernel.
    configurations: tuple[LaunchConfig, ...] = ()
    # (runs, of): only `runs` of the `of` recorded capture files launched it. The program's
    # kernels varied between its recorded runs, so a check does not require it. None: every
    # recorded file launched it.
    seen_in: tuple[int, int] | None = None
    # The 1-based line of the kernel's entry in its file (None when not loaded from one):
    # annotations and JUnit point there. Where it was written, not what it is: not compared.
    line: int | None = field(default=None, compare=False)

    @property
    def tuned(self) -> bool:
        """Autotuned: its configuration differed between the recorded runs; or one problem
        size of an autotuned kernel that got one choice in every run: it records its one
        configuration and matches by name and size alone (no grid or block, a `work` class),
        where a pinned Triton/Inductor entry keeps its grid and block
        (perfgate.identity.configs)."""
        if len(self.configurations) != 1:
            return len(self.configurations) > 1
        m = self.match
        return m.name is not None and m.grid is None and m.block is None and m.work is not None

    @property
    def pinned(self) -> LaunchConfig | None:
        """The one configuration a Triton/Inductor kernel ran at in every recorded run: fully
        gated while it runs there; another grid or block is a reconfiguration."""
        return self.configurations[0] if len(self.configurations) == 1 and not self.tuned else None

    def value(self, metric: str) -> float | str | None:
        for m in self.metrics:
            if m.name == metric:
                return m.value
        return self.info.get(metric)


@dataclass(frozen=True)
class ProgramBaseline:
    """The whole-program GPU time of the recorded runs (docs/noise.md "Whole-program time"):
    the fastest run's total over every launch, each run's total, and the relative bound."""

    value: float  # ns: the fastest run's total
    relative: float  # a slower total by more than this fraction regresses
    runs: tuple[float, ...] = ()  # ns: each capture file's total, in record order
    unit: str = "ns"
    calibration: str | None = None  # how the bound was derived, for a reviewer
    # Changes accepted into it (accept, update, ratchet), newest last, as a kernel's history.
    history: tuple[HistoryEntry, ...] = ()


@dataclass(frozen=True)
class Baseline:
    kernels: tuple[KernelBaseline, ...]
    provenance: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Mapping[str, ThresholdOverride] = field(default_factory=dict)
    checks: Mapping[str, CategoricalOverride] = field(default_factory=dict)
    path: str = ""
    format_version: int = FORMAT_VERSION
    by_nvtx: bool = False  # identity includes the NVTX range (identity: {nvtx: true})
    # As written in the file; None for a baseline recorded before fingerprints (see `gpu`).
    fingerprint: Fingerprint | None = None
    # None for a baseline recorded before whole-program time (its check says so).
    program: ProgramBaseline | None = None
    # The file's `waive:` list: reasons a gate may go unjudged without failing a check against
    # it, by name (perfgate.judge.skips; the schema holds the names).
    waive: tuple[str, ...] = ()

    @property
    def gpu(self) -> Fingerprint:
        """The fingerprint to check captures against: the file's, or for an older file the
        GPU its provenance names (every field unknown when it names none)."""
        if self.fingerprint is not None:
            return self.fingerprint
        return fingerprint_from_document(None, self.provenance)

    @property
    def warnings(self) -> tuple[str, ...]:
        if self.format_version == 1:
            return (
                f"{self.path}: a format-1 baseline matches kernels by bare function name, which "
                "merges template instantiations and launch shapes; re-record it (perfgate "
                "baseline record -c CAPTURE... -o FILE, with the captures of its known-good "
                "build) to match kernels by identity (docs/identity.md)",
            )
        return ()

    def raw_metrics(self) -> set[str]:
        """Every raw ncu metric any formula of any baselined metric may read."""
        names: set[str] = set()
        for kernel in self.kernels:
            for metric in kernel.metrics:
                for formula in metric.definition.formulas:
                    names.update(formula.inputs)
        if self.program is not None:
            names.add(GPU_TIME)
        return names
