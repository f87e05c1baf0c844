"""The column paths a check takes for speed give the answers of the plain paths they stand in
for (docs/scale.md): measuring from a LaunchTable (perfgate.metrics.columns) against measuring launch
by launch, and reading rows cut by perfgate.ingest.quoted against pandas reading the file.
Both are held equal on every bundled real capture, and on the edge cases each one routes back
to the plain path."""

from __future__ import annotations

import dataclasses
import gzip
import math
from collections.abc import Mapping
from pathlib import Path

import pytest

from perfgate.common.errors import CaptureError
from perfgate.common.frozen import maker
from perfgate.identity.grouping import group_launches
from perfgate.ingest import MetricSelection, raw_scan, read_capture
from perfgate.ingest.launches import Capture, Launch
from perfgate.judge.comparison import Comparison, State
from perfgate.judge.states import KernelState
from perfgate.lifecycle.record import RecordSettings, record
from perfgate.metrics.catalog import CATALOG_LIST, lookup
from perfgate.metrics.columns import LaunchTable
from perfgate.metrics.measure import Measured, Unavailable, measure
from perfgate.metrics.stalls import STALL_REASONS
from perfgate.verdicts.check import check

DATA = Path(__file__).parents[1] / "data"
CAPTURES = sorted(p for p in DATA.rglob("*") if p.name.endswith((".csv", ".csv.gz")))
METRICS = [
    *(m.name for m in CATALOG_LIST),
    *(f"stall.{r}" for r in STALL_REASONS),
    *(f"stall_cpi.{r}" for r in STALL_REASONS),
]


def _plain(path: Path, **kw: object) -> Capture:
    """The capture as pandas reads the file itself (no rows cut by the scan)."""
    original = raw_scan._cut_fields
    raw_scan._cut_fields = lambda header, wanted: None
    try:
        return read_capture(path, **kw)  # type: ignore[arg-type]
    finally:
        raw_scan._cut_fields = original


def _same(a: Measured | Unavailable, b: Measured | Unavailable) -> bool:
    """Equal, NaN equal to NaN (a Measured may hold one from the per-launch path)."""
    if a == b:
        return True
    if not (isinstance(a, Measured) and isinstance(b, Measured)):
        return False
    fields = [f.name for f in dataclasses.fields(Measured)]
    for name in fields:
        x, y = getattr(a, name), getattr(b, name)
        if x != y and not (
            isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        ):
            return False
    return True


def test_there_are_real_captures_to_compare() -> None:
    assert len(CAPTURES) >= 50


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_measuring_from_columns_equals_measuring_launch_by_launch(path: Path) -> None:
    try:
        capture = read_capture(path)
    except CaptureError:
        return  # a capture kept for its error: nothing to measure
    groups = group_launches(capture.launches)
    table = LaunchTable(capture.launches, [g.launches for g in groups])
    asked = 0
    for index, group in enumerate(groups):
        launches = sorted(group.launches, key=lambda la: la.index)
        rows = table.kernel(index, next((la.cc for la in launches if la.cc), None))
        assert rows is not None
        for name in METRICS:
            defn = lookup(name)
            first = measure(defn, launches, capture.columns)
            reasons = first.reasons if isinstance(first, Measured) and first.reasons else None
            group_name = first.group if isinstance(first, Measured) else None
            plain = measure(defn, launches, capture.columns, group_name, reasons)
            fast = measure(defn, launches, capture.columns, group_name, reasons, rows)
            assert _same(plain, fast), (name, group.key.name, plain, fast)
            asked += isinstance(plain, Measured)
    assert asked or not groups


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_reading_cut_rows_equals_pandas_reading_the_file(path: Path) -> None:
    wanted = MetricSelection({"gpu__time_duration.sum", "launch__registers_per_thread",
                              "smsp__inst_executed.sum", "dram__bytes_read.sum"})  # fmt: skip
    for selection in (wanted, None):
        try:
            fast = read_capture(path, selection)
        except CaptureError as exc:
            with pytest.raises(CaptureError) as plain_error:
                _plain(path, wanted=selection)
            assert str(plain_error.value) == str(exc)
            continue
        assert fast == _plain(path, wanted=selection)


