"""A fast yes/no check of a baseline against schemas/baseline.schema.json, derived from the
schema itself.

jsonschema walks every node of a baseline through its generic machinery: 17 to 42 times this
check's time on real baselines, a load 2 to 4 times longer (docs/mutation.md, the numbers). This
module compiles the schema, once, into plain Python predicates (one closure per schema node,
the keywords of an object folded into one pass over its keys), so a valid baseline is vouched
for without importing jsonschema at all. Being compiled from the schema, it accepts exactly what
the schema accepts, as perfgate's jsonschema validator reads it (perfgate.common.schemas: a
number is finite): a key, enum value or bound added to the schema is checked here with nothing
else to edit. A keyword this compiler does not know makes its node answer "not sure" (listed in
`unknown_keywords()`; tests/baseline/test_fastcheck.py holds it empty and the two checks to the same
answer on documents generated from the schema). On "not sure" the caller runs jsonschema,
which words the errors (`FILE:LINE:COL: $.json.path: message`).
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from perfgate.common.schemas import load_schema

SCHEMA = "baseline.schema.json"
Check = Callable[[Any], bool]

# Keywords that say nothing about validity.
_NOTES = frozenset(
    {"$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default"}
)
# Object keywords, compiled together into one pass over an object's keys.
_OBJECT = frozenset(
    {"properties", "additionalProperties", "propertyNames", "required", "minProperties"}
)
# What jsonschema's keyword functions do, keyword by keyword, for the keywords below.
_KNOWN = _NOTES | _OBJECT | {
    "$ref", "type", "enum", "const", "minimum", "minLength", "pattern", "items", "minItems",
    "maxItems", "anyOf",
}  # fmt: skip


# ------------------------------------------------------------------------- types and equality


def _is_number(v: Any) -> bool:
    """jsonschema's "number" as perfgate.common.schemas redefines it: not a bool, and finite."""
    cls = v.__class__
    if cls is int:
        return True
    if cls is float:
        return math.isfinite(v)
    if isinstance(v, bool) or not isinstance(v, numbers.Number):
        return False
    return not isinstance(v, float) or math.isfinite(v)


def _is_integer(v: Any) -> bool:
    """jsonschema's draft 2020-12 "integer": an int that is not a bool, or an integral float."""
    if v.__class__ is int:
        return True
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


_TYPES: dict[str, Check] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "number": _is_number,
    "integer": _is_integer,
}


def _unbool(v: Any) -> Any:
    if v is True:
        return _TRUE
    if v is False:
        return _FALSE
    return v


_TRUE, _FALSE = object(), object()


