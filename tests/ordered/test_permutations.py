"""``sort``, ``arg_sort`` and ``reverse`` against polars, plain and ``over``.

Compared exactly with polars on generated frames of every sortable type (ties,
NaN, ``-0.0`` beside ``0.0``, repeated and multi-byte strings, categoricals,
enums, dates, datetimes, durations), nulls, slices and chunks, empty and one-row
frames, keys with nulls; both flags both ways; inside other expressions and of
expressions; the three frame kinds; the string language; streams and Dask refuse
them; the CUDA code path (run on the host) gives the same answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import (
    InvalidOperationError,
    SchemaError,
    UnsupportedOperationError,
)
from colbridge.testing.asserts import assert_same_as_polars
from tests.ordered.ordered_data import (
    SORTABLE_COLUMNS,
    SORTABLE_SHAPES,
    SORTABLE_WORDS,
    assert_cuda_code_path_agrees,
    assert_streams_and_dask_refuse,
    sortable_table,
)


def _with_enum(table: pa.Table) -> pa.Table:
    """``table`` with ``e``: its strings as an Enum whose categories are not in text order."""
    enum = pl.Enum(SORTABLE_WORDS[::-1])
    frame = pl.from_arrow(table, rechunk=False)
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(e=pl.col("s").cast(enum)).to_arrow()


COLUMNS = (*SORTABLE_COLUMNS, "e")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    **SORTABLE_SHAPES,
    descending=st.booleans(),
    nulls_last=st.booleans(),
    columns=st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=3, unique=True),
)
def test_permutations_equal_polars(n: int, seed: int, nulls: float, offset: int, chunks: int,
                                   groups: int, descending: bool, nulls_last: bool,
                                   columns: list[str]) -> None:  # fmt: skip
    table = _with_enum(sortable_table(n, seed, nulls=nulls, offset=offset, chunks=chunks,
                                      groups=groups))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in columns:
            x = m.col(c)
            flags = {"descending": descending, "nulls_last": nulls_last}
            out[f"s_{c}"] = x.sort(**flags)
            out[f"a_{c}"] = x.arg_sort(**flags)
            out[f"r_{c}"] = x.reverse()
            out[f"so_{c}"] = x.sort(**flags).over("g")
            out[f"ao_{c}"] = x.arg_sort(**flags).over("g")
            out[f"ro_{c}"] = x.reverse().over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 2, 5, 40, 300]),
    seed=st.integers(0, 2**31 - 1),
    nulls=st.sampled_from([0.0, 0.3]),
    chunks=st.sampled_from([1, 3]),
    groups=st.sampled_from([1, 4, 100]),
    by=st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=3, unique=True),
    values=st.sampled_from(["f", "s", "d", "e"]),
    data=st.data(),
)
def test_sort_by_equals_polars(n: int, seed: int, nulls: float, chunks: int, groups: int,
                               by: list[str], values: str, data: st.DataObject) -> None:
    table = _with_enum(sortable_table(n, seed, nulls=nulls, chunks=chunks, groups=groups))
    flags = st.booleans() | st.lists(st.booleans(), min_size=len(by), max_size=len(by))
    descending, nulls_last = data.draw(flags), data.draw(flags)

    def steps(m: Any, q: Any) -> Any:
        # polars' ties come in frame order only with `maintain_order`; colbridge's always do
        x = m.col(values).sort_by(*by, descending=descending, nulls_last=nulls_last,
                                  maintain_order=True)  # fmt: skip
        return q.select(a=x, o=x.over("g"), first=x.first(), last=x.last().over("g"))

    assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_sort_by_in_group_by_and_of_expressions() -> None:
    table = sortable_table(400, 4, nulls=0.2, groups=9)

    def steps(m: Any, q: Any) -> Any:
        by = m.col("f").abs()
        return q.group_by("g", maintain_order=True).agg(
            first=m.col("i8").sort_by(by, "s", maintain_order=True).first(),
            last=(m.col("i8") * 3 - m.col("f32")).sort_by(
                "u64", descending=True, maintain_order=True).last(),
            top=m.col("s").sort_by("i8", "f", nulls_last=[True, False],
                                   maintain_order=True).first(),
        )  # fmt: skip

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("descending", [False, True])
def test_long_runs_of_ties_in_large_groups(descending: bool) -> None:
    # arg_sort is stable: equal values (many per group) keep their frame order
    rng = np.random.default_rng(11)
    n = 30_000
    table = pa.table({
        "g": rng.integers(0, 6, n),
        "i": pa.array(rng.integers(-40, 40, n), mask=rng.random(n) < 0.1),
        "f": pa.array(np.round(rng.standard_normal(n) * 1e6, -4), mask=rng.random(n) < 0.1),
    })  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in ("i", "f"):
            x = m.col(c)
            out[f"a_{c}"] = x.arg_sort(descending=descending)
            out[f"ao_{c}"] = x.arg_sort(descending=descending, nulls_last=True).over("g")
            out[f"so_{c}"] = x.sort(descending=descending).over("g")
        return q.select(**out)

    assert_same_as_polars(table, steps, kinds=("polars",))


def test_inside_expressions_and_of_expressions() -> None:
    table = sortable_table(500, 3, nulls=0.2, groups=7).append_column(
        "o", pa.array(np.random.default_rng(2).permutation(500)))  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        f, i = m.col("f"), m.col("i8")
        return q.with_columns(
            gap=f - f.sort(),
            of_sum=(i * 2 + 1).sort(descending=True),
            lower=m.col("s").str.to_lowercase().sort(nulls_last=True),
            firsts=i.sort().over("g").cum_sum(),
            back=i.reverse().cum_sum().reverse(),
            index=i.arg_sort().over("g") + 1,
            ordered=i.sort().over("g", order_by="o"),
            moved=m.col("s").reverse().over("g", order_by="o"),
            top=f.sort(descending=True, nulls_last=True).first(),
        )

    assert_same_as_polars(table, steps)


def test_null_typed_columns() -> None:
    table = pa.table({"n": pa.nulls(3), "g": [1, 2, 1]})

    def steps(m: Any, q: Any) -> Any:
        n = m.col("n")
        return q.select(s=n.sort(), r=n.reverse().over("g"), a=n.arg_sort(descending=True),
                        ao=n.arg_sort().over("g"))  # fmt: skip

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = sortable_table(200, 8, nulls=0.2).select(["g", "f", "i8", "s", "d"])
    assert_same_as_polars(table, lambda m, q: q.select(
        a=m.col("f").sort(), b=m.col("i8").arg_sort(descending=True).over("g"),
        c=m.col("s").reverse(), d=m.col("d").sort(nulls_last=True).over("g")))  # fmt: skip


def test_pandas_nan_is_a_null_there() -> None:
    import pandas as pd

    pdf = pd.DataFrame({"x": [1.0, np.nan, 0.5, 1.0]})
    got = cb.lazy(pdf).select(s=cb.col("x").sort(), a=cb.col("x").arg_sort()).compute()
    assert got["s"].tolist()[1:] == [0.5, 1.0, 1.0]
    assert got["s"].isna().tolist() == [True, False, False, False]
    assert got["a"].tolist() == [1, 2, 0, 3]


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2, 2], "x": [3.0, None, 2.0, 1.0]})
    got = cb.lazy(table).eval("s = sort(x, descending=True)\na = x.arg_sort(nulls_last=True)"
                              "\nr = reverse(x).over(g)\nb = sort_by(x, g, x, descending="
                              "[True, False])\nc = x.sort_by('x', nulls_last=True).over(g)")
    want = pl.from_arrow(table).with_columns(
        s=pl.col("x").sort(descending=True), a=pl.col("x").arg_sort(nulls_last=True),
        r=pl.col("x").reverse().over("g"),
        b=pl.col("x").sort_by("g", "x", descending=[True, False], maintain_order=True),
        c=pl.col("x").sort_by("x", nulls_last=True).over("g"))  # fmt: skip
    assert pl.from_arrow(got.compute()).equals(want)


@pytest.mark.parametrize(("build", "pattern"), [
    (lambda: cb.col("x").sort(descending="no"), r"`sort\(descending='no'\)`: expected True"),
    (lambda: cb.col("x").sort(nulls_last=1), r"`sort\(nulls_last=1\)`: expected True"),
    (lambda: cb.col("x").arg_sort(descending=None), r"`arg_sort\(descending=None\)`"),
    (lambda: cb.col("x").sort_by("t", "u", descending=[True]),
     r"`sort_by\(descending=\[True\]\)`: 1 flag\(s\) for 2 key\(s\); give one flag, or one"),
    (lambda: cb.col("x").sort_by("t", nulls_last=[1]), r"`sort_by\(nulls_last=1\)`: expected"),
    (lambda: cb.col("x").sort_by("t", maintain_order="y"), r"`sort_by\(maintain_order='y'\)`"),
    (lambda: cb.col("x").sort_by([]), r"`sort_by` needs at least one key"),
])  # fmt: skip
def test_bad_arguments_are_refused_when_written(build: Any, pattern: str) -> None:
    with pytest.raises(SchemaError, match=pattern):
        build()


def test_sort_by_refusals_name_the_way_out() -> None:
    df = pl.DataFrame({"x": [1, 2, 3], "t": [3, 1, 2], "g": [1, 1, 2]})
    x = cb.col("x")
    with pytest.raises(UnsupportedOperationError, match=r"`col\(\"x\"\)\.sort_by\(col\(\"t\"\)\)` "
                       r"inside `over\(\.\.\., order_by=\.\.\.\)`: not supported .* sort the "
                       r"frame by that order first and drop `order_by`"):  # fmt: skip
        df.gpu.select(x.sort_by("t").over("g", order_by="x")).compute()
    with pytest.raises(InvalidOperationError, match=r"ordered by another column \(`by`\) over "
                       r"filtered values is refused .* filter the frame's rows first"):  # fmt: skip
        df.gpu.select(x.filter(x > 1).sort_by("t").first()).compute()


def test_streams_and_dask_refuse_them(tmp_path: Any) -> None:
    assert_streams_and_dask_refuse(tmp_path, lambda x: x.sort(),
                                   r"`col\(\"x\"\).sort\(.*not supported in a streamed job")
    assert_streams_and_dask_refuse(tmp_path, lambda x: x.reverse(), r"\.reverse\(\)")


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    assert_cuda_code_path_agrees(sortable_table(2_000, 5, nulls=0.2, groups=30), lambda m: {
        "a": m.col("f").sort().over("g"), "b": m.col("i8").arg_sort(descending=True) * 2,
        "c": m.col("s").reverse(), "d": m.col("d").sort(nulls_last=True),
        "e": m.col("i8").sort_by("s", "f", descending=[True, False], maintain_order=True),
    })
