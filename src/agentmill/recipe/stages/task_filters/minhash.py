"""MinHash signatures over word shingles, and LSH banding to find near-duplicate candidates.

The family of hash functions: h_i(s) = the i-th 31-bit word of SHAKE-128(seed || s), i < 128, so
every function is independent and the result never depends on Python's salted `hash`. A shingle's
128 values are packed into one integer (32-bit lanes, the top bit of each a guard bit), and the
lane-wise minimum over a text's shingles is taken with a handful of big-integer operations (SWAR)
instead of 128 Python-level comparisons: pure Python, a fraction of a millisecond per short instruction.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

NUM_PERM = 128
SEED = b"agentmill-minhash-v1\0"
_LANE = 32
_VALUE_BITS = _LANE - 1
_VALUE = (1 << _VALUE_BITS) - 1
_GUARDS = sum(1 << (_LANE * i + _VALUE_BITS) for i in range(NUM_PERM))
_VALUES = sum(_VALUE << (_LANE * i) for i in range(NUM_PERM))
_BYTES = NUM_PERM * _LANE // 8
_UNPACK = struct.Struct(f"<{NUM_PERM}I").unpack


def shingles(tokens: list[str], n: int = 3) -> set[str]:
    """Word n-grams; a text shorter than n words is one shingle of all its words."""
    if len(tokens) < n:
        return {" ".join(tokens)}
    return {" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def _packed(shingle: str, seed: bytes) -> int:
    digest = hashlib.shake_128(seed + shingle.encode("utf-8", "surrogatepass")).digest(_BYTES)
    return int.from_bytes(digest, "little") & _VALUES


def signature(items: Iterable[str], seed: bytes = SEED) -> int:
    """The 128 minimum hash values over `items`, packed (lane i = bits 32i..32i+30); an empty set
    hashes as the empty string."""
    guards, vals, vbits, vmask = _GUARDS, _VALUES, _VALUE_BITS, _VALUE
    it = iter(items)
    acc = _packed(next(it, ""), seed)
    for s in it:
        y = _packed(s, seed)
        # per lane, (2^31 + acc) - y keeps its guard bit exactly when acc >= y; no borrow crosses lanes
        ge = ((((acc | guards) - y) & guards) >> vbits) * vmask  # all-ones value bits where acc >= y
        acc = (y & ge) | (acc & ~ge & vals)
    return acc


def values(sig: int) -> tuple[int, ...]:
    """The 128 minimum hash values of a packed signature."""
    return _UNPACK(sig.to_bytes(_BYTES, "little"))


def jaccard_estimate(a: int, b: int) -> float:
    """The share of the 128 lanes in which two packed signatures agree."""
    diff = a ^ b
    differing = (((diff & _VALUES) + _VALUES) & _GUARDS).bit_count()  # a non-zero lane carries into its guard
    return (NUM_PERM - differing) / NUM_PERM


def choose_bands(threshold: float, num_perm: int = NUM_PERM, recall: float = 0.9) -> tuple[int, int]:
    """(bands, rows), bands*rows = num_perm: the most rows per band (fewest spurious candidates)
    that still make a pair at exactly `threshold` a candidate with probability >= `recall`."""
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        if num_perm % rows == 0:
            bands = num_perm // rows
            if 1 - (1 - threshold**rows) ** bands >= recall:
                best = (bands, rows)
    return best


class LSHIndex:
    """Band buckets of the signatures added so far: two signatures that agree on every lane of
    some band are candidates."""

    def __init__(self, threshold: float):
        self.bands, self.rows = choose_bands(threshold)
        self.buckets: list[dict[bytes, list[int]]] = [{} for _ in range(self.bands)]

    def keys(self, sig: int) -> list[bytes]:
        raw = sig.to_bytes(_BYTES, "little")
        width = self.rows * _LANE // 8
        return [raw[b * width : (b + 1) * width] for b in range(self.bands)]

    def candidates(self, keys: list[bytes]) -> list[int]:
        """Ids sharing a band with `keys`, in ascending order."""
        found: set[int] = set()
        for bucket, key in zip(self.buckets, keys):
            hit = bucket.get(key)
            if hit:
                found.update(hit)
        return sorted(found)

    def add(self, ident: int, keys: list[bytes]) -> None:
        for bucket, key in zip(self.buckets, keys):
            bucket.setdefault(key, []).append(ident)
