"""The RootCause a diagnosis rule returns, built one way for every rule (perfgate.causes.rules_*).

A rule reads what moved between baseline and current and asks whether the move fits one
mechanism; with an empty baseline (`perfgate explain`) the rules that can judge one state judge
the current side alone.

Scores rank causes (higher first): a specific mechanism with its own counter moving
(coalescing, atomics, tensor cores) outranks one inferred from consequences (more work,
a stall share that moved), so the lever that comes first is the one the counters prove.
"""

from __future__ import annotations

from dataclasses import replace

from perfgate.causes.facts import ev
from perfgate.causes.levers import LEVERS
from perfgate.causes.model import CauseKind, KernelDelta, RootCause


def root_cause(
    mechanism: str,
    kind: CauseKind,
    title: str,
    detail: str,
    delta: KernelDelta,
    evidence: tuple[str, ...],
    score: float,
) -> RootCause:
    # The lever and the consequences are filled in by the registry (family, trade-off).
    return RootCause(
        mechanism,
        kind,
        title,
        detail,
        LEVERS.get(mechanism, ""),
        ev(delta, *evidence),
        evidence,
        score,
    )


def with_lever(cause: RootCause, lever: str) -> RootCause:
    return replace(cause, lever=lever)
