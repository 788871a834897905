"""``SimBackend``: a simulated GPU node behind the ordinary :class:`Backend` contract.

Every reading is a pure function of (scenario, seed, elapsed time, processes signalled so far),
where elapsed = ``now - start_time``: reading at t=10 directly equals reading t=1..10 in steps, and
two backends with the same seed and the same ``now`` values agree sample for sample. Scripted
events (:meth:`SimBackend.read_events`) are the one stateful part: each is returned once, by the
first read at or after its moment, stamped with that moment.

Per GPU the activity is a list of :class:`_Segment`: a track (all its live processes composed) that
holds from a start time on. A process starting or being killed opens a new segment; the thermal lag
carries across the boundary as an exponentially decaying offset, so temperature moves gradually
while power changes at once.

A GPU in MIG mode reads as NVML reads it: per-instance memory (``GpuSample.mig_devices``) and
processes tagged with their instance, no utilization for the parent or SM % for its processes,
no encoder / decoder or remapped-row readings; a process's track is its activity within its
instance, scaled to the instance's share of the GPU for power and heat. A worker pool
(:mod:`.pool`) adds its processes and its GPUs' ``pool_load`` on top of the planned processes.
"""

from __future__ import annotations

import math
import signal as _signal
from typing import Any

from gputui.backends.base import Backend, BackendUnavailable
from gputui.backends.sim import workloads as wl
from gputui.backends.sim.hardware import MIB
from gputui.backends.sim.hostsim import HostSim
from gputui.backends.sim.noise import key, smooth8
from gputui.backends.sim.physics import BoardReading
from gputui.backends.sim.plan import GpuPlan, MigPlan, ProcPlan
from gputui.backends.sim.pool import WorkerPool
from gputui.backends.sim.scenarios import SCENARIOS, build
from gputui.backends.sim.topology import LinkReader, build_topology
from gputui.core.model import (
    GpuEvent,
    GpuInfo,
    GpuSample,
    HostSample,
    MigDeviceInfo,
    MigSample,
    NodeInfo,
    ProcessSample,
)

LOST_ERROR = "GPU is lost (fell off the bus)"
WINDOW_S = 1.0
"""Utilization, power and throughput are averages over the last second, like NVML's."""
MEM_RAMP_S = 12.0
"""A process that starts during the simulation grows to its full GPU memory over this long."""
_TERMINATING = frozenset({_signal.SIGTERM, _signal.SIGINT, _signal.SIGKILL})
_NEG_INF = -math.inf
_PCIE_LANE_BYTES_PER_S = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.97e9, 5: 3.94e9}
MIG_SLICES = 7
"""Compute slices of an NVIDIA GPU in MIG mode (A100, H100): an instance's share is slices / 7."""


class _Segment:
    __slots__ = ("energy0", "lag_offset", "start", "track")

    def __init__(self, start: float, track: wl.Track, lag_offset: float, energy0: float) -> None:
        self.start = start
        self.track = track
        self.lag_offset = lag_offset  # actual lagged activity minus the track's, at ``start``
        self.energy0 = energy0  # energy counter at ``start`` (J)


