"""The storage configuration: both dialects, every validation rule at its boundary, warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotaplane.core.errors import ConfigErrors
from quotaplane.core.javamath import LONG_MAX
from quotaplane.storage import names as N
from quotaplane.storage.config import load_storage_config, parse_storage_config
from quotaplane.storage.config_summary import as_dict, describe

S = "client.quota.callback.static."
CLUSTER = {S + "storage.volume.source": "cluster"}


def pv(kind: str, level: str) -> str:
    return N.per_volume_limit(kind, level)  # type: ignore[arg-type]


def errors_of(props: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigErrors) as info:
        parse_storage_config(props)
    return [str(e) for e in info.value.errors]


# ------------------------------------------------------------------ spec dialect defaults


def test_empty_configuration_is_the_deprecated_local_source_with_defaults() -> None:
    c = parse_storage_config({})
    assert (c.dialect, c.source, c.evaluation) == ("spec", "local", "local")
    assert c.check_interval_ms == 0 and c.fallback_factor == 1.0
    assert (c.quotas.produce, c.quotas.fetch, c.quotas.request) == (None, None, None)
    assert c.legacy_soft_bytes == c.legacy_hard_bytes == LONG_MAX and not c.legacy_configured
    assert c.hard is None and c.soft is None
    assert any("deprecated" in w for w in c.warnings)
    assert any("no storage limit" in w for w in c.warnings)


def test_explicit_local_source_is_also_deprecated() -> None:
    c = parse_storage_config({S + "storage.volume.source": "local", S + "storage.hard": "10"})
    assert c.source == "local" and any("deprecated" in w for w in c.warnings)


def test_cluster_with_only_a_hard_limit_infers_soft_equal_to_hard() -> None:
    c = parse_storage_config({**CLUSTER, pv("availableBytesBelow", "hard"): "1000000000"})
    assert c.hard is not None and c.hard.kind == "availableBytesBelow" and c.hard.value == 1e9
    assert c.soft == c.hard and not c.soft_configured
    assert not any("deprecated" in w for w in c.warnings)


def test_limit_types_can_be_mixed_between_soft_and_hard() -> None:
    c = parse_storage_config({**CLUSTER, pv("availableRatioBelow", "soft"): "0.05",
                              pv("availableBytesBelow", "hard"): "1000000000"})
    assert c.soft is not None and c.soft.kind == "availableRatioBelow" and c.soft.value == 0.05
    assert c.hard is not None and c.hard.kind == "availableBytesBelow" and c.soft_configured


def test_used_bytes_above_is_a_third_limit_type() -> None:
    c = parse_storage_config({**CLUSTER, pv("usedBytesAbove", "soft"): "800",
                              pv("usedBytesAbove", "hard"): "900"})
    assert c.soft is not None and c.soft.kind == "usedBytesAbove" and c.hard is not None


def test_values_are_trimmed_and_interval_and_fallback_parsed() -> None:
    c = parse_storage_config({**CLUSTER, pv("availableRatioBelow", "hard"): " 0.01 ",
                              S + "storage.check-interval": " 30000 ", S + "fallback.throttle.factor": "0.0"})
    assert c.check_interval_ms == 30000 and c.fallback_factor == 0.0


# ------------------------------------------------------------------ spec dialect errors


def test_two_hard_limits_are_an_error_naming_the_second() -> None:
    errs = errors_of({**CLUSTER, pv("availableRatioBelow", "hard"): "0.05",
                      pv("availableBytesBelow", "hard"): "5000000000"})
    assert len(errs) == 1
    assert errs[0].startswith(pv("availableRatioBelow", "hard") + "=0.05: only one hard limit")


def test_two_soft_limits_are_an_error() -> None:
    errs = errors_of({**CLUSTER, pv("availableRatioBelow", "soft"): "0.1", pv("usedBytesAbove", "soft"): "5",
                      pv("availableBytesBelow", "hard"): "1"})
    assert len(errs) == 1 and "only one soft limit" in errs[0]


def test_a_soft_limit_without_a_hard_limit_is_an_error() -> None:
    errs = errors_of({**CLUSTER, pv("availableRatioBelow", "soft"): "0.1"})
    assert errs == [f"{pv('availableRatioBelow', 'soft')}=0.1: a soft limit needs a hard limit "
                    f"(set the matching {S}storage.perVolumeLimit.availableRatioBelow.hard)"]


def test_cluster_source_without_limits_is_an_error_listing_the_choices() -> None:
    (err,) = errors_of(CLUSTER)
    assert err.startswith(f"{N.VOLUME_SOURCE}=cluster: the cluster volume source needs exactly one "
                          "hard limit")
    assert pv("usedBytesAbove", "hard") in err


def test_per_volume_limits_with_the_local_source_are_errors() -> None:
    errs = errors_of({pv("availableBytesBelow", "hard"): "1", pv("availableBytesBelow", "soft"): "2"})
    assert len(errs) == 2 and all("need the cluster volume source" in e for e in errs)


def test_legacy_limits_with_the_cluster_source_are_errors_with_a_fix() -> None:
    errs = errors_of({**CLUSTER, pv("availableBytesBelow", "hard"): "1", S + "storage.soft": "1",
                      S + "storage.hard": "2"})
    assert len(errs) == 2
    assert "only with the local volume source" in errs[0] and "usedBytesAbove.soft" in errs[0]
    assert "usedBytesAbove.hard" in errs[1]


@pytest.mark.parametrize(("prop", "value", "ok"), [
    (S + "fallback.throttle.factor", "0.0", True),
    (S + "fallback.throttle.factor", "1.0", True),
    (S + "fallback.throttle.factor", "-0.0001", False),
    (S + "fallback.throttle.factor", "1.0001", False),
    (pv("availableRatioBelow", "hard"), "0.0", True),
    (pv("availableRatioBelow", "hard"), "1.0", True),
    (pv("availableRatioBelow", "hard"), "1.5", False),
    (pv("availableRatioBelow", "hard"), "-0.1", False),
    (pv("availableBytesBelow", "hard"), "0", True),
    (pv("availableBytesBelow", "hard"), "-1", False),
    (pv("usedBytesAbove", "hard"), "0", True),
    (pv("usedBytesAbove", "hard"), "-1", False),
    (S + "storage.check-interval", "0", True),
    (S + "storage.check-interval", "-1", False),
])
def test_range_boundaries_are_inclusive(prop: str, value: str, ok: bool) -> None:
    props = {**CLUSTER, prop: value}
    if not prop.endswith(".hard"):
        props[pv("availableBytesBelow", "hard")] = "1"
    if ok:
        parse_storage_config(props)
    else:
        errs = errors_of(props)
        assert any(e.startswith(f"{prop}={value}: must be") for e in errs), errs


@pytest.mark.parametrize(("prop", "value", "rule"), [
    (S + "fallback.throttle.factor", "half", "not a number of type DOUBLE"),
    (pv("availableBytesBelow", "hard"), "1.5", "not a number of type LONG"),
    (pv("availableRatioBelow", "hard"), "nan", "must be a finite number"),
    (S + "storage.check-interval", "1m", "not a number of type LONG"),
    (S + "produce", "fast", "not a number of type DOUBLE"),
    (S + "storage.volume.source", "Cluster", "must be local or cluster"),
])
def test_malformed_values_name_the_property_value_and_rule(prop: str, value: str, rule: str) -> None:
    errs = errors_of({prop: value})
    assert any(e.startswith(f"{prop}={value}: {rule}") for e in errs), errs


def test_every_error_is_reported_at_once() -> None:
    errs = errors_of({**CLUSTER, S + "fallback.throttle.factor": "2", pv("availableRatioBelow", "hard"): "2",
                      S + "storage.check-interval": "-5", S + "storage.hard": "1"})
    assert len(errs) == 5  # fallback, ratio range, no valid hard limit, interval, legacy with cluster


def test_unknown_callback_property_warns_with_the_closest_known_name() -> None:
    c = parse_storage_config({S + "fallbak.throttle.factor": "0.5", "broker.id": "3"})
    (w,) = [w for w in c.warnings if "unknown" in w]
    assert w == (f"{S}fallbak.throttle.factor=0.5: unknown property of the spec dialect, ignored "
                 f"(did you mean {S}fallback.throttle.factor?)")


def test_strimzi_names_in_the_spec_dialect_are_a_mixing_error_with_the_equivalent() -> None:
    (err,) = errors_of({**CLUSTER, pv("availableBytesBelow", "hard"): "1", N.MIN_AVAILABLE_RATIO: "0.1"})
    assert err.startswith(f"{N.MIN_AVAILABLE_RATIO}=0.1: belongs to the strimzi dialect but the "
                          "dialect is spec")
    assert f"use {pv('availableRatioBelow', 'hard')} in the spec dialect" in err


def test_spec_names_in_the_strimzi_dialect_are_a_mixing_error() -> None:
    errs = errors_of({N.DIALECT_PROP: "strimzi", N.FALLBACK_FACTOR: "0", N.SPEC_BOOTSTRAP: "k:9092"})
    assert len(errs) == 2 and all("belongs to the spec dialect but the dialect is strimzi" in e for e in errs)


def test_unknown_dialect_is_an_error() -> None:
    (err,) = errors_of({N.DIALECT_PROP: "kafka"})
    assert err.startswith(f"{N.DIALECT_PROP}=kafka: must be spec or strimzi")


def test_soft_limit_past_the_hard_limit_of_the_same_kind_warns() -> None:
    c = parse_storage_config({**CLUSTER, pv("availableBytesBelow", "soft"): "10",
                              pv("availableBytesBelow", "hard"): "20"})
    assert any("reached after the hard limit" in w for w in c.warnings)


def test_legacy_soft_not_below_hard_warns_and_is_accepted() -> None:
    c = parse_storage_config({S + "storage.soft": "20", S + "storage.hard": "20"})
    assert (c.legacy_soft_bytes, c.legacy_hard_bytes) == (20, 20) and c.legacy_configured
    assert any("step at the hard limit" in w for w in c.warnings)


def test_admin_client_properties_pass_through_without_requiring_bootstrap() -> None:
    c = parse_storage_config({**CLUSTER, pv("availableBytesBelow", "hard"): "1",
                              N.SPEC_ADMIN_PREFIX + "security.protocol": "SSL"})
    assert c.admin == {"security.protocol": "SSL"} and not any("admin" in w for w in c.warnings)


def test_quotas_default_unlimited_and_negative_quota_warns() -> None:
    c = parse_storage_config({S + "produce": "1e6", S + "fetch": "-5",
                              S + "request": "1.7976931348623157E308"})
    assert c.quotas.produce == 1e6 and c.quotas.fetch == -5 and c.quotas.request is None
    assert any("negative quota" in w for w in c.warnings)


@pytest.mark.parametrize(("value", "names"), [
    ("User:foo;", {"foo"}),
    ("User:foo; User:bar", {"foo", "bar"}),
    ("fooUser:bar", {"bar"}),
    ("  User:canary  ", {"canary"}),
])
def test_excluded_principals_parse_as_shipped(value: str, names: set[str]) -> None:
    assert parse_storage_config({S + "excluded.principal.name.list": value}).excluded_principals == names


@pytest.mark.parametrize(("value", "entry"), [
    ("User:a;;User:b", ""), ("", ""), ("User:", "User:"), ("user:foo", "user:foo"),
    ("User:x User:y", "User:x User:y"),
])
def test_bad_excluded_principal_entries_are_errors(value: str, entry: str) -> None:
    (err,) = errors_of({S + "excluded.principal.name.list": value})
    assert f'invalid entry "{entry}": missing User: prefix' in err


# ------------------------------------------------------------------ strimzi dialect

STRIMZI = {N.DIALECT_PROP: "strimzi", N.STRIMZI_BOOTSTRAP: "kafka:9091"}


def test_strimzi_defaults_are_the_shipped_ones() -> None:
    c = parse_storage_config(STRIMZI)
    assert (c.dialect, c.source, c.evaluation) == ("strimzi", "cluster", "strimzi")
    assert c.check_interval_ms == 60_000 and c.validity_ns == 300 * 10**9 and c.fallback_factor == 1.0
    assert not c.checks_enabled and c.hard is None
    assert any("no volume size limits configured" in w for w in c.warnings)
    assert c.admin == {"bootstrap.servers": "kafka:9091"}


def test_strimzi_bytes_limit_is_a_hard_limit_and_enables_checks() -> None:
    c = parse_storage_config({**STRIMZI, N.MIN_AVAILABLE_BYTES: "0"})
    assert c.checks_enabled and c.hard is not None and c.hard.kind == "availableBytesBelow"
    assert c.soft == c.hard and c.hard.value == 0


def test_strimzi_both_limits_are_an_error_only_when_checks_run() -> None:
    both = {**STRIMZI, N.MIN_AVAILABLE_BYTES: "5", N.MIN_AVAILABLE_RATIO: "0.1"}
    (err,) = errors_of(both)
    assert "Both limit types configured, only configure one of" in err
    c = parse_storage_config({**both, N.CHECK_INTERVAL: "0"})
    assert not c.checks_enabled and any("disabled" in w for w in c.warnings)


@pytest.mark.parametrize(("prop", "value", "ok"), [
    (N.MIN_AVAILABLE_RATIO, "0.0", True), (N.MIN_AVAILABLE_RATIO, "1.0", True),
    (N.MIN_AVAILABLE_RATIO, "1.1", False), (N.MIN_AVAILABLE_BYTES, "-1", False),
    (N.FACTOR_FALLBACK, "0", True), (N.FACTOR_FALLBACK, "1.5", False),
    (N.CHECK_INTERVAL, "-7", True), (N.CHECK_INTERVAL, "2147483647", True),
    (N.CHECK_INTERVAL, "2147483648", False), (N.CHECK_INTERVAL, "60000.5", False),
    (N.VALIDITY_DURATION, "PT-5M", True), (N.VALIDITY_DURATION, "5 minutes", False),
])
def test_strimzi_value_rules(prop: str, value: str, ok: bool) -> None:
    props = {**STRIMZI, prop: value}
    if ok:
        parse_storage_config(props)
    else:
        assert any(e.startswith(f"{prop}={value}:") for e in errors_of(props))


def test_strimzi_interval_is_seconds_and_validity_rounds_to_milliseconds() -> None:
    c = parse_storage_config({**STRIMZI, N.CHECK_INTERVAL: "30", N.MIN_AVAILABLE_RATIO: "0.1",
                              N.VALIDITY_DURATION: "PT1.0015S"})
    assert c.check_interval_ms == 30_000
    assert c.validity_ns == 1_001_500_000
    assert c.validity_expired_after_ms == 1001  # d > 1001.5 ms  <=>  d > 1001 for whole ms
    assert c.validity_evicted_from_ms == 1002   # d >= 1001.5 ms <=> d >= 1002


def test_strimzi_negative_validity_rounds_the_same_way() -> None:
    c = parse_storage_config({**STRIMZI, N.VALIDITY_DURATION: "PT-0.0015S"})
    assert c.validity_ns == -1_500_000
    assert (c.validity_expired_after_ms, c.validity_evicted_from_ms) == (-2, -1)
    assert any("not positive" in w for w in c.warnings)


def test_strimzi_missing_bootstrap_warns() -> None:
    c = parse_storage_config({N.DIALECT_PROP: "strimzi"})
    assert any(N.STRIMZI_BOOTSTRAP in w and "refuses to start" in w for w in c.warnings)


# ------------------------------------------------------------------ files and summaries


def test_java_properties_syntax_is_read_fully(tmp_path: Path) -> None:
    path = tmp_path / "storage.properties"
    path.write_text(
        "# comment\n! another\n"
        f"{S}storage.volume.source : cluster\n"
        f"{S}storage.perVolumeLimit.\\\n    availableBytesBelow.hard 1000\n"
        f"{S}excluded.principal.name.list=User:can\\u0061ry\n"
    )
    c = load_storage_config(path)
    assert c.source == "cluster" and c.hard is not None and c.hard.value == 1000
    assert c.excluded_principals == {"canary"} and c.path == str(path)


def test_summary_and_json_describe_the_normalised_configuration() -> None:
    c = parse_storage_config({**CLUSTER, pv("availableRatioBelow", "soft"): "0.05",
                              pv("availableBytesBelow", "hard"): "1000"})
    lines = describe(c)
    assert "soft limit: availableRatio <= 0.05 per volume" in lines
    assert "hard limit: availableBytes <= 1000 per volume" in lines
    d = as_dict(c)
    assert d["soft_limit"] == {"kind": "availableRatioBelow", "value": 0.05,
                               "property": pv("availableRatioBelow", "soft")}
    assert d["hard_limit"]["value"] == 1000  # type: ignore[index]
