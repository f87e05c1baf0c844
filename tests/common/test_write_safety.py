"""Issue 31, item 5: what perfgate writes never destroys what it did not make. No write or
removal follows a symbolic link; a failed append leaves the file as it was; a step file that is
an input is never appended to; sidecar text obeys the rules of every other kept text; a
baseline edit keeps the file's line ends and its comments above top-level keys. And the small
ones: a kernel name that is not UTF-8 in `--json`, `www.` in a PR comment's paths, "updateed",
and `record --diagnosis-capture` given a diagnosis capture.

Everything runs on the real file system and through the command line where the user would
meet it; a full disk is a real EFBIG from the kernel (RLIMIT_FSIZE), the error an append meets
on ENOSPC too. Baselines are the repository's (baselines/h100), captures real (tests/data)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.baseline.load import load_baseline
from perfgate.common import fileio
from perfgate.common.errors import UsageError
from perfgate.reports.markup import code
from tests.conftest import DATA, ROOT
from tests.hostile.test_crashes import _FAKE_READER
from tests.ncu import test_capture
from tests.ncu.test_capture import _fake
from tests.twophase_data import diagnosis_capture, gate_capture

ZOO = ROOT / "baselines" / "h100" / "zoo.yaml"
GOOD = tuple(DATA / f"zoo-good-short-run{i}.csv" for i in (1, 2, 3))
BAD = tuple(DATA / f"zoo-bad-short-run{i}.csv" for i in (1, 2, 3))


def perfgate(
    *args: str, env: dict[str, str] | None = None, fsize: int | None = None
) -> subprocess.CompletedProcess[str]:
    """perfgate in a subprocess; `fsize`: no file it writes may grow past that many bytes."""

    def limits() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [sys.executable, "-m", "perfgate", *args], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, **(env or {})}, timeout=300, preexec_fn=limits,
    )  # fmt: skip


def one_error(proc: subprocess.CompletedProcess[str], path: object, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr + proc.stdout[-500:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perfgate: error: {path}: "), proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def precious(tmp_path: Path) -> tuple[Path, bytes]:
    """A file perfgate was never asked to touch (a baseline elsewhere), and its bytes."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    target = folder / "h100.yaml"
    shutil.copyfile(ZOO, target)
    return target, target.read_bytes()


# ------------------------------------------------------------------------- symbolic links

# The baseline a stand-in ncu's captures (H200, tests/data/h200/capture) are checked with.
zoo_baseline = test_capture.zoo_baseline


CAPTURE_FILES = [
    "", ".meta.json", ".log", ".ncu-rep",
    ".diagnosis.csv", ".diagnosis.csv.meta.json", ".diagnosis.csv.log",
]  # fmt: skip


@pytest.mark.parametrize("suffix", CAPTURE_FILES, ids=lambda s: s or "capture")
def test_capture_never_removes_or_writes_through_a_link_named_like_its_files(
    tmp_path: Path, zoo_baseline: Path, suffix: str
) -> None:
    target, before = precious(tmp_path)
    out = tmp_path / "out" / "capture.csv"
    out.parent.mkdir()
    link = Path(str(out).removesuffix(".csv") + suffix if suffix.startswith(".diag") else f"{out}{suffix}")  # fmt: skip
    link.symlink_to(target)
    env = _fake("zoo-capture-1.csv.log", "zoo-capture-1.csv")
    proc = perfgate("capture", "-b", str(zoo_baseline), "-o", str(out), "--ncu",
                    str(ROOT / "tests" / "fake_ncu.py"), "--keep-report", "--", "true", env=env)  # fmt: skip
    one_error(proc, link, "is a symbolic link", str(target))
    assert target.read_bytes() == before
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [p.name for p in out.parent.iterdir()] == [link.name]  # nothing ran, nothing left


def test_a_capture_keeps_its_report_by_a_rename_and_writes_every_file(
    tmp_path: Path, zoo_baseline: Path
) -> None:
    out = tmp_path / "capture.csv"
    env = _fake("zoo-capture-1.csv.log", "zoo-capture-1.csv")
    proc = perfgate("capture", "-b", str(zoo_baseline), "-o", str(out), "--ncu",
                    str(ROOT / "tests" / "fake_ncu.py"), "--keep-report", "--", "true", env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert Path(f"{out}.ncu-rep").read_bytes() == b"NVIDIA-report"  # what ncu exported
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"capture.csv{s}" for s in ("", ".log", ".meta.json", ".ncu-rep")]


