"""Saving and loading results (:func:`save`, :func:`load`: ``pmp.save`` / ``pmp.load``), with atomic
file writes and careful reads.

Results of either line (InferenceData, DataTree) are written one netCDF4/HDF5 group per ArviZ group
and load with either line; attribute values netCDF cannot store are written as JSON behind
:data:`ATTR_PREFIX` and decoded on load (see difference 5 in :mod:`pymc_partitions.pymc.compat`).

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
import json
import os
import re
import shutil
import signal
import socket
import stat
import threading
import time
import uuid
import warnings

import numpy as np
import xarray as xr

from .._checks import boolean
from ..pymc.compat import _arviz
from .reader import RESULT_IS_DATATREE, check_result, group_names, is_datatree

__all__ = ["save", "load", "ATTR_PREFIX", "STALE_SECONDS", "temporary_name", "remove_stale_temporaries", "removed_on_sigterm", "refuse_non_regular",
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


def _path(path, owner: str) -> str:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise ValueError(f"{owner}: path must be a non-empty file name, got {path!r}")
    return path


# --- attributes: netCDF stores numbers, strings, 1-d numeric arrays and lists of >= 2 strings;
# everything else is written as JSON behind a prefix and decoded on load ----------------------

#: Prefix of attribute values that :func:`save` wrote as JSON (and :func:`load` decodes).
ATTR_PREFIX = "pmp-json:"
_TAG = "__pmp_type__"
_NATIVE_KINDS = "iuf"  # signed / unsigned integers and floats (float16 and complex excluded below)
_INT64 = (-(2**63), 2**63 - 1)


def _native_dtype(dtype) -> bool:
    return dtype.kind in _NATIVE_KINDS and dtype.itemsize >= (1 if dtype.kind in "iu" else 4)


def _is_native(value) -> bool:
    """True if netCDF stores ``value`` and gives back an equal value of the same type (up to
    int64 / float64 scalars, which :func:`_decode_attr` turns back into int / float)."""
    if isinstance(value, str):
        return not value.startswith(ATTR_PREFIX)
    if type(value) is int:
        return _INT64[0] <= value <= _INT64[1]
    if type(value) is float:
        return True
    if isinstance(value, np.generic):
        return _native_dtype(value.dtype)
    if isinstance(value, np.ndarray):
        return value.ndim == 1 and value.size >= 2 and _native_dtype(value.dtype)
    if type(value) is list:
        return len(value) >= 2 and all(type(v) is str and not v.startswith(ATTR_PREFIX) for v in value)
    return False


def _to_json(value, where: str):
    """A JSON-able form of ``value`` that :func:`_from_json` turns back into an equal value of the same type."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is list:
        return [_to_json(v, where) for v in value]
    if type(value) is tuple:
        return {_TAG: "tuple", "items": [_to_json(v, where) for v in value]}
    if type(value) is dict:
        bad = [k for k in value if type(k) is not str or k == _TAG]
        if bad:
            raise TypeError(f"pmp.save: attribute {where}: dict keys must be strings (not {_TAG!r}), got {bad!r}")
        return {k: _to_json(v, where) for k, v in value.items()}
    if isinstance(value, (np.generic, np.ndarray)) and value.dtype.kind in "biufU":
        array = np.asarray(value)
        return {_TAG: "ndarray" if isinstance(value, np.ndarray) else "scalar", "dtype": array.dtype.str,
                "shape": list(array.shape), "data": array.ravel().tolist()}
    raise TypeError(f"pmp.save: attribute {where} is of type {type(value).__name__} ({value!r:.80}), which cannot be "
                    "stored; use numbers, strings, bools, None, lists, tuples, dicts with string keys and numpy "
                    "arrays of numbers, bools or strings")


