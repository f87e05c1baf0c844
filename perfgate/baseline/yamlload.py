"""A plain YAML document built straight from libyaml's parser events.

PyYAML's safe loader first composes a node for every value of the document, then builds the
data from the nodes: for a baseline of 1,000 kernels that is 300,000 nodes and most of the time
a check spends loading it (docs/scale.md). This module builds the same data in one iterative
pass over the parser's events, for documents that are plain data: maps with string keys written
once, sequences, and untagged scalars that resolve to strings, integers, floats, booleans or
null. On anything else (a tag, an anchor or alias, a duplicate or non-string key, a scalar the
safe constructor would turn into something else, a syntax error, several documents) it answers
"not sure", and the caller loads the document the node-based way, which decides and words every
refusal. A scalar is resolved exactly as the safe resolver does;
`tests/baseline/test_yamlload.py` holds the two ways to the same data on the committed baselines
and on each spelling of a scalar.

Line numbers of the collections are kept (a kernel's entry knows its line); the line of any
other value is found, only when a message needs one, by composing the nodes after all.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Sequence
from typing import Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from perfgate.common.errors import BaselineError, located

_CParser: Any
try:
    from yaml._yaml import CParser as _CParser
except ImportError:  # PyYAML without libyaml: the node-based loader does all the work
    _CParser = None

JsonPath = Sequence[str | int]
# Where a value was written: its 1-based line and column.
Position = tuple[int, int]
LineFinder = Callable[[JsonPath], Position | None]

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = yaml.resolver.Resolver()
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
# Spellings whose safe construction is int(text) and float(text): the resolver gives them the
# int and float tags (no other implicit resolver matches them first), and the constructor's
# sign, underscore, base-prefix and sexagesimal handling does not apply.
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]{0,17})")
_PLAIN_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?")


class _Unsure(Exception):
    """The document is not plain data this module can build exactly as the safe loader."""


class Parsed:
    """A loaded document, with what is known of where its values were written."""

    def __init__(
        self,
        data: Any,
        text: str,
        node: yaml.Node | None = None,
        lines: dict[int, Position] | None = None,
    ) -> None:
        self.data = data
        self._text = text
        self._node = node
        # id() of each map and sequence built from events -> the line and column it starts at.
        self._lines = lines

    def _root(self) -> yaml.Node | None:
        if self._node is None:
            loader = _SAFE_LOADER(self._text)
            try:
                self._node = loader.get_single_node()
            finally:
                loader.dispose()
        return self._node

    def line_finder(self, by_node: Callable[[yaml.Node | None], LineFinder]) -> LineFinder:
        """`by_node(root)`'s answers: the position of the value at a JSON path (of the root where
        the path leads nowhere). Maps and sequences answer from the lines kept while loading;
        other values compose the nodes, once, the first time one is asked for."""
        lines = self._lines
        if lines is None:
            return by_node(self._root())
        finder: list[LineFinder] = []

        def line_of(path: JsonPath) -> Position | None:
            # The walk by_node makes over nodes, made over the data: every key of a document
            # built here is a string written once, so the same path reaches the same value.
            target = self.data
            for part in path:
                if isinstance(target, dict):
                    target = target.get(part, _MISSING) if isinstance(part, str) else _MISSING
                elif isinstance(target, list) and isinstance(part, int):
                    target = target[part] if 0 <= part < len(target) else _MISSING
                else:
                    target = _MISSING
                if target is _MISSING:
                    target = self.data
                    break
            line = lines.get(id(target)) if isinstance(target, (dict, list)) else None
            if line is not None:
                return line
            if not finder:
                finder.append(by_node(self._root()))
            return finder[0](path)

        return line_of


_MISSING = object()


def _plain(value: str, cache: dict[str, Any], first: frozenset[str]) -> Any:
    """An untagged plain scalar as the safe loader builds it; _Unsure for anything but a
    string, an integer, a float, a boolean or null."""
    built: Any
    if value[:1] not in first:  # no implicit resolver applies: a string
        built = value
    elif _PLAIN_INT.fullmatch(value):
        built = int(value)
    elif _PLAIN_FLOAT.fullmatch(value):
        built = float(value)
    else:
        built = _resolved(value)
    cache[value] = built
    return built


def _resolved(value: str) -> Any:
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    if tag == _STR:
        return value
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return yaml.constructor.SafeConstructor.bool_values[value.lower()]
    raise _Unsure  # timestamps, other spellings of numbers, merge keys, ...


def load(text: str, path: str, max_depth: int) -> Parsed | None:
    """The document as plain data with its collections' lines, or None when it is not plain
    data this module builds exactly as the safe loader (load it the node-based way then).
    Collections nested deeper than `max_depth` are refused here, wherever the loader would
    answer: composing nodes recurses in C, and a deep enough document crashes the process."""
    if _CParser is None:
        return None
    parser = _CParser(text)
    # Every map built here lives as long as the document: the cyclic collector would walk all
    # of them again and again as they are made, which costs more than building them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build(parser, text, path, max_depth)
    except _Unsure:
        return None
    finally:
        if collecting:
            gc.enable()
        parser.dispose()


def _document_starts(parser: Any) -> bool:
    """Past the stream's start and the document's: False for an empty stream, _Unsure where the
    parser finds neither (a syntax error)."""
    get = parser.get_event
    try:
        get()  # the stream's start
        event = get()
        if isinstance(event, StreamEndEvent):
            return False
        if not isinstance(event, DocumentStartEvent):
            raise _Unsure
    except yaml.YAMLError:
        raise _Unsure from None
    return True


def _first_characters() -> frozenset[str]:
    """The first characters of the texts an implicit resolver may claim. _Unsure where somebody
    registered resolvers of their own: leave it to PyYAML."""
    first = frozenset(k for k in _RESOLVER.yaml_implicit_resolvers if k is not None)
    if None in _RESOLVER.yaml_implicit_resolvers or _RESOLVER.yaml_path_resolvers:
        raise _Unsure  # resolvers registered by someone else: leave it to PyYAML
    return first


def _build(parser: Any, text: str, path: str, max_depth: int) -> Parsed | None:
    # The stream's and document's starts, and the resolvers, are checked apart from the loop
    # over the events, which stays one function: it runs once per node of the document.
    if not _document_starts(parser):
        return Parsed(None, text, lines={})
    first = _first_characters()
    get = parser.get_event
    cache: dict[str, Any] = {}
    lines: dict[int, Position] = {}
    # The open collections, innermost last; for a map, the key waiting for its value.
    stack: list[Any] = []
    keys: list[Any] = []
    current: Any = None
    key: Any = _MISSING
    root: Any = _MISSING
    unsure = False
    try:
        while True:
            event = get()
            cls = event.__class__
            if cls is ScalarEvent:
                if event.anchor is not None or event.tag is not None:
                    raise _Unsure
                value = event.value
                built = cache.get(value, _MISSING) if event.implicit[0] else value
                if built is _MISSING:
                    built = _plain(value, cache, first)
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                if len(stack) >= max_depth:
                    raise _too_deep(event, path, max_depth)
                collection: Any = {} if cls is MappingStartEvent else []
                mark = event.start_mark
                lines[id(collection)] = (mark.line + 1, mark.column + 1)
                stack.append(current)
                keys.append(key)
                if event.anchor is not None or event.tag is not None:
                    raise _Unsure
                if current is not None and current.__class__ is dict and key is _MISSING:
                    raise _Unsure  # a map or a sequence as a key
                current, key = collection, _MISSING
                continue
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                built = current
                current, key = stack.pop(), keys.pop()
            elif cls is DocumentEndEvent:
                break
            else:  # an alias, or anything this loop does not know
                raise _Unsure
            if current is None:
                root = built
            elif current.__class__ is list:
                current.append(built)
            elif key is _MISSING:
                if built.__class__ is not str or built in current:
                    raise _Unsure  # a key that is not a string, or written twice
                key = built
            else:
                current[key] = built
                key = _MISSING
        if not isinstance(get(), StreamEndEvent):
            raise _Unsure  # several documents
    except _Unsure:
        unsure = True
    except yaml.YAMLError:
        unsure = True
    if unsure:
        # Still refuse a document too deep for the node-based loader to compose.
        _check_depth(parser, len(stack), path, max_depth)
        return None
    return Parsed(root, text, lines=lines)


def _too_deep(event: Any, path: str, max_depth: int) -> BaselineError:
    mark = event.start_mark
    return BaselineError(
        located(
            mark.line + 1,
            mark.column + 1,
            f"YAML nested more than {max_depth} levels deep; a baseline needs fewer than "
            f"{max_depth}",
        ),
        path,
    )


def _check_depth(parser: Any, depth: int, path: str, max_depth: int) -> None:
    """Consume the rest of the events, refusing nesting deeper than `max_depth`; a syntax
    error ends the walk (the node-based loader stops at the same place)."""
    get = parser.get_event
    try:
        while (event := get()) is not None:
            cls = event.__class__
            if cls is MappingStartEvent or cls is SequenceStartEvent:
                if depth >= max_depth:
                    raise _too_deep(event, path, max_depth)
                depth += 1
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                depth -= 1
    except yaml.YAMLError:
        return
