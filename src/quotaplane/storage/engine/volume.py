"""A volume observation (spec: Volume): one log dir of one broker, total and available bytes."""

from __future__ import annotations

from dataclasses import dataclass

from quotaplane.core.errors import InputError


@dataclass(frozen=True, slots=True)
class Volume:
    """`broker_id`, `log_dir`, `total_bytes`, `available_bytes`; used bytes and available ratio derived.

    spec: Volume: `usedBytes = totalBytes - availableBytes`, `availableRatio = availableBytes / totalBytes`
    (0.0 when the total is 0, as the shipped `VolumeUsage.getAvailableRatio`). Negative values and
    available above total are rejected with `InputError`.
    """

    broker_id: int
    log_dir: str
    total_bytes: int
    available_bytes: int

    def __post_init__(self) -> None:
        where = f"volume broker_id={self.broker_id!r} log_dir={self.log_dir!r}"
        for name in ("broker_id", "total_bytes", "available_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(where, name, value, "must be a whole number")
        if not isinstance(self.log_dir, str) or self.log_dir == "":
            raise InputError(where, "log_dir", self.log_dir, "must be a non-empty string")
        if self.total_bytes < 0:
            raise InputError(where, "total_bytes", self.total_bytes, "total_bytes must not be negative")
        if self.available_bytes < 0:
            raise InputError(where, "available_bytes", self.available_bytes,
                             "available_bytes must not be negative")
        if self.available_bytes > self.total_bytes:
            raise InputError(where, "available_bytes", self.available_bytes,
                             f"available_bytes must not exceed total_bytes ({self.total_bytes})")

    @property
    def key(self) -> tuple[int, str]:
        return (self.broker_id, self.log_dir)

    @property
    def used_bytes(self) -> int:
        return self.total_bytes - self.available_bytes

    @property
    def available_ratio(self) -> float:
        """`available / total` as a double (both converted first, as Java and Spark do); 0.0 if total is 0."""
        if self.total_bytes == 0:
            return 0.0
        return float(self.available_bytes) / float(self.total_bytes)
