"""The files a user names: reading inputs safely, and checking and writing outputs.

Inputs (models, .npy/.npz arrays) are read with `read_file`: regular files only (a FIFO
would block forever, /dev/zero never ends, a directory is a typo), at most `limit` bytes,
every OSError turned into a UserError that names the file. Arrays are parsed by
`load_arrays` from those bytes, never unpickled, and its messages never suggest
`allow_pickle` (a pickle runs code when loaded).

Outputs are checked by `check_output_file` / `check_output_dir` before any work is done,
so a typo in `--report` fails in a second, not after a build and a run. Missing parent
directories are allowed: `write_file` creates them (as `mkdir -p` would) when it writes.
`write_file` writes a temporary sibling and renames it over the target, so an existing
file is either the old one or the new one, never a half-written mix.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from .errors import UserError, shown

MIB = 1 << 20
# Far above any model a microcontroller holds (a few MiB of flash) or a float model quantized for one.
MODEL_BYTES_MAX = 512 * MIB
# Input samples and calibration sets: generous, but not unbounded.
ARRAY_BYTES_MAX = 2048 * MIB

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")   # a member first; or an empty archive's end record
_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def read_file(path: str | os.PathLike, what: str, limit: int, error: type[UserError] = UserError) -> bytes:
    """The bytes of the regular file `path` (`what` names it in messages: "model file", ...).

    Raises `error` (a UserError class) when the file is missing, is not a regular file
    (directory, FIFO, device, socket), cannot be read, or holds more than `limit` bytes."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise _open_error(e, path, what, error) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise error(f"{what} {path} is {kind}, not a regular file",
                        hint="pass the path of the file itself" if stat.S_ISDIR(st.st_mode)
                        else "microcompile reads regular files only; save the data to a file first")
        if st.st_size > limit:
            raise error(f"{what} {path} is {st.st_size / MIB:,.0f} MiB, more than the {limit // MIB:,} MiB "
                        "microcompile reads", hint="check that this is the right file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > limit:   # grew while we read it
        raise error(f"{what} {path} is larger than the {limit // MIB:,} MiB microcompile reads")
    return data


def _open_error(e: OSError, path: Path, what: str, error: type[UserError]) -> UserError:
    if e.errno == errno.ENOENT:
        return error(f"{what} {path} does not exist",
                     hint="check the path (relative paths are taken from the current directory)")
    if e.errno in (errno.EACCES, errno.EPERM):
        return error(f"cannot read {what} {path}: permission denied",
                     hint=f"make it readable, e.g. chmod u+r {shown(str(path))}")
    if e.errno == errno.ENAMETOOLONG:
        return error(f"cannot read {what} {shown(str(path))}: the path or one of its names is too long")
    if e.errno == errno.ENOTDIR:
        return error(f"{what} {path} does not exist (a component of the path is a file, not a directory)")
    return error(f"cannot read {what} {path}: {e.strerror or e}")


def load_arrays(path: str | os.PathLike, what: str, limit: int = ARRAY_BYTES_MAX,
                error: type[UserError] = UserError) -> np.ndarray | dict[str, np.ndarray]:
    """A .npy file as one array, or a .npz file as {name: array}, in native byte order.

    Pickled data is refused, never loaded. Raises `error` naming the file and the problem."""
    path = Path(path)
    data = read_file(path, what, limit, error)
    hint = "save arrays with numpy.save(path, array) or numpy.savez(path, name=array)"
    if not data:
        raise error(f"{what} {path} is empty", hint=hint)
    if data.startswith(_ZIP_MAGICS):
        return _load_npz(data, path, what, limit, error, hint)
    if not data.startswith(_NPY_MAGIC):
        kind = "a Python pickle, which microcompile never loads (it could run code)" if data[:1] == b"\x80" \
            else "not a .npy or .npz file (it does not start with numpy's magic string)"
        raise error(f"{what} {path} is {kind}", hint=hint)
    return _native(_load_npy(data, f"{what} {path}", error, hint), f"{what} {path}", error, hint)


def _load_npy(data: bytes, label: str, error: type[UserError], hint: str) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as e:   # numpy parses the header with ast/tokenize: a corrupt one raises anything
        raise error(f"{label} is not a valid .npy file: {_npy_problem(e)}", hint=hint) from None
    if not isinstance(array, np.ndarray):
        raise error(f"{label} does not hold an array", hint=hint)
    return array


def _npy_problem(e: Exception) -> str:
    text = str(e)
    if "pickle" in text.lower() or "object arrays" in text.lower():
        return "it holds Python objects (dtype object), not numbers"
    if isinstance(e, EOFError) or "EOF" in text or "cannot reshape" in text:
        return "it is truncated"
    return f"its header is corrupt ({shown(text, 120)})"


def _native(array: np.ndarray, label: str, error: type[UserError], hint: str) -> np.ndarray:
    """The array in native byte order (a big-endian array from another machine is converted)."""
    if array.dtype.fields is not None or array.dtype.kind not in "biufc":
        raise error(f"{label} holds {array.dtype} values, not numbers", hint=hint)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _load_npz(data: bytes, path: Path, what: str, limit: int, error: type[UserError], hint: str
              ) -> dict[str, np.ndarray]:
    label = f"{what} {path}"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            if sum(i.file_size for i in infos) > limit:
                raise error(f"{label} unpacks to more than the {limit // MIB:,} MiB microcompile reads")
            arrays = {}
            for info in infos:
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                member = z.read(info)
                if not member.startswith(_NPY_MAGIC):
                    raise error(f"{label}: member {shown(info.filename)!r} is not a .npy array", hint=hint)
                arrays[name] = _native(_load_npy(member, f"{label}: member {shown(info.filename)!r}", error, hint),
                                       f"{label}: member {shown(info.filename)!r}", error, hint)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError,
            RuntimeError) as e:   # RuntimeError: an encrypted member
        raise error(f"{label} is not a valid .npz file ({shown(str(e), 120)})", hint=hint) from None
    if not arrays:
        raise error(f"{label} holds no arrays", hint=hint)
    return arrays


