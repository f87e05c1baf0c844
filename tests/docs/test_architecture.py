"""The package's one-way dependencies (docs/architecture.md), read from the source with `ast`:
every import counts, at module level or inside a function, so a cycle cannot hide behind a
deferred import. Each failure names the importing module, its line and what it imports."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    tomllib = pytest.importorskip("tomli")

PACKAGE = ROOT / "perfgate"

# Lowest first. A module may import its own package and the layers before it; the layers of
# one tuple are side by side and may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),
    ("ingest",),
    ("metrics",),
    ("baseline",),
    ("identity",),
    ("judge",),
    ("causes",),
    ("verdicts",),
    ("lifecycle",),
    ("reports", "ncu", "history"),  # history: run records kept on a database
    ("usecases",),  # one use case per command: a request in, a result out (no click)
    ("cli",),
    ("__main__",),
)
# Modules of the top package itself that every layer may import (a version string).
ROOT_NAMES = {"__version__"}
# Within reports/ a formatter imports no other formatter, only these shared helpers.
REPORT_HELPERS = {"colour", "escape", "format", "markup", "summary", "svg"}
# Optional, imported only where a .ncu-rep file is read (the ncu-rep extra) or a PostgreSQL
# history is used (the postgres extra).
OPTIONAL = {"ncu_report", "psycopg"}
# Import names that differ from their distribution's name in pyproject.toml.
DISTRIBUTION = {"yaml": "pyyaml", "junit_xml": "junit-xml", "ruamel": "ruamel.yaml"}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    line: int
    target: str  # the imported module, dotted and absolute
    name: str | None  # the name taken from it (`from target import name`), None for `import`

    def __str__(self) -> str:
        what = f"from {self.target} import {self.name}" if self.name else f"import {self.target}"
        return f"{self.module}:{self.line}: {what}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(path: Path) -> Iterator[Import]:
    module = _module_name(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, node.lineno, alias.name, None)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, path.name == "__init__.py", node)
            for alias in node.names:
                yield Import(module, node.lineno, target, alias.name)


def all_imports() -> list[Import]:
    return [i for path in sorted(PACKAGE.rglob("*.py")) for i in imports_of(path)]


MODULES = {_module_name(p) for p in PACKAGE.rglob("*.py")}


def _internal_target(i: Import) -> str | None:
    """The perfgate module an import needs: `from perfgate.x import y` needs perfgate.x.y
    where y is a module, perfgate.x otherwise."""
    if i.target != "perfgate" and not i.target.startswith("perfgate."):
        return None
    if i.name and f"{i.target}.{i.name}" in MODULES:
        return f"{i.target}.{i.name}"
    return i.target


def _stage(module: str) -> str:
    """perfgate.reports.text -> reports; perfgate.usecases.check -> usecases; perfgate -> ''."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


RANK = {stage: rank for rank, layer in enumerate(LAYERS) for stage in layer}


def layer_violations(imports: list[Import]) -> list[str]:
    found = []
    for i in imports:
        target = _internal_target(i)
        if target is None:
            continue
        source, dest = _stage(i.module), _stage(target)
        if dest == "" and i.name in ROOT_NAMES:
            continue
        if source not in RANK or dest not in RANK:
            found.append(f"{i}: {source or dest!r} is in no layer of LAYERS")
        elif source != dest and RANK[dest] >= RANK[source]:
            why = "a layer beside it" if RANK[dest] == RANK[source] else "a higher layer"
            found.append(f"{i}: {source} imports {dest}, {why}")
    return found


def reporter_violations(imports: list[Import]) -> list[str]:
    found = []
    for i in imports:
        target = _internal_target(i)
        if not (i.module.startswith("perfgate.reports.") and target):
            continue
        if target.startswith("perfgate.reports.") and target != i.module:
            helper = target.split(".")[2]
            if helper not in REPORT_HELPERS:
                found.append(f"{i}: a formatter imports another formatter ({helper})")
    return found


def private_violations(imports: list[Import]) -> list[str]:
    found = []
    for i in imports:
        private = [p for p in [*i.target.split("."), i.name or ""] if re.match(r"_[^_]", p)]
        if private and i.target.split(".")[0] == "perfgate":
            found.append(f"{i}: {private[0]} is private to its module")
    return found


