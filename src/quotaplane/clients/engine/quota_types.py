"""The four Kafka client quota types, their configuration keys and their JMX names.

spec: kip-786-quota-value-metrics (Monitoring); Kafka `ClientQuotaType` and `QuotaConfig`.
"""

from __future__ import annotations

PRODUCE = "produce"
FETCH = "fetch"
REQUEST = "request"
CONTROLLER_MUTATION = "controller_mutation"

QUOTA_TYPES: tuple[str, ...] = (PRODUCE, FETCH, REQUEST, CONTROLLER_MUTATION)

# The dynamic quota configuration key of each type (`QuotaConfig.*_OVERRIDE_CONFIG`).
CONFIG_KEY: dict[str, str] = {
    PRODUCE: "producer_byte_rate",
    FETCH: "consumer_byte_rate",
    REQUEST: "request_percentage",
    CONTROLLER_MUTATION: "controller_mutation_rate",
}
TYPE_OF_KEY: dict[str, str] = {key: quota_type for quota_type, key in CONFIG_KEY.items()}

# Keys Kafka declares as LONG: a value must be a whole number ("must be a Long value").
LONG_KEYS: frozenset[str] = frozenset({"producer_byte_rate", "consumer_byte_rate"})

# The `type=` of the per-client MBeans (`QuotaType.toString()`).
KAFKA_TYPE: dict[str, str] = {
    PRODUCE: "Produce",
    FETCH: "Fetch",
    REQUEST: "Request",
    CONTROLLER_MUTATION: "ControllerMutation",
}

# The types KIP-786 adds a `quota-value` attribute to (spec: Monitoring).
QUOTA_VALUE_TYPES: frozenset[str] = frozenset({PRODUCE, FETCH, REQUEST})

# Whole-number telemetry values (bytes, partition mutations); request values are milliseconds.
WHOLE_VALUE_TYPES: frozenset[str] = frozenset({PRODUCE, FETCH, CONTROLLER_MUTATION})

# Request time is recorded as "percent of one thread": nanoseconds x 100 / 1e9
# (`ClientRequestQuotaManager.NANOS_TO_PERCENTAGE_PER_SECOND`).
NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1_000_000_000

# Telemetry values are exact whole numbers below this bound (doubles are exact integers below 2^53);
# request time (ms) is bounded so that its nanoseconds are too.
MAX_EXACT_VALUE = 2**53 - 1
MAX_REQUEST_MS = 9_007_199_254
