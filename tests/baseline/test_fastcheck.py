"""Issue 31: the fast schema check (perfgate.baseline.fastcheck) accepts exactly what the JSON
Schema accepts.

A hand copy of the schema let `time_basis: Full` (which switched off every duration), negative
bounds and any `format_version` through. The fast check is now compiled from
schemas/baseline.schema.json; these tests hold it to jsonschema (perfgate's validator:
perfgate.common.schemas) on documents generated from the schema itself:

- every node of the schema gets its edge values, explicitly (not by a random draw's luck: CI
  runs Hypothesis derandomized): each enum value and its case variants, numbers at, just below
  and far below a minimum, negative zero, non-finite numbers, integral floats and booleans for
  integers, strings at and below a minimum length and beside a pattern (a trailing newline),
  every other JSON type, a missing required key, an extra key, a key that is not a string;
  each is placed alone into an otherwise valid document with every optional key present;
- each keyword the compiler knows, on small schemas at values the baseline schema does not use
  (KEYWORD_SCHEMAS), against jsonschema;
- Hypothesis then draws whole documents from the schema, at random keys and values.

A keyword added to the schema is checked with nothing else to edit; one the compiler does not
know, or the generator makes no edges for (GENERATED), fails a test. docs/mutation.md ("The fast
schema check") gives the mutants these tests kill (scripts/mutate.py's HAND_MUTANTS).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfgate.baseline.fastcheck import (
    compile_schema,
    document_is_valid,
    unknown_keywords,
    without_bulk,
)
from perfgate.common.schemas import schema_errors
from tests.conftest import ROOT
from tests.hostile.test_properties import SETTINGS

SCHEMA: dict[str, Any] = json.loads((ROOT / "schemas" / "baseline.schema.json").read_text())
DEFS: dict[str, Any] = SCHEMA["$defs"]
NAME = "baseline.schema.json"


def _resolved(node: Any) -> Any:
    while isinstance(node, Mapping) and "$ref" in node:
        node = {**DEFS[node["$ref"].removeprefix("#/$defs/")], **{
            k: v for k, v in node.items() if k != "$ref"
        }}  # fmt: skip
    return node


def _types(node: Mapping[str, Any]) -> list[str]:
    t = node.get("type")
    if t is None:
        if "enum" in node or "const" in node:
            return []
        return ["object"] if "properties" in node else []
    return [t] if isinstance(t, str) else list(t)


def _string(node: Mapping[str, Any]) -> str:
    """A string of the node's length and pattern."""
    pattern = node.get("pattern")
    for candidate in ("a" * max(1, node.get("minLength", 0)), "a" * 64, "a.b_1"):
        if len(candidate) >= node.get("minLength", 0) and (
            pattern is None or re.search(pattern, candidate)
        ):
            return candidate
    raise AssertionError(f"no example string for {node}")


def valid(node: Any) -> Any:
    """One valid instance of `node`, every optional property present."""
    node = _resolved(node)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][-1]
    types = _types(node)
    kind = types[0] if types else "object"
    if kind == "object":
        out = {k: valid(s) for k, s in node.get("properties", {}).items()}
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) and not node.get("properties"):
            out["x.y_1"] = valid(extra)
        return out
    if kind == "array":
        n = max(node.get("minItems", 1), 1)
        return [valid(node.get("items", {"type": "string"})) for _ in range(n)]
    if kind == "string":
        return _string(node)
    if kind == "integer":
        return max(node.get("minimum", 1), 1)
    if kind == "number":
        return max(node.get("minimum", 0), 0) + 1.5
    if kind == "boolean":
        return True
    return None


_OTHERS: list[Any] = [None, True, False, 0, 1, -1, 2.0, 1.5, -0.5, -0.0, math.nan, math.inf,
                      -math.inf, "", "x", "1", [], [1, 1, 1], {}, {"x": 1}]  # fmt: skip


def _cases(text: str) -> list[str]:
    return list(dict.fromkeys([text.upper(), text.lower(), text.title(), text.capitalize(),
                               f" {text}", f"{text}\n", text[:-1]]))  # fmt: skip


