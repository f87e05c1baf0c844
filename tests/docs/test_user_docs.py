"""User docs and help speak of the product, with figures that are current.

Two kinds of check:
- internal wording: the README, the user docs and every command's --help (and the Action's
  and the hooks' descriptions) hold no reference to the project's own work items ("issue 24"),
  no relative time ("today's", "as before": before what, for a user who never saw the old
  behaviour?), no note to a maintainer ("TODO", "SYNTHETIC"); maintainer docs and dated
  measurement records are left out, each named below with the reason;
- figures that drift: the metric count and the replay passes the docs quote are computed from
  the code, or held to the measurement of the lists this checkout asks ncu for
  (benchmarks/capture_cost/passes/doc-figures-h100.json, made by
  benchmarks/capture_cost/doc_figures.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from tests.conftest import ROOT

# Wording that belongs to the project's work, not to the product (case-insensitive unless a
# pattern says otherwise).
INTERNAL = {
    "a work item (issue N)": re.compile(r"\bissues?\s*#?\d+", re.I),
    "relative time (today's)": re.compile(r"\btoday'?s?\b", re.I),
    "relative time (as before)": re.compile(r"\bas before\b", re.I),
    "a note to a maintainer (TODO/FIXME/XXX)": re.compile(r"\b(?:TODO|FIXME|XXX)\b"),
    "a note to a maintainer (SYNTHETIC)": re.compile(r"\bSYNTHETIC\b"),
    "a work item (item N)": re.compile(r"\bitem \d+\b", re.I),
    "the people making it (the lead)": re.compile(r"\bthe lead\b", re.I),
    "the people making it (this session)": re.compile(r"\b(?:this|a|one) session\b", re.I),
}

# Docs for those who work on perfgate itself, not for its users: left out whole.
MAINTAINER_DOCS = {
    "docs/architecture.md": "perfgate's own package layout and import rules",
    "docs/mutation.md": "mutation testing of perfgate's own judging code, round by round",
    "docs/release.md": "how a perfgate release is made",
}

# Sections of user docs that are dated measurement records: each round of an evaluation is
# named by the work that changed what it measured, and is kept as it was measured. A heading
# stands for its section and every section under it.
RECORDS = {
    ("docs/noise.md", "What the gate catches, and what it raises falsely"):
        "the false-alarm and detection evaluation, round by round",
    ("docs/scale.md", "Round three"): "a dated measurement round",
    ("docs/scale.md", "After the re-layout by pipeline stage"): "a dated measurement round",
}  # fmt: skip


def user_docs() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in docs if str(p.relative_to(ROOT)) not in MAINTAINER_DOCS]


def user_text(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a user doc, its measurement records left out."""
    rel = str(path.relative_to(ROOT))
    skipping_below: int | None = None  # the heading level of the record being skipped
    fenced = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"^(#+)\s+(.*)", line)
        if heading:
            level = len(heading.group(1))
            if skipping_below is not None and level <= skipping_below:
                skipping_below = None
            if skipping_below is None and any(
                doc == rel and heading.group(2).startswith(title) for doc, title in RECORDS
            ):
                skipping_below = level
        if skipping_below is None:
            yield number, line


def internal_wording(text: str) -> list[str]:
    return [f"{why}: {m.group(0)!r}" for why, rx in INTERNAL.items() for m in rx.finditer(text)]


def test_the_exclusions_name_what_exists() -> None:
    for doc in MAINTAINER_DOCS:
        assert (ROOT / doc).is_file(), doc
    for doc, title in RECORDS:
        assert re.search(rf"^#+ {re.escape(title)}", (ROOT / doc).read_text(), re.M), (doc, title)


