"""Rendering and writing a `prometheus_client` registry in the text exposition format."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest


def render(registry: CollectorRegistry) -> str:
    """The registry's metrics as Prometheus text (format 0.0.4)."""
    return generate_latest(registry).decode("utf-8")


def write(registry: CollectorRegistry, path: str | Path) -> Path:
    """Write the registry's metrics to `path` (parents created); return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(registry), encoding="utf-8")
    return out
