"""The service's state across restarts, written atomically (a temporary file renamed over the old).

It holds the base (unscaled) produce quotas, what the service last wrote to each entity, the last
decision and the round counter, so a restarted service neither compounds the factor nor repeats or
skips a round number.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quotaplane.core.errors import ConfigError
from quotaplane.live.enforce import BaseQuotas


@dataclass
class ServiceState:
    bases: BaseQuotas = field(default_factory=BaseQuotas)
    rounds: int = 0
    last_decision: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"version": 1, "rounds": self.rounds, "last_decision": self.last_decision,
                **self.bases.as_json()}


class StateFile:
    """`--state FILE`: loaded at start, saved after every round."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def check_writable(self) -> None:
        """Fail now (exit 2) rather than after the first round when the state cannot be written."""
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if not folder.is_dir() or not os.access(folder, os.W_OK) or (
                self.path.exists() and not os.access(self.path, os.W_OK)):
            raise ConfigError("--state", str(self.path),
                              "cannot be written (its folder must exist and be writable)")

    def load(self) -> ServiceState:
        if not self.path.exists():
            return ServiceState()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return ServiceState(BaseQuotas.from_json(data), int(data.get("rounds", 0)),
                                data.get("last_decision"))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise ConfigError("--state", str(self.path),
                              f"is not a state file of quotaplane serve: {exc}") from None

    def save(self, state: ServiceState) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        with tmp.open("w", encoding="utf-8") as out:
            json.dump(state.as_json(), out, indent=2, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