class SimBackend(Backend):
    """A simulated node; see :data:`SCENARIOS` for the choices.

    ``lost_after_s`` sets when the ``faulty`` scenario's GPU falls off the bus.
    """

    enrich_processes = False

    def __init__(
        self,
        scenario: str = "dgx-h100",
        seed: int = 0,
        start_time: float | None = None,
        *,
        lost_after_s: float = 3.0,
    ) -> None:
        if scenario not in SCENARIOS:
            raise BackendUnavailable(
                f"unknown simulated scenario {scenario!r} (choose from: {', '.join(SCENARIOS)})"
            )
        self.scenario = scenario
        self.seed = seed
        self.name = f"sim:{scenario}"
        self.start_time = start_time
        self._head_start = 0.0  # seconds the node had run before its first reading (advance)
        self._plan = build(scenario, seed, lost_after_s=lost_after_s)
        self._gpus = self._plan.gpus
        self._procs: dict[int, ProcPlan] = {p.pid: p for p in self._plan.procs}
        self._by_gpu: list[list[ProcPlan]] = [[] for _ in self._gpus]
        for p in self._plan.procs:
            self._by_gpu[p.gpu].append(p)
        self._instances: dict[str, MigPlan] = {m.uuid: m for g in self._gpus for m in g.mig or ()}
        self._gpu_tracks = {p.pid: self._gpu_track(p) for p in self._plan.procs}
        self._pool = WorkerPool(self._plan, seed) if self._plan.workers else None
        self._killed: dict[int, float] = {}  # pid -> elapsed time of the kill
        self._last_elapsed = 0.0
        self._keys = [key(seed, g.index, 0x6E01) for g in self._gpus]
        self._proc_keys = {p.pid: key(seed, p.pid, 0x9C0C) for p in self._plan.procs}
        self._host = HostSim(self._plan.host, seed)
        self._compose_cache: dict[tuple[int, ...], wl.Track] = {}  # (GPU, PIDs) -> track
        self._segments = [self._build_segments(g) for g in self._gpus]
        self._node: NodeInfo | None = None
        self._events = tuple(sorted(self._plan.events, key=lambda e: e.at_s))
        self._next_event = 0  # events before this one were already returned
        self._topology = build_topology(self._plan)
        self._links = LinkReader(self._plan, self._topology)

    # -- the Backend contract --------------------------------------------------------------------

    def open(self) -> NodeInfo:
        if self._node is None:
            p = self._plan
            self._node = NodeInfo(
                hostname=p.host.hostname,
                backend=self.name,
                gpus=tuple(_info(g) for g in self._gpus),
                driver_version=p.driver_version,
                runtime_version=p.runtime_version,
                library_version=p.library_version,
                topology=self._topology,
                simulated=True,
            )
        return self._node

    def read_gpus(self, now: float, *, slow: bool) -> list[GpuSample]:
        t = self._elapsed(now)
        windows: dict[tuple[int, float], wl.Row | list[float]] = {}  # ranks share a track
        return [self._read_gpu(g, now, t, slow, windows) for g in self._gpus]

    def read_processes(self, now: float) -> list[ProcessSample]:
        t = self._elapsed(now)
        origin = now - t
        out: list[ProcessSample] = []
        pool = self._pool
        pool_util: dict[int, float] = {}
        for g in self._gpus:
            live = self._live(g, t)
            if pool is not None:
                pool_util[g.index] = self._util(g, self._segment(g.index, t), t)
            if not live:
                continue
            seg = self._segment(g.index, t)
            gpu_util = self._util(g, seg, t)
            lo = max(t - WINDOW_S, seg.start)
            own = [p.track.window(lo, t)[wl.UTIL] for p in live]
            total = sum(own)
            for p, u in zip(live, own, strict=True):
                share = gpu_util * u / total if total > 0 else 0.0
                nz = smooth8(self._proc_keys[p.pid], t)
                idle_cpu, busy_cpu = p.cpu_pct
                cpu = idle_cpu + (busy_cpu - idle_cpu) * min(1.0, u / 100.0)
                cpu = max(0.0, cpu * (1.0 + 0.05 * nz[0]) + (0.3 * nz[1] if cpu < 2 else 0.0))
                started = origin - p.age_s if p.start_s is None else origin + p.start_s
                out.append(
                    ProcessSample(
                        pid=p.pid,
                        gpu_index=p.gpu,
                        type=p.type,  # type: ignore[arg-type]
                        gpu_memory_bytes=self._proc_memory(p, t),
                        # NVML has no per-process utilization on a GPU in MIG mode
                        sm_pct=None if p.mig_uuid is not None else float(round(share)),
                        user=p.user,
                        name=p.name,
                        command=p.command,
                        cpu_pct=round(cpu, 1),
                        host_rss_bytes=int(p.rss_bytes * (1.0 + 0.002 * nz[2])),
                        start_time=started,
                        container_id=p.container_id,
                        mig_uuid=p.mig_uuid,
                        container_runtime=p.container_runtime,
                        container_name=p.container_name,
                        slurm_job_id=p.slurm_job_id,
                        slurm_step=p.slurm_step,
                        slurm_job_name=p.slurm_job_name,
                        slurm_job_user=p.slurm_job_user,
                        k8s_pod_uid=p.k8s_pod_uid,
                        k8s_pod_name=p.k8s_pod_name,
                        k8s_namespace=p.k8s_namespace,
                        ppid=p.ppid,
                        parent_name=p.parent_name,
                    )
                )
        out.sort(key=lambda s: (s.gpu_index, s.pid))
        if pool is not None:
            workers = pool.samples(t, origin, pool_util)
            out = sorted(out + workers, key=lambda s: (s.gpu_index, s.pid)) if out else workers
        return out

    def read_events(self, now: float) -> list[GpuEvent]:
        t = self._elapsed(now)
        origin = self.start_time if self.start_time is not None else now - t
        out: list[GpuEvent] = []
        while self._next_event < len(self._events) and self._events[self._next_event].at_s <= t:
            e = self._events[self._next_event]
            self._next_event += 1
            out.append(
                GpuEvent(
                    timestamp=origin + e.at_s,
                    kind=e.kind,
                    gpu_index=e.gpu,
                    code=e.code,
                    message=e.message,
                    source="sim",
                )
            )
        return out

    def read_host(self, now: float) -> HostSample | None:
        t = self._elapsed(now)
        rss = sum(p.rss_bytes for g in self._gpus for p in self._live(g, t))
        if self._pool is not None:
            rss += self._pool.rss_bytes
        return self._host.read(now, t, rss)

    def signal_process(self, pid: int, sig: _signal.Signals) -> None:
        t = self._last_elapsed
        proc = self._procs.get(pid)
        if proc is None and self._pool is not None and self._pool.has(pid, t):
            if sig in _TERMINATING:  # its supervisor starts another worker in its place
                self._pool.kill(pid, t)
            return
        if proc is None or not self._alive(proc, t):
            raise ProcessLookupError(f"[Errno 3] No such process: {pid}")
        if sig in _TERMINATING:
            self._killed[pid] = t
            g = self._gpus[proc.gpu]
            self._segments[g.index] = self._build_segments(g)

    # -- time and processes ----------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        if self.start_time is None:
            self._head_start += seconds
        else:
            self.start_time -= seconds

    def _elapsed(self, now: float) -> float:
        if self.start_time is None:
            self.start_time = now - self._head_start
        t = max(0.0, now - self.start_time)
        if t > self._last_elapsed:
            self._last_elapsed = t
        return t

    def _alive(self, p: ProcPlan, t: float) -> bool:
        if p.start_s is not None and t < p.start_s:
            return False
        killed = self._killed.get(p.pid)
        if killed is not None and t >= killed:
            return False
        lost = self._gpus[p.gpu].lost_after_s
        return lost is None or t < lost

    def _live(self, g: GpuPlan, t: float) -> list[ProcPlan]:
        return [p for p in self._by_gpu[g.index] if self._alive(p, t)]

    def _proc_memory(self, p: ProcPlan, t: float) -> int:
        if p.start_s is None or t - p.start_s >= MEM_RAMP_S:
            return p.gpu_memory_bytes
        frac = (t - p.start_s) / MEM_RAMP_S
        return int(p.gpu_memory_bytes * (0.05 + 0.95 * frac)) // MIB * MIB

    # -- segments --------------------------------------------------------------------------------

    def _gpu_track(self, p: ProcPlan) -> wl.Track:
        """What ``p`` does to its whole GPU: its track, scaled to its MIG instance's share."""
        instance = self._instances.get(p.mig_uuid) if p.mig_uuid is not None else None
        if instance is None:
            return p.track
        return wl.scaled(p.track, instance.slices / MIG_SLICES)

    def _compose(self, g: GpuPlan, procs: list[ProcPlan]) -> wl.Track:
        k = (g.index, *(p.pid for p in procs))
        track = self._compose_cache.get(k)
        if track is None:
            tracks = [self._gpu_tracks[p.pid] for p in procs]
            if g.pool_load is not None:
                tracks.append(g.pool_load)
            track = self._compose_cache[k] = wl.compose(tracks)
        return track

    def _build_segments(self, g: GpuPlan) -> list[_Segment]:
        """Segments from the GPU's process start and kill times (rebuilt after a kill)."""
        procs = self._by_gpu[g.index]
        times = {p.start_s for p in procs if p.start_s is not None}
        times |= {self._killed[p.pid] for p in procs if p.pid in self._killed}
        segments = [_Segment(_NEG_INF, self._compose(g, self._live(g, _NEG_INF)), 0.0, g.energy0_j)]
        for t0 in sorted(times):
            prev = segments[-1]
            track = self._compose(g, self._live(g, t0))
            lag = self._lag(prev, t0)
            energy = self._energy(g, prev, t0)
            segments.append(_Segment(t0, track, lag - track.lagged(t0), energy))
        return segments

    def _segment(self, index: int, t: float) -> _Segment:
        segs = self._segments[index]
        if len(segs) == 1:
            return segs[0]
        for seg in reversed(segs):
            if t >= seg.start:
                return seg
        return segs[0]

    @staticmethod
    def _lag(seg: _Segment, t: float) -> float:
        y = seg.track.lagged(t)
        if seg.lag_offset:
            y += seg.lag_offset * math.exp(-(t - seg.start) / wl.TAU_S)
        return y

    @staticmethod
    def _energy(g: GpuPlan, seg: _Segment, t: float) -> float:
        t0 = max(0.0, seg.start)
        if t <= t0:
            return seg.energy0
        act = seg.track.integral(t, wl.ACT) - seg.track.integral(t0, wl.ACT)
        return seg.energy0 + g.idle_w * (t - t0) + (g.busy_w - g.idle_w) * act

    def _util(self, g: GpuPlan, seg: _Segment, t: float) -> float:
        """GPU utilization as read_gpus reports it (read_processes splits it among processes)."""
        lo = max(t - WINDOW_S, seg.start)
        u = seg.track.window(lo, t)[wl.UTIL]
        return _util_noise(u, smooth8(self._keys[g.index], t)[0])

    # -- one GPU ---------------------------------------------------------------------------------

    def _read_gpu(
        self,
        g: GpuPlan,
        now: float,
        t: float,
        slow: bool,
        windows: dict[tuple[int, float], wl.Row | list[float]],
    ) -> GpuSample:
        if g.lost_after_s is not None and t >= g.lost_after_s:
            return GpuSample(index=g.index, timestamp=now, lost=True, error=LOST_ERROR)
        m = g.model
        seg = self._segment(g.index, t)
        track = seg.track
        lo = max(t - WINDOW_S, seg.start)
        win = windows.get((id(track), lo))
        if win is None:
            win = windows[(id(track), lo)] = track.window(lo, t)
        nz = smooth8(self._keys[g.index], t)
        util = _util_noise(win[wl.UTIL], nz[0])
        act = win[wl.ACT]
        board = BoardReading(g, util, act, self._lag(seg, t), nz)

        live = self._live(g, t)
        instances: tuple[MigSample, ...] = ()
        if g.mig is not None:
            instances = self._instance_samples(g, live, t)
            used = sum(s.memory_used_bytes or 0 for s in instances)
        else:
            used = sum(self._proc_memory(p, t) for p in live)
            workers = self._pool.gpu_memory(g.index, t) if self._pool is not None else 0
            if live or workers:
                used += workers + 5 * MIB  # and the driver's bookkeeping outside them
        total = m.memory_total_mib * MIB
        reserved = m.memory_reserved_mib * MIB if m.memory_reserved_mib is not None else None
        free = total - used - (reserved or 0)
        memu = win[wl.MEMU]
        memu = float(round(min(100.0, max(0.0, memu + nz[3] * min(2.0, memu * 0.1)))))

        kw = {}
        if slow:
            kw = self._slow_fields(g, t, win, nz)
        mig = g.mig is not None  # NVML: no utilization, encoder or decoder reading for the parent
        return GpuSample(
            index=g.index,
            timestamp=now,
            utilization_gpu_pct=None if mig else util,
            utilization_memory_pct=None if mig else memu,
            memory_used_bytes=used,
            memory_free_bytes=free,
            memory_reserved_bytes=reserved,
            power_w=board.power,
            power_limit_w=m.power_default_w,
            energy_j=round(self._energy(g, seg, t), 3),
            temperature_gpu_c=board.temp_gpu,
            temperature_hotspot_c=board.temp_hotspot,
            temperature_memory_c=board.temp_mem,
            fan_pct=board.fan,
            clock_sm_mhz=board.clock_sm,
            clock_memory_mhz=board.clock_mem,
            clock_graphics_mhz=board.clock_sm,
            pstate=board.pstate,
            pcie_gen=g.pcie_gen or m.pcie_gen,
            pcie_width=g.pcie_width or m.pcie_width,
            encoder_pct=float(round(win[wl.ENC])) if m.encoder and not mig else None,
            decoder_pct=float(round(win[wl.DEC])) if m.decoder and not mig else None,
            throttle_reasons=board.reasons,
            mig_devices=instances,
            **kw,
        )

    def _instance_samples(
        self, g: GpuPlan, live: list[ProcPlan], t: float
    ) -> tuple[MigSample, ...]:
        """Memory of each MIG instance of ``g``: its processes' plus the driver's few MiB."""
        held: dict[str, int] = {}
        for p in live:
            if p.mig_uuid is not None:
                held[p.mig_uuid] = held.get(p.mig_uuid, 0) + self._proc_memory(p, t)
        out = []
        for instance in g.mig or ():
            used = held.get(instance.uuid, 0)
            out.append(
                MigSample(
                    uuid=instance.uuid,
                    memory_used_bytes=used + 5 * MIB if used else 0,
                    memory_total_bytes=instance.memory_mib * MIB,
                )
            )
        return tuple(out)

    def _slow_fields(
        self, g: GpuPlan, t: float, win: wl.Row | list[float], nz: list[float]
    ) -> dict[str, Any]:
        m = g.model
        prx = win[wl.PRX] * (1.0 + 0.05 * nz[6])
        if g.pcie_gen is not None:  # a degraded link cannot carry the bursts
            lane = _PCIE_LANE_BYTES_PER_S.get(g.pcie_gen, 0.25e9)
            prx = min(prx, 0.8 * lane * (g.pcie_width or m.pcie_width))
        kw: dict[str, object] = {
            "pcie_rx_bytes_per_s": float(round(prx)),
            "pcie_tx_bytes_per_s": float(round(win[wl.PTX] * (1.0 + 0.05 * nz[6]))),
        }
        if m.nvlink:
            nvl = win[wl.NVL]
            nrx = float(round(nvl * (1.0 + 0.02 * nz[4])))
            ntx = float(round(nvl * (1.0 + 0.02 * nz[5])))
            kw["nvlink_rx_bytes_per_s"] = nrx
            kw["nvlink_tx_bytes_per_s"] = ntx
            kw["links"] = self._links.read(g.index, t, nrx, ntx)  # split over the up links
        else:
            kw["links"] = ()  # PCIe-only boards: no NVLink / XGMI links
        if m.ecc:
            unc = 1 if g.ecc_fault else 0
            corr = 4 if g.ecc_fault else 0
            kw["ecc_volatile_corrected"] = corr
            kw["ecc_volatile_uncorrected"] = unc
            if m.aggregate_ecc:
                kw["ecc_aggregate_corrected"] = g.ecc_aggregate_corrected + corr
                kw["ecc_aggregate_uncorrected"] = unc
        if m.remapped_rows and g.mig is None:  # NotSupported while MIG instances exist
            kw["remapped_rows_correctable"] = 0
            kw["remapped_rows_uncorrectable"] = 1 if g.ecc_fault else 0
            kw["remapped_rows_pending"] = g.ecc_fault
            kw["remapped_rows_failure"] = False
        return kw


