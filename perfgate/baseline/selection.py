"""Which baseline judges which launches: one baseline per GPU, chosen by fingerprint.

`--baseline` takes files and directories (a directory stands for the baselines directly in it,
`*.yaml` and `*.yml`). Each capture's launches go to the baseline recorded on their GPU (name
and compute capability); a launch from a GPU without a baseline stops the check (exit 2) rather
than being dropped, unless the user allows one baseline to judge another GPU's captures.
"""

from __future__ import annotations

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
from perfgate.common.errors import UsageError
from perfgate.ingest.launches import Capture, Launch

SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class BaselinePath:
    path: str
    from_directory: bool  # found in a directory rather than named


def expand(paths: Sequence[str]) -> list[BaselinePath]:
    """The baseline files `paths` name, directories expanded (sorted, not recursive)."""
    out: list[BaselinePath] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(c for c in p.iterdir() if c.suffix in SUFFIXES and c.is_file())
            if not found:
                raise UsageError(
                    "holds no baseline (*.yaml, *.yml) directly inside it; record one with "
                    "perfgate baseline record -c CAPTURE... -o DIR/GPU.yaml",
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
    """Give each GPU's launches to the baseline of that GPU. `named[i]`: baseline i was named on
    the command line (a named baseline with no capture of its GPU is still checked: all its
    kernels are missing); one found in a directory is then only noted."""
    by_key: dict[GpuKey, Baseline] = {}
    for b in baselines:
        if not b.gpu.known:
            continue
        other = by_key.get(b.gpu.key)
        if other is not None:
            raise UsageError(
                f"two baselines for {b.gpu.describe()}: {other.path} and {b.path}; a check takes "
                "one baseline per GPU (merge them, or run one check per baseline)"
            )
        by_key[b.gpu.key] = b
    taken: dict[str, list[Launch]] = {b.path: [] for b in baselines}
    warnings: dict[str, list[str]] = {b.path: [] for b in baselines}
    problems: list[str] = []
    single = baselines[0] if len(baselines) == 1 else None
    for key, launches in by_gpu(capture.launches).items():
        chosen = by_key.get(key)
        if chosen is None and key[0] is not None:
            # A baseline whose fingerprint leaves the compute capability unknown still
            # matches by name.
            seen = Fingerprint(gpu=key[0], cc=key[1])
            chosen = next(
                (b for b in baselines if b.gpu.known and not differences(b.gpu, seen)[0]), None
            )
        if chosen is None and single is not None:
            if not single.gpu.known:
                chosen = single
                warnings[single.path].append(
                    f"{single.path} does not say which GPU it was recorded on, so captures "
                    "from any GPU are checked against it; re-record it or run perfgate "
                    "baseline update to give it a fingerprint"
                )
            elif key[0] is None:
                chosen = single
                warnings[single.path].append(
                    f"{_files(launches)} does not say which GPU it ran on (no Device column): "
                    f"checked against {single.path}, recorded on {single.gpu.describe()}"
                )
            elif allow_other_gpu:
                chosen = single
                warnings[single.path].append(
                    f"{_files(launches)} ran on {describe_gpu(key)}, {single.path} was recorded "
                    f"on {single.gpu.describe()}: compared anyway (--allow-other-gpu); counters "
                    "differ between GPUs"
                )
        if chosen is None:
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
        taken[chosen.path].extend(launches)
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
        else:
            notes.append(f"{b.path} ({b.gpu.describe()}): no capture from this GPU; not checked")
    return Plan(tuple(assignments), tuple(notes))


def _only(capture: Capture, launches: list[Launch]) -> Capture:
    return replace(capture, launches=tuple(launches))
