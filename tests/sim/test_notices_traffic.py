"""Simulated producer traffic (docs/simulator.md, Producer traffic) and the `noisy-neighbour` scenario:
deterministic, valid for `PRODUCER_TRAFFIC`, and eventful for the notices engine (docs/notices.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from quotaplane.cli import main
from quotaplane.core.telemetry_files import read_input
from quotaplane.notices.config import load_notice_config
from quotaplane.notices.engine.evaluate import RECEIPTS, evaluate
from quotaplane.notices.protocol import Reason
from quotaplane.notices.records import PRODUCER_TRAFFIC
from quotaplane.sim.kinds import KINDS
from quotaplane.sim.run import generate, resolve, simulate
from tests.sim.conftest import tables

SCENARIO = "noisy-neighbour"
KIND = "producer_traffic"


def traffic(seed: int | None = None, chunk_rows: int = 500_000) -> pa.Table:
    found, params = resolve(SCENARIO, {"seed": seed})
    chunks = [chunk for _, chunk in generate(found.build(params), params.seed, [KIND], chunk_rows)]
    return pa.concat_tables(chunks)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp(SCENARIO)
    simulate(SCENARIO, out)
    return out


@pytest.fixture(scope="module")
def rows(written: Path) -> list[dict]:
    return list(read_input(written / KIND, PRODUCER_TRAFFIC))


def test_same_seed_same_rows_whatever_the_chunks() -> None:
    first = traffic()
    assert first.num_rows > 0
    assert first.equals(traffic())
    assert first.equals(traffic(chunk_rows=97))
    assert not first.equals(traffic(seed=6))


def test_the_same_bytes_twice(tmp_path: Path, written: Path) -> None:
    simulate(SCENARIO, tmp_path)
    for name in ("producer_traffic/part-00000.jsonl", "notices.properties", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (written / name).read_bytes(), name


@pytest.mark.parametrize("scenario", [SCENARIO, "fleet"])
def test_every_row_passes_the_record_schema(scenario: str) -> None:
    table = traffic() if scenario == SCENARIO else tables(scenario, kinds=[KIND])[KIND]
    assert table.num_rows > 0
    assert table.schema == KINDS[KIND]
    assert KINDS[KIND].names == PRODUCER_TRAFFIC.field_names
    for i, row in enumerate(table.to_pylist()):
        assert PRODUCER_TRAFFIC.coerce_record(row, f"{KIND}:{i}") == row


def test_noisy_neighbour_shape(written: Path, rows: list[dict]) -> None:
    manifest = json.loads((written / "manifest.json").read_text())
    assert manifest["rows"] == {KIND: len(rows)} and manifest["configs"] == ["notices.properties"]
    assert 1_000 < len(rows) < 10_000
    times = [r["ts_ms"] for r in rows]
    assert times == sorted(times) and max(times) - min(times) > 150_000
    assert {r["broker"] for r in rows} == {"pulsar-broker-0", "pulsar-broker-1"}
    connections = {r["connection_id"]: r["supports_throttle"] for r in rows}
    assert len(connections) == 6 and sum(connections.values()) == 3
    per_connection: dict[str, set[tuple[int, str]]] = {}
    for r in rows:
        per_connection.setdefault(r["connection_id"], set()).add((r["producer_id"], r["topic"]))
    for producers in per_connection.values():
        assert len(producers) >= 3
        assert sorted(p for p, _ in producers) == list(range(len(producers)))  # one producer per topic
    supported = [r["receipt_latency_ms"] for r in rows if r["supports_throttle"]]
    assert all(r["receipt_latency_ms"] is None for r in rows if not r["supports_throttle"])
    in_time = sum(1 for v in supported if v is not None and v <= 100)
    late = sum(1 for v in supported if v is not None and v > 100)
    lost = sum(1 for v in supported if v is None)
    assert in_time > 5 * (late + lost) and late > 0 and lost > 0
    assert max(r["publish_latency_ms"] for r in rows) >= 1_000


def test_the_engine_sees_every_reason_and_receipt(written: Path, rows: list[dict]) -> None:
    notices = evaluate(load_notice_config(written / "notices.properties"), rows)
    reasons = Counter(n.reason for n in notices)
    receipts = Counter(n.receipt for n in notices)
    assert set(reasons) == {r.name for r in Reason}, reasons
    assert set(receipts) == set(RECEIPTS), receipts
    # PIP-385 spares the connections of producers that answer in time
    assert (sum(n.connection_paused_ms for n in notices)
            < sum(n.connection_paused_ms_without_notices for n in notices))
    assert any(n.stalled_topics_without_notices > 0 for n in notices)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_every_format_gives_the_same_notices(tmp_path: Path, fmt: str, written: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for out in (written, tmp_path):
        if out is tmp_path:
            assert main(["simulate", "--scenario", SCENARIO, "--out", str(out), "--format", fmt]) == 0
        capsys.readouterr()
        assert main(["notices", "evaluate", "--config", str(out / "notices.properties"),
                     "--traffic", str(out / KIND)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") > 100
