"""Same scenario, seed and arguments give the same bytes; chunking never changes the output."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from quotaplane.sim.run import simulate
from tests.sim.conftest import SMALL, tables

TINY = {"brokers": 6, "days": 0.1, "interval_seconds": 60, "clients": 20, "topics": 6, "pulsar_topics": 2,
        "window_hours": 0.5}


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_same_seed_same_bytes(tmp_path: Path, fmt: str) -> None:
    first = simulate("fleet", tmp_path / "a", TINY, fmt=fmt)
    second = simulate("fleet", tmp_path / "b", TINY, fmt=fmt)
    assert first == second
    assert digests(tmp_path / "a") == digests(tmp_path / "b")
    assert all(first["rows"][k] > 0 for k in ("volumes", "membership", "client_requests", "topic_requests",
                                               "backlog_snapshots"))


def test_different_seed_different_output(tmp_path: Path) -> None:
    simulate("fleet", tmp_path / "a", {**TINY, "seed": 1})
    simulate("fleet", tmp_path / "b", {**TINY, "seed": 2})
    a, b = digests(tmp_path / "a"), digests(tmp_path / "b")
    for kind in ("volumes/part-00000.jsonl", "client_requests/part-00000.jsonl",
                 "backlog_snapshots/part-00000.jsonl"):
        assert a[kind] != b[kind], kind


def test_rerun_replaces_old_parts(tmp_path: Path) -> None:
    simulate("fleet", tmp_path, TINY, fmt="csv", part_rows=100, chunk_rows=100)
    simulate("fleet", tmp_path, TINY, fmt="jsonl")
    assert {p.suffix for p in (tmp_path / "volumes").iterdir()} == {".jsonl"}
    assert len(list((tmp_path / "volumes").iterdir())) == 1


@pytest.mark.parametrize("scenario", sorted(SMALL))
def test_output_does_not_depend_on_chunk_size(scenario: str) -> None:
    small_chunks = tables(scenario, chunk_rows=997)
    one_chunk = tables(scenario, chunk_rows=50_000_000)
    assert small_chunks.keys() == one_chunk.keys()
    for kind in one_chunk:
        assert small_chunks[kind].equals(one_chunk[kind]), kind


def test_chunk_independence_with_capped_request_size() -> None:
    overrides = {"max_request_bytes": 200_000, "window_hours": 0.5}
    kinds = ["client_requests", "topic_requests"]
    assert tables("fleet", overrides, 1_000, kinds)["client_requests"].equals(
        tables("fleet", overrides, 50_000_000, kinds)["client_requests"])
