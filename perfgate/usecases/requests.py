"""What the CLI builds its requests from, named where the use cases take them: the parsers
of option values (--fail-on, --waive, --threshold, --color) and the names --waive accepts.
The CLI imports the use-case layer and common/ only (tests/docs/test_architecture.py): a command
that needs another of these is added here, in one place, not reached for in a lower package.

Light on purpose, as choices.py: the CLI imports this at start-up, before any command runs,
so each parser loads its module when first called (the policy table, the metric catalog)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from perfgate.judge.skips import WAIVABLE, parse_waivers

if TYPE_CHECKING:
    from perfgate.judge.policy import FailOn
    from perfgate.metrics.thresholds import ThresholdOverride

__all__ = ["WAIVABLE", "parse_fail_on", "parse_thresholds", "parse_waivers", "use_colour"]


def parse_fail_on(text: str) -> frozenset[FailOn]:
    """--fail-on: perfgate.judge.policy.parse_fail_on."""
    from perfgate.judge.policy import parse_fail_on as parse

    return parse(text)


def parse_thresholds(values: Iterable[str]) -> dict[str, ThresholdOverride]:
    """--threshold METRIC=BOUND: perfgate.baseline.overrides.parse_thresholds."""
    from perfgate.baseline.overrides import parse_thresholds as parse

    return parse(values)


def use_colour(mode: str, env: Mapping[str, str], is_terminal: bool) -> bool:
    """--color / --no-color / NO_COLOR: perfgate.reports.colour.use_colour."""
    from perfgate.reports.colour import use_colour as decide

    return decide(mode, env, is_terminal)
