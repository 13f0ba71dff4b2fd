"""The service's state across restarts, written atomically (a temporary file renamed over the old).

It holds the base (unscaled) produce quotas, what the service last wrote to each entity, the last
decision and the round counter, so a restarted service neither compounds the factor nor repeats or
skips a round (a replay resumes after the last decision's round, by its time and cluster).

A state file is data the service wrote; one that was edited by hand or damaged (another version,
negative round counts, wrong types, unknown keys, a quota that is not a number) is refused at start
with one line naming what is wrong, and never used.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quotaplane.core.errors import ConfigError
from quotaplane.live.enforce import BaseQuotas, parse_entity_key

VERSION = 1
KEYS = {"version", "rounds", "last_decision", "base", "written"}


@dataclass
class ServiceState:
    bases: BaseQuotas = field(default_factory=BaseQuotas)
    rounds: int = 0
    last_decision: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"version": VERSION, "rounds": self.rounds, "last_decision": self.last_decision,
                **self.bases.as_json()}


class StateProblem(ValueError):
    """What makes a state file unusable (one line)."""


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StateProblem(f"{what} must be a whole number >= 0, not {value!r}")
    return value


def _quotas(value: Any, what: str) -> dict[str, float | None]:
    if not isinstance(value, dict):
        raise StateProblem(f"{what} must be an object of entity -> produce quota, not {type(value).__name__}")
    for key, quota in value.items():
        if not key.startswith("user=") or ",client-id=" not in key or parse_entity_key(key) == (None, None):
            raise StateProblem(f"{what}: {key!r} is not an entity (user=U,client-id=C)")
        if quota is not None and (isinstance(quota, bool) or not isinstance(quota, int | float)
                                  or not math.isfinite(quota) or quota < 0):
            raise StateProblem(f"{what}[{key!r}] must be a produce quota >= 0 or null, not {quota!r}")
    return value


def parse_state(data: Any) -> ServiceState:
    """A state from its JSON form; `StateProblem` when it is not one the service wrote."""
    if not isinstance(data, dict):
        raise StateProblem(f"must be a JSON object, not {type(data).__name__}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise StateProblem(f"unknown key {unknown[0]!r}")
    if data.get("version") != VERSION:
        raise StateProblem(f"version {data.get('version')!r} is not {VERSION}, "
                           "the version this service writes")
    rounds = _whole(data.get("rounds", 0), "rounds")
    last = data.get("last_decision")
    if last is not None:
        if not isinstance(last, dict):
            raise StateProblem("last_decision must be an object or null")
        _whole(last.get("ts_ms"), "last_decision.ts_ms")
        if not isinstance(last.get("cluster"), str | None):
            raise StateProblem("last_decision.cluster must be a string or null")
        for key in ("poll_id", "round_window"):
            if last.get(key) is not None:
                _whole(last[key], f"last_decision.{key}")
        if rounds == 0:
            raise StateProblem("a last_decision with rounds 0")
    bases = BaseQuotas.from_json({"base": _quotas(data.get("base", {}), "base"),
                                  "written": _quotas(data.get("written", {}), "written")})
    return ServiceState(bases, rounds, last)


class StateFile:
    """`--state FILE`: loaded at start, saved after every round."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def check_writable(self) -> None:
        """Fail now (exit 2) rather than after the first round when the state cannot be written."""
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if self.path.is_dir():
            raise ConfigError("--state", str(self.path), "is a directory, not a file")
        if not folder.is_dir() or not os.access(folder, os.W_OK) or (
                self.path.exists() and not os.access(self.path, os.W_OK)):
            raise ConfigError("--state", str(self.path),
                              "cannot be written (its folder must exist and be writable)")

    def load(self) -> ServiceState:
        """The saved state (a new one when the file does not exist); `ConfigError` for a file that is
        not a state this service wrote."""
        if not self.path.exists():
            return ServiceState()
        try:
            return parse_state(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError, RecursionError) as exc:
            text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
            raise ConfigError("--state", str(self.path),
                              f"is not a state file of quotaplane serve: {text}",
                              "move it aside to start afresh") from None

    def save(self, state: ServiceState) -> None:
        """Write the state (OSError when it cannot be written: the service counts it and retries at
        the next round)."""
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        try:
            with tmp.open("w", encoding="utf-8") as out:
                json.dump(state.as_json(), out, indent=2, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

