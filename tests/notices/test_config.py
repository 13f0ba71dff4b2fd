"""notices.properties: Pulsar's names, defaults and errors (docs/notices.md, Configuration)."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.errors import ConfigErrors
from quotaplane.notices.config import MAX_RATE, PublishRate, load_notice_config, parse_notice_config


def test_defaults_are_pulsars() -> None:
    config = parse_notice_config({})
    assert (config.max_pending_requests, config.receipt_wait_ms, config.io_threads, config.max_buffer_mb,
            config.pause_rule) == (1000, 100, 1, 0, "token-bucket")
    assert not config.broker_rate.limited
    assert config.topic_rate("a") is None and config.resource_group("a") is None


def test_topic_policy_replaces_the_namespace_policy_and_covers_partitions() -> None:
    config = parse_notice_config({
        "topic.public/default/a.publishMaxByteRate": "100",
        "namespace.public/default.publishMaxMessageRate": "5",
    })
    assert config.topic_rate("a") == PublishRate(100, 0)
    assert config.topic_rate("persistent://public/default/a-partition-3") == PublishRate(100, 0)
    assert config.topic_rate("b") == PublishRate(0, 5)
    assert config.topic_rate("other/ns/b") is None


def test_zero_means_unlimited() -> None:
    config = parse_notice_config({"topic.a.publishMaxByteRate": "0",
                                  "resourcegroup.g.publishRateInBytes": "0", "resourcegroup.g.topics": "a"})
    assert config.topic_rate("a") is None and config.resource_group("a") is None


def test_resource_groups_list_their_topics(tmp_path: Path) -> None:
    path = tmp_path / "n.properties"
    path.write_text("resourcegroup.g.publishRateInBytes=10\n"
                    "resourcegroup.g.topics=persistent\\://t/n/x, t/n/y\n")
    config = load_notice_config(path)
    assert config.resource_group("t/n/x") == ("g", PublishRate(10, 0))
    assert config.resource_group("persistent://t/n/y") == ("g", PublishRate(10, 0))


@pytest.mark.parametrize(("props", "message"), [
    ({"maxPendingPublishRequestsPerConnection": "-1"},
     "maxPendingPublishRequestsPerConnection=-1: must be from 0"),
    ({"brokerPublisherThrottlingMaxByteRate": str(MAX_RATE + 1)},
     f"brokerPublisherThrottlingMaxByteRate={MAX_RATE + 1}: must be from 0 to {MAX_RATE}"),
    ({"numIOThreads": "0"}, "numIOThreads=0: must be from 1"),
    ({"throttleProducerReceiptWaitTimeMillis": "1.5"}, "not a number of type LONG"),
    ({"quotaplane.notices.pauseRule": "second"}, "must be one of token-bucket, rest-of-second"),
    ({"maxPendingPublishRequestPerConnection": "1"}, "unknown property (did you mean "
     "maxPendingPublishRequestsPerConnection?)"),
    ({"topic.a/b.publishMaxByteRate": "1"}, "topic.a/b.publishMaxByteRate=1: topic must be"),
    ({"resourcegroup.g.topics": "a", "resourcegroup.h.topics": "public/default/a"},
     "topic persistent://public/default/a is already in resource group g"),
])
def test_errors_name_the_property_the_value_and_the_rule(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        parse_notice_config(props)
    assert message in str(info.value)
