"""Generation is chunked (memory bounded whatever the span), and writers roll part files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from quotaplane.sim.kinds import KINDS
from quotaplane.sim.run import generate, resolve, simulate
from quotaplane.sim.writers import PartWriter, jsonl_bytes


def test_generator_yields_bounded_chunks() -> None:
    found, params = resolve("fleet", {"brokers": 10, "log_dirs": 4, "days": 1, "interval_seconds": 30,
                                      "clients": 30, "topics": 10, "pulsar_topics": 2, "window_hours": 6})
    model = found.build(params)
    sizes: dict[str, list[int]] = {}
    kinds = ["volumes", "client_requests", "backlog_snapshots"]
    for kind, chunk in generate(model, params.seed, kinds, 5_000):
        sizes.setdefault(kind, []).append(chunk.num_rows)
    volumes_per_round = 10 * 4
    assert len(sizes["volumes"]) >= 23  # 2880 rounds x 40 volumes, in chunks of 125 rounds
    assert max(sizes["volumes"]) <= 5_000 // volumes_per_round * volumes_per_round
    assert len(sizes["client_requests"]) > 5
    assert max(sizes["client_requests"]) <= 5_000 * 1.2
    assert max(sizes["backlog_snapshots"]) <= 5_000


def test_a_longer_span_means_more_chunks_not_bigger_ones() -> None:
    found, short = resolve("fleet", {"days": 0.5, "interval_seconds": 60, "clients": 10, "topics": 5})
    _, long = resolve("fleet", {"days": 2, "interval_seconds": 60, "clients": 10, "topics": 5})

    def chunk_sizes(params: object) -> list[int]:
        return [t.num_rows for _, t in generate(found.build(params), 1, ["volumes"], 2_000)]  # type: ignore[arg-type]

    a, b = chunk_sizes(short), chunk_sizes(long)
    assert len(b) >= 4 * len(a) - 1
    assert max(a) <= 2_000 and max(b) <= 2_000


def test_parts_roll_at_chunk_boundaries(tmp_path: Path) -> None:
    manifest = simulate("fleet", tmp_path, {"days": 0.2, "interval_seconds": 60, "clients": 10, "topics": 5},
                        kinds="volumes,membership", fmt="parquet", chunk_rows=1_000, part_rows=3_000)
    files = manifest["files"]["volumes"]
    assert len(files) > 1
    rows = sum(pq.ParquetFile(tmp_path / f).metadata.num_rows for f in files)
    assert rows == manifest["rows"]["volumes"]
    row_groups = pq.ParquetFile(tmp_path / files[0]).metadata.num_row_groups
    assert row_groups > 1  # one row group per chunk
    assert json.loads((tmp_path / "manifest.json").read_text())["rows"] == manifest["rows"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_empty_kinds_still_get_a_part(tmp_path: Path, fmt: str) -> None:
    writer = PartWriter(tmp_path / "collection_errors", KINDS["collection_errors"], fmt)
    (path,) = writer.close()
    assert path.name == f"part-00000.{fmt}"
    if fmt == "parquet":
        table = pq.read_table(path)
        assert table.num_rows == 0 and table.column_names == ["ts", "reason", "cluster", "poll_id"]
    elif fmt == "csv":
        assert path.read_text() == '"ts","reason","cluster","poll_id"\n'
    else:
        assert path.read_bytes() == b""


def test_jsonl_formatting() -> None:
    import pyarrow as pa

    table = pa.table({"a": pa.array([1, None], pa.int64()), "b": pa.array(["x", None]),
                      "c": pa.array([2.0, 0.125])})
    assert jsonl_bytes(table) == b'{"a":1,"b":"x","c":2}\n{"a":null,"b":null,"c":0.125}\n'
    assert [json.loads(line) for line in jsonl_bytes(table).splitlines()] == [
        {"a": 1, "b": "x", "c": 2}, {"a": None, "b": None, "c": 0.125}]
    assert jsonl_bytes(table.slice(1)) == b'{"a":null,"b":null,"c":0.125}\n'
    assert jsonl_bytes(table.slice(0, 0)) == b""
