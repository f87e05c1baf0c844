"""Property-based tests: whatever bytes arrive, the capture reader and the baseline loader
either return a result or raise perfgate's own error with one line per problem. Nothing else
escapes, and a number is never misread."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfgate.baseline.load import load_baseline
from perfgate.common.errors import PerfgateError
from perfgate.ingest import read_capture
from perfgate.ingest.units import NumberFormat, classify, decide_format, parse_number
from perfgate.judge.states import KernelState
from perfgate.verdicts.check import check
from tests.conftest import ROOT, data

# PERFGATE_FUZZ_EXAMPLES=2000 for a longer hunt; CI runs the default.
EXAMPLES = int(os.environ.get("PERFGATE_FUZZ_EXAMPLES", "120"))
# In CI the examples are derived from the tests alone (derandomize): a run there tries what
# ran here, so a merge is never refused by a new random draw; the hunt for new inputs is
# local (PERFGATE_FUZZ_EXAMPLES, tests/fuzz.py), and what it finds goes to tests/corpus.
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
    database=None if os.environ.get("CI") else settings.default.database,
)
SLOW = settings(SETTINGS, max_examples=max(EXAMPLES // 3, 10))
_REAL = data("zoo-good-short-run2.csv").read_text()
_LINES = _REAL.splitlines(keepends=True)
_AT = next(i for i, line in enumerate(_LINES) if "Kernel Name" in line)
SMALL = "".join(_LINES[: _AT + 2 + 11])  # every kernel of the zoo once
BASELINE = (ROOT / "baselines" / "h100" / "zoo.yaml").read_text()


@contextmanager
def _file(content: bytes | str, suffix: str = ".csv") -> Iterator[str]:
    fd, name = tempfile.mkstemp(suffix=suffix)
    with os.fdopen(fd, "wb") as fh:
        fh.write(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)
    try:
        yield name
    finally:
        Path(name).unlink()


def _read_capture_or_error(content: bytes | str) -> None:
    with _file(content) as path:
        try:
            capture = read_capture(path)
        except PerfgateError as exc:
            assert exc.lines() and all(line.strip() for line in exc.lines())
            assert str(path) in str(exc)
        else:
            assert capture.launches


@SETTINGS
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_escape(blob: bytes) -> None:
    _read_capture_or_error(blob)


@SETTINGS
@given(
    st.text(
        alphabet=st.sampled_from(list('",\n\r =PROFERRWANIG0123456789.,KernlNamID-ab')),
        max_size=600,
    )
)
def test_csv_shaped_noise_never_escapes(text: str) -> None:
    _read_capture_or_error('"ID","Kernel Name","x__y.sum"\n' + text)


def _mutate(draw: st.DrawFn) -> str:
    lines = list(SMALL.splitlines(keepends=True))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["cut", "drop", "dup", "insert", "field", "swap"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "cut":
            text = "".join(lines)
            lines = [text[: draw(st.integers(0, len(text)))]]
        elif op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "insert":
            lines.insert(i, draw(st.text(max_size=80)) + "\n")
        elif op == "field":
            fields = lines[i].split('","')
            j = draw(st.integers(0, len(fields) - 1))
            fields[j] = draw(st.text(max_size=20))
            lines[i] = '","'.join(fields)
        elif op == "swap":
            lines[i] = (
                lines[i].replace(",", ".") if draw(st.booleans()) else lines[i].replace(".", ",")
            )
    return "".join(lines)


@SETTINGS
@given(st.data())
def test_mutated_real_captures_never_escape(d: st.DataObject) -> None:
    _read_capture_or_error(d.draw(st.composite(_mutate)()))


_NUMBER = st.one_of(
    st.integers(-(10**12), 10**12).map(float),
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False).map(lambda x: round(x, 2)),
)


@SETTINGS
@given(st.lists(_NUMBER, min_size=1, max_size=30), st.sampled_from(list(NumberFormat)))
def test_numbers_are_read_back_or_refused_never_misread(
    values: list[float], fmt: NumberFormat
) -> None:
    """Write numbers as ncu writes them under either locale; reading them back gives the same
    numbers or a refusal, never other numbers."""
    texts = []
    for v in values:
        t = f"{v:,.2f}" if not v.is_integer() else f"{int(v):,}"
        if fmt is NumberFormat.COMMA:
            t = t.replace(",", "_").replace(".", ",").replace("_", ".")
        texts.append(t)
    evidence = classify(texts[0])
    for t in texts[1:]:
        evidence |= classify(t)
    decided = decide_format(evidence)
    if isinstance(decided, str):
        return  # refused: the file would be rejected with this sentence
    for v, t in zip(values, texts):
        assert parse_number(t, decided) == v, (t, decided)


def _replace_somewhere(draw: st.DrawFn, node: object, depth: int = 0) -> object:
    junk = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=12),
        st.lists(st.integers(), max_size=3),
    )
    if depth > 6 or not isinstance(node, (dict, list)) or not node or draw(st.integers(0, 3)) == 0:
        return draw(junk)
    if isinstance(node, dict):
        key = draw(st.sampled_from(sorted(node, key=str)))
        return {**node, key: _replace_somewhere(draw, node[key], depth + 1)}
    i = draw(st.integers(0, len(node) - 1))
    return [*node[:i], _replace_somewhere(draw, node[i], depth + 1), *node[i + 1 :]]


@SLOW
@given(st.data())
def test_mutated_baselines_load_or_fail_with_json_paths(d: st.DataObject) -> None:
    doc = yaml.safe_load(BASELINE)
    mutated = doc
    for _ in range(d.draw(st.integers(1, 3))):
        mutated = _replace_somewhere(d.draw, mutated)
    text = yaml.safe_dump(mutated, sort_keys=False)
    with _file(text, ".yaml") as path:
        try:
            baseline = load_baseline(path)
        except PerfgateError as exc:
            assert all(line.startswith(f"{path}") for line in exc.lines())
            return
    # A baseline that loads must also check without an escape.
    capture_path = data("zoo-good-short-run1.csv")
    result = check(baseline, read_capture(capture_path))
    # One verdict per baselined kernel, whatever the mutation did to it; a verdict's
    # comparisons are its own.
    judged = [v for v in result.verdicts if v.state is not KernelState.NEW]
    assert [v.kernel for v in judged] == [k.id for k in baseline.kernels]
    assert all(c.kernel == v.kernel for v in judged for c in v.comparisons)
    assert int(result.exit_code) in (0, 1, 2)


@SETTINGS
@given(st.text(max_size=400))
def test_arbitrary_yaml_text_never_escapes(text: str) -> None:
    with _file(text, ".yaml") as path:
        try:
            load_baseline(path)
        except PerfgateError as exc:
            assert exc.lines()


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**12), st.floats(allow_nan=True),
    st.text(max_size=8), st.lists(st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.floats(), st.text(max_size=4), st.booleans()), max_size=3),
    st.lists(st.one_of(st.integers(-1, 3), st.sampled_from([1.0, 2.0, True])), max_size=4),
    st.sampled_from([0, 1, 2.0, "", "k", {}, {"name": "k"}, {"function": ""}]),
    st.sampled_from([math.nan, math.inf, -math.inf, {"relative": math.nan}, [1, math.inf]]),
)  # fmt: skip
_KEYS = st.sampled_from(
    ["value", "min", "max", "unit", "source", "group", "shares", "threshold", "reasons",
     "family", "calibration", "relative", "bogus", "expect", "direction"]
)  # fmt: skip
_KERNEL_KEYS = st.sampled_from(
    ["id", "match", "name", "launches", "metrics", "family", "info", "bogus"]
)
_MATCH_KEYS = st.sampled_from(
    ["function", "name", "regex", "block", "grid", "nvtx", "work", "bogus"]
)


@SLOW
@given(data=st.data())
def test_the_fast_schema_check_never_accepts_what_jsonschema_refuses(data: st.DataObject) -> None:
    """perfgate.baseline.fastcheck skips jsonschema for the kernel entries when it is sure; a mutated
    real baseline it calls valid must be valid for jsonschema too."""
    from perfgate.baseline.fastcheck import without_bulk
    from perfgate.common.schemas import schema_errors

    doc = yaml.safe_load(BASELINE)
    kernels = data.draw(st.lists(st.sampled_from(doc["kernels"]), max_size=2, unique_by=id))
    doc["kernels"] = kernels  # few kernels keep jsonschema's share of the test short
    kernel = kernels[0] if kernels else {}
    where = data.draw(
        st.sampled_from(["metric", "threshold", "info", "name", "kernel", "match", "drop"])
    )
    metric = data.draw(st.sampled_from(sorted(kernel.get("metrics") or {"duration": 0})))
    if not kernels:
        pass  # no kernel at all: the schema wants one
    elif where == "metric":
        kernel["metrics"][metric][data.draw(_KEYS)] = data.draw(_VALUES)
    elif where == "threshold":
        kernel["metrics"][metric]["threshold"] = {data.draw(_KEYS): data.draw(_VALUES)}
    elif where == "info":
        kernel.setdefault("info", {})[data.draw(st.text(max_size=6))] = data.draw(_VALUES)
    elif where == "kernel":
        kernel[data.draw(_KERNEL_KEYS)] = data.draw(_VALUES)
    elif where == "match":
        kernel["match"][data.draw(_MATCH_KEYS)] = data.draw(_VALUES)
    elif where == "drop":
        kernel.pop(data.draw(_KERNEL_KEYS), None)
        if isinstance(kernel.get("match"), dict):
            kernel["match"].pop(data.draw(_MATCH_KEYS), None)
    else:
        kernel["metrics"][data.draw(st.text(max_size=6))] = {"value": data.draw(_VALUES)}
    light = without_bulk(doc)
    if light is not None and not schema_errors(light, "baseline.schema.json", lambda p: None):
        assert schema_errors(doc, "baseline.schema.json", lambda p: None) == []


_TOP = st.sampled_from(
    ["format_version", "provenance", "fingerprint", "thresholds", "identity", "kernels", "program",
     "bogus"]
)  # fmt: skip
# Numbers that feed judgement: the fast check must refuse the non-finite ones as jsonschema does.
_JUDGED = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-2, 10**6),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)  # fmt: skip
_INNER = st.sampled_from(
    ["recorded_at", "reason", "gpu", "captures", "name", "cc", "file", "sha256", "launches",
     "stall_family", "stall_reasons", "metrics", "ncu", "nvtx", "duration", "relative", "bogus",
     "gpu_time"]
)  # fmt: skip


@SLOW
@given(data=st.data())
def test_the_fast_document_check_never_accepts_what_jsonschema_refuses(
    data: st.DataObject,
) -> None:
    """perfgate.baseline.fastcheck.document_is_valid skips jsonschema for the whole document when it
    is sure; a real baseline mutated at its top level (or one level down, or in a capture
    entry) that it calls valid must be valid for jsonschema too."""
    from perfgate.baseline.fastcheck import document_is_valid
    from perfgate.common.schemas import schema_errors

    doc = yaml.safe_load(BASELINE)
    doc["kernels"] = doc["kernels"][:1]
    doc.setdefault("thresholds", {"duration": {"relative": 0.1}})
    doc.setdefault("identity", {"nvtx": False})
    top = data.draw(_TOP)
    where = data.draw(
        st.sampled_from(["replace", "inner", "capture", "drop", "judged", "configuration"])
    )
    if where == "replace":
        doc[top] = data.draw(st.one_of(_VALUES, st.integers(-1, 4), st.booleans()))
    elif where == "drop":
        doc.pop(top, None)
    elif where == "inner" and isinstance(doc.get(top), dict):
        doc[top][data.draw(_INNER)] = data.draw(_VALUES)
    elif where == "judged":
        doc["program"] = {
            "gpu_time": {
                "value": data.draw(_JUDGED),
                "runs": [data.draw(_JUDGED)],
                "threshold": {"relative": data.draw(_JUDGED)},
            }
        }
        doc["thresholds"] = {
            "duration": {data.draw(st.sampled_from(["relative", "absolute"])): data.draw(_JUDGED)}
        }
    elif where == "configuration":
        doc["kernels"][0]["configurations"] = [{"runs": 1, "duration": data.draw(_JUDGED)}]
    elif where == "capture":
        captures = doc.setdefault("provenance", {}).setdefault("captures", [{"file": "c.csv"}])
        if captures:
            captures[0][data.draw(_INNER)] = data.draw(st.one_of(_VALUES, st.just("a" * 64)))
    if document_is_valid(doc):
        assert schema_errors(doc, "baseline.schema.json", lambda p: None) == []


def test_the_fast_document_check_vouches_for_every_committed_baseline() -> None:
    from perfgate.baseline.fastcheck import document_is_valid

    paths = sorted((ROOT / "baselines").rglob("*.yaml"))
    assert paths and all(document_is_valid(yaml.safe_load(p.read_text())) for p in paths)


# Hostile YAML (issue 15): tags with values not of their type, keys that are not strings,
# nesting by block indicators on one line as well as by brackets and indentation.
_Y_TAGS = ["!!int", "!!float", "!!bool", "!!null", "!!str", "!!timestamp", "!!binary", "!!set",
         "!!omap", "!!seq", "!!map", "!!python/none", "!local"]  # fmt: skip
_Y_SCALARS = ["abc", "2020-13-45", "~", "1e999", ".nan", "0x1F", "1:30", "yes", "1" + "0" * 5000,
            "[a", "{a: 1}", "[1, 2]", "'x'", "@x", "- x"]  # fmt: skip
_Y_KEYS = ["1.5", "1", "true", "null", "[a, b]", "'1.5'", "on", "<<", "value"]
_Y_FRAGMENT = st.one_of(
    st.tuples(st.sampled_from(_Y_TAGS), st.sampled_from(_Y_SCALARS)).map(" ".join),
    st.sampled_from(_Y_SCALARS),
    st.tuples(st.sampled_from(_Y_KEYS), st.sampled_from(_Y_SCALARS)).map(lambda t: f"{{{t[0]}: {t[1]}}}"),
    st.tuples(st.sampled_from(["- ", "? ", "[", "{", "- !t "]), st.integers(0, 700)).map(
        lambda t: "\n" + t[0] * t[1] + "x"
    ),
)  # fmt: skip


@SETTINGS
@given(st.lists(_Y_FRAGMENT, min_size=1, max_size=3), st.sampled_from(["value", "min", "shares"]))
def test_hostile_yaml_ends_in_a_result_or_one_error_per_problem(
    fragments: list[str], key: str
) -> None:
    text = (
        "format_version: 2\nkernels:\n- id: k\n  match: {name: k}\n  metrics:\n"
        f"    dominant_stall: {{value: wait, {key}: {' '.join(fragments)}}}\n"
    )
    with _file(text, ".yaml") as path:
        try:
            load_baseline(path)
        except PerfgateError as exc:
            assert exc.lines() and all(line.startswith(path) for line in exc.lines())


@SETTINGS
@given(st.integers(1, 9), st.sampled_from([-2, -1, 1, 2]))
def test_a_launch_row_with_fields_missing_or_extra_is_refused(row: int, change: int) -> None:
    """Never dropped or padded: a row in the middle of a capture whose field count is not the
    header's is an error naming its line."""
    lines = SMALL.splitlines(keepends=True)
    i = _AT + 2 + row
    fields = lines[i].rstrip("\n").removesuffix('"').split('","')
    fields = fields[:change] if change < 0 else fields + ["7"] * change
    lines[i] = '","'.join(fields) + '"\n'
    with _file("".join(lines)) as path:
        try:
            read_capture(path)
        except PerfgateError as exc:
            assert f"line {i + 1}:" in str(exc), str(exc)
        else:
            raise AssertionError("a broken row was read")


_R_ATOM = st.sampled_from(["a", "b", ".", r"\w", "[ab]", "(a)", "(?:a|b)", "(a|ab)", "x"])
_R_QUANT = st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,3}", "{2,}", "*?"])
_R_REGEX = st.recursive(
    st.tuples(_R_ATOM, _R_QUANT).map("".join),
    lambda inner: st.tuples(st.lists(inner, min_size=1, max_size=3), _R_QUANT).map(
        lambda t: "(" + "".join(t[0]) + ")" + t[1]
    ),
    max_leaves=6,
)


@SETTINGS
@given(st.lists(_R_REGEX, min_size=1, max_size=3).map("".join), st.sampled_from(["", "$", "!"]))
def test_a_pattern_perfgate_accepts_does_not_backtrack_exponentially(body: str, end: str) -> None:
    import re

    from perfgate.common import patterns

    pattern = body + end
    try:
        patterns.compile_pattern(pattern)
    except (patterns.UnsafePattern, re.error):
        return
    patterns.reset_budget()
    patterns.search(pattern, "a" * 26 + "!")  # PatternTimeout fails the test
