"""Text from captures and baselines (kernel names, ncu's warning lines, a baseline's strings)
made inert for where a report goes: one line on a terminal or a CI log, a markdown comment,
JUnit XML, an SVG chart. The one escaping helper: every line perfgate prints goes through
`log_line` (tests/hostile/test_hostile.py holds it so).

A kernel name is whatever the program called its kernel, and a capture or a baseline may come
from a pull request: a name holding a newline and `::error::` would start a GitHub workflow
command in a log, an escape sequence would drive the terminal, and `@someone` or a bare URL in
a PR comment would notify a user or link anywhere.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, the Unicode line and paragraph separators, the bidi embeddings,
# overrides and isolates (which reorder what a reader sees: "Trojan Source"), and the
# zero-width characters (which hide a difference between two names) and lone surrogates (an
# undecodable byte of a file name: no stream or XML file can hold one); a tab stays.
_CONTROL = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufeff]"
)
_WORD_JOINER = "\u2060"
_LINKY = re.compile(r"(?i)(@)(?=\w)|(:)(?=//)|(www)(?=\.)")


def _escaped(m: re.Match[str]) -> str:
    ch = m.group(0)
    return f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}"


def one_line(text: str) -> str:
    """The text on one line: control characters as visible escapes (`\\x0a`)."""
    return _CONTROL.sub(_escaped, text) if _CONTROL.search(text) else text


def log_line(text: str) -> str:
    """One line of console output that cannot be read as a GitHub workflow command (the
    runner trims a line and takes one that starts with `::` as a command)."""
    line = one_line(text)
    if line.lstrip().startswith("::"):
        at = line.index("::")
        line = line[:at] + "\\x3a" + line[at + 1 :]
    return line


def log_text(lines: list[str]) -> str:
    """Lines of console output, each made safe, joined and ended with a newline."""
    return "".join(log_line(line) + "\n" for line in lines)


def no_mentions(text: str) -> str:
    """Markdown text in which `@name` notifies no one and `http://...` or `www.` links nowhere:
    a word joiner (invisible) after `@`, in `://` and after `www`."""
    return _LINKY.sub(lambda m: m.group(0) + _WORD_JOINER, text)
