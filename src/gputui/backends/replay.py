"""``ReplayBackend``: a recording (:mod:`gputui.core.record`) played back behind the Backend
contract.

The backend owns the replay clock and offers it as its :attr:`playback`
(:class:`gputui.core.playback.Playback`), which the sampler reads, so each snapshot carries the
recorded time of the reading it replays.
The position moves with wall time x ``speed`` while playing and stops at the end; the UI moves it
with :meth:`ReplayBackend.seek` / :meth:`~ReplayBackend.seek_relative`, :meth:`set_speed` and
:meth:`set_paused` (all thread-safe).

A recording of a day at 1 s is 86,400 readings, too many to hold decoded in memory, so ``open()``
only indexes the file (each reading's timestamp and where its line can be read again, including
gzip decompressor checkpoints) and readings are decoded when asked for, with a small cache. A line
that turns out not to fit the schema raises :class:`~gputui.core.record.RecordingError` naming the
line when it is reached. A file that grows (a recording still being written) is followed: at the end
of the recording, each read picks up the lines completed since.
"""

from __future__ import annotations

import bisect
import os
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from gputui.backends.base import Backend, BackendUnavailable
from gputui.core.model import (
    Finding,
    GpuEvent,
    GpuSample,
    HostSample,
    NodeInfo,
    ProcessSample,
    Snapshot,
)
from gputui.core.playback import Playback, clamp_speed
from gputui.core.record import LineSource, RecordingError, RecordingReader, line_timestamp

CACHE_SNAPSHOTS = 32


