"""The real change reports of docs/explain.md ("Change findings"), made from the captures so
the page cannot rot: tests/causes/test_changes.py checks that the page holds them as made now.

    python -m tests.change_reports --write   # rewrite the section of docs/explain.md
"""

from __future__ import annotations

import sys

from perfgate.reports import text
from perfgate.verdicts.model import Report
from tests.causes.test_changes import CHANGES, result, run
from tests.conftest import ROOT

DOC = ROOT / "docs" / "explain.md"
BEGIN = "<!-- change-reports: made by `python -m tests.change_reports --write` -->"
END = "<!-- end of change-reports -->"


def render_section() -> str:
    out = [BEGIN, ""]
    for base, changed, _kind, _title, _lever in CHANGES:
        folder = "tests/data"
        first = run(base, 1)
        report = text.render(Report(results=(result(base, changed),)))
        report = report.replace(f"{ROOT}/", "")
        out += [
            f"`{base.split('/')[-1]}` -> `{changed.split('/')[-1].split('.')[0]}`:",
            "",
            "```text",
            f"$ perfgate baseline record -c {folder}/{first} -c ...run2... -c ...run3... -o b.yaml",
            f"$ perfgate check -b b.yaml -c {folder}/{changed}",
            report.rstrip("\n"),
            "```",
            "",
        ]
    out.append(END)
    return "\n".join(out)


def write() -> None:
    doc = DOC.read_text(encoding="utf-8")
    section = render_section()
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        doc = head + section + rest.split(END, 1)[1]
    else:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} section to rewrite")
    DOC.write_text(doc, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(render_section())