def test_the_patterns_catch_the_stale_text_they_were_written_for() -> None:
    stale = [
        "| `full` | today's single-phase capture (as before issue 24) |",
        "checks exactly as before.",
        "(tests/usecases/test_two_phase.py; SYNTHETIC gate and diagnosis captures)",
        "### Round three (Issue 12 item 6)",
    ]
    for line in stale:
        assert internal_wording(line), line
    for fine in ("a synthetic capture", "a capture of every session", "issues of ncu", "tissue 4"):
        assert not internal_wording(fine), fine


def test_user_docs_speak_of_the_product() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {hit}"
        for path in user_docs()
        for number, line in user_text(path)
        for hit in internal_wording(line)
    ]
    assert not found, "internal wording in user docs:\n" + "\n".join(found)


def _commands(cmd: click.Command, path: list[str]) -> Iterator[list[str]]:
    yield path
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            yield from _commands(sub, [*path, name])


def test_every_help_speaks_of_the_product() -> None:
    from perfgate.cli import main

    runner = CliRunner()
    seen = 0
    found = []
    for path in _commands(main, []):
        result = runner.invoke(main, [*path, "--help"], prog_name="perfgate", terminal_width=100)
        assert result.exit_code == 0, (path, result.output)
        seen += 1
        found += [
            f"perfgate {' '.join(path)} --help: {hit}" for hit in internal_wording(result.output)
        ]
    assert seen >= 10  # the group, its commands and baseline's subcommands
    assert not found, "\n".join(found)


def test_the_action_and_the_hooks_describe_the_product() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    texts = [action["description"]]
    for kind in ("inputs", "outputs"):
        texts += [f"{name}: {spec.get('description', '')}" for name, spec in action[kind].items()]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    texts += [f"{h['id']}: {h.get('name', '')} {h.get('description', '')}" for h in hooks]
    found = [f"{text[:60]}...: {hit}" for text in texts for hit in internal_wording(text)]
    assert not found, "\n".join(found)


# --- figures that drift -----------------------------------------------------------------------

MEASURED = ROOT / "benchmarks" / "capture_cost" / "passes" / "doc-figures-h100.json"


@pytest.fixture(scope="module")
def measured() -> dict[str, dict[str, object]]:
    lists: dict[str, dict[str, object]] = json.loads(MEASURED.read_text())["lists"]
    return lists


def _passes(measured: dict[str, dict[str, object]], name: str) -> int:
    value = measured[name]["passes"]
    assert isinstance(value, int)
    return value