@pytest.mark.parametrize("option", ["--json", "--junit", "--markdown", "--pr-comment"])
def test_a_report_onto_a_link_is_refused_and_its_target_kept(tmp_path: Path, option: str) -> None:
    target, before = precious(tmp_path)
    link = tmp_path / "report"
    link.symlink_to(target)
    proc = perfgate("check", "-b", str(ZOO), "-c", str(GOOD[0]), option, str(link))
    one_error(proc, link, f"{option} is a symbolic link", "never writes through a link")
    assert target.read_bytes() == before and link.is_symlink()


@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
def test_a_github_step_file_that_is_a_link_is_refused(tmp_path: Path, variable: str) -> None:
    target, before = precious(tmp_path)
    link = tmp_path / "step-file"
    link.symlink_to(target)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "", "GITHUB_OUTPUT": "", variable: str(link)}  # fmt: skip
    proc = perfgate("check", "-b", str(ZOO), "-c", str(GOOD[0]), env=env)
    assert f"${variable} is a symbolic link" in proc.stderr and proc.returncode == 2, proc.stderr
    assert target.read_bytes() == before and link.is_symlink()


def test_record_and_edits_never_write_through_a_link(tmp_path: Path) -> None:
    target, before = precious(tmp_path)
    link = tmp_path / "b.yaml"
    link.symlink_to(target)
    captures = [a for c in GOOD for a in ("-c", str(c))]
    proc = perfgate("baseline", "record", *captures, "-o", str(link), "--overwrite")
    one_error(proc, link, "is a symbolic link")
    # An edit in place of a linked baseline, and one written to a link with -o.
    bad = [a for c in BAD for a in ("-c", str(c))]
    proc = perfgate("baseline", "accept", "-b", str(link), *bad, "--reason", "r")
    one_error(proc, link, "is a symbolic link")
    copy = tmp_path / "copy.yaml"
    shutil.copyfile(ZOO, copy)
    proc = perfgate("baseline", "accept", "-b", str(copy), *bad, "--reason", "r", "-o", str(link))
    one_error(proc, link, "is a symbolic link")
    assert target.read_bytes() == before and link.is_symlink()
    assert copy.read_bytes() == ZOO.read_bytes()


def test_fileio_neither_writes_nor_removes_through_a_link(tmp_path: Path) -> None:
    target, before = precious(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(UsageError, match="is a symbolic link") as exc:
        fileio.write_text_atomic(link, "new")
    assert exc.value.path == str(link)
    with pytest.raises(UsageError, match="is a symbolic link"):
        fileio.append_regular(link, "more")
    source = tmp_path / "made"
    source.write_text("a report")
    with pytest.raises(UsageError, match="is a symbolic link"):
        fileio.move_into_place(source, link)
    fileio.remove_stale(link)  # an earlier run's report? Not one perfgate made: left
    assert link.is_symlink() and target.read_bytes() == before and source.exists()
    # A regular file is perfgate's to remove; a link into a linked folder writes in the folder.
    fileio.remove_stale(source)
    assert not source.exists()
    (tmp_path / "dir-link").symlink_to(target.parent)
    fileio.write_text_atomic(tmp_path / "dir-link" / "new.json", "{}")
    assert (target.parent / "new.json").read_text() == "{}"


# ----------------------------------------------------------------------- failed appends


def test_a_failed_append_leaves_the_step_summary_as_it_was(tmp_path: Path) -> None:
    """The disk fills during the step summary's append (EFBIG past RLIMIT_FSIZE, a real
    failure of write(2)): the earlier steps' summary stays byte for byte, and the reports say
    why the check failed."""
    summary = tmp_path / "step-summary.md"
    earlier = "## an earlier step\n\n" + "its table row\n" * 40_000
    summary.write_text(earlier)
    report, outputs = tmp_path / "r.json", tmp_path / "outputs"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)}  # fmt: skip
    proc = perfgate("check", "-b", str(ZOO), "-c", str(BAD[0]), "--json", str(report),
                    env=env, fsize=len(earlier) + 100)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"{summary}: cannot append to the step summary: File too large" in proc.stderr
    assert summary.read_text() == earlier
    assert json.loads(report.read_text())["status"] == "error"
    assert "verdict=error" in outputs.read_text()


