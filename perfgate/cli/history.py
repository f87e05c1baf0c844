"""`perfgate history`: keep check results on a database and read them back; each command's
options into a request for its use case (perfgate.usecases.history)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from perfgate.cli.console import emit, guard
from perfgate.cli.main import main
from perfgate.cli.parsing import capture_files_option
from perfgate.usecases.choices import DataFormat, values

F = TypeVar("F", bound=Callable[..., Any])


@main.group("history")
def history_group() -> None:
    """Keep check results on a database; read a kernel's series back.

    Every run is kept with its context and the capture's fingerprint (docs/history.md)."""


_db_option = click.option(
    "--db", "db", required=True, metavar="FILE|URL",
    help="The history: an SQLite file (created by add and import), or a PostgreSQL "
    "database as postgresql://... (the postgres extra).",
)  # fmt: skip
_history_format_option = click.option(
    "--format", "fmt", type=click.Choice(values(DataFormat)), default=DataFormat.TEXT.value,
    show_default=True,
    help="json: one document on stdout (docs/history.md, JSON output).",
)  # fmt: skip


def _context_options(fn: F) -> F:
    for name, what in reversed(
        (
            ("--run-id", "The run's id (default: GitHub's run, attempt and job; else a new one)."),
            ("--commit", "The commit checked (default: GITHUB_SHA)."),
            ("--branch", "The branch (default: GITHUB_HEAD_REF or GITHUB_REF_NAME)."),
            ("--pull-request", "The pull request's number (default: from GITHUB_REF)."),
            ("--ci-job", "The CI job (default: GITHUB_JOB)."),
        )
    ):
        fn = click.option(name, default=None, metavar="TEXT", help=what)(fn)
    return fn


def _given(options: dict[str, Any]) -> Any:
    from perfgate.usecases.settings import GivenContext

    return GivenContext(
        options["run_id"],
        options["commit"],
        options["branch"],
        options["pull_request"],
        options["ci_job"],
    )


@history_group.command("add", short_help="Check captures and keep the result in the history.")
@_db_option
@click.option(
    "--baseline", "-b", "baselines", required=True, multiple=True, type=click.Path(),
    help="Baseline YAML file, or a directory of them; as for perfgate check.",
)  # fmt: skip
@capture_files_option("ncu capture; repeat for several runs (as for perfgate check).")
@click.option("--allow-other-gpu", is_flag=True, help="As for perfgate check: compare across GPUs.")
@_context_options
@_history_format_option
@guard
def history_add_command(
    db: str, baselines: tuple[str, ...], captures: tuple[str, ...], allow_other_gpu: bool,
    fmt: str, **context: Any,
) -> None:  # fmt: skip
    """Check the captures as perfgate check does and keep the result with its context. Exit
    0 once kept, whatever the check's verdict (perfgate check is the gate)."""
    from perfgate.usecases.check import CheckRequest
    from perfgate.usecases.history import HistoryAdd, history_add_outcome

    request = CheckRequest(baselines, captures, allow_other_gpu=allow_other_gpu)
    emit(history_add_outcome(HistoryAdd(db, request, _given(context), DataFormat(fmt))))


@history_group.command("import", short_help="Keep JSON results of perfgate check.")
@_db_option
@click.argument("results", nargs=-1, required=True, type=click.Path())
@_context_options
@_history_format_option
@guard
def history_import_command(db: str, results: tuple[str, ...], fmt: str, **context: Any) -> None:
    """Keep the results `perfgate check --format json` (or --json FILE) wrote. Without
    --run-id a file's run id is named by its content: importing it again changes nothing."""
    from perfgate.usecases.history import HistoryImport, history_import_outcome

    emit(history_import_outcome(HistoryImport(db, results, _given(context), DataFormat(fmt))))


@history_group.command("show", short_help="A kernel's series per fingerprint.")
@_db_option
@click.argument("kernel")
@click.option("--metric", "-m", default=None, help="Only this metric (perfgate metrics).")
@_history_format_option
@guard
def history_show_command(db: str, kernel: str, metric: str | None, fmt: str) -> None:
    """KERNEL (the baseline's id) over the runs kept, one series per fingerprint (GPU,
    driver, ncu, clock and cache control, scope, time basis) and metric, oldest first."""
    from perfgate.usecases.history import HistoryShow, history_show_outcome

    emit(history_show_outcome(HistoryShow(db, kernel, metric, DataFormat(fmt))))


