"""polars' ``bitwise_*`` expressions against polars.

The counts (``bitwise_count_ones``, ``_count_zeros``, ``_leading_ones``,
``_leading_zeros``, ``_trailing_ones``, ``_trailing_zeros``) are elementwise: UInt32,
in the type's width (a boolean is one bit). The reductions (``bitwise_and``,
``bitwise_or``, ``bitwise_xor``) keep the type and are null where there is no value.
Generated integer and boolean columns with nulls, offsets and chunks; whole columns,
``group_by``, ``over``, filters, both CPU tiers, the CUDA code path on the host,
streams and Dask.
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
from colbridge.errors import ColbridgeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table

COUNTS = ("bitwise_count_ones", "bitwise_count_zeros", "bitwise_leading_ones",
          "bitwise_leading_zeros", "bitwise_trailing_ones", "bitwise_trailing_zeros")  # fmt: skip
REDUCTIONS = ("bitwise_and", "bitwise_or", "bitwise_xor")
TYPES = {"i8": pa.int8(), "u8": pa.uint8(), "i16": pa.int16(), "u16": pa.uint16(),
         "i32": pa.int32(), "u32": pa.uint32(), "i64": pa.int64(), "u64": pa.uint64()}  # fmt: skip
COLUMNS = (*TYPES, "b")


def _ints(rng: np.random.Generator, t: pa.DataType, n: int) -> np.ndarray[Any, Any]:
    info = np.iinfo(t.to_pandas_dtype())
    # the edges (0, -1, the extremes, single bits) and uniform bits
    edges = np.array(sorted({0, 1, 2, info.max, info.min, info.max // 2 + 1, 6, 96}),
                     dtype=info.dtype)  # fmt: skip
    if info.min < 0:
        edges = np.concatenate([edges, np.array([-1, -2, -96], dtype=info.dtype)])
    uniform = rng.integers(info.min, info.max, n, endpoint=True, dtype=info.dtype)
    return np.where(rng.random(n) < 0.3, rng.choice(edges, n), uniform)


def _table(n: int, seed: int, *, groups: int, nulls: float, offset: int = 0,
           chunks: int = 1) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    columns = {k: pa.array(_ints(rng, t, total), type=t, mask=mask()) for k, t in TYPES.items()}
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        **columns,
        "b": pa.array(rng.random(total) < 0.8, mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _counts(m: Any) -> dict[str, Any]:
    return {f"{c}_{f.removeprefix('bitwise_')}": getattr(m.col(c), f)()
            for c in COLUMNS for f in COUNTS}  # fmt: skip


def _reductions(m: Any) -> dict[str, Any]:
    return {f"{c}_{f.removeprefix('bitwise_')}": getattr(m.col(c), f)()
            for c in COLUMNS for f in REDUCTIONS}  # fmt: skip


_CASES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SHAPES = dict(
    n=st.sampled_from([0, 1, 2, 9, 80, 300]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 30]),
    nulls=st.sampled_from([0.0, 0.2, 0.9]),
    offset=st.sampled_from([0, 5]),
    chunks=st.sampled_from([1, 3]),
)


@_CASES
@given(**_SHAPES)
def test_counts_equal_polars(n: int, seed: int, groups: int, nulls: float, offset: int,
                             chunks: int) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, nulls=nulls, offset=offset, chunks=chunks)
    assert_same_as_polars(table, lambda m, q: q.select(**_counts(m)), kinds=("polars", "pyarrow"))
    # composed with other work, filtered, inside a reduction
    assert_same_as_polars(table, lambda m, q: q.filter(m.col("b")).select(
        x=m.col("i64").bitwise_count_ones() + m.col("u8").bitwise_leading_zeros(),
        y=m.col("i16").bitwise_trailing_zeros().max().over("g"),
        z=(m.col("i32") ^ m.col("i32").shift(1)).bitwise_count_ones(),
    ), kinds=("polars", "pyarrow"))  # fmt: skip


@_CASES
@given(**_SHAPES)
def test_reductions_equal_polars(n: int, seed: int, groups: int, nulls: float, offset: int,
                                 chunks: int) -> None:  # fmt: skip
    table = _table(n, seed, groups=groups, nulls=nulls, offset=offset, chunks=chunks)

    def grouped(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(
            **_reductions(m), kept=m.col("i32").filter(m.col("b")).bitwise_or())

    def windows(m: Any, q: Any) -> Any:
        return q.select("g", a=m.col("i64").bitwise_and().over("g"),
                        o=m.col("u16").bitwise_or().over("g") + 1,
                        x=m.col("b").bitwise_xor().over("g"),
                        d=m.col("i8") ^ m.col("i8").bitwise_xor())  # fmt: skip

    assert_same_as_polars(table, lambda m, q: q.select(**_reductions(m)),
                          kinds=("polars", "pyarrow"))  # fmt: skip
    for steps in (grouped, windows):
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_every_tier_and_frame_kind(tier: str) -> None:
    table = _table(500, 5, groups=4, nulls=0.1)
    assert_same_as_polars(table, lambda m, q: q.select(**_counts(m)))
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        **_reductions(m)))  # fmt: skip


def test_the_cuda_code_path() -> None:
    table = _table(700, 9, groups=5, nulls=0.2)
    got = compute_on_host(cb.lazy(table).select(**_counts(cb)))
    assert_frame_equal(pl.from_arrow(got), pl.from_arrow(table).select(**_counts(pl)))
    steps = lambda m, q: q.group_by("g", maintain_order=True).agg(  # noqa: E731
        **_reductions(m))
    assert_frame_equal(pl.from_arrow(compute_on_host(steps(cb, cb.lazy(table)))),
                       steps(pl, pl.from_arrow(table)))  # fmt: skip


def test_polars_examples_and_edges() -> None:
    df = pl.DataFrame({"n": [-1, 0, 1]})
    assert df.gpu.select(cb.col("n").bitwise_and()).compute().item() == 0
    for values, dtype in (([], pl.Int8), ([None, None], pl.UInt64), ([None], pl.Boolean),
                          ([True, None, True], pl.Boolean), ([2**64 - 1, 1], pl.UInt64)):
        df = pl.DataFrame({"a": values}, schema={"a": dtype})
        for f in REDUCTIONS:
            assert_frame_equal(df.gpu.select(getattr(cb.col("a"), f)()).compute(),
                               df.select(getattr(pl.col("a"), f)()))  # fmt: skip
    # a boolean group without a value: polars' grouped kernel answers the identity
    df = pl.DataFrame({"g": [1, 1, 2, 3], "b": [None, None, True, None],
                       "i": [None, None, 3, None]}, schema_overrides={"i": pl.Int8})
    exprs = lambda m: [getattr(m.col(c), f)().alias(f"{c}{f}")  # noqa: E731
                       for c in ("b", "i") for f in REDUCTIONS]
    assert_frame_equal(df.gpu.group_by("g", maintain_order=True).agg(exprs(cb)).compute(),
                       df.group_by("g", maintain_order=True).agg(exprs(pl)))  # fmt: skip
    assert_frame_equal(df.gpu.select([e.over("g") for e in exprs(cb)]).compute(),
                       df.select([e.over("g") for e in exprs(pl)]))  # fmt: skip
    assert df.group_by("g", maintain_order=True).agg(exprs(pl)).row(0) == \
        (1, True, False, False, None, None, None)
    # a literal is one value: its own bits, its own reduction
    df = pl.DataFrame({"a": [1, 2, 3]})
    exprs = lambda m: [m.lit(5).bitwise_xor().alias("x"),  # noqa: E731
                       m.lit(-1).bitwise_count_ones().alias("c"),
                       m.lit(True).bitwise_leading_zeros().alias("z")]
    assert_frame_equal(df.gpu.select(exprs(cb)).compute(), df.select(exprs(pl)))


@pytest.mark.parametrize("column", ["f", "d", "s"])
@pytest.mark.parametrize("func", ["bitwise_count_ones", "bitwise_trailing_zeros", "bitwise_or"])
def test_other_types_are_refused(column: str, func: str) -> None:
    table = pa.table({"f": [1.5, 2.0], "s": ["a", "b"],
                      "d": [dt.date(2020, 1, 1), dt.date(2021, 1, 1)]})  # fmt: skip
    with pytest.raises(pl.exceptions.PolarsError):
        pl.from_arrow(table).select(getattr(pl.col(column), func)())  # type: ignore[union-attr]
    # named with its type: "not defined for float64", "of date is not supported"
    with pytest.raises(ColbridgeError, match=rf"{func}.*(not defined for|not supported)"):
        cb.lazy(table).select(getattr(cb.col(column), func)()).compute()


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2], "x": pa.array([3, 5, None, 12], pa.int16())})
    got = cb.lazy(table).eval(
        "o = bitwise_or(x)\na = x.bitwise_and().over(g)\nc = bitwise_count_ones(x)\n"
        "t = x.bitwise_trailing_zeros()"
    ).compute()
    want = pl.from_arrow(table).with_columns(  # type: ignore[union-attr]
        o=pl.col("x").bitwise_or(), a=pl.col("x").bitwise_and().over("g"),
        c=pl.col("x").bitwise_count_ones(), t=pl.col("x").bitwise_trailing_zeros())
    assert_frame_equal(pl.from_arrow(got), want)


def test_streams_and_dask_fold_the_pieces(tmp_path: Any) -> None:
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    from colbridge.io import pipeline

    table = _table(3_000, 11, groups=5, nulls=0.1)
    path = tmp_path / "a.parquet"
    pq.write_table(table, path, row_group_size=200)
    frame = pl.read_parquet(path)
    lf = pl.scan_parquet(path)
    whole = {f"{c}_{f}": getattr(pl.col(c), f)() for c in ("i64", "u8", "b") for f in REDUCTIONS}
    mine = {f"{c}_{f}": getattr(cb.col(c), f)() for c in ("i64", "u8", "b") for f in REDUCTIONS}
    assert_frame_equal(lf.gpu.select(**mine).compute(), frame.select(**whole))
    got = lf.gpu.group_by("g", maintain_order=True).agg(**mine).compute()
    assert_frame_equal(got, frame.group_by("g", maintain_order=True).agg(**whole))
    out = tmp_path / "o.parquet"
    pipeline(str(path), str(out), with_="p = bitwise_or(i32).over(g)", batch_rows=300)
    assert pl.read_parquet(out)["p"].equals(
        frame.select(p=pl.col("i32").bitwise_or().over("g"))["p"])
    pdf = pa.table({"i": table.column("i64").fill_null(0)}).to_pandas()
    ddf = dd.from_pandas(pdf, npartitions=3)
    got_dask = cb.dask.apply(cb.lazy(pdf).select(x=cb.col("i").bitwise_xor()), ddf).compute()
    assert int(got_dask["x"].iloc[0]) == pl.from_pandas(pdf).select(
        pl.col("i").bitwise_xor()).item()
