"""Captures of the two phases of `perfgate capture` read as one (docs/capture.md).

A gate capture holds the one-pass gate set of every baselined kernel; a diagnosis capture the
rich set of a launch or two of the kernels that failed the gate. Checked together
(`check -c gate.csv -c gate.diagnosis.csv`), the diagnosis capture lends its metrics to the
gate capture's launches of the same kernel and nothing more: its launches never count as
launches, total time or program time, and its file is no capture file of the check (its
scope, a `--launch-count` of the failing kernels, is not the gate's). Which file is which is
read from the sidecar (`phase`); a file without one is a full capture, as by hand.

A diagnosis capture explains the gate capture's kernels only if it is of the same GPU and the
same build, so a check refuses it otherwise (one CaptureError naming the file, exit 2), never
lending another chip's or another build's counters to a verdict (`same_program`):
- another GPU: a device name (or compute capability) of its launches that none of the gate
  capture's launches has (an H200 diagnosis capture beside an H100 gate capture);
- another build: a kernel it holds that the gate capture does not, by name (namespaces and
  class qualifiers aside: ncu prints a diagnosis capture's names without them). `perfgate
  capture --phases auto` takes the diagnosis in the gate capture's scope, of kernels the gate
  capture failed, with a kernel filter of their functions, which the gate capture's filter
  (every baselined kernel's function) contains: each kernel it holds ran in the gate capture's
  range, so one that the gate capture does not hold is another program or build. Only where
  the gate capture was cut by `--launch-count` (its sidecar's scope) may the diagnosis, whose
  count is spent on fewer kernels, reach launches past the gate capture's last: there the rule
  compares kernel functions (the name without template arguments and parameters), not names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from perfgate.common.errors import CaptureError
from perfgate.ingest.gateset import looks_like_gate
from perfgate.ingest.launches import Capture, Launch, Value, merge
from perfgate.ingest.meta import DIAGNOSIS, GATE, SUFFIX, CaptureMeta, read_meta
from perfgate.ingest.names import function_name, unqualified

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
    metas = {p: read_meta(p) for p in paths}
    phases = {p: meta.phase for p, meta in metas.items()}
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
        phase = phases[p]
        if phase is None and not read_meta(p).path and looks_like_gate(capture.columns):
            # A gate capture that lost its sidecar (renamed, copied alone): its durations are
            # a gate capture's whatever its name, and judged as such.
            phase = GATE
            capture = replace(
                capture,
                warnings=(
                    *capture.warnings,
                    f"{p}: no sidecar ({Path(p).name}{SUFFIX}); read as a gate capture, since "
                    "its metrics are exactly the one-pass gate set",
                ),
            )
        if phase == GATE:
            capture = replace(capture, gate=True, gate_files=(p,))
        start = metas[p].machine_start
        if start:
            capture = replace(capture, starts=((p, start),))
        captures.append(capture)
    merged = merge(captures)
    if not diagnosis:
        return merged
    cut = any("--launch-count" in (metas[p].scope or "") for p in main)
    lent = []
    for p in diagnosis:
        capture = read(p)
        same_program(merged, capture, p, cut, [metas[m] for m in main], metas[p])
        lent.append(capture)
    return fold_diagnosis(merged, merge(lent))


def _gpus(launches: Sequence[Launch], metas: Sequence[CaptureMeta]) -> tuple[set[str], set[str]]:
    """The device names and compute capabilities of some launches, else of their sidecars."""
    names = {la.device for la in launches if la.device} or {m.gpu for m in metas if m.gpu}
    ccs = {la.cc for la in launches if la.cc} or {m.cc for m in metas if m.cc}
    return names, ccs


def _function(name: str) -> str:
    return function_name(unqualified(name)).rsplit("::", 1)[-1]


def same_program(
    main: Capture,
    diagnosis: Capture,
    path: str,
    cut: bool = False,
    main_metas: Sequence[CaptureMeta] = (),
    meta: CaptureMeta | None = None,
) -> None:
    """Refuse the diagnosis capture `path` (one CaptureError naming it) where it is of another
    GPU or another build than the gate capture `main` (the module's docstring says the rule).
    `cut`: the gate capture was cut by --launch-count, so kernels compare by function."""
    gpus, ccs = _gpus(main.launches, main_metas)
    theirs, their_ccs = _gpus(diagnosis.launches, [meta] if meta is not None else [])
    other = sorted(theirs - gpus) if gpus else []
    other_cc = sorted(their_ccs - ccs) if ccs else []
    if other or other_cc:
        said = ", ".join(sorted(theirs)) or "?"
        mine = ", ".join(sorted(gpus)) or "?"
        raise CaptureError(
            f"a diagnosis capture of another GPU: it ran on {said} (compute capability "
            f"{', '.join(sorted(their_ccs)) or '?'}), the gate capture "
            f"{', '.join(main.paths)} on {mine} (compute capability "
            f"{', '.join(sorted(ccs)) or '?'}); its counters would explain another chip's "
            "kernels. Take the diagnosis capture on the gate capture's GPU (perfgate capture "
            "--phases auto does), or leave it out",
            path,
        )
    key = _function if cut else unqualified
    # Each name once: a capture repeats a few names over thousands of launches.
    held = {key(name) for name in {la.name for la in main.launches}}
    strangers = sorted(n for n in {la.name for la in diagnosis.launches} if key(n) not in held)
    if strangers:
        what = "kernel function" if cut else "kernel"
        shown = "; ".join(strangers[:3]) + (
            f" and {len(strangers) - 3} more" if len(strangers) > 3 else ""
        )
        raise CaptureError(
            f"a diagnosis capture of another build or program: {len(strangers)} {what}"
            f"{'s' if len(strangers) != 1 else ''} it holds never ran in the gate capture "
            f"{', '.join(main.paths)} ({shown}); a diagnosis capture lends its counters only "
            "to the kernels of the gate capture it was taken for (perfgate capture --phases "
            "auto takes both of one build). Capture both from the same build, or leave it out",
            path,
        )


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
