"""Counter-based random numbers: a value is a pure function of (seed, stream, keys).

Every random quantity of a time series (noise per round and topic, a burst per client and slot, an
error per round) is drawn by hashing its coordinates with splitmix64 instead of advancing a
generator. The same round therefore gets the same value whichever chunk it falls in, so the output
does not depend on how generation is chunked, and any chunk can be generated on its own.
Static structure (placement, sizes) uses `structure_rng`, an ordinary seeded numpy generator.
"""

from __future__ import annotations

import zlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TO_UNIT = 1.0 / float(1 << 53)


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (wrapping uint64 arithmetic)."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


def stream_id(name: str) -> int:
    """A stable 32-bit id of a stream name (not Python's salted `hash`)."""
    return zlib.crc32(name.encode("utf-8"))


class Fields:
    """Random fields of one seed: `uniform(stream, *keys)` broadcasts integer key arrays."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)

    def _hash(self, stream: str, keys: tuple[object, ...]) -> np.ndarray:
        with np.errstate(over="ignore"):
            h = _mix(np.asarray([(self.seed << 32) ^ stream_id(stream)], dtype=np.uint64))
            for key in keys:
                k = np.asarray(key, dtype=np.int64).astype(np.uint64)
                h = _mix(h + (k + np.uint64(1)) * _GOLDEN)
        return h

    def uniform(self, stream: str, *keys: object) -> np.ndarray:
        """Uniform on [0, 1), one value per broadcast combination of `keys`."""
        h = self._hash(stream, keys)
        return (h >> _S11).astype(np.float64) * _TO_UNIT

    def normal(self, stream: str, *keys: object) -> np.ndarray:
        """Standard normal (Box–Muller on two independent uniforms)."""
        u1 = self.uniform(stream + "/1", *keys)
        u2 = self.uniform(stream + "/2", *keys)
        return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)

    def lognormal_mean_one(self, stream: str, sigma: float, *keys: object) -> np.ndarray:
        """Log-normal multiplicative noise with mean exactly 1 in expectation."""
        return np.exp(sigma * self.normal(stream, *keys) - 0.5 * sigma * sigma)


def structure_rng(seed: int, name: str) -> np.random.Generator:
    """A seeded generator for one piece of static structure (sizes, placement, names)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), stream_id(name)]))
