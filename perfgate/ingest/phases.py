"""Captures of the two phases of `perfgate capture` read as one (docs/capture.md).

A gate capture holds the one-pass gate set of every baselined kernel; a diagnosis capture the
rich set of a launch or two of the kernels that failed the gate. Checked together
(`check -c gate.csv -c gate.diagnosis.csv`), the diagnosis capture lends its metrics to the
gate capture's launches of the same kernel and nothing more: its launches never count as
launches, total time or program time, and its file is no capture file of the check (its
scope, a `--launch-count` of the failing kernels, is not the gate's). Which file is which is
read from the sidecar (`phase`); a file without one is a full capture, as by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from perfgate.common.errors import CaptureError
from perfgate.ingest.launches import Capture, Launch, Value, merge
from perfgate.ingest.meta import DIAGNOSIS, GATE, read_meta
from perfgate.ingest.names import unqualified

_Key = tuple[str, object, object]


def linked(paths: Sequence[str]) -> list[str]:
    """`paths` and the diagnosis captures their gate sidecars name (perfgate capture
    --phases auto writes the link), each once."""
    out = list(paths)
    seen: set[Path] | None = None  # resolved once, and only when a gate sidecar links one
    for p in paths:
        try:
            meta = read_meta(p)
        except CaptureError:
            continue  # said when the capture is read; the outputs' check comes first
        if meta.phase == GATE and meta.diagnosis:
            beside = Path(p).with_name(meta.diagnosis)
            if seen is None:
                seen = {Path(o).resolve() for o in out}
            if beside.exists() and beside.resolve() not in seen:
                out.append(str(beside))
                seen.add(beside.resolve())
    return out


def read_phased(paths: Sequence[str], read: Callable[[str], Capture]) -> Capture:
    paths = linked(paths)
    phases = {p: read_meta(p).phase for p in paths}
    diagnosis = [p for p in paths if phases[p] == DIAGNOSIS]
    main = [p for p in paths if phases[p] != DIAGNOSIS]
    if diagnosis and not main:
        raise CaptureError(
            "a diagnosis capture (its sidecar says so) only completes a gate capture: pass "
            "the gate capture too (check -c GATE.csv -c GATE.diagnosis.csv)",
            diagnosis[0],
        )
    captures = []
    for p in main:
        capture = read(p)
        captures.append(replace(capture, gate=True) if phases[p] == GATE else capture)
    merged = merge(captures)
    if not diagnosis:
        return merged
    return fold_diagnosis(merged, merge([read(p) for p in diagnosis]))


def _mean(values: list[Value]) -> Value:
    numbers = [v for v in values if isinstance(v, float)]
    if numbers:
        return sum(numbers) / len(numbers)
    return next((v for v in values if v is not None), None)


def fold_diagnosis(main: Capture, diagnosis: Capture) -> Capture:
    """`main` with the metrics it lacks taken from the diagnosis launches of the same kernel
    (name and shape, else name): the mean of those launches, for every launch of the kernel."""
    # By name as printed, else without qualifiers: ncu printed a diagnosis capture's names
    # without namespaces where the gate capture had them (names.unqualified).
    by_key: dict[_Key, list[Launch]] = {}
    by_name: dict[str, list[Launch]] = {}
    for la in diagnosis.launches:
        bare = unqualified(la.name)
        for name in dict.fromkeys((la.name, bare)):
            by_key.setdefault((name, la.grid, la.block), []).append(la)
            by_name.setdefault(name, []).append(la)
    extra = diagnosis.columns - main.columns
    launches: list[Launch] = []
    used: set[str] = set()
    for la in main.launches:
        bare = unqualified(la.name)
        donors = (
            by_key.get((la.name, la.grid, la.block))
            or by_key.get((bare, la.grid, la.block))
            or by_name.get(la.name)
            or by_name.get(bare)
        )
        if not donors:
            launches.append(la)
            continue
        used.add(la.name)
        metrics = dict(la.metrics)
        units = dict(la.units)
        for column in extra:
            value = _mean([d.metrics.get(column) for d in donors])
            if value is not None:
                metrics[column] = value
                if column in donors[0].units:
                    units[column] = donors[0].units[column]
        launches.append(
            replace(
                la, metrics=metrics, units=units,
                rules=la.rules or donors[0].rules, lines=la.lines or donors[0].lines,
            )
        )  # fmt: skip
    warnings = list(main.warnings)
    if diagnosis.launches and not used:
        warnings.append(
            f"no kernel of the diagnosis capture {', '.join(diagnosis.paths)} is in "
            f"{', '.join(main.paths)}: its metrics were not used"
        )
    return replace(
        main,
        launches=tuple(launches),
        columns=main.columns | extra,
        warnings=tuple(warnings),
        diagnosis_paths=main.diagnosis_paths + diagnosis.paths,
    )
