"""The session directory of MCP ``verify_script``: its working directories, what they hold, and its size cap.

    list_files(session_dir, workdir) -> (files, total)     the files a run left (relative path, size), sorted
    read_run_file(session_dir, workdir, path) -> RunFileContent   one file's bytes, bounded (MCP ``read_run_file``)
    make_room(session_dir, workdir) -> removed                keep the session under its cap before a run
    session_limit() -> bytes                                   the cap: ``$FSDP_SKILL_SCRIPT_SESSION_BYTES`` or 512 MiB

Code the agent sent runs in these directories and may plant symbolic links in them, so nothing here follows one:
walks classify entries with ``lstat`` (a link is listed as a link, never entered or measured through), a file is
read by opening each path component with ``O_NOFOLLOW`` relative to its parent, and removal is ``unlink`` for a
link or ``shutil.rmtree`` (which does not follow links inside the tree) for a directory.
"""

from __future__ import annotations

import base64
import errno
import os
import re
import shutil
import stat
from typing import Literal, NoReturn

from pydantic import BaseModel, Field

from fsdp_skill.errors import InvalidArgument, NotFoundError
from fsdp_skill.runtime import knobs

MAX_LISTED_FILES = 200  # files a ScriptRun lists (the first ones by path)
READ_LIMIT_BYTES = 256 * 1024  # bytes read_run_file returns at most per call
DEFAULT_SESSION_BYTES = 512 * 1024 * 1024  # the session directory's cap unless FSDP_SKILL_SCRIPT_SESSION_BYTES
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RunFile(BaseModel):
    """One entry a run left in its working directory (symbolic links are listed, never followed)."""

    path: str = Field(description="Path relative to the working directory, '/'-separated")
    size: int = Field(description="Size in bytes (of a link: the length of its target path, which is not followed)")
    kind: Literal["file", "symlink"] = Field(description="file (a regular file) or symlink (not followed)")


class RunFileContent(BaseModel):
    """Part of a file of a working directory, as ``read_run_file`` returns it."""

    workdir: str = Field(description="Name of the working directory")
    path: str = Field(description="Path of the file relative to the working directory")
    size: int = Field(description="Size of the whole file in bytes")
    offset: int = Field(description="Byte offset of the first byte returned")
    length: int = Field(description="Bytes returned (before encoding)")
    encoding: Literal["utf-8", "base64"] = Field(
        description="utf-8: content is the bytes as text (undecodable bytes replaced by U+FFFD); base64: the bytes hold "
        "NUL (binary, e.g. a torch.save checkpoint) and content is their base64"
    )
    content: str = Field(description="The bytes offset..offset+length, encoded as encoding says")
    truncated: bool = Field(description=f"True when bytes after these remain (at most {READ_LIMIT_BYTES:,} per call)")
    next_offset: int | None = Field(description="Offset to pass to read the next part; None at the end of the file")


def plain_name(value: str, what: str) -> str:
    """``value`` if it is a plain file name (letters, digits, '.', '_', '-'; 1-64 characters, not starting
    with '.' or '-'), else InvalidArgument naming ``what``."""
    if not _NAME.fullmatch(value) or value in (".", ".."):
        raise InvalidArgument(
            f"{what} must be a plain name of 1-64 letters, digits, '.', '_' or '-' (not starting with '.' or '-'), not {value!r}"
        )
    return value


def session_limit() -> int:
    """The session directory's cap in bytes: ``$FSDP_SKILL_SCRIPT_SESSION_BYTES`` (a positive integer), else
    :data:`DEFAULT_SESSION_BYTES`.  Read before every run; raises InvalidArgument for any other value."""
    raw = os.environ.get(knobs.SCRIPT_SESSION_BYTES, "").strip()
    if not raw:
        return DEFAULT_SESSION_BYTES
    if not (raw.isascii() and raw.isdigit()) or int(raw) == 0:
        raise InvalidArgument(f"{knobs.SCRIPT_SESSION_BYTES}={raw!r}: expected a positive number of bytes (e.g. 536870912)")
    return int(raw)


def _walk(top: str) -> list[tuple[str, os.stat_result]]:
    """``(relative path, lstat)`` of every regular file and symbolic link under the directory ``top``, entering
    real directories only (never a link to one), in no particular order."""
    out: list[tuple[str, os.stat_result]] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(top, rel) if rel else top) as it:
                entries = list(it)
        except OSError:  # gone, or not readable: nothing to list there
            continue
        for e in entries:
            sub = f"{rel}/{e.name}" if rel else e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(sub)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                out.append((sub, st))
    return out


