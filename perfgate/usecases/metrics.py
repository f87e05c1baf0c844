"""`perfgate metrics`: the metric catalog as a table for people (each metric with the raw
counters it is read from), as markdown, or as the raw metric list to pass to ncu."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.usecases.console import Document, Line, Outcome


@dataclass(frozen=True)
class MetricsRequest:
    ncu: bool = False  # the raw metrics for ncu --metrics, comma-separated
    markdown: bool = False  # the catalog as a markdown table
    cc: str = "9.0"  # the compute capability the raw metrics are resolved for


def run_metrics(request: MetricsRequest) -> Outcome:
    from perfgate.metrics.catalog import catalog_markdown, ncu_metrics

    if request.ncu:
        return Outcome((Line(",".join(ncu_metrics(request.cc))),))
    if request.markdown:
        return Outcome((Document(catalog_markdown()),))
    return Outcome(tuple(Line(line) for line in catalog_table()))


def catalog_table() -> list[str]:
    """A row per metric (the stall families as one row each), aligned, each followed by the
    line of the counters it is read from."""
    from perfgate.metrics.catalog import (
        CATALOG_LIST,
        COLD_START_STALLS,
        STALL_CPI_PREFIX,
        STALL_CPI_THRESHOLD,
        STALL_PREFIX,
        STALL_THRESHOLD,
        role_of,
    )
    from perfgate.metrics.thresholds import Direction, describe_bound

    rows = [("METRIC", "ROLE", "NOISE", "GATED", "DEFAULT BOUND", "WHAT")]
    sources = []
    for m in CATALOG_LIST:
        bound = "categorical" if m.categorical else describe_bound(m.threshold, m.direction, m.unit)
        default = "default" if m.default else "opt-in"
        rows.append((m.name, m.role.value, m.noise.value, default, bound, m.title))
        sources.append(" | ".join(f.text for f in m.formulas))
    cold = ", ".join(sorted(COLD_START_STALLS))
    rows.append(
        (
            f"{STALL_PREFIX}<reason>", role_of(STALL_PREFIX).value, "noisy", "opt-in",
            describe_bound(STALL_THRESHOLD, Direction.HIGHER_IS_WORSE, "%"),
            f"Share of one stall reason ({cold}: +25 points)",
        )
    )  # fmt: skip
    sources.append("the stall family's counters for <reason>")
    rows.append(
        (
            f"{STALL_CPI_PREFIX}<reason>", role_of(STALL_CPI_PREFIX).value, "noisy", "default",
            describe_bound(STALL_CPI_THRESHOLD, Direction.HIGHER_IS_WORSE, "cycle/inst"),
            "Stall cycles per instruction of one reason",
        )
    )  # fmt: skip
    sources.append("<reason> / selected of the stall family's counters")
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
        if n:  # the header has no source line
            lines.append(f"{'':<{widths[0]}}  from: {sources[n - 1]}")
    return lines