@history_group.command("prune", short_help="Delete old runs from the history.")
@_db_option
@click.option(
    "--older-than", "older_than", type=click.FloatRange(min=0), default=None, metavar="DAYS",
    help="Delete the runs recorded more than DAYS ago.",
)  # fmt: skip
@click.option(
    "--keep", type=click.IntRange(min=0), default=None, metavar="N",
    help="Keep only the newest N runs.",
)  # fmt: skip
@_history_format_option
@guard
def history_prune_command(db: str, older_than: float | None, keep: int | None, fmt: str) -> None:
    """Delete runs by age, by count, or both (a run goes when either says so)."""
    from perfgate.usecases.history import HistoryPrune, history_prune_outcome

    emit(history_prune_outcome(HistoryPrune(db, older_than, keep, DataFormat(fmt))))


@history_group.command("detect", short_help="Change points and drift on a branch's series.")
@_db_option
@click.argument("kernels", nargs=-1)
@click.option("--metric", "-m", default=None, help="Only this metric (perfgate metrics).")
@click.option(
    "--branch", default="main", show_default=True,
    help="The branch whose runs form the series ('' for every run, whatever its branch).",
)  # fmt: skip
@click.option(
    "--last", type=click.IntRange(min=1), default=None, metavar="N",
    help="Only the change points among each series' last N runs.",
)  # fmt: skip
@click.option(
    "--drift", is_flag=True,
    help="Hold the newest run (or --run) to the branch's recent runs on its fingerprint: the "
    "median and spread of the last 30 (docs/history.md).",
)  # fmt: skip
@click.option("--run", "run_id", default=None, metavar="ID", help="With --drift: the run held.")
@click.option(
    "--fail-on-change", is_flag=True,
    help="Exit 1 when a gated metric changed for the worse (a change point, or with --drift "
    "a metric beyond its limit).",
)  # fmt: skip
@click.option(
    "--format",
    "fmt",
    type=click.Choice(values(DataFormat)),
    default=DataFormat.TEXT.value,
    show_default=True,
)
@guard
def history_detect_command(
    db: str, kernels: tuple[str, ...], metric: str | None, branch: str, last: int | None,
    drift: bool, run_id: str | None, fail_on_change: bool, fmt: str,
) -> None:  # fmt: skip
    """Change points (E-divisive means with a permutation test) in each KERNEL's metrics over
    the branch's runs, per fingerprint; every kernel when none is named. Each names the first
    run of the new level, its commit and the finding the check gave the kernel there. Exit 0,
    or 1 with --fail-on-change when a gated metric changed for the worse; 2 on bad input."""
    from perfgate.usecases.history import HistoryDetect, history_detect_outcome
    from perfgate.usecases.settings import DetectRequest

    request = DetectRequest(kernels, metric, branch or None, last, drift, run_id)
    emit(history_detect_outcome(HistoryDetect(db, request, fail_on_change, DataFormat(fmt))))


@history_group.command("html", short_help="One baseline's trends as a static HTML page.")
@_db_option
@click.option(
    "--baseline", "-b", "baseline", default=None, metavar="BASELINE",
    help="The baseline, as the checks named it (default: the one the history holds).",
)  # fmt: skip
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="The HTML page to write.")  # fmt: skip
@click.option(
    "--last", type=click.IntRange(min=0), default=60, show_default=True, metavar="N",
    help="Draw the newest N runs of the baseline (0: every run kept).",
)  # fmt: skip
@_history_format_option
@guard
def history_html_command(
    db: str, baseline: str | None, output: str, last: int, fmt: str
) -> None:  # fmt: skip
    """Every kernel's charts of one baseline, per fingerprint and metric, change points
    marked, on one self-contained page (inline SVG, no script, nothing fetched)."""
    from perfgate.usecases.history import HistoryHtml, history_html_outcome

    emit(history_html_outcome(HistoryHtml(db, baseline, output, last, DataFormat(fmt))))
