"""The test broker's configuration file: Pulsar standalone on loopback, small, with token authentication.

`PulsarStandaloneStarter --config FILE` reads the broker's `ServiceConfiguration` and the bookie's
`ServerConfiguration` from the same file (upstream `PulsarStandalone.startBookieWithMetadataStore`).
Unset keys keep Pulsar's defaults; the ones set here and why:

- every listener on 127.0.0.1 and a free port chosen by the launcher (`bindAddress`, `advertisedAddress`,
  `brokerServicePort`, `webServicePort`, the bookie's port through `--bookkeeper-port` with
  `allowEphemeralPorts=true`, without which `BKCluster` picks a port of its own, and
  `listeningInterface=lo`, without which the bookie listens on every interface);
- one bookie, ensemble/quorums of 1, no fsync (`journalSyncData=false`), small caches: memory fits a
  2-core machine shared with Spark and a Kafka cluster;
- the backlog quota check every `check_interval_s` seconds (Pulsar's minimum is 1);
- `preciseTimeBasedBacklogQuotaCheck=true`: the time quota and the backlog age use the oldest unacknowledged
  message's publish time, so a test sees a time quota pass in seconds without waiting for a ledger to close;
- token authentication and authorization on, with one super-user role for the fixture and the
  broker's own admin client (so the same broker can answer 401 and 403);
- topics kept while idle (`brokerDeleteInactiveTopicsEnabled=false`): a test's topic must not vanish
  between two collections because no producer was connected.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.pulsar.tokens import secret_setting, token

CLUSTER = "standalone"
SUPERUSER = "quotaplane-admin"
AUTH_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
CLIENT_AUTH = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


@dataclass(frozen=True)
class Ports:
    broker: int
    web: int
    bookie: int


def standalone_conf(ports: Ports, secret: bytes, check_interval_s: int) -> str:
    """The text of the standalone configuration file."""
    admin_token = token(secret, SUPERUSER)
    settings = {
        "clusterName": CLUSTER,
        "bindAddress": "127.0.0.1",
        "advertisedAddress": "127.0.0.1",
        "brokerServicePort": ports.broker,
        "webServicePort": ports.web,
        "metadataStoreUrl": "",
        "allowEphemeralPorts": "true",
        "allowLoopback": "true",
        # the backlog quotas
        "backlogQuotaCheckEnabled": "true",
        "backlogQuotaCheckIntervalInSeconds": check_interval_s,
        "preciseTimeBasedBacklogQuotaCheck": "true",
        "backlogQuotaDefaultLimitBytes": -1,
        "backlogQuotaDefaultLimitSecond": -1,
        "exposeTopicLevelMetricsInPrometheus": "true",
        "brokerDeleteInactiveTopicsEnabled": "false",
        "topicLevelPoliciesEnabled": "true",
        "systemTopicEnabled": "true",
        # authentication: a super-user token for the fixture and the broker's own client
        "authenticationEnabled": "true",
        "authenticationProviders": AUTH_PROVIDER,
        "authorizationEnabled": "true",
        "superUserRoles": SUPERUSER,
        "tokenSecretKey": secret_setting(secret),
        "brokerClientAuthenticationPlugin": CLIENT_AUTH,
        "brokerClientAuthenticationParameters": f"token:{admin_token}",
        # small: one bookie, no replication, no fsync, small caches and thread pools
        "managedLedgerDefaultEnsembleSize": 1,
        "managedLedgerDefaultWriteQuorum": 1,
        "managedLedgerDefaultAckQuorum": 1,
        "managedLedgerCacheSizeMB": 32,
        "numIOThreads": 2,
        "numOrderedExecutorThreads": 2,
        "numExecutorThreadPoolSize": 2,
        "numCacheExecutorThreadPoolSize": 2,
        "managedLedgerNumSchedulerThreads": 2,
        "bookkeeperClientNumWorkerThreads": 2,
        "maxMessagePublishBufferSizeInMB": 32,
        "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.NoopLoadManager",
        "loadBalancerEnabled": "false",
        "transactionCoordinatorEnabled": "false",
        "webSocketServiceEnabled": "false",
        "brokerShutdownTimeoutMs": 3000,
        # the bookie (BookKeeper ServerConfiguration keys)
        "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
        "dbStorage_writeCacheMaxSizeMb": 16,
        "dbStorage_readAheadCacheMaxSizeMb": 16,
        "dbStorage_rocksDB_blockCacheSize": 16 * 1024 * 1024,
        "journalSyncData": "false",
        "journalMaxGroupWaitMSec": 1,
        "diskUsageThreshold": 0.99,
        "diskUsageWarnThreshold": 0.99,
        "httpServerEnabled": "false",
        "listeningInterface": "lo",
        "numAddWorkerThreads": 1,
        "numReadWorkerThreads": 1,
        "serverNumIOThreads": 2,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def write_conf(path: Path, ports: Ports, secret: bytes, check_interval_s: int) -> Path:
    path.write_text(standalone_conf(ports, secret, check_interval_s))
    return path
