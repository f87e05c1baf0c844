"""Writing an edit plan (perfgate.lifecycle.plan) into a baseline file without losing what people
wrote in it: comments, key order, quoting, hand-set thresholds.

ruamel.yaml does the round trip (it keeps comments and layout, which PyYAML cannot); it is only
ever given text that perfgate.baseline.load.load_baseline has already validated with the safe
loader, so nothing it reads can construct an object. Strings are written quoted wherever a YAML 1.1
reader (PyYAML, which loads baselines) would take them for something else ("2026-11-22T03:00:00Z"
would be a timestamp, "no" a boolean).
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from perfgate.baseline.dump import (
    history_document,
    kernel_document,
    match_document,
    metric_document,
    program_document,
    tidy,
)
from perfgate.baseline.fingerprint import to_document as fingerprint_document
from perfgate.baseline.model import Baseline, KernelBaseline, MetricBaseline
from perfgate.common.errors import BaselineError
from perfgate.judge.comparison import merged_bounds
from perfgate.lifecycle.editplan import HISTORY_KEPT, Action, EditPlan, KernelEdit, history_entry
from perfgate.lifecycle.ownership import threshold_is_perfgates
from perfgate.lifecycle.stamps import Stamp
from perfgate.metrics.thresholds import Threshold

_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
# The keys of a metric's entry that perfgate writes from a capture; `threshold` and
# `calibration` only when the threshold is perfgate's own (lifecycle.threshold_is_perfgates).
_MEASURED = ("value", "min", "max", "unit", "source", "group", "shares", "reasons", "family")


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # as perfgate's writer: one metric a line, however long its source formula
    y.indent(mapping=2, sequence=2, offset=0)

    def null(representer: Any, _: None) -> Any:
        return representer.represent_scalar("tag:yaml.org,2002:null", "null")

    y.representer.add_representer(type(None), null)
    return y


def load(text: str) -> Any:
    return _yaml().load(text)


def dump(doc: Any) -> str:
    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def _plain(value: Any) -> Any:
    """A value as ruamel should write it: strings quoted where PyYAML would read them as
    something else, leaf mappings and lists in flow style (as perfgate's writer does)."""
    if isinstance(value, str):
        if _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) != _STR_TAG:  # type: ignore[no-untyped-call]
            return SingleQuotedScalarString(value)
        return value
    if isinstance(value, Mapping):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _plain(v)
        if all(not isinstance(v, (Mapping, list, tuple)) for v in value.values()):
            out.fa.set_flow_style()
        return out
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq(_plain(v) for v in value)
        if all(not isinstance(v, (Mapping, list, tuple)) for v in value):
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, float):
        return tidy(value)
    return value


def _set(target: Any, key: str, value: Any) -> None:
    """Set a key, keeping the comment attached to it and its place in the mapping."""
    if key in target and target[key] == value:
        return
    target[key] = _plain(value)


def _allowance(threshold: Threshold, value: float) -> float:
    # A change counts only beyond both parts of a bound (perfgate.judge.outcome): what a bound
    # lets a value move is the larger of the two.
    return max(threshold.relative * abs(value), threshold.absolute)


def _tighter(
    old: MetricBaseline, fresh: MetricBaseline, new: Mapping[str, Any], baseline: Baseline
) -> Mapping[str, Any]:
    """For the ratchet: of the bound in force (the old calibrated one, else the file's or the
    catalog's) and the fresh calibrated one, the one that lets the new value move less. The
    ratchet only ever tightens, so a bound it did not calibrate is never swapped for a looser
    one calibrated from noisier runs."""
    if isinstance(fresh.value, str):
        return new
    in_force = merged_bounds(old.definition, old, baseline).threshold
    proposed = merged_bounds(fresh.definition, fresh, baseline).threshold
    if _allowance(proposed, fresh.value) <= _allowance(in_force, fresh.value):
        return new
    kept = metric_document(old)
    return {key: kept[key] for key in ("threshold", "calibration") if key in kept}


