"""Regular expressions from users (a baseline's `match: {regex: ...}`, `--kernel`), matched
against kernel names from captures, in bounded time.

Python's `re` backtracks and has no timeout: `(a+)+$` against 40 letters `a` and a `b` runs
for hours. Two defences (docs/limits.md):

- a static check refuses the shapes that backtrack exponentially: a variable repeat (`+`, `*`,
  `?`, `{m,n}`) inside an unbounded repeat (`(a+)+`, `(a?b?)*`), an alternation under an
  unbounded repeat whose branches can start alike (`(a|ab)*`), a bounded repeat that multiplies
  unbounded ones (`(a*b*){1,3}`), more than MAX_TOTAL_DEGREE unbounded repeats in all, and
  backreferences; and patterns over MAX_PATTERN characters;
- every search runs under one time budget (SEARCH_SECONDS for all the searches of all the
  user's patterns in one command: the command line calls reset_budget() as a command starts):
  polynomial shapes the static check lets through (`.*a.*a.*a`) on long names end with an
  error instead of a hang. The budget is a total, not one per pattern: 60 accepted patterns
  against one long name took 49 s with a budget of 2 s each (issue 23). It uses SIGALRM,
  which `re` honours mid-match; off the main thread (no signals) the static check and the
  name-length cap of the readers are what bound the time.
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from perfgate.common.errors import UsageError

try:  # Python 3.11+
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse

MAX_PATTERN = 1000  # characters
SEARCH_SECONDS = 2.0  # all searches of all user patterns of one command
# Unbounded repeats a bounded repeat may multiply: (x+){1,4} is fine, (a*b*){1,3} is not.
MAX_DEGREE = 4
# Unbounded repeats in the whole pattern: a failing match may try every way of placing them,
# about n^k/k! ways on a name of n characters (seen: 7 of them, `(a*a*){2}(a*a?){1,3}$`,
# spent the 2 s budget on 26 characters; a property test found it).
MAX_TOTAL_DEGREE = 5

_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT}
if hasattr(_sre, "POSSESSIVE_REPEAT"):
    _REPEATS.add(_sre.POSSESSIVE_REPEAT)
_UNBOUNDED = _sre.MAXREPEAT


class UnsafePattern(ValueError):
    """A pattern refused before it is used; the message says why, for one line of output."""


class PatternTimeout(UsageError):
    """The searches of the user's patterns ran past their one time budget."""

    def __init__(self, pattern: str) -> None:
        super().__init__(
            f"the regular expressions took more than {SEARCH_SECONDS:g} s in all on the kernel "
            f"names (they backtrack; {pattern!r} was running); write simpler ones "
            "(docs/limits.md)"
        )
        self.pattern = pattern


def _items(subpattern: Any) -> list[tuple[Any, Any]]:
    return list(subpattern.data) if hasattr(subpattern, "data") else list(subpattern)


def _children(op: Any, av: Any) -> list[Any]:
    """The sub-patterns one parsed item holds."""
    if op in _REPEATS:
        return [av[2]]
    if op is _sre.SUBPATTERN:
        return [av[-1]]
    if op is _sre.BRANCH:
        return list(av[1])
    if op in (_sre.ASSERT, _sre.ASSERT_NOT):
        return [av[1]]
    if hasattr(_sre, "ATOMIC_GROUP") and op is _sre.ATOMIC_GROUP:
        return [av]
    return []


def _has_repeat(subpattern: Any) -> bool:
    """Whether it holds a repeat of a variable count (`a+`, `a*`, `a?`, `a{1,3}`): under an
    unbounded repeat each is a choice the engine may try every way (`(a?a?)+`, `(\\w+_)+`)."""
    for op, av in _items(subpattern):
        if op in _REPEATS and av[0] != av[1]:
            return True
        if any(_has_repeat(child) for child in _children(op, av)):
            return True
    return False


