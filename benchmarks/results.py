"""Results of a tier: per policy, one point per scale, the linear fits, the targets; and the
extrapolation of a larger tier from a measured one's fits."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.fit import linear_fit
from benchmarks.policies import POLICIES, PolicySpec
from benchmarks.prefix import ReferenceRun
from benchmarks.stages import BareRun, StageRun

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Targets: every policy's decisions within 3x of its bare job; the whole stage (metrics, summary and
# report included) within 1.5x of its decisions from `STAGE_TARGET_FROM` times the tier's span on; the
# pipeline faster than the reference engine in these tiers.
BARE_TARGET = 3.0
# Where a policy's semantics cost more than the bare job can (`benchmarks.floors`), its floor job is
# the baseline to beat, with the same limit.
FLOOR_TARGET = BARE_TARGET
STAGE_TARGET, STAGE_TARGET_FROM = 1.5, 4.0
REFERENCE_TARGET_TIERS = ("M", "L")

# What each number of a point means (copied into every results file).
METHOD = {
    "decisions_seconds": (
        "the policy's stage of `quotaplane run`, timed by its own progress steps except the one that "
        "builds the report: reading and validating the input (with its quarantine), evaluating the "
        "policy and writing every decision table"),
    "stage_seconds": "the whole stage, including its metrics, summary and report sections with their plots",
    "bare_seconds": (
        "benchmarks/baseline.py over each input of the policy (scan the Parquet, group by the policy's "
        "key and time bucket, aggregate, write Parquet), times summed; same SparkSession"),
    "floor_seconds": (
        "benchmarks/floors.py: a hand-written minimal Spark job doing the work the policy's semantics "
        "need beyond the bare job's grouping (the shuffle, sort and per-key state of every row), "
        "writing Parquet; same SparkSession; none for a policy without one"),
    "reference": (
        "the policy's pure-Python engine as its command drives it (JSON Lines reader with the schema "
        "checks, evaluation, one JSON line per decision written) in a fresh interpreter, over a JSON "
        "Lines copy of the input; beyond reference_rows rows of the main input over a prefix (whole "
        "rounds and ticks) whose time is scaled by total rows / prefix rows (estimated_seconds)"),
    "peak_rss_bytes": (
        "resident memory of this process, the Spark JVM and its Python workers, sampled every 50 ms "
        "during the stage (the JVM keeps the heap it has grown, up to spark.driver.memory)"),
    "jvm_heap_peak_bytes": (
        "the driver JVM's heap pools' peaks during the stage, after a full GC at its start "
        "(jvm_old_gen_peak_bytes: the old generation's)"),
    "ratios": (
        "time over time: ratio_to_bare = decisions_seconds / bare_seconds; ratio_to_reference = "
        "decisions_seconds / reference estimated_seconds (below 1: the pipeline is faster)"),
    "fits": "least squares of seconds against input rows over the scales, with R²",
}


def point(scale: float, policy: PolicySpec, rows_by_kind: dict[str, int], stage: StageRun, bare: BareRun,
          reference: ReferenceRun | None, floor: BareRun | None = None) -> dict[str, Any]:
    """One measured point. Ratios are times over times: below 1 the first is faster."""
    rows = sum(rows_by_kind[k] for k in policy.kinds())
    out: dict[str, Any] = {
        "scale": scale,
        "input_rows": rows,
        "rows_by_kind": {k: rows_by_kind[k] for k in policy.kinds()},
        "decisions_seconds": stage.decisions_seconds,
        "stage_seconds": stage.seconds,
        "rows_per_second": rows / stage.decisions_seconds if stage.decisions_seconds > 0 else None,
        "peak_rss_bytes": stage.peak_rss_bytes,
        "jvm_heap_peak_bytes": stage.jvm_heap_peak_bytes,
        "jvm_old_gen_peak_bytes": stage.jvm_old_gen_peak_bytes,
        "bare_seconds": bare.seconds,
        "ratio_to_bare": stage.decisions_seconds / bare.seconds if bare.seconds > 0 else None,
        "stage_ratio_to_bare": stage.seconds / bare.seconds if bare.seconds > 0 else None,
        "floor_seconds": floor.seconds if floor else None,
        "ratio_to_floor": stage.decisions_seconds / floor.seconds if floor and floor.seconds > 0 else None,
        "stage": stage.as_dict(),
        "bare": bare.as_dict(),
        "floor": floor.as_dict() if floor else None,
        "reference": reference.as_dict() if reference else None,
    }
    if reference is not None and reference.estimated_seconds > 0:
        out["ratio_to_reference"] = stage.decisions_seconds / reference.estimated_seconds
        out["reference_rows_per_second"] = rows / reference.estimated_seconds
    else:
        out["ratio_to_reference"] = None
        out["reference_rows_per_second"] = None
    return out


def fits(points: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Seconds against input rows, for the decisions, the whole stage, the bare job and the reference."""
    if len({p["input_rows"] for p in points}) < 2:
        return None
    xs = [float(p["input_rows"]) for p in points]
    out = {name: linear_fit(xs, [float(p[key]) for p in points]).as_dict()
           for name, key in (("decisions", "decisions_seconds"), ("stage", "stage_seconds"),
                             ("bare", "bare_seconds"))}
    if all(p.get("floor_seconds") is not None for p in points):
        out["floor"] = linear_fit(xs, [float(p["floor_seconds"]) for p in points]).as_dict()
    if all(p["reference"] for p in points):
        ys = [float(p["reference"]["estimated_seconds"]) for p in points]
        out["reference"] = linear_fit(xs, ys).as_dict()
    out["x"] = "input_rows"
    out["y"] = "seconds"
    return out


