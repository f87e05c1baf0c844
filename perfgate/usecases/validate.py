"""`perfgate baseline validate`: each file given (each baseline of a folder given) loaded and
checked against the schema and the metric catalog, every problem said."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.common.errors import ExitCode, PerfgateError
from perfgate.common.exhaustive import never
from perfgate.usecases.choices import DataFormat
from perfgate.usecases.console import Document, Line, Outcome


@dataclass(frozen=True)
class ValidateRequest:
    paths: tuple[str, ...]  # baseline files and folders of them
    fmt: DataFormat = DataFormat.TEXT
    quiet: bool = False  # text: only the problems


def run_validate(request: ValidateRequest) -> Outcome:
    """Text: `ok FILE: N kernels` for each file that loads, its problems as errors; json: one
    document of both (reports/validation.py). Exit 2 on any problem."""
    from perfgate.baseline.load import load_baseline
    from perfgate.baseline.selection import expand
    from perfgate.reports.format import counted
    from perfgate.reports.validation import Validated, render_json

    results: list[Validated] = []
    for given in request.paths:
        try:
            files = [p.path for p in expand((given,))]
        except PerfgateError as exc:  # a folder with no baseline in it
            results.append(Validated(given, problems=tuple(exc.lines())))
            continue
        for path in files:
            try:
                baseline = load_baseline(path)
            except PerfgateError as exc:
                results.append(Validated(path, problems=tuple(exc.lines())))
                continue
            results.append(Validated(path, len(baseline.kernels)))
    problems = tuple(line for r in results for line in r.problems)
    code = ExitCode.INPUT_ERROR if problems else ExitCode.OK
    if request.fmt is DataFormat.JSON:
        return Outcome((Document(render_json(results)),), code)
    if request.fmt is DataFormat.TEXT:
        ok = (
            ()
            if request.quiet
            else tuple(
                Line(f"ok {r.path}: {counted(r.kernels, 'kernel')}")
                for r in results
                if r.kernels is not None
            )
        )
        return Outcome(ok, code, errors=problems)
    never(request.fmt)