def tree_bytes(path: str) -> int:
    """Bytes under ``path`` (sizes of its regular files and links, links not followed); that of ``path`` itself
    when it is a file or a link; 0 when it does not exist."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    return sum(s.st_size for _, s in _walk(path))


def real_workdir(session_dir: str, workdir: str) -> str:
    """``session_dir/workdir`` when it is a real directory (created when missing); InvalidArgument when something
    else (a link, a file) was planted there under that name."""
    where = os.path.join(session_dir, workdir)
    try:
        os.mkdir(where)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(where).st_mode):
            raise InvalidArgument(
                f"workdir {workdir!r} is not a directory of this session (a link or file was put there); use another workdir"
            ) from None
    return where


def list_files(session_dir: str, workdir: str, limit: int = MAX_LISTED_FILES) -> tuple[list[RunFile], int]:
    """``(files, total)``: the first ``limit`` files and links of ``session_dir/workdir`` by path, and how many
    there are in all."""
    found = sorted(_walk(os.path.join(session_dir, workdir)))
    files = [RunFile(path=p, size=st.st_size, kind="symlink" if stat.S_ISLNK(st.st_mode) else "file") for p, st in found[:limit]]
    return files, len(found)


def make_room(session_dir: str, workdir: str, limit: int | None = None) -> list[str]:
    """Keep ``session_dir`` within ``limit`` bytes (default :func:`session_limit`) before a run in ``workdir``:
    while it holds more, remove its other non-empty entries (working directories, the session HOME ``.home``,
    anything else a script put there), least recently used first (by modification time).  Returns the names removed.
    Raises InvalidArgument when ``workdir`` alone holds more than the cap."""
    cap = session_limit() if limit is None else limit
    sizes = {name: tree_bytes(os.path.join(session_dir, name)) for name in os.listdir(session_dir)}
    total = sum(sizes.values())
    removed: list[str] = []
    for name in sorted((n for n in sizes if n != workdir and sizes[n]), key=lambda n: _mtime(os.path.join(session_dir, n))):
        if total <= cap:
            break
        _remove(os.path.join(session_dir, name))
        total -= sizes[name]
        removed.append(name)
    if total > cap:
        raise InvalidArgument(
            f"workdir {workdir!r} holds {sizes.get(workdir, 0):,} bytes, over the session's cap of {cap:,} bytes "
            f"(${knobs.SCRIPT_SESSION_BYTES}); run in a new workdir (this one is then removed first when room is needed)"
        )
    return removed


def _mtime(path: str) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def _remove(path: str) -> None:
    """Remove ``path``: a real directory with its tree (links inside are removed, not followed), anything else
    (a link included) by unlink."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _parts(path: str) -> list[str]:
    """The components of a relative ``path``; InvalidArgument for one that could leave the working directory."""
    if not path or "\0" in path:
        raise InvalidArgument("path must name a file relative to the working directory, e.g. 'ckpt.pt'")
    if path.startswith(("/", "\\")) or os.path.isabs(path):
        raise InvalidArgument(f"path must be relative to the working directory, not absolute: {path!r}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidArgument(f"path must stay inside the working directory (no '..'): {path!r}")
    if not parts:
        raise InvalidArgument(f"path must name a file, not the working directory itself: {path!r}")
    return parts


def _open_nofollow(session_dir: str, workdir: str, parts: list[str], shown: str) -> int:
    """A read-only descriptor of ``workdir/parts...`` opened one component at a time, each relative to its parent
    and with ``O_NOFOLLOW``, so no link (planted anywhere on the way) is followed.  NotFoundError when it is missing;
    InvalidArgument for a link or a component that is not a directory."""
    fds: list[int] = []
    names = [workdir, *parts]
    try:
        fds.append(os.open(session_dir, _DIR_FLAGS))
        for i, name in enumerate(names):
            last = i == len(names) - 1
            flags = (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC) if last else _DIR_FLAGS
            try:
                fds.append(os.open(name, flags, dir_fd=fds[-1]))
            except OSError as exc:
                _refuse(exc, "/".join(names[1 : i + 1]) or ".", workdir, shown)
        return fds.pop()
    finally:
        for fd in fds:
            os.close(fd)


def _refuse(exc: OSError, where: str, workdir: str, shown: str) -> NoReturn:
    """Translate an ``open`` error on component ``where`` of ``shown`` into the caller's error."""
    if exc.errno == errno.ENOENT:
        if where == ".":
            raise NotFoundError(f"no working directory {workdir!r} in this session (run verify_script with it first)") from None
        raise NotFoundError(f"no file {shown!r} in workdir {workdir!r}") from None
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        raise InvalidArgument(
            f"{where!r} in workdir {workdir!r} is a symbolic link or not a directory: read_run_file does not follow "
            f"links and reads only regular files inside the working directory"
        ) from None
    raise InvalidArgument(f"cannot open {shown!r} in workdir {workdir!r}: {exc.strerror or exc}") from None


def read_run_file(session_dir: str, workdir: str, path: str, *, offset: int = 0, limit: int = READ_LIMIT_BYTES) -> RunFileContent:
    """At most ``limit`` bytes of the regular file ``session_dir/workdir/path`` from byte ``offset``: as UTF-8 text
    (undecodable bytes replaced) unless they hold a NUL byte, then base64.  A text part cut at ``limit`` ends
    before a character split in two (the next part starts with it).  Raises InvalidArgument for a path that is
    absolute, climbs with '..', goes through a link or names something other than a regular file, and
    NotFoundError when it does not exist."""
    plain_name(workdir, "workdir")
    fd = _open_nofollow(session_dir, workdir, _parts(path), path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidArgument(f"{path!r} in workdir {workdir!r} is not a regular file")
        data = os.pread(fd, limit, offset)
    finally:
        os.close(fd)
    end = offset + len(data)
    binary = b"\0" in data
    if not binary and end < st.st_size:
        data = _whole_chars(data)
        end = offset + len(data)
    return RunFileContent(
        workdir=workdir,
        path=path,
        size=st.st_size,
        offset=offset,
        length=len(data),
        encoding="base64" if binary else "utf-8",
        content=base64.b64encode(data).decode("ascii") if binary else data.decode("utf-8", errors="replace"),
        truncated=end < st.st_size,
        next_offset=end if end < st.st_size else None,
    )


def _whole_chars(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut off at its end (the bytes of its start are dropped)."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 != 0x80:  # the last character's first byte (or an ASCII byte)
            need = 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 1
            return data[:-back] if need > back else data
    return data
