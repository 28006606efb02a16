"""First-appearance codes of strings on every core (`colbridge.backends.groups.string_codes`).

The compiled path (hash partitions, eight-byte heads, long strings compared byte by
byte) against pyarrow's ``dictionary_encode`` (one thread, the same numbering) on
strings of every length around the eight-byte head, equal prefixes, NUL bytes,
non-ASCII text, nulls, sliced arrays, unaligned bytes and every string and binary
layout; then through the users of the codes: group ids (polars and pandas
factorize), ``group_by``/``over`` on string keys against polars, and the encoders'
per-category totals.
"""

from __future__ import annotations

import itertools
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.backends import groups
from colbridge.backends.groups import factorize, string_codes

#: texts around the eight-byte head: equal heads of other lengths, equal prefixes
#: past eight bytes, NUL bytes that pad a short head, multi-byte characters
_TEXTS = [
    "", "a", "a\0", "a\0\0\0\0\0\0\0", "a\0\0\0\0\0\0\0\0", "abcdefgh", "abcdefghi",
    "abcdefghj", "abcdefgh" * 3, "abcdefgh" * 3 + "x", "abcdefgh" * 2 + "x" + "abcdefgh",
    "abcdefg", "1234567", "fifteen-bytes-1", "fifteen-bytes-2", "sixteen-bytes-01", "é",
    "日本語テキスト", "日本語テキスト!", "k00001", "k00002", " ", "  ",
]  # fmt: skip


