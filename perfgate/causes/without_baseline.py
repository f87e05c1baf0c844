"""What one capture says about a kernel, with no baseline: the differential rules of
perfgate.causes run with an empty baseline side, and their causes become the findings that
`perfgate explain` and the reports render (the speed-of-light
quadrant, SM against memory throughput, on top).

Every finding cites the counters it rests on; a rule whose counters the capture does not
hold says what to add instead of guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfgate import causes
from perfgate.causes.model import KernelDelta, RootCause, Side
from perfgate.common.errors import UsageError
from perfgate.identity.families import family_of
from perfgate.ingest.launches import Launch
from perfgate.metrics.catalog import lookup
from perfgate.metrics.measure import Measured


@dataclass(frozen=True)
class CitedValue:
    """A capture's value that a finding rests on (a cause's Evidence has a before and an
    after; this has only the capture's)."""

    metric: str  # logical metric name
    value: float | str
    unit: str
    source: str  # the raw ncu metrics it came from


@dataclass(frozen=True)
class Finding:
    rule: str
    title: str
    detail: str
    lever: str
    evidence: tuple[CitedValue, ...]
    weight: int  # higher first


@dataclass(frozen=True)
class CaptureDiagnosis:
    """One kernel of a capture diagnosed without a baseline (`perfgate explain`); the
    differential perfgate.causes.Diagnosis it is made from compares two sides."""

    kernel: str
    name: str
    launches: int
    quadrant: str | None
    findings: tuple[Finding, ...]
    not_evaluated: tuple[str, ...]  # "rule: needs ...; add ... to the capture"

    @property
    def headline(self) -> str:
        if self.findings:
            return self.findings[0].title
        return "no bottleneck rule fired"


@dataclass(frozen=True)
class ExplainResult:
    """`perfgate explain`'s whole result, as its reporters (perfgate.reports.explain) take it."""

    capture_paths: tuple[str, ...]
    diagnoses: tuple[CaptureDiagnosis, ...]
    warnings: tuple[str, ...] = ()


# The logical metrics the rules read, plus the quadrant's two.
METRICS: tuple[str, ...] = tuple(
    dict.fromkeys((*causes.metrics(), "sm_throughput", "memory_throughput",
                   "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"))
)  # fmt: skip


def raw_inputs() -> set[str]:
    """Every raw ncu metric a rule may read, for reading a capture's columns selectively."""
    out: set[str] = set()
    for name in METRICS:
        try:
            formulas = lookup(name).formulas
        except UsageError:
            continue  # a catalog metric another change adds
        out.update(raw for formula in formulas for raw in formula.inputs)
    return out


def quadrant(sm: float, mem: float) -> str:
    """Seed 003's decision table on SM% and memory%."""
    if sm > 80 and mem < 60:
        return "compute-bound"
    if sm < 60 and mem > 80:
        return "memory-bound"
    if sm > 70 and mem > 70:
        return "balanced (near both limits)"
    if sm < 50 and mem < 50:
        return "under-utilised (latency or launch bound)"
    return "between quadrants"


def _finding(cause: RootCause, measured: dict[str, Measured]) -> Finding:
    cites = []
    for e in cause.evidence:
        m = measured.get(e.metric)
        if m is not None and e.after is not None:
            cites.append(CitedValue(e.metric, e.after, m.unit, m.source))
    return Finding(cause.mechanism, cause.title, cause.detail, cause.lever, tuple(cites),
                   round(cause.score))  # fmt: skip


def _quadrant(measured: dict[str, Measured]) -> str | None:
    sm, mem = measured.get("sm_throughput"), measured.get("memory_throughput")
    if sm is None or mem is None or isinstance(sm.value, str) or isinstance(mem.value, str):
        return None
    return quadrant(sm.value, mem.value)


def diagnose(kernel: str, launches: Sequence[Launch], columns: frozenset[str]) -> CaptureDiagnosis:
    measured = causes.measure_all(launches, columns, METRICS)
    current = causes.side_from_measured(launches, measured)
    family = family_of(current.name)
    delta = KernelDelta(
        kernel, Side(current.name, {}), current, (), family.name if family else None
    )
    found = causes.diagnose(delta)
    notes = list(found.not_evaluated)
    if "sm_throughput" not in measured or "memory_throughput" not in measured:
        notes.insert(0, "speed-of-light quadrant: needs sm__throughput.avg.pct_of_peak_"
                     "sustained_elapsed, gpu__compute_memory_throughput.avg.pct_of_peak_"
                     "sustained_elapsed")  # fmt: skip
    return CaptureDiagnosis(
        kernel,
        current.name or kernel,
        len(launches),
        _quadrant(measured),
        tuple(_finding(c, measured) for c in found.causes),
        tuple(notes),
    )
