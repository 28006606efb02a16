"""`CategoryTotals`: per-category target sums kept over batches, against polars' group_by.

Keys of every kind the encoders take (strings, large strings, integers, dictionary
columns), nulls among them, categories first seen in a later batch, targets that are
null or NaN (left out), batches of any size: the sorted categories and their per-fold
sums, counts and squares equal polars' ``group_by`` over the whole column.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.io.encoders import CategoryTotals, add_target_rows, sort_indices

FOLDS = 3


@st.composite
def _columns(draw: st.DrawFn) -> tuple[pa.Array, np.ndarray, np.ndarray, list[int]]:
    n = draw(st.integers(0, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["string", "large_string", "int64", "dictionary"]))
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, draw(st.integers(1, 40)), n)
    null = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 1.0]))
    if kind == "int64":
        keys = pa.array(codes * 7 - 50, type=pa.int64(), mask=null)
    else:
        keys = pa.array([f"k{c:03d}" for c in codes], type=pa.string(), mask=null)
        if kind == "large_string":
            keys = keys.cast(pa.large_string())
        elif kind == "dictionary":
            keys = keys.dictionary_encode()
    y = rng.standard_normal(n)
    y[rng.random(n) < 0.1] = np.nan  # a null or NaN target: not counted
    fold = rng.integers(0, FOLDS, n)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    return keys, y, fold, cuts


@settings(max_examples=60, deadline=None)
@given(data=_columns())
def test_totals_over_batches_match_a_group_by(
    data: tuple[pa.Array, np.ndarray, np.ndarray, list[int]],
) -> None:
    keys, y, fold, cuts = data
    totals = CategoryTotals(3 * FOLDS)
    for lo, hi in zip([0, *cuts], [*cuts, len(keys)], strict=True):
        part = pa.chunked_array([keys.slice(lo, hi - lo)], type=keys.type)
        add_target_rows(totals, totals.codes(part), fold[lo:hi], y[lo:hi], FOLDS,
                        np.zeros((FOLDS, 3)))  # fmt: skip
    plain = keys.dictionary_decode() if pa.types.is_dictionary(keys.type) else keys
    value_type = pa.string() if pa.types.is_large_string(plain.type) else plain.type
    values, table = totals.sorted(value_type)

    frame = pl.DataFrame({"k": pl.Series(plain.cast(value_type)), "y": y, "f": fold})
    counted = frame.filter(pl.col("y").is_not_nan())
    expected = (
        frame.select("k").unique()
        .join(counted.group_by("k", "f").agg(s=pl.col("y").sum(), n=pl.len(),
                                             q=(pl.col("y") ** 2).sum()),
              on="k", how="left", nulls_equal=True)
    )  # fmt: skip
    assert values.to_pylist() == sorted(
        set(plain.to_pylist()), key=lambda v: (v is None, v)
    ), "every category once, ascending, null last"
    for row, value in enumerate(values.to_pylist()):
        for f in range(FOLDS):
            got = table[row, f], table[row, FOLDS + f], table[row, 2 * FOLDS + f]
            want = expected.filter(
                (pl.col("k").is_null() if value is None else pl.col("k") == value)
                & (pl.col("f") == f)
            )
            if want.height == 0:
                assert got == (0.0, 0.0, 0.0), (value, f)
            else:
                assert got[0] == pytest.approx(want["s"][0], rel=1e-12, abs=1e-12)
                assert got[1] == want["n"][0]
                assert got[2] == pytest.approx(want["q"][0], rel=1e-12, abs=1e-12)


def _dictionary_batch(rng: np.random.Generator, n: int) -> pa.DictionaryArray:
    """A dictionary column whose dictionary repeats values and holds a null entry."""
    entries = pa.array(["b", "a", None, "b", "c", "a"][: int(rng.integers(1, 7))], pa.string())
    indices = pa.array(rng.integers(0, len(entries), n), pa.int32(), mask=rng.random(n) < 0.1)
    return pa.DictionaryArray.from_arrays(indices, entries)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), batches=st.integers(1, 4), plain=st.booleans())
def test_counts_over_batches_match_value_counts(seed: int, batches: int, plain: bool) -> None:
    rng = np.random.default_rng(seed)
    parts = [_dictionary_batch(rng, int(rng.integers(0, 50))) for _ in range(batches)]
    if plain:  # the same values as plain (and large) strings
        parts = [p.dictionary_decode().cast(pa.large_string()) for p in parts]
    totals = CategoryTotals(1)
    for part in parts:
        totals.count(pa.chunked_array([part]))
    cats, freq = totals.counts(pa.string())
    values = [v for p in parts for v in p.to_pylist()]
    expected = (
        pl.DataFrame({"v": pl.Series(values, dtype=pl.String)})
        .drop_nulls()["v"].value_counts().sort("v")
    )  # fmt: skip
    assert cats == expected["v"].to_list()
    assert freq == expected["count"].to_list()


# pieces a category is made of: a shared prefix, bytes 0x00 and 0xFF in UTF-8
# ("\x00", "ÿ"), multi-byte characters, the empty text, a run longer than 7 bytes
_PIECES = ["", "a", "b", "\x00", "ÿ", "é", "\U0001f600", "https://", "zzzzzzzzz"]


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(_PIECES), max_size=6).map("".join), max_size=120)
    | st.lists(st.text(max_size=20), max_size=120),
    nulls=st.sampled_from([0.0, 0.2]),
    large=st.booleans(),
    start=st.integers(0, 3),
)
def test_string_sort_is_arrows(texts: list[str], nulls: float, large: bool, start: int) -> None:
    """The radix sort of categories orders as Arrow does: bytes, nulls last, ties stable."""
    rng = np.random.default_rng(len(texts))
    values = pa.array(texts, pa.large_string() if large else pa.string(),
                      mask=rng.random(len(texts)) < nulls)  # fmt: skip
    values = values.slice(min(start, len(values)))  # an offset into the buffers
    np.testing.assert_array_equal(sort_indices(values), np.asarray(pc.sort_indices(values)))
