"""Driver events (gputui.backends.nvml.events): XID and double-bit ECC events registered once per
GPU, delivered by one thread, and that thread surviving errors and stopping cleanly."""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable

import pynvml
import pytest
from tests.factories import open_nvml
from tests.fakes.fake_pynvml import (
    FakeGpu,
    NVMLError_GpuIsLost,
    NVMLError_NoPermission,
    NVMLError_Timeout,
    make_fake_nvml,
)

from gputui.backends.nvml import (
    NvmlBackend,
)
from gputui.core.model import GpuEvent

pytestmark = pytest.mark.usefixtures("nvml_backends")


# -- driver events --------------------------------------------------------------------------------


def event_thread(backend: NvmlBackend) -> threading.Thread | None:
    watcher = backend._events
    return watcher.thread if watcher is not None else None


def wait_for(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def events_until(backend: NvmlBackend, count: int, timeout: float = 2.0) -> list[GpuEvent]:
    """Poll read_events until ``count`` events came (deadline ``timeout``)."""
    events: list[GpuEvent] = []
    deadline = time.monotonic() + timeout
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {events} arrived"
        events += backend.read_events(time.time())
        time.sleep(0.002)
    return events


XID = pynvml.nvmlEventTypeXidCriticalError
DBE = pynvml.nvmlEventTypeDoubleBitEccError


def test_events_register_xid_and_dbe_on_every_gpu_with_one_set_and_one_thread() -> None:
    backend, fake = open_nvml(3)
    (event_set,) = fake.event_sets
    assert event_set.registered == {0: XID | DBE, 1: XID | DBE, 2: XID | DBE}
    thread = event_thread(backend)
    assert thread is not None and thread.daemon and thread.is_alive()
    assert sum(t.name == "gputui-nvml-events" and t is thread for t in threading.enumerate()) == 1


def test_events_mask_is_limited_to_what_each_gpu_supports() -> None:
    _backend, fake = open_nvml([FakeGpu(supported_event_types=XID), FakeGpu()])
    assert fake.event_sets[0].registered == {0: XID, 1: XID | DBE}


def test_xid_event_arrives_with_gpu_index_and_code() -> None:
    backend, fake = open_nvml(4)
    assert fake.emit_event(2, XID, 79) == 1
    (event,) = events_until(backend, 1)
    assert event.kind == "xid" and event.gpu_index == 2 and event.code == 79
    assert event.source == "driver" and event.message is None
    assert abs(event.timestamp - time.time()) < 5


def test_double_bit_ecc_event_arrives() -> None:
    backend, fake = open_nvml(2)
    fake.emit_event(1, DBE)
    fake.emit_event(0, XID, 48)
    first, second = events_until(backend, 2)
    assert (first.kind, first.gpu_index, first.code) == ("ecc_double_bit", 1, None)
    assert (second.kind, second.gpu_index, second.code) == ("xid", 0, 48)


def test_read_events_never_blocks_and_is_empty_when_nothing_came() -> None:
    backend, fake = open_nvml(1)
    started = time.monotonic()
    for _ in range(50):
        assert backend.read_events(time.time()) == []
    assert time.monotonic() - started < 0.1
    fake.emit_event(0, XID, 13)
    assert len(events_until(backend, 1)) == 1
    assert backend.read_events(time.time()) == []  # each event once


def test_events_not_registered_are_not_delivered() -> None:
    backend, fake = open_nvml([FakeGpu(supported_event_types=XID)])
    assert fake.emit_event(0, DBE) == 0
    fake.emit_event(0, XID, 31)
    assert [e.code for e in events_until(backend, 1)] == [31]


@pytest.mark.parametrize(
    "knobs",
    [
        {"missing": {"nvmlEventSetCreate"}},
        {"absent": {"nvmlEventSetCreate"}},
        {"absent": {"nvmlEventSetWait"}},
        {"errors": {"nvmlDeviceRegisterEvents": NVMLError_NoPermission}},
        {"missing": {"nvmlDeviceGetSupportedEventTypes"}},
        {"gpus": [FakeGpu(supported_event_types=0)]},
        {"gpus": [FakeGpu(unsupported={"nvmlDeviceRegisterEvents"})]},
        {"gpus": [FakeGpu(all_unsupported=True)]},
    ],
)
def test_unsupported_event_api_means_no_thread_and_reads_still_work(knobs: dict) -> None:
    gpus = knobs.pop("gpus", 1)
    backend, fake = open_nvml(gpus, **knobs)
    assert event_thread(backend) is None
    assert all(s.freed for s in fake.event_sets)
    assert backend.read_events(time.time()) == []
    (sample,) = backend.read_gpus(time.time(), slow=True)
    assert not sample.lost
    backend.close()
    assert fake.initialized == 0


def test_events_skip_a_gpu_that_cannot_register() -> None:
    gpus = [FakeGpu(errors={"nvmlDeviceRegisterEvents": NVMLError_NoPermission}), FakeGpu()]
    backend, fake = open_nvml(gpus)
    assert fake.event_sets[0].registered == {1: XID | DBE}
    fake.emit_event(1, XID, 94)
    assert [(e.gpu_index, e.code) for e in events_until(backend, 1)] == [(1, 94)]


def test_events_skip_a_gpu_lost_at_open() -> None:
    _backend, fake = open_nvml([FakeGpu(lost=True), FakeGpu()])
    assert fake.event_sets[0].registered == {1: XID | DBE}


def test_close_stops_the_thread_then_frees_the_set_then_shuts_down() -> None:
    backend, fake = open_nvml(2)
    thread = event_thread(backend)
    assert thread is not None and thread.is_alive()
    backend.close()
    assert not thread.is_alive()
    (event_set,) = fake.event_sets
    assert event_set.freed
    names = [name for name, *_ in fake.log]
    assert names.index("nvmlEventSetFree") < names.index("nvmlShutdown")
    assert names[names.index("nvmlEventSetFree") :].count("nvmlEventSetWait") == 0
    assert fake.initialized == 0
    assert backend.read_events(time.time()) == []
    backend.close()
    assert fake.calls["nvmlEventSetFree"] == 1


def test_close_is_prompt_with_the_default_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NvmlBackend, "event_wait_ms", 500)
    backend, fake = open_nvml(1)
    wait_for(lambda: fake.calls["nvmlEventSetWait"] >= 1)
    started = time.monotonic()
    backend.close()
    assert time.monotonic() - started < 1.0
    assert fake.event_sets[0].freed


