"""Weighted windows (``rolling_*(window_size, weights=[...])``) against polars, bit for bit.

polars computes a weighted window afresh per row, in the column's float type
(integers and booleans become Float64): the sum ``-0.0 + Σ w·x``, the mean
``Σ w·x / Σ w``, the variance ``Σ p·x² / Σ p − mean²`` with ``p = w / Σ weights``
(``ddof`` unused; a tiny negative variance gives a NaN deviation), min and max of
``w·x``; a window cut by the frame's (or group's) edge keeps its rows' weights. Its
weighted kernels refuse nulls (a panic); colbridge raises a clear error instead.
The CPU kernels repeat those operations in order, so results are compared exactly:
every numeric dtype, NaN and infinities, windows longer than the frame,
``min_samples`` edges, ``center``, empty and one-row frames, sliced and chunked
inputs, long frames cut into parallel chunks, ``.over`` with int, string and null
keys (per-group carries and the sort by key), filters before the window, the
string language and streams whose batches cut windows and groups.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import ComputeError, NullValuesError, SchemaError, UnsupportedTypeError
from colbridge.io import pipeline
from colbridge.testing.asserts import FRAME_KINDS, assert_same_as_polars
from tests.ordered.ordered_data import NUMERIC_DTYPES, frame

FUNCS = ("rolling_sum", "rolling_mean", "rolling_var", "rolling_std", "rolling_min",
         "rolling_max")  # fmt: skip
#: (window_size, weights, min_samples, center): odd and even windows, negative and zero
#: weights, every `min_samples` edge
WINDOWS = [
    (1, [2.5], None, False),
    (3, [0.25, -1.0, 2.0], None, False),
    (3, [1.0, 0.0, 3.0], 1, True),
    (4, [1.0, 10.0, 100.0, 1000.0], 2, True),
    (4, [0.5, 0.5, 0.5, 0.5], 4, True),
    (5, [3.0, 1.0, 4.0, 1.0, 5.0], 0, False),
    (40, list(np.linspace(-1.0, 2.0, 40)), 3, False),  # longer than the frames
    (40, list(np.linspace(2.0, 0.5, 40)), 1, True),
]


def _windows(m: Any, names: tuple[str, ...], over: str | None = None) -> Any:
    def steps(_: Any, q: Any) -> Any:
        out = {}
        for c in names:
            for f in FUNCS:
                for k, (window, weights, least, center) in enumerate(WINDOWS):
                    e = getattr(m.col(c), f)(window, weights, min_samples=least, center=center)
                    out[f"{c}_{f}_{k}"] = e.over(over) if over else e
        return q.select(**out)

    return steps


def _same(table: pa.Table, over: str | None = None, kinds: tuple[str, ...] = FRAME_KINDS,
          names: tuple[str, ...] | None = None) -> None:  # fmt: skip
    names = names or tuple(c for c in table.column_names if c in NUMERIC_DTYPES)
    assert_same_as_polars(table, lambda m, q: _windows(m, names, over)(m, q), kinds=kinds)


# -- whole frames, every dtype -------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 7, 64])
def test_every_dtype_matches_polars(n: int) -> None:
    # NaN, ±inf and ±0.0 among the floats: pandas would read NaN as null, so arrow kinds
    _same(frame(n, seed=n, nulls="none", specials=0.15), kinds=("polars", "pyarrow"))


def test_every_frame_kind_without_nan() -> None:
    _same(frame(23, seed=5, nulls="none", specials=0.0))


@pytest.mark.parametrize(("offset", "chunks"), [(3, 1), (5, 3), (0, 4)])
def test_sliced_and_chunked_inputs(offset: int, chunks: int) -> None:
    table = frame(45, seed=offset + chunks, nulls="none", specials=0.1, offset=offset,
                  chunks=chunks)  # fmt: skip
    assert table["float64"].num_chunks == chunks
    _same(table, kinds=("polars", "pyarrow"), names=("int8", "uint64", "float32", "float64"))


def test_long_frames_run_in_parallel_chunks() -> None:
    """Past 2 x 16,384 rows the frame is cut into chunks, each re-reading its halo."""
    rng = np.random.default_rng(11)
    n = 50_000
    table = pa.table({"float64": rng.normal(size=n) * 10,
                      "float32": rng.normal(size=n).astype(np.float32),
                      "int32": rng.integers(-1000, 1000, n).astype(np.int32)})  # fmt: skip
    _same(table, kinds=("pyarrow",))


# -- per group ------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["carry", "sort"])
@pytest.mark.parametrize(("key", "groups"), [("int", 3), ("string", 5), ("int", 0)])
def test_over_keys_match_polars(monkeypatch: pytest.MonkeyPatch, method: str, key: str,
                                groups: int) -> None:  # fmt: skip
    """Int, string and null keys (null is a group), few groups and one per row."""
    monkeypatch.setenv("COLBRIDGE_SCAN_BY_KEY", method)
    table = frame(61, seed=groups, dtypes=("int16", "float32", "float64"), nulls="none",
                  key=key, groups=groups, key_nulls=0.2, specials=0.1)  # fmt: skip
    _same(table, over="g", kinds=("polars", "pyarrow"))


def test_over_with_nulls_in_a_key_only() -> None:
    table = pa.table({"g": pa.array([None, "a", None, "b", "a", None]),
                      "float64": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]})  # fmt: skip
    _same(table, over="g")


def test_a_filter_before_the_window_scans_the_kept_rows() -> None:
    """Nulls in rows a filter drops are fine (polars never sees them); kept nulls are not."""
    table = pa.table({"x": pa.array([1.0, None, 4.0, 8.0, None, 3.0]),
                      "k": [True, False, True, True, False, True]})  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x").filter(m.col("k"))
        return q.select(s=x.rolling_sum(2, [1.0, 3.0]).sum(),
                        m=x.rolling_max(3, [2.0, -1.0, 1.0], min_samples=1).max())  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))
    q = cb.lazy(table).select(cb.col("x").filter(cb.col("k").not_()).rolling_sum(1, [1.0]).sum())
    with pytest.raises(NullValuesError, match=r"over 2 null value\(s\) \(of column `x`\)"):
        q.compute()


# -- property ----------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=30),
    window=st.integers(1, 8),
    data=st.data(),
)
def test_property_matches_polars(values: list[float], window: int, data: st.DataObject) -> None:
    weights = data.draw(st.lists(st.floats(-4, 4, width=32), min_size=window, max_size=window))
    least = data.draw(st.integers(0, window))
    center = data.draw(st.booleans())
    func = data.draw(st.sampled_from(FUNCS))
    table = pa.table({"x": pa.array(values, type=pa.float64())})

    def steps(m: Any, q: Any) -> Any:
        return q.select(getattr(m.col("x"), func)(window, weights, min_samples=least,
                                                  center=center))  # fmt: skip

    assert_same_as_polars(table, steps, kinds=("pyarrow",))


# -- the string language ---------------------------------------------------------------------
def test_string_language_takes_weights() -> None:
    table = pa.table({"x": [1.0, 2.0, 4.0, 8.0, 16.0], "g": [1, 2, 1, 2, 1]})
    text = ("a = x.rolling_sum(2, weights=[0.5, 1]); "
            "b = rolling_std(x, 3, min_samples=1, center=True, weights=[1, 2, 3]); "
            "c = over(rolling_mean(x, 2, min_samples=1, weights=[1, 3]), g)")
    got = cb.lazy(table).eval(text).compute()
    x = pl.col("x")
    want = pl.from_arrow(table).with_columns(
        a=x.rolling_sum(2, [0.5, 1]), b=x.rolling_std(3, [1, 2, 3], min_samples=1, center=True),
        c=x.rolling_mean(2, [1, 3], min_samples=1).over("g"))  # fmt: skip
    assert pl.from_arrow(got).equals(want)


# -- what polars refuses, and bad arguments -------------------------------------------------
def test_nulls_are_refused_naming_the_column_and_the_fix() -> None:
    table = pa.table({"price": pa.array([1.0, None, 3.0]), "g": [1, 1, 2]})
    with pytest.raises(BaseException, match="weights not yet supported on array with null"):
        pl.from_arrow(table).select(pl.col("price").rolling_sum(2, [1, 2]))  # polars panics
    for e in (cb.col("price").rolling_mean(2, [1, 2]),
              (cb.col("price") * 2).rolling_max(2, [1, 2]).over("g")):  # fmt: skip
        with pytest.raises(NullValuesError) as info:
            cb.lazy(table).select(e).compute()
        text = str(info.value)
        assert "over 1 null value(s) (of column `price`)" in text
        assert "fill the nulls first, e.g. `fill_null(0)`" in text


def test_weights_that_sum_to_zero_are_refused_for_variances() -> None:
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(pl.exceptions.ComputeError, match="weights sum to 0"):
        pl.from_arrow(table).select(pl.col("x").rolling_var(2, [1, -1]))
    for f in ("rolling_var", "rolling_std"):
        with pytest.raises(ComputeError, match=r"weights sum to 0.*non-zero sum"):
            cb.lazy(table).select(getattr(cb.col("x"), f)(2, [1, -1])).compute()
    # a mean and a sum take them; no rows is no error (as in polars)
    assert_same_as_polars(table, lambda m, q: q.select(m.col("x").rolling_mean(2, [1, -1],
                                                                               min_samples=1)))
    empty = cb.lazy(table.slice(0, 0)).select(cb.col("x").rolling_var(2, [1, -1])).compute()
    assert empty.num_rows == 0


@pytest.mark.parametrize(("weights", "match"), [
    ([1.0, 2.0], r"has 2 weight\(s\) for a `window_size` of 3: give exactly one weight per row"),
    ([1.0, 2.0, 3.0, 4.0], r"has 4 weight\(s\) for a `window_size` of 3"),
    ("abc", r"takes a list of numbers, one per row of the window, got str"),
    ([1.0, "a", 2.0], r"each weight must be a number, got 'a'"),
    ([1.0, True, 2.0], r"each weight must be a number, got True"),
])  # fmt: skip
def test_bad_weights_are_refused(weights: Any, match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        cb.col("x").rolling_sum(3, weights)


def test_weights_take_tuples_and_arrays_and_a_window_of_zero_is_refused() -> None:
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    for weights in ((1, 2), np.array([1.0, 2.0]), [np.float32(1), np.int64(2)]):
        assert_same_as_polars(table, lambda m, q, w=weights: q.select(
            m.col("x").rolling_sum(2, list(w))))  # fmt: skip
        got = cb.lazy(table).select(cb.col("x").rolling_sum(2, weights)).compute()
        assert got["x"].to_pylist() == [None, 5.0, 8.0]
    with pytest.raises(SchemaError, match="at least one"):
        cb.col("x").rolling_sum(0, [])


def test_dates_and_strings_are_refused_with_their_type() -> None:
    table = pa.table({"d": pa.array([1, 2, 3], type=pa.date32()), "s": ["a", "b", "c"]})
    for c in ("d", "s"):
        with pytest.raises(UnsupportedTypeError, match=rf"column `{c}` has type .*weights over"):
            cb.lazy(table).select(cb.col(c).rolling_min(2, [1, 2])).compute()


def test_explain_shows_the_weights() -> None:
    q = cb.lazy(pa.table({"x": [1.0, 2.0]})).select(cb.col("x").rolling_mean(2, [1, 3]))
    assert "rolling_mean(2, 2, False, 1, [1.0, 3.0])" in q.explain()


# -- streams -------------------------------------------------------------------------------
STREAMED = {
    "a": lambda m: m.col("x").rolling_sum(5, [1, 2, 3, 4, 5], min_samples=2),
    "b": lambda m: m.col("i").rolling_std(4, [0.1, 0.2, 0.3, 0.4]).over("g"),
    "c": lambda m: m.col("x").rolling_max(3, [1, -1, 2], min_samples=1).over("g"),
    "d": lambda m: m.col("f").rolling_mean(7, list(range(1, 8))),
    "e": lambda m: m.col("x").rolling_var(2, [3, 1], min_samples=1).over("g"),
    "f": lambda m: m.col("i").rolling_min(6, [0.5] * 6, min_samples=3),
}


@pytest.mark.parametrize("batch_rows", [1, 333, 1_000, 5_000])
def test_streams_carry_weighted_windows_across_batches(tmp_path: Path, batch_rows: int) -> None:
    """Batches cut windows and groups (string keys, some null): what one compute gives."""
    rng = np.random.default_rng(3)
    n = 2_400 if batch_rows == 1 else 5_000
    table = pa.table({"x": rng.normal(size=n), "f": rng.normal(size=n).astype(np.float32),
                      "i": rng.integers(-9, 9, n).astype(np.int32),
                      "g": pa.array(rng.choice(["a", "b", "c"], n),
                                    mask=rng.random(n) < 0.2)})  # fmt: skip
    data = tmp_path / "in.parquet"
    pq.write_table(table, data, row_group_size=700)
    out = tmp_path / "out.parquet"
    pipeline(str(data), str(out), with_={k: f(cb) for k, f in STREAMED.items()},
             batch_rows=batch_rows, device="cpu")  # fmt: skip
    want = pl.from_arrow(table).with_columns(**{k: f(pl) for k, f in STREAMED.items()})
    assert pl.read_parquet(out).equals(want)


def test_a_stream_with_a_null_fails_at_its_batch(tmp_path: Path) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": pa.array([1.0, 2.0, 3.0, None, 5.0])}), data)
    with pytest.raises(NullValuesError, match="of column `x`"):
        pipeline(str(data), str(tmp_path / "out.parquet"),
                 with_={"r": cb.col("x").rolling_sum(2, [1, 1])}, batch_rows=2,
                 device="cpu")  # fmt: skip
    assert not (tmp_path / "out.parquet").exists()


def test_signed_zeros_as_polars() -> None:
    """A weighted sum starts from -0.0 (Rust's float sum), a mean from 0.0."""
    table = pa.table({"x": [-0.0, -0.0, 0.0]})
    e = {"s": lambda m: m.col("x").rolling_sum(2, [1, 1], min_samples=1),
         "m": lambda m: m.col("x").rolling_mean(1, [1]),
         "n": lambda m: m.col("x").rolling_min(2, [1, 1], min_samples=1)}  # fmt: skip
    want = pl.from_arrow(table).select(**{k: f(pl) for k, f in e.items()})
    got = pl.from_arrow(cb.lazy(table).select(**{k: f(cb) for k, f in e.items()}).compute())
    for k in e:
        w, g = want[k].to_numpy(), got[k].to_numpy()
        assert (np.signbit(w) == np.signbit(g)).all(), k
        assert (w == g).all(), k
    assert np.signbit(got["s"].to_numpy()).tolist() == [True, True, False]