def cycles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in imports:
        target = _internal_target(i)
        if target and target != i.module and target in graph:
            graph[i.module].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {re.split(r"[<>=!~ \[;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}


def undeclared(imports: list[Import], declared: set[str]) -> list[str]:
    found = []
    stdlib = sys.stdlib_module_names
    for i in imports:
        top = i.target.split(".")[0]
        if not top or top == "perfgate" or top in stdlib or top in OPTIONAL:
            continue
        if DISTRIBUTION.get(top, top).lower() not in declared:
            found.append(f"{i}: {top} is not in pyproject.toml's [project] dependencies")
    return found


def _report(problems: list[str]) -> str:
    return "\n".join(["", *problems])


# The CLI is thin: it turns options into a request for one use case and writes what the use
# case returns, so it reaches below the use-case layer for nothing (their request types and
# option parsers are named in perfgate.usecases.requests and .settings).
CLI_MAY_IMPORT = ("cli", "usecases", "common", "")


def cli_violations(imports: list[Import]) -> list[str]:
    found = []
    for i in imports:
        target = _internal_target(i)
        if target is None or _stage(i.module) != "cli":
            continue
        if _stage(target) not in CLI_MAY_IMPORT:
            found.append(f"{i}: the CLI imports {_stage(target)}, below the use cases")
    return found


def test_the_cli_imports_only_the_use_cases_and_common() -> None:
    problems = cli_violations(all_imports())
    assert not problems, _report(problems)


def test_a_cli_import_below_the_use_cases_is_named() -> None:
    fake = _fake("perfgate.cli.check", "from perfgate.judge.policy import parse_fail_on\n")
    assert cli_violations(fake) == [
        "perfgate.cli.check:1: from perfgate.judge.policy import parse_fail_on: the CLI imports "
        "judge, below the use cases"
    ]
    assert (
        cli_violations(_fake("perfgate.cli.check", "from perfgate.usecases import check\n")) == []
    )


def test_every_import_goes_down_the_layers() -> None:
    problems = layer_violations(all_imports())
    assert not problems, _report(problems)


def test_formatters_import_only_the_shared_report_helpers() -> None:
    problems = reporter_violations(all_imports())
    assert not problems, _report(problems)


def test_no_private_name_is_imported_from_another_module() -> None:
    problems = private_violations(all_imports())
    assert not problems, _report(problems)


def test_no_import_cycles_between_modules() -> None:
    found = cycles(all_imports())
    assert not found, _report([" <-> ".join(c) for c in found])


def test_every_third_party_import_is_declared() -> None:
    problems = undeclared(all_imports(), _declared())
    assert not problems, _report(problems)


def test_every_package_of_perfgate_is_in_a_layer() -> None:
    stages = {_stage(m) for m in MODULES} - {""}
    assert stages <= set(RANK), sorted(stages - set(RANK))


# ------------------------------------------------- the checks themselves catch what they should


def _fake(module: str, source: str) -> list[Import]:
    tree_path = PACKAGE / Path(*module.split(".")[1:]).with_suffix(".py")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, tree_path.name == "__init__.py", node)
            found += [Import(module, node.lineno, target, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [Import(module, node.lineno, a.name, None) for a in node.names]
    return found


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # An upward import, deferred into a function as the old cycles were.
        (
            "perfgate.metrics.values",
            "def f():\n    from perfgate.verdicts.model import Report\n",
            "perfgate.metrics.values:2: from perfgate.verdicts.model import Report: "
            "metrics imports verdicts, a higher layer",
        ),
        (
            "perfgate.reports.text",
            "from perfgate import usecases\n",
            "perfgate.reports.text:1: from perfgate import usecases: reports imports usecases, "
            "a higher layer",
        ),
        (
            "perfgate.ncu.doctor",
            "from ..reports import text\n",
            "perfgate.ncu.doctor:1: from perfgate.reports import text: ncu imports reports, "
            "a layer beside it",
        ),
    ],
)
def test_an_upward_import_is_named(module: str, source: str, expected: str) -> None:
    assert layer_violations(_fake(module, source)) == [expected]


def test_a_formatter_importing_another_is_named() -> None:
    problems = reporter_violations(_fake("perfgate.reports.junit", "import perfgate.reports.text"))
    assert problems == [
        "perfgate.reports.junit:1: import perfgate.reports.text: "
        "a formatter imports another formatter (text)"
    ]
    assert reporter_violations(_fake("perfgate.reports.junit", "from . import escape")) == []


def test_a_private_import_is_named() -> None:
    fake = _fake("perfgate.usecases.check", "from perfgate.judge.states import KernelState, _never")
    assert private_violations(fake) == [
        "perfgate.usecases.check:1: from perfgate.judge.states import _never: "
        "_never is private to its module"
    ]


def test_a_cycle_through_a_deferred_import_is_found() -> None:
    fake = [
        *_fake("perfgate.ncu.doctor", "def f():\n    from perfgate.ncu.runner import run\n"),
        *_fake("perfgate.ncu.runner", "def g():\n    from perfgate.ncu import doctor\n"),
    ]
    assert cycles(fake) == [["perfgate.ncu.doctor", "perfgate.ncu.runner"]]


def test_an_undeclared_package_is_named() -> None:
    fake = _fake("perfgate.metrics.values", "import numpy as np\nimport yaml\nimport os\n")
    assert undeclared(fake, {"pyyaml"}) == [
        "perfgate.metrics.values:1: import numpy: numpy is not in pyproject.toml's "
        "[project] dependencies"
    ]
