"""Baseline files: per-kernel recorded values and thresholds, as schema-validated YAML.

Loading is strict and never executes anything: YAML is parsed with the safe loader, anchors and
aliases are refused outright (a baseline never needs them, and they are how "billion laughs"
bombs are built), and the document is validated against schemas/baseline.schema.json before
perfgate looks at it. Every problem is reported as `FILE:LINE:COL: $.json.path: message`
(errors.located), or `FILE: message` for one of the whole file.

This module reads the file and checks it in order; the YAML is parsed by
perfgate.baseline.yamlnodes (after perfgate.baseline.nesting), the checks beyond the schema
are perfgate.baseline.validate, the model is built by perfgate.baseline.build.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from perfgate.baseline.build import build_baseline
from perfgate.baseline.fastcheck import document_is_valid, without_bulk
from perfgate.baseline.model import READABLE_VERSIONS, Baseline
from perfgate.baseline.problems import add_problem, here, problem
from perfgate.baseline.validate import check_line_breaks, check_metric
from perfgate.baseline.yamlnodes import line_finder, parse_yaml
from perfgate.common import patterns
from perfgate.common.schemas import schema_errors

SCHEMA = "baseline.schema.json"


MAX_BYTES = 16 * 1024 * 1024


def _read_text(path: str) -> str:
    p = Path(path)
    try:
        if p.is_dir():
            raise problem(path, "is a directory, not a baseline file")
        if not stat.S_ISREG(p.stat().st_mode):
            raise problem(path, "is not a regular file (a FIFO or a device), not a baseline file")
        # What is read is bounded, not what the file says its size is (a file that grows, or
        # a /proc file that says 0).
        with p.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise problem(path, f"is over {MAX_BYTES:,} bytes; a baseline is at most {MAX_BYTES:,}")
    except FileNotFoundError as exc:
        raise problem(path, "no such file") from exc
    except OSError as exc:
        raise problem(path, f"cannot read: {exc.strerror or exc}") from exc
    if b"\x00" in data:
        raise problem(path, "binary data, not a YAML baseline")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise problem(path, f"not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():
        raise problem(path, "the file is empty")
    return text


def read_baseline_text(path: str | Path) -> str:
    """A baseline file's text, read once with the loader's checks (size, binary, UTF-8)."""
    return _read_text(str(path))


def load_baseline(path: str | Path) -> Baseline:
    name = str(path)
    return parse_baseline(_read_text(name), name)


def parse_baseline(text: str, name: str) -> Baseline:
    """A baseline from its text; `name` is the file it is (to be) in, for messages."""
    check_line_breaks(text, name)
    parsed = parse_yaml(text, name)
    data = parsed.data
    if data is None:
        raise problem(name, "the file holds no YAML data (only comments or blank lines)")
    line_of = parsed.line_finder(line_finder)
    if (
        isinstance(data, dict)
        and "format_version" in data
        and data["format_version"] not in READABLE_VERSIONS
    ):
        raise problem(
            name,
            here(
                line_of,
                ["format_version"],
                f"format_version {data['format_version']!r} is not one this perfgate reads "
                f"(it reads {', '.join(map(str, READABLE_VERSIONS))}); upgrade perfgate or "
                "re-record the baseline",
            ),
        )
    try:
        # The bulk (each kernel's metrics and info) is checked in plain Python when it is
        # certainly valid; jsonschema then checks the rest, and words every error otherwise.
        problems = []
        if not document_is_valid(data):  # not sure: jsonschema decides, and words it
            light = without_bulk(data)
            problems = schema_errors(light if light is not None else data, SCHEMA, line_of)
            if problems and light is not None:
                problems = schema_errors(data, SCHEMA, line_of)
    except RecursionError as exc:  # nesting within the bounds above still too deep to walk
        raise problem(name, "the document is nested too deeply to validate") from exc
    if problems:
        raise problem(name, problems[0], problems)
    for metric, entry in (data.get("thresholds") or {}).items():
        check_metric(metric, {"threshold": entry}, ["thresholds", metric], problems, line_of)
    seen: dict[str, int] = {}
    for i, kernel in enumerate(data["kernels"]):
        kid = kernel["id"]
        if kid in seen:
            add_problem(
                problems,
                line_of,
                ["kernels", i, "id"],
                f"duplicate id {kid!r} (also $.kernels[{seen[kid]}])",
            )
        seen.setdefault(kid, i)
        regex = kernel["match"].get("regex")
        if regex is not None:
            try:
                patterns.compile_pattern(regex)
            except re.error as exc:
                add_problem(
                    problems,
                    line_of,
                    ["kernels", i, "match", "regex"],
                    f"not a valid regular expression: {exc}",
                )
            except patterns.UnsafePattern as exc:
                add_problem(problems, line_of, ["kernels", i, "match", "regex"], f"{regex!r} {exc}")
        seen_in = kernel.get("seen_in")
        if seen_in and seen_in["runs"] >= seen_in["of"]:
            # A kernel every recorded run launched is required: a seen_in that says so would
            # make a check skip it when absent.
            add_problem(
                problems,
                line_of,
                ["kernels", i, "seen_in"],
                f"runs {seen_in['runs']} of {seen_in['of']}: seen_in is for a kernel fewer "
                "than all recorded runs launched",
            )
        for metric, entry in kernel["metrics"].items():
            check_metric(metric, entry, ["kernels", i, "metrics", metric], problems, line_of)
    if problems:
        raise problem(name, problems[0], problems)
    return build_baseline(data, name, line_of)
