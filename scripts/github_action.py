#!/usr/bin/env python3
"""The GitHub Action's gate step (action.yml): capture when asked, then `perfgate check`.

It runs with the action's own virtual environment's Python and reads every input from the
environment (action.yml passes them through `env:`, never into a script's text). Nothing is
run through a shell: capture paths and globs are expanded here, and a program to capture is
split into arguments with shlex. perfgate itself writes the annotations, the step summary and
the step outputs ($GITHUB_OUTPUT); this script adds `captures` (the files gated) and exits
with perfgate's exit code.

The baseline input names one baseline file per GPU (or folders of them, searched with their
subfolders). `perfgate capture` gets every one and covers those recorded on the runner's GPU;
`perfgate check` gets the files of the GPUs the captures ran on (a file named to check is
always checked, so the other GPUs' files would fail as all missing), folders as they are.

When something fails before `perfgate check` has said so (inputs that cannot be planned, a
capture that fails, a check that stops without writing its outputs), this script does what the
check would have: an `::error` annotation carrying the cause (the failing command's own error
lines; one on its file, line and column for each problem at a place in a baseline, as
`perfgate check --github` annotates them), `verdict=error` and the exit code as outputs, and the
reports asked for (JUnit, markdown, JSON, pull-request comment, step summary) saying what went
wrong. Each problem is annotated once: the action registers no problem matcher.

With a history (PERFGATE_HISTORY: an SQLite file or a postgresql:// URL), the check draws the
markdown report's trends from it (`--history`, once the file exists) and its JSON result is
kept there after (`perfgate history import`, with GitHub's run, commit, branch, pull request and
job as the run's context). A history that cannot be written is a warning: the gate's verdict
stands. A URL never shows in the log.

Inputs (environment): PERFGATE (the perfgate executable), PERFGATE_BASELINE, PERFGATE_CAPTURES,
PERFGATE_PROGRAM, PERFGATE_CAPTURE_OUTPUT, PERFGATE_PROGRAM_RUNS, PERFGATE_CAPTURE_ARGS,
PERFGATE_JUNIT,
PERFGATE_MARKDOWN, PERFGATE_JSON, PERFGATE_PR_COMMENT, PERFGATE_FAIL_ON, PERFGATE_WAIVE,
PERFGATE_ARGS, PERFGATE_STEP_SUMMARY ("false": no step summary), PERFGATE_HISTORY.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

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


INTERNAL_ERROR = 3
_CAUSE_LINES = 5  # of a failing command's stderr, into its annotation


# A problem at a place in a file, `FILE:LINE:COL: message` (perfgate's error lines), after the
# "perfgate capture exited 2: " that fail() puts in front of the first.
_LOCATED = re.compile(
    r"^(?:perfgate \w+ exited -?\d+: )?(?P<file>[^:]+?):(?P<line>[1-9]\d*):(?P<col>[1-9]\d*): "
    r"(?P<message>.+)$"
)


def _escaped(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _in_repository(path: str, env: Mapping[str, str]) -> str:
    """`path` relative to the repository root, as GitHub places an annotation; as given when
    it lies outside it."""
    root = os.path.realpath(env.get("GITHUB_WORKSPACE") or os.getcwd())  # noqa: PTH109
    full = os.path.realpath(path)
    if os.path.commonpath([root, full]) != root:
        return path
    return os.path.relpath(full, root).replace(os.sep, "/")


def _error(
    message: str, title: str = "perfgate action", env: Mapping[str, str] = os.environ
) -> int:
    # Workflow commands and a plain line: the first are the annotations, the second the log.
    # A problem at a place in a file is annotated there, once; the rest in one annotation.
    rest: list[str] = []
    for line in message.splitlines():
        m = _LOCATED.match(line)
        if m is None:
            rest.append(line)
            continue
        file = _escaped(_in_repository(m.group("file"), env)).replace(":", "%3A")
        where = f"file={file.replace(',', '%2C')},line={m.group('line')},col={m.group('col')}"
        print(f"::error {where},title={title}::{_escaped(m.group('message'))}", flush=True)
    if any(line.strip() for line in rest) or not message.strip():
        print(f"::error title={title}::{_escaped(chr(10).join(rest))}", flush=True)
    # One line: a line of a command's output quoted in `message` never starts a line here,
    # and a control, bidi or zero-width character in it is shown escaped.
    plain = " | ".join(message.splitlines())
    line = "".join(ch if ch.isprintable() else _quoted(ch)[2:-1] for ch in plain)
    print(f"perfgate action: error: {line}", file=sys.stderr, flush=True)
    return USAGE_ERROR


def step_summary_on(env: Mapping[str, str]) -> bool:
    return env.get("PERFGATE_STEP_SUMMARY", "").strip().lower() not in ("false", "no", "off", "0")


def cause(stderr: Sequence[str]) -> str:
    """Why a command failed, from its stderr: perfgate's own error lines when it wrote any
    (the program's output comes before them), else the first lines."""
    errors = [
        line[len("perfgate: error: ") :] for line in stderr if line.startswith("perfgate: error: ")
    ]
    lines = errors or [line for line in stderr if line.strip()]
    return "\n".join(line.rstrip() for line in lines[:_CAUSE_LINES])


def fail(env: Mapping[str, str], message: str, code: int, title: str = "perfgate action") -> int:
    """Say a failure as `perfgate check` says unusable input: the annotation, the reports
    asked for, and the step outputs with verdict=error. Returns the exit code (2, or 3 for a
    bug in perfgate)."""
    code = INTERNAL_ERROR if code == INTERNAL_ERROR else USAGE_ERROR
    _error(message, title, env)
    try:
        _write_problem(env, message, code)
    except Exception as exc:  # perfgate missing or broken: the outputs at least
        print(f"perfgate action: the reports could not be written: {exc}", file=sys.stderr)
        _output(env, "verdict", "error")
        _output(env, "exit-code", str(code))
    return code


def _write_problem(env: Mapping[str, str], message: str, code: int) -> None:
    from perfgate.common.errors import ExitCode, PerfgateError
    from perfgate.common.fileio import check_outputs
    from perfgate.usecases.outputs import ReportOutputs, write_reports, write_step_outputs
    from perfgate.verdicts.model import Report

    # Never a report over one of the inputs (perfgate check refuses those too).
    inputs = [*_lines(env.get("PERFGATE_BASELINE", "")), *_lines(env.get("PERFGATE_CAPTURES", ""))]
    paths: dict[str, str | None] = {}
    for name in ("junit", "markdown", "json", "pr_comment"):
        path = env.get(f"PERFGATE_{name.upper()}", "").strip() or None
        try:
            check_outputs([path], inputs)
        except PerfgateError:
            path = None
        paths[name] = path
    summary = env.get("GITHUB_STEP_SUMMARY") if step_summary_on(env) else None
    outputs = ReportOutputs(
        **paths,
        step_summary=summary or None,
        github_output=env.get("GITHUB_OUTPUT") or None,
        repository_root=env.get("GITHUB_WORKSPACE") or str(Path.cwd()),
    )
    problem = Report(problems=(message,))
    try:
        write_reports(problem, outputs)
    except PerfgateError as exc:  # a report that cannot be written: the outputs still are
        print(f"perfgate action: {'; '.join(exc.lines())}", file=sys.stderr)
    write_step_outputs(problem, outputs, ExitCode(code))


def _run(argv: Sequence[str], env: Mapping[str, str]) -> tuple[int, list[str]]:
    """Run a command, its stderr passed through to the log as it comes and kept."""
    kept: list[str] = []
    with subprocess.Popen(
        argv, stderr=subprocess.PIPE, text=True, errors="replace", env=dict(env)
    ) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            if len(kept) < 1000 or line.startswith("perfgate: error: "):
                kept.append(line.rstrip("\n"))
    return proc.returncode, kept


def _wrote_verdict(env: Mapping[str, str], before: int) -> bool:
    path = env.get("GITHUB_OUTPUT")
    if not path or not os.path.exists(path):  # noqa: PTH110
        return False
    with open(path, encoding="utf-8", errors="replace") as fh:  # noqa: PTH123
        fh.seek(before)
        return any(line.startswith("verdict=") for line in fh)


def _size(path: str | None) -> int:
    try:
        return os.path.getsize(path) if path else 0  # noqa: PTH202
    except OSError:
        return 0


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


_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
HISTORY_RESULT = "perfgate-history-result.json"  # under RUNNER_TEMP when no json input


def _history(env: Mapping[str, str]) -> str:
    return env.get("PERFGATE_HISTORY", "").strip()


def _result_json(env: Mapping[str, str]) -> str:
    """The JSON result the history keeps: the json input's, else one in the runner's temp."""
    given = env.get("PERFGATE_JSON", "").strip()
    if given:
        return given
    return os.path.join(env.get("RUNNER_TEMP") or ".", HISTORY_RESULT)  # noqa: PTH118


def _history_args(env: Mapping[str, str]) -> list[str]:
    """What the check gets for a history: its JSON result, and trends drawn from the history
    once there is one (a file a cache restored, or a URL) and a markdown report to draw in."""
    history = _history(env)
    if not history:
        return []
    args = [] if env.get("PERFGATE_JSON", "").strip() else ["--json", _result_json(env)]
    there = _URL.match(history) or os.path.isfile(history)  # noqa: PTH113
    if there and env.get("PERFGATE_MARKDOWN", "").strip():
        args += ["--history", history]
    return args


def history_import(env: Mapping[str, str]) -> list[str] | None:
    """`perfgate history import` of the check's JSON result with GitHub's context; None
    without a history."""
    history = _history(env)
    if not history:
        return None
    argv = [env.get("PERFGATE") or "perfgate", "history", "import", "--db", history]
    run, job = env.get("GITHUB_RUN_ID", ""), env.get("GITHUB_JOB", "")
    # The id `perfgate history add` gives a GitHub run: a re-run attempt is another run.
    context = {
        "--run-id": f"github:{run}:{env.get('GITHUB_RUN_ATTEMPT') or '1'}:{job}" if run else "",
        "--commit": env.get("GITHUB_SHA", ""),
        "--branch": env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME", ""),
        "--ci-job": job,
    }
    pull = re.match(r"refs/pull/(\d+)/", env.get("GITHUB_REF", ""))
    context["--pull-request"] = pull.group(1) if pull else ""
    for option, value in context.items():
        if value:
            argv += [option, value]
    return [*argv, _result_json(env)]


def hidden(argv: Sequence[str]) -> list[str]:
    """The command line as the log shows it: a history URL (it may hold a password) hidden."""
    return ["<history URL>" if _URL.match(arg) else arg for arg in argv]


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


# Each capture a separate ncu process, so each run adds its capture time to the job. Four runs
# were measured to narrow 10-20 us kernels (docs/noise.md "Four runs per check"); a fifth was
# not measured and is allowed, more are not.
MAX_PROGRAM_RUNS = 5
# Four by default: a check of four runs or more judges a 10-20 us kernel as measured (no
# common factor) under the four-run floor, H100 3% and H200 4.25% (perfgate/metrics/
# timefloors.py FOUR_RUN_FLOOR_POINTS). On sealed cards of another host, evaluated once
# (benchmarks/pooled.py --four-runs --held-back), four runs caught +5% on 10-20 us kernels on
# 61/64 H100 and 45/80 H200 against baselines pooled from three tuning starts, two runs 17/64
# and 30/80; from 20 us four runs caught 101/104 and 88/88; no false alarm. Two runs halve the
# capture time and still catch +5% from 20 us. action.yml and docs/action.md say the same.
DEFAULT_PROGRAM_RUNS = "4"


def program_runs(text: str) -> int | str:
    """The program-runs input as a count, or what is wrong with it."""
    value = text.strip() or DEFAULT_PROGRAM_RUNS
    if not value.isdigit() or not 1 <= int(value) <= MAX_PROGRAM_RUNS:
        return f"program-runs must be a whole number from 1 to {MAX_PROGRAM_RUNS}, not {value!r}"
    return int(value)


def run_output(output: str, run: int) -> str:
    """Where run `run` of the program is captured: `output` itself for the first, then
    `<stem>-run<N><suffix>` beside it (capture.csv, capture-run2.csv, ...)."""
    if run == 1:
        return output
    path = Path(output)
    return str(path.with_name(f"{path.stem}-run{run}{path.suffix}"))


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
        times = program_runs(env.get("PERFGATE_PROGRAM_RUNS", ""))
        if isinstance(times, str):
            return times
        # Every baseline given: perfgate capture covers those recorded on the runner's GPU.
        given = [a for b in baselines for a in ("--baseline", b)]
        for run in range(1, times + 1):
            path = run_output(output, run)
            runs.append([perfgate, "capture", *given, "-o", path, *extra, "--", *argv])
            captures.append(path)
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
    waive = [w.strip() for w in env.get("PERFGATE_WAIVE", "").split(",") if w.strip()]
    check += [*_report_args(env), *_history_args(env), "--fail-on", fail_on, "--github"]
    check += [a for w in waive for a in ("--waive", w)]
    check += extra_check
    runs.append(check)
    return runs, captures


def baselines_for(baselines: Sequence[str], captures: Sequence[str]) -> tuple[list[str], str]:
    """Of baseline files given one per GPU, those of the GPUs the captures ran on (and any
    that names no GPU), folders kept as they are; with a line for the log saying which were
    left out. All of them, and "", when fewer than two files are given, when none is for
    these GPUs (the check then says so, listing them) or when the files cannot be read
    (the check says why)."""
    files = [b for b in baselines if not os.path.isdir(b)]  # noqa: PTH112
    if len(files) < 2:
        return list(baselines), ""
    try:
        from perfgate.baseline.fingerprint import Fingerprint, differences
        from perfgate.baseline.load import load_baseline
        from perfgate.ingest import MetricSelection, read_captures

        gpus = {(la.device, la.cc) for la in read_captures(captures, MetricSelection(())).launches}
        recorded = {b: load_baseline(b).gpu for b in files}
    except Exception:  # perfgate check reads them again, and says what is wrong
        return list(baselines), ""

    def ran_on(fp: Fingerprint, gpu: tuple[str | None, str | None]) -> bool:
        return gpu[0] is not None and not differences(fp, Fingerprint(gpu=gpu[0], cc=gpu[1]))[0]

    mine = [b for b in files if not recorded[b].known or any(ran_on(recorded[b], g) for g in gpus)]
    if not any(recorded[b].known for b in mine):
        return list(baselines), ""
    left = [b for b in files if b not in mine]
    shown_gpus = ", ".join(sorted({str(g[0]) for g in gpus if g[0]}))
    line = (
        f"perfgate action: the captures ran on {shown_gpus}: not checked against "
        + "; ".join(f"{b} ({recorded[b].describe()})" for b in left)
        if left
        else ""
    )
    return [b for b in baselines if b not in left], line


def for_the_gpu(check: list[str], captures: Sequence[str]) -> list[str]:
    """The check's command line with only the baselines of the captures' GPUs."""
    given = [check[i + 1] for i, a in enumerate(check[:-1]) if a == "--baseline"]
    chosen, line = baselines_for(given, captures)
    if not line:
        return check
    print(line, flush=True)
    rest: list[str] = []
    i = 0
    while i < len(check):
        if check[i] == "--baseline":
            i += 2
            continue
        rest.append(check[i])
        i += 1
    return [*rest[:2], *(a for b in chosen for a in ("--baseline", b)), *rest[2:]]


def _output(env: Mapping[str, str], name: str, value: str) -> None:
    path = env.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:  # noqa: PTH123 (GitHub's own file)
            fh.write(f"{name}={value.replace(chr(10), ' ').replace(chr(13), ' ')}\n")


def main(env: Mapping[str, str] = os.environ) -> int:
    planned = commands(env)
    if isinstance(planned, str):
        return fail(env, planned, USAGE_ERROR)
    runs, captures = planned
    _output(env, "captures", " ".join(captures))
    child = dict(env)
    if not step_summary_on(env):
        child.pop("GITHUB_STEP_SUMMARY", None)  # perfgate writes none without it
    code = 0
    for argv in runs:
        capture = argv[1] == "capture"
        if not capture:
            argv = for_the_gpu(argv, captures)
        if capture:  # the program's own output, folded away in the log
            print("::group::perfgate capture", flush=True)
        print("$ " + shown(["perfgate", *hidden(argv[1:])]), flush=True)
        before = _size(env.get("GITHUB_OUTPUT"))
        try:
            code, stderr = _run(argv, child)
        except OSError as exc:  # perfgate itself cannot be started
            if capture:
                print("::endgroup::", flush=True)
            return fail(env, f"cannot run {argv[0]}: {exc.strerror or exc}", USAGE_ERROR)
        if capture:
            print("::endgroup::", flush=True)
            if code != 0:
                why = cause(stderr) or "it wrote no error line (its log is above)"
                return fail(env, f"perfgate capture exited {code}: {why}", code,
                            "perfgate capture failed")  # fmt: skip
        elif code not in (0, 1) and not _wrote_verdict(env, before):
            # The check stopped before it could say so itself (a bug, a crash).
            why = cause(stderr) or "it wrote no error line"
            return fail(env, f"perfgate check exited {code}: {why}", code)
    if code in (0, 1):
        keep_history(env, child)
    return code


def keep_history(env: Mapping[str, str], child: Mapping[str, str]) -> None:
    """Keep the check's result in the history, when there is one. A failure is a warning: the
    gate's verdict is what the step reports."""
    argv = history_import(env)
    if argv is None:
        return
    print("$ " + shown(["perfgate", *hidden(argv[1:])]), flush=True)
    try:
        code, stderr = _run(argv, child)
    except OSError as exc:
        code, stderr = -1, [f"cannot run {argv[0]}: {exc.strerror or exc}"]
    if code != 0:
        why = cause(stderr) or f"perfgate history import exited {code}"
        title = "perfgate history not kept"
        print(f"::warning title={title}::{_escaped(why)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
