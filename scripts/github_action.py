#!/usr/bin/env python3
"""The GitHub Action's gate step (action.yml): capture when asked, then `perfgate check`.

It runs with the action's own virtual environment's Python and reads every input from the
environment (action.yml passes them through `env:`, never into a script's text). Nothing is
run through a shell: capture paths and globs are expanded here, and a program to capture is
split into arguments with shlex. perfgate itself writes the annotations, the step summary and
the step outputs ($GITHUB_OUTPUT); this script adds `captures` (the files gated) and exits
with perfgate's exit code.

Inputs (environment): PERFGATE (the perfgate executable), PERFGATE_BASELINE, PERFGATE_CAPTURES,
PERFGATE_PROGRAM, PERFGATE_CAPTURE_OUTPUT, PERFGATE_CAPTURE_ARGS, PERFGATE_JUNIT,
PERFGATE_MARKDOWN, PERFGATE_JSON, PERFGATE_PR_COMMENT, PERFGATE_FAIL_ON, PERFGATE_ARGS.
"""

from __future__ import annotations

import glob
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence

USAGE_ERROR = 2
_GLOB = set("*?[")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _quoted(arg: str) -> str:
    """One argument as bash's `printf '%q'` shows it: shlex's quoting when every character is
    printable, else $'...' with each newline, control, bidi or zero-width character escaped,
    so that a file name holding a newline and `::error` starts no line of the log."""
    if arg.isprintable():
        return shlex.quote(arg)
    out = []
    for ch in arg:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
    return "$'" + "".join(out) + "'"


def shown(argv: Sequence[str]) -> str:
    """A command line for the log, one line whatever its arguments hold."""
    return " ".join(_quoted(arg) for arg in argv)


def _error(message: str) -> int:
    # A workflow command and a plain line: the first is the annotation, the second the log.
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::error title=perfgate action::{escaped}", flush=True)
    line = "".join(ch if ch.isprintable() else _quoted(ch)[2:-1] for ch in message)
    print(f"perfgate action: error: {line}", file=sys.stderr, flush=True)
    return USAGE_ERROR


def expand(patterns: Sequence[str]) -> tuple[list[str], list[str]]:
    """Paths and glob patterns, one per line, to files; the patterns that matched nothing."""
    files: list[str] = []
    unmatched: list[str] = []
    for pattern in patterns:
        if _GLOB & set(pattern):
            # glob.glob takes absolute patterns too, which Path.glob does not.
            found = sorted(glob.glob(pattern, recursive=True))  # noqa: PTH207
            if not found:
                unmatched.append(pattern)
            files.extend(p for p in found if p not in files)
        elif pattern not in files:
            files.append(pattern)  # a plain path: perfgate says if it is not there
    return files, unmatched


def _report_args(env: Mapping[str, str]) -> list[str]:
    args: list[str] = []
    for option, name in (
        ("--junit", "PERFGATE_JUNIT"),
        ("--markdown", "PERFGATE_MARKDOWN"),
        ("--json", "PERFGATE_JSON"),
        ("--pr-comment", "PERFGATE_PR_COMMENT"),
    ):
        path = env.get(name, "").strip()
        if path:
            args += [option, path]
    return args


def commands(env: Mapping[str, str]) -> tuple[list[list[str]], list[str]] | str:
    """The perfgate command lines to run in order (a capture, then the check) and the
    captures gated; or what is wrong with the inputs."""
    perfgate = env.get("PERFGATE") or "perfgate"
    baselines = _lines(env.get("PERFGATE_BASELINE", ""))
    if not baselines:
        return "the baseline input is empty: name a baseline file (one per GPU) or directory"
    captures, unmatched = expand(_lines(env.get("PERFGATE_CAPTURES", "")))
    if unmatched:
        return f"no capture matches {', '.join(unmatched)}"
    runs: list[list[str]] = []
    program = env.get("PERFGATE_PROGRAM", "").strip()
    if program:
        try:
            argv = shlex.split(program)
            extra = shlex.split(env.get("PERFGATE_CAPTURE_ARGS", ""))
        except ValueError as exc:
            return f"cannot split the program or capture-args input into arguments: {exc}"
        output = env.get("PERFGATE_CAPTURE_OUTPUT", "").strip() or "perfgate-report/capture.csv"
        runs.append(
            [perfgate, "capture", "--baseline", baselines[0], "-o", output, *extra, "--", *argv]
        )
        captures.append(output)
    if not captures:
        return "nothing to gate: give captures, or a program to capture"
    try:
        extra_check = shlex.split(env.get("PERFGATE_ARGS", ""))
    except ValueError as exc:
        return f"cannot split the args input into arguments: {exc}"
    check = [perfgate, "check"]
    for baseline in baselines:
        check += ["--baseline", baseline]
    for capture in captures:
        check += ["--capture", capture]
    fail_on = env.get("PERFGATE_FAIL_ON", "").strip() or "regression,missing"
    check += [*_report_args(env), "--fail-on", fail_on, "--github", *extra_check]
    runs.append(check)
    return runs, captures


def _output(env: Mapping[str, str], name: str, value: str) -> None:
    path = env.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:  # noqa: PTH123 (GitHub's own file)
            fh.write(f"{name}={value.replace(chr(10), ' ').replace(chr(13), ' ')}\n")


def main(env: Mapping[str, str] = os.environ) -> int:
    planned = commands(env)
    if isinstance(planned, str):
        return _error(planned)
    runs, captures = planned
    _output(env, "captures", " ".join(captures))
    code = 0
    for argv in runs:
        capture = argv[1] == "capture"
        if capture:  # the program's own output, folded away in the log
            print("::group::perfgate capture", flush=True)
        print("$ " + shown(["perfgate", *argv[1:]]), flush=True)
        code = subprocess.run(argv, check=False).returncode
        if capture:
            print("::endgroup::", flush=True)
            if code != 0:
                _error(f"perfgate capture exited {code}: see its output above")
                return code
    return code


if __name__ == "__main__":
    sys.exit(main())