def _degree(subpattern: Any) -> int:
    """How many unbounded repeats a match may have to place, a bounded repeat counting its
    body as often as it may repeat it: `(a*b*){1,3}` is 6, `(_\\d+){1,3}` is 3."""
    total = 0
    for op, av in _items(subpattern):
        if op in _REPEATS:
            inner = _degree(av[2])
            total += (1 + inner) if av[1] == _UNBOUNDED else av[1] * inner
        elif op is _sre.BRANCH:
            total += max((_degree(b) for b in av[1]), default=0)
        else:
            total += sum(_degree(child) for child in _children(op, av))
    return total


def _first_chars(subpattern: Any) -> set[int] | None:
    """The literal characters a branch can start with; None when not one plain literal."""
    items = _items(subpattern)
    if not items:
        return None
    op, av = items[0]
    if op is _sre.LITERAL:
        return {av}
    if op is _sre.SUBPATTERN:
        return _first_chars(av[-1])
    return None


def _branches_overlap(branches: list[Any]) -> bool:
    seen: set[int] = set()
    for branch in branches:
        first = _first_chars(branch)
        if first is None or first & seen:
            return True
        seen |= first
    return False


def _walk(subpattern: Any, under_unbounded: bool) -> str | None:
    for op, av in _items(subpattern):
        if op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS):
            return "a backreference"
        if op in _REPEATS:
            unbounded = av[1] == _UNBOUNDED
            if av[1] > 1 and (unbounded or under_unbounded) and _has_repeat(av[2]):
                return "a variable repeat inside an unbounded repeat, such as (a+)+ or (a?b?)*"
            if not unbounded and av[1] > 1 and av[1] * _degree(av[2]) > MAX_DEGREE:
                return "a bounded repeat of unbounded repeats, such as (a*b*){1,3}"
            found = _walk(av[2], under_unbounded or unbounded)
            if found:
                return found
            continue
        if op is _sre.BRANCH and under_unbounded and _branches_overlap(list(av[1])):
            return "an alternation under an unbounded repeat whose branches can start alike"
        for child in _children(op, av):
            found = _walk(child, under_unbounded)
            if found:
                return found
    return None


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The compiled pattern, or UnsafePattern (or re.error) saying why it is refused."""
    if len(pattern) > MAX_PATTERN:
        raise UnsafePattern(f"is {len(pattern):,} characters long; at most {MAX_PATTERN:,}")
    compiled = re.compile(pattern)
    parsed = _sre_parse.parse(pattern)
    problem = _walk(parsed, under_unbounded=False)
    if problem is None and _degree(parsed) > MAX_TOTAL_DEGREE:
        problem = (
            f"more than {MAX_TOTAL_DEGREE} unbounded repeats (such as .* or a+) in sequence, "
            "which a failing match may try every way of placing"
        )
    if problem:
        raise UnsafePattern(
            f"can take exponential time on some kernel names: it holds {problem} (docs/limits.md)"
        )
    return compiled


def checked(pattern: str, option: str) -> re.Pattern[str]:
    """compile_pattern() for a pattern the user gave as `option` (`--kernel`): a UsageError
    naming the option and the pattern when it is invalid or refused."""
    try:
        return compile_pattern(pattern)
    except re.error as exc:
        raise UsageError(f"{option} {pattern!r} is not a valid regular expression: {exc}") from exc
    except UnsafePattern as exc:
        raise UsageError(f"{option} {pattern!r} {exc}") from exc


class _Alarm(BaseException):
    pass


# Seconds the searches took since reset_budget(), all patterns together (a list: mutable).
_spent = [0.0]


def reset_budget() -> None:
    """A fresh SEARCH_SECONDS for the searches of the next command."""
    _spent[0] = 0.0


def _raise_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Alarm


@contextlib.contextmanager
def _budget(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` (checked by compile_pattern) matches somewhere in `text`, within what
    is left of the one budget of all searches; PatternTimeout when it is spent."""
    compiled = compile_pattern(pattern)
    left = SEARCH_SECONDS - _spent[0]
    if left <= 0:
        raise PatternTimeout(pattern)
    start = time.perf_counter()
    try:
        with _budget(left):
            found = compiled.search(text) is not None
    except _Alarm:
        _spent[0] = SEARCH_SECONDS
        raise PatternTimeout(pattern) from None
    _spent[0] += time.perf_counter() - start
    return found
