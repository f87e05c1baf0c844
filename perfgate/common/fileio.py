"""Writing files atomically and safely: a crash, a full disk or a kill never leaves half a
report or a temporary file behind, and a report never replaces what perfgate read.

A write goes to an unnamed file in the target's folder (Linux `O_TMPFILE`), which is given a
name only once its content is complete and synced, then renamed over the target: a process
killed while writing (SIGKILL included) leaves nothing, because the kernel frees an unnamed
file with its last descriptor. Only the two system calls that name it and rename it could be
cut apart; where `O_TMPFILE` is missing (other systems, some file systems), a named temporary
file is used and removed on any exception, SIGINT and SIGTERM.

Targets: a symbolic link is refused, never written through nor removed (its target may be
any file: a baseline, a capture); a FIFO, device, socket or folder is refused, as is a
target that is one of the inputs. Only regular files are removed, never a link's target.
An append that fails (a full disk) leaves the file as it was: it is cut back to its length
before the append.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import stat
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import FrameType

from perfgate.common.errors import UsageError


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _link(path: str | Path) -> str | None:
    """What `path` points to when it is a symbolic link itself (its last part), else None."""
    try:
        return str(Path(path).readlink())
    except OSError:  # not a link, or missing
        return None


def refuse_link(path: str | Path, label: str = "") -> None:
    """Refuse to write `path` when it is a symbolic link: whatever it points to (a baseline,
    a capture, a file outside the repository) is not perfgate's to replace, nor is the link.
    `label` names the option or variable that gave the path ("--json")."""
    pointee = _link(path)
    if pointee is not None:
        named = f"{label} " if label else ""
        raise UsageError(
            f"{named}is a symbolic link (to {pointee}); perfgate never writes through a link "
            "nor replaces one: remove the link or write to another file",
            path,
        )


def _destination(path: str | Path) -> tuple[Path, os.stat_result | None]:
    """The file a write to `path` replaces (in its folder, with the folder's links resolved)
    and its status (None when it does not exist yet); a symbolic link, or a target that is
    not a regular file, is refused."""
    refuse_link(path)
    given = Path(path)
    target = Path(os.path.realpath(given.parent)) / given.name
    try:
        st = target.lstat()
    except FileNotFoundError:
        return target, None
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path) from exc
    if stat.S_ISLNK(st.st_mode):  # became one since refuse_link looked
        refuse_link(target)
    kind = _kind(st.st_mode)
    if kind:
        raise UsageError(
            f"is {kind}; perfgate writes only regular files (and never replaces anything else)",
            path,
        )
    return target, st


def _identity(path: str | Path) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


Output = tuple[str, str | None]  # (the option or variable that names it, the path)


def _text_name(path: str | Path | None) -> None:
    """Refuse a file name that is not UTF-8 text (Python holds its bytes as surrogates): every
    report names its inputs, and JSON, JUnit XML and Markdown cannot hold such a name."""
    if path is None:
        return
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            "the file name is not UTF-8 text; rename the file (perfgate's reports name it)",
            os.fsencode(path).decode("utf-8", "backslashreplace"),
        ) from exc


def check_outputs(
    outputs: Iterable[str | Output | None],
    inputs: Iterable[str | Path],
    *,
    regular_only: Iterable[str | None] | None = None,
) -> None:
    """Refuse, before anything is read or written, an output that is one of the inputs (the
    same file by device and inode, so hard links and symbolic links too, or by resolved path
    when it does not exist), two outputs that are one file, an output that is a symbolic
    link and one that is not a regular file. An output is a path or (option, path): the
    option ("--json", "$GITHUB_OUTPUT") is named in the message. Outputs also in
    `regular_only` (default: all) are refused when not regular files; others (GitHub's step
    files, skipped by the caller) are not. Raises UsageError naming the output, the option
    and the input: the one rule for every command that writes (check, record, baseline
    accept/update, capture). A file name that is not UTF-8 text, input or output, is refused
    too."""
    inputs = list(inputs)
    outputs = list(outputs)
    for path in [*inputs, *(o[1] if isinstance(o, tuple) else o for o in outputs)]:
        _text_name(path)
    files: dict[object, tuple[str, str]] = {}
    for path in inputs:
        ident = _identity(path)
        if ident:
            files[ident] = ("an input", str(path))
        files[os.path.realpath(path)] = ("an input", str(path))
    strict = None if regular_only is None else {p for p in regular_only if p}
    for item in outputs:
        label, out = item if isinstance(item, tuple) else ("", item)
        if not out:
            continue
        resolved = os.path.realpath(out)
        ident = _identity(out)
        for key in (ident, resolved):
            if key is not None and key in files:
                what, name = files[key]
                also = "" if name == out else f" ({name})"
                named = f"{label} " if label else ""
                raise UsageError(
                    f"{named}is also {what}{also}: perfgate would replace it; "
                    "write to another file",
                    out,
                )
        refuse_link(out, label)  # GitHub's step files too: appended to, never through a link
        if strict is None or out in strict:
            _destination(out)
        files[resolved] = ("another output", out)
        if ident:
            files[ident] = ("another output", out)


def regular_or_absent(path: str) -> str | None:
    """Why `path` cannot be appended to without blocking or harm (a FIFO, a device, a
    folder: in words), None when it is a regular file or does not exist."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return _kind(st.st_mode)


def append_regular(path: str | Path, text: str) -> bool:
    """Append `text` to `path` (created when missing) if it is a regular file; False, having
    written nothing, when it is not (a FIFO is opened without blocking and left alone). A
    symbolic link is refused (UsageError), never appended through. A write that fails part
    way (a full disk) is undone: the file is cut back to its length before, so what earlier
    steps wrote stays as it was, and the OSError is raised."""
    flags = (
        os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW
        | getattr(os, "O_CLOEXEC", 0)
    )  # fmt: skip
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO with no reader; a folder
            return False
        if exc.errno == errno.ELOOP:
            refuse_link(path)
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        os.set_blocking(fd, True)
        view = memoryview(text.encode("utf-8"))
        try:
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            # O_APPEND wrote after st_size (perfgate is the file's one writer while it runs:
            # GitHub collects a step's files once the step is over).
            with contextlib.suppress(OSError):
                os.ftruncate(fd, st.st_size)
            raise
    finally:
        os.close(fd)
    return True


def _mode(existing: os.stat_result | None) -> int:
    # A new file gets the mode a plain open() would; an existing one keeps its own, so a
    # baseline in a repository stays readable by everyone.
    if existing is not None:
        return existing.st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")


def _write_unnamed(target: Path, data: bytes, mode: int) -> bool:
    """Write through an O_TMPFILE file; False where the system or file system lacks it."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not Path("/proc/self/fd").is_dir():
        return False
    try:
        fd = os.open(target.parent, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError:
        return False  # EOPNOTSUPP, EISDIR on old kernels, ...: use a named file
    try:
        os.fchmod(fd, mode)  # the umask applied to os.open's mode
        _write_all(fd, data)
        tmp = _temp_name(target)
        try:
            os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
        except OSError:
            return False
        try:
            tmp.replace(target)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
    finally:
        os.close(fd)
    return True


class _Terminated(BaseException):
    """SIGTERM during a write: unwind so the temporary file is removed, then exit."""


@contextlib.contextmanager
def _cleanup_on_sigterm() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _write_named(target: Path, data: bytes, mode: int) -> None:
    tmp = _temp_name(target)
    try:
        with _cleanup_on_sigterm():
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
            try:
                os.fchmod(fd, mode)
                _write_all(fd, data)
            finally:
                os.close(fd)
            tmp.replace(target)
    except _Terminated:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise SystemExit(128 + signal.SIGTERM) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8, newlines as given) in one step: readers see the old
    file or the new one, never a part, and nothing else is left in the folder."""
    target, existing = _destination(path)
    data = text.encode("utf-8")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode(existing)
        if not _write_unnamed(target, data, mode):
            _write_named(target, data, mode)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path) from exc


