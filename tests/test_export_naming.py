"""`gputui export --dcgm-names`: legacy (today's page, unchanged), 4.7 (DCGM 4.7's names in base
units, ``hostname`` and ``DCGM_FI_SYSTEM_DRIVER_VERSION`` labels) and both; the option, the
config file key, and the endpoint serving what was chosen.

The expected values are worked out here from each GPU's sample with the arithmetic the exporter
has always used (legacy) and with the units DCGM 4.7 documents (4.7), not read from the table the
exporter uses, so a wrong name, unit or rounding in either fails."""

from __future__ import annotations

import dataclasses
import random
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families
from tests.factories import scrape
from tests.fakes.clock import fake_clock_sampler

from gputui import cli, export
from gputui.commands import export as export_command
from gputui.commands.common import Common, Seams
from gputui.commands.settings_from_args import settings_for
from gputui.core.metric_names import DCGM_BY_KEY, DCGM_FIELDS
from gputui.core.model import Snapshot
from gputui.engine.session import default_health
from gputui.export.dcgm import DCGM_VALUE_BY_KEY
from gputui.settings import load_settings

MIB = 1024 * 1024
MODES = ("legacy", "4.7", "both")
LEGACY_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
LABELS_4_7 = (LEGACY_LABELS - {"Hostname"}) | {"hostname", "DCGM_FI_SYSTEM_DRIVER_VERSION"}

Value = Callable[[export.GpuReading], "float | None"]


def on(attr: str, convert: Callable[[float], float] = float) -> Value:
    """The sample's ``attr`` through ``convert``; None when the GPU does not report it."""

    def read(g: export.GpuReading) -> float | None:
        value = getattr(g.sample, attr)
        return None if value is None else float(convert(value))

    return read


def whole_mib(b: float) -> float:
    return int(b) // MIB


def hertz(mhz: float) -> float:
    return mhz * 1e6


def ratio(pct: float) -> float:
    return pct / 100


def nvlink(scale: Callable[[float], float]) -> Value:
    def read(g: export.GpuReading) -> float | None:
        rx, tx = g.sample.nvlink_rx_bytes_per_s, g.sample.nvlink_tx_bytes_per_s
        return None if rx is None or tx is None else scale(rx + tx)

    return read


def links(attr: str) -> Value:
    def read(g: export.GpuReading) -> float | None:
        known = [getattr(link, attr) for link in g.sample.links or ()]
        known = [v for v in known if v is not None]
        return float(sum(known)) if known else None

    return read


def info(attr: str) -> Value:
    def read(g: export.GpuReading) -> float | None:
        value = None if g.info is None else getattr(g.info, attr)
        return None if value is None else float(value)

    return read


def xid(g: export.GpuReading) -> float | None:
    return float(g.last_xid) if g.info is None or g.info.vendor == "nvidia" else None


