"""The fake ``pynvml`` (tests/fakes/fake_pynvml.py) against the real nvidia-ml-py binding: its
names, parameters and types, and field values decoded the way the binding decodes them."""

from __future__ import annotations

import ctypes
import inspect

import pynvml
import pytest
from tests.fakes.fake_pynvml import (
    FakeGpu,
    FakeMig,
    FakeNvml,
    make_fake_nvml,
)

pytestmark = pytest.mark.usefixtures("nvml_backends")


# -- the fake itself ------------------------------------------------------------------------------


def test_fake_mirrors_the_real_binding_names_and_parameters() -> None:
    own = [
        name
        for name, value in vars(FakeNvml).items()
        if name.startswith("nvml") and inspect.isfunction(value)
    ]
    assert len(own) > 60
    for name in own:
        assert hasattr(pynvml, name), name
        real = list(inspect.signature(getattr(pynvml, name)).parameters)
        fake = list(inspect.signature(getattr(FakeNvml, name)).parameters)[1:]  # drop self
        assert fake == real, name
    assert FakeNvml.NVMLError_GpuIsLost is pynvml.NVMLError_GpuIsLost
    assert FakeNvml.nvmlMemory_v2 == pynvml.nvmlMemory_v2


def test_fake_returns_the_real_types() -> None:
    fake = make_fake_nvml([FakeGpu(mig_mode=1, migs=[FakeMig(1)])])
    fake.nvmlInit()
    h = fake.nvmlDeviceGetHandleByIndex(0)
    mig = fake.nvmlDeviceGetMigDeviceHandleByIndex(h, 0)
    assert isinstance(fake.nvmlDeviceIsMigDeviceHandle(mig), ctypes.c_uint)
    assert fake.nvmlDeviceIsMigDeviceHandle(mig).value == 1
    assert isinstance(fake.nvmlDeviceGetMemoryInfo(h), pynvml.c_nvmlMemory_t)
    values = fake.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_MEMORY_TEMP, (139, 0xFFFFFFFF)])
    assert isinstance(values[0], pynvml.c_nvmlFieldValue_t)
    assert values[1].scopeId == 0xFFFFFFFF
    with pytest.raises(pynvml.NVMLError_NotFound):
        fake.nvmlDeviceGetMigDeviceHandleByIndex(h, 3)


def test_field_values_unpacked_from_bytes_match_the_binding() -> None:
    """The one-pass byte decoding of nvmlFieldValue_t entries reads what the binding's own
    attributes say, for every value type (and None for a type NVML may add later)."""
    import pynvml

    from gputui.backends.nvml.fields import _decode, _decode_attributes

    members = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
    samples = (1234.5, 4_000_000_000, 2**40 + 3, 2**63 + 5, -(2**40), -7, 65_000)
    entries = (pynvml.c_nvmlFieldValue_t * 9)()
    for i, (member, value) in enumerate(zip(members, samples, strict=True)):
        entries[i].fieldId, entries[i].scopeId = 100 + i, i
        entries[i].valueType = i
        entries[i].nvmlReturn = i % 2 * 3
        setattr(entries[i].value, member, value)
    entries[7].valueType, entries[7].nvmlReturn = 42, 0
    entries[8].valueType, entries[8].nvmlReturn = 0, 15
    decoded = list(_decode(entries))
    assert decoded == list(_decode_attributes(entries))
    assert decoded[:7] == [(i % 2 * 3, v) for i, v in enumerate(samples)]
    assert decoded[7] == (0, None)
    assert decoded[8][0] == 15
