"""Writes the corpus of bad and odd inputs in this folder (tests/corpus/), derived from the
real captures and baselines of the repository. Every derived capture is synthetic: it is a real
ncu capture changed in the one way its name says, and is never presented as ncu output.

    python tests/corpus/make_corpus.py

tests/corpus/expectations.yaml says what perfgate must do with each file; tests/hostile/test_corpus.py
runs them through the command line.
"""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "h100"
CAPTURES = HERE / "captures"
BASELINES = HERE / "baselines"


def _rows(text: str) -> tuple[list[str], int]:
    lines = text.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    return lines, header


def _eu(text: str) -> str:
    """Numbers as a European locale writes them: '1.234,5'."""

    def fix(m: re.Match[str]) -> str:
        v = m.group(1)
        if not re.fullmatch(r"-?[\d,]+(\.\d+)?", v) or not any(ch.isdigit() for ch in v):
            return m.group(0)
        return '"' + v.replace(",", "_").replace(".", ",").replace("_", ".") + '"'

    return re.sub(r'"([^"]*)"', fix, text)


def _drop_columns(text: str, prefix: str) -> str:
    import csv
    import io

    lines, at = _rows(text)
    rows = list(csv.reader(io.StringIO("".join(lines[at:]))))
    keep = [i for i, name in enumerate(rows[0]) if not name.startswith(prefix)]
    body = "".join(",".join(f'"{r[i]}"' for i in keep) + "\n" for r in rows)
    return "".join(lines[:at]) + body


