"""N processes at once, for the histories' concurrency tests (SQLite and PostgreSQL)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any


def exit_codes(
    target: Callable[..., None], arg_sets: Sequence[tuple[Any, ...]]
) -> list[int | None]:
    """Start one process per argument set at once, wait for all, and give their exit codes.
    fork where there is one: the workers need not import perfgate again (2 CPUs in CI)."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    workers = [ctx.Process(target=target, args=args) for args in arg_sets]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=300)
    return [p.exitcode for p in workers]
