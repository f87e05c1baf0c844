"""Differential diagnosis: why a kernel changed between baseline and current.

    side_from_launches(launches, columns, metrics()) on both sides
    -> KernelDelta(kernel, baseline, current, comparisons, family)
    -> diagnose(delta) -> Diagnosis(causes ranked, not_evaluated)

The rules live in one registry (perfgate.causes.registry.RULES); their levers in
perfgate.causes.levers. With an empty baseline Side the rules that can judge one capture
judge it alone (`perfgate explain`).
"""

from perfgate.causes.registry import RULES, Diagnosis, Rule, diagnose, metrics
from perfgate.causes.sides import measure_all, side_from_launches, side_from_measured
from perfgate.causes.substitution import substitution_cause

__all__ = [
    "RULES",
    "Diagnosis",
    "Rule",
    "diagnose",
    "measure_all",
    "metrics",
    "side_from_launches",
    "side_from_measured",
    "substitution_cause",
]
