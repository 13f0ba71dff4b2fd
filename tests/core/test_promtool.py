"""Prometheus' own checker on everything quotaplane writes for Prometheus.

`promtool check metrics` must print nothing for every metrics file the project writes: the
`metrics.prom` of `quotaplane run` on the bundled example and the `--metrics FILE` of each
`quotaplane <policy> evaluate` that has one. The alert rules in deploy/prometheus pass
`promtool check rules` and their unit tests, and fire on the bundled example's metrics the alerts
its end state calls for; the Grafana dashboard's queries parse, and the rules and the dashboard
name only metrics that quotaplane exports. promtool comes with Debian's `prometheus` package, which
`make test` installs; without it these tests fail, saying so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import re
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from quotaplane.cli import main
from quotaplane.client.metrics import ClientMetrics
from quotaplane.core.policy import RunConfigs
from quotaplane.core.runner import run_pipeline
from quotaplane.live.metrics import LiveMetrics, LiveStatus
from quotaplane.live.notice_channel import NoticeChannel
from quotaplane.live.service import live_policies
from quotaplane.registry import POLICIES
from quotaplane.run_command import bundled_example
from quotaplane.stream.status import StreamStatus
from tests.support import tools

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "quotaplane-rules.yml"
RULE_TESTS = REPO / "deploy" / "prometheus" / "quotaplane-rules.test.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "quotaplane-dashboard.json"
# Prometheus' own series of a scrape, which the rules read for a service that is down or gone.
SCRAPE_METRICS = {"up"}
# Families whose samples appear only once there is a value (`_family_names` sees the others).
STREAM_WATERMARK = "quotaplane_stream_watermark_seconds"
# Grafana's variables, replaced to parse a dashboard query as PromQL.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$cluster": ".*", "$config": ".*"}
METRIC_NAME = re.compile(r"\b(?:quotaplane|kafka_server|pulsar)_[a-z0-9_]+|\bup\b(?=\{)")
# The sample names of a family by type (prometheus_client names a counter's family without `_total`).
SAMPLE_SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}
NOTICE_METRIC_PREFIXES = ("quotaplane_notice", "quotaplane_client_producer_", "quotaplane_client_notice_")
STORAGE_ALERTS = ("QuotaplaneThrottlingActive", "QuotaplaneFallbackApplied", "QuotaplaneVolumePastSoftLimit",
                  "QuotaplaneVolumePastHardLimit", "QuotaplaneCollectionStale")


def promtool_path() -> str:
    return tools.promtool()


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool_path(), *args], input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture(scope="module")
def run_metrics(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`metrics.prom` of the main job on the bundled example (what `quotaplane run` writes), with
    `client.quota.value.metric.enable=true` added to its broker properties so that the KIP-786
    `quotaplane_kafka_server_*_quota_value` families are written too (every other family is as by default)."""
    telemetry, configs = bundled_example()
    out = tmp_path_factory.mktemp("run")
    assert configs.storage is not None
    storage = tmp_path_factory.mktemp("config") / "storage-with-quota-value-metric.properties"
    storage.write_text(configs.storage.read_text() + "\nclient.quota.value.metric.enable=true\n")
    configs = dataclasses.replace(configs, storage=storage)
    outcome = run_pipeline(telemetry, configs, out, POLICIES, stream=None, spark=spark)
    return outcome.metrics_path


