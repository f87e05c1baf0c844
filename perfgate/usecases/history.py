"""`perfgate history` (docs/history.md): the check's own use case judges; these keep its
result on a database, read a kernel's series back, prune, and draw a baseline's page."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfgate.common.errors import ExitCode, UsageError
from perfgate.common.exhaustive import never
from perfgate.common.fileio import (
    check_outputs,
    write_text_atomic,
)
from perfgate.usecases.check import CheckRequest, run_check
from perfgate.usecases.choices import DataFormat
from perfgate.usecases.console import Document, Line, Outcome

if TYPE_CHECKING:
    from perfgate.history.detect import DetectRequest


@dataclass(frozen=True)
class HistoryAdd:
    db: str
    check: CheckRequest
    given: Any  # perfgate.history.context.GivenContext (loaded only by history commands)
    fmt: DataFormat = DataFormat.TEXT


@dataclass(frozen=True)
class HistoryStored:
    run_id: str
    stored: bool  # False: this very run was kept already (nothing changed)
    kernels: int
    metrics: int
    status: str


def _keep(db: str, record: Any) -> HistoryStored:
    from perfgate.history.store import open_store

    with open_store(db) as store:
        stored = store.store(record)
    return HistoryStored(
        record.context.run_id, stored, record.kernel_count, record.metric_count, record.status
    )


def run_history_add(request: HistoryAdd) -> HistoryStored:
    """Check as `perfgate check` does, then keep the result with its context."""
    from perfgate.history.context import context
    from perfgate.history.records import from_report
    from perfgate.history.store import now

    report = run_check(request.check)
    return _keep(request.db, from_report(report, context(request.given, os.environ, now())))


def run_history_import(db: str, paths: Sequence[str], given: Any) -> list[HistoryStored]:
    """Keep the results of JSON reports written by `perfgate check --format json`."""
    import json

    from perfgate.history.context import imported_context
    from perfgate.history.records import from_json

    if given.run_id is not None and len(paths) > 1:
        raise UsageError(f"--run-id names one run; {len(paths)} JSON files were given")
    out = []
    for path in paths:
        try:
            content = Path(path).read_bytes()
            mtime = Path(path).stat().st_mtime
        except OSError as exc:
            raise UsageError(f"cannot read: {exc.strerror or exc}", path) from exc
        try:
            doc = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise UsageError(f"not a JSON check result: {exc}", path) from exc
        try:
            record = from_json(doc, imported_context(given, content, mtime))
        except UsageError as exc:
            raise UsageError(exc.message, path) from exc
        out.append(_keep(db, record))
    return out


def run_history_show(db: str, kernel: str, metric: str | None, fmt: DataFormat) -> str:
    """A kernel's series per fingerprint, rendered (text with sparklines, or json)."""
    from perfgate.history import render
    from perfgate.history.queries import series
    from perfgate.history.store import open_store

    with open_store(db, create=False) as store:
        found = series(store, kernel, metric)
    if fmt is DataFormat.JSON:
        return render.to_json(kernel, found)
    if fmt is DataFormat.TEXT:
        return render.text(kernel, found)
    never(fmt)


def run_history_prune(db: str, older_than_days: float | None, keep: int | None) -> list[str]:
    """Delete runs older than the days given and beyond the newest `keep`: the run ids."""
    from datetime import datetime, timedelta, timezone

    from perfgate.history.store import open_store

    if older_than_days is None and keep is None:
        raise UsageError("say what to prune: --older-than DAYS, --keep N, or both")
    before = None
    if older_than_days is not None:
        cut = datetime.now(timezone.utc) - timedelta(days=older_than_days)
        before = cut.isoformat(timespec="microseconds")
    with open_store(db, create=False) as store:
        return store.prune(before=before, keep=keep)


@dataclass(frozen=True)
class HistoryPage:
    path: str
    runs: int
    kernels: int
    charts: int


def run_history_html(db: str, baseline: str | None, output: str, last: int = 60) -> HistoryPage:
    """One baseline's newest `last` runs (0: all) as a static HTML page
    (perfgate.history.html), written atomically to `output`, which may not be the history."""
    from perfgate.history import html
    from perfgate.history.store import is_url, open_store
    from perfgate.history.trends import detected, page_trends

    check_outputs([("-o", output)], [] if is_url(db) else [db])
    with open_store(db, create=False) as store:
        # Only the newest `last` runs of this baseline are loaded (a history of a year of merges
        # need not be read to draw its last 60).
        trends = page_trends(store, baseline, last)
        source = store.where
    page = html.page(trends, source=source, change_points=detected)
    write_text_atomic(output, page.text)
    return HistoryPage(output, trends.runs, page.kernels, page.charts)


