"""Invariants of the reference engine on generated telemetry (pure Python, many examples)."""

from __future__ import annotations

from hypothesis import given

from quotaplane.backlog.engine.evaluate import evaluate
from tests.backlog.strategies import fleet


@given(fleet(scenarios=3))
def test_reference_invariants(generated) -> None:
    policies, rows = generated
    results = evaluate(policies, rows)
    assert len(results) == len({(r.ts_ms, r.topic) for r in rows})
    assert [(r.ts_ms, r.topic) for r in results] == sorted((r.ts_ms, r.topic) for r in results)
    last: dict[str, tuple[int, int]] = {}
    for r in results:
        q = r.quotas
        if r.exceeded == "size":
            assert 0 <= q.size_limit <= r.backlog_size_bytes
        elif r.exceeded == "time":
            assert q.time_limit > 0 and r.backlog_age_seconds is not None
            assert r.backlog_age_seconds >= q.time_limit  # strictly older in ms: at least the limit in s
            assert not (0 <= q.size_limit <= r.backlog_size_bytes)
        assert (r.action is None) == (r.exceeded is None)
        assert (r.producers is not None) == (r.action in ("producer_request_hold", "producer_exception"))
        if not r.eviction_run:
            assert r.evictions == ()
        for e in r.evictions:
            assert e.entries >= 0 and e.bytes >= 0
        before = last.get(r.topic, (0, 0))
        now = (r.size_evictions_total, r.time_evictions_total)
        assert now[0] - before[0] == int(r.eviction_run and r.exceeded == "size")
        assert now[1] - before[1] == int(r.eviction_run and r.exceeded == "time")
        last[r.topic] = now
