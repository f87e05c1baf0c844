"""The four-run floor against the data it rests on (benchmarks/pooled.py --four-runs): each
floor covers the largest change of its data with a margin no wider than it states, the docs'
tables of tuning and sealed cards are what the benchmark measures, and no check of four runs
of a sealed card raises a false alarm."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from perfgate.metrics.timefloors import four_run_floor_at

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import pooled  # noqa: E402

H200 = "NVIDIA H200"
H100 = "NVIDIA H100 80GB HBM3"
DOC = (ROOT / "docs" / "noise.md").read_text("utf-8")


@pytest.fixture(scope="module")
def h100_moves() -> dict[int, float]:
    return {
        runs: max(
            m.move for m in pooled.four_run_moves("h100", runs, pooled.FOUR_RUN_CARDS["h100"], True)
        )
        for runs in (2, 4)
    }


def test_the_h100_four_run_floor_covers_its_largest_change_with_a_margin(
    h100_moves: dict[int, float],
) -> None:
    floor = four_run_floor_at(15_000.0, H100)
    assert floor is not None
    assert 1.15 * h100_moves[4] <= floor <= 1.25 * h100_moves[4]
    # Two runs of the same cards moved past it: the floor is four runs', not two runs'.
    assert h100_moves[2] > floor


def test_the_h200_four_run_floor_covers_every_two_run_change_as_measured() -> None:
    cards = pooled.FOUR_RUN_CARDS["h200"]
    every = pooled.EVALUATED["h200"] + cards
    two = max(m.move for m in pooled.four_run_moves("h200", 2, every, True))
    four = max(m.move for m in pooled.four_run_moves("h200", 4, cards, True))
    floor = four_run_floor_at(15_000.0, H200)
    assert floor is not None and four <= two
    assert 1.15 * two <= floor <= 1.25 * two


def _row(prefix: str) -> list[str]:
    line = next(ln for ln in DOC.splitlines() if ln.startswith(f"| {prefix} |"))
    cells = [c.strip().strip("*") for c in line.strip("|").split("|")][1:]
    return [re.sub(r" \(\d+%\)$", "", c) for c in cells]


def _cells(t: pooled.Tally) -> list[str]:
    return [str(t.checks), f"{t.alarms} ({t.failed})"] + [
        f"{c}/{n}" for c, n in (t.caught.get(h, [0, 0]) for h in pooled.HEADS)
    ]


@pytest.mark.parametrize("runs", [2, 4])
@pytest.mark.parametrize(
    ("kind", "cards", "row"),
    [
        ("h100", pooled.FOUR_RUN_CARDS["h100"], "H100 xag, trios"),
        ("h200", pooled.FOUR_RUN_CARDS["h200"], "H200 xdg, trios"),
        ("h100", pooled.FOUR_RUN_SEALED["h100"], "H100 xbg, trios"),
        ("h200", pooled.FOUR_RUN_SEALED["h200"], "H200 xcg, trios"),
    ],
)
def test_the_four_run_tables_against_the_trios_are_what_the_benchmark_measures(
    kind: str, cards: tuple[str, ...], row: str, runs: int
) -> None:
    words = "four runs" if runs == 4 else "two runs"
    assert _row(f"{row}, {words}") == _cells(pooled.trio_tally(kind, cards, runs))


@pytest.mark.parametrize("runs", [2, 4])
@pytest.mark.parametrize(
    ("kind", "held_back", "row"),
    [
        ("h100", False, "H100 xag, other cards"),
        ("h100", True, "H100 xbg, xag cards"),
        ("h200", True, "H200 xcg, xdg cards"),
    ],
)
def test_the_four_run_tables_against_four_run_cards_are_what_the_benchmark_measures(
    kind: str, held_back: bool, row: str, runs: int
) -> None:
    tuning = pooled.FOUR_RUN_CARDS[kind]
    if held_back:
        pairs = [(tuning, pooled.FOUR_RUN_SEALED[kind])]
    else:
        pairs = [(tuple(c for c in tuning if c != x), (x,)) for x in tuning]
    words = "four runs" if runs == 4 else "two runs"
    assert _row(f"{row}, {words}") == _cells(pooled.card_tally(kind, pairs, runs))


def test_no_check_of_four_runs_of_a_sealed_card_raises_a_false_alarm() -> None:
    for kind in ("h100", "h200"):
        got = pooled.trio_tally(kind, pooled.FOUR_RUN_SEALED[kind], 4)
        assert got.checks == 32 and (got.alarms, got.failed) == (0, 0), got.notes
