"""Baseline files: per-kernel recorded values and thresholds, as schema-validated YAML.

Loading is strict and never executes anything: YAML is parsed with the safe loader, anchors and
aliases are refused outright (a baseline never needs them, and they are how "billion laughs"
bombs are built), and the document is validated against schemas/baseline.schema.json before
perfgate looks at it. Every problem is reported as `FILE:LINE:COL: $.json.path: message`
(errors.located), or `FILE: message` for one of the whole file."""

from __future__ import annotations

import math
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from perfgate.baseline import yamlload
from perfgate.baseline.fastcheck import document_is_valid, without_bulk
from perfgate.baseline.fingerprint import from_document as fingerprint_from_document
from perfgate.baseline.model import (
    FORMAT_VERSION,
    READABLE_VERSIONS,
    Baseline,
    HistoryEntry,
    KernelBaseline,
    KernelMatch,
    LaunchConfig,
    MetricBaseline,
    ProgramBaseline,
)
from perfgate.common import patterns
from perfgate.common.errors import BaselineError, UsageError, located
from perfgate.common.frozen import maker
from perfgate.common.schemas import JsonPath, format_path, schema_errors
from perfgate.ingest.launches import Dim3
from perfgate.metrics.catalog import lookup
from perfgate.metrics.thresholds import CategoricalOverride, Direction, ThresholdOverride

# libyaml's safe loader where PyYAML was built with it (5x faster), the pure-Python one otherwise;
# both construct plain data only.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


SCHEMA = "baseline.schema.json"


MAX_BYTES = 16 * 1024 * 1024


def _at(mark: yaml.Mark) -> yamlload.Position:
    return mark.line + 1, mark.column + 1


def _problem(path: str, message: str, problems: list[str] | None = None) -> BaselineError:
    return BaselineError(message, path, problems=problems)


def _line_finder(root: yaml.Node | None) -> Any:
    def line_of(path: JsonPath) -> yamlload.Position | None:
        node = root
        for part in path:
            if isinstance(node, yaml.MappingNode):
                nxt = None
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == part:
                        nxt = value
                        break
                node = nxt
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                node = node.value[part] if 0 <= part < len(node.value) else None
            else:
                node = None
            if node is None:
                break
        target = node if node is not None else root
        return None if target is None else _at(target.start_mark)

    return line_of


_STR = "tag:yaml.org,2002:str"


_INT = "tag:yaml.org,2002:int"


_FLOAT = "tag:yaml.org,2002:float"


_NULL = "tag:yaml.org,2002:null"


_MAP = "tag:yaml.org,2002:map"


_SEQ = "tag:yaml.org,2002:seq"


_PLAIN_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")


_PLAIN_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")


_BOOL = "tag:yaml.org,2002:bool"


_TIMESTAMP = "tag:yaml.org,2002:timestamp"


# Scalars a baseline can hold; any other tag (!!binary, !!set, !!omap, !!pairs, a Python tag) is
# refused: none builds anything a baseline needs, and each would reach code that expects plain
# JSON-like data.
_SCALAR_TAGS = frozenset({_STR, _INT, _FLOAT, _NULL, _BOOL, _TIMESTAMP})


class _BadNode(Exception):
    """A node that cannot become baseline data; the caller words it with its JSON path."""