def _from_json(obj: dict):
    kind = obj.get(_TAG)
    if kind is None:
        return obj
    if kind == "tuple":
        return tuple(obj["items"])
    array = np.array(obj["data"], dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
    return array if kind == "ndarray" else array[()]


def _encode_attr(value, where: str):
    if _is_native(value):
        return value
    return ATTR_PREFIX + json.dumps(_to_json(value, where), ensure_ascii=False, allow_nan=True)


def _decode_attr(value, where: str):
    if isinstance(value, str) and value.startswith(ATTR_PREFIX):
        return json.loads(value[len(ATTR_PREFIX):], object_hook=_from_json)
    if type(value) is np.int64:
        return int(value)
    if type(value) is np.float64:
        return float(value)
    return value


def _map_dataset(ds: xr.Dataset, fn, where: str) -> xr.Dataset:
    """A shallow copy of ``ds`` with ``fn(value, where)`` applied to its and its variables' attrs."""
    ds = ds.copy(deep=False)
    ds.attrs = {k: fn(v, f"{k!r} of {where}") for k, v in ds.attrs.items()}
    for name, var in ds.variables.items():
        var.attrs = {k: fn(v, f"{k!r} of variable {name!r} in {where}") for k, v in var.attrs.items()}
    return ds


def _map_attrs(result, fn):
    """A shallow copy of ``result`` (same type) with ``fn`` applied to every attribute value:
    root, groups and variables."""
    if is_datatree(result):
        out = result.copy(deep=False)
        for node in out.subtree:
            where = "the root" if node.is_root else f"group {node.path.strip('/')!r}"
            node.dataset = _map_dataset(node.to_dataset(inherit=False), fn, where)
        return out
    groups = {g: _map_dataset(result[g], fn, f"group {g!r}") for g in group_names(result)}
    attrs = {k: fn(v, f"{k!r} of the root") for k, v in result.attrs.items()}  # as _map_dataset's
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not defined in the InferenceData scheme")
        return type(result)(attrs=attrs or None, **groups)


# --- files ------------------------------------------------------------------------------------

def save(result, path: str | os.PathLike, *, compress: bool = True) -> str:
    """Write a sampling result to a netCDF4 (HDF5) file with h5netcdf; return the path.

    InferenceData -> ``result.to_netcdf(..., engine="h5netcdf", compress=...)``;
    DataTree -> ``result.to_netcdf(..., engine="h5netcdf")`` with zlib encoding per
    variable when ``compress``. An existing file is replaced.

    The file is written atomically: to a temporary file in the same directory, renamed over
    ``path`` (``os.replace``) only once complete. A failure part-way (an exception, Ctrl-C,
    SIGTERM) leaves any previous file intact and no partial file; the temporary of a writer killed
    outright (SIGKILL) is removed by the next save of the same path once it is certainly stale
    (its process is gone, or it is a day old), never while its writer runs. A path ending with a
    separator (``"x.nc/"``) is refused.

    Every numeric variable is written with HDF5's Fletcher-32 checksum (``compress=False`` too),
    and a SHA-256 of the whole file is appended after the HDF5 data (:func:`.files.append_checksum`;
    HDF5 readers ignore it), so :func:`load` refuses a damaged file instead of returning other
    values, before HDF5 parses a damaged byte.

    Attributes (of the root, the groups and the variables) that netCDF cannot store as they
    are -- bools, None, lists other than of two or more strings, tuples, dicts, arrays of other
    shapes or dtypes -- are written as JSON strings prefixed with ``"pmp-json:"``, which
    :func:`load` decodes: what ``save`` writes, ``load`` gives back with the same types
    (int64 / float64 scalars come back as Python int / float). Other readers see those
    strings. An attribute that cannot be written at all raises ``TypeError`` before anything
    is written.
    """
    check_result(result)
    compress = boolean("compress", compress, owner="pmp.save")
    name = _path(path, "pmp.save")
    refuse_trailing_separator(name, "pmp.save")
    target = os.path.realpath(name)  # write through a symbolic link, not over it
    if os.path.isdir(target):
        raise IsADirectoryError(f"pmp.save: {name!r} is a directory")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"pmp.save: the directory of {name!r} does not exist")
    if not group_names(result):
        raise ValueError("pmp.save: the result has no groups; there is nothing to save")
    encoded = _map_attrs(result, _encode_attr)
    remove_stale_temporaries(target)
    temporary = temporary_name(target)
    try:
        with removed_on_sigterm(temporary):
            _write(encoded, temporary, compress)
            append_checksum(temporary)
            if os.path.exists(target):
                shutil.copymode(target, temporary)
            os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise
    return name


def _write(result, path: str, compress: bool) -> None:
    """Write with h5netcdf, each variable encoded by :func:`_encoding`. InferenceData is written
    as ``InferenceData.to_netcdf`` does (root attributes, then one netCDF group per group), with
    the checksums its ``compress`` option cannot ask for."""
    if is_datatree(result):
        encoding = {node.path: enc for node in result.subtree
                    if (enc := _encoding(node.to_dataset(inherit=False), compress))}
        result.to_netcdf(path, mode="w", engine="h5netcdf", encoding=encoding or None)
        return
    mode = "w"
    if result.attrs:
        xr.Dataset(attrs=dict(result.attrs)).to_netcdf(path, mode=mode, engine="h5netcdf", group="/")
        mode = "a"
    for group in result.groups():
        data = result[group]
        data.to_netcdf(path, mode=mode, group=group, engine="h5netcdf", encoding=_encoding(data, compress))
        mode = "a"


def _encoding(ds: xr.Dataset, compress: bool) -> dict:
    """Per variable: Fletcher-32 checksums for arrays of numbers, bools and times (HDF5 cannot
    filter strings, and a scalar is not chunked), zlib when ``compress``."""
    out = {}
    for name, var in ds.variables.items():
        enc = {}
        if var.ndim >= 1 and var.dtype.kind in "biufmM":
            enc["fletcher32"] = True
        if compress and _compressible(var.dtype):
            enc["zlib"] = True
        if enc:
            out[name] = enc
    return out


def _compressible(dtype) -> bool:
    return np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)