SPEC: dict[str, tuple[str, Value, Value]] = {
    # key: (today's name, today's value, the DCGM 4.7 value)
    "util": ("DCGM_FI_DEV_GPU_UTIL", on("utilization_gpu_pct"), on("utilization_gpu_pct", ratio)),
    "memory_util": (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        on("utilization_memory_pct"),
        on("utilization_memory_pct", ratio),
    ),
    "encoder_util": ("DCGM_FI_DEV_ENC_UTIL", on("encoder_pct"), on("encoder_pct", ratio)),
    "decoder_util": ("DCGM_FI_DEV_DEC_UTIL", on("decoder_pct"), on("decoder_pct", ratio)),
    "fb_free": (
        "DCGM_FI_DEV_FB_FREE",
        on("memory_free_bytes", whole_mib),
        on("memory_free_bytes"),
    ),
    "fb_used": (
        "DCGM_FI_DEV_FB_USED",
        on("memory_used_bytes", whole_mib),
        on("memory_used_bytes"),
    ),
    "fb_reserved": (
        "DCGM_FI_DEV_FB_RESERVED",
        on("memory_reserved_bytes", whole_mib),
        on("memory_reserved_bytes"),
    ),
    "fb_total": (
        "DCGM_FI_DEV_FB_TOTAL",
        on("memory_total_bytes", whole_mib),
        on("memory_total_bytes"),
    ),
    "power": ("DCGM_FI_DEV_POWER_USAGE", on("power_w"), on("power_w")),
    "power_limit": ("DCGM_FI_DEV_POWER_MGMT_LIMIT", on("power_limit_w"), on("power_limit_w")),
    "temp_gpu": ("DCGM_FI_DEV_GPU_TEMP", on("temperature_gpu_c"), on("temperature_gpu_c")),
    "temp_memory": (
        "DCGM_FI_DEV_MEMORY_TEMP",
        on("temperature_memory_c"),
        on("temperature_memory_c"),
    ),
    "fan": ("DCGM_FI_DEV_FAN_SPEED", on("fan_pct"), on("fan_pct")),
    "clock_sm": ("DCGM_FI_DEV_SM_CLOCK", on("clock_sm_mhz"), on("clock_sm_mhz", hertz)),
    "clock_memory": (
        "DCGM_FI_DEV_MEM_CLOCK",
        on("clock_memory_mhz"),
        on("clock_memory_mhz", hertz),
    ),
    "pstate": ("DCGM_FI_DEV_PSTATE", on("pstate"), on("pstate")),
    "pcie_gen": ("DCGM_FI_DEV_PCIE_LINK_GEN", on("pcie_gen"), on("pcie_gen")),
    "pcie_width": ("DCGM_FI_DEV_PCIE_LINK_WIDTH", on("pcie_width"), on("pcie_width")),
    "pcie_tx": (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        on("pcie_tx_bytes_per_s"),
        on("pcie_tx_bytes_per_s"),
    ),
    "pcie_rx": (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        on("pcie_rx_bytes_per_s"),
        on("pcie_rx_bytes_per_s"),
    ),
    "nvlink_tx": (
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        on("nvlink_tx_bytes_per_s"),
        on("nvlink_tx_bytes_per_s"),
    ),
    "nvlink_rx": (
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        on("nvlink_rx_bytes_per_s"),
        on("nvlink_rx_bytes_per_s"),
    ),
    "nvlink_total": (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        nvlink(lambda b: b / 1024 / 1000),
        nvlink(float),
    ),
    "retired_pending": (
        "DCGM_FI_DEV_RETIRED_PENDING",
        on("retired_pages_pending", bool),
        on("retired_pages_pending", bool),
    ),
    "row_remap_failure": (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        on("remapped_rows_failure", bool),
        on("remapped_rows_failure", bool),
    ),
    "row_remap_pending": (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        on("remapped_rows_pending", bool),
        on("remapped_rows_pending", bool),
    ),
    "pcie_max_gen": ("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", info("pcie_max_gen"), info("pcie_max_gen")),
    "pcie_max_width": (
        "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
        info("pcie_max_width"),
        info("pcie_max_width"),
    ),
    "xid": ("DCGM_FI_DEV_XID_ERRORS", xid, xid),
    "energy": (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        on("energy_j", lambda j: j * 1000.0),
        on("energy_j"),
    ),
    "ecc_sbe_volatile": (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        on("ecc_volatile_corrected"),
        on("ecc_volatile_corrected"),
    ),
    "ecc_dbe_volatile": (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        on("ecc_volatile_uncorrected"),
        on("ecc_volatile_uncorrected"),
    ),
    "ecc_sbe_aggregate": (
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        on("ecc_aggregate_corrected"),
        on("ecc_aggregate_corrected"),
    ),
    "ecc_dbe_aggregate": (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        on("ecc_aggregate_uncorrected"),
        on("ecc_aggregate_uncorrected"),
    ),
    "remapped_correctable": (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        on("remapped_rows_correctable"),
        on("remapped_rows_correctable"),
    ),
    "remapped_uncorrectable": (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        on("remapped_rows_uncorrectable"),
        on("remapped_rows_uncorrectable"),
    ),
    "nvlink_replay_errors": (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        links("replay_errors"),
        links("replay_errors"),
    ),
    "nvlink_recovery_errors": (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        links("recovery_errors"),
        links("recovery_errors"),
    ),
}
"""Every DCGM field the exporter has published, with today's name and both values."""

