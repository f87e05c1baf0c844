"""Where a baseline's numbers came from: the GPU, its compute capability, the ncu version and
driver, clock and cache control, and the metrics and stall reasons that were captured.

Counters are exact on one GPU and meaningless across two (an H100 and an H200 differ in SM
count, memory and clocks), so a check refuses a capture from another GPU or compute
capability unless told otherwise; ncu version, driver, clock-control and cache-control
differences are warned about (metric names and source-counter units move between ncu versions;
locked and unlocked clocks give different durations; flushed and warm caches give different
memory traffic: one kernel's DRAM read bytes were 20 times larger with ncu's
`--cache-control all` than with `none`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.common.errors import UsageError
from perfgate.ingest.launches import Capture, Launch
from perfgate.ingest.meta import FULL, GATE, CaptureMeta, read_meta, time_basis
from perfgate.ingest.scope import ALL
from perfgate.ingest.scope import differ as scope_differs

GpuKey = tuple[str | None, str | None]  # (GPU name, compute capability)


@dataclass(frozen=True)
class Fingerprint:
    gpu: str | None = None
    cc: str | None = None
    ncu: str | None = None
    driver: str | None = None
    clock_control: str | None = None
    cache_control: str | None = None  # ncu --cache-control (all: flushed before each pass)
    metrics: tuple[str, ...] = ()  # the raw metrics captured that the baseline reads
    stall_family: str | None = None
    stall_reasons: tuple[str, ...] = ()
    # Which launches the captures hold (perfgate.ingest.scope: ncu's launch filters); None:
    # unknown. Launch counts compare only within one scope.
    scope: str | None = None
    # The metric set whose durations the baseline holds (perfgate.ingest.meta.time_basis):
    # "gate" (recorded from `perfgate capture --phases gate`) or "full" (absent: full).
    # Durations compare only between captures of one basis (docs/capture.md).
    time_basis: str = FULL

    @property
    def key(self) -> GpuKey:
        return self.gpu, self.cc

    @property
    def known(self) -> bool:
        return self.gpu is not None

    def describe(self) -> str:
        """ "NVIDIA H200 (cc 9.0)", or "an unknown GPU"."""
        return describe_gpu(self.key)


def describe_gpu(key: GpuKey) -> str:
    gpu, cc = key
    if gpu is None:
        return "an unknown GPU" + (f" (cc {cc})" if cc else "")
    return f"{gpu} (cc {cc})" if cc else gpu


def to_document(fp: Fingerprint) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "gpu": fp.gpu,
        "cc": fp.cc,
        "ncu": fp.ncu,
        "driver": fp.driver,
        "clock_control": fp.clock_control,
    }
    if fp.cache_control is not None:
        doc["cache_control"] = fp.cache_control
    if fp.scope is not None:
        doc["scope"] = fp.scope
    if fp.time_basis != FULL:
        doc["time_basis"] = fp.time_basis
    if fp.stall_family is not None:
        doc["stall_family"] = fp.stall_family
        doc["stall_reasons"] = list(fp.stall_reasons)
    doc["metrics"] = list(fp.metrics)
    return doc


def from_document(doc: Mapping[str, Any] | None, provenance: Mapping[str, Any]) -> Fingerprint:
    """The baseline's fingerprint; a baseline written before fingerprints existed has its GPU
    under provenance.gpu (or nothing at all: then every field is unknown)."""
    if doc:
        return Fingerprint(
            gpu=doc.get("gpu"),
            cc=doc.get("cc"),
            ncu=doc.get("ncu"),
            driver=doc.get("driver"),
            clock_control=doc.get("clock_control"),
            cache_control=doc.get("cache_control"),
            metrics=tuple(doc.get("metrics") or ()),
            stall_family=doc.get("stall_family"),
            stall_reasons=tuple(doc.get("stall_reasons") or ()),
            scope=doc.get("scope"),
            time_basis=doc.get("time_basis") or FULL,
        )
    gpu = provenance.get("gpu")
    if isinstance(gpu, Mapping):
        return Fingerprint(gpu=gpu.get("name"), cc=gpu.get("cc"))
    return Fingerprint()


def launch_key(launch: Launch) -> GpuKey:
    return launch.device, launch.cc


def by_gpu(launches: Iterable[Launch]) -> dict[GpuKey, list[Launch]]:
    """Launches grouped by the GPU they ran on, in the order the GPUs first appear."""
    out: dict[GpuKey, list[Launch]] = {}
    for launch in launches:
        out.setdefault(launch_key(launch), []).append(launch)
    return out


def _agreed(values: Sequence[str | None], what: str, notes: list[str]) -> str | None:
    known = sorted({v for v in values if v is not None})
    if len(known) > 1:
        notes.append(f"the captures disagree on the {what}: {', '.join(known)}")
        return None
    return known[0] if known else None


def of_capture(
    capture: Capture, key: GpuKey, metas: Mapping[str, CaptureMeta] | None = None
) -> tuple[Fingerprint, list[str]]:
    """The fingerprint of a capture's launches on one GPU, with notes where its files disagree
    (two ncu versions, say). `metas` are the files' sidecars (read when not given)."""
    files = sorted({la.source for la in capture.launches if launch_key(la) == key})
    metas = metas if metas is not None else {p: read_meta(p) for p in files}
    chosen = [metas[p] for p in files if p in metas]
    notes: list[str] = [
        f"{p}: the program exited with code {metas[p].program_exit_code} while it was "
        "captured (perfgate capture --allow-program-failure): kernels may be missing or partial"
        for p in files
        if p in metas and metas[p].program_exit_code not in (None, 0)
    ]
    fp = Fingerprint(
        gpu=key[0],
        cc=key[1],
        ncu=_agreed([m.ncu_version for m in chosen], "ncu version", notes),
        driver=_agreed([m.driver for m in chosen], "driver", notes),
        clock_control=_agreed([m.clock_control for m in chosen], "clock control", notes),
        cache_control=_agreed([m.cache_control for m in chosen], "cache control", notes),
        scope=_scope(files, metas, notes),
        time_basis=_basis(files, metas, capture.gate_files),
    )
    return fp, notes


