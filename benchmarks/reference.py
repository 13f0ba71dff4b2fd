"""The pure-Python reference engines over JSON Lines inputs, driven the way their commands drive them.

Each runner reads with its command's reader (the schema's type and rule checks), evaluates, and
writes one JSON line per decision, as `quotaplane <policy> evaluate` prints them. Run as
`python -m benchmarks.reference --policy P --config FILE --input KIND=PATH ... --out FILE` in a
fresh interpreter (see `benchmarks.prefix`), it prints one JSON object: the wall time of each
phase (`load`, `evaluate`, `write`), the decisions written and its own peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

Phases = dict[str, float]


def _timed(phases: Phases, name: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = fn()
    phases[name] = time.perf_counter() - start
    return value


def _write_lines(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, default=str) + "\n")
            count += 1
    return count


def run_storage(config: Path, files: dict[str, Path], out: Path, phases: Phases) -> int:
    """Rounds of the whole history (`group_rounds`), then `evaluate_rounds`, one line per decision row."""
    from quotaplane.storage.config import load_storage_config
    from quotaplane.storage.engine.readers import read_jsonl
    from quotaplane.storage.engine.rounds import evaluate_rounds, group_rounds
    from quotaplane.storage.records import COLLECTION_ERRORS, MEMBERSHIP, VOLUMES

    cfg = load_storage_config(config)

    def load() -> Any:
        schemas = {"volumes": VOLUMES, "membership": MEMBERSHIP, "collection_errors": COLLECTION_ERRORS}
        records = {kind: [r for _, r in read_jsonl(files[kind], schema)] for kind, schema in schemas.items()}
        return group_rounds(records["volumes"], records["membership"], records["collection_errors"],
                            cfg.check_interval_ms)

    rounds = _timed(phases, "load", load)
    rows = _timed(phases, "evaluate", lambda: evaluate_rounds(cfg, rounds))
    return _timed(phases, "write", lambda: _write_lines(out, rows))


def run_clients(config: Path, files: dict[str, Path], out: Path, phases: Phases) -> int:
    """As `quotaplane clients evaluate --quotas C --requests R` (no storage callback)."""
    from quotaplane.clients.cli import OUTPUT_FIELDS
    from quotaplane.clients.config import load_client_quotas, settings_from_properties
    from quotaplane.clients.engine.evaluate import ClientQuotaEngine
    from quotaplane.clients.records import read_requests_jsonl

    quotas = load_client_quotas(config)
    settings = settings_from_properties({}, storage_combined=False)
    requests = _timed(phases, "load", lambda: read_requests_jsonl(files["client_requests"]))
    engine = ClientQuotaEngine(quotas, settings, None)
    outcomes = _timed(phases, "evaluate", lambda: engine.evaluate(requests))

    def rows() -> Iterator[dict[str, Any]]:
        for outcome in outcomes:
            row = outcome.as_dict()
            yield {k: row[k] for k in OUTPUT_FIELDS}

    return _timed(phases, "write", lambda: _write_lines(out, rows()))


def run_topics(config: Path, files: dict[str, Path], out: Path, phases: Phases) -> int:
    """As `quotaplane topics evaluate --config C --requests R`."""
    from quotaplane.topics.config import load_topics_config
    from quotaplane.topics.engine.evaluate import evaluate
    from quotaplane.topics.engine.requests import read_requests

    cfg = load_topics_config(config)
    requests = _timed(phases, "load", lambda: read_requests(files["topic_requests"]))
    evaluation = _timed(phases, "evaluate", lambda: evaluate(cfg, requests))
    return _timed(phases, "write", lambda: _write_lines(out, (d.as_dict() for d in evaluation.decisions)))


def run_backlog(config: Path, files: dict[str, Path], out: Path, phases: Phases) -> int:
    """As `quotaplane backlog evaluate --policies C --snapshots S`."""
    from quotaplane.backlog.config import load_backlog_policies
    from quotaplane.backlog.engine.evaluate import evaluate
    from quotaplane.backlog.engine.reader import read_snapshots

    policies = load_backlog_policies(config)
    snapshots = _timed(phases, "load", lambda: read_snapshots(files["backlog_snapshots"]))
    results = _timed(phases, "evaluate", lambda: evaluate(policies, snapshots))
    return _timed(phases, "write", lambda: _write_lines(out, (r.as_dict() for r in results)))


def run_notices(config: Path, files: dict[str, Path], out: Path, phases: Phases) -> int:
    """As `quotaplane notices evaluate --config C --traffic T`."""
    from quotaplane.core.telemetry_files import read_input
    from quotaplane.notices.config import load_notice_config
    from quotaplane.notices.engine.evaluate import evaluate
    from quotaplane.notices.records import PRODUCER_TRAFFIC

    cfg = load_notice_config(config)
    traffic = _timed(phases, "load", lambda: list(read_input(files["producer_traffic"], PRODUCER_TRAFFIC)))
    notices = _timed(phases, "evaluate", lambda: evaluate(cfg, traffic))
    return _timed(phases, "write", lambda: _write_lines(out, (n.as_dict() for n in notices)))


RUNNERS: dict[str, Callable[[Path, dict[str, Path], Path, Phases], int]] = {
    "storage": run_storage, "clients": run_clients, "topics": run_topics, "backlog": run_backlog,
    "notices": run_notices,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reference",
                                     description="Time one reference engine over JSON Lines inputs.")
    parser.add_argument("--policy", required=True, choices=sorted(RUNNERS))
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--input", action="append", default=[], metavar="KIND=PATH")
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    files = {k: Path(v) for k, v in (item.split("=", 1) for item in args.input)}
    phases: Phases = {}
    decisions = RUNNERS[args.policy](args.config, files, args.out, phases)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    print(json.dumps({**phases, "decisions": decisions, "peak_rss_bytes": peak}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