def _tag_name(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org") else tag


def _scalar(node: yaml.ScalarNode, loader: Any) -> Any:
    """A scalar as the safe constructor builds it; the common spellings without its
    machinery (a baseline is mostly numbers and names), every other one through it. A value
    its tag cannot hold (`!!int abc`, `!!timestamp 2020-13-45`, a 5,000-digit integer) is a
    _BadNode, never the constructor's ValueError; a date stays the text it is written as."""
    tag, text = node.tag, node.value
    if tag == _STR:
        return text
    if tag == _INT and _PLAIN_INT.match(text) and len(text) < 20:
        return int(text)
    if tag == _FLOAT and _PLAIN_FLOAT.match(text):
        return float(text)
    if tag == _NULL:
        return None
    if tag not in _SCALAR_TAGS:
        raise _BadNode(
            f"the YAML tag {_tag_name(tag)} is not allowed in a baseline: only plain YAML "
            "data is allowed (maps, lists, strings, numbers, booleans, null)"
        )
    try:
        value = loader.construct_object(node, deep=True)
    except yaml.YAMLError:
        raise
    except Exception:  # each constructor fails its own way: ValueError, KeyError, AttributeError
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise _BadNode(f"{shown!r} is not a valid {_tag_name(tag)} value") from None
    return text if tag == _TIMESTAMP else value


def _construct(root: yaml.Node, loader: Any, path: str) -> tuple[Any, list[str]]:
    """Build the document from its nodes in one iterative walk (deep nesting cannot exhaust
    the stack). An alias (a node reached twice) is refused at once, so even a "billion laughs"
    bomb costs one pass over what is written; a key written twice in a mapping is reported
    (PyYAML keeps the last one silently, which in a hand-edited baseline would hide a
    change). Tags other than plain maps, sequences and scalars go through the safe
    constructor, which refuses anything that would build an object."""
    problems: list[str] = []
    seen: set[int] = set()
    built: dict[int, Any] = {}
    # (node, where, children done?)
    stack: list[tuple[yaml.Node, list[str | int], bool]] = [(root, [], False)]
    while stack:
        node, where, done = stack.pop()
        if not done:
            if id(node) in seen:
                raise _problem(
                    path,
                    located(
                        *_at(node.start_mark),
                        "YAML anchors and aliases are not allowed in a baseline",
                    ),
                )
            seen.add(id(node))
            if isinstance(node, yaml.ScalarNode) or node.tag not in (_MAP, _SEQ):
                try:
                    if not isinstance(node, yaml.ScalarNode):
                        raise _BadNode(
                            f"the YAML tag {_tag_name(node.tag)} is not allowed in a baseline: "
                            "only plain YAML data is allowed (maps, lists, strings, numbers, "
                            "booleans, null)"
                        )
                    built[id(node)] = _scalar(node, loader)
                except _BadNode as exc:
                    message = located(*_at(node.start_mark), f"{format_path(where)}: {exc}")
                    raise _problem(path, message, [message]) from None
                continue
            stack.append((node, where, True))
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    k = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
                    stack.append((key, [*where, k], False))
                    stack.append((value, [*where, k], False))
            else:
                stack.extend((item, [*where, i], False) for i, item in enumerate(node.value))
            continue
        if isinstance(node, yaml.MappingNode):
            mapping: dict[Any, Any] = {}
            lines: dict[Any, int] = {}
            for key, value in node.value:
                k = built.pop(id(key))
                line, column = _at(key.start_mark)
                if not isinstance(k, str):
                    # Every key of a baseline is a name; a number, a boolean (`on:`), a null
                    # or a list as a key would reach code that sorts and prints names.
                    shown = repr(k) if len(repr(k)) <= 40 else repr(k)[:40] + "..."
                    message = located(
                        line,
                        column,
                        f"{format_path(where)}: a mapping key must be a string, "
                        f"not {shown} ({type(k).__name__}; quote it)",
                    )
                    raise _problem(path, message, [message])
                if k in mapping:
                    problems.append(
                        located(
                            line,
                            column,
                            f"{format_path([*where, str(k)])}: duplicate key "
                            f"(also line {lines[k]})",
                        )
                    )
                    continue
                mapping[k], lines[k] = built.pop(id(value)), line
            built[id(node)] = mapping
        else:
            built[id(node)] = [built.pop(id(item)) for item in node.value]
    return built[id(root)], sorted(problems, key=_position)


def _read_text(path: str) -> str:
    p = Path(path)
    try:
        if p.is_dir():
            raise _problem(path, "is a directory, not a baseline file")
        if not stat.S_ISREG(p.stat().st_mode):
            raise _problem(path, "is not a regular file (a FIFO or a device), not a baseline file")
        # What is read is bounded, not what the file says its size is (a file that grows, or
        # a /proc file that says 0).
        with p.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise _problem(
                path, f"is over {MAX_BYTES:,} bytes; a baseline is at most {MAX_BYTES:,}"
            )
    except FileNotFoundError as exc:
        raise _problem(path, "no such file") from exc
    except OSError as exc:
        raise _problem(path, f"cannot read: {exc.strerror or exc}") from exc
    if b"\x00" in data:
        raise _problem(path, "binary data, not a YAML baseline")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _problem(path, f"not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():
        raise _problem(path, "the file is empty")
    return text


def _position(problem: str) -> tuple[int, ...]:
    """A located problem's (line, column), to sort problems in document order."""
    head = problem.split(": ", 1)[0].split(":")
    return tuple(int(n) for n in head) if all(n.isdigit() for n in head) else (0,)


def _mark(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    return located(*_at(mark), "") if mark else ""


MAX_NESTING = 64


MAX_INDENT = 512


_BRACKETS_ONLY = (bytes.maketrans(b"{}", b"[]"), bytes(range(256)).translate(None, b"[]{}"))


# Indentation and the block indicators before a line's content, as one run of blanks.
_LEADING = bytes.maketrans(b"\t-?:", b"    ")


_BRACKET = re.compile(rb"[\[\]{}]")


def _too_deep_at(data: bytes) -> yamlload.Position:
    """The line and column of the bracket that opens level MAX_NESTING + 1 (counted as
    _check_nesting counts, strings included); the first 1,000,000 brackets are looked at, and
    the file's start is named when the place lies beyond them."""
    depth = 0
    for n, m in enumerate(_BRACKET.finditer(data)):
        depth += 1 if m.group() in (b"[", b"{") else -1
        if depth > MAX_NESTING:
            start = data.rfind(b"\n", 0, m.start()) + 1
            column = len(data[start : m.start()].decode("utf-8", "replace")) + 1
            return data.count(b"\n", 0, m.start()) + 1, column
        if n >= 1_000_000:
            break
    return 1, 1


def _check_nesting(text: str, path: str) -> None:
    """Refuse nesting no baseline needs (a real one is 6 levels deep) before a parser sees it:
    libyaml's composer recurses in C and a document nested 30,000 levels deep crashes the
    process (seen: segmentation fault), which no exception handler can catch. A document
    nests by flow brackets and by block collections; a block collection opens at a column
    beyond its parent's, by indentation or by indicators on one line (`- - - x`, `? - ? x`),
    so bounding the columns a line's indentation and indicators span bounds block nesting.
    Brackets are counted even inside strings, which keeps the bound conservative. Costs a few
    milliseconds for a 3 MB baseline (C-level byte operations only; docs/limits.md)."""
    data = text.encode("utf-8", "surrogatepass")
    # Innermost bracket pairs removed a level per pass: the passes are the matched depth,
    # what is left unmatched ("]]][[[") adds to it; more passes than the limit never run.
    brackets = data.translate(*_BRACKETS_ONLY)
    depth = 0
    while brackets and depth <= MAX_NESTING:
        inner = brackets.replace(b"[]", b"")
        if len(inner) == len(brackets):
            break
        brackets, depth = inner, depth + 1
    depth += brackets.count(b"[")
    if depth > MAX_NESTING:
        raise _problem(
            path,
            located(
                *_too_deep_at(data),
                f"YAML nested more than {MAX_NESTING} levels deep in brackets; a baseline "
                f"needs fewer than {MAX_NESTING}",
            ),
        )
    leading = b"\n" + data.translate(_LEADING)
    at = leading.find(b"\n" + b" " * (MAX_INDENT + 1))
    if at >= 0:
        line = leading.count(b"\n", 0, at + 1)
        raise _problem(
            path,
            located(
                line,
                1,
                f"indentation and block indicators ('- - - ...') span more than "
                f"{MAX_INDENT} columns; a baseline nests far less deeply",
            ),
        )


def _parse_yaml(text: str, path: str) -> yamlload.Parsed:
    _check_nesting(text, path)
    # Plain data (every baseline perfgate writes) is built from the parser's events; the
    # nodes below decide and word everything else.
    fast = yamlload.load(text, path, MAX_NESTING)
    if fast is not None:
        return fast
    try:
        loader = _SAFE_LOADER(text)
        try:
            node = loader.get_single_node()
            data, duplicates = _construct(node, loader, path) if node is not None else (None, [])
            if duplicates:
                raise _problem(path, duplicates[0], duplicates)
        finally:
            loader.dispose()
    except yaml.constructor.ConstructorError as exc:
        raise _problem(
            path, f"{_mark(exc)}{exc.problem} (only plain YAML data is allowed)"
        ) from exc
    except yaml.composer.ComposerError as exc:  # e.g. several documents in one file
        context = f"{exc.context}, " if exc.context else ""
        raise _problem(path, f"{_mark(exc)}{context}{exc.problem}") from exc
    except yaml.MarkedYAMLError as exc:
        raise _problem(path, f"{_mark(exc)}not valid YAML: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise _problem(path, f"not valid YAML: {exc}") from exc
    except RecursionError as exc:  # the pure-Python parser, within the bounds above
        raise _problem(path, "the document is nested too deeply to parse") from exc
    return yamlload.Parsed(data, text, node)


def _dim3(value: Any) -> Dim3 | None:
    return None if value is None else (int(value[0]), int(value[1]), int(value[2]))


def _override(
    raw: Mapping[str, Any] | None,
) -> tuple[ThresholdOverride | None, CategoricalOverride | None]:
    if not raw:
        return None, None
    threshold = ThresholdOverride(
        relative=raw.get("relative"),
        absolute=raw.get("absolute"),
        direction=Direction(raw["direction"]) if "direction" in raw else None,
    )
    check = CategoricalOverride(
        stable=raw.get("stable"),
        expect=tuple(raw["expect"]) if "expect" in raw else None,
        forbid=tuple(raw["forbid"]) if "forbid" in raw else None,
        margin=raw.get("margin"),
    )
    return threshold, check


_NUMERIC_KEYS = ("relative", "absolute", "direction")


CATEGORICAL_KEYS = ("stable", "expect", "forbid", "margin")


def _check_metric(
    name: str,
    entry: Mapping[str, Any] | None,
    where: list[str | int],
    problems: list[str],
    line_of: Any,
) -> None:
    try:
        defn = lookup(name)
    except UsageError as exc:
        _add(problems, line_of, where, exc.message)
        return
    if entry is None:
        return
    value = entry.get("value")
    categorical = defn.categorical
    if value is not None:
        if categorical and not isinstance(value, str):
            _add(
                problems,
                line_of,
                [*where, "value"],
                f"{name} is categorical: its value is a label such as 'long_scoreboard'",
            )
        if not categorical and not defn.raw and not isinstance(value, (int, float)):
            _add(problems, line_of, [*where, "value"], f"{name} needs a number, not {value!r}")
    for key in _VALUE_KEYS:
        number = entry.get(key)
        # The common case first: a finite number from 0 up (NaN compares false).
        if number is None or number.__class__ is str or 0 <= number < math.inf:
            continue
        if isinstance(number, float) and not math.isfinite(number):
            _add(
                problems,
                line_of,
                [*where, key],
                f"{number!r} is not a finite number; a baseline holds measured values",
            )
        elif isinstance(number, (int, float)) and not isinstance(number, bool) and number < 0:
            _add(
                problems,
                line_of,
                [*where, key],
                f"{number!r} is negative; counters are never negative",
            )
    override = entry.get("threshold")
    if not override:
        return
    wrong = _NUMERIC_KEYS if categorical else CATEGORICAL_KEYS
    for key in wrong:
        if key in override:
            kind = "categorical" if categorical else "numeric"
            _add(
                problems,
                line_of,
                [*where, "threshold", key],
                f"does not apply to {name}, a {kind} metric",
            )


_VALUE_KEYS = ("value", "min", "max")


def _here(line_of: Any, where: list[str | int], message: str) -> str:
    """`LINE:COL: $.path: message`, at the value `where` leads to."""
    at = line_of(where)
    text = f"{format_path(where)}: {message}"
    return located(at[0], at[1], text) if at else text


def _add(problems: list[str], line_of: Any, where: list[str | int], message: str) -> None:
    problems.append(_here(line_of, where, message))


def read_baseline_text(path: str | Path) -> str:
    """A baseline file's text, read once with the loader's checks (size, binary, UTF-8)."""
    return _read_text(str(path))


def load_baseline(path: str | Path) -> Baseline:
    name = str(path)
    return parse_baseline(_read_text(name), name)


_UNICODE_BREAKS = {"\x85": "NEL (U+0085)", "\u2028": "U+2028", "\u2029": "U+2029"}


def _check_line_breaks(text: str, name: str) -> None:
    """YAML reads NEL, U+2028 and U+2029 as line breaks, and editors and perfgate's own
    line-based edits (accept, update) do not: one file would read as two different files.
    A baseline breaks its lines with \\n only; such a character inside a string is written
    as an escape ("\\N", "\\L", "\\P" in a double-quoted string)."""
    for ch, what in _UNICODE_BREAKS.items():
        at = text.find(ch)
        if at >= 0:
            line = text.count("\n", 0, at) + 1
            column = at - (text.rfind("\n", 0, at) + 1) + 1
            raise _problem(
                name,
                f"{line}:{column}: a {what} character; a baseline breaks lines with \\n only "
                "(inside a string, write it escaped in double quotes)",
            )


def parse_baseline(text: str, name: str) -> Baseline:
    """A baseline from its text; `name` is the file it is (to be) in, for messages."""
    _check_line_breaks(text, name)
    parsed = _parse_yaml(text, name)
    data = parsed.data
    if data is None:
        raise _problem(name, "the file holds no YAML data (only comments or blank lines)")
    line_of = parsed.line_finder(_line_finder)
    if (
        isinstance(data, dict)
        and "format_version" in data
        and data["format_version"] not in READABLE_VERSIONS
    ):
        raise _problem(
            name,
            _here(
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
        raise _problem(name, "the document is nested too deeply to validate") from exc
    if problems:
        raise _problem(name, problems[0], problems)
    for metric, entry in (data.get("thresholds") or {}).items():
        _check_metric(metric, {"threshold": entry}, ["thresholds", metric], problems, line_of)
    seen: dict[str, int] = {}
    for i, kernel in enumerate(data["kernels"]):
        kid = kernel["id"]
        if kid in seen:
            _add(
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
                _add(
                    problems,
                    line_of,
                    ["kernels", i, "match", "regex"],
                    f"not a valid regular expression: {exc}",
                )
            except patterns.UnsafePattern as exc:
                _add(problems, line_of, ["kernels", i, "match", "regex"], f"{regex!r} {exc}")
        seen_in = kernel.get("seen_in")
        if seen_in and seen_in["runs"] >= seen_in["of"]:
            # A kernel every recorded run launched is required: a seen_in that says so would
            # make a check skip it when absent.
            _add(
                problems,
                line_of,
                ["kernels", i, "seen_in"],
                f"runs {seen_in['runs']} of {seen_in['of']}: seen_in is for a kernel fewer "
                "than all recorded runs launched",
            )
        for metric, entry in kernel["metrics"].items():
            _check_metric(metric, entry, ["kernels", i, "metrics", metric], problems, line_of)
    if problems:
        raise _problem(name, problems[0], problems)
    return _build(data, name, line_of)


_metric_baseline = maker(MetricBaseline)  # 37,000 for a baseline of 1,000 kernels


def _program(data: Mapping[str, Any]) -> ProgramBaseline | None:
    entry = (data.get("program") or {}).get("gpu_time")
    if entry is None:
        return None
    return ProgramBaseline(
        value=float(entry["value"]),
        relative=float(entry["threshold"]["relative"]),
        runs=tuple(float(r) for r in entry.get("runs") or ()),
        unit=entry.get("unit", "ns"),
        calibration=entry.get("calibration"),
        history=_history(entry),
    )


def _history(entry: Mapping[str, Any]) -> tuple[HistoryEntry, ...]:
    return tuple(
        HistoryEntry(
            date=h["date"],
            reason=h["reason"],
            by=h.get("by"),
            action=h.get("action"),
            previous=h.get("previous") or {},
        )
        for h in entry.get("history") or ()
    )


def _line(line_of: Any, where: JsonPath) -> int | None:
    at = line_of(where) if line_of else None
    return at[0] if at else None


def _build(data: Mapping[str, Any], path: str, line_of: Any = None) -> Baseline:
    kernels = []
    for i, kernel in enumerate(data["kernels"]):
        metrics = []
        for metric, entry in kernel["metrics"].items():
            threshold, check = _override(entry.get("threshold"))
            value = entry["value"]
            reasons = entry.get("reasons")
            metrics.append(
                _metric_baseline(
                    name=metric,
                    value=float(value) if isinstance(value, (int, float)) else str(value),
                    low=entry.get("min"),
                    high=entry.get("max"),
                    unit=entry.get("unit", ""),
                    source=entry.get("source", ""),
                    group=entry.get("group"),
                    shares=entry.get("shares"),
                    threshold=threshold,
                    check=check,
                    reasons=tuple(reasons) if reasons is not None else None,
                    family=entry.get("family"),
                    calibration=entry.get("calibration"),
                )
            )
        m = kernel["match"]
        info = {
            k: float(v) if isinstance(v, (int, float)) else str(v)
            for k, v in (kernel.get("info") or {}).items()
        }
        kernels.append(
            KernelBaseline(
                id=kernel["id"],
                match=KernelMatch(
                    m.get("function"),
                    m.get("name"),
                    m.get("regex"),
                    _dim3(m.get("block")),
                    _dim3(m.get("grid")),
                    m.get("nvtx"),
                    m.get("work"),
                ),
                metrics=tuple(metrics),
                name=kernel.get("name", m.get("name")),
                # Format 1 wrote the launches of all captures together, not per capture.
                launches=kernel.get("launches") if data.get("format_version") != 1 else None,
                info=info,
                family=kernel.get("family"),
                # Absent before autotuned entries existed: an ordinary kernel (format 2 as is).
                configurations=tuple(
                    LaunchConfig(
                        _dim3(c.get("grid")),
                        _dim3(c.get("block")),
                        c.get("registers"),
                        c.get("shared_memory"),
                        c.get("runs", 0),
                        float(c["duration"]) if c.get("duration") is not None else None,
                    )
                    for c in kernel.get("configurations") or ()
                ),
                history=_history(kernel),
                seen_in=(s["runs"], s["of"]) if (s := kernel.get("seen_in")) else None,
                line=_line(line_of, ["kernels", i]),
            )
        )
    thresholds: dict[str, ThresholdOverride] = {}
    checks: dict[str, CategoricalOverride] = {}
    for metric, entry in (data.get("thresholds") or {}).items():
        threshold, check = _override(entry)
        if threshold is not None and check is not None:
            thresholds[metric], checks[metric] = threshold, check
    identity = data.get("identity") or {}
    return Baseline(
        kernels=tuple(kernels),
        provenance=data.get("provenance") or {},
        thresholds=thresholds,
        checks=checks,
        path=path,
        format_version=int(data.get("format_version", FORMAT_VERSION)),
        by_nvtx=bool(identity.get("nvtx", False)),
        fingerprint=(
            fingerprint_from_document(data["fingerprint"], {}) if "fingerprint" in data else None
        ),
        program=_program(data),
        waive=tuple(data.get("waive") or ()),
    )
