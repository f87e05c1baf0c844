"""The columns of ncu's raw page: the identity columns, NVTX's before them, the metrics after,
and which of them a read keeps."""

from __future__ import annotations

import csv
from collections.abc import Callable

KERNEL_NAME = "Kernel Name"
IDENTITY = frozenset(
    {"ID", "Process ID", "Process Name", "Host Name", KERNEL_NAME, "Context", "Stream",
     "Block Size", "Grid Size", "Device", "CC"}
)  # fmt: skip
DEVICE_NAME = "device__attribute_display_name"


# The fields of each launch row, column by column, as the file holds them (text).
Table = dict[str, list[str]]


def split_columns(header: list[str]) -> tuple[list[str], list[str]]:
    """(NVTX columns, metric columns). `--nvtx` inserts its columns before "Kernel Name";
    everything after the identity columns is a metric (most are `unit__counter...`, but
    `--set full` also writes source-counter columns such as `inst_executed`)."""
    before = header[: header.index(KERNEL_NAME)]
    nvtx = [c for c in before if c not in IDENTITY]
    skip = IDENTITY | set(nvtx)
    metrics = [c for c in header if c not in skip]
    return nvtx, metrics


def parse_row(line: str) -> list[str]:
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def selection(
    header: list[str], wanted: Callable[[str], bool] | None
) -> tuple[list[str], list[str], list[str]]:
    """(NVTX columns, the metric columns kept, every column read: identity and kept)."""
    nvtx_columns, metric_columns = split_columns(header)
    keep = [c for c in metric_columns if wanted is None or wanted(c) or c == DEVICE_NAME]
    metric_set = set(metric_columns)  # a list here made 80,000 columns cost 29 s
    identity = [c for c in header if c not in metric_set]
    return nvtx_columns, keep, list(dict.fromkeys([*identity, *keep]))
