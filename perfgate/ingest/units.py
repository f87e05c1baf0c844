"""ncu's units and number formats, normalised at ingest.

ncu prints values in auto-scaled units unless told `--print-units base` (seen on --import:
`us`, `Kbyte`, `Mbyte`, `Kbyte/block`; Kbyte is 1,000 bytes: 1,024 byte/block = 1.024
Kbyte/block in the same report). perfgate converts every column to one base unit per
dimension so a baseline recorded from one form compares with a capture in another.

Numbers carry the locale's grouping: `"1,398,314.67"` under C/en_US, `"27.595.520"` and
`"65,77"` under a European locale. The format is decided once per file from the values that
can only be read one way; a file that shows both, or only values that would read differently
either way, is refused rather than misread.
"""

from __future__ import annotations

import enum
import re

# Prefixes ncu uses in scaled units. SI: ncu's Kbyte is 1,000 bytes.
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_TO_NS = {
    "ns": 1.0, "nsecond": 1.0, "nsec": 1.0,
    "us": 1e3, "usecond": 1e3, "usec": 1e3,
    "ms": 1e6, "msecond": 1e6, "msec": 1e6,
    "s": 1e9, "second": 1e9, "sec": 1e9,
}  # fmt: skip
_PER_TIME_TO_PER_S = {"ns": 1e9, "nsecond": 1e9, "us": 1e6, "usecond": 1e6,
                      "ms": 1e3, "msecond": 1e3, "s": 1.0, "second": 1.0}  # fmt: skip
_SCALABLE = ("byte", "hz", "Hz", "inst", "sector", "cycle", "request", "warp", "thread")
_SCALED_RE = re.compile(rf"^(?P<prefix>[KMGTP]?)(?P<base>{'|'.join(_SCALABLE)})$")


def _numerator(unit: str) -> tuple[str, float]:
    if unit in _TIME_TO_NS:
        return "ns", _TIME_TO_NS[unit]
    m = _SCALED_RE.match(unit)
    if m:
        base = m.group("base").lower() if m.group("base") in ("Hz", "hz") else m.group("base")
        return base, _PREFIX[m.group("prefix")]
    return unit, 1.0


def normalise_unit(unit: str) -> tuple[str, float]:
    """The base unit for `unit` and the factor that converts a value into it.

    >>> normalise_unit("us")
    ('ns', 1000.0)
    >>> normalise_unit("Kbyte/block")
    ('byte/block', 1000.0)
    >>> normalise_unit("Gbyte/s")
    ('byte/s', 1000000000.0)
    >>> normalise_unit("cycle/usecond")
    ('cycle/s', 1000000.0)
    >>> normalise_unit("register/thread")
    ('register/thread', 1.0)
    """
    unit = unit.strip()
    if not unit:
        return "", 1.0
    if "/" in unit:
        num, _, den = unit.partition("/")
        base, factor = _numerator(num)
        if den in _PER_TIME_TO_PER_S:
            return f"{base}/s", factor * _PER_TIME_TO_PER_S[den]
        return f"{base}/{den}", factor
    return _numerator(unit)


class NumberFormat(enum.Enum):
    """How a capture writes its numbers."""

    POINT = "1,234.5"  # C / en_US: ',' groups thousands, '.' is the decimal point
    COMMA = "1.234,5"  # many European locales: '.' groups thousands, ',' is the decimal point


_POINT_RE = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$")
_COMMA_RE = re.compile(r"^[+-]?(\d{1,3}(\.\d{3})+|\d+)(,\d+)?$")
_PLAIN_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


class FormatClue(enum.Flag):
    """What a value's text tells of the file's number format; a file's clues are or-ed."""

    NONE = 0
    POINT = enum.auto()  # only the C/en_US reading fits
    COMMA = enum.auto()  # only the European reading fits
    AMBIGUOUS_DOT = enum.auto()  # "65.536": 65.536 or 65536
    AMBIGUOUS_COMMA = enum.auto()  # "65,536": 65536 or 65.536


def classify(text: str) -> FormatClue:
    """What one value says about the file's number format."""
    point = bool(_POINT_RE.match(text))
    comma = bool(_COMMA_RE.match(text))
    if point and comma:
        if "," in text:
            return FormatClue.AMBIGUOUS_COMMA
        if "." in text:
            return FormatClue.AMBIGUOUS_DOT
        return FormatClue.NONE  # plain digits read the same either way
    if point:
        return FormatClue.POINT
    if comma:
        return FormatClue.COMMA
    return FormatClue.NONE


def decide_format(evidence: FormatClue) -> NumberFormat | str:
    """The number format the evidence allows, or a sentence saying why none can be chosen."""
    if FormatClue.POINT in evidence and FormatClue.COMMA in evidence:
        return "numbers are written in two different formats ('1,234.5' and '1.234,5')"
    if FormatClue.COMMA in evidence:
        return NumberFormat.COMMA
    if FormatClue.POINT in evidence:
        return NumberFormat.POINT
    if FormatClue.AMBIGUOUS_DOT in evidence:
        # Only values like "65.536" and no value that settles it: 65.536 or 65536?
        # ncu's C locale writes fractions with 2 or 6 digits, so this shape is most likely a
        # European locale's thousands grouping; refuse rather than guess.
        return (
            "cannot tell whether '.' is a decimal point or a thousands separator; "
            "capture again under the C locale (LC_ALL=C ncu ...)"
        )
    return NumberFormat.POINT


def parse_number(text: str, fmt: NumberFormat) -> float | None:
    """A float from ncu's text, or None when the text is not a number in `fmt`.

    >>> parse_number("1,398,314.67", NumberFormat.POINT)
    1398314.67
    >>> parse_number("27.595.520", NumberFormat.COMMA)
    27595520.0
    >>> parse_number("65,77", NumberFormat.COMMA)
    65.77
    """
    s = text.strip()
    if fmt is NumberFormat.POINT:
        if _POINT_RE.match(s):
            return float(s.replace(",", ""))
    elif _COMMA_RE.match(s):
        return float(s.replace(".", "").replace(",", "."))
    if _PLAIN_RE.match(s) and (fmt is NumberFormat.POINT or "." not in s):
        return float(s)
    return None