def test_event_thread_survives_a_timeout_storm() -> None:
    backend, fake = open_nvml(1)
    fake.emit_wait_error(NVMLError_Timeout, 2000)
    fake.emit_event(0, XID, 62)
    (event,) = events_until(backend, 1)
    assert event.code == 62
    assert fake.calls["nvmlEventSetWait"] > 2000
    thread = event_thread(backend)
    assert thread is not None and thread.is_alive()


def test_event_thread_keeps_watching_after_gpu_lost_and_other_nvml_errors() -> None:
    backend, fake = open_nvml(2)
    fake.emit_wait_error(NVMLError_GpuIsLost, 3)
    fake.emit_wait_error(pynvml.NVMLError_Unknown)
    fake.emit_event(1, XID, 79)
    (event,) = events_until(backend, 1)
    assert (event.gpu_index, event.code) == (1, 79)
    assert event_thread(backend).is_alive()


def test_event_thread_stops_quietly_on_a_binding_bug() -> None:
    backend, fake = open_nvml(1)
    fake.emit_wait_error(RuntimeError("binding bug"))
    fake.emit_event(0, XID, 79)
    wait_for(lambda: not event_thread(backend).is_alive())
    assert backend.read_events(time.time()) == []
    backend.close()
    assert fake.event_sets[0].freed


def test_event_thread_stops_when_nvml_is_uninitialized() -> None:
    backend, fake = open_nvml(1)
    fake.emit_wait_error(pynvml.NVMLError_Uninitialized)
    wait_for(lambda: not event_thread(backend).is_alive())
    backend.close()
    assert fake.event_sets[0].freed and fake.initialized == 0


def test_event_device_maps_by_uuid_to_the_gpu_index() -> None:
    backend, fake = open_nvml(3)
    for index in (2, 0, 1):
        fake.emit_event(index, DBE)
    assert [e.gpu_index for e in events_until(backend, 3)] == [2, 0, 1]


def test_real_ctypes_handles_map_by_pointer_value_without_a_uuid_call() -> None:
    from gputui.backends.nvml import _address, _EventWatcher, _Gpu

    def handle(address: int):
        return ctypes.cast(ctypes.c_void_p(address), pynvml.c_nvmlDevice_t)

    assert _address(handle(0x1234)) == 0x1234
    assert _address(pynvml.c_nvmlDevice_t()) is None
    assert _address(object()) is None
    nvml = make_fake_nvml(2)
    gpus = [_Gpu(index=i, handle=handle(0x1000 + i)) for i in range(2)]
    watcher = _EventWatcher(nvml, object(), gpus, 20)
    data = pynvml.c_nvmlEventData_t(device=handle(0x1001), eventType=XID, eventData=45)
    event = watcher._event(data)
    assert (event.kind, event.gpu_index, event.code) == ("xid", 1, 45)
    assert nvml.calls["nvmlDeviceGetUUID"] == 0
