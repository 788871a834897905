"""Session recordings: snapshots (with their findings and events) as JSON lines, optionally gzip.

File format (``docs/recording.md``)::

    {"type": "gputui-recording", "version": 1, "schema_version": 1, "gputui_version": "0.1.0",
     "started": 1700000000.0, "node": {NodeInfo}}                     <- line 1, the header
    {"type": "snapshot", "timestamp": 1700000000.0, "gpus": [...], ...} <- one line per reading

A snapshot line is the encoded snapshot (:func:`gputui.core.codec.encode`) without ``node`` (it is
in the header) and without ``schema_version`` (also in the header), with every field that equals its
default omitted (``null`` values, ``false`` flags, empty lists whose default is empty,
``"driver"`` sources ...). Reading restores the defaults, so a recording is lossless: each snapshot
read back equals the one written.

A name ending in ``.gz`` is written gzip-compressed; each line is flushed (for gzip a
``Z_SYNC_FLUSH``), so a reader sees every complete line of a recording that is still being written.
Readers detect gzip by its magic bytes, not by the name.

Errors name the line: :class:`RecordingError` has ``.line``. A last line without its newline (a
recording being written, or one cut short) and a gzip stream that ends early are not errors:
reading stops after the last complete line.

A recording is input from anywhere: a line over :data:`MAX_LINE_BYTES`, JSON nested too deeply, a
number out of range or gzip data that expands far more than a recording does is an error naming
its line, and memory stays bounded. Writing creates a regular file; it never follows a link.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from gputui import __version__
from gputui.core.codec import decode, encode, migrate
from gputui.core.files import create_file, os_reason
from gputui.core.model import SCHEMA_VERSION, NodeInfo, Snapshot

RECORDING_TYPE = "gputui-recording"
FORMAT_VERSION = 1
"""Version of the line format (header and line types); independent of the snapshot schema."""
DEFAULT_SUFFIX = ".jsonl.gz"
CHUNK_BYTES = 1 << 20
"""Bytes read from the file, and at most decompressed from it, at a time."""
MAX_LINE_BYTES = 16 << 20
"""A longer "line" is not a recording line. A real one is about 33 kB (8 GPUs with 18 NVLinks,
224 cores, 8 processes) and under 1 MiB with 2,000 processes (~300 bytes each): over ten times
the room, while a line's parse (a few times its size in memory) stays bounded."""
MAX_EXPANSION = 250
"""Gzip data expanding more than this many times (past 256 MiB) is not a recording: recordings
compress about 10 times, gzip at most about 1,000 (runs of one byte)."""
_EXPANSION_FLOOR = 256 << 20
MAX_TIMESTAMP = 1e11
"""A reading's timestamp lies within this of 1970 (the year 5138), so it can be shown as a date."""
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_LEVEL = 9


class RecordingError(ValueError):
    """A file that is not a readable recording. ``line`` is the 1-based line at fault."""

    def __init__(self, line: int, message: str, path: str | None = None) -> None:
        self.line = line
        self.reason = message
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(f"{where}line {line}: {message}")


class RecordingWriteError(OSError):
    """Writing failed part-way (a full disk); what was written is still a readable recording."""

    def __str__(self) -> str:
        return f"writing {self.filename} failed: {self.strerror}"


# -- writing --------------------------------------------------------------------------------------


def _open_file(fd: int) -> IO[bytes]:
    """The file object a :class:`Recorder` writes to (unbuffered: each line reaches the file at
    once). Tests replace it to inject a full disk."""
    return os.fdopen(fd, "wb", buffering=0)


def snapshot_line(snapshot: Snapshot) -> str:
    """One recording line (without the newline) for ``snapshot``."""
    data: dict[str, Any] = {"type": "snapshot"}
    data.update(encode(snapshot, omit_defaults=True))
    data.pop("node", None)
    data.pop("schema_version", None)
    return json.dumps(data, separators=(",", ":"), allow_nan=True)


