"""The Pulsar launcher's failures are loud: a part not resolved, a broker that does not come up in time
(with the tail of its log), a Java too old; and its small pieces (tokens, ports, configuration)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import tempfile
from pathlib import Path

import pytest

from tests.support.pulsar import launcher
from tests.support.pulsar.config import Ports, standalone_conf
from tests.support.pulsar.launcher import PulsarStartError, free_ports, java_version, start
from tests.support.pulsar.tokens import secret_setting, token


def test_a_token_is_an_hs256_jwt_for_its_role() -> None:
    secret = b"k" * 32
    header, payload, signature = token(secret, "quotaplane-admin").split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    assert json.loads(base64.urlsafe_b64decode(pad(header))) == {"alg": "HS256", "typ": "JWT"}
    assert json.loads(base64.urlsafe_b64decode(pad(payload))) == {"sub": "quotaplane-admin"}
    expected = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(pad(signature)) == expected
    assert secret_setting(secret) == "data:;base64," + base64.b64encode(secret).decode()


def test_the_configuration_keeps_everything_on_loopback() -> None:
    broker, web, bookie = free_ports(3)
    assert len({broker, web, bookie}) == 3
    text = standalone_conf(Ports(broker, web, bookie), b"s" * 32, 1)
    conf = dict(line.split("=", 1) for line in text.splitlines())
    assert (conf["bindAddress"], conf["advertisedAddress"], conf["listeningInterface"]) == (
        "127.0.0.1", "127.0.0.1", "lo")
    assert (conf["brokerServicePort"], conf["webServicePort"]) == (str(broker), str(web))
    assert conf["backlogQuotaCheckIntervalInSeconds"] == "1" and conf["authenticationEnabled"] == "true"


def test_a_part_not_resolved_says_how_to_resolve_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUOTAPLANE_CACHE", str(tmp_path))
    with pytest.raises(PulsarStartError, match=r"resolve-java-parts.sh pulsar"):
        start()


def test_a_broker_not_up_in_time_fails_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(PulsarStartError) as raised:
        start(timeout_s=0.01)
    message = str(raised.value)
    assert "did not serve public/default within 0 s" in message and "its log ends:" in message
    assert list(tmp_path.iterdir()) == []  # the broker stopped and its data directory removed


def test_a_java_too_old_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "java"
    old.write_text('#!/bin/sh\necho \'openjdk version "11.0.2" 2019-01-15\' >&2\n')
    old.chmod(0o755)
    assert java_version(str(old)) == 11
    monkeypatch.setenv("QUOTAPLANE_PULSAR_JAVA", str(old))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PulsarStartError, match=r"needs Java 17 or newer; tried: .*\(Java 11\)"):
        launcher.find_java()
