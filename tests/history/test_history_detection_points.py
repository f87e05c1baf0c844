"""How benchmarks/history_detection.py builds main's points (docs/history.md, "Two capture
files per check on main"): with `--runs-per-point 2` a point is what `perfgate check -c run1.csv -c run2.csv`
stores, whose `duration` is the fastest launch of both runs, so the smaller of the two runs'
values. The durations below are read from the capture files' own column, not through the
benchmark, and the hand-made series' points are worked out here."""

from __future__ import annotations

import collections
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from perfgate.ingest import read_capture
from perfgate.ingest.meta import read_meta

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import history_detection as hd
from pooled import FOUR_RUN_CARDS, FOUR_RUN_SEALED, PROGRAM_SEALED
from pooled import SEALED as SEALED_FOR_POOLED

TIME = "gpu__time_duration.sum"  # ncu's column: the launch's duration in ns
# The H200 field reductions: starts of 3, 2 and 2 runs (h200-c held back; read here only to
# check the measurement, never to choose a parameter).
REDUCTIONS = hd.Corpus("H200 field", "H200", hd.FIELD / "h200", ("h200-a", "h200-b", "h200-c"),
                       "h200-c", ("reductions",))  # fmt: skip


def _fastest(paths: tuple[Path, ...]) -> dict[tuple[str, object, object], float]:
    """The fastest launch of each (name, grid, block) over the files, from the raw column."""
    out: dict[tuple[str, object, object], float] = {}
    for path in paths:
        for launch in read_capture(path).launches:
            value = launch.metrics.get(TIME)
            if isinstance(value, float):
                key = (launch.name, launch.grid, launch.block)
                out[key] = min(out.get(key, math.inf), value)
    return out


def test_two_capture_files_measure_the_fastest_launch_of_both() -> None:
    files = hd._runs(REDUCTIONS.folder / "h200-a", "reductions")
    assert len(files) == 3
    compared = 0
    for pair in hd.point_files(files, 2):
        assert len(pair) == 2 and pair[0] != pair[1]
        expected = _fastest(pair)
        got = hd.merged_values(pair, ("duration",))
        for key, values in got.items():
            if key.work is None and "duration" in values:
                assert values["duration"] == expected[key.name, key.grid, key.block]
                compared += 1
    assert compared >= 10


def test_the_two_run_point_is_the_smaller_duration_of_its_runs() -> None:
    series = hd.kernel_series(REDUCTIONS, ["duration"], held_back=True, runs_per_point=2)
    assert len(series) >= 5
    for ks in series:
        assert [len(runs) for runs in ks.starts] == [3, 2, 2]
        for runs, pairs in zip(ks.starts, ks.pairs, strict=True):
            n = len(runs)
            assert pairs == tuple(min(runs[r], runs[(r + 1) % n]) for r in range(n))
    # Each run's value is its file's fastest launch: one kernel checked against the column.
    files = hd._runs(REDUCTIONS.folder / "h200-b", "reductions")
    by_file = [_fastest((f,)) for f in files]
    ks = series[0]
    matching = [k for k in by_file[0] if k[0][:40] == ks.kernel]
    if len(matching) == 1:
        key = matching[0]
        assert ks.starts[1] == (by_file[0][key], by_file[1][key])
        assert ks.pairs[1][0] == min(by_file[0][key], by_file[1][key])


def test_tuning_starts_of_one_run_are_left_out_and_a_lone_start_is_no_corpus() -> None:
    # h200-c is held back: the tuning starts of two runs or more are h200-a and h200-b.
    tuning = hd.kernel_series(REDUCTIONS, ["duration"], held_back=False, runs_per_point=2)
    assert tuning and all(len(ks.starts) == 2 for ks in tuning)
    fam = next(c for c in hd.CORPORA if c.label == "H100 families")
    assert hd.kernel_series(fam, ["duration"], held_back=True, runs_per_point=2) == []


def test_series_of_draws_gives_each_point_the_smaller_run() -> None:
    starts = ((100.0, 104.0, 101.0), (110.0, 108.0))
    ks = hd.KernelSeries("H100", "c", "w", "k", "duration", "< 5 us", starts,
                         ((100.0, 101.0, 100.0), (108.0, 108.0)))  # fmt: skip
    at = hd.draw([3, 2], 200, np.random.default_rng(5), runs_per_point=2)
    assert len(at) == 200 and {s for s, _ in at} == {0, 1}
    one = hd.series_of(ks.table(1), at)
    two = hd.series_of(ks.table(2), at)
    for (s, r), a, b in zip(at, one, two, strict=True):
        runs = starts[s]
        assert a == runs[r]
        assert b == min(runs[r], runs[(r + 1) % len(runs)])