def header_line(node: NodeInfo, started: float) -> str:
    header = {
        "type": RECORDING_TYPE,
        "version": FORMAT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "gputui_version": __version__,
        "started": started,
        "node": encode(node),
    }
    return json.dumps(header, separators=(",", ":"))


class Recorder:
    """Writes snapshots to ``path`` (gzip when it ends in ``.gz``), one flushed line each.

    The file is created by :func:`gputui.core.files.create_file`: an existing file is refused unless
    it is an empty regular file, or a regular file and ``replace`` is set, and then it is replaced
    only once the header is written. Anything else is refused (symbolic links included).

    The header is written with the first snapshot (its node), or at once when ``node`` is given.
    The node is static: a later snapshot's node is not compared with the header's (a backend's
    node does not change while it is open). Thread-safe: :meth:`write` may be a sampler listener
    (polling thread) while another thread calls :meth:`close`.

    OSError when the file cannot be created (nothing is left behind then); RecordingWriteError
    when writing fails part-way (a full disk): writing stops, the file keeps its complete lines."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        node: NodeInfo | None = None,
        started: float | None = None,
        compress: bool | None = None,
        replace: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.compressed = self.path.endswith(".gz") if compress is None else compress
        self._lock = threading.Lock()
        self._header_written = False
        self._bytes = 0
        self.count = 0
        """Snapshots written."""
        self.closed = False
        self.error: RecordingWriteError | None = None
        """Why writing stopped, once it has."""
        self._z: Any = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, 31) if self.compressed else None
        fd, temporary = create_file(self.path, replace=replace)
        self._file = _open_file(fd)
        try:
            if node is not None:
                import time

                self._write_line(header_line(node, time.time() if started is None else started))
                self._header_written = True
            if temporary is not None:
                os.replace(temporary, self.path)  # the old file gives way only now
        except BaseException:
            self.closed = True
            with contextlib.suppress(OSError, ValueError):
                self._file.close()
            with contextlib.suppress(OSError):
                os.unlink(temporary or self.path)  # ours, and nothing worth keeping
            raise

    def _write_line(self, line: str) -> None:
        data = line.encode("utf-8") + b"\n"
        if self._z is not None:  # a sync flush: every complete line can be read at once
            data = self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH)
        self._write_all(data)

    def _write_all(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        view = memoryview(data)
        try:
            while view:
                n = self._file.write(view)
                if not n:  # nothing written and no error: do not spin
                    raise OSError(errno.EIO, os.strerror(errno.EIO))
                self._bytes += n
                view = view[n:]
        except OSError as exc:
            self.error = RecordingWriteError(exc.errno, os_reason(exc), self.path)
            raise self.error from None

    def write(self, snapshot: Snapshot) -> None:
        """Append ``snapshot`` (and the header before the first). RecordingWriteError when
        writing fails; every later call raises it again without writing."""
        with self._lock:
            if self.closed:
                return
            if not self._header_written:
                self._write_line(header_line(snapshot.node, snapshot.timestamp))
                self._header_written = True
            self._write_line(snapshot_line(snapshot))
            self.count += 1

    __call__ = write  # usable as ``sampler.add_listener(recorder)``

    def write_line(self, line: str) -> None:
        """Append a reading already encoded by :func:`snapshot_line` (a ring of recent
        readings keeps them so). Needs the header written (``node`` given); raises as
        :meth:`write` does."""
        with self._lock:
            if self.closed:
                return
            if not self._header_written:
                raise ValueError("write_line needs the header: give the Recorder its node")
            self._write_line(line)
            self.count += 1

    @property
    def bytes_written(self) -> int:
        """Bytes written to the file so far (compressed size for gzip)."""
        with self._lock:
            return self._bytes

    def close(self) -> None:
        """End the gzip stream and close the file (idempotent). RecordingWriteError when ending
        it fails (not again after a failed :meth:`write`: that error was raised then)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                if self._z is not None and self.error is None:
                    self._write_all(self._z.flush(zlib.Z_FINISH))
                if self.error is None:
                    try:
                        self._file.close()
                    except OSError as exc:
                        self.error = RecordingWriteError(exc.errno, os_reason(exc), self.path)
                        raise self.error from None
            finally:
                with contextlib.suppress(OSError, ValueError):
                    self._file.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- reading --------------------------------------------------------------------------------------


