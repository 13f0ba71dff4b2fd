"""Measure the readers' check of JSON Lines on demand: timestamps as epoch milliseconds and as
ISO-8601 text, against a bare scan of the same lines (`make bench` does not run it).

    .venv/bin/python -m benchmarks.readers [--lines 200000] [--rounds 4] [--interpreted]

Writes the same `volumes` lines twice under a temporary folder, once with `ts` in epoch
milliseconds and once as ISO-8601 text (`2024-06-03T00:00:00.858Z`, the same instants), then in
one session, round after round: the bare job (the lines read as text and written to Spark's `noop`
sink) and the readers' check of each file (`check_once(read_telemetry(...))`: parse, type, check
every field and count used and quarantined rows, uncached). The first round warms the session up
and is left out; each is the fastest of the others. Prints the seconds and the ratios to the bare
job, and with `--out FILE` writes them as JSON. Generated code by default, as a run of this many
rows has it; `--interpreted` as a small run has it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.machine import describe
from benchmarks.measure import measure

T0_MS = 1_717_372_800_858


def write_lines(folder: Path, lines: int, iso: bool) -> Path:
    """`lines` volume observations, one a second from `T0_MS`, in `folder/part-00000.jsonl`."""
    folder.mkdir(parents=True)
    with (folder / "part-00000.jsonl").open("w", encoding="utf-8") as out:
        for i in range(lines):
            ms = T0_MS + i * 1000
            ts: Any = ms
            if iso:
                ts = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            out.write(json.dumps({"ts": ts, "cluster": "c1", "broker_id": i % 6,
                                  "log_dir": f"/var/lib/kafka/data-{i % 2}", "total_bytes": 10**12,
                                  "available_bytes": 5 * 10**11 - i, "poll_id": i // 12}) + "\n")
    return folder


def check_rounds(spark: Any, work: Path, lines: int, rounds: int, interpreted: bool) -> dict[str, Any]:
    """The bare scan and the check of each file (module docstring), `rounds` of each in turn in
    `spark`; the session's expression mode is restored after."""
    from quotaplane.core.spark.expressions import FACTORY_MODE, INTERPRETED
    from quotaplane.core.spark.readers import check_once, read_telemetry
    from quotaplane.storage.records import VOLUMES

    inputs = {kind: str(write_lines(work / kind, lines, kind == "iso")) for kind in ("millis", "iso")}

    def bare(path: str) -> None:
        spark.read.text(path).write.format("noop").mode("overwrite").save()

    def check(path: str) -> None:
        checked = check_once(read_telemetry(spark, VOLUMES, path), None, cache=False)
        assert checked.counts.used == lines, checked.counts

    mode = spark.conf.get(FACTORY_MODE)
    times: dict[str, list[float]] = {"bare": [], "millis": [], "iso": []}
    try:
        if interpreted:
            spark.conf.set(FACTORY_MODE, INTERPRETED)
        for _ in range(rounds):
            times["bare"].append(measure(lambda: bare(inputs["millis"]))[1].seconds)
            for kind in ("millis", "iso"):
                times[kind].append(measure(lambda kind=kind: check(inputs[kind]))[1].seconds)
    finally:
        spark.conf.set(FACTORY_MODE, mode)
    best = {name: min(runs[1:] or runs) for name, runs in times.items()}
    return {
        "lines": lines, "expressions": "interpreted" if interpreted else "generated",
        "seconds": {k: round(v, 3) for k, v in best.items()},
        "ratio_to_bare": {k: round(best[k] / best["bare"], 2) for k in ("millis", "iso")},
        "iso_over_millis": round(best["iso"] / best["millis"], 2),
        "rounds": {k: [round(v, 3) for v in runs] for k, runs in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=4, help="rounds, the first one a warm-up")
    parser.add_argument("--interpreted", action="store_true", help="interpreted expressions")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", type=Path, help="also write the results here (JSON)")
    args = parser.parse_args()
    from quotaplane.core.spark.session import build_session

    spark = build_session(master=args.master)
    result = check_rounds(spark, Path(tempfile.mkdtemp(prefix="readers-bench-")), args.lines, args.rounds,
                     args.interpreted)
    result["machine"] = describe(spark)
    best = result["seconds"]
    print(f"{args.lines:,} lines, {result['expressions']} expressions; fastest of rounds 2-{args.rounds}:")
    print(f"  bare scan {best['bare']:.2f} s")
    for kind in ("millis", "iso"):
        ratio = result["ratio_to_bare"][kind]
        print(f"  check, ts as {kind}: {best[kind]:.2f} s = {ratio:.2f}x the bare scan")
    print(f"  ISO over millis: {result['iso_over_millis']:.2f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    spark.stop()


if __name__ == "__main__":
    main()