def test_drawn_points_take_the_faster_of_two_fresh_runs() -> None:
    starts = ((100.0, 104.0, 102.0), (110.0, 106.0))
    # Deviations from each start's mean, scaled by sqrt(n / (n - 1)).
    expected = [(-2 / 102) * math.sqrt(1.5), (2 / 102) * math.sqrt(1.5), 0.0,
                (2 / 108) * math.sqrt(2), (-2 / 108) * math.sqrt(2)]  # fmt: skip
    assert hd.deviations(starts) == pytest.approx(expected)
    at = [(0, 0), (1, 0), (1, 1), (0, 2)] * 10
    one = hd.drawn_series(starts, at, 1, np.random.default_rng(3))
    two = hd.drawn_series(starts, at, 2, np.random.default_rng(3))
    rng = np.random.default_rng(3)
    means = [statistics.fmean(runs) for runs in starts]
    for (s, _), a, b in zip(at, one, two, strict=True):
        first = int(rng.integers(0, 5))
        second = int(rng.integers(0, 4))
        second += second >= first
        assert a == pytest.approx(means[s] * (1 + expected[first]))
        assert b == pytest.approx(means[s] * (1 + min(expected[first], expected[second])))
        assert b <= a


GATE = hd.FIELD / "gate"
# The second held-back set (--held-back-gate, docs/history.md "Two capture files per check on
# main"): the gate starts of two runs never used to choose the history's parameters.
SECOND_HELD_BACK = {
    "H100": {"h100-o", "h100-p", "h100-s", "h100-t", "h100-u"},
    "H200": {"h200-g", "h200-h", "h200-i", "h200-j", "h200-k", "h200-l"},
}


def _two_run_gate_starts(gpu: str, workloads: tuple[str, ...]) -> set[str]:
    """The gate folders of this GPU holding a second run of a field workload."""
    return {
        d.name
        for d in GATE.iterdir()
        if d.is_dir()
        and d.name.startswith(gpu.lower() + "-")
        and any(len(hd._runs(d, w)) >= 2 for w in workloads)
    }


def test_the_second_held_back_set_is_every_two_run_gate_start_not_used_before() -> None:
    used = {s for c in hd.CORPORA if c.folder == GATE for s in c.starts}
    assert used == {"h100-j", "h100-k", "h100-l", "h200-e", "h200-f"}
    held = {gpu: {s for c in hd.HELD_BACK_GATE if c.gpu == gpu for s in c.starts}
            for gpu in ("H100", "H200")}  # fmt: skip
    assert held == SECOND_HELD_BACK
    # The pooled rule's sealed starts (benchmarks/pooled.py SEALED) and the cards captured
    # with four runs (FOUR_RUN_CARDS, FOUR_RUN_SEALED, PROGRAM_SEALED) came after this set was
    # evaluated: the
    # history has not read them, and they wait for its next evaluation.
    later = {
        s
        for table in (SEALED_FOR_POOLED, FOUR_RUN_CARDS, FOUR_RUN_SEALED, PROGRAM_SEALED)
        for starts in table.values()
        for s in starts
    }
    for gpu, workloads in (("H100", hd.FIELD_H100), ("H200", hd.FIELD_H200)):
        assert _two_run_gate_starts(gpu, workloads) - used - later == held[gpu], gpu
        assert not held[gpu] & later
    for corpus in hd.HELD_BACK_GATE:
        assert corpus.folder == GATE and corpus.partial and corpus.held_back == ""
        assert len(corpus.starts) == len(set(corpus.starts))
        assert corpus.workloads == (hd.FIELD_H100 if corpus.gpu == "H100" else hd.FIELD_H200)
        # No start of the set is one a corpus of the tuning or first held-back set uses.
        assert not set(corpus.starts) & {s for c in hd.CORPORA for s in c.starts}


def test_a_partial_corpus_leaves_a_start_out_of_the_workloads_it_did_not_capture() -> None:
    # h100-o captured 5 workloads, not cnn-fp32; h100-s and h100-t captured it twice.
    corpus = next(c for c in hd.HELD_BACK_GATE if c.gpu == "H100")
    assert not hd._runs(GATE / "h100-o", "cnn-fp32")
    one = replace(corpus, starts=("h100-o", "h100-s", "h100-t"), workloads=("cnn-fp32",))
    series = hd.kernel_series(one, ["duration"], held_back=True, runs_per_point=2)
    assert series and all([len(r) for r in ks.starts] == [2, 2] for ks in series)
    # A workload a single start captured makes no series.
    lone = replace(one, starts=("h100-o", "h100-s"))
    assert hd.kernel_series(lone, ["duration"], held_back=True) == []
    # A corpus that is not partial drops the workload where a start lacks it.
    assert hd.kernel_series(replace(one, partial=False), ["duration"], held_back=True) == []


