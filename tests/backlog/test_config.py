"""Policies JSON: defaults, precedence, and errors that name the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.backlog.config import BrokerSettings, load_backlog_policies, parse_backlog_policies
from quotaplane.backlog.engine.resolve import resolve
from quotaplane.core.errors import ConfigError, ConfigErrors
from tests.backlog.builders import policies


def test_broker_defaults_are_pulsars() -> None:
    b = parse_backlog_policies({}).broker
    assert b == BrokerSettings()
    assert (b.default_limit_bytes, b.default_limit_second, b.default_retention_policy) == (
        -1, -1, "producer_request_hold")
    assert (b.check_interval_seconds, b.precise_time_check, b.expose_topic_level_metrics) == (60, False, True)


def test_broker_values_may_be_json_or_text() -> None:
    b = policies({"backlogQuotaDefaultLimitBytes": "1024", "backlogQuotaDefaultLimitSecond": 30,
                  "preciseTimeBasedBacklogQuotaCheck": "TRUE", "exposeTopicLevelMetricsInPrometheus": False,
                  "backlogQuotaCheckIntervalInSeconds": 1.0, "clusterName": " east "}).broker
    assert (b.default_limit_bytes, b.default_limit_second, b.precise_time_check) == (1024, 30, True)
    assert (b.expose_topic_level_metrics, b.check_interval_seconds, b.cluster_name) == (False, 1, "east")


@pytest.mark.parametrize(("gb", "limit"), [(-1, 500), (0, 500), (0.5, 536870912), (2, 2147483648)])
def test_the_deprecated_gigabyte_default_wins_when_positive(gb: float, limit: int) -> None:
    b = policies({"backlogQuotaDefaultLimitBytes": 500, "backlogQuotaDefaultLimitGB": gb}).broker
    assert b.default_size_limit == limit


def test_topic_over_namespace_over_broker_per_quota_type() -> None:
    p = policies(
        {"backlogQuotaDefaultLimitBytes": 1000, "backlogQuotaDefaultLimitSecond": 600,
         "backlogQuotaDefaultRetentionPolicy": "producer_exception"},
        {"t/ns": {"destination_storage": {"limitSize": 500, "policy": "consumer_backlog_eviction"}}},
        {"persistent://t/ns/a": {"message_age": {"limitTime": 60}}})
    r = resolve(p, "persistent://t/ns/a")
    assert (r.size_limit, r.size_policy, r.size_level) == (500, "consumer_backlog_eviction", "namespace")
    assert (r.time_limit, r.time_policy, r.time_level) == (60, "producer_exception", "topic")
    other = resolve(p, "persistent://t/other/x")
    assert (other.size_limit, other.size_level, other.time_limit, other.time_level) == (
        1000, "broker", 600, "broker")


def test_partitions_use_the_partitioned_topics_policies() -> None:
    p = policies(topics={"persistent://t/ns/p": {"destination_storage": {"limitSize": 7, "policy":
                                                                         "producer_exception"}}})
    r = resolve(p, "persistent://t/ns/p-partition-3", "persistent://t/ns/p")
    assert (r.size_limit, r.size_level) == (7, "topic")
    assert resolve(p, "persistent://t/ns/p-partition-3").size_level == "broker"


def test_a_quota_accepts_the_other_limit_as_pulsar_admin_prints_it() -> None:
    p = policies(namespaces={"t/ns": {"destination_storage": {"limitSize": 5, "limitTime": -1,
                                                               "policy": "producer_request_hold"}}})
    assert p.namespaces["t/ns"].size.limit == 5 and p.namespaces["t/ns"].time is None


def _errors(document: dict) -> list[str]:
    with pytest.raises((ConfigErrors, ConfigError)) as info:
        parse_backlog_policies(document)
    exc = info.value
    return [str(e) for e in exc.errors] if isinstance(exc, ConfigErrors) else [str(exc)]


@pytest.mark.parametrize(("document", "message"), [
    ({"broker": {"backlogQuotaDefaultLimitBytes": "lots"}},
     "broker.backlogQuotaDefaultLimitBytes=lots: must be a whole number"),
    ({"broker": {"backlogQuotaDefaultLimitSecond": 2**31}},
     "broker.backlogQuotaDefaultLimitSecond=2147483648: must be between -2147483648 and 2147483647"),
    ({"broker": {"backlogQuotaCheckIntervalInSeconds": 0}},
     "broker.backlogQuotaCheckIntervalInSeconds=0: must be at least 1"),
    ({"broker": {"preciseTimeBasedBacklogQuotaCheck": "yes"}},
     'broker.preciseTimeBasedBacklogQuotaCheck="yes": must be true or false'),
    ({"broker": {"backlogQuotaDefaultRetentionPolicy": "producer_request_holds"}},
     "broker.backlogQuotaDefaultRetentionPolicy=producer_request_holds: must be one of "
     "producer_request_hold, producer_exception, consumer_backlog_eviction (did you mean "
     "producer_request_hold?)"),
    ({"broker": {"backlogQuotaDefaultLimitByte": 1}},
     "broker.backlogQuotaDefaultLimitByte=1: unknown key (did you mean backlogQuotaDefaultLimitBytes?)"),
    ({"broker": {"backlogQuotaDefaultLimitGB": "inf"}},
     "broker.backlogQuotaDefaultLimitGB=inf: must be a finite number"),
    ({"namespaces": {"t/ns": {"message_age": {"limitTime": "abc", "policy": "producer_exception"}}}},
     "namespaces[t/ns].message_age.limitTime=abc: must be a whole number"),
    ({"namespaces": {"t/ns": {"message_age": {"policy": "producer_exception"}}}},
     "namespaces[t/ns].message_age.limitTime=(missing): a quota needs its limit"),
    ({"namespaces": {"tns": {}}}, "namespaces[tns]=tns: the name must have the form tenant/namespace"),
    ({"topics": {"t/ns/a": {}}},
     "topics[t/ns/a]=t/ns/a: the name must have the form persistent://tenant/namespace/name"),
    ({"topics": {"persistent://t/ns/a": {"destination_storage": {"limitSize": 1, "policy": "drop"}}}},
     "topics[persistent://t/ns/a].destination_storage.policy=drop: must be one of producer_request_hold, "
     "producer_exception, consumer_backlog_eviction"),
    ({"topics": {"persistent://t/ns/a": {"storage": {}}}},
     "topics[persistent://t/ns/a].storage={}: unknown key (known keys: destination_storage, message_age)"),
    ({"topics": {"persistent://t/ns/a": []}},
     "topics[persistent://t/ns/a]=[]: must be a JSON object with keys destination_storage and/or "
     "message_age"),
    ({"broker": []}, "broker=[]: must be a JSON object"),
    ({"brokers": {}}, "brokers={}: unknown key (did you mean broker?)"),
])
def test_errors_name_the_key_the_value_and_the_rule(document: dict, message: str) -> None:
    assert message in _errors(document)


def test_every_error_is_reported_at_once() -> None:
    errors = _errors({"broker": {"backlogQuotaDefaultLimitBytes": "x", "clusterName": ""},
                      "namespaces": {"t/ns": {"message_age": {"limitTime": 1.5}}}})
    assert len(errors) == 3


def test_a_file_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"broker": \n {oops}')
    with pytest.raises(ConfigError, match=r"not valid JSON: .* at line 2"):
        load_backlog_policies(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_backlog_policies(tmp_path / "missing.json")
    path.write_text(json.dumps({"topics": {}}))
    assert load_backlog_policies(path).topics == {}
