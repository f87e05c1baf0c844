"""Which baseline judges which launches: baselines per GPU, chosen by fingerprint.

`--baseline` takes files and folders. A folder stands for every baseline in it and in its
subfolders (`*.yaml`, `*.yml`; hidden ones skipped), so `baselines/` finds the layout
`baselines/<gpu>/<workload>.yaml`. Each capture's launches go to the baselines recorded on
their GPU (name and compute capability); a launch from a GPU without a baseline stops the check
(exit 2) rather than being dropped, unless the user allows one baseline to judge another GPU's
captures.

Several baselines of one GPU (one per workload, or a gate and a full capture set of one
workload): each capture file is judged by the one that fits it: the one that knows most of the
kernels it ran; on a tie, the one recorded with most of the metrics it holds (fewest missing);
a tie after that is refused as ambiguous. Files judged by one baseline are pooled (runs of one
workload). A baseline found in a folder that judges no file is only noted; a baseline named as
a file is always checked (with no capture for it, its kernels are missing).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baseline.fingerprint import (
    Fingerprint,
    GpuKey,
    basis_difference,
    by_gpu,
    describe_gpu,
    differences,
    of_capture,
    scope_difference,
)
from perfgate.baseline.model import Baseline
from perfgate.common import patterns
from perfgate.common.errors import UsageError
from perfgate.ingest.launches import Capture, Launch
from perfgate.ingest.names import normalise

SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class BaselinePath:
    path: str
    from_directory: bool  # found in a directory rather than named


def expand(paths: Sequence[str]) -> list[BaselinePath]:
    """The baseline files `paths` name, each folder's found in it and its subfolders (sorted
    by path), each file once."""
    out: list[BaselinePath] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = below(p)
            if not found:
                raise UsageError(
                    "holds no baseline (*.yaml, *.yml) in it or its subfolders; record one with "
                    "perfgate baseline record -c CAPTURE... -o DIR/GPU/WORKLOAD.yaml",
                    raw,
                )
            out.extend(BaselinePath(str(c), True) for c in found)
        else:
            out.append(BaselinePath(raw, False))
    seen: set[str] = set()
    unique = []
    for b in out:
        key = str(Path(b.path).resolve())
        if key not in seen:
            seen.add(key)
            unique.append(b)
    return unique


def below(folder: Path) -> list[Path]:
    """The baselines in `folder` and its subfolders, sorted by path: `*.yaml` and `*.yml`
    files, hidden files and folders (`.git`, `.cache`) skipped, links to folders not followed."""
    found: list[Path] = []
    for top, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for name in files:
            path = Path(top) / name
            if not name.startswith(".") and path.suffix in SUFFIXES and path.is_file():
                found.append(path)
    return sorted(found)


@dataclass(frozen=True)
class Assignment:
    """A baseline and the launches it judges."""

    baseline: Baseline
    capture: Capture
    warnings: tuple[str, ...] = ()
    # Why the capture's launch counts are not comparable with the baseline's (another
    # scope: perfgate.baseline.fingerprint.scope_difference); "" when they are.
    other_scope: str = ""
    # Why the capture's durations are not comparable with the baseline's (another time basis:
    # a gate capture against a full one, perfgate.baseline.fingerprint.basis_difference).
    other_basis: str = ""


@dataclass(frozen=True)
class Plan:
    assignments: tuple[Assignment, ...]
    notes: tuple[str, ...] = ()  # baselines of a directory that no capture is for


def _files(launches: Sequence[Launch]) -> str:
    return ", ".join(sorted({launch.source for launch in launches}))


def _listing(baselines: Sequence[Baseline]) -> str:
    return "; ".join(f"{b.path} is for {b.gpu.describe()}" for b in baselines)


def assign(
    baselines: Sequence[Baseline],
    named: Sequence[bool],
    capture: Capture,
    allow_other_gpu: bool = False,
) -> Plan:
    """Give each GPU's launches to the baselines of that GPU (each capture file to the one
    that fits it, when there are several: module docstring). `named[i]`: baseline i was named
    on the command line (a named baseline that judges no capture is still checked: all its
    kernels are missing); one found in a folder is then only noted."""
    by_key: dict[GpuKey, list[Baseline]] = {}
    for b in baselines:
        if b.gpu.known:
            by_key.setdefault(b.gpu.key, []).append(b)
    taken: dict[str, list[Launch]] = {b.path: [] for b in baselines}
    warnings: dict[str, list[str]] = {b.path: [] for b in baselines}
    lost_to: dict[str, list[str]] = {b.path: [] for b in baselines}  # fitted another better
    problems: list[str] = []
    single = baselines[0] if len(baselines) == 1 else None
    for key, launches in by_gpu(capture.launches).items():
        candidates = by_key.get(key, [])
        if not candidates and key[0] is not None:
            # A baseline whose fingerprint leaves the compute capability unknown still
            # matches by name.
            seen = Fingerprint(gpu=key[0], cc=key[1])
            candidates = [b for b in baselines if b.gpu.known and not differences(b.gpu, seen)[0]]
        if not candidates and single is not None:
            if not single.gpu.known:
                candidates = [single]
                warnings[single.path].append(
                    f"{single.path} does not say which GPU it was recorded on, so captures "
                    "from any GPU are checked against it; re-record it or run perfgate "
                    "baseline update to give it a fingerprint"
                )
            elif key[0] is None:
                candidates = [single]
                warnings[single.path].append(
                    f"{_files(launches)} does not say which GPU it ran on (no Device column): "
                    f"checked against {single.path}, recorded on {single.gpu.describe()}"
                )
            elif allow_other_gpu:
                candidates = [single]
                warnings[single.path].append(
                    f"{_files(launches)} ran on {describe_gpu(key)}, {single.path} was recorded "
                    f"on {single.gpu.describe()}: compared anyway (--allow-other-gpu); counters "
                    "differ between GPUs"
                )
        if not candidates:
            fix = (
                "record a baseline on this GPU (perfgate baseline record) and pass it or its "
                "directory with --baseline"
            )
            if single is not None:
                fix += ", or pass --allow-other-gpu to compare across GPUs anyway"
            problems.append(
                f"{_files(launches)}: captured on {describe_gpu(key)}, and no baseline is for "
                f"that GPU ({_listing(baselines)}): {fix}"
            )
            continue
        if len(candidates) == 1:
            taken[candidates[0].path].extend(launches)
            continue
        for source, mine in _by_file(launches).items():
            chosen = fitting(candidates, source, mine, describe_gpu(key))
            taken[chosen.path].extend(mine)
            for other in candidates:
                if other is not chosen:
                    lost_to[other.path].append(chosen.path)
    if problems:
        raise UsageError(problems[0], problems=problems)
    assignments: list[Assignment] = []
    notes: list[str] = []
    for b, was_named in zip(baselines, named, strict=True):
        mine = taken[b.path]
        if mine:
            fp, disagreements = of_capture(capture, (mine[0].device, mine[0].cc))
            _, differ = differences(b.gpu, fp)
            extra = warnings[b.path] + differ + disagreements
            other_scope = scope_difference(b.gpu, fp) or ""
            other_basis = basis_difference(b.gpu, fp) or ""
            assignments.append(
                Assignment(b, _only(capture, mine), tuple(extra), other_scope, other_basis)
            )
        elif was_named or len(baselines) == 1:
            assignments.append(Assignment(b, _only(capture, []), tuple(warnings[b.path])))
        elif lost_to[b.path]:
            better = ", ".join(dict.fromkeys(lost_to[b.path]))
            notes.append(
                f"{b.path} ({b.gpu.describe()}): the captures from this GPU fit {better} "
                "better; not checked"
            )
        else:
            notes.append(f"{b.path} ({b.gpu.describe()}): no capture from this GPU; not checked")
    return Plan(tuple(assignments), tuple(notes))


def _by_file(launches: Sequence[Launch]) -> dict[str, list[Launch]]:
    out: dict[str, list[Launch]] = {}
    for launch in launches:
        out.setdefault(launch.source, []).append(launch)
    return out


@dataclass(frozen=True)
class Fit:
    """How well a baseline fits one capture file's launches."""

    known: int  # its kernels the file ran (by name, function or regex)
    kernels: int  # its kernels
    lacking: int  # metrics it was recorded with that the file does not hold

    @property
    def rank(self) -> tuple[int, int]:
        return self.known, -self.lacking

    def describe(self) -> str:
        return (
            f"knows {self.known} of its kernels, recorded with {self.lacking} metric"
            f"{'' if self.lacking == 1 else 's'} it lacks"
        )


