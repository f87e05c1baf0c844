from __future__ import annotations

import re

from perfgate.metrics.catalog import CATALOG, catalog_markdown
from tests.conftest import ROOT


def test_metrics_doc_table_is_the_catalog() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    table = re.search(r"<!-- catalog-table:.*?-->\n(.*?)<!-- end catalog-table -->", text, re.S)
    assert table is not None
    assert table.group(1) == catalog_markdown(), "regenerate with: perfgate metrics --markdown"
    for name in CATALOG:
        assert f"`{name}`" in text


def test_every_doc_the_readme_links_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)\)", readme):
        assert (ROOT / link).is_file(), link


def test_explain_doc_example_is_real_output() -> None:
    import subprocess
    import sys

    text = (ROOT / "docs" / "explain.md").read_text()
    block = re.search(r"```text\n\$ perfgate (explain [^\n]+)\n(.*?)```", text, re.S)
    assert block is not None
    args = block.group(1).split()
    proc = subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0
    for line in block.group(2).splitlines():
        shown = line.rstrip().removesuffix("(...)").rstrip()
        assert shown in proc.stdout, line