def _evaluate(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0, argv


@pytest.fixture(scope="module")
def evaluate_metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The `--metrics FILE` of every `quotaplane <policy> evaluate` that offers it, on the bundled
    example's configurations and telemetry (storage: its last round, with each source and a failed
    collection; backlog: topic-level and namespace-level metrics)."""
    telemetry, configs = bundled_example()
    tmp = tmp_path_factory.mktemp("evaluate")
    lines = (telemetry / "volumes" / "part-00000.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    last = max(r["poll_id"] for r in rows)
    volumes = tmp / "volumes.jsonl"
    volumes.write_text("".join(json.dumps({k: r[k] for k in ("broker_id", "log_dir", "total_bytes",
                                                              "available_bytes")}) + "\n"
                               for r in rows if r["poll_id"] == last))
    assert configs.backlog_policies is not None
    policies = json.loads(configs.backlog_policies.read_text())
    policies["broker"]["exposeTopicLevelMetricsInPrometheus"] = False
    by_namespace = tmp / "backlog-namespace-level.json"
    by_namespace.write_text(json.dumps(policies))
    storage = ["storage", "evaluate", "--volumes", str(volumes)]
    runs = {
        "storage-cluster": [*storage, "--config", str(configs.storage)],
        "storage-local": [*storage, "--config", str(configs.storage_compare), "--broker", "2"],
        "storage-fallback": [*storage, "--config", str(configs.storage), "--collection-error",
                             "DESCRIBE_LOG_DIR_ERROR"],
        "topics": ["topics", "evaluate", "--config", str(configs.topics), "--requests",
                   str(telemetry / "topic_requests" / "part-00000.jsonl")],
        "backlog-topic-level": ["backlog", "evaluate", "--policies", str(configs.backlog_policies),
                                "--snapshots", str(telemetry / "backlog_snapshots" / "part-00000.jsonl")],
        "backlog-namespace-level": ["backlog", "evaluate", "--policies", str(by_namespace),
                                    "--snapshots", str(telemetry / "backlog_snapshots" / "part-00000.jsonl")],
        "notices": ["notices", "evaluate", "--config", str(configs.notices), "--traffic",
                    str(telemetry / "producer_traffic")],
    }
    files = {}
    for name, argv in runs.items():
        files[name] = tmp / f"{name}.prom"
        _evaluate([*argv, "--metrics", str(files[name])])
    return files


def test_every_evaluate_with_metrics_is_covered() -> None:
    offering = {p.name for p in POLICIES if p.evaluator is not None and p.evaluator.metrics}
    assert offering == {"storage", "topics", "backlog", "notices"}  # a new one: add it to `evaluate_metrics`


@pytest.mark.parametrize("name", ["storage-cluster", "storage-local", "storage-fallback", "topics",
                                  "backlog-topic-level", "backlog-namespace-level", "notices"])
def test_promtool_check_metrics_is_silent_on_evaluate_metrics(evaluate_metrics: dict[str, Path],
                                                              name: str) -> None:
    text = evaluate_metrics[name].read_text()
    assert "# TYPE " in text
    result = promtool("check", "metrics", stdin=text)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.spark
@pytest.mark.slow
def test_promtool_check_metrics_is_silent_on_the_run_metrics(run_metrics: Path) -> None:
    promtool_path()
    text = run_metrics.read_text()
    for family in ("quotaplane_storage_throttle_factor", "quotaplane_client_throttle_time_seconds_total",
                   "quotaplane_kafka_server_produce_quota_value",
                   "quotaplane_client_quota_utilisation_ratio",
                   "quotaplane_topic_bytes_in_threshold_bytes_per_second",
                   "quotaplane_pulsar_storage_backlog_size"):
        assert f"\n{family}{{" in text, family
    result = promtool("check", "metrics", stdin=text)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_promtool_check_rules_passes() -> None:
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_rule_unit_tests_pass() -> None:
    result = promtool("test", "rules", str(RULE_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_unit_test_that_fires_it_and_one_that_does_not() -> None:
    alerts = set(re.findall(r"^\s+- alert: (\w+)$", RULES.read_text(), re.M))
    # each case: `alertname: X`, then `exp_alerts: []` (none may fire) or `exp_alerts:` and the alerts
    cases = re.findall(r"^\s+alertname: (\w+)\n\s+exp_alerts:( \[\])?$", RULE_TESTS.read_text(), re.M)
    firing = {name for name, empty in cases if not empty}
    silent = {name for name, empty in cases if empty}
    assert alerts - firing == set() and alerts - silent == set()
    assert {"QuotaplaneVolumeHardLimitWithin24h", "QuotaplaneServiceDown", "QuotaplaneServiceAbsent",
            "QuotaplaneBacklogQuotaWithin24h", "QuotaplaneStreamBehind"} <= alerts


def _notice_metrics() -> set[str]:
    """The sample names of the live service's notice channel and of the producer (`quotaplane.client`),
    from their collectors: some of their families have no sample until a notice is sent."""
    registry = CollectorRegistry()
    NoticeChannel(registry=registry)
    ClientMetrics(registry)
    return {family.name + suffix for family in registry.collect() for suffix in SAMPLE_SUFFIXES[family.type]}


def _family_names(*collectors: object) -> set[str]:
    registry = CollectorRegistry()
    for collector in collectors:
        registry.register(collector)  # type: ignore[arg-type]
    return {family.name + suffix for family in registry.collect() for suffix in SAMPLE_SUFFIXES[family.type]}


def _service_metrics() -> set[str]:
    """The sample names of the live service's own families and of the stream's, from their
    collectors (before any round or commit: families without samples count)."""
    _, configs = bundled_example()
    assert configs.storage is not None
    loaded = {p.name: p.load_config(RunConfigs(storage=configs.storage)) for p in POLICIES if p.live}
    deciders = [p.decider for p in live_policies(loaded, ("volumes", "partition_sizes"))]
    live = LiveMetrics(LiveStatus("c"), deciders)
    return _family_names(live, StreamStatus(["storage"])) | {STREAM_WATERMARK}


def _samples(path: Path) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for family in text_string_to_metric_families(path.read_text())
            for s in family.samples]


def _series(name: str, labels: dict[str, str]) -> str:
    def quoted(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return name + "{" + ",".join(f'{k}="{quoted(v)}"' for k, v in sorted(labels.items())) + "}"


LEGACY = {"quotaplane_storage_total_used_bytes": "used", "quotaplane_storage_soft_limit_bytes": "soft",
          "quotaplane_storage_hard_limit_bytes": "hard"}


def _expected_storage_alerts(samples: list[tuple[str, dict[str, str], float]]) -> set[tuple[str, ...]]:
    """(alertname, config, broker_id, log_dir) of the storage alerts on constant series: the rules'
    conditions (deploy/prometheus/quotaplane-rules.yml) restated over the samples."""
    expected: set[tuple[str, ...]] = set()
    legacy: dict[tuple[tuple[str, str], ...], dict[str, float]] = {}
    for name, labels, value in samples:
        config = labels.get("config", "")
        if config == "compare":
            continue
        if name == "quotaplane_storage_throttle_factor" and value < 1:
            expected.add(("QuotaplaneThrottlingActive", config, "", ""))
        elif name == "quotaplane_storage_throttling_volume":
            alert = "QuotaplaneVolumePastHardLimit" if value == 0 else "QuotaplaneVolumePastSoftLimit"
            expected.add((alert, config, labels["broker_id"], labels["log_dir"]))
        elif name in LEGACY:
            legacy.setdefault(tuple(sorted(labels.items())), {})[LEGACY[name]] = value
    for key, v in legacy.items():
        if v["used"] >= v["hard"]:
            expected.add(("QuotaplaneVolumePastHardLimit", dict(key)["config"], "", ""))
        elif v["used"] > v["soft"]:
            expected.add(("QuotaplaneVolumePastSoftLimit", dict(key)["config"], "", ""))
    return expected


@pytest.mark.spark
@pytest.mark.slow
def test_the_rules_fire_on_the_bundled_example(run_metrics: Path, tmp_path: Path) -> None:
    """The run's metrics as constant series for 15 minutes: broker 2's disk is full at the end of the
    example, so throttling is active and a volume is past its hard limit; the --compare-config
    (local source) what-if alerts nothing; counters do not move, so no fallback alert."""
    promtool_path()
    samples = _samples(run_metrics)
    series = [{"series": _series(name, labels),
               "values": " ".join(["NaN" if math.isnan(value) else repr(value)] * 16)}
              for name, labels, value in samples]
    storage = _expected_storage_alerts(samples)
    assert ("QuotaplaneThrottlingActive", "main", "", "") in storage
    assert any(a[0] == "QuotaplaneVolumePastHardLimit" and a[1] == "main" for a in storage)
    over = sum(1 for name, _, value in samples
               if name == "quotaplane_client_quota_utilisation_ratio" and value > 1)
    alerts = "|".join(STORAGE_ALERTS)
    tests = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [
            {"expr": f'count by (alertname, config, broker_id, log_dir) '
                     f'(ALERTS{{alertstate="firing",alertname=~"{alerts}"}})',
             "eval_time": "10m",
             "exp_samples": [{"labels": _series("", {k: v for k, v in zip(
                 ("alertname", "config", "broker_id", "log_dir"), a, strict=True) if v}), "value": 1}
                 for a in sorted(storage)]},
            {"expr": 'count(ALERTS{alertstate="firing",alertname="QuotaplaneClientOverQuota"})',
             "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": over}] if over else []},
        ]}]}
    spec = tmp_path / "example.test.json"  # JSON is YAML
    spec.write_text(json.dumps(tests))
    result = promtool("test", "rules", str(spec))
    assert result.returncode == 0, result.stdout + result.stderr


def _dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    queries += [a["expr"] for a in dashboard["annotations"]["list"] if "expr" in a]
    queries += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return queries


def test_dashboard_is_one_importable_document() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "quotaplane" and dashboard["schemaVersion"] >= 36
    # Grafana's import asks for the data source of each input, the default of the variable
    (source,) = dashboard["__inputs"]
    assert (source["type"], source["pluginId"]) == ("datasource", "prometheus")
    variable = dashboard["templating"]["list"][0]
    assert variable["current"]["value"] == "${" + source["name"] + "}"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        place = panel["gridPos"]
        assert set(place) == {"x", "y", "w", "h"} and place["x"] + place["w"] <= 24
        for target in panel.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource", "cluster", "config"]


def test_dashboard_queries_are_promql(tmp_path: Path) -> None:
    rules = []
    for index, query in enumerate(_dashboard_queries()):
        if query.startswith("label_values("):  # a Grafana function: check its metric selector
            query = query.removeprefix("label_values(").rsplit(",", 1)[0]
        for variable, value in GRAFANA_VARIABLES.items():
            query = query.replace(variable, value)
        rules.append({"record": f"dashboard:query_{index}", "expr": query})
    spec = tmp_path / "dashboard-queries.rules.json"  # JSON is YAML
    spec.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", str(spec))
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_has_panels_for_the_forecast_the_live_service_and_the_stream() -> None:
    queries = " ".join(_dashboard_queries())
    for family in ("quotaplane_storage_volume_seconds_to_hard_limit", "quotaplane_backlog_seconds_to_quota",
                   "quotaplane_client_quota_alterations_total", "quotaplane_storage_collection_errors_total",
                   "quotaplane_stream_watermark_seconds", "quotaplane_stream_input_rows_total"):
        assert family in queries, family


def test_panels_of_your_own_producers_metrics_say_so() -> None:
    """The producer's metrics come from the user's application, not from a quotaplane service."""
    dashboard = json.loads(DASHBOARD.read_text())
    producer = [p for p in dashboard["panels"]
                if any("quotaplane_client_producer_" in t["expr"] or "quotaplane_client_notice_" in t["expr"]
                       for t in p.get("targets", []))]
    assert len(producer) == 2
    for panel in producer:
        assert panel["title"].startswith("Your producers") and "your own producers" in panel["description"]


@pytest.mark.spark
@pytest.mark.slow
def test_rules_and_dashboard_name_only_exported_metrics(run_metrics: Path,
                                                        evaluate_metrics: dict[str, Path]) -> None:
    exported = SCRAPE_METRICS | _notice_metrics() | _service_metrics()
    for path in [run_metrics, *evaluate_metrics.values()]:
        exported |= {name for name, _, _ in _samples(path)}
    named = set(METRIC_NAME.findall(RULES.read_text())) | {
        name for query in _dashboard_queries() for name in METRIC_NAME.findall(query)}
    assert named and named <= exported, sorted(named - exported)


def test_rules_and_dashboard_name_only_exported_notice_metrics() -> None:
    """The notice channel's and the producer's metrics the rules and the dashboard name, without a
    Spark run (the test above checks every name)."""
    named = set(METRIC_NAME.findall(RULES.read_text())) | {
        name for query in _dashboard_queries() for name in METRIC_NAME.findall(query)}
    notices = {name for name in named if name.startswith(NOTICE_METRIC_PREFIXES)}
    assert {"quotaplane_notice_receipts_total", "quotaplane_notice_receipt_latency_seconds_bucket",
            "quotaplane_client_producer_throttled_times_total"} <= notices
    assert notices <= _notice_metrics(), sorted(notices - _notice_metrics())