def equal(one: Any, two: Any) -> bool:
    """jsonschema's equality for `enum` and `const`: 1 is not True, 1.0 is 1, lists and
    mappings compared element by element the same way."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and equal(value, two[key]) for key, value in one.items()
        )
    return bool(_unbool(one) == _unbool(two))


# ------------------------------------------------------------------------------ the compiler


def _yes(_: Any) -> bool:
    return True


def _no(_: Any) -> bool:
    return False


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _yes
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    every = tuple(checks)
    return lambda v: all(c(v) for c in every)


class _Compiler:
    def __init__(self, schema: Mapping[str, Any] | bool) -> None:
        self.defs: Mapping[str, Any] = {}
        if isinstance(schema, Mapping):
            self.defs = schema.get("$defs", {})
        self.compiled: dict[str, Check] = {}
        self.unknown: set[str] = set()

    def ref(self, ref: str) -> Check:
        if not ref.startswith("#/$defs/") or ref.removeprefix("#/$defs/") not in self.defs:
            self.unknown.add(f"$ref {ref}")
            return _no
        name = ref.removeprefix("#/$defs/")
        if name not in self.compiled:
            self.compiled[name] = _no  # a recursive reference answers "not sure"
            self.compiled[name] = self.node(self.defs[name])
        return self.compiled[name]

    def node(self, node: Any) -> Check:
        if node is True:
            return _yes
        if node is False:
            return _no
        if not isinstance(node, Mapping):
            self.unknown.add(f"schema {node!r}")
            return _no
        for key in node:
            if key not in _KNOWN:
                self.unknown.add(key)
                return _no  # not sure: jsonschema decides
        # One type: its keywords fold into one closure that checks the type first (the bulk
        # of a baseline is objects of numbers and strings).
        types = node.get("type")
        one = types if isinstance(types, str) else None
        checks: list[Check] = []
        if "$ref" in node:
            checks.append(self.ref(node["$ref"]))
        if one == "object":
            checks.append(self.object(node, strict=True))
        elif one == "array":
            checks.append(self.array(node, strict=True))
        elif one in ("string", "number", "integer"):
            checks.append(self.scalar(node, one))
        else:
            if types is not None:
                checks.append(self.type(types))
            if "minimum" in node or "minLength" in node or "pattern" in node:
                checks.append(self.scalar(node, None))
            if _OBJECT & node.keys():
                checks.append(self.object(node, strict=False))
            if "items" in node or "minItems" in node or "maxItems" in node:
                checks.append(self.array(node, strict=False))
        if "enum" in node:
            checks.append(self.enum(node["enum"]))
        if "const" in node:
            const = node["const"]
            checks.append(lambda v: equal(const, v))
        if "anyOf" in node:
            options = tuple(self.node(n) for n in node["anyOf"])
            checks.append(lambda v: any(c(v) for c in options))
        return _all(checks)

    def type(self, types: Any) -> Check:
        names = [types] if isinstance(types, str) else list(types)
        if any(not isinstance(name, str) or name not in _TYPES for name in names):
            self.unknown.add(f"type {types!r}")
            return _no
        if len(names) == 1:
            return _TYPES[names[0]]
        if len(names) == 2:
            first, second = (_TYPES[name] for name in names)
            return lambda v: first(v) or second(v)
        each = tuple(_TYPES[name] for name in names)
        return lambda v: any(c(v) for c in each)

    def enum(self, values: Sequence[Any]) -> Check:
        if values and all(isinstance(x, str) for x in values):
            texts = frozenset(values)
            return lambda v: isinstance(v, str) and v in texts
        options = tuple(values)
        return lambda v: any(equal(x, v) for x in options)

    def scalar(self, node: Mapping[str, Any], one: str | None) -> Check:
        """`minimum`, `minLength` and `pattern`; with `one` ("string", "number", "integer")
        the type too. Without it, each keyword holds only for values of its kind."""
        least = node.get("minimum")
        shortest = node.get("minLength", 0)
        search = re.compile(node["pattern"]).search if "pattern" in node else None
        if one in ("number", "integer"):
            is_type = _TYPES[one]
            if least is None:
                return is_type
            return lambda v: is_type(v) and v >= least
        if one == "string":
            if search is None and not shortest:
                return _TYPES["string"]
            return lambda v: (
                isinstance(v, str)
                and len(v) >= shortest
                and (search is None or search(v) is not None)
            )

        def check(v: Any) -> bool:
            if isinstance(v, str):
                return len(v) >= shortest and (search is None or search(v) is not None)
            return least is None or not _is_number(v) or v >= least

        return check

    def array(self, node: Mapping[str, Any], strict: bool) -> Check:
        item = self.node(node["items"]) if "items" in node else None
        fewest = node.get("minItems", 0)
        most = node.get("maxItems")

        def check(v: Any) -> bool:
            if not isinstance(v, list):
                return not strict
            if len(v) < fewest or (most is not None and len(v) > most):
                return False
            return item is None or all(map(item, v))

        return check

    def object(self, node: Mapping[str, Any], strict: bool) -> Check:
        """The object keywords in one pass over the keys; `strict`: the type is "object"."""
        properties = {k: self.node(s) for k, s in node.get("properties", {}).items()}
        rest = node.get("additionalProperties", True)
        extra: Check | None = None if rest is True else self.node(rest)
        names = self.node(node["propertyNames"]) if "propertyNames" in node else None
        required = tuple(node.get("required", ()))
        least = node.get("minProperties", 0)
        lookup = properties.get

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return not strict
            if len(v) < least:
                return False
            for key in required:
                if key not in v:
                    return False
            if names is not None and not all(map(names, v)):
                return False
            for key, value in v.items():
                # A key that is not a string (YAML allows `1:`) equals no property's name.
                sub = lookup(key)
                if sub is None:
                    if extra is not None and not extra(value):
                        return False
                elif not sub(value):
                    return False
            return True

        return check


def compile_schema(schema: Mapping[str, Any] | bool) -> tuple[Check, frozenset[str]]:
    """Any schema's check (local `$ref`s only) and the keywords it could not compile, whose
    nodes answer "not sure" (False)."""
    compiler = _Compiler(schema)
    check = compiler.node(schema)
    return check, frozenset(compiler.unknown)


@functools.cache
def _compiled() -> tuple[Check, Check, frozenset[str]]:
    schema = load_schema(SCHEMA)
    compiler = _Compiler(schema)
    document = compiler.node(schema)
    kernel = compiler.ref("#/$defs/kernel")
    return document, kernel, frozenset(compiler.unknown)


def unknown_keywords() -> frozenset[str]:
    """The schema's keywords this module cannot check (their nodes answer "not sure")."""
    return _compiled()[2]


def document_is_valid(data: Any) -> bool:
    """Whether a whole baseline certainly satisfies the schema (exactly: this is the schema)."""
    return _compiled()[0](data)


def kernel_is_valid(kernel: Any) -> bool:
    """Whether one kernel entry satisfies the schema's `$defs/kernel`."""
    return _compiled()[1](kernel)


# What jsonschema still sees of each kernel when every entry is certainly valid.
_PLACEHOLDER = {"id": "k", "match": {"name": "k"}, "metrics": {"placeholder": {"value": 0}}}


def without_bulk(data: Any) -> Any:
    """The document with its kernels cut to one placeholder entry jsonschema accepts, when
    there are kernels and every entry is certainly valid; None otherwise (validate the whole
    document then). For jsonschema to word the errors of the rest quickly."""
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        return None
    kernels = data["kernels"]
    if not kernels or not all(map(kernel_is_valid, kernels)):
        return None
    return {**data, "kernels": [_PLACEHOLDER]}
