"""The one JSON codec: values checked against the model's types, defaults omitted and restored,
and older schemas migrated so old recordings keep loading."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.fakes.clock import fake_clock_sampler

from gputui.commands.check import run_check
from gputui.core import codec, record
from gputui.core.codec import (
    OMIT_DEFAULT,
    CodecError,
    decode,
    encode,
    snapshot_from_dict,
    snapshot_to_dict,
)
from gputui.core.model import GpuSample, HostSample, NodeInfo, ProcessSample, Snapshot
from gputui.core.record import read_recording

DATA = Path(__file__).parent / "data"
SCHEMA_1_RECORDING = DATA / "recording-schema1.jsonl.gz"
"""Twelve readings of the faulty simulated node, written by gputui 0.1.0 before the codec was
unified (snapshot schema 1)."""


def test_omitting_defaults_decodes_to_the_same_object() -> None:
    snapshot = fake_clock_sampler("faulty", polls=3).latest
    assert snapshot is not None
    full = encode(snapshot)
    short = encode(snapshot, omit_defaults=True)
    assert len(json.dumps(short)) < len(json.dumps(full))
    assert decode(Snapshot, short) == decode(Snapshot, full) == snapshot


@pytest.mark.parametrize(
    ("data", "where", "why"),
    [
        (
            {"index": 0, "timestamp": 1.0, "utilization_gpu_pct": "97"},
            "utilization_gpu_pct",
            "a number",
        ),
        ({"index": "0", "timestamp": 1.0}, "index", "an integer"),
        ({"index": 0, "timestamp": 1.0, "lost": 1}, "lost", "true or false"),
        (
            {"index": 0, "timestamp": 1.0, "throttle_reasons": "hw_slowdown"},
            "throttle_reasons",
            "a list",
        ),
        (
            {"index": 0, "timestamp": 1.0, "links": [{"link": 0, "up": "yes"}]},
            "links[0].up",
            "true",
        ),
        ({"timestamp": 1.0}, "", "missing field 'index'"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_field(data, where, why) -> None:
    with pytest.raises(CodecError) as exc:
        decode(GpuSample, data)
    assert exc.value.path == where and why in exc.value.reason


def test_literals_and_fixed_tuples_are_checked() -> None:
    with pytest.raises(CodecError, match="type: expected one of"):
        decode(ProcessSample, {"pid": 1, "gpu_index": 0, "type": "daemon"})
    with pytest.raises(CodecError, match="load_average: expected a list of 3 values"):
        decode(HostSample, {"timestamp": 1.0, "load_average": [1.0, 2.0]})
    host = decode(HostSample, {"timestamp": 1, "load_average": [1, 2, 3]})
    assert host.load_average == (1.0, 2.0, 3.0) and isinstance(host.timestamp, float)


@dataclass(frozen=True)
class _Output:
    """An output shaped like a command's: lists, a string-keyed map, a key only where it applies."""

    name: str
    tags: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    share: float | None = None
    extra: str | None = field(default=None, metadata=OMIT_DEFAULT)


def test_lists_maps_and_keys_only_where_they_apply() -> None:
    plain = _Output("a", ["x"], {"0": 1}, math.nan)
    assert list(encode(plain)) == ["name", "tags", "counts", "share"]  # no "extra" at None
    assert encode(_Output("b", extra="e"))["extra"] == "e"
    assert math.isnan(encode(plain)["share"])
    assert encode(plain, nan_as_null=True)["share"] is None  # a command's output is strict JSON
    assert json.loads(codec.to_json(plain, nan_as_null=True))["share"] is None
    assert decode(_Output, {"name": "a", "tags": ["x"], "counts": {"0": 1}}) == _Output(
        "a", ["x"], {"0": 1}
    )
    with pytest.raises(CodecError, match=r"tags\[1\]: expected a string"):
        decode(_Output, {"name": "a", "tags": ["x", 2]})
    with pytest.raises(CodecError, match=r"counts\.0: expected an integer"):
        decode(_Output, {"name": "a", "counts": {"0": "1"}})
    with pytest.raises(CodecError, match="counts: expected an object, got a list"):
        decode(_Output, {"name": "a", "counts": [1]})


def test_a_snapshot_from_a_newer_gputui_is_refused_with_a_reason() -> None:
    data = snapshot_to_dict(fake_clock_sampler("a100-pcie", polls=1).latest)
    data["schema_version"] = 99
    with pytest.raises(CodecError, match="newer than this gputui reads"):
        snapshot_from_dict(data)


def test_the_schema_1_recording_still_loads_and_replays(capsys) -> None:
    recording = read_recording(SCHEMA_1_RECORDING)
    assert recording.header["schema_version"] == 1
    assert len(recording.snapshots) == 12
    assert recording.node.hostname == "dgx-h100-13" and len(recording.node.gpus) == 8
    last = recording.snapshots[-1]
    assert last.sample(3) is not None and last.sample(3).lost
    assert {f.rule for f in last.findings} >= {"gpu_lost", "ecc_uncorrected", "throttle"}
    assert run_check(f"replay:{SCHEMA_1_RECORDING}") == 2
    assert "GPU 3" in capsys.readouterr().out


def test_an_older_schema_is_migrated_step_by_step(monkeypatch) -> None:
    """A pretend schema 2 renames ``hostname`` to ``host``: a schema-1 recording and a schema-1
    snapshot both load through the migration step."""
    calls: list[str] = []

    def rename_host(data: dict) -> dict:
        calls.append("1->2")
        node = dict(data["node"])
        node["host_name_v2"] = node.pop("hostname")
        node["hostname"] = node["host_name_v2"]  # the model still reads ``hostname``
        return {**data, "node": node}

    monkeypatch.setattr(codec, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(record, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(codec, "MIGRATIONS", {1: rename_host})
    recording = read_recording(SCHEMA_1_RECORDING)
    assert len(recording.snapshots) == 12 and calls  # header and lines went through the step
    data = snapshot_to_dict(recording.snapshots[0])
    data["schema_version"] = 1
    calls.clear()
    assert snapshot_from_dict(data).node.hostname == "dgx-h100-13"
    assert calls == ["1->2"]


def test_the_node_of_a_recording_line_is_supplied_not_decoded() -> None:
    node = NodeInfo(hostname="h", backend="sim:x", gpus=())
    snapshot = decode(Snapshot, {"timestamp": 1.0, "gpus": []}, node=node)
    assert snapshot.node is node