# The time basis of captures of both bases: their durations compare with no baseline's.
MIXED = "mixed"


def _basis(
    files: Sequence[str], metas: Mapping[str, CaptureMeta], gate_files: Sequence[str] = ()
) -> str:
    """The files' time basis: gate when every file is a gate capture (its sidecar says so,
    or reading it found the gate set alone: perfgate.ingest.phases), full when none is, else
    MIXED (record refuses such files; a check judges their durations against no baseline)."""
    bases = {
        GATE if p in gate_files else (time_basis(metas[p]) if p in metas else FULL) for p in files
    }
    if len(bases) > 1:
        return MIXED
    return GATE if bases == {GATE} else FULL


def bases_of(
    files: Sequence[str], metas: Mapping[str, CaptureMeta], gate_files: Sequence[str] = ()
) -> dict[str, list[str]]:
    """The capture files by time basis (gate, full), in their order."""
    out: dict[str, list[str]] = {}
    for p in files:
        basis = GATE if p in gate_files else (time_basis(metas[p]) if p in metas else FULL)
        out.setdefault(basis, []).append(p)
    return out


def _scope(files: Sequence[str], metas: Mapping[str, CaptureMeta], notes: list[str]) -> str | None:
    """The files' one scope; None when unknown. Files of several scopes have none that their
    launch counts share: the note says so, and the scope is the first file's (which differs
    from any baseline's but one)."""
    scopes = [metas[p].scope if p in metas else None for p in files]
    known = list(dict.fromkeys(s for s in scopes if s is not None))
    if len(known) > 1 or (known and None in scopes):
        shown = ", ".join(known + (["unknown"] if None in scopes else []))
        notes.append(
            f"the captures disagree on their scope (ncu launch filters): {shown}; their launch "
            "counts do not add up to one run's"
        )
        return "mixed: " + "; ".join(known)
    return known[0] if known else None


def scope_difference(baseline: Fingerprint, capture: Fingerprint) -> str | None:
    """Why the capture's launch counts cannot be compared with the baseline's (another
    scope); None when they can."""
    if not scope_differs(baseline.scope, capture.scope):
        return None
    return (
        f"the capture's scope is {_scoped(capture.scope)}, the baseline's {_scoped(baseline.scope)}"
        ": launch counts (launches, total_time) are compared only between captures of one "
        "scope; capture with the baseline's launch filters, or record the baseline again"
    )


