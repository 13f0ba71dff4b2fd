"""Client quota configuration: JSON and kafka-configs.sh --describe text, and broker settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotaplane.clients.config import (
    load_client_quotas,
    load_settings,
    parse_client_quotas,
    parse_client_quotas_json,
    parse_describe_output,
    settings_from_properties,
)
from quotaplane.clients.engine.entities import DEFAULT, QuotaEntity
from quotaplane.core.errors import ConfigError, ConfigErrors


def errors_of(text: str) -> list[str]:
    with pytest.raises((ConfigError, ConfigErrors)) as info:
        parse_client_quotas(text, "q.json")
    exc = info.value
    return [str(e) for e in exc.errors] if isinstance(exc, ConfigErrors) else [str(exc)]


def test_json_entities_and_defaults() -> None:
    config = parse_client_quotas_json(json.dumps([
        {"entity": {"user": "alice", "client-id": "<default>"}, "quotas": {"producer_byte_rate": 1024}},
        {"entity": {"user": "<default>"}, "quotas": {"consumer_byte_rate": 2048, "request_percentage": 12.5}},
        {"entity": {"client-id": "app"}, "quotas": {"controller_mutation_rate": 0.5}},
    ]))
    assert dict(config.quotas) == {
        QuotaEntity("alice", DEFAULT): {"producer_byte_rate": 1024.0},
        QuotaEntity(DEFAULT, None): {"consumer_byte_rate": 2048.0, "request_percentage": 12.5},
        QuotaEntity(None, "app"): {"controller_mutation_rate": 0.5},
    }


@pytest.mark.parametrize(("entry", "message"), [
    ({"entity": {"user": "a"}, "quotas": {"producer_byte_rat": 1}},
     "[user=a] producer_byte_rat=1: unknown quota key; the keys are producer_byte_rate, consumer_byte_rate, "
     "request_percentage, controller_mutation_rate (did you mean producer_byte_rate?)"),
    ({"entity": {"user": "a"}, "quotas": {"producer_byte_rate": -1}},
     "[user=a] producer_byte_rate=-1: must not be negative (a quota is a rate; 0 blocks the client)"),
    ({"entity": {"client-id": "c"}, "quotas": {"consumer_byte_rate": 1.5}},
     "[client-id=c] consumer_byte_rate=1.5: must be a whole number (consumer_byte_rate is a LONG in Kafka)"),
    ({"entity": {"user": "a"}, "quotas": {"request_percentage": "5"}},
     '[user=a] request_percentage="5": must be a number'),
    ({"entity": {"user": "a"}, "quotas": {"request_percentage": True}},
     "[user=a] request_percentage=true: must be a number"),
    ({"entity": {"user": ""}, "quotas": {}},
     'entry 1 entity user="": an empty user is not supported (Kafka refuses it) '
     '(use "<default>" for the default entity)'),
    ({"entity": {}, "quotas": {}}, "entry 1 entity={}: an entity needs a user, a client-id or both"),
    ({"entity": {"ip": "10.0.0.1"}, "quotas": {}},
     'entry 1 entity={"ip": "10.0.0.1"}: ip entities are connection-rate quotas, not client quotas '
     "(remove this entry)"),
    ({"entity": {"user": "a", "clientid": "c"}, "quotas": {}},
     'entry 1 entity clientid="c": unknown entity type; use "user" and/or "client-id" '
     "(did you mean client-id?)"),
    ({"entity": {"user": None}, "quotas": {}},
     'entry 1 entity user=null: must be a string name or "<default>"'),
    ({"entity": {"user": "a"}, "quotas": [1]},
     "entry 1 quotas=[1]: must be an object of quota key -> number"),
    ({"entity": {"user": "a"}, "quotas": {}, "extra": 1},
     'entry 1 extra=1: unknown key; an entry has "entity" and "quotas"'),
])
def test_json_errors_name_the_entity_and_key(entry: dict, message: str) -> None:
    assert errors_of(json.dumps([entry])) == [message]


def test_long_quotas_accept_kafkas_epsilon() -> None:
    config = parse_client_quotas_json(
        '[{"entity": {"user": "a"}, "quotas": {"producer_byte_rate": 1024.0000005}}]')
    assert config.quotas[QuotaEntity("a", None)]["producer_byte_rate"] == 1024.0000005


def test_non_finite_values_are_refused() -> None:
    assert errors_of('[{"entity": {"user": "a"}, "quotas": {"request_percentage": NaN}}]') == [
        "[user=a] request_percentage=nan: must be a finite number"]


def test_every_json_error_is_reported_at_once() -> None:
    text = json.dumps([{"entity": {"user": "a"}, "quotas": {"producer_byte_rate": -1, "x": 1}},
                       {"entity": {"user": "a"}, "quotas": {}}])
    messages = errors_of(text)
    assert len(messages) == 3
    assert messages[2] == "entry 2 [user=a]=: duplicate entity: each entity may appear once " \
                          "(merge its quotas into one entry)"


@pytest.mark.parametrize(("text", "message"), [
    ('{"entity": {}}', 'q.json=dict: must be a JSON list of {"entity": {...}, "quotas": {...}}'),
    ("[1", "q.json=: not valid JSON: Expecting ',' delimiter at line 1 column 3"),
    ('[{"entity": {"user": "a", "user": "b"}, "quotas": {}}]', "q.json=user: duplicate key in a JSON object"),
    ("[5]", 'entry 1=5: must be an object {"entity": {...}, "quotas": {...}}'),
])
def test_json_structure_errors(text: str, message: str) -> None:
    assert errors_of(text) == [message]


DESCRIBE = "\n".join([
    "Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=1024.0, "
    "request_percentage=50.0",
    "Quota configs for the default user-principal are consumer_byte_rate=1.048576E7",
    "Quota configs for the default user-principal, the default client-id are producer_byte_rate=5.0",
    "Quota configs for user-principal 'o'brien', client-id 'x, y' are controller_mutation_rate=2.0",
    "Quota configs for client-id 'app' are",
    "Configs for client-id 'legacy' are producer_byte_rate=1024,consumer_byte_rate=2048",
    "Configs for default client-id are producer_byte_rate=10",
    "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096",
    "",
])


def test_describe_output() -> None:
    config = parse_describe_output(DESCRIBE)
    assert dict(config.quotas) == {
        QuotaEntity("alice", DEFAULT): {"producer_byte_rate": 1024.0, "request_percentage": 50.0},
        QuotaEntity(DEFAULT, None): {"consumer_byte_rate": 10485760.0},
        QuotaEntity(DEFAULT, DEFAULT): {"producer_byte_rate": 5.0},
        QuotaEntity("o'brien", "x, y"): {"controller_mutation_rate": 2.0},
        QuotaEntity(None, "app"): {},
        QuotaEntity(None, "legacy"): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
        QuotaEntity(None, DEFAULT): {"producer_byte_rate": 10.0},
    }


@pytest.mark.parametrize(("line", "message"), [
    ("Quota configs for user-principal 'a' are producer_byte_rate=-5.0",
     "[user=a] producer_byte_rate=-5.0: must not be negative (a quota is a rate; 0 blocks the client)"),
    ("Quota configs for user-principal 'a' are bytes=5.0",
     "[user=a] bytes=5.0: unknown quota key; the keys are producer_byte_rate, consumer_byte_rate, "
     "request_percentage, controller_mutation_rate"),
    ("Quota configs for user-principal 'a' are producer_byte_rate=lots",
     '[user=a] producer_byte_rate="lots": must be a number'),
    ("Quota configs for ip '10.0.0.1' are connection_creation_rate=5.0",
     "line 1=Quota configs for ip '10.0.0.1' are connection_creation_rate=5.0: ip entities are "
     "connection-rate quotas, not client quotas (describe users and clients only)"),
    ("Topic configs for orders are retention.ms=1",
     "line 1=Topic configs for orders are retention.ms=1: not a quota line of kafka-configs.sh --describe "
     "(expected: Quota configs for user-principal 'U', client-id 'C' are k=v, ...)"),
    ("Quota configs for user-principal '' are producer_byte_rate=1.0",
     "line 1=Quota configs for user-principal '' are producer_byte_rate=1.0: an empty name is not supported "
     "(Kafka refuses it)"),
])
def test_describe_errors(line: str, message: str) -> None:
    assert errors_of(line) == [message]


def test_describe_duplicates_name_the_line() -> None:
    text = ("Quota configs for client-id 'a' are producer_byte_rate=1.0\n"
            "Quota configs for client-id 'a' are consumer_byte_rate=1.0\n")
    assert errors_of(text) == ["line 2 [client-id=a]=: duplicate entity: each entity may appear once "
                               "(merge its quotas into one entry)"]


def test_load_from_files(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text(DESCRIBE)
    (tmp_path / "q.json").write_text('[{"entity": {"user": "a"}, "quotas": {}}]')
    assert len(load_client_quotas(tmp_path / "q.txt")) == 7
    assert len(load_client_quotas(tmp_path / "q.json")) == 1
    with pytest.raises(ConfigError, match="cannot read the client quota file"):
        load_client_quotas(tmp_path / "missing.json")


def test_settings_defaults() -> None:
    s = settings_from_properties({})
    assert (s.window_num, s.window_size_seconds) == (11, 1)
    assert (s.quota_value_metric, s.static_produce) == (False, None)
    assert (s.controller_window_num, s.metrics_num_samples, s.metrics_sample_window_ms) == (11, 2, 30_000)


def test_settings_from_broker_properties(tmp_path: Path) -> None:
    path = tmp_path / "broker.properties"
    path.write_text("quota.window.num = 5\nquota.window.size.seconds=2\n"
                    "client.quota.value.metric.enable=TRUE\n"
                    "client.quota.callback.static.produce=1048576\ncontroller.quota.window.num=3\n")
    s = load_settings(path, storage_combined=True)
    assert (s.window_num, s.window_size_seconds) == (5, 2)
    assert (s.quota_value_metric, s.static_produce) == (True, 1048576.0)
    assert (s.controller_window_num, s.storage_combined) == (3, True)


def test_static_produce_double_max_is_unlimited() -> None:
    s = settings_from_properties({"client.quota.callback.static.produce": "1.7976931348623157E308"})
    assert s.static_produce is None


@pytest.mark.parametrize(("props", "message"), [
    ({"quota.window.num": "0"}, "quota.window.num=0: must be an INT of at least 1"),
    ({"quota.window.size.seconds": "x"}, "quota.window.size.seconds=x: not a number of type LONG"),
    ({"client.quota.value.metric.enable": "yes"},
     "client.quota.value.metric.enable=yes: must be true or false"),
    ({"client.quota.callback.static.produce": "-1"},
     "client.quota.callback.static.produce=-1: must not be negative"),
])
def test_settings_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_properties(props)
    assert str(info.value) == message


def test_several_settings_errors_at_once() -> None:
    with pytest.raises(ConfigErrors) as info:
        settings_from_properties({"quota.window.num": "0", "metrics.num.samples": "-2"})
    assert len(info.value.errors) == 2
