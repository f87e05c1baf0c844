"""`perfgate baseline record`: a baseline from captures of a good build, written atomically;
and the check that text kept in a baseline (--reason, --by) comes back as it was given."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.baseline.dump import dump_baseline
from perfgate.baseline.model import Baseline
from perfgate.common.errors import UsageError
from perfgate.common.fileio import check_outputs, write_text_atomic
from perfgate.ingest import read_captures
from perfgate.metrics.values import check_values
from perfgate.usecases.console import Line, Outcome

if TYPE_CHECKING:
    # Loaded where they are used: a check needs none of them (docs/scale.md).
    from perfgate.lifecycle.record import RecordResult, RecordSettings


@dataclass(frozen=True)
class RecordRequest:
    capture_files: tuple[str, ...]
    output: str
    settings: RecordSettings
    overwrite: bool = False  # replace an existing baseline (its hand edits are lost)
    # Full captures of the same build beside gate captures: the diagnosis side only.
    diagnosis_files: tuple[str, ...] = ()
    # The scope of captures made by hand, declared (`--scope`): ncu's launch filters or "all".
    scope: str | None = None


# YAML reads these as line breaks; a baseline's text would not come back as it was given.
_UNICODE_BREAKS = {"\x85": "a NEL (U+0085)", "\u2028": "a U+2028", "\u2029": "a U+2029"}


def check_kept_text(option: str, value: str | None) -> None:
    """Text that perfgate keeps in a baseline (--reason, --by) must come back as it was given:
    bytes that are not UTF-8 (Python hands them over as lone surrogates) and Unicode line
    separators are refused, before anything is written."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"{option}: not UTF-8 text (an undecodable byte at character {exc.start + 1}); "
            "a baseline holds UTF-8 text only"
        ) from exc
    for ch, what in _UNICODE_BREAKS.items():
        if ch in value:
            raise UsageError(
                f"{option}: {what} character at character {value.index(ch) + 1}, which YAML "
                "reads as a line break; use a plain newline"
            )


def _one_time_basis(paths: Sequence[str], gate_files: Sequence[str]) -> None:
    """Captures of one record share a time basis: a gate capture's durations run 2-4% longer
    than a full capture's (docs/capture.md), so files of both would give a baseline whose
    durations match neither."""
    from perfgate.baseline.fingerprint import bases_of
    from perfgate.ingest.meta import FULL, GATE, read_meta

    bases = bases_of(paths, {p: read_meta(p) for p in paths}, gate_files)
    if len(bases) > 1:
        raise UsageError(
            f"gate captures ({', '.join(bases[GATE])}) and full captures "
            f"({', '.join(bases[FULL])}) in one record: their durations differ by 2-4% "
            "(docs/capture.md); record the baseline from captures of the same phase (all "
            "perfgate capture --phases gate, or all --phases full)",
            bases[GATE][0],
        )


def _declare_scope(baseline: Baseline, text: str) -> Baseline:
    """The baseline with the scope its captures were made with, as declared: a hand capture
    has no sidecar to say it, and launch counts compare only within one scope."""
    from perfgate.ingest.scope import declared

    scope = declared(text)
    if scope is None:
        raise UsageError(
            f"--scope {text!r}: give `all` (no launch filter) or the ncu launch filters the "
            "captures were made with, e.g. --scope '--nvtx-include step/'"
        )
    known = baseline.gpu.scope
    if known is not None and known != scope:
        raise UsageError(
            f"--scope {text!r} ({scope}): the captures' sidecars say they were scoped "
            f"{known}; leave --scope out for captures of perfgate capture"
        )
    return replace(baseline, fingerprint=replace(baseline.gpu, scope=scope))


def run_record(request: RecordRequest) -> RecordResult:
    from perfgate.lifecycle.record import record

    check_kept_text("--reason", request.settings.reason)
    for path in request.capture_files:  # each file's name is kept in the provenance
        check_kept_text(f"the capture file name {path!r}", Path(path).name)
    if Path(request.output).exists() and not request.overwrite:
        raise UsageError(
            "exists; re-record it keeping its hand edits with perfgate baseline update -b "
            f"{request.output} -c CAPTURE..., or replace it with --overwrite",
            request.output,
        )
    capture = read_captures(request.capture_files)
    if capture.gate:
        _one_time_basis(capture.paths, capture.gate_files)
    check_values(capture)
    diagnosis = None
    if request.diagnosis_files:
        from perfgate.ingest.meta import DIAGNOSIS, GATE, read_meta

        for path in request.diagnosis_files:  # read_captures would ask for its gate capture
            if read_meta(path).phase == DIAGNOSIS:
                raise UsageError(
                    "a --diagnosis-capture is a diagnosis capture of perfgate capture --phases "
                    "auto (its sidecar says so): it holds only the kernels that failed a check, "
                    "a launch or two each; give a full capture of the same build (perfgate "
                    "capture --phases full)",
                    path,
                )
        diagnosis = read_captures(request.diagnosis_files)
        if diagnosis.gate:
            raise UsageError(
                "a --diagnosis-capture is a gate capture: give a full capture of the same "
                "build (perfgate capture --phases full), whose metrics the gate set lacks",
                next(p for p in diagnosis.paths if read_meta(p).phase == GATE),
            )
        gpus = {la.device for la in capture.launches if la.device}
        other = {la.device for la in diagnosis.launches if la.device} - gpus
        if other and gpus:
            raise UsageError(
                f"a --diagnosis-capture of another GPU ({', '.join(sorted(other))}; the "
                f"captures: {', '.join(sorted(gpus))}): its metrics would explain another chip",
                diagnosis.paths[0],
            )
        check_values(diagnosis)
    result = record(capture, request.settings, diagnosis)
    if request.scope is not None:
        result = replace(result, baseline=_declare_scope(result.baseline, request.scope))
    write_text_atomic(request.output, dump_baseline(result.baseline))
    return result


def run_record_command(request: RecordRequest, quiet: bool = False) -> Outcome:
    """`perfgate baseline record`: refuse an output that is an input, record, and say what was
    written (`quiet`: only the warnings, and the metrics asked for by name that were not
    recorded)."""
    check_outputs([request.output], (*request.capture_files, *request.diagnosis_files))
    result = run_record(request)
    from perfgate.reports.format import counted

    kernels_n = len(result.baseline.kernels)
    metrics_n = sum(len(k.metrics) for k in result.baseline.kernels)
    said: list[Line] = []
    if not quiet:
        said.append(
            Line(
                f"wrote {request.output}: {counted(kernels_n, 'kernel')}, "
                f"{counted(metrics_n, 'metric')}"
            )
        )
        said += [Line(f"note: {note}", err=True) for note in result.notes]
    said += [Line(f"warning: {warning}", err=True) for warning in result.warnings]
    if request.settings.metrics:  # asked for by name: say where a metric could not be recorded
        said += [Line(f"  skipped {line}", err=True) for line in result.skipped]
    return Outcome(tuple(said))