def captures() -> dict[str, bytes | str]:
    full = (DATA / "zoo-good-short-run2.csv").read_text()
    lines, at = _rows(full)
    # The first 11 launches hold every kernel of the zoo once; the corpus stays small.
    good = "".join(lines[: at + 2 + 11])
    lines, at = _rows(good)
    rng = random.Random(7)
    out: dict[str, bytes | str] = {
        "empty.csv": "",
        "whitespace-only.csv": "\n  \n\t\n",
        "binary-junk.bin": bytes(rng.randrange(256) for _ in range(4096)),
        "latin1-text.csv": "Kernel Name;Durée\n".encode("latin-1") + b"\xe9\xe8\n",
        "not-a-capture.json": '{"kernels": [{"name": "zoo_coalescing", "duration": 13.6}]}\n',
        "html-page.html": "<!doctype html><html><body><h1>Nsight Compute</h1></body></html>\n",
        "semicolon-separated.csv": "".join(line.replace('","', '";"') for line in lines),
        "cut-mid-row.csv": good[: len(good) - 700],
        "cut-in-quotes.csv": good[: len(good) - 703],
        "header-only.csv": "".join(lines[: at + 2]),
        "crlf.csv": good.replace("\n", "\r\n"),
        "bom.csv": "\ufeff" + good,
        "eu-locale.csv": _eu(good),
        "mixed-locale.csv": "".join(lines[: at + 3]) + _eu("".join(lines[at + 3 :])),
        "eu-ambiguous.csv": _ambiguous(good),
        "missing-gated-metric.csv": _drop_columns(good, "gpu__time_duration"),
        "gzip-truncated.csv.gz": gzip.compress(good.encode(), mtime=0)[:5000],
        "ncu-rep-garbage.ncu-rep": b"NVR\x00" + bytes(rng.randrange(256) for _ in range(512)),
        # NCU_FACTS: the text ncu prints when the user may not read the counters, before or
        # instead of any CSV; the program itself may still run and print.
        "permission-error.txt": (
            "==PROF== Connected to process 4242 (/work/build/zoo_good)\n"
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
            "Performance Counters on the target device 0. For instructions on enabling permissions "
            "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
            "perfgate zoo (good build), 3 launches per kernel\n"
            "==PROF== Disconnected from process 4242\n"
        ),
        "prof-lines-only.txt": "==PROF== Connected to process 1 (/bin/true)\n==PROF== Disconnected from process 1\n",
        # A launch row in the middle with a field missing, or one too many: pandas padded or
        # cut it and the check passed.
        "row-missing-field.csv": _edit_row(good, 5, lambda f: f[:-1]),
        "row-extra-field.csv": _edit_row(good, 5, lambda f: [*f, "7"]),
        # A stall counter that overflows a double: refused naming the column, never a NaN or an
        # infinity in a report.
        "infinite-stall.csv": _edit_row(
            good,
            3,
            lambda f: _set(f, _column(good, "stalled_long_scoreboard_per_warp_active"), "1e999"),
        ),
        # Two ncu outputs appended to one file (`>> capture.csv` twice): only the first page
        # was judged (issue 23). With ncu's log between the pages, and without (--import form).
        "two-pages.csv": good + good,
        "two-pages-import.csv": "".join(lines[at:]) * 2,
        # The program prints a CSV table of its own before ncu's page: not taken for the header.
        "program-table-first.csv": "step,loss\n1,0.5\n2,0.25\n" + good,
        # A baselined kernel launched twice, the second launch running 40% more instructions:
        # split into two work classes, the regressed one turned "new" and the check passed
        # (issue 23). SYNTHETIC: launch row 5 (zoo_registers) duplicated, its count scaled.
        "work-split.csv": good + _split_launch(good, 5, 1.4),
        # A sidecar whose scope (issue 25: which launches ncu profiled) or ncu command is not
        # what perfgate capture writes: refused naming the sidecar, never guessed at. The
        # sidecars are in the listing too, each refused as a capture of its own.
        "scope-not-a-string.csv": good,
        "scope-not-a-string.csv.meta.json": '{"perfgate_capture": 1, "scope": 3}\n',
        "command-not-a-list.csv": good,
        "command-not-a-list.csv.meta.json": '{"perfgate_capture": 1, "command": "ncu -c 3"}\n',
        # Sidecars of the two capture phases (issue 24) that perfgate capture never writes: an
        # unknown phase, a diagnosis capture checked without its gate capture, a gate
        # capture's diagnosis link that leaves its folder, a cache control that is no string.
        "phase-unknown.csv": good,
        "phase-unknown.csv.meta.json": '{"perfgate_capture": 1, "phase": "fast"}\n',
        "diagnosis-alone.csv": good,
        "diagnosis-alone.csv.meta.json": '{"perfgate_capture": 1, "phase": "diagnosis"}\n',
        "diagnosis-link-escapes.csv": good,
        "diagnosis-link-escapes.csv.meta.json": (
            '{"perfgate_capture": 1, "phase": "gate", "diagnosis": "../../etc/passwd"}\n'
        ),
        "cache-control-not-a-string.csv": good,
        "cache-control-not-a-string.csv.meta.json": '{"perfgate_capture": 1, "cache_control": 0}\n',
        # One line of 17 MiB inside 17 KB of gzip: refused after 16 MiB are read, never held.
        "long-line.csv.gz": gzip.compress(
            "".join(lines[: at + 2]).encode() + b"a" * (17 * 1024 * 1024) + b"\n", 9, mtime=0
        ),
        # Issue 23: an instruction count of 5e-324 (a subnormal): ratios over it were
        # infinite and every kernel "improved"; refused naming the column.
        "tiny-instruction-count.csv": _edit_row(
            good, 0, lambda f: _set(f, _column(good, "smsp__inst_executed.sum"), "5e-324")
        ),
        # Issue 23: a kernel name and a metric name that are not UTF-8 (one Latin-1 byte).
        "latin1-kernel-name.csv": _latin1_before(good, "zoo_coalescing", after_header=True),
        "latin1-metric-name.csv": _latin1_before(
            good, "smsp__inst_executed.sum", after_header=False
        ),
        # Issue 23: a capture whose sidecar is 100,000 nested brackets (json recursed until
        # RecursionError, an internal error); the sidecar is also checked as a capture.
        "deep-sidecar.csv": good,
        "deep-sidecar.csv.meta.json": "[" * 100_000 + "]" * 100_000,
    }
    return out


def _latin1_before(text: str, word: str, after_header: bool) -> bytes:
    """The capture as bytes with a Latin-1 'é' before the first `word` (of a launch row, or
    of the header)."""
    lines, at = _rows(text)
    start = len("".join(lines[: at + 2])) if after_header else len("".join(lines[:at]))
    i = text.index(word, start)
    return text[:i].encode() + b"\xe9" + text[i:].encode()


def _column(text: str, part: str) -> int:
    import csv

    lines, at = _rows(text)
    return next(i for i, name in enumerate(next(csv.reader([lines[at]]))) if part in name)


def _set(fields: list[str], i: int, value: str) -> list[str]:
    return [*fields[:i], value, *fields[i + 1 :]]