COUNTERS = {
    "energy",
    "ecc_sbe_volatile",
    "ecc_dbe_volatile",
    "ecc_sbe_aggregate",
    "ecc_dbe_aggregate",
    "remapped_correctable",
    "remapped_uncorrectable",
    "nvlink_replay_errors",
    "nvlink_recovery_errors",
}

UNIT_WORDS = {
    "util": "(a ratio, 0 to 1)",
    "memory_util": "(a ratio, 0 to 1)",
    "fb_used": "(in bytes)",
    "fb_total": "(in bytes)",
    "clock_sm": "(in Hz)",
    "clock_memory": "(in Hz)",
    "energy": "(in J)",
    "nvlink_total": "(in B/s)",
    "power": "(in W)",
    "temp_gpu": "(in C)",
}
"""How a 4.7 family's HELP line states its unit, for the fields whose unit changed and a few
that kept theirs."""


@dataclasses.dataclass
class Scraped:
    snapshot: Snapshot
    last_xid: dict[int, int]
    text: dict[str, str]
    families: dict[str, dict]

    def readings(self) -> list[export.GpuReading]:
        node = self.snapshot.node
        return [
            export.GpuReading(s, node.gpu(s.index), self.last_xid.get(s.index, 0))
            for s in self.snapshot.gpus
            if not s.lost
        ]


def scrape_modes(scenario: str, seed: int = 0, polls: int = 6, latest=None) -> Scraped:
    """A simulated node read ``polls`` times (or shown as ``latest``), scraped once in every
    mode, the collectors listening to the same readings; the last XID per GPU kept aside."""
    sampler = fake_clock_sampler(scenario, polls=0, seed=seed)
    sampler.health = default_health()
    collectors = {mode: export.GpuCollector(sampler, dcgm_names=mode) for mode in MODES}
    last_xid: dict[int, int] = {}

    def keep(snapshot: Snapshot) -> None:
        for e in snapshot.events:
            if e.kind == "xid" and e.gpu_index is not None and e.code is not None:
                last_xid[e.gpu_index] = e.code

    sampler.add_listener(keep)
    for _ in range(polls):
        sampler.poll()
        sampler.clock.now += sampler.interval
    if latest is not None:
        sampler.latest = latest(sampler.latest)
    pages = {mode: scrape(collector) for mode, collector in collectors.items()}
    text = {mode: page[0] for mode, page in pages.items()}
    families = {mode: page[1] for mode, page in pages.items()}
    return Scraped(sampler.latest, last_xid, text, families)


SCENARIOS = [("dgx-h100", 1), ("faulty", 0), ("mi300x", 0), ("rtx4090", 0)]


@pytest.fixture(scope="module", params=SCENARIOS, ids=[f"{s}-{n}" for s, n in SCENARIOS])
def scraped(request) -> Scraped:
    scenario, seed = request.param
    return scrape_modes(scenario, seed)


def dcgm_families(families: dict) -> dict:
    return {name: f for name, f in families.items() if name.startswith("DCGM_")}


def by_gpu(family) -> dict[str, float]:
    got: dict[str, float] = {}
    for s in family.samples:
        assert s.labels["gpu"] not in got, f"two {family.name} series on GPU {s.labels['gpu']}"
        got[s.labels["gpu"]] = s.value
    return got


def expected(scraped: Scraped, value: Value) -> dict[str, float]:
    out = {}
    for g in scraped.readings():
        v = value(g)
        if v is not None:
            out[str(g.sample.index)] = v
    return out


# -- legacy: today's page ---------------------------------------------------------------------


