"""The JSON Schemas in the repository's schemas/ folder (a copy ships inside the wheel)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from perfgate.common.errors import located

JsonPath = Sequence[str | int]

# The baseline schema's `$id`: the file's raw address in the repository (pyproject.toml's
# Repository), so that an editor resolves it. Every baseline perfgate writes names it on its
# first line for the YAML language server (VS Code's YAML extension, Neovim, Helix, JetBrains).
BASELINE_SCHEMA_URL = (
    "https://raw.githubusercontent.com/perfgate/perfgate/main/schemas/baseline.schema.json"
)
SCHEMA_COMMENT = f"# yaml-language-server: $schema={BASELINE_SCHEMA_URL}"


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    packaged = resources.files("perfgate") / "schemas" / name
    if packaged.is_file():
        text = packaged.read_text(encoding="utf-8")
    else:  # a source checkout or an editable install: the repository's own folder
        text = (Path(__file__).resolve().parents[2] / "schemas" / name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _inline(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """The schema with every local `#/$defs/...` reference replaced by its target. Resolving a
    $ref costs more than the check behind it: a baseline of 1,000 kernels makes 72,000."""
    if depth > 50:
        raise ValueError("recursive $ref in a perfgate schema")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            return _inline(defs[ref.removeprefix("#/$defs/")], defs, depth + 1)
        return {k: _inline(v, defs, depth + 1) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs, depth + 1) for v in node]
    return node


@functools.cache
def _validator(schema_name: str) -> Any:
    import jsonschema

    schema = load_schema(schema_name)
    # A number is finite: `.nan` passes every comparison (`minimum` included) and `.inf`
    # passes `minimum: 0`, so a threshold of either could never regress (docs/limits.md).
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine(
        "number",
        lambda checker, v: (
            base.TYPE_CHECKER.is_type(v, "number")
            and (not isinstance(v, float) or math.isfinite(v))
        ),
    )
    finite = jsonschema.validators.extend(base, type_checker=checker)
    return finite(_inline(schema, schema.get("$defs", {})))


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def format_path(path: JsonPath) -> str:
    """`$.kernels[0].metrics['stall.wait'].value` (check-jsonschema's notation)."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += "[" + json.dumps(part) + "]"
    return out


def schema_errors(
    data: Any,
    schema_name: str,
    line_of: Callable[[JsonPath], tuple[int, int] | None] | None = None,
) -> list[str]:
    """Every schema violation as `LINE:COL: $.path: message` (`$.path: message` where its
    position is not known), in document order."""
    import jsonschema

    validator = _validator(schema_name)
    messages = []
    for error in sorted(
        validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]
    ):
        message = error.message
        if _not_finite(error.instance) and error.validator in ("type", "anyOf", "oneOf"):
            message = f"{error.instance!r} is not a finite number (.nan, .inf are refused)"
        elif error.validator in ("anyOf", "oneOf") and error.context:
            if all(sub.validator == "required" for sub in error.context):
                # anyOf of `required`s: say which properties would do.
                names = [str(sub.validator_value[0]) for sub in error.context]
                message = f"needs one of: {', '.join(dict.fromkeys(names))}"
            else:
                message = jsonschema.exceptions.best_match(error.context).message
        path = list(error.absolute_path)
        at = line_of(path) if line_of else None
        text = f"{format_path(path)}: {message}"
        messages.append(located(*at, text) if at else text)
    return messages
