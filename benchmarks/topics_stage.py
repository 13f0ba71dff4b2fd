"""Measure the topic bytes-in stage on generated produce requests, on demand (`make bench` covers all).

    .venv/bin/python -m benchmarks.topics_stage [--requests 1000000] [--brokers 8] [--topics 400]

Generates one hour of requests (Zipf-popular topics, log-normal sizes, a burst on the hottest topic
so that some topics go over their threshold), writes them as Parquet, then times: the numpy kernel
alone (all brokers, thresholds from the reference config), and the whole `quotaplane run` stage on
embedded Spark (read and validate, thresholds, per-broker meters, every table written, metrics and
report). Prints rows/s for each.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from prometheus_client import CollectorRegistry

from quotaplane.core.policy import Outputs, Progress, RunConfigs, StageContext
from quotaplane.topics.config import parse_topics_config
from quotaplane.topics.engine.kernel import evaluate_broker
from quotaplane.topics.policy import TopicsPolicy

T0 = 1_767_225_600_000
HOUR_MS = 3_600_000


def generate(n: int, brokers: int, topics: int, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, topics + 1) ** 1.1
    topic = rng.choice(topics, size=n, p=weights / weights.sum())
    ts = T0 + rng.integers(0, HOUR_MS, size=n)
    burst = (topic == 0) & (ts > T0 + HOUR_MS // 3) & (ts < T0 + HOUR_MS // 2)
    size = np.where(burst, 4, 1) * rng.lognormal(7.5, 0.8, size=n).astype(np.int64)
    names = np.array([f"t{t:04d}" for t in range(topics)], dtype=object)
    return pd.DataFrame({"ts_ms": ts, "broker_id": rng.integers(0, brokers, size=n), "topic": names[topic],
                         "bytes": size})


CONFIG = """\
total.bytes.in.per.sec.threshold=100000
message.max.bytes=20000
topic.t0000.bytes.in.per.sec.threshold=20000
topic.t0001.bytes.in.per.sec.threshold=10000
topic.t0002.bytes.in.per.sec.threshold@{change}=15000
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=8)
    parser.add_argument("--topics", type=int, default=400)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    from quotaplane.core.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="topics-bench-"))
    df = generate(args.requests, args.brokers, args.topics)
    (work / "telemetry").mkdir()
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, work / "telemetry" / "topic_requests.parquet")
    config_path = work / "topics.properties"
    config_path.write_text(CONFIG.format(change=T0 + HOUR_MS // 2))
    config = parse_topics_config({"total.bytes.in.per.sec.threshold": "100000"})

    start = time.perf_counter()
    as_of = int(df["ts_ms"].max())
    for _, group in df.groupby("broker_id"):
        group = group.sort_values("ts_ms", kind="stable")
        codes, names = pd.factorize(group["topic"])
        evaluate_broker(group["ts_ms"].to_numpy(), codes, group["bytes"].to_numpy(),
                        np.full(len(group), 100000 // args.topics), len(names), config.total_threshold,
                        config.message_max_bytes, as_of)
    kernel = time.perf_counter() - start
    print(f"kernel only: {len(df):,} requests in {kernel:.2f}s = {len(df) / kernel:,.0f} rows/s")

    spark = build_session(master=args.master)
    ctx = StageContext(spark=spark, telemetry_dir=work / "telemetry", out_dir=work / "out",
                       registry=CollectorRegistry(), progress=Progress())
    policy = TopicsPolicy()
    config = policy.load_config(RunConfigs(topics=config_path))
    assert config is not None
    start = time.perf_counter()
    result = policy.run_stage(ctx, config, Outputs())
    stage = time.perf_counter() - start
    assert result is not None
    print(f"stage ({args.master}): {len(df):,} requests in {stage:.1f}s = {len(df) / stage:,.0f} rows/s")
    for line in result.console:
        print(line)
    spark.stop()


if __name__ == "__main__":
    main()
