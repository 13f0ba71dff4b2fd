"""Running one policy's Spark stage in a test, as the runner would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from quotaplane.core.policy import Outputs, Policy, Progress, RunConfigs, StageContext, StageResult


def run_policy_stage(spark: Any, policy: Policy[Any], telemetry: Path, out: Path, configs: RunConfigs,
                     outputs: Outputs | None = None, detail: bool = False,
                     ) -> tuple[StageContext, StageResult, Outputs]:
    """Load the policy's config from `configs` and run its stage over `telemetry` into `out`
    (`detail`: as `quotaplane run --detail`)."""
    config = policy.load_config(configs)
    assert config is not None, f"{policy.name}: not configured by {configs}"
    ctx = StageContext(spark=spark, telemetry_dir=telemetry, out_dir=out, registry=CollectorRegistry(),
                       progress=Progress(None), detail=detail)
    outputs = outputs if outputs is not None else Outputs()
    return ctx, policy.run_stage(ctx, config, outputs), outputs