def _metric(
    entry: Any,
    old: MetricBaseline | None,
    fresh: MetricBaseline,
    action: Action,
    baseline: Baseline,
) -> None:
    new = metric_document(fresh)
    if old is None:
        entry[fresh.name] = _plain(new)
        return
    target: Any = entry[fresh.name]
    if not isinstance(target, CommentedMap):
        entry[fresh.name] = _plain(new)
        return
    for key in _MEASURED:
        if key in new:
            _set(target, key, new[key])
        elif key in target:
            del target[key]
    if not threshold_is_perfgates(old) or "calibration" not in new:
        return  # somebody's bound, or too few runs to calibrate one: the old bound stands
    bound = _tighter(old, fresh, new, baseline) if action is Action.RATCHET else new
    for key in ("threshold", "calibration"):
        if key in bound:
            _set(target, key, bound[key])
        elif key in target:
            del target[key]


def _kernel(
    entry: Any,
    old: KernelBaseline,
    edit: KernelEdit,
    reason: str | None,
    when: Stamp,
    baseline: Baseline,
) -> None:
    fresh = edit.fresh
    assert fresh is not None
    if not old.match.explicit and fresh.match != old.match:
        _set(entry, "match", match_document(fresh.match))
    if edit.action is not Action.RATCHET and fresh.launches is not None:
        _set(entry, "launches", fresh.launches)
    olds = {m.name: m for m in old.metrics}
    metrics = entry["metrics"]
    for metric in fresh.metrics:
        if metric.name in edit.metrics:
            _metric(metrics, olds.get(metric.name), metric, edit.action, baseline)
    if edit.action is not Action.RATCHET:
        if fresh.info:
            _set(entry, "info", {k: tidy(v) for k, v in fresh.info.items()})
        elif "info" in entry:
            del entry["info"]
    if reason is not None or edit.action in (Action.ACCEPT, Action.RATCHET):
        text = reason or "improved beyond its bound (perfgate baseline update --ratchet)"
        record = history_document(history_entry(edit, text, when))
        history = entry.get("history")
        if not isinstance(history, list):
            history = CommentedSeq()
            entry["history"] = history
        history.append(_history(record))
        del history[: max(0, len(history) - HISTORY_KEPT)]


def _history(record: Mapping[str, Any]) -> Any:
    out = CommentedMap()
    for k, v in record.items():
        out[k] = _plain(v)
    return out


def apply(text: str, baseline: Baseline, plan: EditPlan, reason: str | None, when: Stamp) -> str:
    """The baseline file's text with the plan's edits made; everything else as it was: its
    line ends (CRLF stays CRLF) and the comments above each top-level key too."""
    crlf = _crlf(text)
    if crlf:  # ruamel writes what it makes with \n: edit in \n, then give the file's own back
        text = text.replace("\r\n", "\n")
    notes, bare = _take_key_comments(text)
    edited = _put_key_comments(_apply(bare, baseline, plan, reason, when), notes)
    return edited.replace("\n", "\r\n") if crlf else edited


def _crlf(text: str) -> bool:
    """Whether the file ends its lines with CRLF (most of them: an editor's stray line aside)."""
    return text.count("\r\n") * 2 > text.count("\n")


# A top-level key of the baseline: at the start of a line, a plain name and a colon.
_TOP_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?=[ \t]|$)")


def _is_note(line: str) -> bool:
    """A blank line, or a comment at the start of its line (never the text of a block scalar,
    which is indented)."""
    return not line.strip() or line.startswith("#")