def targets(tier: str, policy: str, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target with its value and whether it is met, per scale."""
    out = [{"target": f"decisions within {BARE_TARGET:g}x of the bare Spark job", "metric": "ratio_to_bare",
            "limit": BARE_TARGET, "applies": True,
            "by_scale": {f"{p['scale']:g}": _check(p["ratio_to_bare"], BARE_TARGET, inclusive=True)
                         for p in points}},
           {"target": f"decisions within {FLOOR_TARGET:g}x of the floor job of the policy's semantics",
            "metric": "ratio_to_floor", "limit": FLOOR_TARGET,
            "applies": any(p.get("floor_seconds") is not None for p in points),
            "by_scale": {f"{p['scale']:g}": _check(p.get("ratio_to_floor"), FLOOR_TARGET, inclusive=True)
                         for p in points}},
           {"target": f"whole stage within {STAGE_TARGET:g}x of its decisions from {STAGE_TARGET_FROM:g}x on",
            "metric": "stage_ratio_to_decisions", "limit": STAGE_TARGET, "applies": True,
            "by_scale": {f"{p['scale']:g}": _check(p["stage_seconds"] / p["decisions_seconds"]
                                                   if p["decisions_seconds"] > 0 else None,
                                                   STAGE_TARGET, inclusive=True)
                         for p in points if p["scale"] >= STAGE_TARGET_FROM}}]
    out.append({"target": "pipeline faster than the reference engine", "metric": "ratio_to_reference",
                "limit": 1.0, "applies": tier.split("-")[0] in REFERENCE_TARGET_TIERS,
                "by_scale": {f"{p['scale']:g}": _check(p["ratio_to_reference"], 1.0, inclusive=False)
                             for p in points}})
    return out


def _check(value: float | None, limit: float, inclusive: bool) -> dict[str, Any]:
    met = None if value is None else (value <= limit if inclusive else value < limit)
    return {"value": value, "met": met}


def result_path(folder: Path, tier: str, day: date | None = None) -> Path:
    return folder / f"{tier}-{(day or date.today()).isoformat()}.json"


def write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def latest(folder: Path) -> dict[str, dict[str, Any]]:
    """The most recent results file of each tier in `folder` (by the date in its name). Only files named
    after the tier they describe count: other benchmarks' results and copies of a partial run
    (`forecast-<date>.json`, `notices-S-<date>.json`) are left out."""
    found: dict[str, tuple[str, Path, dict[str, Any]]] = {}
    for path in sorted(folder.glob("*-????-??-??.json")):
        tier, day = path.stem[:-11], path.stem[-10:]
        document = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(document.get("tier"), dict) or document["tier"].get("name") != tier:
            continue
        if tier not in found or day >= found[tier][0]:
            found[tier] = (day, path, document)
    return {tier: {**document, "file": path.name} for tier, (_, path, document) in found.items()}


# ---- extrapolation -------------------------------------------------------------------------------

def _span(tier: dict[str, Any]) -> tuple[float, float]:
    """(storage rounds, request/backlog window hours) of a tier's base span."""
    rounds = tier["days"] * 86_400 / tier["interval_seconds"]
    window = tier["window_hours"] if tier["window_hours"] is not None else tier["days"] * 24
    return rounds, window


def kind_factors(measured: dict[str, Any], target: dict[str, Any]) -> dict[str, float]:
    """How many times more rows of each kind `target`'s base span has than `measured`'s: fleet width
    (volumes, brokers, clients, Pulsar topics) times time (rounds, window hours)."""
    rounds_m, window_m = _span(measured)
    rounds_t, window_t = _span(target)
    rounds, window = rounds_t / rounds_m, window_t / window_m
    volumes = (target["brokers"] * target["log_dirs"]) / (measured["brokers"] * measured["log_dirs"])
    return {
        "volumes": rounds * volumes,
        "membership": rounds * target["brokers"] / measured["brokers"],
        "collection_errors": rounds,
        "client_requests": window * target["clients"] / measured["clients"],
        "topic_requests": window * target["clients"] / measured["clients"],
        "backlog_snapshots": window * target["pulsar_topics"] / measured["pulsar_topics"],
        "producer_traffic": window * target["pulsar_topics"] / measured["pulsar_topics"],
    }


def _estimate(fit: dict[str, Any], largest: dict[str, Any], key: str, rows: int) -> tuple[float, str]:
    """Seconds at `rows` from the fit; when the fit does not grow with the rows (a noisy curve), the
    largest point's seconds per row instead."""
    if fit["slope"] > 0:
        return fit["intercept"] + fit["slope"] * rows, "fit"
    return largest[key] / largest["input_rows"] * rows, "proportional"


def extrapolate(measured: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """Estimate `target` (a tier description) from the fits of a measured tier's results."""
    factors = kind_factors(measured["tier"], target)
    policies: dict[str, Any] = {}
    for name, bench in measured["policies"].items():
        points = bench.get("points") or []
        if not points or not bench.get("fits"):
            continue
        largest = max(points, key=lambda p: p["input_rows"])
        per_scale = {k: v / largest["scale"] for k, v in largest["rows_by_kind"].items()}
        rows_by_kind = {k: round(per_scale[k] * factors[k]) for k in POLICIES[name].kinds()}
        rows = sum(rows_by_kind.values())
        fit = bench["fits"]
        decisions, basis = _estimate(fit["decisions"], largest, "decisions_seconds", rows)
        stage, _ = _estimate(fit["stage"], largest, "stage_seconds", rows)
        bare, _ = _estimate(fit["bare"], largest, "bare_seconds", rows)
        floor = _estimate(fit["floor"], largest, "floor_seconds", rows)[0] if fit.get("floor") else None
        reference = None
        if largest.get("reference"):
            reference = largest["reference"]["estimated_seconds"] / largest["input_rows"] * rows
        policies[name] = {
            "input_rows": rows,
            "rows_by_kind": rows_by_kind,
            "decisions_seconds": decisions,
            "stage_seconds": stage,
            "bare_seconds": bare,
            "floor_seconds": floor,
            "reference_seconds": reference,
            "rows_per_second": rows / decisions if decisions > 0 else None,
            "ratio_to_bare": decisions / bare if bare > 0 else None,
            "ratio_to_floor": decisions / floor if floor else None,
            "ratio_to_reference": decisions / reference if reference else None,
            "beyond_largest_measured": rows / largest["input_rows"],
            "fit_r2": fit["decisions"]["r2"],
            "basis": basis,
        }
    return {
        "tier": target,
        "extrapolated": True,
        "from": {"tier": measured["tier"]["name"], "file": measured.get("file"),
                 "date": measured.get("date")},
        "method": ("rows of each kind = the measured tier's rows per unit of scale times the ratio of fleet "
                   "width (volumes, brokers, client ids or Pulsar topics) and of time span (rounds or window "
                   "hours); seconds = the measured linear fit of seconds against input rows at those rows "
                   "(pipeline decisions, whole stage, bare job, floor job; where a fit does not grow with "
                   "the rows, the largest point's seconds per row: basis 'proportional'); reference = its "
                   "measured seconds per row at the largest point times those rows. "
                   "Memory is not extrapolated."),
        "machine": measured.get("machine"),
        "policies": policies,
    }