# What each history command says: a line for people, or one JSON document (docs/history.md).


def _stored(stored: HistoryStored) -> Line:
    if stored.stored:
        return Line(
            f"stored run {stored.run_id}: {stored.kernels} kernels, {stored.metrics} metrics "
            f"(the check {stored.status})"
        )
    return Line(f"run {stored.run_id} is kept already: nothing changed")


def _kept(stored: Sequence[HistoryStored], fmt: DataFormat) -> Outcome:
    if fmt is DataFormat.JSON:
        from perfgate.history.render import stored_json

        return Outcome((Document(stored_json(*stored)),))
    if fmt is DataFormat.TEXT:
        return Outcome(tuple(_stored(s) for s in stored))
    never(fmt)


def history_add_outcome(request: HistoryAdd) -> Outcome:
    """Exit 0 once kept, whatever the check's verdict (perfgate check is the gate)."""
    return _kept([run_history_add(request)], request.fmt)


@dataclass(frozen=True)
class HistoryImport:
    db: str
    paths: tuple[str, ...]  # JSON results of perfgate check
    given: Any  # perfgate.history.context.GivenContext
    fmt: DataFormat = DataFormat.TEXT


def history_import_outcome(request: HistoryImport) -> Outcome:
    return _kept(run_history_import(request.db, request.paths, request.given), request.fmt)


@dataclass(frozen=True)
class HistoryShow:
    db: str
    kernel: str
    metric: str | None = None
    fmt: DataFormat = DataFormat.TEXT


def history_show_outcome(request: HistoryShow) -> Outcome:
    text = run_history_show(request.db, request.kernel, request.metric, request.fmt)
    return Outcome((Document(text),))


@dataclass(frozen=True)
class HistoryPrune:
    db: str
    older_than_days: float | None = None
    keep: int | None = None
    fmt: DataFormat = DataFormat.TEXT


def history_prune_outcome(request: HistoryPrune) -> Outcome:
    gone = run_history_prune(request.db, request.older_than_days, request.keep)
    if request.fmt is DataFormat.JSON:
        from perfgate.history.render import pruned_json

        return Outcome((Document(pruned_json(gone)),))
    if request.fmt is DataFormat.TEXT:
        return Outcome((Line(f"deleted {len(gone)} run{'s' if len(gone) != 1 else ''}"),))
    never(request.fmt)


@dataclass(frozen=True)
class HistoryDetect:
    db: str
    request: DetectRequest
    fail_on_change: bool = False  # exit 1 when a gated metric changed for the worse
    fmt: DataFormat = DataFormat.TEXT


def history_detect_outcome(request: HistoryDetect) -> Outcome:
    from perfgate.history import detect_report
    from perfgate.history.detect import run_detect

    if request.request.run_id is not None and not request.request.drift:
        raise UsageError("--run names the run --drift holds to the history")
    found = run_detect(request.db, request.request)
    if request.fmt is DataFormat.JSON:
        text = detect_report.to_json(found)
    elif request.fmt is DataFormat.TEXT:
        text = detect_report.text(found)
    else:
        never(request.fmt)
    failed = request.fail_on_change and found.failing
    return Outcome((Document(text),), ExitCode.GATE_FAILED if failed else ExitCode.OK)


@dataclass(frozen=True)
class HistoryHtml:
    db: str
    baseline: str | None
    output: str
    last: int = 60
    fmt: DataFormat = DataFormat.TEXT


def history_html_outcome(request: HistoryHtml) -> Outcome:
    page = run_history_html(request.db, request.baseline, request.output, request.last)
    if request.fmt is DataFormat.JSON:
        from perfgate.history.render import page_json

        return Outcome((Document(page_json(page)),))
    if request.fmt is DataFormat.TEXT:
        return Outcome(
            (
                Line(
                    f"wrote {page.path}: {page.kernels} kernels, {page.charts} charts, "
                    f"{page.runs} runs"
                ),
            )
        )
    never(request.fmt)
