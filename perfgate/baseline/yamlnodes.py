"""A baseline's YAML parsed to plain data: built from the parser's events where it is plain
data (perfgate.baseline.yamlload), else from the safe loader's nodes, which refuse anchors
and aliases, tags beyond plain data and keys written twice, and word every problem at its
line."""

from __future__ import annotations

import re
from typing import Any

import yaml

from perfgate.baseline import yamlload
from perfgate.baseline.nesting import MAX_NESTING, check_nesting
from perfgate.baseline.problems import document_order, error_place, mark_position, problem
from perfgate.common.errors import located
from perfgate.common.schemas import JsonPath, format_path

# libyaml's safe loader where PyYAML was built with it (5x faster), the pure-Python one otherwise;
# both construct plain data only.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def line_finder(root: yaml.Node | None) -> Any:
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
        return None if target is None else mark_position(target.start_mark)

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
                raise problem(
                    path,
                    located(
                        *mark_position(node.start_mark),
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
                    message = located(
                        *mark_position(node.start_mark), f"{format_path(where)}: {exc}"
                    )
                    raise problem(path, message, [message]) from None
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
                line, column = mark_position(key.start_mark)
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
                    raise problem(path, message, [message])
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
    return built[id(root)], sorted(problems, key=document_order)


def parse_yaml(text: str, path: str) -> yamlload.Parsed:
    check_nesting(text, path)
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
                raise problem(path, duplicates[0], duplicates)
        finally:
            loader.dispose()
    except yaml.constructor.ConstructorError as exc:
        raise problem(
            path, f"{error_place(exc)}{exc.problem} (only plain YAML data is allowed)"
        ) from exc
    except yaml.composer.ComposerError as exc:  # e.g. several documents in one file
        context = f"{exc.context}, " if exc.context else ""
        raise problem(path, f"{error_place(exc)}{context}{exc.problem}") from exc
    except yaml.MarkedYAMLError as exc:
        raise problem(path, f"{error_place(exc)}not valid YAML: {exc.problem}") from exc
    except yaml.YAMLError as exc:
        raise problem(path, f"not valid YAML: {exc}") from exc
    except RecursionError as exc:  # the pure-Python parser, within the bounds above
        raise problem(path, "the document is nested too deeply to parse") from exc
    return yamlload.Parsed(data, text, node)
