"""Issue 23: 1,500 capture files of a few dozen launches took 20-50 s, each paying pandas'
read_csv call and per-column unique() (20-30 ms a file). Small files are read with the csv
module; the launches must be the very ones the pandas reading gives, on every real capture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate.common.errors import CaptureError
from perfgate.ingest import raw_csv, read_capture
from perfgate.ingest.launches import Capture
from tests.conftest import DATA, ROOT

CAPTURES = sorted(
    p
    for p in (ROOT / "tests" / "data").rglob("*")
    if p.name.endswith((".csv", ".csv.gz")) and p.is_file()
)
# What a check reads of a capture: a few of its columns (the scan cuts them out of the rows).
_WANTED = ("gpu__time_duration", "launch__", "smsp__warp_issue_stalled_", "dram__bytes",
           "sm__throughput", "smsp__inst_executed.sum", "device__attribute_display_name")  # fmt: skip


def _wanted(column: str) -> bool:
    return column.startswith(_WANTED)


def _read(path: Path) -> Capture | str:
    try:
        return read_capture(path, _wanted)
    except CaptureError as e:
        return str(e)


def test_the_real_captures_are_many() -> None:
    assert len(CAPTURES) > 200


def test_the_csv_reading_gives_the_launches_pandas_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    read_small, small = raw_csv._read_small, []

    def counted(*args: Any) -> raw_csv.Table | None:
        table = read_small(*args)
        small.append(table is not None)
        return table

    monkeypatch.setattr(raw_csv, "_read_small", counted)
    fast = {p: _read(p) for p in CAPTURES}
    assert sum(small) > 200  # the csv module read them
    monkeypatch.setattr(raw_csv, "SMALL_ROWS", -1)  # every file through pandas
    taken = 0
    for path in CAPTURES:
        slow = _read(path)
        assert fast[path] == slow, path
        taken += isinstance(slow, Capture)
    assert taken > 200


def test_a_small_capture_is_read_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pandas.read_csv called for a small capture")

    monkeypatch.setattr(pd, "read_csv", refuse)
    capture = read_capture(DATA / "zoo-good-short-run1.csv", _wanted)
    assert len(capture.launches) > 10
    assert capture.launches[0].metrics["gpu__time_duration.sum"] is not None