def test_append_regular_cuts_a_failed_append_back(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("kept\n" * 10)
    script = (
        "import resource, sys\n"
        "from perfgate.common.fileio import append_regular\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (80, 80))\n"
        "try:\n"
        "    append_regular(sys.argv[1], 'x' * 1000)\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)  # fmt: skip
    assert proc.stdout.strip() == "27", proc.stderr  # EFBIG, after 30 bytes were appended
    assert target.read_text() == "kept\n" * 10


@pytest.mark.parametrize("variable", ["GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"])
@pytest.mark.parametrize("which", ["capture", "sidecar"])
def test_a_step_file_that_is_an_input_is_never_appended_to(
    tmp_path: Path, variable: str, which: str
) -> None:
    """Another output refused first (--json onto the baseline): the step file naming the
    capture, or its sidecar, was never looked at, and got the problem report appended."""
    baseline = tmp_path / "b.yaml"
    shutil.copyfile(ZOO, baseline)
    capture = tmp_path / "cap.csv"
    shutil.copyfile(GOOD[0], capture)
    sidecar = tmp_path / "cap.csv.meta.json"
    sidecar.write_text('{"perfgate_capture": 1}')
    named = capture if which == "capture" else sidecar
    before = named.read_bytes()
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "", "GITHUB_OUTPUT": "", variable: str(named)}  # fmt: skip
    proc = perfgate("check", "-b", str(baseline), "-c", str(capture), "--json", str(baseline), env=env)  # fmt: skip
    assert proc.returncode == 2 and "--json is also an input" in proc.stderr, proc.stderr
    assert named.read_bytes() == before
    assert baseline.read_bytes() == ZOO.read_bytes()


def test_a_step_file_naming_a_baseline_of_a_folder_is_never_appended_to(tmp_path: Path) -> None:
    """The same, for a baseline found in a subfolder of a --baseline folder."""
    folder = tmp_path / "baselines"
    (folder / "h100").mkdir(parents=True)
    baseline = folder / "h100" / "zoo.yaml"
    shutil.copyfile(ZOO, baseline)
    capture = tmp_path / "cap.csv"
    shutil.copyfile(GOOD[0], capture)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(baseline), "GITHUB_OUTPUT": ""}
    proc = perfgate("check", "-b", str(folder), "-c", str(capture), "--json", str(capture), env=env)  # fmt: skip
    assert proc.returncode == 2 and "--json is also an input" in proc.stderr, proc.stderr
    assert baseline.read_bytes() == ZOO.read_bytes()
    assert capture.read_bytes() == GOOD[0].read_bytes()


# ------------------------------------------------------------------------- sidecar text


def _captures_with_sidecar(tmp_path: Path, runs: tuple[Path, ...], meta: str) -> list[str]:
    args = []
    for run in runs:
        copy = tmp_path / run.name
        shutil.copyfile(run, copy)
        Path(f"{copy}.meta.json").write_text(meta, "utf-8")
        args += ["-c", str(copy)]
    return args


SIDECAR_TEXT = [
    ("driver", '"\\ud800"', "not UTF-8 text (a lone surrogate \\ud800 at character 1)"),
    ("gpu", '"NVIDIA H100\\u0085"', "a NEL (U+0085) character at character 12"),
    ("ncu_version", '"2025.3\\u2028"', "a U+2028 character"),
    ("scope", '"--nvtx-include a\\u2029b"', "a U+2029 character"),
    ("command", '["ncu", "--nvtx-include", "\\udcff/", "./app"]', "not UTF-8 text"),
]


@pytest.mark.parametrize(("field", "value", "problem"), SIDECAR_TEXT, ids=[t[0] for t in SIDECAR_TEXT])  # fmt: skip
def test_sidecar_text_no_baseline_can_keep_is_refused_before_anything_is_written(
    tmp_path: Path, field: str, value: str, problem: str
) -> None:
    meta = f'{{"perfgate_capture": 1, "{field}": {value}}}'
    good = _captures_with_sidecar(tmp_path, GOOD, meta)
    sidecar = f"{good[1]}.meta.json"
    baseline = tmp_path / "b.yaml"
    shutil.copyfile(ZOO, baseline)
    proc = perfgate("baseline", "record", *good, "-o", str(baseline), "--overwrite")
    one_error(proc, sidecar, f"{field}: {problem}")
    for command in (("update",), ("update", "--reason", "r"), ("accept", "--reason", "r")):
        proc = perfgate("baseline", *command, "-b", str(baseline), *good)
        one_error(proc, sidecar, f"{field}: {problem}")
    assert baseline.read_bytes() == ZOO.read_bytes()
    load_baseline(baseline)