def _util_noise(u: float, n: float) -> float:
    """Reported utilization: integer percent, a little jitter away from the 0 and 100 rails."""
    if u <= 0.5:
        return 0.0
    return float(round(min(100.0, max(0.0, u + n * min(1.5, 0.03 * u, 0.03 * (100.0 - u) + 0.5)))))


def _info(g: GpuPlan) -> GpuInfo:
    m = g.model
    return GpuInfo(
        index=g.index,
        name=m.name,
        uuid=g.uuid,
        vendor=m.vendor,  # type: ignore[arg-type]
        pci_bus_id=g.pci_bus_id,
        architecture=m.architecture,
        compute_capability=m.compute_capability,
        sm_count=m.sm_count,
        memory_total_bytes=m.memory_total_mib * MIB,
        power_default_limit_w=m.power_default_w,
        power_min_limit_w=m.power_min_w,
        power_max_limit_w=m.power_max_w,
        sm_clock_max_mhz=m.sm_clock_max_mhz,
        memory_clock_max_mhz=m.memory_clock_max_mhz,
        graphics_clock_max_mhz=m.sm_clock_max_mhz,
        pcie_max_gen=m.pcie_gen,
        pcie_max_width=m.pcie_width,
        pcie_gpu_max_gen=m.pcie_gpu_max_gen,
        temperature_slowdown_c=m.slowdown_c,
        temperature_shutdown_c=m.shutdown_c,
        temperature_hotspot_limit_c=m.hotspot_limit_c,
        temperature_memory_limit_c=m.memory_limit_c,
        fan_count=m.fan_count if m.fan_count else (0 if m.vendor == "nvidia" else None),
        mig_enabled=True if g.mig is not None else m.mig,
        mig_devices=tuple(
            MigDeviceInfo(
                parent_index=g.index,
                gpu_instance_id=instance.gpu_instance_id,
                compute_instance_id=instance.compute_instance_id,
                uuid=instance.uuid,
                name=f"{m.name} MIG {instance.profile}",
                memory_total_bytes=instance.memory_mib * MIB,
                sm_count=instance.sm_count,
            )
            for instance in g.mig or ()
        ),
        ecc_enabled=True if m.ecc else None,
        persistence_mode=m.persistence,
        vbios_version=m.vbios,
        serial=g.serial,
        minor_number=g.index if m.vendor == "nvidia" else None,  # /dev/nvidiaN, as on a real node
    )