_NOT_NETCDF4 = "is not a netCDF4/HDF5 file written by pmp.save or ArviZ"


def _layout(path: str, name: str):
    """(top-level group names, root variable names, names of groups holding groups) of a netCDF4 file."""
    import h5netcdf  # noqa: PLC0415

    try:
        with h5netcdf.File(path, "r") as f:
            groups = list(f.groups)
            return groups, list(f.variables), [g for g in groups if f.groups[g].groups]
    except Exception as err:  # h5py raises OSError, KeyError, ValueError, RuntimeError ... on damaged files
        raise ValueError(f"pmp.load: {name!r} {_NOT_NETCDF4} (truncated or damaged? {type(err).__name__}: "
                         f"{err})") from err


def load(path: str | os.PathLike):
    """Read a file written by :func:`save` (or by ArviZ/xarray) fully into memory.

    Returns the installed PyMC's result type: ``arviz.InferenceData`` on PyMC 5
    (``az.from_netcdf``), ``xarray.DataTree`` on PyMC 6 (``xarray.open_datatree``,
    which is what ArviZ 1.x's ``az.from_netcdf`` does); a file written under either line loads
    under both. Data are loaded eagerly and the file is closed, so it can be overwritten or
    deleted afterwards. Attributes :func:`save` wrote as JSON are decoded.

    Raises ``FileNotFoundError`` for a missing file, ``IsADirectoryError`` for a directory (or a
    path ending with a separator) and ``ValueError``, naming the path, for what is not a result:
    a named pipe, device or socket (refused before it is opened, since reading one may block
    forever), not netCDF4/HDF5 (truncated, damaged, or something else), damaged metadata or data
    (data :func:`save` wrote carry checksums), netCDF3 (which has no groups, so it cannot hold
    one), a netCDF4 file with no groups (a single dataset: use ``xarray.open_dataset``), or, on
    PyMC 5, a file with data InferenceData cannot hold (variables at the root, groups inside groups).
    """
    import h5py  # noqa: PLC0415

    name = _path(path, "pmp.load")
    refuse_trailing_separator(name, "pmp.load")
    if not os.path.exists(name):
        raise FileNotFoundError(f"pmp.load: no such file: {name!r}")
    if os.path.isdir(name):
        raise IsADirectoryError(f"pmp.load: {name!r} is a directory, not a netCDF4 file (a zarr store? "
                                "pmp.load reads the netCDF4 files pmp.save writes)")
    refuse_non_regular(name, "pmp.load")  # a FIFO would block the read below forever
    if verify_checksum(name) is False:  # before HDF5 parses anything: damaged metadata can make it loop
        raise ValueError(f"pmp.load: {name!r} is damaged: its bytes differ from what pmp.save wrote (the SHA-256 "
                         "it wrote at the end of the file does not match)")
    with open(name, "rb") as fh:
        head = fh.read(4)
    if head[:3] == b"CDF" and head[3:] in (b"\x01", b"\x02", b"\x05"):
        raise ValueError(f"pmp.load: {name!r} is a netCDF3 file. netCDF3 has no groups, so it holds a single "
                         "dataset, not a result (pmp.save and ArviZ write netCDF4 with one group per result "
                         "group); open it with xarray.open_dataset")
    if not h5py.is_hdf5(name):
        raise ValueError(f"pmp.load: {name!r} {_NOT_NETCDF4}{' (it is empty)' if not head else ''}")
    groups, root_vars, nested = _layout(name, name)
    if not groups:
        raise ValueError(f"pmp.load: {name!r} holds a single dataset (a netCDF4 file with no groups"
                         f"{'' if root_vars else ' and no variables'}), not a result with groups such as "
                         "'posterior'; open it with xarray.open_dataset")
    if not RESULT_IS_DATATREE and (root_vars or nested):
        what = [f"variables {root_vars} at the root"] if root_vars else []
        what += [f"groups inside the groups {nested}"] if nested else []
        raise ValueError(f"pmp.load: {name!r} holds {' and '.join(what)}, which arviz.InferenceData cannot hold "
                         "(it would drop them); read it with xarray.open_datatree")
    try:
        if RESULT_IS_DATATREE:
            with xr.open_datatree(name, engine="h5netcdf") as tree:
                result = tree.load()
        else:
            az = _arviz()
            with az.rc_context({"data.load": "eager"}):
                result = az.from_netcdf(name, engine="h5netcdf")
    except Exception as err:  # damaged data fail their checksum (OSError); damaged metadata raise anything
        raise ValueError(f"pmp.load: {name!r} is damaged: {type(err).__name__}: {err}") from err
    if not group_names(result):
        raise ValueError(f"pmp.load: {name!r} holds only empty groups {groups}")
    try:
        return _map_attrs(result, _decode_attr)
    except Exception as err:  # an attribute pmp.save wrote as JSON, damaged
        raise ValueError(f"pmp.load: {name!r} is damaged: an attribute cannot be decoded: {type(err).__name__}: "
                         f"{err}") from err