def edges(node: Any) -> list[Any]:
    """The node's own edge values: at and beside each keyword's limit, and other types."""
    node = _resolved(node)
    out: list[Any] = list(_OTHERS)
    for value in node.get("enum", []) + ([node["const"]] if "const" in node else []):
        out.append(value)
        if isinstance(value, str):
            out += _cases(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out += [float(value), str(value), value + 1, value - 1, -value, value + 0.5, True]
    if "enum" in node and all(isinstance(x, int) for x in node["enum"]):
        out += [max(node["enum"]) + 1, min(node["enum"]) - 1, 0, 99]
    if "minimum" in node:
        m = node["minimum"]
        out += [m, m - 1, m - 0.5, m - 1e-9, -1e-300, -(10**12), m + 0.5, float(m), -1]
    if "integer" in _types(node):
        out += [2.0, 2.5, 1e300, 10**30]
    if "minLength" in node:
        n = node["minLength"]
        out += ["a" * n, "a" * max(0, n - 1)]
    if "pattern" in node:
        good = _string(node)
        out += [good, f"{good}\n", f"\n{good}", "bad name!", "a b", "A" * 64, "g" * 64,
                "a" * 63, "0" * 65, "é"]  # fmt: skip
    if "minItems" in node or "maxItems" in node or "array" in _types(node):
        item = valid(node.get("items", {}))
        least, most = node.get("minItems", 0), node.get("maxItems")
        out += [[item] * max(0, least - 1), [item] * least, [item] * (least + 1)]
        if most is not None:
            out += [[item] * most, [item] * (most + 1)]
    if "object" in _types(node) or "properties" in node:
        base = valid(node)
        out.append(base)
        for key in node.get("required", []):
            out.append({k: v for k, v in base.items() if k != key})
        out += [{**base, "bogus": 1}, {**base, 1: 1}, {**base, "": 1}, {**base, "a b": 1},
                {**base, "a\n": _extra_example(node)}]  # fmt: skip
        if node.get("anyOf"):
            # None of the options' keys, then each option's keys alone (`anyOf` is not `allOf`).
            named = {k for option in node["anyOf"] for k in option.get("required", [])}
            out.append({k: v for k, v in base.items() if k not in named})
            for option in node["anyOf"]:
                alone = named - set(option.get("required", []))
                out.append({k: v for k, v in base.items() if k not in alone})
        if node.get("minProperties"):
            out.append({})
    return out


def _extra_example(node: Mapping[str, Any]) -> Any:
    extra = node.get("additionalProperties")
    return valid(extra) if isinstance(extra, Mapping) else 1


def documents() -> Iterator[tuple[str, Any]]:
    """(where, a document): the valid full document, then each edge value of each node of the
    schema placed alone into it."""
    root = valid(SCHEMA)
    yield "$", root
    yield from _placed(SCHEMA, root, "$", lambda v: v)


def _placed(node: Any, example: Any, where: str, into: Any) -> Iterator[tuple[str, Any]]:
    node = _resolved(node)
    for i, value in enumerate(edges(node)):
        yield f"{where} edge {i}: {value!r}"[:200], into(value)
    if isinstance(example, dict):
        children = dict(node.get("properties", {}))
        extra = node.get("additionalProperties")
        for key in example:
            schema = children.get(key, extra if isinstance(extra, Mapping) else None)
            if schema is None:
                continue

            def put(value: Any, key: Any = key, example: Any = example) -> Any:
                return into({**example, key: value})

            yield from _placed(schema, example[key], f"{where}.{key}", put)
    elif isinstance(example, list) and example and "items" in node:

        def first(value: Any, example: Any = example) -> Any:
            return into([value, *example[1:]])

        yield from _placed(node["items"], example[0], f"{where}[0]", first)


DOCUMENTS = list(documents())


_KERNEL = valid(DEFS["kernel"])


def _agree(doc: Any) -> None:
    jsonschema_says = not schema_errors(doc, NAME)
    assert document_is_valid(doc) is jsonschema_says, (jsonschema_says, doc)
    light = without_bulk(doc)
    if light is not None:  # every kernel certainly valid: the rest decides alone
        assert (not schema_errors(light, NAME)) is jsonschema_says
    elif isinstance(doc, dict) and isinstance(doc.get("kernels"), list) and doc["kernels"]:
        # A kernel it is not sure of stays so behind a valid one: every entry, not any one.
        assert without_bulk({**doc, "kernels": [_KERNEL, *doc["kernels"]]}) is None


def test_the_fast_check_knows_every_keyword_of_the_schema() -> None:
    assert unknown_keywords() == frozenset()


# The keywords `valid` and `edges` make values for (or that say nothing about validity). A
# keyword the schema gains outside this set fails the test below until the generator makes its
# edges: without them, agreement on the generated documents would say nothing about it.
GENERATED = frozenset({
    "$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default",
    "$ref", "type", "enum", "const", "minimum", "minLength", "pattern", "items", "minItems",
    "maxItems", "properties", "additionalProperties", "propertyNames", "required",
    "minProperties", "anyOf",
})  # fmt: skip
# Where a keyword's value holds subschemas (the other keywords' values are not schemas).
_ONE_SCHEMA = ("items", "additionalProperties", "propertyNames")
_SCHEMA_MAPS = ("properties", "$defs")


def keywords(node: Any) -> set[str]:
    """Every keyword used anywhere in a schema."""
    if not isinstance(node, Mapping):
        return set()
    out = set(node)
    for key in _ONE_SCHEMA:
        out |= keywords(node.get(key))
    for key in _SCHEMA_MAPS:
        for sub in node.get(key, {}).values():
            out |= keywords(sub)
    for sub in node.get("anyOf", []):
        out |= keywords(sub)
    return out


def test_the_generator_knows_every_keyword_of_the_schema() -> None:
    used = keywords(SCHEMA)
    assert {"minimum", "enum", "anyOf", "propertyNames", "maxItems"} <= used  # the walk reaches
    assert used <= GENERATED, sorted(used - GENERATED)


def test_a_keyword_the_compiler_does_not_know_makes_it_unsure() -> None:
    """A keyword added to the schema before the compiler learns it: its node answers "not
    sure" (jsonschema decides), never "valid" by ignoring it."""
    for schema, unknown, reaching in (
        ({"type": "number", "maximum": 3}, "maximum", 1),
        ({"properties": {"a": {"exclusiveMinimum": 0}}}, "exclusiveMinimum", {"a": 1}),
        ({"type": "array", "items": {"uniqueItems": True}}, "uniqueItems", [1]),
        ({"$ref": "#/$defs/missing"}, "$ref #/$defs/missing", 1),
        ({"type": "decimal"}, "type 'decimal'", 1),
        ({"anyOf": [{"not": {"type": "string"}}]}, "not", 1),
        ({"type": "array", "items": 3}, "schema 3", [1]),
    ):
        check, missing = compile_schema(schema)
        assert unknown in missing, (schema, missing)
        assert not check(reaching), schema


# Each keyword the compiler knows, at values the baseline schema does not use (negative and
# fractional bounds, mixed enums, keywords without a type, `$ref` beside other keywords), held
# to jsonschema on the values below: a keyword the schema later uses another way is compiled
# the way jsonschema reads it.
KEYWORD_SCHEMAS: list[Any] = [
    True, False, {}, {"title": "t", "description": "d", "default": 1, "examples": [1],
                      "$comment": "c", "$schema": "https://json-schema.org/draft/2020-12/schema",
                      "$id": "https://example.com/s.json"},
    {"type": "null"}, {"type": "boolean"}, {"type": "string"}, {"type": "object"},
    {"type": "array"}, {"type": "number"}, {"type": "integer"}, {"type": ["integer", "null"]},
    {"type": ["array", "object"]}, {"type": ["boolean", "integer", "string"]},
    {"type": "number", "minimum": -2.5}, {"type": "integer", "minimum": -3},
    {"type": "integer", "minimum": 0.5}, {"minimum": 0}, {"type": ["integer", "null"], "minimum": 1},
    {"type": ["number", "string"], "minimum": 0, "minLength": 2, "pattern": "b"},
    {"type": "string", "minLength": 0}, {"type": "string", "minLength": 2},
    {"type": "string", "pattern": "^a|b$"}, {"minLength": 2}, {"pattern": "^x"},
    {"enum": [None, True, 0, 1.5, "a", [1, "a"], {"k": [True]}]}, {"enum": []},
    {"enum": ["a", "b"]}, {"type": "integer", "enum": [1, 2]},
    {"const": {"a": [1, 2.0]}}, {"const": False}, {"const": 0}, {"const": None}, {"const": [0]},
    {"const": "a"},
    {"type": "array", "items": False}, {"items": {"type": "integer"}},
    {"type": "array", "minItems": 0, "maxItems": 0}, {"minItems": 2}, {"maxItems": 1},
    {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 2},
    {"type": "object", "required": ["a", "b"], "additionalProperties": False,
     "properties": {"a": {"type": "integer"}, "b": True, "c": False}},
    {"properties": {"a": {"const": 1}}}, {"required": ["a"]},
    {"additionalProperties": {"type": "string"}}, {"propertyNames": {"minLength": 2}},
    {"propertyNames": False}, {"minProperties": 2}, {"type": "object", "minProperties": 1},
    {"type": "object", "additionalProperties": True, "properties": {"a": {"type": "string"}}},
    {"anyOf": [{"type": "string"}, {"minimum": 3}]},
    {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"$ref": "#/$defs/n", "$defs": {"n": {"type": "integer", "minimum": 0}}},
    {"$ref": "#/$defs/n", "minimum": 5, "$defs": {"n": {"type": "number"}}},
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"}},
     "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/m"}}, "m": {"const": 1}}},
    # Three and four keywords on one node, folded into one check.
    {"type": "string", "enum": ["a", "ab"], "const": "ab"},
    {"type": "integer", "enum": [1, 2, 7], "const": 7, "anyOf": [{"minimum": 5}, {"const": 1}]},
]  # fmt: skip


