"""What the history's pictures cost: `perfgate history html` (the page of one baseline) and
`perfgate check --history` (trends in the markdown report), on a real history.

The history is tests/history_corpus.py's: the field corpus' transformers decoder, 45 kernels
of 38 metrics, checked and kept twelve times (`perfgate history add`: six machine starts of
the unchanged build and two real changes). Longer histories repeat those twelve records under
new run ids and times (the store's API, no new check), so a page of N runs holds the same
series N/12 times over.

    python benchmarks/history_pictures.py               # 12, 60 and 240 runs
    python benchmarks/history_pictures.py --runs 1200   # another size

Every run drawn (`--last 0`); `perfgate history html` draws the newest 60 by default. Each
time is the best of three wall-clock runs in this process, change-point detection included.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfgate.history.store import open_store  # noqa: E402
from perfgate.judge.policy import parse_fail_on  # noqa: E402
from perfgate.usecases.check import CheckRequest  # noqa: E402
from perfgate.usecases.check_command import (  # noqa: E402
    CheckCommand,
    ReportPaths,
    run_check_command,
)
from perfgate.usecases.history import run_history_html  # noqa: E402
from perfgate.usecases.outputs import GitHubEnvironment  # noqa: E402
from tests import history_corpus  # noqa: E402


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _grown(db: Path, target: Path, runs: int) -> None:
    """A history of `runs` runs: the twelve records of `db` over and over, a minute apart."""
    with open_store(str(db), create=False) as store:
        records = [r for r in map(store.load, store.run_ids()) if r is not None]
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with open_store(str(target)) as store:
        for n in range(runs):
            record = records[n % len(records)]
            when = (start + timedelta(minutes=n)).isoformat(timespec="microseconds")
            context = replace(record.context, run_id=f"grown-{n:05d}", recorded_at=when)
            store.store(replace(record, context=context))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, action="append", help="history sizes (default: 12, 60, 240)"
    )
    sizes = parser.parse_args().runs or [12, 60, 240]
    work = Path(tempfile.mkdtemp(prefix="perfgate-history-pictures-"))
    baseline, db = history_corpus.build(work)
    gh = GitHubEnvironment(False, None, None, str(ROOT))
    print(
        "| runs | page | charts | kernels | page bytes | per chart | check, no history | check --history |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for runs in sizes:
        history = work / f"history-{runs}.sqlite"
        _grown(db, history, runs)
        print(_row(runs, baseline, history, work, gh))


def _row(runs: int, baseline: Path, history: Path, work: Path, gh: GitHubEnvironment) -> str:
    page = work / f"page-{runs}.html"
    made = run_history_html(str(history), None, str(page), last=0)
    page_s = _best(lambda: run_history_html(str(history), None, str(page), last=0))
    size = page.stat().st_size

    def check(with_history: bool) -> None:
        command = CheckCommand(
            CheckRequest((str(baseline),), (str(history_corpus.REGRESSED_CHANGE),)),
            policy=parse_fail_on("never"),
            reports=ReportPaths(markdown=str(work / "report" / "summary.md")),
            history=str(history) if with_history else None,
        )
        run_check_command(command, gh, lambda _: None)

    plain_s, trend_s = _best(lambda: check(False)), _best(lambda: check(True))
    return (
        f"| {runs} | {page_s:.2f} s | {made.charts} | {made.kernels} | {size / 1e6:.1f} MB "
        f"| {size / made.charts / 1e3:.1f} kB | {plain_s:.2f} s | {trend_s:.2f} s |"
    )


if __name__ == "__main__":
    main()
