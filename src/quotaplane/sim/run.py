"""Running a scenario: build its model, generate every requested kind chunk by chunk, write them.

`generate` yields (kind, table) chunks without writing anything (tests, benchmarks);
`simulate` writes a telemetry directory in the layout `quotaplane.core.policy.find_input`
reads (`DIR/<kind>/part-*.<ext>`), the scenario's configuration files beside it (`DIR/<file>`, e.g.
`notices.properties`) and `DIR/manifest.json` (scenario, seed, parameters, rows per kind, configs).
The same scenario, parameters and format give the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from quotaplane import __version__
from quotaplane.core.errors import ConfigError
from quotaplane.sim.backlog import BacklogGenerator
from quotaplane.sim.kinds import BACKLOG_KINDS, KINDS, PRODUCER_KINDS, REQUEST_KINDS, STORAGE_KINDS
from quotaplane.sim.model import ClusterModel
from quotaplane.sim.params import SimParams, validate
from quotaplane.sim.producers import ProducerTrafficGenerator
from quotaplane.sim.requests import RequestGenerator
from quotaplane.sim.rng import Fields
from quotaplane.sim.scenarios import SCENARIOS, Scenario, scenario_names
from quotaplane.sim.storage import StorageGenerator
from quotaplane.sim.writers import FORMATS, PartWriter

DEFAULT_CHUNK_ROWS = 500_000
_SAFE_NAME = re.compile(r'[^"\\\x00-\x1f]*')


def get_scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise ConfigError("--scenario", name, "is not a scenario", f"one of {', '.join(scenario_names())}")
    return SCENARIOS[name]


def resolve(name: str, overrides: dict[str, Any] | None = None) -> tuple[Scenario, SimParams]:
    """The scenario and its parameters: its defaults with `overrides` (None values ignored), validated."""
    found = get_scenario(name)
    params = found.defaults.with_overrides(overrides or {})
    validate(params, found.min_brokers)
    return found, params


def parse_kinds(text: str | Sequence[str] | None) -> list[str]:
    """Kinds in the canonical order; `None` means all of them."""
    if text is None:
        return list(KINDS)
    wanted = [k.strip() for k in (text.split(",") if isinstance(text, str) else text) if k.strip()]
    for kind in wanted:
        if kind not in KINDS:
            raise ConfigError("--kinds", kind, "is not a telemetry kind", f"one of {', '.join(KINDS)}")
    if not wanted:
        raise ConfigError("--kinds", text, "names no telemetry kind")
    return [k for k in KINDS if k in wanted]


def check_names(model: ClusterModel) -> None:
    """Names are written into JSON unescaped: refuse quotes, backslashes and control characters."""
    names: Iterable[str] = [model.cluster, *model.volumes.log_dir, *model.topics.names, *model.clients.user,
                            *model.clients.client_id, *(t.name for t in model.pulsar),
                            *(s.name for t in model.pulsar for s in t.subscriptions)]
    if model.producers is not None:
        conns, producers = model.producers.connections, model.producers.producers
        names = [*names, *(c.connection_id for c in conns), *(c.broker for c in conns),
                 *(p.topic for p in producers)]
    for name in names:
        if not _SAFE_NAME.fullmatch(name):
            raise ConfigError("name", name, "must not contain quotes, backslashes or control characters")


def generate(model: ClusterModel, seed: int, kinds: Sequence[str],
             chunk_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[tuple[str, pa.Table]]:
    """Every chunk of every requested kind, family by family (storage, requests, backlog, producers)."""
    check_names(model)
    fields = Fields(seed)
    families = ((STORAGE_KINDS, StorageGenerator), (REQUEST_KINDS, RequestGenerator),
                (BACKLOG_KINDS, BacklogGenerator), (PRODUCER_KINDS, ProducerTrafficGenerator))
    for family, generator in families:
        wanted = [k for k in family if k in kinds]
        if not wanted:
            continue
        made = StorageGenerator(model, fields, chunk_rows, "partition_sizes" in wanted) \
            if family is STORAGE_KINDS else generator(model, fields, chunk_rows)
        for chunk in made.chunks():
            for kind in wanted:
                yield kind, chunk[kind]


def simulate(scenario: str, out: Path, overrides: dict[str, Any] | None = None,
             kinds: Sequence[str] | None = None, fmt: str = "jsonl", chunk_rows: int = DEFAULT_CHUNK_ROWS,
             part_rows: int = 5_000_000) -> dict[str, Any]:
    """Write the telemetry of `scenario` under `out`; return the manifest."""
    if fmt not in FORMATS:
        raise ConfigError("--format", fmt, f"must be one of {', '.join(FORMATS)}")
    found, params = resolve(scenario, overrides)
    wanted = parse_kinds(kinds if kinds is not None else found.kinds)
    model = found.build(params)
    out.mkdir(parents=True, exist_ok=True)
    writers = {k: PartWriter(out / k, KINDS[k], fmt, part_rows) for k in wanted}
    for kind, chunk in generate(model, params.seed, wanted, chunk_rows):
        writers[kind].write(chunk)
    files = {k: [str(p.relative_to(out)) for p in w.close()] for k, w in writers.items()}
    manifest = {
        "generator": f"quotaplane {__version__} simulate",
        "scenario": found.name,
        "seed": params.seed,
        "format": fmt,
        "arguments": params.as_dict(),
        "cluster": model.cluster,
        "start_ms": model.start_ms,
        "end_ms": model.end_ms,
        "window_ms": [model.window_start_ms, model.window_end_ms],
        "rows": {k: w.rows for k, w in writers.items()},
        "files": files,
    }
    if model.configs:
        for name, text in model.configs.items():
            (out / name).write_text(text, encoding="utf-8")
        manifest["configs"] = sorted(model.configs)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