class ReplayBackend(Backend):
    """Plays back the recording at ``path``. ``monotonic`` is the wall clock that drives playback
    (tests pass a fake)."""

    enrich_processes = False

    @property
    def playback(self) -> Playback:
        return self

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        speed: float = 1.0,
        start_paused: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = os.fspath(path)
        self.name = f"replay:{os.path.basename(self.path)}"
        self._monotonic = monotonic
        self._lock = threading.RLock()
        self._speed = clamp_speed(speed)
        self._paused = start_paused
        self._reader: RecordingReader | None = None
        self.node: NodeInfo | None = None
        # The index, sorted by time: timestamps, line numbers, and the chunk state to re-read from.
        self._times: list[float] = []
        self._lines: list[int] = []
        self._states: list[tuple[Any, ...]] = []
        self._cache: OrderedDict[int, Snapshot] = OrderedDict()
        self._chunk: tuple[int, dict[int, bytes]] | None = None
        self._anchor_pos = 0.0
        self._anchor_wall = 0.0
        self._last_events_at: float | None = None
        self._size = -1

    # -- Backend ---------------------------------------------------------------------------------

    def open(self) -> NodeInfo:
        """Index the recording; returns the recorded node. BackendUnavailable (naming the line)
        when the file is missing, not a recording, or has no readings."""
        with self._lock:
            self._reader = RecordingReader(self.path)
            self._reader.source.track_chunks = True
            try:
                self._index_new_lines()
            except RecordingError as exc:
                raise BackendUnavailable(str(exc)) from None
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise BackendUnavailable(f"cannot read {self.path}: {reason}") from None
            if self._reader.header is None or self._reader.node is None:
                source = self._reader.source
                why = "empty file" if source.offset == 0 else "no complete header line"
                raise BackendUnavailable(f"{self.path}: line 1: not a gputui recording ({why})")
            if not self._times:
                raise BackendUnavailable(f"{self.path}: the recording has no readings yet")
            self.node = self._reader.node
            self._anchor_pos = self._times[0]
            self._anchor_wall = self._monotonic()
            return self.node

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        """The recorded GPU samples of the last reading at or before ``now`` (slow fields too)."""
        with self._lock:
            if self.at_end:
                self.reload()
            return list(self.snapshot_at(now).gpus)

    def read_processes(self, now: float) -> list[ProcessSample]:
        return list(self.snapshot_at(now).processes)

    def read_host(self, now: float) -> HostSample | None:
        return self.snapshot_at(now).host

    def read_events(self, now: float) -> list[GpuEvent]:
        """Events recorded with the readings in (previous ``now``, ``now``]; each once while
        playing forward, none after a backward seek."""
        with self._lock:
            last = self._last_events_at
            self._last_events_at = now
            if last is None:  # the first read: the events of the reading at ``now``
                lo = self._index_at(now)
            elif now <= last:
                return []
            else:
                lo = bisect.bisect_right(self._times, last)
            hi = bisect.bisect_right(self._times, now)
            events: list[GpuEvent] = []
            for i in range(lo, hi):
                if b'"events":' in self._raw(i):  # no events: the key is left out
                    events.extend(self._snapshot(i).events)
            return events

    def signal_process(self, pid: int, sig: signal.Signals) -> None:
        raise PermissionError("a replay cannot signal processes")

    def close(self) -> None:
        with self._lock:
            self._cache.clear()
            self._chunk = None

    # -- the recording ---------------------------------------------------------------------------

    def snapshot_at(self, timestamp: float) -> Snapshot:
        """The recorded reading at or before ``timestamp`` (the first one before the start)."""
        with self._lock:
            return self._snapshot(self._index_at(timestamp))

    def findings_at(self, timestamp: float) -> tuple[Finding, ...]:
        return self.snapshot_at(timestamp).findings

    @property
    def readings(self) -> int:
        """Readings in the recording (so far)."""
        with self._lock:
            return len(self._times)

    def snapshots(self) -> Iterator[Snapshot]:
        """Every reading in time order (decoded one at a time)."""
        for i in range(self.readings):
            with self._lock:
                yield self._snapshot(i)

    def timestamps(self) -> list[float]:
        with self._lock:
            return list(self._times)

    def reload(self) -> int:
        """Index lines written since the last look (a recording still being written); returns
        how many readings were added. Cheap when the file has not grown."""
        with self._lock:
            try:
                size = os.stat(self.path).st_size
            except OSError:
                return 0
            if size == self._size:
                return 0
            before = len(self._times)
            self._index_new_lines()
            return len(self._times) - before

    def _index_new_lines(self) -> None:
        reader = self._reader
        assert reader is not None
        source = reader.source
        try:
            self._size = os.stat(self.path).st_size
        except OSError:
            self._size = -1
        for lineno, raw in source.lines():
            if lineno == 1:
                reader.parse_header(raw)
                continue
            ts = line_timestamp(reader, lineno, raw)
            if ts is None:
                continue
            state = source.chunk_state
            assert state is not None
            if self._times and ts < self._times[-1]:  # the clock went back: keep time order
                i = bisect.bisect_right(self._times, ts)
            else:
                i = len(self._times)
            self._times.insert(i, ts)
            self._lines.insert(i, lineno)
            self._states.insert(i, state)
            if self._chunk is not None and self._chunk[0] == id(state):
                self._chunk[1][lineno] = raw

    def _index_at(self, timestamp: float) -> int:
        return max(bisect.bisect_right(self._times, timestamp) - 1, 0)

    def _raw(self, i: int) -> bytes:
        """The line of reading ``i``, re-read from its chunk (the last chunk is kept)."""
        lineno = self._lines[i]
        state = self._states[i]
        if self._chunk is None or self._chunk[0] != id(state):
            lines: dict[int, bytes] = {}
            source = LineSource.restore(self.path, state)
            last_in_chunk = self._last_line_of_chunk(i)
            for n, raw in source.lines():
                lines[n] = raw
                if n >= last_in_chunk:
                    break
            self._chunk = (id(state), lines)
        found = self._chunk[1].get(lineno)
        if found is None:
            raise RecordingError(lineno, "the line changed since it was read", self.path)
        return found

    def _last_line_of_chunk(self, i: int) -> int:
        state = self._states[i]
        last = self._lines[i]
        # Readings of a chunk are adjacent in the index unless the clock went back.
        for j in range(i + 1, len(self._states)):
            if self._states[j] is not state:
                break
            last = max(last, self._lines[j])
        return last

    def _snapshot(self, i: int) -> Snapshot:
        lineno = self._lines[i]
        snapshot = self._cache.get(lineno)
        if snapshot is not None:
            self._cache.move_to_end(lineno)
            return snapshot
        assert self._reader is not None
        snapshot = self._reader.parse_line(lineno, self._raw(i))
        if snapshot is None:  # a line indexed by its start, whose whole says another type
            raise RecordingError(lineno, "not a snapshot line", self.path)
        if snapshot.timestamp != self._times[i]:  # a second "timestamp" later in the line
            raise RecordingError(lineno, "the line has two different timestamps", self.path)
        self._cache[lineno] = snapshot
        if len(self._cache) > CACHE_SNAPSHOTS:
            self._cache.popitem(last=False)
        return snapshot

    # -- the replay clock and controls (thread-safe) ----------------------------------------------

    @property
    def start(self) -> float:
        with self._lock:
            return self._times[0] if self._times else 0.0

    @property
    def end(self) -> float:
        with self._lock:
            return self._times[-1] if self._times else 0.0

    @property
    def duration_s(self) -> float:
        with self._lock:
            return self.end - self.start

    @property
    def position(self) -> float:
        """The replay position, a recorded timestamp between :attr:`start` and :attr:`end`."""
        with self._lock:
            if self._paused:
                return self._anchor_pos
            wall = self._monotonic()
            pos = self._anchor_pos + (wall - self._anchor_wall) * self._speed
            end = self.end
            if pos >= end:  # stop at the end (and go on from there if the file grows)
                self._anchor_pos, self._anchor_wall = end, wall
                return end
            return pos

    def clock(self) -> float:
        """The sampler's clock: the timestamp of the recorded reading at the position."""
        with self._lock:
            if not self._times:
                return 0.0
            return self._times[self._index_at(self.position)]

    @property
    def at_end(self) -> bool:
        with self._lock:
            return self.position >= self.end

    def seek(self, timestamp: float) -> float:
        """Move to ``timestamp`` (clamped to the recording); returns the new position."""
        with self._lock:
            pos = _clamp(timestamp, self.start, self.end)
            self._anchor_pos, self._anchor_wall = pos, self._monotonic()
            return pos

    def seek_relative(self, seconds: float) -> float:
        """Move ``seconds`` forward (negative: back), clamped; returns the new position."""
        with self._lock:
            return self.seek(self.position + seconds)

    @property
    def speed(self) -> float:
        with self._lock:
            return self._speed

    def set_speed(self, speed: float) -> float:
        """Playback speed, clamped to 0.25 - 64; returns the speed set."""
        with self._lock:
            self._anchor_pos, self._anchor_wall = self.position, self._monotonic()
            self._speed = clamp_speed(speed)
            return self._speed

    @property
    def paused(self) -> bool:
        with self._lock:
            return self._paused

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self._anchor_pos, self._anchor_wall = self.position, self._monotonic()
            self._paused = paused


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


__all__ = ["ReplayBackend"]
