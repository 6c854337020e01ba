"""Atomic file writes and careful reads (no PyMC here; :func:`pymc_partitions.save` and
:func:`pymc_partitions.load` use them).

A file is written to a hidden temporary beside its target, ``.<name>.<host>-<pid>.<random>.tmp``,
and renamed over the target once complete. A writer that dies before the rename (SIGKILL, a power
cut) leaves its temporary behind; the next write of the same target removes it when it is
certainly stale: its writer ran on this machine and is no longer running, or it has not been
modified for :data:`STALE_SECONDS` (a temporary of another machine, or of an older version of the
package, whose name has no writer). A live writer's temporary is never touched: a concurrent save
of the same target writes its own and the last rename wins. SIGTERM during a write (in the main
thread, where handlers can be installed) removes the temporary before the process ends as it would
have.

A finished file gets a SHA-256 of its bytes appended, after the HDF5 data, as one text line
(:func:`append_checksum`). The HDF5 library never looks past the end of its data, so h5py,
xarray and ArviZ read the file as before; a program that rewrites the file through HDF5 drops
the line (HDF5 truncates a file to its data when it closes it), and the file is then read
unchecked, as any file of another writer. :func:`verify_checksum` checks it before HDF5 parses
anything: a damaged byte in HDF5's metadata can otherwise make the library loop or return other
numbers.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import socket
import stat
import threading
import time
import uuid

__all__ = ["STALE_SECONDS", "temporary_name", "remove_stale_temporaries", "removed_on_sigterm", "refuse_non_regular",
           "refuse_trailing_separator", "append_checksum", "verify_checksum"]

#: A temporary not modified for this long is stale even when its writer cannot be checked.
STALE_SECONDS = 24 * 3600.0


def _host() -> str:
    """This machine, as 8 hex digits (host names may hold characters file names should not)."""
    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def temporary_name(target: str) -> str:
    """A fresh temporary path beside ``target`` naming this machine and process."""
    directory, base = os.path.split(target)
    return os.path.join(directory, f".{base}.{_host()}-{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")


def _pattern(base: str) -> re.Pattern:
    # group 1, 2: host and pid of the writer (absent in the names older versions wrote)
    return re.compile(rf"\.{re.escape(base)}\.(?:([0-9a-f]{{8}})-([0-9]+)\.)?[0-9a-f]{{12}}\.tmp")


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return True  # cannot tell: keep it
    return True


def remove_stale_temporaries(target: str, now: float | None = None) -> list[str]:
    """Remove the stale temporaries of ``target`` (see the module docstring); return their paths.
    Best effort: a temporary that vanishes or cannot be removed meanwhile is skipped."""
    directory, base = os.path.split(target)
    pattern, host = _pattern(base), _host()
    now = time.time() if now is None else now
    removed = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        dead = match.group(1) == host and not _alive(int(match.group(2)))
        if dead or now - info.st_mtime > STALE_SECONDS:
            with contextlib.suppress(OSError):
                os.remove(path)
                removed.append(path)
    return removed


@contextlib.contextmanager
def removed_on_sigterm(path: str):
    """While the block runs, SIGTERM first removes ``path`` and then does what it did before: the
    default action ends the process (re-raised with the default handler), a handler of the
    program's own is called (if it raises, the caller's cleanup runs as for any exception).
    Installed only in the main thread and only over the default or a Python handler (an ignored
    SIGTERM stays ignored); the previous handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (AttributeError, ValueError):
        yield
        return
    if previous is signal.SIG_IGN or previous is None:  # ignored, or set outside Python: leave it alone
        yield
        return

    def handler(signum, frame):
        if callable(previous):
            previous(signum, frame)  # the program's own handler; writing goes on if it returns
            return
        with contextlib.suppress(OSError):
            os.remove(path)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def refuse_trailing_separator(path: str, owner: str) -> None:
    """``x.nc/`` names a directory: refuse it rather than write or read ``x.nc``."""
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise IsADirectoryError(f"{owner}: {path!r} ends with a path separator, so it names a directory, not a file; "
                                "drop the trailing separator")


_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def refuse_non_regular(path: str, owner: str) -> None:
    """Raise unless ``path`` is a regular file (after symbolic links): opening a FIFO for reading
    blocks until a writer appears, a device may never end. Checked without opening the path."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{owner}: {path!r} is a directory, not a netCDF4 file")
    kind = next((what for test, what in _KINDS if test(mode)), "not a regular file")
    raise ValueError(f"{owner}: {path!r} is {kind}, not a regular file; pmp.load reads files written by pmp.save "
                     "(copy the data into a file first)")


_CHECKSUM_PREFIX = b"\n%pymc_partitions-sha256:"
_CHECKSUM_LENGTH = len(_CHECKSUM_PREFIX) + 64 + 1  # the prefix, 64 hex digits, a newline
_CHUNK = 1 << 22


def _sha256(path: str, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        left = size
        while left > 0:
            block = f.read(min(_CHUNK, left))
            if not block:
                break
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def append_checksum(path: str) -> None:
    """Append the SHA-256 of the file's bytes to it (see the module docstring)."""
    size = os.path.getsize(path)
    line = _CHECKSUM_PREFIX + _sha256(path, size).encode() + b"\n"
    with open(path, "ab") as f:
        f.write(line)


def verify_checksum(path: str) -> bool | None:
    """True if the file ends with a checksum line that matches its other bytes, False if it ends
    with one that does not (or a damaged one), None if it has none (another writer's file)."""
    size = os.path.getsize(path)
    if size < _CHECKSUM_LENGTH:
        return None
    with open(path, "rb") as f:
        f.seek(size - _CHECKSUM_LENGTH)
        tail = f.read(_CHECKSUM_LENGTH)
    if not tail.startswith(_CHECKSUM_PREFIX):
        return None
    stored = tail[len(_CHECKSUM_PREFIX):-1]
    if tail[-1:] != b"\n" or not re.fullmatch(rb"[0-9a-f]{64}", stored):
        return False
    return stored.decode() == _sha256(path, size - _CHECKSUM_LENGTH)