def _expected(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    encoded = pc.dictionary_encode(array)
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    first = np.array([np.flatnonzero(codes == c)[0] for c in range(len(encoded.dictionary))],
                     dtype=np.int64).reshape(-1)  # fmt: skip
    return codes, first


#: the kernels: a table per chunk of rows (few values), hash partitions (any number)
PATHS = {"chunk tables": groups._FEW, "partitions": 0}


def _compiled(array: pa.Array, path: str) -> tuple[np.ndarray, np.ndarray]:
    # every size takes a kernel; with no value allowed per chunk, the partitions'
    with mock.patch.object(groups, "NUMPY_MAX_ROWS", -1), \
            mock.patch.object(groups, "_FEW", PATHS[path]):  # fmt: skip
        return string_codes(array)


def _check(array: pa.Array, paths: tuple[str, ...] = tuple(PATHS)) -> None:
    want_codes, want_first = _expected(array)
    for path in paths:
        codes, first = _compiled(array, path)
        np.testing.assert_array_equal(codes, want_codes, err_msg=path)
        np.testing.assert_array_equal(first, want_first, err_msg=path)


@st.composite
def _arrays(draw: st.DrawFn) -> pa.Array:
    n = draw(st.integers(0, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pool = _TEXTS + [draw(st.text(max_size=30)) for _ in range(draw(st.integers(0, 6)))]
    distinct = draw(st.integers(1, len(pool)))
    picks = rng.integers(0, distinct, n)
    null = rng.random(n) < draw(st.sampled_from([0.0, 0.2, 1.0]))
    values = [None if null[i] else pool[picks[i]] for i in range(n)]
    typ = draw(st.sampled_from(
        [pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.string_view()]
    ))  # fmt: skip
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        array = pa.array([None if v is None else v.encode() for v in values], type=typ)
    else:
        array = pa.array(values, type=typ)
    start = draw(st.integers(0, n))
    return array.slice(start, draw(st.integers(0, n - start)))


@settings(max_examples=150, deadline=None)
@given(array=_arrays())
def test_codes_match_dictionary_encode(array: pa.Array) -> None:
    _check(array)


def test_many_rows_and_values() -> None:
    # more distinct values than a partition's first table holds (it grows), most rows
    # repeating a few values (Zipf-like), as a column of categories does
    rng = np.random.default_rng(3)
    ranks = np.minimum(rng.zipf(1.3, 300_000), 50_000)
    words = np.array([f"v{r:06d}" + "x" * (r % 11) for r in range(50_001)], dtype=object)
    _check(pa.array(words[ranks], type=pa.string()))
    _check(pa.array(words[ranks], type=pa.large_string()).slice(12_345, 200_000))
    few = pa.array(words[ranks % 40], type=pa.string(), mask=ranks % 97 == 0)
    _check(few)
    _check(few.slice(1, len(few) - 2))


def test_bytes_not_on_a_word_boundary() -> None:
    # the kernel reads whole words from the start of the bytes: a buffer that does not
    # start on one is copied first, and the last values (within eight bytes of the end)
    # are read byte by byte
    values = pa.array(["abc", "abcdefghijk", "", "abc", "zz", "abcdefghijk", "z"])
    _, offsets, data = values.buffers()
    shifted = pa.py_buffer(b"#" + data.to_pybytes())[1:]
    array = pa.Array.from_buffers(pa.string(), len(values), [None, offsets, shifted])
    assert np.frombuffer(shifted, np.uint8).ctypes.data % 8 != 0
    _check(array)


def test_only_nulls_and_empty_strings() -> None:
    _check(pa.array([None, None, None], type=pa.string()))
    _check(pa.array(["", None, ""], type=pa.string()))
    _check(pa.array([], type=pa.string()))


def test_refuses_other_types() -> None:
    with pytest.raises(TypeError, match="string or binary"):
        string_codes(pa.array([1, 2]))


@pytest.mark.parametrize("nulls", [False, True])
def test_group_ids_of_string_keys(nulls: bool) -> None:
    # over NUMPY_MAX_ROWS rows string keys take the kernel; polars' strings arrive as
    # views; a null key is a group of its own, in order of first appearance
    rng = np.random.default_rng(11)
    n = groups.NUMPY_MAX_ROWS + 20_000
    words = np.array([f"key{v}" * (1 + v % 3) for v in range(3000)], dtype=object)
    values = words[rng.integers(0, 3000, n)]
    mask = (rng.random(n) < 0.02) if nulls else None
    for typ in (pa.string(), pa.string_view()):
        keys = pa.array(values, type=pa.string(), mask=mask).cast(typ)
        got = factorize([keys], n)
        want, uniques = pd.factorize(keys.cast(pa.string()).to_pandas(), use_na_sentinel=False)
        assert got.ids is not None
        np.testing.assert_array_equal(got.ids, want)
        assert got.count == len(uniques)
        firsts = np.array([np.flatnonzero(want == g)[0] for g in range(len(uniques))])
        np.testing.assert_array_equal(got.first_rows, firsts)


def test_group_by_and_over_on_string_keys_match_polars() -> None:
    rng = np.random.default_rng(5)
    n = groups.NUMPY_MAX_ROWS + 10_000
    words = [f"c{v:04d}" + "é" * (v % 4) for v in range(2000)]
    keys = [None if rng.random() < 0.01 else words[i] for i in rng.integers(0, 2000, n)]
    df = pl.DataFrame({"g": keys, "h": rng.integers(0, 3, n), "x": rng.standard_normal(n)})
    x = cb.col("x")
    got = df.gpu.with_columns(z=(x - x.mean().over("g")) / x.std().over("g")).compute()
    px = pl.col("x")
    want = df.with_columns(z=(px - px.mean().over("g")) / px.std().over("g"))
    np.testing.assert_allclose(got["z"].to_numpy(), want["z"].to_numpy(), rtol=1e-9)
    got_agg = df.gpu.group_by("g", "h").agg(n=cb.len(), s=x.sum()).compute()
    want_agg = df.group_by("g", "h", maintain_order=True).agg(n=pl.len(), s=px.sum())
    assert got_agg["g"].to_list() == want_agg["g"].to_list()
    assert got_agg["h"].to_list() == want_agg["h"].to_list()
    assert got_agg["n"].to_list() == want_agg["n"].to_list()
    np.testing.assert_allclose(got_agg["s"].to_numpy(), want_agg["s"].to_numpy(), rtol=1e-9)


def test_category_totals_over_large_batches_match_a_group_by() -> None:
    # the encoders' totals number each batch's strings with the kernel, then look its
    # values up among those of earlier batches
    from colbridge.io.encoders import CategoryTotals, add_target_rows

    rng = np.random.default_rng(8)
    n = 3 * (groups.NUMPY_MAX_ROWS + 1000)
    words = np.array([f"u{v}" + "long tail" * (v % 2) for v in range(20_000)], dtype=object)
    values = words[np.minimum(rng.zipf(1.2, n), 19_999)]
    keys = pa.array(values, type=pa.string(), mask=rng.random(n) < 0.01)
    y = rng.standard_normal(n)
    fold = rng.integers(0, 2, n)
    totals = CategoryTotals(6)
    per_fold = np.zeros((2, 3))
    cut = [0, n // 3, 2 * n // 3, n]
    for lo, hi in itertools.pairwise(cut):
        add_target_rows(totals, totals.codes(keys.slice(lo, hi - lo)), fold[lo:hi], y[lo:hi],
                        2, per_fold)  # fmt: skip
    got_values, table = totals.sorted(pa.string())
    frame = pl.DataFrame({"k": pl.Series(keys), "y": y, "f": fold})
    want = (
        frame.group_by("k").agg(*(
            expr for f in range(2) for expr in (
                pl.col("y").filter(pl.col("f") == f).sum().alias(f"s{f}"),
                (pl.col("f") == f).sum().cast(pl.Float64).alias(f"n{f}"),
            )
        )).sort("k", nulls_last=True)
    )  # fmt: skip
    assert got_values.to_pylist() == want["k"].to_list()
    for f in range(2):
        np.testing.assert_allclose(table[:, f], want[f"s{f}"].to_numpy(), rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(table[:, 2 + f], want[f"n{f}"].to_numpy())
    np.testing.assert_array_equal(per_fold[:, 0], np.bincount(fold, minlength=2))


def test_counts_over_large_batches_match_value_counts() -> None:
    from colbridge.io.encoders import CategoryTotals

    rng = np.random.default_rng(9)
    n = 2 * (groups.NUMPY_MAX_ROWS + 1000)
    values = np.array([f"w{v}" for v in range(500)], dtype=object)[rng.integers(0, 500, n)]
    keys = pa.array(values, type=pa.large_string(), mask=rng.random(n) < 0.05)
    totals = CategoryTotals(1)
    totals.count(keys.slice(0, n // 2))
    totals.count(keys.slice(n // 2))
    cats, counts = totals.counts(pa.string())
    want = pl.Series(keys.cast(pa.string())).drop_nulls().value_counts().sort("")
    want_map: dict[Any, int] = dict(zip(want[""].to_list(), want["count"].to_list(), strict=True))
    assert cats == sorted(want_map)
    assert counts == [want_map[c] for c in cats]


def test_equal_hash_length_and_head_are_told_apart_by_the_bytes() -> None:
    # a 64-bit hash collision cannot be made on purpose: the partition's numbering is
    # given keys whose hash, length and first sixteen bytes agree (the kernel's own
    # hashes would differ), so only the byte comparison of longer strings tells them apart
    from colbridge.backends import _group_kernels

    values = pa.array(["abcdefghijklmnop-one", "abcdefghijklmnop-two"] * 2)
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32, count=len(values) + 1)
    data = np.frombuffer(data_buf, np.uint8)
    head, head2 = np.frombuffer(b"abcdefghijklmnop", np.uint64)
    part = np.array([[7, head, head2, row | (20 << 40)] for row in range(4)],
                    dtype=np.uint64).reshape(-1)  # fmt: skip
    local = np.full(4, -1, dtype=np.int64)
    firsts = np.full(4, -1, dtype=np.int64)
    count = _group_kernels._number_partition(offsets, data, part, 0, 4, local, firsts)
    assert count == 2
    assert local.tolist() == [0, 1, 0, 1]
    assert firsts[:2].tolist() == [0, 1]


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.string_view()])
def test_string_work_on_a_column_the_kernel_encodes(typ: pa.DataType) -> None:
    # a plain string column read by kernels is dictionary-encoded once per compute: over
    # NUMPY_MAX_ROWS rows by the string kernel (dictionary in order of first appearance)
    from colbridge.backends.groups import dictionary_encoded

    rng = np.random.default_rng(4)
    n = groups.NUMPY_MAX_ROWS + 7_000
    words = np.array(["UA", "AA", "délai", "", "a much longer carrier name"], dtype=object)
    values = pa.array(words[rng.integers(0, 5, n)], type=pa.string(),
                      mask=rng.random(n) < 0.03).cast(typ)  # fmt: skip
    encoded = dictionary_encoded(values)
    reference = pc.dictionary_encode(values)
    assert encoded.type == reference.type
    assert encoded.dictionary.equals(reference.dictionary)
    assert encoded.indices.equals(reference.indices)
    df = pl.from_arrow(pa.table({"c": values}))
    assert isinstance(df, pl.DataFrame)
    c = cb.col("c")
    got = df.gpu.with_columns(
        ua=c == "UA", n=c.str.len_chars(), has=c.str.contains("a"), isin=c.is_in(["AA", ""])
    ).compute()
    pc_ = pl.col("c")
    want = df.with_columns(
        ua=pc_ == "UA", n=pc_.str.len_chars(), has=pc_.str.contains("a"), isin=pc_.is_in(["AA", ""])
    )
    for name in ("ua", "n", "has", "isin"):
        assert got[name].to_list() == want[name].to_list(), name


@pytest.mark.parametrize("typ", [pa.string_view(), pa.binary_view()])
def test_take_of_a_few_rows_of_views(typ: pa.DataType) -> None:
    # pyarrow takes no views: a few rows (a few groups' keys) are sliced out and only
    # they are converted; many rows convert the column; -1 takes a null
    from colbridge.backends.groups import take

    values = [None if i % 7 == 0 else f"value {i}" * (i % 3) for i in range(10_000)]
    if pa.types.is_binary_view(typ):
        column = pa.array([None if v is None else v.encode() for v in values], type=typ)
        large = pa.large_binary()
    else:
        column = pa.array(values, type=typ)
        large = pa.large_string()
    for rows in ([5, -1, 9000, 3, 7], [-1], list(range(0, 10_000, 3)), [-1, 42]):
        got = take(column, np.array(rows, dtype=np.int64))
        want = [None if r < 0 else column.cast(large)[r].as_py() for r in rows]
        assert got.type == large
        assert got.to_pylist() == want, rows
