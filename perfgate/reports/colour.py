"""Colour for the console report, as a last pass over its plain text: reporters stay plain,
and colour appears only where a person reads it.

`auto` colours a terminal unless NO_COLOR is set to anything non-empty (https://no-color.org)
or TERM is `dumb`; FORCE_COLOR (non-empty) colours where stdout is not a terminal, as in a CI
log that renders ANSI colour. `--color always|never` overrides both, as no-color.org asks of
an explicit option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_RESET = "\x1b[0m"
_STYLES = {"red": "\x1b[1;31m", "green": "\x1b[1;32m", "yellow": "\x1b[33m", "dim": "\x1b[2m"}
_VERDICT = re.compile(r"^(perfgate check )(PASSED|FAILED|ERROR)\b")
_VERDICT_STYLE = {"PASSED": "green", "FAILED": "red", "ERROR": "red"}
_LABEL = re.compile(r"^(  )(REGRESSED|MISSING|INCOMPLETE|ERROR|improved)(\s)")
_LABEL_STYLE = {
    "REGRESSED": "red",
    "MISSING": "red",
    "INCOMPLETE": "yellow",
    "ERROR": "red",
    "improved": "green",
}


def use_colour(mode: str, env: Mapping[str, str], is_terminal: bool) -> bool:
    if mode == "always":
        return True
    if mode == "never" or env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    return is_terminal or bool(env.get("FORCE_COLOR"))


def _style(text: str, style: str) -> str:
    return f"{_STYLES[style]}{text}{_RESET}"


def paint(text: str) -> str:
    """The console report with its verdict, kernel states and warnings coloured."""
    lines = []
    for line in text.split("\n"):
        if m := _VERDICT.match(line):
            line = m.group(1) + _style(m.group(2), _VERDICT_STYLE[m.group(2)]) + line[m.end() :]
        elif m := _LABEL.match(line):
            label = _style(m.group(2), _LABEL_STYLE[m.group(2)])
            line = m.group(1) + label + line[m.end(2) :]
        elif line.startswith("warning: "):
            line = _style("warning:", "yellow") + line[len("warning:") :]
        lines.append(line)
    return "\n".join(lines)