def test_the_measured_lists_are_what_perfgate_asks_for_now(
    measured: dict[str, dict[str, object]],
) -> None:
    """The pass figures hold only for the lists they were measured with: a list that changed
    (a catalog metric added, a raw metric renamed) must be measured again."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "doc_figures", ROOT / "benchmarks" / "capture_cost" / "doc_figures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    now = module.metric_lists()
    for name, metrics in now.items():
        assert measured[name]["metrics"] == metrics, (
            f"perfgate's {name} list changed since its passes were measured: run "
            "benchmarks/capture_cost/doc_figures.py on a GPU machine (its docstring) and update "
            "the figures the docs quote"
        )
    assert _passes(measured, "gate") == 1  # the one-pass gate set (perfgate/metrics/passes.py)


def test_the_catalog_figures_in_the_docs_are_current(
    measured: dict[str, dict[str, object]],
) -> None:
    from perfgate.metrics.catalog import ncu_metrics

    count = len(ncu_metrics("9.0"))
    catalog, set_full = _passes(measured, "catalog"), _passes(measured, "set-full")
    captures = " ".join((ROOT / "docs" / "captures.md").read_text().split())
    said = re.search(
        r"whole catalog \((\d+) on sm_90\), which ncu collects in (\d+) replay passes per "
        r"kernel on an H100; `--set full` takes (\d+)",
        captures,
    )
    assert said is not None, "docs/captures.md no longer quotes the catalog's size and passes"
    assert [int(g) for g in said.groups()] == [count, catalog, set_full]
    zoo = re.search(
        r"\((\d+) passes for the zoo's baseline, (\d+) for a baseline recorded", captures
    )
    assert zoo is not None
    assert [int(g) for g in zoo.groups()] == [_passes(measured, "full"), _passes(measured, "gate")]
    # Wherever a user doc counts the catalog's raw metrics, it says what the code has.
    counts = re.compile(r"\((\d+) on sm_\d+\)|`perfgate metrics --ncu` \([^)]*?(\d+) metrics")
    for path in user_docs():
        for number, line in user_text(path):
            for m in counts.finditer(line):
                said_count = int(m.group(1) or m.group(2))
                assert said_count == count, f"{path.relative_to(ROOT)}:{number}: {line}"


# The rows of docs/capture.md's table of the lists perfgate asks for, by measured list.
PASS_ROWS = {
    "gate": "`perfgate capture --phases gate -b baselines/h100/zoo.yaml`",
    "full": "`perfgate capture --phases full -b baselines/h100/zoo.yaml`",
    "diagnosis": "`perfgate capture`'s diagnosis capture",
    "catalog": "`perfgate metrics --ncu`",
    "set-full": "`--set full`",
}


def test_the_phase_pass_figures_in_the_docs_are_current(
    measured: dict[str, dict[str, object]],
) -> None:
    """What the docs say the gate, full and diagnosis captures cost in replay passes."""
    capture = (ROOT / "docs" / "capture.md").read_text()
    table = capture[capture.index("Replay passes per kernel, ncu") :]
    table = table[: table.index("\n\n", table.index("| metric list |"))]
    for name, start in PASS_ROWS.items():
        row = re.search(rf"^\| {re.escape(start)}(.*?)\| \**(\d+)\**( \||$)", table, re.M)
        assert row is not None, f"docs/capture.md's pass table lost its {name} row"
        assert int(row.group(2)) == _passes(measured, name), row.group(0)
        listed = re.search(r"(\d+) metrics\)", row.group(1))
        if name != "set-full":
            metrics = measured[name]["metrics"]
            assert isinstance(metrics, list) and listed is not None
            assert int(listed.group(1)) == len(metrics), row.group(0)
    example = re.search(
        r"^gate capture: .* (\d+) pass per kernel, .*; diagnosis: .*, (\d+) passes per kernel, ",
        capture,
        re.M,
    )
    assert example is not None, "docs/capture.md's summary-line example is gone"
    assert [int(g) for g in example.groups()] == [
        _passes(measured, "gate"),
        _passes(measured, "diagnosis"),
    ]
    assert "**1 replay pass per kernel**" in capture
    said = re.search(r"compares; (\d+) replay passes per kernel on the H100", capture)
    assert said is not None and int(said.group(1)) == _passes(measured, "diagnosis")
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "gate capture (one replay pass per kernel)" in readme
    from perfgate.cli import main

    help_text = CliRunner().invoke(main, ["capture", "--help"], terminal_width=100).output
    said = re.search(
        r"gate set of every baselined kernel \((\d+) replay pass", " ".join(help_text.split())
    )
    assert said is not None and int(said.group(1)) == _passes(measured, "gate")


def test_the_readme_gives_the_capture_phases_and_the_time_basis_once() -> None:
    """One path from the first baseline to CI: capture phases and the time basis are named
    in one place (README step 4), in docs/capture.md's words, and linked there."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    capture = " ".join((ROOT / "docs" / "capture.md").read_text().split())
    assert readme.count("time basis") == 1 and "(the *time basis*:" in capture
    assert readme.count("--phases gate") == 1 and "| `gate` | the gate capture alone |" in capture
    steps = re.findall(r"^(\d)\. \*\*(\w[\w ]*)\*\*", (ROOT / "README.md").read_text(), re.M)
    assert [title for _, title in steps] == ["Capture", "Record", "Check", "Gate in CI"]
    step4 = readme[readme.index("4. **Gate in CI**") :]
    assert step4.index("perfgate capture -b") < step4.index("docs/capture.md")
    assert "docs/check.md#not-judged" in step4
