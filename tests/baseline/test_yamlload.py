"""perfgate.baseline.yamlload builds plain documents from parser events: the same data as PyYAML's safe
loader, or "not sure" and the node-based loader decides."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from perfgate.baseline import yamlload
from perfgate.baseline.load import load_baseline
from perfgate.baseline.yamlnodes import line_finder
from perfgate.common.errors import BaselineError
from tests.conftest import ROOT

BASELINES = sorted((ROOT / "baselines").rglob("*.yaml"))


def _same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down (1 is not 1.0 nor True), -0.0 kept."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return bool(a == b)


def _safe(text: str) -> Any:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.mark.parametrize("path", BASELINES, ids=lambda p: p.name)
def test_committed_baselines_load_as_the_safe_loader_loads_them(path: Path) -> None:
    text = path.read_text()
    parsed = yamlload.load(text, str(path), 64)
    assert parsed is not None
    assert _same(parsed.data, _safe(text))


@pytest.mark.parametrize(
    "scalar",
    ["16", "-3", "+7", "0", "-0", "71.755", "-0.0", "1.0e-05", "2.5E+10", "1.", "name", "nvtx",
     "function", "on", "Off", "yes", "n", "TRUE", "false", "null", "~", "", "'9.0'", '"16"',
     "foo bar", "occupancy", "1e5", "-.5", "123456789012345678", "1_000:x"],
)  # fmt: skip
@pytest.mark.parametrize("template", ["k: {}\n", "- {}\n", "[{}]\n", "{{k: {}}}\n"])
def test_plain_scalars_are_what_the_safe_loader_makes_of_them(scalar: str, template: str) -> None:
    text = template.format(scalar)
    parsed = yamlload.load(text, "b.yaml", 64)
    assert parsed is not None
    assert _same(parsed.data, _safe(text))


@pytest.mark.parametrize(
    "text",
    [
        "k: 2020-01-01\n",  # a timestamp
        "k: 0x1f\n",  # another spelling of a number
        "k: 1_000\n",
        "k: .inf\n",
        "k: .5\n",
        "k: 12345678901234567890\n",
        "k: !!int 3\n",  # any tag
        "k: !!str x\n",
        "k: !!python/name:os.system\n",
        "a: &x [1]\nb: *x\n",  # anchors and aliases
        "a: &x 1\n",
        "a: 1\na: 2\n",  # a key written twice
        "1: a\n",  # keys that are not strings
        "on: a\n",
        "? [1]\n: a\n",
        "a: 1\n---\nb: 2\n",  # several documents
        "kernels: [\n",  # a syntax error
        "<<: {a: 1}\n",
    ],
)
def test_anything_else_is_left_to_the_node_based_loader(text: str) -> None:
    assert yamlload.load(text, "b.yaml", 64) is None


def test_deep_block_nesting_is_refused_without_composing_it(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    # Past 512 columns the byte-level guard refuses before any parser runs (issue 15) ...
    path.write_text("- " * 30_000 + "x\n")  # one line, no indentation, no brackets
    with pytest.raises(BaselineError, match=r":1:1: indentation and block indicators"):
        load_baseline(path)
    # ... under it, the event loader counts the levels and refuses past 64.
    path.write_text("- " * 100 + "x\n")
    with pytest.raises(BaselineError, match=r":1:\d+: YAML nested more than 64 levels deep"):
        load_baseline(path)
    # Refused just as deep when something else in the file makes the loader unsure.
    path.write_text("a: &x 1\nb:\n" + "- " * 100 + "x\n")
    with pytest.raises(BaselineError, match=r":3:\d+: YAML nested more than 64 levels deep"):
        load_baseline(path)


def test_each_kernel_knows_the_line_of_its_entry() -> None:
    path = ROOT / "baselines" / "h100" / "zoo.yaml"
    lines = path.read_text().splitlines()
    kernels = load_baseline(path).kernels
    assert kernels
    for kernel in kernels:
        assert kernel.line is not None
        assert lines[kernel.line - 1] == f"- id: {kernel.id}"


def test_lines_are_the_node_based_finders_answers() -> None:
    text = (ROOT / "baselines" / "h100" / "zoo.yaml").read_text()
    parsed = yamlload.load(text, "zoo.yaml", 64)
    assert parsed is not None
    by_node = line_finder(yaml.compose(text, Loader=yaml.SafeLoader))
    fast = parsed.line_finder(line_finder)
    paths: list[list[str | int]] = [[], ["kernels"], ["kernels", 3], ["kernels", 99], ["nope"]]
    paths += [["kernels", 2, "metrics"], ["kernels", 2, "match", "grid"], ["kernels", "x"]]
    paths += [["kernels", 1, "metrics", "duration", "value"], ["format_version"]]
    answers = [fast(p) for p in paths]
    assert answers == [by_node(p) for p in paths]
    assert len(set(answers)) > 5
