"""A run record: one check's result with where it ran, as plain frozen values.

A record is the unit a store keeps: immutable, and identified by its run id. Its `digest`
is what makes storing idempotent: the same run stored twice changes nothing, and another
payload under a run id already kept is refused rather than merged."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any

# A metric's value as a check judged it: a number (counters, durations, ratios) or a label
# (the dominant stall, the occupancy limiter). None: not measured, or not finite.
Value = float | str | None


@dataclass(frozen=True)
class RunContext:
    """Where and when the run happened; every field but the id may be unknown."""

    run_id: str
    recorded_at: str  # ISO 8601, UTC: when the record was made (not part of its digest)
    commit: str | None = None
    branch: str | None = None
    pull_request: str | None = None
    ci_job: str | None = None


@dataclass(frozen=True)
class RunFingerprint:
    """What the capture ran on and under (perfgate.baseline.fingerprint): a kernel's figures
    form one series only within one fingerprint (another GPU, driver or clock control moves
    them without any change of the code)."""

    gpu: str | None = None
    cc: str | None = None
    ncu: str | None = None
    driver: str | None = None
    clock_control: str | None = None
    cache_control: str | None = None
    scope: str | None = None
    time_basis: str | None = None

    def key(self) -> str:
        """One text naming the fingerprint, the same in every store: the series' key."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    def describe(self) -> str:
        parts = [f"{k} {v}" for k, v in asdict(self).items() if v is not None and k != "gpu"]
        return f"{self.gpu or 'an unknown GPU'}" + (f" ({', '.join(parts)})" if parts else "")


@dataclass(frozen=True)
class MetricRecord:
    """One metric of one kernel as judged: the values, the bound and the state."""

    metric: str
    state: str  # perfgate.judge.comparison.State's value
    value: Value
    baseline: Value
    unit: str
    bound: str


@dataclass(frozen=True)
class Finding:
    """A kernel's first finding as the check gave it (perfgate.causes.model.RootCause): the
    headline the reports lead with, kept so that a history can say why a kernel moved."""

    mechanism: str  # the rule's registry key ("uncoalesced-loads"): stable across wordings
    title: str
    lever: str  # what to try first ("" when the rule names none)


@dataclass(frozen=True)
class KernelRecord:
    """One kernel of a result: its identity (the baseline's id, which tells the shapes and
    configurations of one kernel name apart, and the name ncu printed), its state, and its
    first finding (None when it passed, or when the check found no cause)."""

    kernel: str
    name: str
    state: str  # perfgate.judge.states.KernelState's value
    family: str | None
    nvtx: str | None
    matched_by: str
    metrics: tuple[MetricRecord, ...]
    finding: Finding | None = None


@dataclass(frozen=True)
class ResultRecord:
    """One baseline (one GPU) checked: the fingerprint its captures were taken under, and the
    machine start they were all taken on (perfgate.ncu.machine.machine_start: the boot and the
    cards; None when unknown or when the captures came from several starts). The start is not
    part of the series' key: a kernel's series spans the starts of one fingerprint, and a run
    is held to its own start's runs only where that start holds enough of them
    (perfgate.history.detect)."""

    baseline: str
    fingerprint: RunFingerprint
    kernels: tuple[KernelRecord, ...]
    machine_start: str | None = None


@dataclass(frozen=True)
class RunRecord:
    context: RunContext
    status: str  # the check's verdict word (passed, failed, error)
    exit_code: int
    perfgate_version: str
    results: tuple[ResultRecord, ...]

    def digest(self) -> str:
        """The payload's identity: everything but when it was recorded, so that storing one
        run again later (a retried CI step) is the same run."""
        doc = _plain(self)
        doc["context"] = {k: v for k, v in vars(self.context).items() if k != "recorded_at"}
        for result in doc["results"]:
            for kernel in result["kernels"]:
                # A kernel without a finding digests as schema version 1 wrote it: a run kept
                # before findings were stored loads back with the digest it was stored under.
                if kernel["finding"] is None:
                    del kernel["finding"]
            # Likewise a result without a machine start digests as schema version 4 wrote it.
            if result["machine_start"] is None:
                del result["machine_start"]
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def metric_count(self) -> int:
        return sum(len(k.metrics) for r in self.results for k in r.kernels)

    @property
    def kernel_count(self) -> int:
        return sum(len(r.kernels) for r in self.results)


# Records whose fields are all plain values: their __dict__ is what asdict() would copy.
_LEAVES = (RunContext, RunFingerprint, MetricRecord, Finding)


def _plain(v: Any) -> Any:
    """The JSON text asdict() would give, without its deep copies: a run's digest is computed
    on every store, and asdict() took 38 ms of a 2,368-metric run's 58
    (benchmarks/history_scale.py). Leaves are shared, not copied: read, never written."""
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, _LEAVES):
        return vars(v)
    if is_dataclass(v):
        return {f.name: _plain(getattr(v, f.name)) for f in fields(v)}
    return v
