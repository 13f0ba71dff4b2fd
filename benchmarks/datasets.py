"""Benchmark inputs: each (tier, scale) is simulated once, as Parquet, and reused while its
parameters are unchanged (`benchmarks/data/` is not committed)."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.tiers import SCENARIO, Tier
from quotaplane.sim.kinds import KINDS
from quotaplane.sim.run import resolve, simulate

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Dataset:
    """A telemetry directory and its manifest (rows per kind, span, parameters)."""

    tier: str
    scale: float
    path: Path
    manifest: dict[str, Any]
    generated_seconds: float | None  # None when reused

    def rows(self, kind: str) -> int:
        return int(self.manifest["rows"].get(kind, 0))


def scale_label(scale: float) -> str:
    return f"x{scale:g}"


def _wanted(tier: Tier, scale: float) -> dict[str, Any]:
    _, params = resolve(SCENARIO, tier.overrides(scale))
    return params.as_dict()


def _reusable(path: Path, arguments: dict[str, Any]) -> dict[str, Any] | None:
    manifest_path = path / "manifest.json"
    if not manifest_path.is_file():
        return None
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if (manifest.get("scenario") != SCENARIO or manifest.get("format") != "parquet"
            or manifest.get("arguments") != arguments or set(manifest.get("rows", {})) != set(KINDS)):
        return None
    if not all((path / f).is_file() for files in manifest["files"].values() for f in files):
        return None
    return manifest


def ensure(tier: Tier, scale: float, root: Path = DATA_DIR) -> Dataset:
    """The dataset of `tier` at `scale`, simulated unless an identical one is already on disk."""
    path = root / tier.name / scale_label(scale)
    arguments = _wanted(tier, scale)
    manifest = _reusable(path, arguments)
    if manifest is not None:
        return Dataset(tier.name, scale, path, manifest, None)
    if path.exists():
        shutil.rmtree(path)
    start = time.perf_counter()
    manifest = simulate(SCENARIO, path, tier.overrides(scale), kinds=list(KINDS), fmt="parquet")
    return Dataset(tier.name, scale, path, manifest, time.perf_counter() - start)
