from __future__ import annotations

import doctest

import pytest

import perfgate.ingest.names
import perfgate.ingest.units
from perfgate.ingest.units import (
    FormatClue,
    NumberFormat,
    classify,
    decide_format,
    normalise_unit,
    parse_number,
)


@pytest.mark.parametrize("module", [perfgate.ingest.units, perfgate.ingest.names])
def test_doctests(module: object) -> None:
    failures, tried = doctest.testmod(module)  # type: ignore[arg-type]
    assert tried > 0 and failures == 0


@pytest.mark.parametrize(
    ("unit", "base", "factor"),
    [
        ("ns", "ns", 1.0), ("us", "ns", 1e3), ("usecond", "ns", 1e3), ("ms", "ns", 1e6), ("second", "ns", 1e9),
        ("byte", "byte", 1.0), ("Kbyte", "byte", 1e3), ("Mbyte", "byte", 1e6), ("Gbyte", "byte", 1e9),
        ("Kbyte/block", "byte/block", 1e3), ("Gbyte/second", "byte/s", 1e9), ("byte/s", "byte/s", 1.0),
        ("Mhz", "hz", 1e6), ("cycle/nsecond", "cycle/s", 1e9), ("%", "%", 1.0), ("", "", 1.0),
        ("register/thread", "register/thread", 1.0), ("sector", "sector", 1.0),
    ],
)  # fmt: skip
def test_units_normalise_to_base(unit: str, base: str, factor: float) -> None:
    assert normalise_unit(unit) == (base, factor)


def test_number_evidence() -> None:
    assert classify("1,398,314.67") is FormatClue.POINT
    assert classify("940.80") is FormatClue.POINT  # two decimals: only the C reading fits
    assert classify("27.595.520") is FormatClue.COMMA
    assert classify("65,77") is FormatClue.COMMA
    assert classify("65,536") is FormatClue.AMBIGUOUS_COMMA
    assert classify("65.536") is FormatClue.AMBIGUOUS_DOT
    assert classify("16") is FormatClue.NONE
    assert classify("PolicySpread") is FormatClue.NONE


def test_number_format_decision() -> None:
    assert decide_format(FormatClue.POINT | FormatClue.AMBIGUOUS_COMMA) is NumberFormat.POINT
    assert decide_format(FormatClue.COMMA | FormatClue.AMBIGUOUS_DOT) is NumberFormat.COMMA
    assert decide_format(FormatClue.AMBIGUOUS_COMMA) is NumberFormat.POINT  # C locale's integers
    assert isinstance(decide_format(FormatClue.POINT | FormatClue.COMMA), str)  # mixed: refuse
    assert isinstance(decide_format(FormatClue.AMBIGUOUS_DOT), str)  # cannot tell: refuse


def test_parse_number_both_locales() -> None:
    assert parse_number("65,536", NumberFormat.POINT) == 65536.0
    assert parse_number("65,536", NumberFormat.COMMA) == 65.536
    assert parse_number("1.234,5", NumberFormat.COMMA) == 1234.5
    assert parse_number("1.5e+10", NumberFormat.POINT) == 1.5e10
    assert parse_number("n/a", NumberFormat.POINT) is None
    assert parse_number("12,34,5", NumberFormat.POINT) is None
