"""Generated frames for the grouped-work tests: key columns of every key type, values with edges."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa

#: Every key type the grouping supports, by a short id.
KEY_KINDS = (
    "int8", "int64", "uint64", "bool", "float64", "float32", "string", "large_string",
    "categorical", "date32", "timestamp", "duration",
)  # fmt: skip

_WORDS = np.array(["", "a", "bb", "ccc", "a b", "é", "zz"], dtype=object)


def key_array(
    kind: str, n: int, rng: np.random.Generator, *, groups: int = 4, nulls: float = 0.2
) -> pa.Array:
    """``n`` keys of ``kind`` drawn from about ``groups`` distinct values, nulls at ``nulls``."""
    codes = rng.integers(0, max(groups, 1), size=n)
    mask = rng.random(n) < nulls if nulls > 0 else None
    if kind == "int8":
        return pa.array((codes - 2).astype(np.int8), mask=mask)
    if kind == "int64":
        return pa.array(codes * 1000 - 7, type=pa.int64(), mask=mask)
    if kind == "uint64":
        # far apart: the factorizer hashes instead of using the value range
        return pa.array(np.uint64(2**64 - 1) - codes.astype(np.uint64) * np.uint64(2**40),
                        mask=mask)  # fmt: skip
    if kind == "bool":
        return pa.array(codes % 2 == 0, mask=mask)
    if kind in ("float64", "float32"):
        pool = np.array([0.0, -0.0, np.nan, 1.5, -2.25, np.inf, -np.inf, 1e300])
        with np.errstate(over="ignore"):  # 1e300 is infinite in float32
            values = pool[codes % len(pool)].astype(kind)
        return pa.array(values, mask=mask)
    if kind in ("string", "large_string"):
        words = _WORDS[codes % len(_WORDS)]
        return pa.array(list(words), type=pa.string() if kind == "string" else pa.large_string(),
                        mask=mask)  # fmt: skip
    if kind == "categorical":
        words = _WORDS[codes % len(_WORDS)]
        return pa.array(list(words), mask=mask).dictionary_encode()
    if kind == "date32":
        return pa.array((codes * 31 - 400).astype(np.int32), mask=mask).cast(pa.date32())
    if kind == "timestamp":
        return pa.array(codes * 86_400_000_000 + 5, type=pa.int64(), mask=mask).cast(
            pa.timestamp("us"))  # fmt: skip
    if kind == "duration":
        return pa.array(codes * 1_000 - 3, type=pa.int64(), mask=mask).cast(pa.duration("ms"))
    msg = f"unknown key kind {kind!r}"
    raise ValueError(msg)


def values(n: int, rng: np.random.Generator, *, nulls: float = 0.2) -> dict[str, pa.Array]:
    """Value columns: ``x`` float64 with NaN/±inf/±0, ``f`` float32, ``i`` int32, ``u`` uint8,
    ``w`` int64 (wide), ``b`` bool; nulls at ``nulls``."""

    def mask() -> np.ndarray | None:
        return rng.random(n) < nulls if nulls > 0 else None

    x = rng.normal(scale=20.0, size=n)
    special = rng.random(n) < 0.1
    x[special] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0]), size=int(special.sum()))
    return {
        "x": pa.array(x, mask=mask()),
        "f": pa.array(rng.normal(size=n).astype(np.float32), mask=mask()),
        "i": pa.array(rng.integers(-50, 50, size=n).astype(np.int32), mask=mask()),
        "u": pa.array(rng.integers(0, 255, size=n).astype(np.uint8), mask=mask()),
        "w": pa.array(rng.integers(-(2**40), 2**40, size=n), type=pa.int64(), mask=mask()),
        "b": pa.array(rng.integers(0, 2, size=n).astype(bool), mask=mask()),
    }


def frame(
    n: int,
    seed: int,
    key_kinds: tuple[str, ...] = ("int64",),
    *,
    groups: int = 4,
    key_nulls: float = 0.2,
    value_nulls: float = 0.2,
    offset: int = 0,
    chunks: int = 1,
) -> pa.Table:
    """A table of keys ``g``, ``h``, ... (one per kind) and the `values` columns.

    ``offset`` slices the rows (values and bitmaps start mid-byte); ``chunks``
    splits them into that many record batches.
    """
    rng = np.random.default_rng(seed)
    total = n + offset
    columns = {
        name: key_array(kind, total, rng, groups=groups, nulls=key_nulls)
        for name, kind in zip("ghk", key_kinds, strict=False)
    }
    columns.update(values(total, rng, nulls=value_nulls))
    table = pa.table(columns).slice(offset, n)
    if chunks > 1 and n > chunks:
        cuts = np.linspace(0, n, chunks + 1).astype(int)
        table = pa.concat_tables([table.slice(a, b - a) for a, b in itertools.pairwise(cuts)])
    return table