class _Float(float):
    """A float of another class: perfgate's validator still refuses it non-finite."""


_VALUES: list[Any] = [*_OTHERS, -3, -2.5, -2.6, -3.5, 3, 5, 4.999, 0.5, 1.0, 0.0, 2**64, -(2**64),
    1e300, -1e300, 5e-324, "a", "b", "ab", "ab\n", "ba", "xa", "é", "a\nb", [None], [1, "a"],
    [1.0, "a"], [True, "a"], ["a"], ["a", "b"], ["a", "b", "a"], ["c"], [0], [False], [0.0],
    [1, 2, 3], [[]], [{}], {"k": [True]}, {"k": [1]}, {"k": [1.0]}, {"a": [1, 2.0]},
    {"a": [1, 2]}, {"a": [True, 2]}, {"a": 1}, {"a": 1.0}, {"a": True}, {"a": "x"},
    {"a": 1, "b": 2}, {"a": 1.0, "b": None}, {"a": True, "b": 1}, {"b": 1}, {"a": 1, "c": 1},
    {"ab": 1, "cd": 2}, {"a": "x", "bb": "y"}, {1: "x"}, {"x": [1, 1]}, {"x": [2]}, {"x": 1},
    # Numbers of other classes (another loader's): jsonschema takes any numbers.Number.
    Fraction(5, 2), Fraction(-1, 2), Fraction(7), Decimal("2.5"), Decimal("-4"), _Float(7.0),
    _Float(-0.5), _Float(math.nan), _Float(math.inf),
]  # fmt: skip