def test_distinct_draws_are_uniform_without_replacement() -> None:
    rng = np.random.default_rng(5)
    seen: collections.Counter[int] = collections.Counter()
    for _ in range(4000):
        got = hd.distinct(rng, 6, 4)
        assert len(set(got)) == 4 and all(0 <= i < 6 for i in got)
        seen.update(got)
    # Each of 6 indices is in 4 of 6 draws: 2,667 of 4,000 expected, within 4 standard errors.
    assert all(
        abs(n - 4000 * 4 / 6) < 4 * math.sqrt(4000 * (4 / 6) * (2 / 6)) for n in seen.values()
    )
    assert sorted(seen) == list(range(6))


def test_four_drawn_runs_per_point_share_the_stream_and_take_the_fastest() -> None:
    """drawn_series with draws=4: every arm draws four deviations per point, one run per
    point takes the first, two the faster of the first two, four the fastest of all."""
    starts = ((100.0, 104.0, 102.0, 101.0), (110.0, 106.0, 107.0, 108.0))
    pool = hd.deviations(starts)
    at = [(0, 0), (1, 0), (1, 1), (0, 2)] * 10
    arms = {n: hd.drawn_series(starts, at, n, np.random.default_rng(7), draws=4) for n in (1, 2, 4)}
    rng = np.random.default_rng(7)
    means = [statistics.fmean(runs) for runs in starts]
    for i, (s, _) in enumerate(at):
        picks = [pool[j] for j in hd.distinct(rng, len(pool), 4)]
        for n in (1, 2, 4):
            assert arms[n][i] == pytest.approx(means[s] * (1 + min(picks[:n])))
        assert arms[4][i] <= arms[2][i] <= arms[1][i]


def test_the_third_held_back_set_is_every_four_run_card() -> None:
    """--four-run-cards: every card captured with four runs each (benchmarks/pooled.py), each
    holding four runs of every workload of the set; none is in the other corpora."""
    cards = {
        gpu: {s for table in (FOUR_RUN_CARDS, FOUR_RUN_SEALED, PROGRAM_SEALED)
              for s in table[gpu.lower()]}
        for gpu in ("H100", "H200")
    }  # fmt: skip
    for corpus in hd.FOUR_RUN_CORPORA:
        assert set(corpus.starts) == cards[corpus.gpu] and len(corpus.starts) == len(
            cards[corpus.gpu]
        )
        assert corpus.held_back == "" and not corpus.partial
        for s in corpus.starts:
            for w in corpus.workloads:
                assert len(hd._runs(corpus.folder / s, w)) == 4, (s, w)
    used = {s for c in (*hd.CORPORA, *hd.HELD_BACK_GATE) for s in c.starts}
    assert not used & {s for c in hd.FOUR_RUN_CORPORA for s in c.starts}


def test_points_drawn_from_the_best_run_take_its_level_and_the_excess_of_the_others() -> None:
    """--drawn-centre best: a start's level is its fastest run, the deviations each run's
    excess over its start's fastest (0 for that run), and a point of n runs the level times
    one plus the smallest of n drawn excesses."""
    starts = ((100.0, 104.0, 102.0, 101.0), (110.0, 106.0, 107.0, 108.0))
    pool = hd.best_deviations(starts)
    assert pool == pytest.approx([0.0, 0.04, 0.02, 0.01, 4 / 106, 0.0, 1 / 106, 2 / 106])
    assert hd.best_deviations(starts, max)[:4] == pytest.approx([-4 / 104, 0.0, -2 / 104, -3 / 104])
    at = [(0, 0), (1, 0), (1, 1), (0, 2)] * 10
    arms = {n: hd.drawn_series(starts, at, n, np.random.default_rng(7), min, 4, "best")
            for n in (1, 2, 4)}  # fmt: skip
    rng = np.random.default_rng(7)
    for i, (s, _) in enumerate(at):
        picks = [pool[j] for j in hd.distinct(rng, len(pool), 4)]
        for n in (1, 2, 4):
            assert arms[n][i] == pytest.approx(min(starts[s]) * (1 + min(picks[:n])))
        assert arms[4][i] >= min(starts[s])
    # The same draws centred on the mean (the default) give other points.
    mean = hd.drawn_series(starts, at, 4, np.random.default_rng(7), min, 4)
    assert mean != pytest.approx(arms[4])