def _rows(tmp_path: Path, body: str, name: str = "c.csv") -> Path:
    """A capture made from the first two launch rows of a real one, with `body` replacing
    its rows: {row0} and {row1} stand for those rows as ncu wrote them (synthetic, derived
    from tests/data/h100/zoo-good-full-run1.csv.gz)."""
    text = gzip.decompress((DATA / "h100" / "zoo-good-full-run1.csv.gz").read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    head = "".join(lines[: at + 2])  # preamble, header, units row
    path = tmp_path / name
    path.write_text(head + body.format(row0=lines[at + 2], row1=lines[at + 3]), newline="")
    return path


@pytest.mark.parametrize(
    "body",
    [
        "{row0}{row1}",
        "{row0}\n\n{row1}",  # blank lines between rows
        "{row0}{row1}==PROF== Disconnected from process 1\n",
        "{row0}{row1}".replace("\n", "\r\n"),  # CRLF
        "{row0}{row1}".rstrip("\n"),  # no line feed at the end
    ],
)
def test_cut_rows_and_pandas_agree_on_the_forms_ncu_writes(tmp_path: Path, body: str) -> None:
    path = _rows(tmp_path, body)
    wanted = MetricSelection({"gpu__time_duration.sum", "launch__registers_per_thread"})
    fast = read_capture(path, wanted)
    assert len(fast.launches) == 2
    assert fast == _plain(path, wanted=wanted)


def test_a_quote_inside_a_field_sends_the_file_to_pandas(tmp_path: Path) -> None:
    # The kernel name field gets an escaped quote: the row's quotes are no longer the
    # fields' bounds, so nothing may be cut by position.
    body = "{row0}{row1}"
    path = _rows(tmp_path, body)
    text = path.read_text()
    text = text.replace("zoo_coalescing(", 'zoo_""coalescing(', 1)
    path.write_text(text, newline="")
    layout = raw_scan.scan(
        lambda: path.open("rb"), str(path), MetricSelection({"gpu__time_duration.sum"})
    )
    assert layout.cut is None and layout.rows == 2
    capture = read_capture(path, MetricSelection({"gpu__time_duration.sum"}))
    assert any('zoo_"coalescing(' in la.name for la in capture.launches)


def test_the_cut_holds_only_the_wanted_columns_and_the_identity(tmp_path: Path) -> None:
    path = _rows(tmp_path, "{row0}{row1}")
    layout = raw_scan.scan(
        lambda: path.open("rb"), str(path), MetricSelection({"gpu__time_duration.sum"})
    )
    assert layout.cut is not None
    header = layout.cut.split(b"\n", 1)[0].decode()
    assert '"gpu__time_duration.sum"' in header and '"Kernel Name"' in header
    assert "launch__registers_per_thread" not in header
    assert layout.cut.count(b"\n") == 3  # header and two rows


def _launch(index: int, values: Mapping[str, object], name: str = "k") -> Launch:
    return Launch(index, name, name, (1, 1, 1), (1, 1, 1), values, cc="9.0")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 2.0, 3.0, 4.0],  # even count: the mean of the middle two
        [5.0, None, 1.0],  # a launch without a value
        [5.0, "n/a", 1.0, float("nan")],  # a text and a NaN read as no value
        [None, None],  # no value at all: the per-launch path words why
        [1.0, float("inf"), 2.0],  # infinite: left to the per-launch path
        [0.1, 0.2, 0.30000000000000004],
        [1e308, 1e308],  # the mean of two huge values overflows in both paths alike
    ],
)
def test_column_statistics_match_the_per_launch_median(values: list[object]) -> None:
    column = "gpu__time_duration.sum"
    launches = [_launch(i, {column: v}) for i, v in enumerate(values)]
    columns = frozenset({column})
    table = LaunchTable(launches, [launches, launches[:1], []])
    for name in ("duration", "launches"):
        defn = lookup(name)
        plain = measure(defn, launches, columns)
        fast = measure(defn, launches, columns, rows=table.kernel(0, "9.0"))
        assert _same(plain, fast), (values, plain, fast)
    assert table.kernel(2, "9.0") is None  # an empty group has no rows


