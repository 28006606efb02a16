"""``arg_max`` and ``arg_min`` against polars: whole columns, groups, windows, orders.

The position of the largest (smallest) value among a column's or group's rows, nulls
left out, NaN left out unless every value is NaN, ties to the first (but where
polars' own kernels keep the last: a Categorical's ``arg_max``, and strings' or
binary's over the whole column in frame order), as polars' eager and in-memory
engines keep them. Generated frames hold nulls in
keys and values, NaN, ``-0.0``, infinities, ties, one-row and empty frames, one
group and several.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import JobSpecError, UnsupportedTypeError
from colbridge.testing.asserts import assert_same_as_polars


def _values(kind: str, n: int, rng: np.random.Generator) -> pa.Array:
    """``n`` values of ``kind`` drawn from few distinct ones (ties), a fifth null."""
    null = rng.random(n) < 0.2
    pick = rng.integers(0, 4, n)

    def of(choices: list[Any], typ: pa.DataType) -> pa.Array:
        return pa.array([None if null[i] else choices[pick[i]] for i in range(n)], typ)

    if kind == "float":
        return of([np.nan, -0.0, 0.0, 2.5] if rng.random() < 0.5 else [np.inf, -1.5, np.nan,
                                                                       -np.inf], pa.float64())
    if kind == "float_nan":  # mostly NaN: groups of NaN alone
        return of([np.nan, np.nan, np.nan, 1.0], pa.float64())
    if kind == "float32":
        return of([1.5, np.nan, -2.0, 1.5], pa.float32())
    if kind == "int8":
        return of([-128, 127, 0, 127], pa.int8())
    if kind == "uint64":
        return of([2**64 - 1, 0, 2**63, 1], pa.uint64())
    if kind == "bool":
        return of([True, False, False, True], pa.bool_())
    if kind == "string":
        return of(["b", "", "é", "ab"], pa.string())
    if kind == "large_string":
        return of(["zz", "z", "zz", "a"], pa.large_string())
    if kind == "binary":
        return of([b"\x00", b"b", b"", b"b"], pa.binary())
    if kind == "categorical":  # ordered by text in polars: not by the dictionary's order
        codes = pa.array([None if null[i] else int(pick[i]) for i in range(n)], pa.int32())
        return pa.DictionaryArray.from_arrays(codes, pa.array(["m", "b", "z", "a"]))
    if kind == "date":
        return of([dt.date(1969, 12, 31), dt.date(2020, 1, 1), dt.date(1, 1, 1),
                   dt.date(2020, 1, 1)], pa.date32())  # fmt: skip
    if kind == "datetime":
        return of([dt.datetime(2020, 1, 1, 0, 0, 0, 1), dt.datetime(1960, 5, 5),
                   dt.datetime(2020, 1, 1), dt.datetime(1960, 5, 5)], pa.timestamp("us"))
    assert kind == "duration"
    return of([dt.timedelta(0), dt.timedelta(-1), dt.timedelta(days=3), dt.timedelta(0)],
              pa.duration("ns"))  # fmt: skip


KINDS = ("float", "float_nan", "float32", "int8", "uint64", "bool", "string", "large_string",
         "binary", "categorical", "date", "datetime", "duration")  # fmt: skip


def _table(kind: str, n: int, seed: int, groups: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, groups, n).tolist()
    return pa.table({
        "g": pa.array([None if rng.random() < 0.1 else k for k in keys], pa.int64()),
        "t": pa.array(rng.integers(0, 5, n), pa.int64()),
        "x": _values(kind, n, rng),
    })  # fmt: skip


#: where the reductions are taken, as polars spells each
SHAPES: dict[str, Any] = {
    "whole": lambda m, q, f: q.select(f(m.col("x"))),
    "filtered": lambda m, q, f: q.select(f(m.col("x").filter(m.col("t") > 1))),
    "group_by": lambda m, q, f: q.group_by("g", maintain_order=True).agg(
        f(m.col("x")), k=f(m.col("x").filter(m.col("t") != 2))),
    "over": lambda m, q, f: q.with_columns(r=f(m.col("x")).over("g")),
    "over_order": lambda m, q, f: q.with_columns(
        r=f(m.col("x")).over("g", order_by="t", descending=True),
        s=f(m.col("x")).over(order_by="t")),
}


@settings(max_examples=120, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    n=st.sampled_from([0, 1, 2, 5, 17, 40]),
    seed=st.integers(0, 2**32 - 1),
    groups=st.sampled_from([1, 3]),
    shape=st.sampled_from(sorted(SHAPES)),
    func=st.sampled_from(["arg_max", "arg_min"]),
)
def test_positions_as_polars(kind: str, n: int, seed: int, groups: int, shape: str,
                             func: str) -> None:  # fmt: skip
    table = _table(kind, n, seed, groups)

    def steps(m: Any, q: Any) -> Any:
        return SHAPES[shape](m, q, lambda e: getattr(e, func)())

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(("string", "large_string", "binary", "categorical", "int8", "float",
                          "bool", "date")),
    n=st.sampled_from([0, 1, 2, 5, 17, 40]),
    seed=st.integers(0, 2**32 - 1),
    one_group=st.booleans(),
    func=st.sampled_from(["arg_max", "arg_min"]),
)
def test_ties_as_polars_eager_and_in_memory_engines(
    kind: str, n: int, seed: int, one_group: bool, func: str
) -> None:
    # polars' eager engine and its lazy in-memory one keep the same tie (the first, but the
    # last for `arg_max` of a Categorical, and of strings or binary over the whole column):
    # colbridge keeps it too. (Its streaming engine, what `collect()` runs in polars 2.1,
    # keeps ties as the rows fall among its threads; `assert_same_as_polars` takes eager's.)
    _same_ties_as_eager_and_in_memory(kind, n, seed, one_group, func)


@pytest.mark.parametrize("kind", ["string", "large_string", "binary", "categorical"])
@pytest.mark.parametrize("seed", range(4))
def test_ties_of_text_in_one_group_of_keys(kind: str, seed: int) -> None:
    # one group of keys is no whole column: polars' grouped kernel keeps the first of equal
    # strings (a Categorical's last), its column kernel the last
    for one_group in (True, False):
        _same_ties_as_eager_and_in_memory(kind, 40, seed, one_group, "arg_max")


def _same_ties_as_eager_and_in_memory(kind: str, n: int, seed: int, one_group: bool,
                                      func: str) -> None:  # fmt: skip
    import polars as pl
    from polars.testing import assert_frame_equal

    df = pl.from_arrow(_table(kind, n, seed, 3))
    assert isinstance(df, pl.DataFrame)
    if one_group:  # a single group of keys: every row's key is 0 (a plain column: a
        # `pl.lit(0)` key is flagged sorted, and polars then keeps other ties, see below)
        df = df.with_columns(g=pl.Series([0] * n, dtype=pl.Int64))
    for make in SHAPES.values():
        step = lambda m, q, make=make: make(m, q, lambda e: getattr(e, func)())  # noqa: E731
        eager = step(pl, df)
        assert_frame_equal(step(pl, df.lazy()).collect(engine="in-memory"), eager)
        assert_frame_equal(step(cb, df.gpu).compute(), eager, check_exact=True)


def test_a_column_polars_flags_sorted_keeps_the_tie_of_its_values() -> None:
    # polars' kernels read a sorted flag (set by `sort`, or on a key by `pl.lit`) and then
    # keep another tie (the last of equal maxima); colbridge reads values, not flags: it
    # answers as polars does for the same values and keys without the flag (a known
    # difference, docs/grouped.md)
    import polars as pl

    for values, descending in itertools.product(
        ([1, 3, 2, 3, 0, 0], [1.0, 3.0, 2.0, 3.0, 0.0, 0.0], ["b", "a", "b", "", ""]),
        (False, True),
    ):
        df = pl.DataFrame({"x": values, "g": [1] * len(values), "t": list(range(len(values)))})
        df = df.sort("x", descending=descending)
        plain = pl.DataFrame({c: df[c].to_list() for c in df.columns})
        keyed = plain.with_columns(g=pl.lit(1, pl.Int64))  # a key flagged sorted
        for shape in ("whole", "group_by", "over"):
            for func in ("arg_max", "arg_min"):
                def step(m: Any, q: Any, shape: str = shape, func: str = func) -> Any:
                    return SHAPES[shape](m, q, lambda e: getattr(e, func)())

                assert step(cb, df.gpu).compute().equals(step(pl, plain)), (values, shape, func)
                assert step(cb, keyed.gpu).compute().equals(step(pl, plain)), (values, shape, func)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_enum_by_its_categories_order(shape: str, seed: int) -> None:
    # polars reads an Arrow dictionary as a Categorical: the Enum is made in polars
    import polars as pl

    table = _table("categorical", 23, seed, 1 + seed)
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    df = df.with_columns(pl.col("x").cast(pl.String).cast(pl.Enum(["m", "b", "z", "a"])))
    for func in ("arg_max", "arg_min"):
        # polars' eager engine: its streaming one keeps other ties (not its own Series')
        want = SHAPES[shape](pl, df, lambda e, f=func: getattr(e, f)())
        got = SHAPES[shape](cb, df.gpu, lambda e, f=func: getattr(e, f)()).compute()
        assert got.equals(want), (func, got, want)


def test_pandas_columns_and_expressions_as_polars() -> None:
    rng = np.random.default_rng(3)
    n = 50
    table = pa.table({
        "g": pa.array(rng.integers(0, 4, n), pa.int64()),
        "a": pa.array(rng.choice([1.0, -0.0, 0.0, 7.5], n)),
        "b": pa.array(rng.integers(-3, 3, n), pa.int64()),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        a, b = m.col("a"), m.col("b")
        return q.with_columns(
            p=(a * b).arg_max(),  # a computed value
            q=(a - a.mean()).abs().arg_min().over("g"),
            r=b.cum_sum().arg_max().over("g"),
            s=(b.arg_max() + 1).over("g") * 2,  # a position in arithmetic
        )  # fmt: skip

    assert_same_as_polars(table, steps)


def test_the_string_language_names_them() -> None:
    import polars as pl

    df = pl.DataFrame({"g": [1, 1, 2], "x": [2.0, 5.0, 1.0]})
    got = cb.lazy(df).eval("a = arg_max(x); b = arg_min(x).over(g)").compute()
    want = df.with_columns(a=pl.col("x").arg_max(), b=pl.col("x").arg_min().over("g"))
    assert got.equals(want)


def test_on_the_cuda_path_through_the_host_shim() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    table = _table("float", 30, 11, 3)
    import polars as pl

    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    handle = df.gpu.with_columns(r=cb.col("x").arg_max().over("g"),
                                 s=(cb.col("x") * 2).arg_min())  # fmt: skip
    want = df.with_columns(r=pl.col("x").arg_max().over("g"),
                           s=(pl.col("x") * 2).arg_min())  # fmt: skip
    assert compute_on_host(handle).equals(want)


def test_nested_values_are_refused_by_name() -> None:
    import polars as pl

    df = pl.DataFrame({"x": [[1], [2]]})
    with pytest.raises(UnsupportedTypeError, match=r"column `x` has type .*list.*arg_max"):
        df.gpu.select(cb.col("x").arg_max()).compute()


def test_streams_refuse_them_by_name(tmp_path: Any) -> None:
    import polars as pl

    lf = pl.DataFrame({"g": [1, 1, 2], "x": [1.0, 3.0, 2.0]}).lazy()
    with pytest.raises(JobSpecError, match=r"arg_max.*not supported in a streamed job"):
        lf.gpu.select(cb.col("x").arg_max()).compute()
    with pytest.raises(JobSpecError, match=r"`arg_min` per group cannot be merged"):
        lf.gpu.with_columns(m=cb.col("x").arg_min().over("g")).compute()