def test_legacy_is_todays_page(scraped: Scraped) -> None:
    """Today's names, types, labels and values (worked out as the exporter always has: whole
    MiB, mJ, MHz, %, KiB/s / 1000), and nothing else under DCGM_."""
    families = dcgm_families(scraped.families["legacy"])
    want = {name: expected(scraped, today) for name, today, _v in SPEC.values()}
    assert set(families) == {name for name, values in want.items() if values}
    for key, (name, _today, _v) in SPEC.items():
        if name not in families:
            continue
        assert by_gpu(families[name]) == want[name], name
        assert families[name].type == ("counter" if key in COUNTERS else "gauge"), name
        for s in families[name].samples:
            assert set(s.labels) == LEGACY_LABELS, name
            assert s.labels["Hostname"] == scraped.snapshot.node.hostname
    text = scraped.text["legacy"]
    for line in (
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n",
        "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n",
        "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n",
        "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since the driver "
        "was loaded (in mJ).\n",
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n",
    ):
        assert line in text


def test_legacy_is_the_default() -> None:
    sampler = fake_clock_sampler("dgx-h100", polls=3, seed=1)
    plain, legacy = export.GpuCollector(sampler), export.GpuCollector(sampler, dcgm_names="legacy")
    assert scrape(plain)[0] == scrape(legacy)[0]