def test_ratio_total_and_stall_shares_from_columns() -> None:
    ld = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    req = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
    fam = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
    rows = [
        {ld: 8.0, req: 2.0, fam.format("long_scoreboard"): 3.0, fam.format("wait"): 1.0,
         fam.format("selected"): 2.0},
        {ld: 0.0, req: 0.0, fam.format("long_scoreboard"): 0.0, fam.format("wait"): 0.0,
         fam.format("selected"): 0.0},  # nothing stalled: no share vector
        {ld: 5.0, req: 0.0, fam.format("long_scoreboard"): 1.0, fam.format("wait"): 3.0,
         fam.format("selected"): 0.0},  # requests 0, sectors not: no ratio
    ]  # fmt: skip
    launches = [_launch(i, r) for i, r in enumerate(rows)]
    columns = frozenset(k for r in rows for k in r)
    table = LaunchTable(launches, [launches])
    kernel = table.kernel(0, "9.0")
    reasons = ("long_scoreboard", "wait")
    for name in ("sectors_per_request_ld", "dominant_stall", "stall.wait",
                 "stall_cpi.wait", "stall_cpi.long_scoreboard"):  # fmt: skip
        defn = lookup(name)
        chosen = reasons if defn.stall is not None and not name.startswith("stall_cpi") else None
        plain = measure(defn, launches, columns, reasons=chosen)
        fast = measure(defn, launches, columns, reasons=chosen, rows=kernel)
        assert isinstance(plain, Measured), (name, plain)
        assert _same(plain, fast), (name, plain, fast)


PAIRS = [
    ("h100/zoo-good-full-run1.csv.gz", "h100/zoo-good-full-run2.csv.gz"),  # every kernel passes
    ("h100/zoo-good-full-run1.csv.gz", "h100/zoo-bad-full-run1.csv.gz"),  # regressions
    ("h100/zoo-good-short-run1.csv", "h100/zoo-bad-short-run2.csv"),
    ("h100/torch-short-run1.csv", "h100/torch-short-run2.csv"),
    ("h100/torch-short-run1.csv", "h100/torch-full-run1.csv.gz"),  # other metrics captured
]


@pytest.mark.parametrize(("recorded", "checked"), PAIRS)
def test_a_check_is_the_same_with_and_without_the_column_paths(recorded: str, checked: str) -> None:
    baseline = record(read_capture(DATA / recorded), RecordSettings()).baseline
    capture = read_capture(DATA / checked)
    fast = check(baseline, capture)
    original = LaunchTable.kernel
    LaunchTable.kernel = lambda self, group, cc: None  # type: ignore[method-assign]
    try:
        plain = check(baseline, capture)
    finally:
        LaunchTable.kernel = original  # type: ignore[method-assign]
    assert fast == plain
    assert fast.verdicts


def test_the_pairs_hold_kernels_that_pass_and_kernels_that_regress() -> None:
    states = set()
    for recorded, checked in PAIRS[:2]:
        baseline = record(read_capture(DATA / recorded), RecordSettings()).baseline
        states |= {v.state for v in check(baseline, read_capture(DATA / checked)).verdicts}
    assert {KernelState.PASS, KernelState.REGRESSED} <= states


def test_maker_builds_what_the_dataclass_builds() -> None:
    make = maker(Comparison)
    built = make(kernel="k", metric="m", state=State.PASS, baseline=1.0, current=2.0)
    assert built == Comparison("k", "m", State.PASS, 1.0, current=2.0)
    assert make.required == {"kernel", "metric", "state"}  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.metric = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        maker(int)
