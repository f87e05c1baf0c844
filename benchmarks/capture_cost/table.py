"""The per-metric replay-pass table of docs/capture.md, from the passes ncu printed in the
device runs of exp1.py (H200) and exp2.py (H100) (tests/data/h200/capture/pass-costs-*.json).

    python3 benchmarks/capture_cost/table.py      # prints the markdown table

A metric's "alone" cost is the passes of a run asking for it alone; its marginal cost is how
many passes the default gate set loses when it is left out (ncu packs counters into passes, so
marginal costs do not add up: leaving out two metrics of one pass saves one pass, not two).
tests/ncu/test_capture.py keeps docs/capture.md in step with this output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "h200" / "capture"
_STALL = re.compile(
    r"^smsp__(?:warp_issue_stalled_(?P<a>\w+?)_per_warp_active\.pct|warps_issue_stalled_(?P<b>\w+?)\.sum)$"
)


def _key(metric: str) -> str:
    m = _STALL.match(metric)
    if m:
        return f"stall reason `{m.group('a') or m.group('b')}` (one of its family)"
    return f"`{metric}`"


def rows() -> list[tuple[str, str, str, str, str]]:
    h200 = json.loads((DATA / "pass-costs-exp1.json").read_text())["passes"]
    h100 = json.loads((DATA / "pass-costs-exp2-h100.json").read_text())
    alone = {k[6:]: v["passes"][0] for k, v in h200.items() if k.startswith("alone:")}
    base_non = h200["nonstall"]["passes"][0]
    loo_non = {k[4:]: base_non - v["passes"][0] for k, v in h200.items() if k.startswith("loo:")}
    loo: dict[str, dict[str, int]] = {"per_warp_active": {}, "count": {}}
    for fam in loo:
        base = h100[f"default18_{fam}"]
        for k, v in h100.items():
            if k.startswith(f"loo_{fam}:"):
                loo[fam][_key(k.split(":", 1)[1])] = base - v
    out = []
    keys = list(dict.fromkeys([*(_key(m) for m in alone), *loo["per_warp_active"], *loo["count"]]))
    raw_of = {_key(m): m for m in alone}
    for key in keys:
        raw = raw_of.get(key)
        out.append(
            (
                key,
                str(alone[raw]) if raw else "1",
                str(loo_non[raw]) if raw in loo_non else "-",
                str(loo["per_warp_active"].get(key, "-")),
                str(loo["count"].get(key, "-")),
            )
        )
    return out


def markdown() -> str:
    lines = [
        "| raw metric | alone (H200) | marginal, non-stall set (H200) "
        "| marginal, default set, per_warp_active stalls (H100) "
        "| marginal, default set, count stalls (H100) |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(r)} |" for r in rows()]
    lines.append("| `launch__*`, `device__attribute_*` | 0 | 0 | 0 | 0 |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