def test_plain_sidecar_text_is_kept(tmp_path: Path) -> None:
    meta = (
        '{"perfgate_capture": 1, "driver": "580.95 \\u00e9t\\u00e9", "ncu_version": "2025.3.1.0"}'
    )
    good = _captures_with_sidecar(tmp_path, GOOD, meta)
    out = tmp_path / "b.yaml"
    proc = perfgate("baseline", "record", *good, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert load_baseline(out).fingerprint.driver == "580.95 été"


# ------------------------------------------------------------ line ends and comments kept


def _accept(baseline: Path, *more: str) -> None:
    bad = [a for c in BAD for a in ("-c", str(c))]
    proc = perfgate("baseline", "accept", "-b", str(baseline), *bad, "--reason", "on purpose", *more)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("accepted 8 kernels"), proc.stdout


@pytest.mark.parametrize("name", ["zoo.yaml", "torch.yaml"])
def test_accept_keeps_a_crlf_baseline_crlf(tmp_path: Path, name: str) -> None:
    baseline = tmp_path / "b.yaml"
    baseline.write_bytes((ROOT / "baselines" / "h100" / name).read_bytes().replace(b"\n", b"\r\n"))
    if name == "zoo.yaml":
        _accept(baseline)
    else:
        runs = [a for i in (1, 2, 3) for a in ("-c", str(DATA / f"torch-short-run{i}.csv"))]
        proc = perfgate("baseline", "update", "-b", str(baseline), *runs, "--reason", "r")
        assert proc.returncode == 0 and "updated" in proc.stdout, proc.stderr
    data = baseline.read_bytes()
    assert data != (ROOT / "baselines" / "h100" / name).read_bytes().replace(b"\n", b"\r\n")
    assert data.count(b"\r\n") == data.count(b"\n") == data.count(b"\r")
    assert load_baseline(baseline).provenance["updated_at"]


def test_accept_keeps_an_lf_baseline_lf(tmp_path: Path) -> None:
    baseline = tmp_path / "b.yaml"
    shutil.copyfile(ZOO, baseline)
    _accept(baseline)
    assert b"\r" not in baseline.read_bytes()


TOP_KEYS = ("format_version", "provenance", "fingerprint", "program", "kernels")


def test_comments_above_every_top_level_key_survive_an_edit(tmp_path: Path) -> None:
    """Above `kernels:`, ruamel hangs a comment on the program block, which an edit rewrites
    (as `update` rewrites the fingerprint from the captures' sidecars)."""
    text = ZOO.read_text()
    notes = {key: f"# note above {key}: kept (PERF-{i})" for i, key in enumerate(TOP_KEYS)}
    for key, note in notes.items():
        text = text.replace(f"\n{key}:", f"\n\n{note}\n{key}:", 1)
    baseline = tmp_path / "b.yaml"
    baseline.write_text(text)
    meta = '{"perfgate_capture": 1, "ncu_version": "2025.3.1.0", "driver": "580.95"}'
    bad = _captures_with_sidecar(tmp_path, BAD, meta)
    proc = perfgate("baseline", "update", "-b", str(baseline), *bad, "--reason", "on purpose")
    assert proc.returncode == 0, proc.stderr
    edited = baseline.read_text()
    loaded = load_baseline(baseline)
    assert loaded.fingerprint.driver == "580.95"  # the fingerprint was rewritten
    assert loaded.program is not None
    assert "gpu_time:\n    value: 1541408\n" not in edited  # so was the program's time
    for key, note in notes.items():
        assert edited.count(note) == 1, key
        assert f"{note}\n{key}:" in edited, key


# --------------------------------------------------------------------------- small ones


def test_a_kernel_name_that_is_not_utf8_is_escaped_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVIDIA's ncu_report hands a name's byte that is not UTF-8 over as a lone surrogate (SWIG's
    surrogateescape); the stand-in module does the same."""
    fake = tmp_path / "fake"
    fake.mkdir()
    named = 'return b"zoo_coalescing\\xff(const float *, float *, int)".decode("utf-8", "surrogateescape")'  # fmt: skip
    source = _FAKE_READER.replace('return "zoo_coalescing(const float *, float *, int)"', named)
    assert source != _FAKE_READER
    (fake / "ncu_report.py").write_text(source)
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"NVR\x00")
    env = {"PYTHONPATH": os.pathsep.join([str(fake), str(ROOT)])}
    out = tmp_path / "r.json"
    proc = perfgate("check", "-b", str(ZOO), "-c", str(report), "--json", str(out), env=env)
    # The baseline's kernels are missing: a verdict (1, or 2 while a gate is unjudged), not 3.
    assert proc.returncode in (1, 2) and "internal error" not in proc.stderr, proc.stderr
    document = json.loads(out.read_bytes().decode("utf-8"))
    kernels = [k["kernel"] for r in document["results"] for k in r["kernels"]]
    assert "zoo_coalescing\\udcff" in kernels
    stdout = subprocess.run(
        [sys.executable, "-m", "perfgate", "check", "-b", str(ZOO), "-c", str(report), "--format", "json"],
        capture_output=True, cwd=ROOT, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip
    assert stdout.returncode == proc.returncode
    assert json.loads(stdout.stdout.decode("utf-8")) == document


@pytest.mark.parametrize(("folder", "live"), [("www.example.com", "www."), ("@octocat", "@octocat")])  # fmt: skip
def test_a_capture_path_never_links_nor_mentions_in_the_pr_comment(
    tmp_path: Path, folder: str, live: str
) -> None:
    """GitHub links `www.` (and mentions `@name`) between `<code>` tags too; a capture path
    is long, so it took code()'s long-text path, which missed both."""
    where = tmp_path / folder / "x"
    where.mkdir(parents=True)
    capture = where / "zoo-good-short-run1.csv"
    shutil.copyfile(GOOD[0], capture)
    comment = tmp_path / "comment.md"
    markdown = tmp_path / "report.md"
    proc = perfgate("check", "-b", str(ZOO), "-c", str(capture), "--pr-comment", str(comment),
                    "--markdown", str(markdown))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for text in (comment.read_text(), markdown.read_text()):
        assert "zoo-good-short-run1.csv" in text
        assert live not in text  # what GitHub's autolinker and mentions look for


def test_long_and_short_code_are_equally_inert() -> None:
    for text in ("www.x.io", "/a/b/c/d/e/f/g/h/i/j/k/l/m/www.example.com/cap.csv"):
        assert "www\u2060." in code(text) and "www." not in code(text)
    assert "\u2060//" in code("x" * 40 + "http://example.com/")
    assert "@\u2060user" in code("x" * 40 + "@user")


def test_update_says_updated(tmp_path: Path) -> None:
    baseline = tmp_path / "b.yaml"
    shutil.copyfile(ZOO, baseline)
    bad = [a for c in BAD for a in ("-c", str(c))]
    proc = perfgate("baseline", "update", "-b", str(baseline), *bad, "--reason", "on purpose")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("updated 10 kernels"), proc.stdout
    assert "updateed" not in proc.stdout + proc.stderr


def test_record_names_a_diagnosis_capture_given_as_diagnosis_capture(tmp_path: Path) -> None:
    base = ROOT / "tests" / "data" / "field" / "h100" / "h100-a"
    gates = [
        gate_capture(base / f"hf-decoder-run{i}.csv.gz", tmp_path / f"g{i}.csv") for i in (1, 2, 3)
    ]
    diagnosis = diagnosis_capture(
        base / "hf-decoder-run1.csv.gz", tmp_path / "g1.diagnosis.csv", ["vectorized_gather"]
    )
    out = tmp_path / "b.yaml"
    proc = perfgate("baseline", "record", *(f"-c{g}" for g in gates),
                    "--diagnosis-capture", str(diagnosis), "-o", str(out))  # fmt: skip
    one_error(proc, diagnosis, "a --diagnosis-capture is a diagnosis capture", "--phases full")
    assert "pass the gate capture too" not in proc.stderr and not out.exists()
