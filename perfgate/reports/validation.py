"""`perfgate baseline validate --format json`: every file looked at and every problem found, as
one JSON document (as check-jsonschema's `-o JSON`): a problem's file, line, column, the JSON
path of the value it is about and the message, each its own field, for editors and CI."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# `LINE:COL: $.json.path: message`, `LINE:COL: message` (common.errors.located), after the file.
_LOCATED = re.compile(r"^(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): (?P<rest>.*)$", re.S)
_JSON_PATH = re.compile(r"^(?P<path>\$(?:\[[^\]]*\]|[^\s:\[])*): (?P<message>.*)$", re.S)


@dataclass(frozen=True)
class Validated:
    """One file (or folder) given: its kernels when it loads, else its problems (each line
    as perfgate says it on stderr: `FILE:LINE:COL: message` or `FILE: message`)."""

    path: str
    kernels: int | None = None
    problems: tuple[str, ...] = ()


def problem(path: str, line: str) -> dict[str, Any]:
    """One problem line of `path` as its fields; line, column and path are null where the
    problem is about the whole file."""
    rest = line[len(path) :] if line.startswith(path) else line
    rest = rest[1:] if rest.startswith(":") else rest
    out: dict[str, Any] = {"file": path, "line": None, "column": None, "path": None}
    m = _LOCATED.match(rest)
    if m is not None:
        out["line"], out["column"] = int(m.group("line")), int(m.group("col"))
        rest = m.group("rest")
    rest = rest.strip()
    p = _JSON_PATH.match(rest)
    if p is not None:
        out["path"], rest = p.group("path"), p.group("message")
    out["message"] = rest
    return out


def render_json(results: Sequence[Validated]) -> str:
    problems = [problem(r.path, line) for r in results for line in r.problems]
    document = {
        "status": "error" if problems else "ok",
        "exit_code": 2 if problems else 0,
        "files": [
            {
                "file": r.path,
                "status": "error" if r.problems else "ok",
                "kernels": r.kernels,
            }
            for r in results
        ],
        "problems": problems,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