def _edit_row(text: str, n: int, edit: Callable[[list[str]], list[str]]) -> str:
    """The capture with launch row `n` (0-based) changed by `edit`."""
    import csv

    lines, at = _rows(text)
    i = at + 2 + n
    fields = edit(next(csv.reader([lines[i]])))
    lines[i] = ",".join(f'"{f}"' for f in fields) + "\n"
    return "".join(lines)


def _split_launch(text: str, n: int, factor: float) -> str:
    """Launch row `n` once more, as the next launch ID, with its instructions x `factor`."""
    import csv

    lines, at = _rows(text)
    fields = next(csv.reader([lines[at + 2 + n]]))
    launch_ids = [int(next(csv.reader([line]))[0]) for line in lines[at + 2 :]]
    work = _column(text, "smsp__inst_executed.sum")
    value = float(fields[work].replace(",", "")) * factor
    fields = _set(_set(fields, 0, str(max(launch_ids) + 1)), work, f"{round(value):,}")
    return ",".join(f'"{f}"' for f in fields) + "\n"


def _ambiguous(good: str) -> str:
    """Only integer columns below a million, grouped with '.': '524.288' could be 524.288 or
    524288, and no value settles which (a gated column: store sectors)."""
    import csv
    import io

    lines, at = _rows(good)
    rows = list(csv.reader(io.StringIO("".join(lines[at:]))))
    header = rows[0]
    wanted = ("launch__registers_per_thread", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    keep = [i for i, name in enumerate(header) if "__" not in name or name in wanted]
    body = ""
    for r in rows:
        cells = [r[i].replace(",", ".") if header[i] in wanted else r[i] for i in keep]
        body += ",".join(f'"{c}"' for c in cells) + "\n"
    return "".join(lines[:at]) + body


def baselines() -> dict[str, str | bytes]:
    minimal = (
        "format_version: 1\nkernels:\n- id: zoo_coalescing\n  match: {function: zoo_coalescing}\n"
        "  metrics:\n    registers_per_thread: {value: 16, min: 16, max: 16}\n"
    )
    bomb = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    bomb += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(9))}]" for i in range(1, 12)]
    return {
        "empty.yaml": "",
        "comments-only.yaml": "# nothing but a comment\n",
        "syntax-error.yaml": "format_version: 1\nkernels: [\n  - id: a\n",
        "tab-indented.yaml": "format_version: 1\nkernels:\n\t- id: a\n",
        "wrong-types.yaml": minimal.replace(
            "{value: 16, min: 16, max: 16}", "{value: [16], min: sixteen}"
        ),
        "python-object-tag.yaml": "format_version: 1\nkernels: !!python/object/apply:os.system ['touch /tmp/perfgate-corpus-pwned']\n",
        "python-name-tag.yaml": "format_version: 1\nkernels: !!python/name:os.system\n",
        "alias-bomb.yaml": "\n".join(bomb) + "\n",
        "duplicate-key.yaml": minimal.replace(
            "    registers_per_thread: {value: 16, min: 16, max: 16}\n",
            "    registers_per_thread: {value: 16, min: 16, max: 16}\n    registers_per_thread: {value: 99}\n",
        ),
        "unknown-metric.yaml": minimal.replace("registers_per_thread:", "registers_per_thred:"),
        "format-version-99.yaml": minimal.replace("format_version: 1", "format_version: 99"),
        "bad-regex.yaml": minimal.replace(
            "{function: zoo_coalescing}", "{regex: 'zoo_(coalescing'}"
        ),
        "binary.yaml": b"\x00\x01\x02\x03format_version",
        "a-list.yaml": "- format_version: 1\n",
        "json-form.json": '{"format_version": 1, "kernels": [{"id": "zoo_coalescing", "match": {"function": "zoo_coalescing"}, "metrics": {"registers_per_thread": {"value": 16}}}]}\n',
        "no-kernels-key.yaml": "format_version: 1\n",
        # libyaml recursed in C on this one until the process died (segmentation fault).
        "deeply-nested.yaml": "format_version: 1\nkernels: " + "[" * 100_000 + "]" * 100_000 + "\n",
        # Block collections opened on one line nest as deeply (segmentation fault too).
        "block-nesting-one-line.yaml": "format_version: 2\nkernels:\n" + "- " * 30_000 + "x\n",
        "complex-keys-one-line.yaml": "? " * 30_000 + "x\n",
        # Tags whose value is not of their type ended in an internal error (exit 3).
        "bad-int-tag.yaml": minimal.replace("format_version: 1", "format_version: !!int abc"),
        "bad-timestamp-tag.yaml": minimal + "provenance: {recorded_at: !!timestamp 2020-13-45}\n",
        "bad-bool-tag.yaml": minimal + "identity: {nvtx: !!bool maybe}\n",
        "huge-integer.yaml": minimal.replace("{value: 16,", "{value: 1" + "0" * 5000 + ","),
        "binary-tag.yaml": minimal + "provenance: {note: !!binary aGVsbG8=}\n",
        "set-tag.yaml": minimal + "provenance: !!set {a, b}\n",
        # A key that is not a string passed validation and broke the check later.
        "float-key-in-shares.yaml": minimal
        + "    dominant_stall: {value: wait, shares: {1.5: 3, wait: 97}}\n",
        "bool-key.yaml": minimal.replace("format_version: 1", "format_version: 1\non: 1"),
        # Exponential backtracking against a kernel name: refused before any name is tried.
        "catastrophic-regex.yaml": minimal.replace(
            "{function: zoo_coalescing}", "{regex: '(a+)+$'}"
        ),
        # Found by tests/fuzz.py (seeds yaml:459 and regex:15): the timestamp constructor
        # failed with an AttributeError on a null, and optional items under `+` backtrack.
        "timestamp-tag-on-null.yaml": minimal + "provenance: {recorded_at: !!timestamp ~}\n",
        "optional-repeats-regex.yaml": minimal.replace(
            "{function: zoo_coalescing}", "{regex: '([ab]?(a)?)+x'}"
        ),
        # tests/fuzz.py regex:101271: bounded repeats multiplying unbounded ones.
        "multiplied-repeats-regex.yaml": minimal.replace(
            "{function: zoo_coalescing}", "{regex: '(([ab]+?a\\d+?|[ab]*?){1,3}){1,3}b!'}"
        ),
        # `.nan` passes every comparison: a threshold of it could never regress.
        "nan-threshold.yaml": minimal.replace("max: 16}", "max: 16, threshold: {relative: .nan}}"),
        "inf-thresholds-map.yaml": minimal + "thresholds: {duration: {relative: .Inf}}\n",
        # Found by tests/hostile/test_properties.py: the fast check vouched for a negative duration.
        "negative-configuration-duration.yaml": minimal.replace(
            "  metrics:", "  configurations: [{runs: 1, duration: -1.0}]\n  metrics:"
        ),
        # A fingerprint's scope that is not text (issue 25).
        "scope-not-text.yaml": minimal + "fingerprint: {gpu: NVIDIA H100, scope: [1]}\n",
        # A fingerprint's cache control that is not text (issue 24).
        "cache-control-not-text.yaml": minimal
        + "fingerprint: {gpu: NVIDIA H100, cache_control: {all: 1}}\n",
        # A fingerprint's time basis that is neither gate nor full (issue 24: durations compare
        # only between captures of one basis).
        "time-basis-unknown.yaml": minimal + "fingerprint: {gpu: NVIDIA H100, time_basis: fast}\n",
        "backreference-regex.yaml": minimal.replace(
            "{function: zoo_coalescing}", "{regex: '(zoo)_\\1'}"
        ),
        # YAML reads NEL and U+2028 as line breaks, perfgate's line-based edits did not:
        # validate passed and accept/update ended in an internal error (exit 3). Issue 23.
        "nel-line-breaks.yaml": minimal.replace("\n", "\x85"),
        "u2028-line-breaks.yaml": minimal.replace("\n  metrics", "\u2028  metrics"),
        # An id holding a newline, a workflow command, a bidi override and a zero-width
        # space reached the console raw. Issue 23.
        "hostile-id.yaml": minimal.replace(
            "- id: zoo_coalescing", '- id: "zoo_coalescing\\u202e\\n::error::pwned\\u200b"'
        ).replace("value: 16, min: 16, max: 16", "value: 8, min: 8, max: 8"),
    }


def main() -> None:
    for folder, files in ((CAPTURES, captures()), (BASELINES, baselines())):
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            path = folder / name
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_bytes(content.encode("utf-8"))


if __name__ == "__main__":
    main()