class LineSource:
    """The complete lines of a file, plain or gzip, read incrementally: each :meth:`lines` call
    yields the lines completed since the last call, so a file still being written can be followed.
    Text after the last newline is held back (``pending``) until its newline arrives.

    Empty lines are counted but not yielded (line 1 excepted: it must be the header), so a run
    of them costs neither memory nor time per line. Gzip data is decompressed at most
    :data:`CHUNK_BYTES` at a time."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.offset = 0
        """Bytes of the file consumed so far."""
        self.lineno = 0
        """Complete lines read so far (the empty ones included)."""
        self.pending = b""
        self.gzip: bool | None = None
        self.expanded = 0
        """Bytes of gzip data decompressed so far."""
        self._head = b""
        self._z: Any = None
        self.track_chunks = False
        self.chunk_state: tuple[Any, ...] | None = None

    def state(self) -> tuple[Any, ...]:
        """Where this source stands, for :meth:`restore` (cheap: no file data beyond a partial
        line and, for gzip, the decompressor's state)."""
        z = self._z.copy() if self._z is not None else None
        return (self.offset, self.gzip, self._head, z, self.pending, self.lineno, self.expanded)

    @classmethod
    def restore(cls, path: str, state: tuple[Any, ...]) -> LineSource:
        """A source that continues from ``state`` (taken by :meth:`state` on the same file)."""
        source = cls(path)
        offset, source.gzip, source._head, z, source.pending, source.lineno, expanded = state
        source.offset, source.expanded = offset, expanded
        source._z = z.copy() if z is not None else None
        return source

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(line number, line without its newline) for each new complete line. Before each chunk
        is read, ``chunk_state`` is set to :meth:`state`, from which the lines completed in that
        chunk can be read again (see :meth:`restore`)."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            while True:
                self.chunk_state = self.state() if self.track_chunks else None
                raw = f.read(CHUNK_BYTES)
                if not raw:
                    return
                self.offset += len(raw)
                for data in self._decode(raw):
                    yield from self._split(data)

    def _split(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        start, end = 0, len(data)
        while start < end:
            if not self.pending and data[start] == 10 and self.lineno > 0:  # empty lines
                match = _NOT_NEWLINE.search(data, start)
                stop = end if match is None else match.start()
                self.lineno += stop - start
                start = stop
                continue
            newline = data.find(b"\n", start)
            if newline < 0:
                self._hold(data[start:] if start else data)
                return
            line = data[start:newline]
            if self.pending:
                line, self.pending = self.pending + line, b""
            self.lineno += 1
            start = newline + 1
            if len(line) > MAX_LINE_BYTES:
                raise self._too_long()
            yield self.lineno, line

    def _hold(self, part: bytes) -> None:
        self.pending += part
        if len(self.pending) > MAX_LINE_BYTES or (
            self.lineno == 0 and len(self.pending) > CHUNK_BYTES
        ):
            raise self._too_long()

    def _too_long(self) -> RecordingError:
        if self.lineno == 0:
            return RecordingError(1, _not_recording("no line end"), self.path)
        return RecordingError(
            self.lineno + 1,
            f"longer than {MAX_LINE_BYTES >> 20} MiB: not a recording line",
            self.path,
        )

    def _decode(self, raw: bytes) -> Iterator[bytes]:
        if self.gzip is None:
            self._head += raw
            if len(self._head) < len(_GZIP_MAGIC):
                return
            self.gzip = self._head.startswith(_GZIP_MAGIC)
            raw, self._head = self._head, b""
        if not self.gzip:
            yield raw
            return
        while True:
            if self._z is None:
                if not raw.strip(b"\0"):  # the end, or zero padding after the last member
                    break
                self._z = zlib.decompressobj(wbits=31)
            try:
                out = self._z.decompress(raw, CHUNK_BYTES)
            except zlib.error as exc:
                raise RecordingError(
                    self.lineno + 1, f"the gzip data is corrupt ({exc})", self.path
                ) from None
            self.expanded += len(out)
            if self.expanded > _EXPANSION_FLOOR and self.expanded > MAX_EXPANSION * self.offset:
                raise RecordingError(
                    self.lineno + 1,
                    f"the gzip data expands more than {MAX_EXPANSION} times: not a recording",
                    self.path,
                )
            if out:
                yield out
            if self._z.eof:  # end of a gzip member; another may follow (appended recordings)
                raw = self._z.unused_data
                self._z = None
            else:
                raw = self._z.unconsumed_tail
                if not raw and len(out) < CHUNK_BYTES:  # else output may be held: ask again
                    break


_NOT_NEWLINE = re.compile(rb"[^\n]")


def _not_recording(why: str) -> str:
    return f"not a gputui recording ({why})"


@dataclass
class Recording:
    """A recording read back: its header, node and snapshots (in file order)."""

    path: str
    header: dict[str, Any]
    node: NodeInfo
    snapshots: list[Snapshot] = field(default_factory=list)
    truncated: bool = False
    """True when an incomplete last line was left out (a recording being written, or cut)."""

    @property
    def start(self) -> float | None:
        return self.snapshots[0].timestamp if self.snapshots else None

    @property
    def end(self) -> float | None:
        return self.snapshots[-1].timestamp if self.snapshots else None

    @property
    def duration_s(self) -> float:
        if not self.snapshots:
            return 0.0
        return self.snapshots[-1].timestamp - self.snapshots[0].timestamp


class RecordingReader:
    """Reads a recording incrementally: :meth:`read_new` returns the snapshots of the lines
    completed since the last call (the header is read by the first call). Raises
    :class:`RecordingError` naming the line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.source = LineSource(self.path)
        self.header: dict[str, Any] | None = None
        self.node: NodeInfo | None = None
        self.schema_version = SCHEMA_VERSION
        """The snapshot schema the recording was written with (older ones are migrated)."""
        self._raw_node: dict[str, Any] = {}

    def read_new(self) -> list[Snapshot]:
        out: list[Snapshot] = []
        for lineno, raw in self.source.lines():
            if lineno == 1:
                self.parse_header(raw)
                continue
            snapshot = self.parse_line(lineno, raw)
            if snapshot is not None:
                out.append(snapshot)
        return out

    @property
    def truncated(self) -> bool:
        """Whether text after the last complete line is being held back."""
        return bool(self.source.pending.strip())

    def finish(self) -> Snapshot | None:
        """The held-back last line, if it happens to be a complete snapshot without its newline
        (an edited file); None when it is a truncated line (which is not an error)."""
        raw = self.source.pending
        if self.header is None or not raw.strip():
            return None
        try:
            snapshot = self.parse_line(self.source.lineno + 1, raw)
        except RecordingError:
            return None
        if snapshot is not None:
            self.source.pending = b""
        return snapshot

    def _json(self, lineno: int, raw: bytes) -> Any:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            if lineno == 1:
                raise RecordingError(1, _not_recording("binary data"), self.path) from None
            raise RecordingError(lineno, "not UTF-8 text", self.path) from None
        try:
            if _LONG_NUMBER not in raw.translate(_DIGITS_AS_ZERO):
                return json.loads(text, parse_constant=_constant)
            return json.loads(  # slower: every number is checked
                text, parse_float=_finite, parse_int=_integer, parse_constant=_constant
            )
        except RecursionError:
            why = "JSON nested too deeply"
        except _OutOfRange as exc:
            why = str(exc)
        except ValueError as exc:  # JSONDecodeError, an integer of too many digits
            if lineno == 1:
                raise RecordingError(1, _not_recording("not JSON"), self.path) from None
            why = f"bad JSON: {exc}"
        raise RecordingError(lineno, why if lineno > 1 else _not_recording(why), self.path)

    def parse_header(self, raw: bytes) -> None:
        data = self._json(1, raw)
        if not isinstance(data, dict) or data.get("type") != RECORDING_TYPE:
            raise RecordingError(1, _not_recording(f"no {RECORDING_TYPE!r} header"), self.path)
        version = data.get("version")
        if version != FORMAT_VERSION:
            raise RecordingError(
                1,
                f"recording format version {_brief(version)} is not supported "
                f"(this gputui reads version {FORMAT_VERSION})",
                self.path,
            )
        schema = data.get("schema_version")
        if type(schema) is not int or schema > SCHEMA_VERSION or schema < 1:
            raise RecordingError(
                1,
                f"snapshot schema {_brief(schema)} is not supported (this gputui reads 1 to "
                f"{SCHEMA_VERSION}); recorded by gputui {_brief(data.get('gputui_version', '?'))}",
                self.path,
            )
        node = data.get("node")
        if not isinstance(node, dict):
            raise RecordingError(1, "the header has no node", self.path)
        self.schema_version = schema
        self._raw_node = node
        try:
            if schema != SCHEMA_VERSION:
                node = migrate({"node": node}, schema)["node"]
            self.node = decode(NodeInfo, node)
        except _MISFITS as exc:
            raise RecordingError(
                1, f"the header's node does not fit the schema: {_reason(exc)}", self.path
            ) from None
        self.header = data

    def parse_line(self, lineno: int, raw: bytes) -> Snapshot | None:
        if not raw.strip():
            return None  # a blank line
        data = self._json(lineno, raw)
        if not isinstance(data, dict):
            raise RecordingError(lineno, "a line must be a JSON object", self.path)
        kind = data.pop("type", None)
        if kind != "snapshot":
            if isinstance(kind, str):
                return None  # a line type from a later gputui: skipped
            raise RecordingError(lineno, "a line without a 'type'", self.path)
        try:
            if self.schema_version != SCHEMA_VERSION:
                data = migrate({**data, "node": self._raw_node}, self.schema_version)
            return decode_snapshot(data, self.node)
        except _MISFITS as exc:
            raise RecordingError(
                lineno, f"the snapshot does not fit the schema: {_reason(exc)}", self.path
            ) from None


_TIMESTAMP_PREFIX = re.compile(rb'^\{"type":"snapshot","timestamp":(-?[0-9][0-9.eE+-]*)[,}]')


def line_timestamp(reader: RecordingReader, lineno: int, raw: bytes) -> float | None:
    """The timestamp of a snapshot line without decoding all of it (lines written by
    :class:`Recorder` start with it); None for a line that is not a snapshot. Raises
    :class:`RecordingError` for a line that is not valid (when it has to be parsed in full)."""
    match = _TIMESTAMP_PREFIX.match(raw)
    if match is not None:
        try:
            timestamp = float(match.group(1))
        except ValueError:
            pass
        else:
            if _valid_timestamp(timestamp):
                return timestamp
            # out of range: the full parse below says why, naming the line
    snapshot = reader.parse_line(lineno, raw)
    return None if snapshot is None else snapshot.timestamp


def decode_snapshot(data: dict[str, Any], node: NodeInfo | None) -> Snapshot:
    """A snapshot from a recording line's object (without ``type``, of the current schema);
    ValueError (:class:`~gputui.core.codec.CodecError` naming the field) when it does not fit."""
    timestamp = data.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        raise ValueError("'timestamp' must be a number")
    if not _valid_timestamp(timestamp):
        raise ValueError(f"'timestamp' {timestamp!r} is not a time (seconds since 1970)")
    for name in ("gpus", "processes", "findings", "events"):
        value = data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ValueError(f"{name!r} must be a list of objects")
    host = data.get("host")
    if host is not None and not isinstance(host, dict):
        raise ValueError("'host' must be an object")
    data.pop("node", None)
    data.pop("schema_version", None)
    if node is None:
        raise ValueError("a reading before the recording's header")
    return decode(Snapshot, data, node=node)


_MISFITS = (ValueError, TypeError, KeyError, AttributeError, ArithmeticError)
"""What decoding (CodecError, a ValueError naming the field) or a migration step (anything a
step does with a value of an unexpected kind) raises for data that does not fit."""


def _reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"


def _valid_timestamp(value: float) -> bool:
    return math.isfinite(value) and -MAX_TIMESTAMP <= value <= MAX_TIMESTAMP


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 300
"""A run of 300 digits: maybe an integer past any float, which no reading holds. A line with one
is parsed with every number checked (a few times slower); ``Infinity`` is refused in every line,
at no cost. A float literal past 1e308 parses as an infinity: the snapshot's timestamp must be
finite, and :mod:`gputui.core.format` shows any other infinity as n/a."""


class _OutOfRange(ValueError):
    pass


def _finite(text: str) -> float:
    if math.isfinite(value := float(text)):
        return value
    raise _OutOfRange(f"a number out of range: {text[:40]}")


def _integer(text: str) -> int:
    if len(text) < 300:
        return int(text)
    raise _OutOfRange(f"a number out of range: {text[:40]}... ({len(text)} digits)")


def _constant(text: str) -> float:
    if text == "NaN":  # written for a value not read (allow_nan)
        return math.nan
    raise _OutOfRange(f"a number out of range: {text}")


def _brief(value: object) -> str:
    """A header value for a message: short, whatever the file holds."""
    if value is None or isinstance(value, (bool, int, float)):
        text = repr(value)
        return text if len(text) <= 40 else text[:40] + "..."
    if isinstance(value, str):
        return repr(value[:40] + ("..." if len(value) > 40 else ""))
    return f"<{type(value).__name__}>"


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """Read a whole recording. Raises OSError when the file cannot be read and
    :class:`RecordingError` (naming the line) when it is not a readable recording; an incomplete
    last line is left out (``Recording.truncated``)."""
    reader = RecordingReader(path)
    snapshots = reader.read_new()
    last = reader.finish()
    if last is not None:
        snapshots.append(last)
    if reader.header is None or reader.node is None:
        why = "empty file" if reader.source.offset == 0 else "no complete header line"
        raise RecordingError(1, _not_recording(why), reader.path)
    return Recording(
        path=reader.path,
        header=reader.header,
        node=reader.node,
        snapshots=snapshots,
        truncated=reader.truncated,
    )


# -- durations and times --------------------------------------------------------------------------

_DURATION = re.compile(
    r"^\s*(?:(?P<h>\d+(?:\.\d+)?)h)?\s*(?:(?P<m>\d+(?:\.\d+)?)m)?\s*(?:(?P<s>\d+(?:\.\d+)?)s?)?\s*$"
)


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``10m``, ``1h``, ``1h30m``, ``1m30s``, ``2.5``; ValueError
    otherwise."""
    match = _DURATION.match(text.lower())
    if not text.strip() or match is None or not any(match.groupdict().values()):
        raise ValueError(f"{text!r} is not a duration (e.g. 90, 30s, 10m, 1h, 1h30m)")
    h, m, s = (float(match.group(k) or 0) for k in ("h", "m", "s"))
    if match.group("s") and not text.strip().lower().endswith("s") and (match.group("h") or m):
        # "1h30" is ambiguous (minutes?): ask for a unit
        raise ValueError(f"{text!r} is not a duration: give the last number a unit (s, m or h)")
    return h * 3600 + m * 60 + s


def fmt_size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


__all__ = [
    "DEFAULT_SUFFIX",
    "FORMAT_VERSION",
    "RECORDING_TYPE",
    "LineSource",
    "Recorder",
    "Recording",
    "RecordingError",
    "RecordingReader",
    "decode_snapshot",
    "fmt_size",
    "line_timestamp",
    "parse_duration",
    "read_recording",
    "snapshot_line",
]