def test_the_model_check_compares_the_drawn_spread_with_the_recorded_one() -> None:
    """--model-check on a hand-made kernel: starts whose runs are all equal have no run-to-run
    noise, so the recorded spread is the levels' and a point drawn from the best run is the
    start's level exactly, while one drawn from the mean adds nothing either: both ratios 1."""
    levels = (100.0, 102.0, 98.0, 101.0)
    ks = hd.KernelSeries("H100", "hand", "w", "k", "duration", "< 5 us",
                         tuple((v, v, v, v) for v in levels))  # fmt: skip
    lines: list[str] = []
    hd.model_check([ks], 1, lines.append)
    rows = [line.split(" | ") for line in lines[2:]]
    assert [r[3] for r in rows] == ["1", "2", "4"]
    for r in rows:
        assert r[4] == r[5] == r[6] and r[7] == "1.00" and r[8] == "1.00 |"
    # Two of the starts each had one run 8% slow: the recorded best of four sheds it; drawn
    # from the mean, their levels keep a quarter of it (104.04 and 103.02 against 100 and 98),
    # which widens the spread between starts.
    slow = {102.0, 101.0}
    noisy = replace(ks, starts=tuple((v, v * 1.08 if v in slow else v, v, v) for v in levels))
    lines = []
    hd.model_check([noisy], 1, lines.append)
    four = next(line.split(" | ") for line in lines[2:] if line.split(" | ")[3] == "4")
    assert float(four[7]) > 1.5 and float(four[8].rstrip(" |")) == 1.0


def _h100_start(card: Path) -> str:
    """The one machine start every capture of the card's folder names, all on an H100."""
    metas = [read_meta(str(p)) for p in sorted(card.glob("*.csv.gz"))]
    assert metas and all("H100" in (m.gpu or "") for m in metas), card
    ids = {m.machine_start for m in metas}
    assert len(ids) == 1 and None not in ids, card
    return ids.pop()


def test_the_fourth_held_back_set_is_every_card_of_its_folder() -> None:
    """--held-back-cards: every card of tests/data/field/history-cards, each its own machine
    start, H100, read by no other corpus of the history."""
    (corpus,) = hd.HELD_BACK_CARDS
    folder = hd.FIELD / "history-cards"
    cards = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert sorted(corpus.starts) == cards and len(cards) == 8
    assert corpus.partial and corpus.held_back == "" and corpus.gpu == "H100"
    starts = set()
    for card in cards:
        starts.add(_h100_start(folder / card))
        captured = {p.name.split("-run")[0] for p in (folder / card).glob("*.csv.gz")}
        assert captured <= set(corpus.workloads), card
    assert len(starts) == 8
    others = {s for c in (*hd.CORPORA, *hd.HELD_BACK_GATE, *hd.FOUR_RUN_CORPORA) for s in c.starts}
    assert not others & set(cards)


def test_a_series_per_start_draws_each_point_from_that_start_alone() -> None:
    """--per-start: one series per machine start, its pairs with it; drawn, every point is one
    of that start's runs."""
    ks = hd.KernelSeries("H100", "c", "w", "k", "duration", "< 5 us",
                         ((1.0, 2.0, 3.0), (10.0, 20.0)), ((1.0, 2.0, 1.0), (10.0, 10.0)))  # fmt: skip
    first, second = hd.per_start([ks])
    assert (first.starts, first.pairs) == (((1.0, 2.0, 3.0),), ((1.0, 2.0, 1.0),))
    assert (second.starts, second.pairs) == (((10.0, 20.0),), ((10.0, 10.0),))
    assert (first.kernel, first.band, second.metric) == ("k", "< 5 us", "duration")
    alone = replace(ks, pairs=())
    assert [s.pairs for s in hd.per_start([alone])] == [(), ()]
    rng = np.random.default_rng(3)
    drawn = hd.resample(second.starts, 50, rng)
    assert set(drawn) == {10.0, 20.0}


def test_the_fifth_held_back_set_is_every_card_of_its_folder() -> None:
    """--held-back-starts: every card of tests/data/field/history-starts, each its own machine
    start with a dozen runs or so of each workload, H100, read by no other corpus."""
    (corpus,) = hd.HELD_BACK_STARTS
    folder = hd.FIELD / "history-starts"
    cards = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert sorted(corpus.starts) == cards and len(cards) == 4
    assert corpus.held_back == "" and corpus.gpu == "H100"
    starts = set()
    for card in cards:
        starts.add(_h100_start(folder / card))
        for workload in corpus.workloads:
            assert len(hd._runs(folder / card, workload)) >= 11, (card, workload)
    assert len(starts) == 4
    others = {
        s
        for c in (*hd.CORPORA, *hd.HELD_BACK_GATE, *hd.FOUR_RUN_CORPORA, *hd.HELD_BACK_CARDS)
        for s in c.starts
    }
    assert not others & set(cards)
