#!/usr/bin/env python3
"""Merge the reports of several `perfgate check` runs (one per GPU in a CI matrix) into one
JUnit file and one pull-request comment. Standard library only, so the job that merges needs
no perfgate install.

    python3 scripts/merge_reports.py --out merged reports/perfgate-h100/ reports/perfgate-h200/

Each directory may hold junit.xml and pr-comment.md (what the action writes). The JUnit
testsuites are kept as they are (their names already say which baseline and GPU); the comment
carries perfgate's marker once, a section per directory under a `## LABEL` heading (markdown,
no HTML: perfgate-comment.yml escapes every tag but the bare ones perfgate writes), and stays
under GitHub's 65,536 characters (a section that does not fit is named, not cut mid-table).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

MARKER = "<!-- perfgate:pr-comment -->"  # perfgate.reports.markdown.PR_COMMENT_MARKER
LIMIT = 65_536


def _label(directory: Path) -> str:
    # The artifacts' names (perfgate-gpu-h100) or plain directories (perfgate-h100, h100).
    name = directory.name.removeprefix("perfgate-gpu-").removeprefix("perfgate-")
    return name or directory.name


def _plain(label: str) -> str:
    """A label as text in markdown: characters that could start markup or HTML escaped, and
    a mention broken with a word joiner as perfgate breaks its own (perfgate-comment.yml
    refuses a comment holding a whole one)."""
    text = "".join(f"&#{ord(c)};" if c in "<>&`*_[]#|\\" else c for c in label)
    return text.replace("@", "@\u2060")


def merge_junit(files: list[Path]) -> str:
    root = ET.Element("testsuites")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for path in files:
        tree = ET.parse(path)  # noqa: S314 (perfgate's own output, from this workflow's jobs)
        top = tree.getroot()
        suites = [top] if top.tag == "testsuite" else list(top.iter("testsuite"))
        for suite in suites:
            root.append(suite)
            for key in totals:
                totals[key] += int(suite.get(key) or 0)
    for key, value in totals.items():
        root.set(key, str(value))
    text: str = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n"


def merge_comments(sections: list[tuple[str, str]]) -> str:
    head = f"{MARKER}\n"
    parts: list[str] = []
    left_out: list[str] = []
    room = LIMIT - len(head) - 200  # the closing note
    for label, body in sections:
        text = body.removeprefix(MARKER).lstrip("\n")
        # A markdown heading, no HTML: perfgate-comment.yml renders only the bare tags perfgate
        # writes (an attribute such as <details open> is shown as text), and the label is a
        # directory's name, which markup must not be able to come from.
        part = f"## {_plain(label)}\n\n{text.rstrip()}\n\n"
        if len(part) <= room:
            parts.append(part)
            room -= len(part)
        else:
            left_out.append(label)
    note = (
        f"*Not shown (too long for one comment): {', '.join(left_out)}; see the run's artifacts.*\n"
        if left_out
        else ""
    )
    return head + "".join(parts) + note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    directories = sorted(d for d in args.directories if d.is_dir())
    junits = [d / "junit.xml" for d in directories if (d / "junit.xml").is_file()]
    comments = [
        (_label(d), (d / "pr-comment.md").read_text(encoding="utf-8"))
        for d in directories
        if (d / "pr-comment.md").is_file()
    ]
    if not junits and not comments:
        print("merge_reports: no junit.xml or pr-comment.md in the directories", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if junits:
        (args.out / "junit.xml").write_text(merge_junit(junits), encoding="utf-8")
    if comments:
        (args.out / "pr-comment.md").write_text(merge_comments(comments), encoding="utf-8")
    print(f"merged {len(junits)} JUnit files and {len(comments)} comments into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