def test_every_keyword_the_compiler_knows_is_held_to_jsonschema() -> None:
    from perfgate.baseline.fastcheck import _KNOWN
    from perfgate.common.schemas import _validator

    exercised = set().union(*(keywords(schema) for schema in KEYWORD_SCHEMAS))
    assert exercised >= _KNOWN, sorted(_KNOWN - exercised)
    # perfgate's validator class (a number is finite), on each schema of the table.
    finite = type(_validator(NAME))
    disagree = []
    for schema in KEYWORD_SCHEMAS:
        check, unknown = compile_schema(schema)
        assert not unknown, (schema, unknown)
        jsonschema_check = finite(schema)
        for value in _VALUES:
            if check(value) is not jsonschema_check.is_valid(value):
                disagree.append((schema, value))
    assert not disagree, f"{len(disagree)}: {disagree[:10]}"


def test_the_generated_documents_reach_every_node_and_both_answers() -> None:
    """The generator is itself held: its full document is valid, it reaches the enums that
    decide what is gated, and a fair share of its documents are valid."""
    assert not schema_errors(DOCUMENTS[0][1], NAME)
    where = " ".join(w for w, _ in DOCUMENTS)
    for path in ("$.fingerprint.time_basis", "$.format_version", "$.program.gpu_time.runs[0]",
                 "$.thresholds.x.y_1.relative", "$.kernels[0].metrics.x.y_1.threshold.direction",
                 "$.kernels[0].configurations[0].duration", "$.kernels[0].history[0].action",
                 "$.kernels[0].match.work"):  # fmt: skip
        assert f"{path} edge" in where, path
    valid_share = sum(1 for _, d in DOCUMENTS if not schema_errors(d, NAME)) / len(DOCUMENTS)
    assert 0.1 < valid_share < 0.9, valid_share


