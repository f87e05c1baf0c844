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


# The PyTorch model's captures on an H200 (tests/data/h200/real/README.md): three runs of each
# build. The build `torch-redundant` launches this add twice; `torch-flash` once.
H200_REAL = ROOT / "tests" / "data" / "h200" / "real"
ADD_2X = (
    "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<char *, 3>> [grid 16384x1x1]"
)


def run_args(build: str) -> list[str]:
    """`-c FILE` for each of the three runs of a build under tests/data/h200/real."""
    return [a for i in (1, 2, 3) for a in ("-c", str(H200_REAL / f"{build}-run{i}.csv"))]


def cli_ok(*args: str) -> None:
    """Run perfgate's command line in-process; it must succeed."""
    from click.testing import CliRunner

    from perfgate.cli import main

    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(autouse=True)
def _fresh_regex_budget() -> None:
    """Each test starts with the whole time budget of the user's regexes, as each command
    does (perfgate.common.patterns: one budget per command, not per pattern)."""
    from perfgate.common import patterns

    patterns.reset_budget()
