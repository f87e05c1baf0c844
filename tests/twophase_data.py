"""SYNTHETIC captures DERIVED from real field captures (tests/data/field/), for the two phases
of `perfgate capture`: a gate capture is a real capture with every counter outside the one-pass
gate set dropped (perfgate.metrics.passes); a diagnosis capture is the real capture restricted
to some kernels' launches. The values are the real ones; only what a phase would not have
collected is left out. Each gets the sidecar `perfgate capture` would write for its phase."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterable
from pathlib import Path

from perfgate.metrics.passes import in_gate_capture


def _rows(source: Path) -> tuple[list[str], list[list[str]]]:
    text = gzip.decompress(source.read_bytes()).decode("utf-8")
    quoted = [line for line in text.splitlines() if line.startswith('"')]
    rows = list(csv.reader(quoted))
    return quoted, rows


def _write(rows: Iterable[list[str]], out: Path) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows(rows)
    out.write_text(buf.getvalue(), "utf-8")


def sidecar(out: Path, phase: str, **more: object) -> None:
    meta = {
        "perfgate_capture": 1, "ncu_version": "2025.3.1.0", "gpu": "NVIDIA H100 80GB HBM3",
        "cc": "9.0", "clock_control": "none", "cache_control": "all", "phase": phase,
        "command": ["ncu", "--cache-control", "all", "--clock-control", "none", "python3"],
        **more,
    }  # fmt: skip
    Path(f"{out}.meta.json").write_text(json.dumps(meta), "utf-8")


def gate_capture(source: Path, out: Path) -> Path:
    """`source` as a gate capture would have held it: only the gate set's counters."""
    _, rows = _rows(source)
    header = rows[0]
    keep = [i for i, name in enumerate(header) if in_gate_capture(name)]
    _write(([row[i] for i in keep] for row in rows), out)
    sidecar(out, "gate")
    return out


def diagnosis_capture(source: Path, out: Path, kernels: Iterable[str]) -> Path:
    """`source` restricted to the launches whose kernel name contains one of `kernels`."""
    _, rows = _rows(source)
    header, units, launches = rows[0], rows[1], rows[2:]
    name = header.index("Kernel Name")
    wanted = tuple(kernels)
    chosen = [r for r in launches if any(k in r[name] for k in wanted)]
    _write([header, units, *chosen], out)
    sidecar(out, "diagnosis", command=[
        "ncu", "--cache-control", "all", "--clock-control", "none", "--launch-count", "4",
        "--kernel-name-base", "function", "--kernel-name", "regex:^(x)$", "python3",
    ])  # fmt: skip
    return out