def fit(baseline: Baseline, launches: Sequence[Launch]) -> Fit:
    """How well `baseline` fits these launches (one capture file's, of its GPU)."""
    first: dict[str, Launch] = {}
    for launch in launches:
        first.setdefault(launch.name, launch)
    names = set(first)
    normalised = {normalise(n) for n in names}
    functions = {la.function for la in first.values()}
    held: set[str] = set()
    for launch in first.values():
        held.update(m for m, v in launch.metrics.items() if v is not None)
    known = 0
    for kernel in baseline.kernels:
        match = kernel.match
        if match.name is not None:
            hit = match.name in names or normalise(match.name) in normalised
        elif match.function is not None:
            hit = match.function in functions
        else:
            hit = match.regex is not None and any(patterns.search(match.regex, n) for n in names)
        known += hit
    lacking = sum(1 for m in baseline.gpu.metrics if m not in held)
    return Fit(known, len(baseline.kernels), lacking)


def fitting(
    candidates: Sequence[Baseline], source: str, launches: Sequence[Launch], gpu: str
) -> Baseline:
    """Of several baselines of one GPU, the one that judges this capture file: the one that
    knows most of its kernels, then the one recorded with fewest metrics it lacks; a tie is
    refused (which to check it against is the user's call)."""
    fits = [(fit(b, launches), b) for b in candidates]
    best = max(f.rank for f, _ in fits)
    top = [(f, b) for f, b in fits if f.rank == best]
    if len(top) == 1:
        return top[0][1]
    (fa, a), (_, b) = top[:2]
    if fa.known == 0:
        why = f"neither knows a kernel {source} ran"
    else:
        why = f"both fit {source} alike (each {fa.describe()})"
    raise UsageError(
        f"two baselines for {gpu}: {a.path} and {b.path}; {why}: name the one to check it "
        "against with --baseline FILE, or keep baselines of the same kernels in separate folders"
    )


def _only(capture: Capture, launches: list[Launch]) -> Capture:
    return replace(capture, launches=tuple(launches))
