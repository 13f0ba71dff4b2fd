"""Pulsar topic names: `persistent://tenant/namespace/name`, its namespace and partition index.

The patterns are written so that Python's `re` and Java's regex (Spark `rlike`,
`regexp_extract`) read them the same way: ASCII classes only, `\\Z` (Python) / `\\z` (Java)
for the very end of the text.
"""

from __future__ import annotations

import re

# Spark (Java) forms; the Python forms below are the same patterns.
_PART = r"[^/ \t\n\r\f\x0b]+"  # a name part: no `/`, no ASCII white space
TOPIC_PATTERN_JAVA = rf"^persistent://{_PART}/{_PART}/{_PART}\z"
NAMESPACE_PATTERN_JAVA = rf"^persistent://({_PART}/{_PART})/"
NAMESPACE_KEY_PATTERN = rf"{_PART}/{_PART}"

_TOPIC = re.compile(rf"persistent://({_PART}/{_PART})/{_PART}")
_PARTITION = re.compile(r"-partition-([0-9]{1,18})\Z")
_NAMESPACE_KEY = re.compile(NAMESPACE_KEY_PATTERN)

TOPIC_FORM = "persistent://tenant/namespace/name"


def is_topic_name(name: str) -> bool:
    """True for `persistent://tenant/namespace/name` (three non-empty parts without `/` or
    white space)."""
    return _TOPIC.fullmatch(name) is not None


def is_namespace_name(name: str) -> bool:
    """True for `tenant/namespace`."""
    return _NAMESPACE_KEY.fullmatch(name) is not None


def namespace_of(topic: str) -> str:
    """`tenant/namespace` of a valid topic name."""
    match = _TOPIC.fullmatch(topic)
    if match is None:
        raise ValueError(f"not a topic name of the form {TOPIC_FORM}: {topic!r}")
    return match.group(1)


def partition_index(topic: str) -> int | None:
    """The N of a `...-partition-N` name (at most 18 digits), else None."""
    match = _PARTITION.search(topic)
    return int(match.group(1)) if match else None
