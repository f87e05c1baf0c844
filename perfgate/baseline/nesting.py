"""The nesting guard: a baseline nested deeper than any needs is refused before a YAML parser
sees it (libyaml's composer recurses in C; a deep enough document crashes the process)."""

from __future__ import annotations

import re

from perfgate.baseline import yamlload
from perfgate.baseline.problems import problem
from perfgate.common.errors import located

MAX_NESTING = 64


MAX_INDENT = 512


_BRACKETS_ONLY = (bytes.maketrans(b"{}", b"[]"), bytes(range(256)).translate(None, b"[]{}"))


# Indentation and the block indicators before a line's content, as one run of blanks.
_LEADING = bytes.maketrans(b"\t-?:", b"    ")


_BRACKET = re.compile(rb"[\[\]{}]")


def _too_deep_at(data: bytes) -> yamlload.Position:
    """The line and column of the bracket that opens level MAX_NESTING + 1 (counted as
    check_nesting counts, strings included); the first 1,000,000 brackets are looked at, and
    the file's start is named when the place lies beyond them."""
    depth = 0
    for n, m in enumerate(_BRACKET.finditer(data)):
        depth += 1 if m.group() in (b"[", b"{") else -1
        if depth > MAX_NESTING:
            start = data.rfind(b"\n", 0, m.start()) + 1
            column = len(data[start : m.start()].decode("utf-8", "replace")) + 1
            return data.count(b"\n", 0, m.start()) + 1, column
        if n >= 1_000_000:
            break
    return 1, 1


def check_nesting(text: str, path: str) -> None:
    """Refuse nesting no baseline needs (a real one is 6 levels deep) before a parser sees it:
    libyaml's composer recurses in C and a document nested 30,000 levels deep crashes the
    process (seen: segmentation fault), which no exception handler can catch. A document
    nests by flow brackets and by block collections; a block collection opens at a column
    beyond its parent's, by indentation or by indicators on one line (`- - - x`, `? - ? x`),
    so bounding the columns a line's indentation and indicators span bounds block nesting.
    Brackets are counted even inside strings, which keeps the bound conservative. Costs a few
    milliseconds for a 3 MB baseline (C-level byte operations only; docs/limits.md)."""
    data = text.encode("utf-8", "surrogatepass")
    # Innermost bracket pairs removed a level per pass: the passes are the matched depth,
    # what is left unmatched ("]]][[[") adds to it; more passes than the limit never run.
    brackets = data.translate(*_BRACKETS_ONLY)
    depth = 0
    while brackets and depth <= MAX_NESTING:
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            break
        brackets, depth = inner, depth + 1
    depth += brackets.count(b"[")
    if depth > MAX_NESTING:
        raise problem(
            path,
            located(
                *_too_deep_at(data),
                f"YAML nested more than {MAX_NESTING} levels deep in brackets; a baseline "
                f"needs fewer than {MAX_NESTING}",
            ),
        )
    leading = b"\n" + data.translate(_LEADING)
    at = leading.find(b"\n" + b" " * (MAX_INDENT + 1))
    if at >= 0:
        line = leading.count(b"\n", 0, at + 1)
        raise problem(
            path,
            located(
                line,
                1,
                f"indentation and block indicators ('- - - ...') span more than "
                f"{MAX_INDENT} columns; a baseline nests far less deeply",
            ),
        )
