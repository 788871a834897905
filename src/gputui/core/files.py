"""Creating a file to write a result to (a recording), safely: the path given may be anything.

A new file is created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0644 less the umask),
so writing never goes through a symbolic link and never into a device, a FIFO or a directory
(``gputui record /dev/loop0`` must not overwrite a disk). Replacing an existing file is only for a
regular file: the new file is created next to it and renamed over it, which replaces the name and
never writes into what was there.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from pathlib import Path


class NotARegularFile(OSError):
    """The path is a symbolic link, a device, a FIFO, a socket or a directory."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def os_reason(exc: OSError) -> str:
    """An OSError's reason in words (``No space left on device``), without ``[Errno n]``."""
    return exc.strerror or str(exc)


_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFBLK: "a block device",
    stat.S_IFCHR: "a character device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


def check_target(path: str | os.PathLike[str], *, replace: bool = False) -> bool:
    """Whether a new file can be written at ``path``: True when a regular file is there to be
    replaced (an empty one, or any with ``replace``), False when nothing is there. Raises
    :class:`NotARegularFile` for anything but a regular file, whatever ``replace`` says, and
    FileExistsError for a regular file with data without ``replace``."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(st.st_mode):
        why = "it is a symbolic link: not followed (give the path of the file itself)"
        raise NotARegularFile(errno.EEXIST, why, path)
    if not stat.S_ISREG(st.st_mode):
        kind = _FILE_KINDS.get(stat.S_IFMT(st.st_mode), "something else")
        why = f"it is {kind}, not a regular file: refusing to write to it"
        raise NotARegularFile(errno.EEXIST, why, path)
    if st.st_size > 0 and not replace:
        raise FileExistsError(errno.EEXIST, "the file exists", path)
    return True


def create_file(path: str, *, replace: bool = False) -> tuple[int, str | None]:
    """A new regular file open for writing at ``path``: ``(fd, None)``.

    When a regular file is already there (an empty one, or any with ``replace``), the new file is
    created next to it under a temporary name instead, ``(fd, temporary path)``: the caller
    renames it over ``path`` (``os.replace``) once it holds what must not be lost, or removes it.
    Raises as :func:`check_target` does, or OSError (no such directory, no permission)."""
    try:
        return os.open(path, _CREATE_FLAGS, 0o644), None
    except FileExistsError:
        if not check_target(path, replace=replace):  # gone again since: leave it to the user
            raise FileExistsError(errno.EEXIST, "the file exists", path) from None
    import secrets  # here: it imports hashlib and OpenSSL, which nothing else at start-up needs

    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f".{name}.{secrets.token_hex(8)}.tmp")
    return os.open(temporary, _CREATE_FLAGS, 0o644), temporary


def default_record_path(
    hostname: str, directory: Path | str = ".", when: float | None = None
) -> Path:
    """``DIR/gputui-<hostname>-<YYYYmmdd-HHMMSS>.jsonl.gz``; ``-2``, ``-3``... when taken."""
    host = re.sub(r"[^A-Za-z0-9._-]+", "_", hostname).strip("._") or "host"
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    directory = Path(directory)
    path = directory / f"gputui-{host}-{stamp}.jsonl.gz"
    n = 2
    while os.path.lexists(path):  # a dangling symbolic link takes the name too
        path = directory / f"gputui-{host}-{stamp}-{n}.jsonl.gz"
        n += 1
    return path


def in_directory(name: str, directory: str) -> str:
    """``name`` inside ``directory`` when it is a bare file name (no directory part); a path
    with one (``./x``, ``/tmp/x``, ``runs/x``) is used as given."""
    if os.path.dirname(name) or directory in ("", "."):
        return name
    return os.path.join(directory, name)


__all__ = [
    "NotARegularFile",
    "check_target",
    "create_file",
    "default_record_path",
    "in_directory",
    "os_reason",
]