def _take_key_comments(text: str) -> tuple[dict[str, list[str]], str]:
    """The comment lines right above each top-level key, taken out of the text: each key ->
    the blank and comment lines above it as written, and the text without those comments
    (its blank lines stay). ruamel hangs such a comment on the end of the block before the
    key: it would go when that block is rewritten (the program's time, the fingerprint), or
    end up above a key the edit adds to that block (`updated_at`)."""
    lines = text.split("\n")
    notes: dict[str, list[str]] = {}
    drop: set[int] = set()
    for i, line in enumerate(lines):
        match = _TOP_KEY.match(line)
        if not match or match.group(1) in notes:
            continue
        start = i
        while start > 0 and _is_note(lines[start - 1]):
            start -= 1
        comments = [j for j in range(start, i) if lines[j].strip()]
        if comments:
            notes[match.group(1)] = lines[start:i]
            drop.update(comments)
    return notes, "\n".join(line for j, line in enumerate(lines) if j not in drop)


def _put_key_comments(text: str, notes: dict[str, list[str]]) -> str:
    """`text` with each key's comment lines (_take_key_comments) back above it, in place of
    the blank lines there, as the file had them."""
    if not notes:
        return text
    out: list[str] = []
    done: set[str] = set()
    for line in text.split("\n"):
        match = _TOP_KEY.match(line)
        key = match.group(1) if match else None
        if key in notes and key not in done:
            done.add(key)
            start = len(out)
            while start > 0 and not out[start - 1].strip():
                start -= 1
            out[start:] = notes[key]
        out.append(line)
    return "\n".join(out)


def _apply(text: str, baseline: Baseline, plan: EditPlan, reason: str | None, when: Stamp) -> str:
    doc = load(text)
    kernels = doc["kernels"]
    # By id, never by list position: each edit lands on the entry of its kernel's id in this
    # very text (ids are unique: the loader refuses a file where they are not).
    position = {str(entry["id"]): i for i, entry in enumerate(kernels)}
    recorded = {kernel.id: kernel for kernel in baseline.kernels}
    if set(position) != set(recorded):
        raise BaselineError(
            "changed while perfgate was editing it (its kernels are not the ones read); run again",
            baseline.path,
        )
    removed: list[int] = []
    gone: list[dict[str, Any]] = []
    for edit in plan.edits:
        if edit.action is Action.ADD:
            assert edit.fresh is not None
            entry = kernel_document(edit.fresh)
            if reason is not None:
                entry["history"] = [history_document(history_entry(edit, reason, when))]
            added = _plain(entry)
            added.fa.set_block_style()
            kernels.append(_block(added))
            continue
        i = position[edit.kernel]
        if edit.action is Action.REMOVE:
            removed.append(i)
            gone.append(
                {"id": edit.kernel, "date": when.date, "by": when.by, "reason": reason or ""}
            )
            continue
        _kernel(kernels[i], recorded[edit.kernel], edit, reason, when, baseline)
    for i in sorted(removed, reverse=True):
        del kernels[i]
    provenance = doc.get("provenance")
    if provenance is None:
        provenance = CommentedMap()
        doc.insert(1, "provenance", provenance)
    _set(provenance, "updated_at", when.date)
    if when.by:
        _set(provenance, "updated_by", when.by)
    if gone:
        removed_list = provenance.get("removed")
        if not isinstance(removed_list, list):
            removed_list = CommentedSeq()
            provenance["removed"] = removed_list
        removed_list.extend(_history(g) for g in gone)
    if plan.program is not None:
        program = _plain({"gpu_time": program_document(plan.program)})
        program.fa.set_block_style()
        doc["program"] = program
    if plan.fingerprint is not None:
        fp = _plain(fingerprint_document(plan.fingerprint))
        fp.fa.set_block_style()
        if "fingerprint" in doc:
            doc["fingerprint"] = fp
        else:
            keys = list(doc.keys())
            at = keys.index("provenance") + 1 if "provenance" in keys else 1
            doc.insert(at, "fingerprint", fp)
    return dump(doc)


def _block(entry: Any) -> Any:
    """A new kernel entry: block style for the entry and its `match` and `metrics`, as
    perfgate's writer lays one out."""
    entry.fa.set_block_style()
    for key in ("match", "metrics"):
        if key in entry and isinstance(entry[key], CommentedMap):
            entry[key].fa.set_block_style()
    return entry
