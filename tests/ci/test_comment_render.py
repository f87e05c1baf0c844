"""The merged pull-request comment docs/action.md shows (scripts/render_comment.py): what the
GPU matrix's report job writes is what perfgate-comment.yml posts, character for character,
stall charts included. The rendering itself needs a browser, which CI has not: the
screenshots are made by hand, and only their presence and size are checked here."""

from __future__ import annotations

import importlib.util
import re
import shutil
import struct
from pathlib import Path
from types import ModuleType

import pytest

from tests.ci.test_workflows import _post_comment
from tests.conftest import ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "render_comment", ROOT / "scripts" / "render_comment.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_merged_comment_is_posted_as_written(tmp_path: Path) -> None:
    render = _script()
    merged = render.merged_comment(tmp_path / "work")
    assert merged.startswith("<!-- perfgate:pr-comment -->\n## h100\n")
    assert "\n## h200\n" in merged and "FAILED" in merged and "PASSED" in merged
    # The paths a CI job would name, not this machine's.
    assert "<code>baselines/h100/zoo.yaml</code>" in merged
    assert "<code>perfgate-report/capture.csv</code>" in merged and str(ROOT) not in merged
    posted = render.sanitized(merged, tmp_path)
    # Every stall chart reaches GitHub's mermaid as written: its axis range `0 --> 100` was
    # escaped to `0 --&gt; 100` (inside a code block, GitHub shows no chart then).
    assert merged.count("```mermaid") == 8 and merged.count("0 --> 100") == 8
    assert posted == merged


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_sanitizer_keeps_a_lone_arrow_and_escapes_a_comment(tmp_path: Path) -> None:
    marker = "<!-- perfgate:pr-comment -->"
    chart = f'{marker}\n```mermaid\nxychart-beta horizontal\n    y-axis "s" 0 --> 100\n```\n'
    assert _post_comment(tmp_path, chart)["posted"] == [chart]
    hidden = f"{marker}\nshown <!-- hidden --> shown\n"
    (posted,) = _post_comment(tmp_path, hidden)["posted"]
    assert "<!--" not in posted[len(marker) :] and "&lt;!-- hidden" in posted


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_docs_show_the_rendered_comment() -> None:
    render = _script()
    action = (ROOT / "docs" / "action.md").read_text()
    for name in render.DOCS.values():
        path = ROOT / "docs" / "img" / name
        width, height = _png_size(path)
        assert 860 <= width <= 940 and height > 600, (name, width, height)
        assert path.stat().st_size < 600_000, name
        assert re.search(rf"\]\(img/{re.escape(name)}\)", action), name
