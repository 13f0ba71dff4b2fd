"""The main job, `quotaplane run`: every policy stage over one telemetry directory."""

from __future__ import annotations

# Policy stages, in the order they run; each module exposes `run_stage(ctx) -> StageResult | None`
# (see quotaplane.pipeline.stage). Later stages may use what earlier ones put in `ctx.shared`.
STAGE_MODULES: tuple[str, ...] = (
)
