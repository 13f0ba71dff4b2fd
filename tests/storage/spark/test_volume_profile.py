"""The per-volume summaries and plots come from one small aggregate (`summary.volume_profile`): they
must equal what the observation rows themselves give (the rules, computed here row by row)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotaplane.storage.config import VolumeLimit
from quotaplane.storage.spark import limits
from quotaplane.storage.spark import summary as S
from quotaplane.storage.summary import iso
from tests.storage.engine.helpers import cluster_config

pytestmark = pytest.mark.spark
SCHEMA = "ts_ms long, cluster string, broker_id long, log_dir string, total_bytes long, available_bytes long"
SOFT = VolumeLimit("availableRatioBelow", 0.5, "soft")
HARD = VolumeLimit("availableBytesBelow", 300, "hard")
CONFIG = cluster_config(("availableRatioBelow", "0.5"), ("availableBytesBelow", "300"))

observation = st.tuples(
    st.integers(0, 5_000),  # ts_ms
    st.sampled_from([None, "a", "b"]),  # cluster (null: telemetry naming none)
    st.integers(1, 3),  # broker
    st.sampled_from(["/d1", "/d2"]),
    st.sampled_from([0, 500, 1_000]),  # total
    st.integers(0, 1_000),  # available (clamped to total)
)


def _order(cluster: str | None, broker: int, log_dir: str) -> tuple[Any, ...]:
    return (cluster is not None, cluster or "", broker, log_dir)


def _expected(rows: list[dict[str, Any]], limited: bool) -> tuple[list[dict[str, Any]], list[tuple]]:
    """Breaches and the ranking of every volume, straight from the rows."""
    by_volume: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        by_volume.setdefault((r["cluster"], r["broker_id"], r["log_dir"]), []).append(r)
    ranked, breaches = [], []
    for key, obs in by_volume.items():
        if limited:
            closeness = [o["headroom"] / max(o["soft_threshold"] - o["hard_threshold"], 1.0) for o in obs]
            rank = (min(o["volume_factor"] for o in obs), min(closeness))
            soft = [o["ts_ms"] for o in obs if o["soft_breached"]]
            if soft:
                hard = [o["ts_ms"] for o in obs if o["hard_breached"]]
                breaches.append(((min(o["volume_factor"] for o in obs), min(o["headroom"] for o in obs),
                                  *_order(*key)), {
                    "cluster": key[0], "broker_id": key[1], "log_dir": key[2],
                    "first_soft_breach": iso(min(soft)),
                    "first_hard_breach": iso(min(hard) if hard else None),
                    "min_available_bytes": min(o["available_bytes"] for o in obs),
                    "total_bytes": max(o["total_bytes"] for o in obs),
                    "deepest_past_hard_bytes": max(0.0, -min(o["headroom"] for o in obs)),
                    "lowest_volume_factor": min(o["volume_factor"] for o in obs)}))
        else:
            rank = (min(o["available_bytes"] / max(o["total_bytes"], 1) for o in obs),)
        ranked.append(((*rank, *_order(*key)), key))
    return [b for _, b in sorted(breaches, key=lambda b: b[0])], [k for _, k in sorted(ranked)]


@settings(parent=settings.get_profile("differential"))
@given(st.lists(observation, min_size=0, max_size=40), st.booleans())
def test_profile_summaries_equal_the_rows(spark, raw, limited) -> None:
    data = [(ts, c, b, d, total, min(avail, total)) for ts, c, b, d, total, avail in raw]
    df = spark.createDataFrame(data, SCHEMA)
    if limited:
        df = df.transform(limits.assess(SOFT, HARD))
    rows = [r.asDict() for r in df.collect()]
    span = (0, 5_000)
    profile = S.volume_profile(df, span) if rows else []
    breaches, ranking = _expected(rows, limited)
    assert S.volume_count(profile) == len(ranking)
    assert S.closest_volumes(profile, 6) == ranking[:6]
    if limited:
        assert S.breaches(CONFIG, profile, None) == breaches  # type: ignore[arg-type]
    series = S.volume_series(profile, ranking[:2])
    width = -(-(span[1] - span[0] + 1) // S.PLOT_BUCKETS)
    want = {}
    for r in rows:
        key = (r["cluster"], r["broker_id"], r["log_dir"])
        if key in ranking[:2]:
            at = (key, (r["ts_ms"] - span[0]) // width * width + span[0])
            lowest = want.get(at, r["available_bytes"])
            want[at] = min(lowest, r["available_bytes"])
    got = {((p["cluster"], p["broker_id"], p["log_dir"]), p["ts_ms"]): p["available"] for p in series}
    assert got == want
    assert [(p["cluster"], p["broker_id"], p["log_dir"]) for p in series] == sorted(
        [k for k, _ in want], key=ranking.index)
