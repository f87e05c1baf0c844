"""Which machine start a capture ran on (perfgate.ncu.machine.machine_start): the digest of the
kernel's boot id and the GPUs' UUIDs, written into the capture's sidecar by `perfgate capture`
(perfgate.ncu.runner) and read back as CaptureMeta.machine_start and Capture.starts, which a
baseline recorded from several starts pools over (perfgate.lifecycle.pooled)."""

from __future__ import annotations

import json
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest

import perfgate.ncu.runner as runner
from perfgate.common.errors import CaptureError
from perfgate.ingest import read_captures
from perfgate.ingest.meta import read_meta
from perfgate.ncu.command import CaptureOptions
from perfgate.ncu.machine import machine_start, visible_uuids
from tests.conftest import ROOT, cli_ok

GATE = ROOT / "tests" / "data" / "field" / "gate"
TEXTS = ROOT / "tests" / "data" / "h200" / "capture"
REAL = ROOT / "tests" / "data" / "h200" / "real"
FAKE_NCU = str(ROOT / "tests" / "fake_ncu.py")
UUIDS = ("GPU-4b1f2c3d-0000-1111-2222-333344445555", "GPU-9a8b7c6d-aaaa-bbbb-cccc-ddddeeeeffff")
BOOT = "8d0c7f8e-5a53-4d4e-9c1b-2f6a1e3b7c90"


# ------------------------------------------------------------------- 9. machine_start


def fake_smi(folder: Path, uuids: tuple[str, ...], rc: int = 0) -> None:
    """An `nvidia-smi` in `folder` that answers the UUID query (and only it) with `uuids`, one
    a line, and exits `rc`. Shell builtins only: PATH holds nothing else."""
    folder.mkdir(exist_ok=True)
    lines = " ".join(f"'{u}'" for u in uuids)
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        '[ "$1" = "--query-gpu=uuid" ] && [ "$2" = "--format=csv,noheader" ] || exit 7\n'
        + (f"printf '%s\\n' {lines}\n" if uuids else "")
        + f"exit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def boot_id(tmp_path: Path) -> Path:
    path = tmp_path / "boot_id"
    path.write_text(BOOT + "\n")  # as /proc/sys/kernel/random/boot_id reads
    return path


@pytest.fixture
def smi_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    fake_smi(folder, UUIDS)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return folder


def test_machine_start_is_16_hex_digits_the_same_for_the_same_start(
    boot_id: Path, smi_on_path: Path
) -> None:
    first = machine_start(boot_id)
    assert first is not None and re.fullmatch(r"[0-9a-f]{16}", first)
    assert machine_start(boot_id) == first
    # The boot id as read, with or without its line break, is the same start.
    bare = boot_id.with_name("bare")
    bare.write_text(BOOT)
    assert machine_start(bare) == first


def test_another_boot_or_another_card_is_another_start(
    tmp_path: Path, boot_id: Path, smi_on_path: Path
) -> None:
    first = machine_start(boot_id)
    other = tmp_path / "other_boot_id"
    other.write_text("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n")
    rebooted = machine_start(other)
    assert rebooted is not None and rebooted != first
    fake_smi(smi_on_path, UUIDS[:1])  # one card of the two
    one_card = machine_start(boot_id)
    assert one_card is not None and one_card not in (first, rebooted)
    fake_smi(smi_on_path, (*reversed(UUIDS), "GPU-0000"))
    assert machine_start(boot_id) not in (first, rebooted, one_card)


