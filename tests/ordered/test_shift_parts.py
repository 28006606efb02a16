"""``shift(n).over(keys)`` in parallel chunks of rows: the one-pass kernel's answers.

Each chunk but the first starts from empty rings; its first rows of each group then
take their values from the rings of the chunks before it
(`colbridge.backends._scan_kernels.shift_by_key`). The oracle is the same kernel in
one pass, compared on every row, and the rings it leaves, which a stream's next
batch goes on from; polars through the public API on a frame long enough to split.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.backends import _scan_kernels as kernels


def _tables(groups: int, lag: int, dtype: Any) -> list[np.ndarray]:
    return [np.zeros((groups, lag), dtype), np.zeros((groups, lag), np.bool_),
            np.zeros((groups, 2), np.int64)]  # fmt: skip


def _shift(values: np.ndarray, valid: np.ndarray, ids: np.ndarray, n: int, parts: int,
           fill: Any, tables: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    out, out_valid = np.empty(len(values), values.dtype), np.empty(len(values), np.bool_)
    kernels.shift_by_key(values, valid, ids, n, parts, fill is not None,
                         values.dtype.type(0 if fill is None else fill), *tables, out,
                         out_valid)  # fmt: skip
    return out, out_valid


def _held(tables: list[np.ndarray]) -> list[list[tuple[Any, bool]]]:
    """Each group's rows in its ring, oldest first (where the ring starts may differ)."""
    ring, ring_valid, heads = tables
    lag = ring.shape[1]
    rows = []
    for g in range(ring.shape[0]):
        count = int(heads[g, 1])
        oldest = int(heads[g, 0]) if count == lag else 0
        slots = [(oldest + k) % lag for k in range(count)]
        rows.append([(ring[g, s].item(), bool(ring_valid[g, s])) for s in slots])
    return rows


@st.composite
def _columns(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Values, their validity, group ids (some groups in one chunk only), group count."""
    n = draw(st.integers(0, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float64, np.int64, np.uint64, np.float32]))
    values = rng.integers(-1000, 1000, n).astype(dtype)
    valid = rng.random(n) >= draw(st.sampled_from([0.0, 0.3, 0.95]))
    groups = draw(st.integers(1, 12))
    ids = rng.integers(0, groups, n).astype(np.int32)
    if n and draw(st.booleans()):  # a group of one row, one of a run at the end
        ids[rng.integers(0, n)] = groups
        ids[n - min(n, 5):] = groups + 1
        groups += 2
    return values, valid, ids, groups


@settings(max_examples=150, deadline=None)
@given(column=_columns(), n=st.sampled_from([1, 2, 3, 7, -1, -2, -5]),
       parts=st.integers(2, 9), fill=st.sampled_from([None, 9]), split=st.floats(0, 1))
def test_chunks_give_the_one_pass_rows_and_rings(column: tuple[Any, ...], n: int, parts: int,
                                                 fill: Any, split: float) -> None:  # fmt: skip
    values, valid, ids, groups = column
    lag = abs(n)
    want_tables = _tables(groups, lag, values.dtype)
    want, want_valid = _shift(values, valid, ids, n, 1, fill, want_tables)
    # two batches of a stream, the second going on from the rings the first left (a
    # shift ahead looks past its batch: streams refuse it, one batch here)
    cut = int(split * len(values)) if n > 0 else len(values)
    tables = _tables(groups, lag, values.dtype)
    batches = [_shift(values[a:b], valid[a:b], ids[a:b], n, parts, fill, tables)
               for a, b in ((0, cut), (cut, len(values)))]  # fmt: skip
    got = np.concatenate([out for out, _ in batches])
    got_valid = np.concatenate([flags for _, flags in batches])
    np.testing.assert_array_equal(got_valid, want_valid)
    np.testing.assert_array_equal(got, want)  # under nulls too: the row's value, or the fill
    assert _held(tables) == _held(want_tables)


def test_a_long_frame_split_into_chunks_matches_polars() -> None:
    # 300,000 rows and 40 groups: `run_carried` splits the rows into chunks
    # (`scans._shift_parts_by_key`); lags forward and back, fills, nulls
    rng = np.random.default_rng(3)
    n = 300_000
    df = pl.DataFrame({
        "g": rng.integers(0, 40, n),
        "x": pl.Series(rng.standard_normal(n)).set(pl.Series(rng.random(n) < 0.1), None),
        "i": rng.integers(-50, 50, n).astype(np.int32),
    })  # fmt: skip

    def lags(ns: Any) -> dict[str, Any]:
        exprs = {f"s{k}": ns.col("x").shift(k) for k in (1, 3, -1, -4)}
        exprs |= {"f": ns.col("i").shift(2, fill_value=-7), "d": ns.col("x").diff(1)}
        return {name: e.over("g") for name, e in exprs.items()}

    want = df.with_columns(**lags(pl))
    got = df.gpu.with_columns(**lags(cb)).compute()
    assert got.equals(want)