def basis_difference(baseline: Fingerprint, capture: Fingerprint) -> str | None:
    """Why the capture's durations cannot be compared with the baseline's (another clock
    control: ncu locked the clocks on one side only; another metric set: a gate capture's
    short kernels run 2-4% longer than a full capture's); None when they can."""
    clocks = baseline.clock_control, capture.clock_control
    if None not in clocks and clocks[0] != clocks[1]:
        return (
            f"the capture ran with ncu --clock-control {capture.clock_control}, the baseline "
            f"with {baseline.clock_control}: durations compare only at one clock control "
            "(docs/capture.md)"
        )
    if baseline.time_basis == capture.time_basis:
        return None
    return OTHER_BASIS


OTHER_BASIS = (
    "durations of a gate capture and of a full capture differ by 2-4% (docs/capture.md): "
    "record the baseline from captures of the same phase"
)


def _scoped(scope: str | None) -> str:
    if scope is None:
        return "unknown"
    return scope if scope == ALL else f"`{scope}`"


def for_record(
    capture: Capture,
    read_metrics: Iterable[str],
    stall_family: str | None,
    stall_reasons: Sequence[str],
) -> tuple[Fingerprint, list[str]]:
    """The fingerprint of a new baseline. One baseline is for one GPU: captures from several
    are refused rather than averaged together."""
    gpus = by_gpu(capture.launches)
    if len(gpus) > 1:
        listed = "; ".join(
            f"{describe_gpu(k)}: {', '.join(sorted({la.source for la in v}))}"
            for k, v in gpus.items()
        )
        raise UsageError(
            f"the captures come from {len(gpus)} GPUs ({listed}); a baseline is for one GPU: "
            "record one baseline per GPU from that GPU's captures, and check with "
            "--baseline DIR (docs/baselines.md)"
        )
    key = next(iter(gpus)) if gpus else (None, None)
    fp, notes = of_capture(capture, key)
    columns = capture.columns
    fp = Fingerprint(
        gpu=fp.gpu,
        cc=fp.cc,
        ncu=fp.ncu,
        driver=fp.driver,
        clock_control=fp.clock_control,
        cache_control=fp.cache_control,
        scope=fp.scope,
        time_basis=fp.time_basis,
        metrics=tuple(sorted(m for m in set(read_metrics) if m in columns)),
        stall_family=stall_family,
        stall_reasons=tuple(stall_reasons),
    )
    return fp, notes


def differences(baseline: Fingerprint, capture: Fingerprint) -> tuple[list[str], list[str]]:
    """(what forbids the comparison, what only deserves a warning). A field unknown on either
    side is not a difference: a capture made by hand has no ncu version."""
    blocking: list[str] = []
    if baseline.gpu is not None and capture.gpu is not None and baseline.gpu != capture.gpu:
        blocking.append(f"GPU {capture.gpu}, the baseline's {baseline.gpu}")
    if baseline.cc is not None and capture.cc is not None and baseline.cc != capture.cc:
        blocking.append(f"compute capability {capture.cc}, the baseline's {baseline.cc}")
    warnings: list[str] = []

    def differ(field: str) -> bool:
        mine, theirs = getattr(baseline, field), getattr(capture, field)
        return mine is not None and theirs is not None and mine != theirs

    if differ("ncu"):
        warnings.append(
            f"the capture was made with ncu {capture.ncu}, the baseline with ncu {baseline.ncu}: "
            "metric names and source-counter units can change between ncu versions; "
            "re-record the baseline with this ncu (perfgate baseline update) if values moved"
        )
    if differ("driver"):
        warnings.append(
            f"the capture ran on driver {capture.driver}, the baseline on {baseline.driver}"
        )
    if differ("cache_control"):
        warnings.append(
            f"the capture used ncu --cache-control {capture.cache_control}, the baseline "
            f"{baseline.cache_control}: memory traffic (DRAM and L2 bytes) and durations are "
            "not comparable (capture with the baseline's cache control, or record it again)"
        )
    return blocking, warnings