# ---------------------------------------------------------------------------------------
# Outputs

def check_output_file(path: str | os.PathLike, what: str) -> Path:
    """Fail now (UserError) if `path` cannot be written as a file later; returns it."""
    path = Path(path)
    if _stat_mode(path) is not None and stat.S_ISDIR(_stat_mode(path)):
        raise UserError(f"{what} {path} is a directory", hint="give a file name, e.g. " + str(path / "out"))
    _check_creatable(path, what)
    return path


def check_output_dir(path: str | os.PathLike, what: str) -> Path:
    """Fail now (UserError) if directory `path` neither exists nor can be created; returns it."""
    path = Path(path)
    mode = _stat_mode(path)
    if mode is not None and not stat.S_ISDIR(mode):
        raise UserError(f"{what} {path} exists and is not a directory", hint="choose a directory path")
    if mode is None:
        _check_creatable(path, what)
    return path


def _stat_mode(path: Path) -> int | None:
    """st_mode of `path` (following links), None when there is nothing there to stat
    (missing, or a name the file system cannot even look up)."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def _check_creatable(path: Path, what: str) -> None:
    """`path` (missing, or a file to replace) can be created: the nearest existing ancestor is a
    directory we may create entries in, and every name still to create fits the file system."""
    absolute = Path(os.path.abspath(path))
    missing = [absolute.name]
    ancestor = absolute.parent
    while _stat_mode(ancestor) is None and ancestor != ancestor.parent:
        missing.append(ancestor.name)
        ancestor = ancestor.parent
    if not stat.S_ISDIR(_stat_mode(ancestor) or 0):
        raise UserError(f"cannot create {what} {shown(str(path), 200)}: {shown(str(ancestor), 200)} is a file, "
                        "not a directory", hint="choose a path whose parent is a directory")
    try:
        name_max = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        name_max = 255
    too_long = [n for n in missing if len(os.fsencode(n)) > name_max]
    if too_long:
        raise UserError(f"cannot create {what}: the name {shown(too_long[0], 40)!r} is {len(os.fsencode(too_long[0]))} "
                        f"bytes long, the file system allows {name_max}", hint="choose a shorter name")
    try:   # the only reliable test: read-only mounts, /proc, ACLs and root all answer differently
        os.rmdir(tempfile.mkdtemp(prefix=".microcompile-probe-", dir=ancestor))
    except OSError as e:
        raise UserError(f"cannot create {what} {shown(str(path), 200)}: cannot write in {ancestor} "
                        f"({e.strerror or e})", hint="choose a directory you can write to") from None


def write_file(path: str | os.PathLike, data: bytes, what: str = "output file") -> Path:
    """Write `data` to `path` atomically, creating missing parent directories. An OSError
    (a full disk, a directory made read-only meanwhile) is a UserError naming the file."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()   # write through the link, keep the link
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise UserError(f"cannot write {what} {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write {what} {path}: {e.strerror or e}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