def move_into_place(source: str | Path, path: str | Path) -> None:
    """Move `source`, a file perfgate made in `path`'s folder, to `path` in one rename (no
    copy of a report of hundreds of MB); `path` is refused as write_text_atomic refuses it."""
    target, _ = _destination(path)
    try:
        Path(source).replace(target)
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path) from exc


def remove_stale(path: str | Path) -> None:
    """Remove a report left by an earlier run, so it cannot be read as this run's result: a
    regular file only. A symbolic link is left alone, and so is what it points to (perfgate
    did not make either); a missing file is fine."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(Path(path).lstat().st_mode):
            Path(path).unlink()  # unlink never follows a link, should one appear meanwhile


def remove_own_files(
    folder: str | Path, name: re.Pattern[str], keep: Iterable[str], mark: str
) -> list[str]:
    """Remove, from `folder`, the files an earlier run of perfgate wrote that this run did not
    write again: those whose name matches `name` (in full), that are not in `keep`, that are
    regular files themselves (a symbolic link, and what it points to, is left alone) and whose
    first 4 KiB hold `mark`, the line perfgate writes into each such file; never another file
    that happens to be named like them. Each removal is one unlink; what cannot be read or
    removed is left. Returns the names removed."""
    kept, removed = set(keep), list[str]()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if entry.name in kept or not name.fullmatch(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(entry.path, flags | getattr(os, "O_CLOEXEC", 0))
            try:
                head = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
            finally:
                os.close(fd)
            if mark.encode("utf-8") in head:
                Path(entry.path).unlink()
                removed.append(entry.name)
        except OSError:
            continue
    return removed


# How long an edit waits for another perfgate run editing the same file.
LOCK_WAIT_S = 60.0


def lock_path(path: str | Path) -> Path:
    """The sibling lock file of a file perfgate edits in place: `.NAME.lock` beside it."""
    p = Path(path)
    return p.with_name(f".{p.name}.lock")


@contextlib.contextmanager
def locked(path: str | Path, wait_s: float | None = None) -> Iterator[None]:
    """Held while perfgate edits `path`: an exclusive `fcntl.flock` on its sibling lock file
    (lock_path), so two `baseline accept`/`update` runs on one file take turns. The lock file
    is left in place (removing it would let a third run lock a file of the same name that the
    second does not hold). Where it cannot be created (a read-only folder, with the edit
    written elsewhere), nothing is locked: the edit's compare-and-swap still refuses a file
    that changed under it."""
    import fcntl
    import time

    wait = LOCK_WAIT_S if wait_s is None else wait_s
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise UsageError(
                        f"another perfgate run has been editing it for {wait:g} s "
                        f"(it holds {lock_path(path)}); run again when it is done",
                        path,
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
