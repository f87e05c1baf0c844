from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "h100"


def data(name: str) -> Path:
    path = DATA / name
    assert path.exists(), f"missing test capture {path}"
    return path


def raw_rows(name: str) -> tuple[list[str], list[str], list[list[str]]]:
    """Header, units and launch rows of a real capture, read with the csv module alone: an
    oracle independent of perfgate's reader."""
    import gzip

    p = data(name)
    raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
    rows = list(csv.reader(io.StringIO(raw.decode())))
    at = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    header, units = rows[at], rows[at + 1]
    launches = [r for r in rows[at + 2 :] if len(r) == len(header)]
    return header, units, launches


@pytest.fixture
def copy_data(tmp_path: Path):
    def _copy(name: str) -> Path:
        dest = tmp_path / name
        shutil.copy(data(name), dest)
        return dest

    return _copy
