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

Symbolic links (DESIGN.md, "Untrusted input": nothing is written outside -o, and never
through a symlink). The path a user types is followed as typed: `-o` may be a link to a
directory, and the directories above a `--report` file may be links. What is beneath that is
not followed:
- an output file the user names that is itself a symlink is refused (exit 2, naming the
  link): writing through it would change a file the user did not name, and replacing it
  would silently undo a link the user may have made on purpose;
- inside an output directory (`OutputTree`: a project, tune's work directory) every name is
  opened relative to its parent's descriptor with O_NOFOLLOW; a link (or a hard link) where
  microcompile writes a file or a directory is replaced, never written through.
New directories get the user's umask (0777 & ~umask).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
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
    """Fail now (UserError) if `path` cannot be written as a file later, or is a symlink;
    returns it."""
    path = Path(path)
    _refuse_link(path, what)
    mode = _stat_mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        raise UserError(f"{what} {path} is a directory", hint="give a file name, e.g. " + str(path / "out"))
    _check_creatable(path, what)
    return path


def check_output_dir(path: str | os.PathLike, what: str) -> Path:
    """Fail now (UserError) if directory `path` neither exists nor can be created, or exists and
    cannot be written in; returns it. `path` may be a link to a directory (the user's own
    path), not a link that leads nowhere."""
    path = Path(path)
    mode = _stat_mode(path)
    if mode is None:
        _check_creatable(path, what)
    elif not stat.S_ISDIR(mode):
        raise UserError(f"{what} {path} exists and is not a directory", hint="choose a directory path")
    else:
        _probe_writable(path, f"cannot write {what} {shown(str(path), 200)}")
    return path


def _refuse_link(path: Path, what: str) -> None:
    if os.path.islink(path):
        raise UserError(f"{what} {shown(str(path), 200)} is a symbolic link (to {shown(os.readlink(path), 200)}); "
                        "microcompile does not write through links",
                        hint=f"name the file itself ({shown(os.path.realpath(path), 200)}), or remove the link")


def _stat_mode(path: Path) -> int | None:
    """st_mode of `path` (following links), None when there is nothing there to stat
    (missing, a link that leads nowhere, or a name the file system cannot even look up)."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def _dead_link(link: Path) -> str:
    """Why the symlink `link` cannot be followed, as the end of a sentence."""
    try:
        os.stat(link)
    except OSError as e:
        target = shown(os.readlink(link), 200)
        if e.errno == errno.ENOENT:
            return f"is a symbolic link to {target}, which does not exist"
        if e.errno == errno.ELOOP:
            return f"is a symbolic link to {target}, which leads round in a loop of links"
        return f"is a symbolic link to {target}, which cannot be followed ({e.strerror})"
    return "is a symbolic link"


def _check_creatable(path: Path, what: str) -> None:
    """`path` (missing, or a file to replace) can be created: no name on the way is a link that
    leads nowhere, the nearest existing ancestor is a directory we may create entries in, and
    every name still to create fits the file system."""
    if os.path.islink(path) and _stat_mode(path) is None:
        raise UserError(f"{what} {shown(str(path), 200)} {_dead_link(path)}",
                        hint="create what it points to, remove the link, or choose another path")
    absolute = Path(os.path.abspath(path))
    missing = [absolute.name]
    ancestor = absolute.parent
    while _stat_mode(ancestor) is None and ancestor != ancestor.parent:
        if os.path.islink(ancestor):
            raise UserError(f"cannot create {what} {shown(str(path), 200)}: {shown(str(ancestor), 200)} "
                            f"{_dead_link(ancestor)}",
                            hint="create what it points to, remove the link, or choose another path")
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
    _probe_writable(ancestor, f"cannot create {what} {shown(str(path), 200)}")


def _probe_writable(directory: Path, failure: str) -> None:
    """UserError (`failure`: why it is needed) unless we may create entries in `directory`."""
    try:   # the only reliable test: read-only mounts, /proc, ACLs and root all answer differently
        os.rmdir(tempfile.mkdtemp(prefix=".microcompile-probe-", dir=directory))
    except OSError as e:
        raise UserError(f"{failure}: cannot write in {directory} ({e.strerror or e})",
                        hint="choose a directory you can write to") from None


def write_file(path: str | os.PathLike, data: bytes, what: str = "output file") -> Path:
    """Write `data` to `path` atomically, creating missing parent directories. A symlink at
    `path` is refused (as check_output_file does before any work; a link made since is
    replaced by the rename, not followed). An OSError (a full disk, a directory made read-only
    meanwhile) is a UserError naming the file."""
    path = Path(path)
    _refuse_link(path, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
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


def tool_arg(path: str | os.PathLike) -> str:
    """`path` as an operand on a tool's command line: a relative path starting with '-' gets
    './' in front, so that no tool (make, size, objdump, QEMU) takes it for an option."""
    text = os.fspath(path)
    return os.path.join(".", text) if text.startswith("-") else text


# ---------------------------------------------------------------------------------------
# Inside an output directory

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OutputTree:
    """The files under an output directory (a project, tune's work directory), written without
    following any link below it.

    `root` is the user's path and is followed as given. Every name below it is opened relative
    to its parent directory's descriptor with O_NOFOLLOW: a symlink where a directory belongs is
    removed and the directory made; a file is written as a temporary sibling renamed over its
    name, so a symlink or a hard link there is replaced, not written through. So no write lands
    outside `root`, even while names in it are swapped. New directories get the user's umask.
    Paths are relative, '/'-separated, without '.' or '..' (see `_names`)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def write(self, rel: str, data: bytes) -> bool:
        """Make `rel` hold `data`; False, and the file and its mtime untouched, when it already
        did (so make rebuilds only what changed). A regular file keeps its mode; a new one
        gets 0666 & ~umask."""
        names = _names(rel)
        if names is None:
            raise ValueError(f"not a path inside the tree: {rel!r}")
        try:
            with self._dir(names[:-1], create=True) as fd:
                return _replace(fd, names[-1], data)
        except OSError as e:
            hint = ("something that is not a directory stands where microcompile makes one, or a directory where "
                    "it writes a file: move it away" if e.errno in (errno.ENOTDIR, errno.EISDIR) else None)
            raise UserError(f"cannot write {shown(str(self.root / rel), 200)}: {e.strerror or e}", hint=hint) from None

    def remove(self, rel: str) -> None:
        """Remove the file `rel` (a link: the link, never what it points to). Nothing happens when
        it is missing, a directory, below a link, or not a path inside the tree: a name read from
        a file in the tree may be anything."""
        names = _names(rel)
        if names is None:
            return
        try:
            with self._dir(names[:-1], create=False) as fd:
                if fd is not None and not stat.S_ISDIR(os.stat(names[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                    os.unlink(names[-1], dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise UserError(f"cannot remove {shown(str(self.root / rel), 200)}: {e.strerror or e}") from None

    def remove_links(self, rel: str) -> None:
        """Remove every symlink and every file with more than one link at or below `rel` (not
        what they point to). For make's outputs: gcc's dependency files and a Makefile's
        `printf > file` write through whatever stands at their name."""
        names = _names(rel)
        if names is None:
            raise ValueError(f"not a path inside the tree: {rel!r}")
        try:
            with self._dir(names[:-1], create=False) as fd:
                if fd is None or not _drop_link(fd, names[-1]):
                    return
                for _, dirs, files, sub in os.fwalk(names[-1], dir_fd=fd, follow_symlinks=False):
                    dirs[:] = [d for d in dirs if _drop_link(sub, d)]
                    for f in files:
                        _drop_link(sub, f)
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError as e:
            raise UserError(f"cannot clear links in {shown(str(self.root / rel), 200)}: {e.strerror or e}") from None

    @contextlib.contextmanager
    def _dir(self, names: tuple[str, ...], create: bool):
        """A descriptor of the directory root/names..., made as needed when `create`; None when
        it is missing or not a real directory and not `create`."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for name in names:
                child = _enter(fd, name, create)
                os.close(fd)
                fd = child
                if fd is None:
                    break
            yield fd
        finally:
            if fd is not None:
                os.close(fd)


def _names(rel: str) -> tuple[str, ...] | None:
    """The names along relative path `rel`; None when it is empty, absolute, or holds '.', '..',
    an empty name or a NUL."""
    if not isinstance(rel, str) or not rel or "\0" in rel or rel.startswith("/"):
        return None
    names = tuple(rel.split("/"))
    return None if any(n in ("", ".", "..") for n in names) else names


def _enter(parent: int, name: str, create: bool) -> int | None:
    """Open directory `name` in `parent` without following a link. With `create`, a link there
    is removed (the link itself) and a missing directory made."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is None or stat.S_ISLNK(st.st_mode):
        if not create:
            return None
        if st is not None:
            os.unlink(name, dir_fd=parent)
        with contextlib.suppress(FileExistsError):   # made meanwhile: the open below checks what it is
            os.mkdir(name, 0o777, dir_fd=parent)      # the umask applies
    elif not stat.S_ISDIR(st.st_mode):
        if not create:
            return None
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    return os.open(name, _DIR_FLAGS, dir_fd=parent)   # O_NOFOLLOW: a link swapped in meanwhile fails


def _replace(parent: int, name: str, data: bytes) -> bool:
    """Write `data` as a temporary file in `parent` and rename it over `name`, unless `name` is
    a regular file, linked once, that holds `data` already. Returns whether it wrote."""
    mode = None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        fd = None   # missing, a link (ELOOP), unreadable: written anew
    if fd is not None:
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
                if st.st_nlink == 1 and st.st_size == len(data) and _read_exactly(fd, len(data)) == data:
                    return False
        finally:
            os.close(fd)
    tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if mode is not None:
                os.fchmod(f.fileno(), mode)
        os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise
    return True


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _drop_link(parent: int, name: str) -> bool:
    """Unlink `name` in `parent` when it is a symlink or a file with other links; True when it
    is a real directory (to look inside)."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:   # removed meanwhile
        return False
    if stat.S_ISLNK(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1):
        os.unlink(name, dir_fd=parent)
        return False
    return stat.S_ISDIR(st.st_mode)
