"""The helpers the vendor adapters share: counter rates, the unsupported-call memory, and the PCI
bus id parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputui.backends.common import CounterRates, UnsupportedCalls
from gputui.core.pci import (
    PciAddress,
    canonical_pci_bus_id,
    local_cpulist,
    parse_pci_bus_id,
    pci_device_key,
)

# -- CounterRates ---------------------------------------------------------------------------------


def test_first_reading_has_no_rate() -> None:
    rates: CounterRates[str] = CounterRates()
    assert rates.rate("tx", 1000, 10.0) is None
    assert "tx" in rates


def test_steady_rate_per_second() -> None:
    rates: CounterRates[str] = CounterRates()
    rates.rate("tx", 1000, 10.0)
    assert rates.rate("tx", 3000, 12.0) == 1000.0
    assert rates.rate("tx", 3000, 13.0) == 0.0  # idle is a rate of zero, not None
    assert rates.rate("tx", 3500, 13.5) == 1000.0


def test_counter_going_backwards_gives_none_then_rates_again() -> None:
    rates: CounterRates[str] = CounterRates()
    rates.rate("tx", 5000, 1.0)
    assert rates.rate("tx", 10, 2.0) is None  # reset / wrap / driver reload
    assert rates.rate("tx", 110, 3.0) == 100.0  # the reset reading became the baseline


@pytest.mark.parametrize("later", [0.0, -1.0])
def test_time_not_moving_forward_gives_none(later: float) -> None:
    rates: CounterRates[str] = CounterRates()
    rates.rate("tx", 1000, 5.0)
    assert rates.rate("tx", 2000, 5.0 + later) is None


def test_missing_value_keeps_the_baseline() -> None:
    rates: CounterRates[str] = CounterRates()
    rates.rate("tx", 1000, 1.0)
    assert rates.rate("tx", None, 2.0) is None
    assert rates.rate("tx", 4000, 4.0) == 1000.0  # spans the gap from t=1


def test_keys_are_independent_and_can_be_forgotten() -> None:
    rates: CounterRates[tuple[int, str]] = CounterRates()
    for gpu in (0, 1):
        rates.rate((gpu, "rx"), 0, 0.0)
        rates.rate((gpu, "tx"), 0, 0.0)
    rates.forget((0, "rx"))
    rates.forget((5, "rx"))  # unknown key: nothing happens
    rates.forget_where(lambda key: key[0] == 1)
    assert len(rates) == 1
    assert rates.rate((0, "rx"), 100, 1.0) is None  # forgotten: a first reading again
    assert rates.rate((0, "tx"), 100, 1.0) == 100.0
    assert rates.rate((1, "tx"), 100, 1.0) is None
    rates.clear()
    assert len(rates) == 0


def test_integer_counters_keep_full_precision() -> None:
    rates: CounterRates[str] = CounterRates()
    big = 2**62
    rates.rate("bytes", big, 0.0)
    assert rates.rate("bytes", big + 3, 1.0) == 3.0


# -- UnsupportedCalls -----------------------------------------------------------------------------


def test_unsupported_calls_are_per_device_and_call() -> None:
    unsupported = UnsupportedCalls()
    assert not unsupported.has(0, "power")
    unsupported.add(0, "power")
    unsupported.add(0, "power")  # idempotent
    unsupported.add(1, "clock:GFX")
    assert unsupported.has(0, "power")
    assert not unsupported.has(1, "power")
    assert not unsupported.has(0, "clock:GFX")
    assert len(unsupported) == 2


def test_unsupported_calls_forget_one_device_or_all() -> None:
    unsupported = UnsupportedCalls()
    unsupported.add(0, "power")
    unsupported.add(1, "power")
    unsupported.forget_device(0)
    assert not unsupported.has(0, "power")
    assert unsupported.has(1, "power")
    unsupported.clear()
    assert len(unsupported) == 0


# -- PCI bus ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("00000000:1B:00.0", "0000:1b:00.0"),  # NVML: 8-digit domain, upper case
        ("0000:1b:00.0", "0000:1b:00.0"),  # sysfs / amdsmi
        ("0000:1B:00.0", "0000:1b:00.0"),
        ("1b:00.0", "0000:1b:00.0"),  # no domain
        ("  0000:c1:00.0\n", "0000:c1:00.0"),  # surrounding space
        ("0001:3B:1F.7", "0001:3b:1f.7"),
        ("PCI:0000:3b:00.1", "0000:3b:00.1"),  # kernel log prefix
        ("0000:3b:00", None),  # a device, not a function: no canonical form
    ],
)
def test_canonical_pci_bus_id(text: str, canonical: str | None) -> None:
    assert canonical_pci_bus_id(text) == canonical


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("00000000:1B:00.0", (0, 0x1B, 0)),
        ("0000:1b:00.0", (0, 0x1B, 0)),
        ("1b:00.0", (0, 0x1B, 0)),
        ("0000:3b:00", (0, 0x3B, 0)),
        ("PCI:0001:3b:02.3", (1, 0x3B, 2)),
    ],
)
def test_pci_device_key_ignores_the_function(text: str, key: tuple[int, int, int]) -> None:
    assert pci_device_key(text) == key


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        42,
        b"0000:1b:00.0",
        "",
        "N/A",
        "garbage",
        "zz:yy:xx",
        "0000:zz:00.0",
        "0000:1b:20.0",  # device numbers have five bits
        "0000:1b:00.8",  # function numbers have three
        "0000:123:00.0",  # bus numbers have eight
        "000000000:1b:00.0",  # more than 8 domain digits
        "0000:1b:00.0.0",
        "0x00:1b:00.0",
    ],
)
def test_garbage_bus_ids_are_none(garbage: object) -> None:
    assert parse_pci_bus_id(garbage) is None
    assert canonical_pci_bus_id(garbage) is None
    assert pci_device_key(garbage) is None


def test_parsed_address_fields() -> None:
    address = parse_pci_bus_id("00000002:C1:1F.3")
    assert address == PciAddress(domain=2, bus=0xC1, device=0x1F, function=3)
    assert address.device_key == (2, 0xC1, 0x1F)
    assert address.canonical() == "0002:c1:1f.3"
    assert parse_pci_bus_id("c1:1f") == PciAddress(domain=0, bus=0xC1, device=0x1F)


def test_local_cpulist_matches_any_spelling(tmp_path: Path) -> None:
    device = tmp_path / "0000:1b:00.0"
    device.mkdir()
    (device / "local_cpulist").write_text("0-31\n")
    assert local_cpulist("00000000:1B:00.0", root=tmp_path) == "0-31"
    assert local_cpulist("1b:00.0", root=tmp_path) == "0-31"
    assert local_cpulist("0000:1b:00", root=tmp_path) is None  # no function: no sysfs name
    assert local_cpulist("N/A", root=tmp_path) is None
