"""NCU's own rules (a .ncu-rep captured with sections) as a second opinion beside the
counters: the rules that newly fire or whose estimated speedup grew."""

from __future__ import annotations

from perfgate.causes.facts import single
from perfgate.causes.model import CauseKind, Evidence, KernelDelta, RootCause
from perfgate.ingest.launches import RULE_PREFIX

RULE_NEW = 5.0  # estimated speedup (%) from which a rule that did not fire before counts
RULE_GROWTH = 10.0  # points of estimated speedup a rule that fired before must gain


def ncu_rules(delta: KernelDelta) -> RootCause | None:
    """NCU's own rules (a .ncu-rep captured with sections) that newly fire or whose estimated
    speedup grew: an independent second opinion beside the counters. One capture: the rules
    that fire with an estimated speedup of 20% or more."""
    now = {
        k[len(RULE_PREFIX) :]: v
        for k, v in delta.current.values.items()
        if k.startswith(RULE_PREFIX) and isinstance(v, float)
    }
    if not now:
        return None
    before = {
        k[len(RULE_PREFIX) :]: v
        for k, v in delta.baseline.values.items()
        if k.startswith(RULE_PREFIX) and isinstance(v, float)
    }
    moved: dict[str, tuple[float | None, float]]
    if single(delta):
        moved = {r: (None, v) for r, v in now.items() if v >= 20.0}
    else:
        moved = {
            r: (before.get(r), v)
            for r, v in now.items()
            if (r not in before and v >= RULE_NEW) or (r in before and v - before[r] >= RULE_GROWTH)
        }
    if not moved:
        return None
    ranked = sorted(moved, key=lambda r: -moved[r][1])
    parts = []
    for r in ranked:
        b, a = moved[r]
        how = f"est. speedup {a:.0f}%" if b is None else f"est. speedup {b:.0f}% -> {a:.0f}%"
        text = delta.current.rules.get(r, "")
        parts.append(f"{r} ({how}{'; ' + text if text else ''})")
    verb = "fire" if single(delta) else "newly fire or grew"
    return RootCause(
        "ncu-rules",
        CauseKind.CHANGE,
        f"NCU's rules {verb}: {', '.join(ranked)}",
        "; ".join(parts),
        "open the report in Nsight Compute (ncu-ui, or ncu --import FILE --page details) for "
        "the rule's source locations and guidance",
        tuple(Evidence(f"{RULE_PREFIX}{r}", moved[r][0], moved[r][1], "%", ()) for r in ranked),
        (),
        10.0,
    )