def test_the_fast_check_and_jsonschema_agree_on_every_edge() -> None:
    disagree = []
    for where, doc in DOCUMENTS:
        try:
            _agree(doc)
        except AssertionError:
            disagree.append(where)
    assert not disagree, f"{len(disagree)} of {len(DOCUMENTS)}: {disagree[:20]}"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("fingerprint", "time_basis"), "Full"),  # the hostile round's value: every duration off
        (("fingerprint", "time_basis"), "GATE"),
        (("format_version", ), 3),
        (("format_version", ), 0),
        (("format_version", ), True),
        (("program", "gpu_time", "threshold", "relative"), -0.02),
        (("thresholds", "duration", "absolute"), -1),
        (("kernels", 0, "configurations"), [{"runs": 1, "duration": -1.0}]),
    ],
)  # fmt: skip
def test_the_hostile_rounds_values_are_refused_by_both(path: tuple[Any, ...], value: Any) -> None:
    import yaml

    doc = yaml.safe_load((ROOT / "baselines" / "h100" / "zoo.yaml").read_text())
    doc.setdefault("thresholds", {"duration": {"relative": 0.1}})
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert schema_errors(doc, NAME)
    assert not document_is_valid(doc)


def test_the_schema_restricts_what_decides_the_gate() -> None:
    """The schema itself refuses what would switch a gate off: a time basis that is not one of
    the two, and negative bounds."""
    fingerprint = SCHEMA["properties"]["fingerprint"]["properties"]
    assert fingerprint["time_basis"]["enum"] == ["gate", "full"]
    override = DEFS["override"]["properties"]
    assert all(override[k]["minimum"] == 0 for k in ("relative", "absolute", "margin"))
    gpu_time = SCHEMA["properties"]["program"]["properties"]["gpu_time"]["properties"]
    assert gpu_time["threshold"]["properties"]["relative"]["minimum"] == 0
    assert gpu_time["value"]["minimum"] == 0 and gpu_time["runs"]["items"]["minimum"] == 0
    assert SCHEMA["properties"]["format_version"]["enum"] == [1, 2]


def test_every_committed_baseline_is_vouched_for() -> None:
    import yaml

    paths = sorted((ROOT / "baselines").rglob("*.yaml"))
    assert paths and all(document_is_valid(yaml.safe_load(p.read_text())) for p in paths)


def test_the_kernels_of_a_baseline_with_a_problem_elsewhere_are_cut() -> None:
    """Where the rest of a baseline has a problem, jsonschema words it over the document with
    its (certainly valid) kernels cut to one placeholder: the fast path's point, on every
    committed baseline."""
    import yaml

    for path in sorted((ROOT / "baselines").rglob("*.yaml")):
        doc = {**yaml.safe_load(path.read_text()), "format_version": 3}
        light = without_bulk(doc)
        assert light is not None, path
        assert len(light["kernels"]) == 1 < len(doc["kernels"])
        assert {k: v for k, v in light.items() if k != "kernels"} == {
            k: v for k, v in doc.items() if k != "kernels"
        }
        assert schema_errors(light, NAME) == schema_errors(doc, NAME) != []


# ----------------------------------------------------------------------- random documents


def _strategy(node: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    node = _resolved(node)
    options: list[st.SearchStrategy[Any]] = [st.sampled_from(edges(node))]
    types = _types(node)
    if depth < 6 and ("object" in types or "properties" in node):
        properties = node.get("properties", {})
        extra = node.get("additionalProperties")
        optional = {k: _strategy(s, depth + 1) for k, s in properties.items()}
        fixed = st.fixed_dictionaries({}, optional=optional)
        if isinstance(extra, Mapping):
            names = st.one_of(st.sampled_from(["a", "x.y_1", "", "a b", "Ä", "a\n"]),
                              st.text(max_size=4))  # fmt: skip
            fixed = st.builds(
                lambda d, more: {**d, **more},
                fixed,
                st.dictionaries(names, _strategy(extra, depth + 1), max_size=2),
            )
        options.append(fixed)
    if depth < 6 and "array" in types and "items" in node:
        options.append(st.lists(_strategy(node["items"], depth + 1), max_size=4))
    if "number" in types or "integer" in types:
        options += [st.integers(-3, 10**6), st.floats(allow_nan=True, allow_infinity=True)]
    if "string" in types:
        options.append(st.text(max_size=6))
    return st.one_of(options)


_DOCUMENT = st.builds(
    lambda base, part: {**base, **part},
    st.just(valid(SCHEMA)),
    st.fixed_dictionaries({}, optional={k: _strategy(s) for k, s in SCHEMA["properties"].items()}),
)


@SETTINGS
@given(doc=st.one_of(_DOCUMENT, _strategy(SCHEMA)))
def test_the_fast_check_and_jsonschema_agree_on_random_documents(doc: Any) -> None:
    _agree(doc)