def test_no_nvidia_smi_or_no_boot_id_is_unknown(
    tmp_path: Path, boot_id: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert machine_start(boot_id) is None  # no nvidia-smi on PATH
    fake_smi(empty, UUIDS)
    assert machine_start(boot_id) is not None
    assert machine_start(tmp_path / "no-such-boot-id") is None
    blank = tmp_path / "blank"
    blank.write_text("\n")
    assert machine_start(blank) is None


def test_an_nvidia_smi_that_fails_or_lists_no_gpu_is_unknown(
    tmp_path: Path, boot_id: Path, smi_on_path: Path
) -> None:
    fake_smi(smi_on_path, UUIDS, rc=9)
    assert machine_start(boot_id) is None
    fake_smi(smi_on_path, ())
    assert machine_start(boot_id) is None


def test_each_card_of_one_boot_is_its_own_start(
    boot_id: Path, smi_on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    both = machine_start(boot_id)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    first = machine_start(boot_id)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    second = machine_start(boot_id)
    assert len({both, first, second}) == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", UUIDS[1][:12])  # a UUID's prefix names a card
    assert machine_start(boot_id) == second
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert machine_start(boot_id) == both
    for unknown in ("", "7", "GPU-ffff"):  # no card nvidia-smi lists: every card
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", unknown)
        assert machine_start(boot_id) == both


def test_visible_uuids_keeps_the_cards_named_once_each() -> None:
    assert visible_uuids(UUIDS, None) == list(UUIDS)
    assert visible_uuids(UUIDS, " 1 ") == [UUIDS[1]]
    assert visible_uuids(UUIDS, "1,0,1") == [UUIDS[1], UUIDS[0]]
    assert visible_uuids(UUIDS, "GPU-4b1f") == [UUIDS[0]]
    assert visible_uuids(UUIDS, "GPU-,") == list(UUIDS)  # a prefix of both names both
    assert visible_uuids(UUIDS, "2") == list(UUIDS)


# ------------------------------------------------------------------------------ 10. meta


def _sidecar_doc() -> dict[str, object]:
    """A real sidecar of `perfgate capture --phases gate` (h200-f), as written then."""
    doc = json.loads((GATE / "h200-f" / "gemms-run1.csv.gz.meta.json").read_text())
    assert isinstance(doc, dict) and "machine_start" not in doc
    return doc


def _copy(tmp_path: Path, name: str, start: object = None, with_start: bool = True) -> Path:
    """A real capture copied with its real sidecar, plus `machine_start` (derived from the real
    sidecar, which predates the field)."""
    dest = tmp_path / name
    shutil.copy(GATE / "h200-f" / "gemms-run1.csv.gz", dest)
    doc = _sidecar_doc()
    if with_start:
        doc["machine_start"] = start
    Path(f"{dest}.meta.json").write_text(json.dumps(doc, indent=1))
    return dest


@pytest.mark.parametrize("value", [5, 1.5, True, ["a"], {"a": 1}])
def test_a_machine_start_not_a_string_is_refused(tmp_path: Path, value: object) -> None:
    cap = _copy(tmp_path, "cap.csv.gz", value)
    with pytest.raises(CaptureError, match="machine_start must be a string or null"):
        read_meta(str(cap))
    with pytest.raises(CaptureError, match="machine_start"):
        read_captures([cap])


def test_a_machine_start_is_read_from_the_sidecar(tmp_path: Path) -> None:
    assert read_meta(str(_copy(tmp_path, "a.csv.gz", "0123456789abcdef"))).machine_start == (
        "0123456789abcdef"
    )
    assert read_meta(str(_copy(tmp_path, "b.csv.gz", None))).machine_start is None
    assert read_meta(str(_copy(tmp_path, "c.csv.gz", with_start=False))).machine_start is None
    # The real sidecars of the corpus, written before the field: unknown.
    assert read_meta(str(GATE / "h200-f" / "gemms-run1.csv.gz")).machine_start is None


def test_read_captures_names_the_start_of_each_file_whose_sidecar_says(tmp_path: Path) -> None:
    a = _copy(tmp_path, "a.csv.gz", "aaaaaaaaaaaaaaaa")
    b = _copy(tmp_path, "b.csv.gz", with_start=False)
    c = _copy(tmp_path, "c.csv.gz", "cccccccccccccccc")
    d = _copy(tmp_path, "d.csv.gz", None)
    capture = read_captures([a, b, c, d])
    assert capture.paths == (str(a), str(b), str(c), str(d))
    assert capture.starts == ((str(a), "aaaaaaaaaaaaaaaa"), (str(c), "cccccccccccccccc"))
    assert read_captures([b, d]).starts == ()
    assert read_captures([c]).starts == ((str(c), "cccccccccccccccc"),)


# --------------------------------------------------------------------------- 11. runner


@pytest.fixture(scope="module")
def zoo_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default baseline recorded from three real H200 captures of the zoo (as
    tests/ncu/test_capture.py's)."""
    out = tmp_path_factory.mktemp("b") / "zoo.yaml"
    runs = [a for i in (1, 2, 3) for a in ("-c", str(REAL / f"start2-zoo-good-run{i}.csv"))]
    cli_ok("baseline", "record", *runs, "-o", str(out))
    return out


def _capture(tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """`perfgate capture` in process with the stand-in ncu (tests/fake_ncu.py) replaying a real
    H200 capture; the sidecar it wrote."""
    monkeypatch.setenv("FAKE_NCU_VERSION", str(TEXTS / "ncu-version.txt"))
    monkeypatch.setenv("FAKE_NCU_LOG", str(TEXTS / "zoo-capture-1.csv.log"))
    monkeypatch.setenv("FAKE_NCU_CSV", str(TEXTS / "zoo-capture-1.csv"))
    out = tmp_path / "cap.csv"
    options = CaptureOptions(
        (str(baseline),), (sys.executable, "-c", "print('program output')"), str(out),
        ncu=FAKE_NCU,
    )  # fmt: skip
    runner.run_capture(options, gpu_query=lambda: ("NVIDIA H200", "9.0", "580.95.05"))
    assert out.exists()
    doc = json.loads(Path(f"{out}.meta.json").read_text())
    assert isinstance(doc, dict)
    return doc


def test_the_capture_writes_its_machine_start_into_the_sidecar(
    tmp_path: Path, zoo_baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "machine_start", lambda: "feedc0ffee123456")
    meta = _capture(tmp_path, zoo_baseline, monkeypatch)
    assert meta["machine_start"] == "feedc0ffee123456"
    assert read_meta(str(tmp_path / "cap.csv")).machine_start == "feedc0ffee123456"
    assert read_captures([tmp_path / "cap.csv"]).starts == (
        (str(tmp_path / "cap.csv"), "feedc0ffee123456"),
    )


def test_the_capture_writes_null_where_the_start_is_unknown(
    tmp_path: Path, zoo_baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "machine_start", lambda: None)
    meta = _capture(tmp_path, zoo_baseline, monkeypatch)
    assert "machine_start" in meta and meta["machine_start"] is None
    assert read_captures([tmp_path / "cap.csv"]).starts == ()


def test_the_capture_writes_what_this_machine_says(
    tmp_path: Path, zoo_baseline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = _capture(tmp_path, zoo_baseline, monkeypatch)
    assert "machine_start" in meta and meta["machine_start"] == machine_start()
