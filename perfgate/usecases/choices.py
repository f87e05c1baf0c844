"""The values of the CLI's choice options, as enums the use cases match exhaustively
(common.exhaustive.never). Each is a str-valued Enum, so that click.Choice offers its values
and a value compares equal to the text the user typed. Light on purpose: the CLI imports it
at start-up, before any command runs (no pandas, no reporter)."""

from __future__ import annotations

from enum import Enum


class Format(str, Enum):
    """What `perfgate check` prints on stdout (--format): a reporter of
    perfgate.reports.REPORTERS, in the registry's order (tests/cli/test_cli.py holds them equal)."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JUNIT = "junit"
    JSON = "json"
    GITHUB = "github"
    DELTA = "delta"
    DELTA_MARKDOWN = "delta-markdown"


class ExplainFormat(str, Enum):
    """`perfgate explain --format`."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"


class ReviewFormat(str, Enum):
    """`perfgate baseline show` and `baseline diff --format`: for people only."""

    TEXT = "text"
    MARKDOWN = "markdown"


class DataFormat(str, Enum):
    """`--format` of the commands that print lines for people or one JSON document (baseline
    validate, every history command)."""

    TEXT = "text"
    JSON = "json"


class Phases(str, Enum):
    """`perfgate capture --phases` (and pre-merge's): which captures are taken. GATE is the
    gate capture, ncu's one-pass metric set of every baselined kernel (docs/capture.md)."""

    AUTO = "auto"  # the phase the baselines were recorded from (their time basis)
    GATE = "gate"
    FULL = "full"


class ReplayMode(str, Enum):
    """`perfgate capture --replay-mode`: ncu's own."""

    KERNEL = "kernel"
    APPLICATION = "application"


class ColourWhen(str, Enum):
    """The global `--color`."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


def values(choice: type[Enum]) -> tuple[str, ...]:
    """The values click.Choice offers, in the enum's order."""
    return tuple(str(member.value) for member in choice)