def test_legacy_units_are_todays_arithmetic() -> None:
    """Converting through the unit table gives, bit for bit, what the exporter has always
    computed (``j / 1e-3`` is not always ``j * 1000``)."""
    rng = random.Random(7)
    energy = DCGM_VALUE_BY_KEY["energy"]
    nvlink_total = DCGM_VALUE_BY_KEY["nvlink_total"]
    memory = DCGM_VALUE_BY_KEY["fb_used"]
    for _ in range(20_000):
        j, rate, b = rng.uniform(0, 1e10), rng.uniform(0, 1e12), rng.randrange(0, 2**40)
        assert energy.published("dcgm", j) == j * 1000.0
        assert nvlink_total.published("dcgm", rate) == rate / 1024 / 1000
        assert memory.published("dcgm", float(b)) == float(b // MIB)
        assert memory.published("dcgm-4.7", float(b)) == float(b)


# -- 4.7: DCGM 4.7's names, base units, new labels ---------------------------------------------


def test_4_7_names_units_and_values(scraped: Scraped) -> None:
    families = dcgm_families(scraped.families["4.7"])
    text = scraped.text["4.7"]
    want = {DCGM_BY_KEY[key].current: expected(scraped, v) for key, (_n, _t, v) in SPEC.items()}
    assert set(families) == {name for name, values in want.items() if values}
    for key in SPEC:
        name = DCGM_BY_KEY[key].current
        if name not in families:
            continue
        assert by_gpu(families[name]) == want[name], name
        if key in COUNTERS:  # DCGM's style: the exact name on the wire, no _total added
            assert f"# TYPE {name} counter\n" in text and f"\n{name}{{" in text
            assert f"{name}_total" not in text
        else:
            assert families[name].type == "gauge", name
        if key in UNIT_WORDS:
            assert _help(text, name).endswith(f" {UNIT_WORDS[key]}."), name
    # the names dcgm-exporter 4.9 introduced, and none of the legacy ones they replace
    for name in ("DCGM_FI_DEV_FB_CAPACITY_BYTES", "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"):
        assert name in families
    for name in ("DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_GPU_UTIL"):
        assert name not in families
    nvidia = any(g.info is None or g.info.vendor == "nvidia" for g in scraped.readings())
    assert ("DCGM_FI_DEV_XID_ERROR" in families) == nvidia


def _help(text: str, name: str) -> str:
    prefix = f"# HELP {name} "
    (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return line.removeprefix(prefix)


def test_4_7_labels(scraped: Scraped) -> None:
    node = scraped.snapshot.node
    assert node.driver_version
    for family in dcgm_families(scraped.families["4.7"]).values():
        for s in family.samples:
            assert set(s.labels) == LABELS_4_7, family.name
            assert s.labels["hostname"] == node.hostname
            assert s.labels["DCGM_FI_SYSTEM_DRIVER_VERSION"] == node.driver_version
            assert s.labels["UUID"] == node.gpu(int(s.labels["gpu"])).uuid


def test_4_7_memory_is_exact_bytes() -> None:
    """Memory the driver reports to the byte is published to the byte (not whole MiB times
    2^20); legacy keeps flooring it to whole MiB."""
    odd = 75 * 1024 * MIB + 12_345

    def oddly_sized(snapshot: Snapshot) -> Snapshot:
        gpus = list(snapshot.gpus)
        gpus[0] = dataclasses.replace(gpus[0], memory_used_bytes=odd)
        return dataclasses.replace(snapshot, gpus=tuple(gpus))

    scraped = scrape_modes("dgx-h100", 1, latest=oddly_sized)
    assert by_gpu(scraped.families["4.7"]["DCGM_FI_DEV_FB_USED_BYTES"])["0"] == odd
    assert by_gpu(scraped.families["legacy"]["DCGM_FI_DEV_FB_USED"])["0"] == odd // MIB
    total = scraped.snapshot.gpus[0].memory_total_bytes
    assert by_gpu(scraped.families["4.7"]["DCGM_FI_DEV_FB_CAPACITY_BYTES"])["0"] == total


# -- both --------------------------------------------------------------------------------------


def test_both_publishes_both_sets(scraped: Scraped) -> None:
    """Every legacy family with today's labels and every 4.7 family with the new ones, values as
    each mode alone; a name both spell alike is one series per GPU carrying both label sets."""
    both = dcgm_families(scraped.families["both"])
    legacy = dcgm_families(scraped.families["legacy"])
    current = dcgm_families(scraped.families["4.7"])
    assert set(both) == set(legacy) | set(current)
    assert len(both) > len(legacy)
    for name, family in both.items():
        labels = {frozenset(s.labels) for s in family.samples}
        if name in legacy and name in current:
            assert labels == {frozenset(LEGACY_LABELS | LABELS_4_7)}, name
            assert by_gpu(family) == by_gpu(legacy[name]) == by_gpu(current[name])
        elif name in legacy:
            assert labels == {frozenset(LEGACY_LABELS)}, name
            assert by_gpu(family) == by_gpu(legacy[name])
        else:
            assert labels == {frozenset(LABELS_4_7)}, name
            assert by_gpu(family) == by_gpu(current[name])


def test_gputui_series_are_the_same_in_every_mode(scraped: Scraped) -> None:
    def own(mode: str) -> dict:
        return {
            name: sorted((tuple(sorted(s.labels.items())), s.value) for s in f.samples)
            for name, f in scraped.families[mode].items()
            if not name.startswith("DCGM_")
        }

    assert own("legacy") == own("4.7") == own("both")
    assert "gputui_gpu_lost" in own("4.7")


def test_a_shared_name_keeps_its_unit() -> None:
    """``both`` writes a name the two vocabularies share once: that is right only while its
    unit is the same in both."""
    shared = [f for f in DCGM_FIELDS if not f.renamed]
    assert shared and all(f.legacy_unit == f.current_unit for f in shared)


def test_an_unknown_choice_is_refused() -> None:
    sampler = fake_clock_sampler("dgx-h100", polls=1)
    with pytest.raises(ValueError, match=r"unknown DCGM names .4\.8."):
        export.GpuCollector(sampler, dcgm_names="4.8")  # type: ignore[arg-type]


# -- the option and the config file ------------------------------------------------------------


@pytest.fixture
def config_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "xdg" / "gputui" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def export_options(argv: list[str]) -> export_command.ExportOptions:
    """``gputui export ARGV``'s options, as the command line builds them."""
    parser = cli.build_parser()
    args = parser.parse_args(["export", *argv])
    settings = settings_for(args, parser)
    return export_command.options(args, Common.from_args(args, settings))


def test_the_option_and_the_config_key(config_home) -> None:
    assert export_options([]).dcgm_names == "legacy"
    assert export_options(["--dcgm-names", "4.7"]).dcgm_names == "4.7"
    config_home.write_text('[export]\ndcgm_names = "both"\n')
    options = export_options([])
    assert options.dcgm_names == "both"
    assert options.settings.source("export.dcgm_names") == str(config_home)
    options = export_options(["--dcgm-names", "legacy"])  # the command line wins
    assert options.dcgm_names == "legacy"
    assert options.settings.source("export.dcgm_names") == "command line"
    config_home.write_text("[export]\ndcgm_names = 4.7\n")  # unquoted: a TOML number
    assert export_options([]).dcgm_names == "4.7"


def test_config_init_writes_the_key(config_home, capsys) -> None:
    assert cli.main(["config", "--init"]) == 0
    text = config_home.read_text()
    export_table = text[text.index("\n[export]\n") :]
    assert '\ndcgm_names = "legacy"\n' in export_table[: export_table.index("\n[", 1)]
    assert load_settings().export.dcgm_names == "legacy"


@pytest.mark.parametrize("value", ["4.8", "LEGACY", ""])
def test_a_bad_option_is_a_usage_error(capsys, value) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["export", "--demo", "--dcgm-names", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "--dcgm-names" in err and "invalid choice" in err
    assert "'legacy', '4.7', 'both'" in err and "Traceback" not in err


def test_a_bad_config_value_is_named_and_the_default_used(config_home, capsys) -> None:
    """As for every key of the file: one line naming the file, the line and the key, and the
    run goes on with the default."""
    config_home.write_text('interval = 2\n[export]\ndcgm_names = "4.8"\n')
    assert cli.main(["config", "--json"]) == 0
    out, err = capsys.readouterr()
    assert f"{config_home}, line 3: export.dcgm_names" in err
    assert "expected one of legacy, 4.7, both" in err and 'using the default ("legacy")' in err
    assert "Traceback" not in err and '"legacy"' in out


# -- over HTTP ---------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_and_scrape(monkeypatch, argv: list[str]) -> dict:
    """``gputui export --backend sim:dgx-h100 --seed 1 ARGV`` run as the command line runs it,
    scraped once over loopback, then stopped; its families by name."""
    stop = threading.Event()
    real_run = export_command.run
    monkeypatch.setattr(export_command, "run", lambda options: real_run(options, Seams(stop=stop)))
    port = _free_port()
    argv = ["export", "--backend", "sim:dgx-h100", "--seed", "1", "--interval", "0.2", *argv]
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(cli.main([*argv, "--listen", f"127.0.0.1:{port}"]))
    )
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, "the exporter never answered"
                time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
    assert result == [0]
    return {f.name: f for f in text_string_to_metric_families(text)}


@pytest.mark.parametrize(
    ("argv", "config", "mode"),
    [
        ([], None, "legacy"),
        (["--dcgm-names", "4.7"], None, "4.7"),
        ([], '[export]\ndcgm_names = "both"\n', "both"),
    ],
)
def test_the_endpoint_serves_the_chosen_names(
    monkeypatch, config_home, capsys, argv, config, mode
) -> None:
    if config is not None:
        config_home.write_text(config)
    families = serve_and_scrape(monkeypatch, argv)
    names = set(dcgm_families(families))
    legacy = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_XID_ERRORS"}
    current = {"DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_DEV_FB_CAPACITY_BYTES"}
    current |= {"DCGM_FI_DEV_XID_ERROR", "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"}
    if mode == "legacy":
        assert legacy <= names and not current & names
    elif mode == "4.7":
        assert current <= names and not legacy & names
    else:
        assert legacy | current <= names
    if mode != "legacy":
        for s in families["DCGM_FI_DEV_GPU_UTIL_RATIO"].samples:
            assert 0 <= s.value <= 1 and set(s.labels) == LABELS_4_7
    assert "gputui_health_status" in families
