"""``skew`` and ``kurtosis`` against polars: whole columns, groups, windows, filters, edges.

polars is the oracle. colbridge makes the central moments in two passes (the mean,
then sums of the deviations' powers) where polars merges Welford-style states of
chunks, so finite results are compared within a relative 1e-9 (the data is kept well
conditioned: spreads far above the rounding of the values); everything else exactly:
which results are null (no values; ``bias=False`` with too few), which are NaN (values
that do not vary, a NaN or an infinity among them), the types. Frames have nulls,
slices, chunks, empty and one-row groups, the three frame kinds; the string language;
the CUDA code path (run on the host); refused types and arguments.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import SchemaError, UnsupportedTypeError
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

RTOL = 1e-9


def _stats(m: Any, c: str) -> dict[str, Any]:
    x = m.col(c)
    return {
        f"s_{c}": x.skew(),
        f"su_{c}": x.skew(bias=False),
        f"k_{c}": x.kurtosis(),
        f"kp_{c}": x.kurtosis(fisher=False),
        f"ku_{c}": x.kurtosis(bias=False),
        f"kpu_{c}": x.kurtosis(fisher=False, bias=False),
    }


def _table(n: int, seed: int, *, groups: int, nulls: float, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.05),
        "x": pa.array(rng.standard_normal(total) * 3.0 + 1.0, mask=mask()),
        "e": pa.array(rng.exponential(2.0, total).astype(np.float32), mask=mask()),
        "i": pa.array(rng.integers(-20, 20, total).astype(np.int16), mask=mask()),
        "u": pa.array(rng.integers(0, 1000, total).astype(np.uint64), mask=mask()),
        "b": pa.array(rng.random(total) < 0.3, mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


COLUMNS = ("x", "e", "i", "u", "b")


def _same(got: Any, want: pl.DataFrame) -> None:
    got = pl.from_arrow(got) if isinstance(got, (pa.Table, pa.RecordBatch)) else got
    if not isinstance(got, pl.DataFrame):
        got = pl.from_pandas(got)
    assert_frame_equal(got, want, check_exact=False, rel_tol=RTOL, abs_tol=1e-12)


def _both(table: pa.Table, steps: Any) -> None:
    want = steps(pl, pl.from_arrow(table))
    _same(steps(cb, pl.from_arrow(table).gpu).compute(), want)
    _same(steps(cb, cb.lazy(table)).compute(), want)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 3, 4, 9, 60, 400]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 40]),
    nulls=st.sampled_from([0.0, 0.2, 0.8]),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
)
def test_moments_equal_polars(n: int, seed: int, groups: int, nulls: float, offset: int,
                              chunks: int) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, nulls=nulls, offset=offset, chunks=chunks)

    def whole(m: Any, q: Any) -> Any:
        return q.select(**{k: v for c in COLUMNS for k, v in _stats(m, c).items()})

    def grouped(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(
            **{k: v for c in COLUMNS for k, v in _stats(m, c).items()})

    def windows(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(
            "g", a=x.skew().over("g"), b=m.col("i").kurtosis(bias=False).over("g"),
            c=(x.skew() * 2 + x.kurtosis()).over("g"),
        )  # fmt: skip

    def filtered(m: Any, q: Any) -> Any:
        x, i = m.col("x"), m.col("i")
        return q.group_by("g", maintain_order=True).agg(
            a=x.filter(i > 0).skew(), b=x.filter(i < 5).kurtosis(fisher=False))

    for steps in (whole, grouped, windows, filtered):
        _both(table, steps)


def test_nan_null_and_small_groups_as_polars() -> None:
    nan, inf = float("nan"), float("inf")
    groups = [[], [None], [2.0], [2.0, 2.0, 2.0], [1.0, 2.0], [1.0, 2.0, 4.0],
              [1.0, 2.0, 4.0, 8.0], [1.0, nan, 3.0], [1.0, inf, 2.0, 5.0], [-inf, 3.0],
              [None, 1.0, None, 3.0, 4.0, 9.0], [5.0, 5.0, 5.0, 6.0]]  # fmt: skip
    keys = [k for k, g in enumerate(groups) for _ in (g or [None])]
    values = [v for g in groups for v in (g or [None])]
    table = pa.table({"g": keys, "x": pa.array(values, pa.float64())})
    table = table.filter(pa.array([bool(g) or k != 0 for k, g in
                                   zip(keys, [groups[k] for k in keys], strict=True)]))  # fmt: skip

    def grouped(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(**_stats(m, "x"))

    _both(table, grouped)
    for k in range(len(groups)):  # each group as a whole column too
        part = table.filter(pa.compute.equal(table["g"], k))
        _both(part, lambda m, q: q.select(**_stats(m, "x")))


def test_an_empty_frame_and_a_constant_column() -> None:
    empty = pa.table({"x": pa.array([], pa.float64()), "i": pa.array([], pa.int32())})
    _both(empty, lambda m, q: q.select(**_stats(m, "x"), **_stats(m, "i")))
    flat = pa.table({"x": [7.25] * 50, "i": [3] * 50})
    _both(flat, lambda m, q: q.select(**_stats(m, "x"), **_stats(m, "i")))


def test_every_frame_kind_and_the_cuda_code_path() -> None:
    table = _table(300, 5, groups=4, nulls=0.1)
    want = pl.from_arrow(table).group_by("g", maintain_order=True).agg(**_stats(pl, "x"))

    def ours(frame: Any) -> Any:
        return frame.group_by("g", maintain_order=True).agg(**_stats(cb, "x"))

    _same(ours(cb.lazy(table)).compute(), want)
    _same(ours(pl.from_arrow(table).gpu).compute(), want)
    _same(ours(table.to_pandas(types_mapper=pd_arrow()).gpu).compute(), want)
    _same(compute_on_host(ours(cb.lazy(table))), want)
    whole = pl.from_arrow(table).select(**_stats(pl, "x"))
    _same(compute_on_host(cb.lazy(table).select(**_stats(cb, "x"))), whole)


def pd_arrow() -> Any:
    import pandas as pd

    return pd.ArrowDtype


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 1, 2, 2, 2, 2], "x": [5.0, 1.0, 2.0, None, 4.0, 0.5, 9.0]})
    got = cb.lazy(table).eval(
        "s = skew(x)\nk = kurtosis(x, fisher=False, bias=False)\no = x.skew(bias=False).over(g)"
    ).compute()
    want = pl.from_arrow(table).with_columns(
        s=pl.col("x").skew(), k=pl.col("x").kurtosis(fisher=False, bias=False),
        o=pl.col("x").skew(bias=False).over("g"))  # fmt: skip
    _same(got, want)


def test_repr_names_the_arguments() -> None:
    assert repr(cb.col("x").skew().node) == 'col("x").skew()'
    assert repr(cb.col("x").skew(bias=False).node) == 'col("x").skew(bias=False)'
    assert repr(cb.col("x").kurtosis(fisher=False).node) == 'col("x").kurtosis(fisher=False)'
    assert repr(cb.col("x").kurtosis(bias=False).node) == 'col("x").kurtosis(bias=False)'


@pytest.mark.parametrize(("build", "pattern"), [
    (lambda: cb.col("x").skew(bias="no"), r"skew\(bias='no'\)`: expected True or False"),
    (lambda: cb.col("x").kurtosis(fisher=1), r"kurtosis\(fisher=1\)`: expected True or False"),
])  # fmt: skip
def test_bad_arguments_are_refused_when_written(build: Any, pattern: str) -> None:
    with pytest.raises(SchemaError, match=pattern):
        build()


@pytest.mark.parametrize("column", ["s", "d"])
def test_types_that_are_not_numbers_are_refused(column: str) -> None:
    table = pa.table({"s": ["a", "b"], "d": [dt.date(2020, 1, 1), dt.date(2021, 1, 1)]})
    with pytest.raises((UnsupportedTypeError, SchemaError), match=rf"`{column}`|skew"):
        cb.lazy(table).select(cb.col(column).skew()).compute()


def test_streams_and_dask_refuse_them_naming_the_way_out(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    from colbridge.errors import JobSpecError, UnsupportedOperationError
    from colbridge.io import pipeline

    table = pa.table({"x": np.arange(600, dtype=np.float64) % 7, "g": np.arange(600) % 3})
    path = tmp_path / "a.parquet"
    pq.write_table(table, path, row_group_size=100)
    with pytest.raises(JobSpecError, match=r"`skew` per group cannot be merged .* two passes"
                       r".* compute it in memory"):  # fmt: skip
        pipeline(str(path), str(tmp_path / "o.parquet"), with_="s = skew(x).over(g)",
                 batch_rows=100)  # fmt: skip
    lf = pl.scan_parquet(path)
    with pytest.raises(UnsupportedOperationError, match=r"whole column at once .* in memory"):
        lf.gpu.select(k=cb.col("x").kurtosis()).compute()
    with pytest.raises(JobSpecError, match=r"`kurtosis` per group cannot be merged"):
        lf.gpu.group_by("g").agg(k=cb.col("x").kurtosis()).compute()
    ddf = dd.from_pandas(table.to_pandas(), npartitions=3)
    with pytest.raises(JobSpecError, match=r"`skew` per group cannot be merged"):
        cb.dask.apply(cb.lazy(table.to_pandas()).group_by("g").agg(s=cb.col("x").skew()),
                      ddf).compute()  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3),
                          st.sampled_from([0.1, 0.3, -2.5, 1e300, float("nan"), float("inf"),
                                           None])),
                min_size=1, max_size=30))  # fmt: skip
def test_std_of_a_group_of_one_value_repeated_is_zero_as_polars(rows: list[Any]) -> None:
    # polars' grouped variance is online (Welford): exactly 0 for a value repeated,
    # where the deviations from a two-pass mean (0.1 three times: 0.10000000000000002)
    # are not; a z-score of such a group is then NaN or infinite, as in polars
    df = pl.DataFrame({"g": [g for g, _ in rows], "x": [x for _, x in rows]},
                      schema={"g": pl.Int64, "x": pl.Float64})  # fmt: skip

    def steps(m: Any, q: Any) -> list[Any]:
        x = m.col("x")
        return [
            q.group_by("g", maintain_order=True).agg(s=x.std(), v=x.var(ddof=0)),
            q.with_columns(s=x.std().over("g"), z=((x - x.mean()) / x.std()).over("g")),
        ]

    for got, want in zip(steps(cb, df.gpu), steps(pl, df), strict=True):
        got, want = got.compute(), want
        constant = want.select(pl.exclude("g", "x", "z"))  # the variances themselves
        assert_frame_equal(got.select(constant.columns).select(pl.all() == 0),
                           constant.select(pl.all() == 0))  # fmt: skip
        assert_frame_equal(got, want, rel_tol=RTOL)


def test_std_of_values_repeated_is_zero_though_their_mean_is_not_them() -> None:
    # the two-pass mean of 0.1 three times is 0.10000000000000002, of 1e308 twice inf
    # (its sum overflows); polars' online variance is 0 for both
    df = pl.DataFrame({"g": [1, 1, 2, 2, 2, 3, 3, 3], "x": [1e308, 1e308, -1e308, -1e308,
                                                          np.nan, 0.1, 0.1, 0.1]})  # fmt: skip
    got = df.gpu.group_by("g", maintain_order=True).agg(s=cb.col("x").std()).compute()
    want = df.group_by("g", maintain_order=True).agg(s=pl.col("x").std())
    assert_frame_equal(got, want)
    assert got["s"].to_list()[0] == got["s"].to_list()[2] == 0.0
