"""Grouped work against polars: ``over`` windows and ``group_by().agg()`` on keys of every type.

Every comparison runs the same steps through colbridge and polars (the oracle,
``maintain_order=True``) on generated frames: keys with nulls, NaN and ``-0.0``,
one group, one group per row, empty frames, sliced and multi-chunk inputs,
pandas, polars and pyarrow inputs, both CPU tiers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars
from tests.grouped.grouped_data import KEY_KINDS, frame

FUNCS = ["sum", "mean", "min", "max", "std", "var", "count", "null_count", "first", "last",
         "n_unique", "len"]  # fmt: skip
RTOL = 1e-9  # float sums and std/var add in another order than polars (docs/grouped.md)


def windows(m: Any, q: Any) -> Any:
    x, i, w = m.col("x"), m.col("i"), m.col("w")
    return q.with_columns(
        mean=x.mean().over("g"),
        dev=(x - x.mean()).over("g"),
        z=((x - x.mean()) / x.std()).over("g"),
        s=i.sum().over("g"),
        sw=w.sum().over("g"),
        mw=w.mean().over("g"),
        var0=x.var(ddof=0).over("g"),
        mn=i.min().over("g"),
        mx=x.max().over("g"),
        cnt=x.count().over("g"),
        nc=x.null_count().over("g"),
        n=m.len().over("g"),
        first=i.first().over("g"),
        last=x.last().over("g"),
        uniq=i.n_unique().over("g"),
        fs=x.filter(i > 0).sum().over("g"),
        ident=x.over("g"),
    )


def aggregations(m: Any, q: Any) -> Any:
    x, i, f, u, b, w = (m.col(c) for c in "xifubw")
    return q.group_by("g", maintain_order=True).agg(
        x.sum(),
        mean=x.mean(),
        sd=x.std(),
        v0=x.var(ddof=0),
        fsd=f.std(),
        mn=x.min(),
        mx=x.max(),
        imn=i.min(),
        umx=u.max(),
        bs=b.sum(),
        bmin=b.min(),
        bm=b.mean(),
        isum=i.sum(),
        wsum=w.sum(),
        wmean=w.mean(),
        cnt=x.count(),
        nc=x.null_count(),
        n=m.len(),
        first=i.first(),
        last=x.last(),
        uniq=x.n_unique(),
        ratio=x.sum() / i.sum(),
        fsum=x.filter(i > 0).sum(),
        flen=x.filter(i > 0).len(),
        ffirst=x.filter(b).first(),
        fnc=x.filter(b).null_count(),
        gfirst=m.col("g").first(),
        guniq=m.col("g").n_unique(),
        gnull=m.col("g").null_count(),
    )


@pytest.mark.parametrize("kind", KEY_KINDS)
def test_windows_every_key_type(kind: str, tier: str) -> None:
    table = frame(61, seed=hash(kind) % 1000, key_kinds=(kind,), offset=3)
    assert_same_as_polars(table, windows, rtol=RTOL)


@pytest.mark.parametrize("kind", KEY_KINDS)
def test_group_by_every_key_type(kind: str, tier: str) -> None:
    table = frame(61, seed=hash(kind) % 997, key_kinds=(kind,), offset=5, chunks=2)
    assert_same_as_polars(table, aggregations, rtol=RTOL)


@pytest.mark.parametrize("kinds", [("string", "int8"), ("float64", "bool", "date32"),
                                   ("categorical", "uint64")])  # fmt: skip
def test_several_keys(kinds: tuple[str, ...], tier: str) -> None:
    table = frame(77, seed=7, key_kinds=kinds, groups=3)
    names = list("ghk"[: len(kinds)])

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        over = q.with_columns(s=x.sum().over(*names), n=m.len().over(*names))
        return over.group_by(*names, maintain_order=True).agg(s=x.sum(), n=m.len(),
                                                              z=m.col("s").first())  # fmt: skip

    assert_same_as_polars(table, steps, rtol=RTOL)


@pytest.mark.parametrize(
    ("n", "groups"),
    [(0, 4), (1, 4), (9, 1), (40, 1000), (33, 2)],
    ids=["empty", "one-row", "one-group", "group-per-row", "two-groups"],
)
def test_shapes(n: int, groups: int, tier: str) -> None:
    table = frame(n, seed=n + groups, key_kinds=("int64",), groups=groups, key_nulls=0.0)
    assert_same_as_polars(table, windows, rtol=RTOL)
    assert_same_as_polars(table, aggregations, rtol=RTOL)


def test_all_null_keys_and_values(tier: str) -> None:
    table = frame(20, seed=3, key_kinds=("string",), key_nulls=1.0, value_nulls=1.0)
    assert_same_as_polars(table, windows, rtol=RTOL)
    assert_same_as_polars(table, aggregations, rtol=RTOL)


def test_group_results_feed_later_steps(tier: str) -> None:
    table = frame(50, seed=11, key_kinds=("string", "int8"))

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        grouped = q.filter(m.col("i") > -20).group_by("g", "h", maintain_order=True)
        out = grouped.agg(s=x.sum(), n=m.len(), m=x.mean())
        out = out.with_columns(share=m.col("s") / m.col("s").sum(), big=m.col("n") > 2)
        return out.filter(m.col("n") > 1).select("g", "h", "share", "big")

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_windows_after_filters_and_steps(tier: str) -> None:
    table = frame(70, seed=12, key_kinds=("categorical",))

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        q = q.with_columns(y=x * 2 + m.col("i")).filter(m.col("i") > -30)
        q = q.with_columns(k=(m.col("y") - m.col("y").mean().over("g")).abs())
        return q.filter(m.col("k") < m.col("k").max().over("g"))

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_expression_keys(tier: str) -> None:
    table = frame(45, seed=13, key_kinds=("int64",))

    def steps(m: Any, q: Any) -> Any:
        i = m.col("i")
        q = q.with_columns(s=m.col("x").sum().over(i % 3), c=m.len().over(i > 0, "g"))
        return q.group_by((i % 4).alias("r"), maintain_order=True).agg(s=m.col("x").sum())

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_whole_column_first_last_len_n_unique(tier: str) -> None:
    for n in (0, 1, 23):
        table = frame(n, seed=14 + n, key_kinds=("string",))

        def steps(m: Any, q: Any) -> Any:
            x = m.col("x")
            return q.select(f=x.first(), la=x.last(), u=x.n_unique(), n=m.len(), ln=x.len(),
                            gu=m.col("g").n_unique(), gn=m.col("g").null_count(),
                            fs=x.filter(m.col("i") > 0).sum())  # fmt: skip

        assert_same_as_polars(table, steps, rtol=RTOL)


def test_nested_windows_and_reductions(tier: str) -> None:
    table = frame(50, seed=15, key_kinds=("int8", "bool"))

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.with_columns(
            a=((x - x.mean()).abs().mean()).over("g"),
            b=(x - x.mean().over("g")).abs().sum(),
            c=x.mean().over("g").mean().over("h"),
            d=(x - x.mean()).over("g") - x.mean(),
        )

    assert_same_as_polars(table, steps, rtol=RTOL)


def test_large_frames_use_the_parallel_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    # over PARALLEL_MIN_ROWS and NUMPY_MAX_ROWS: chunked numba tables, numba factorizer
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "compiled")
    for groups in (10, 3000, 400_000):
        table = frame(250_000, seed=groups, key_kinds=("int64",), groups=groups, offset=3)

        def steps(m: Any, q: Any) -> Any:
            x = m.col("x")
            return q.with_columns(z=((x - x.mean()) / x.std()).over("g"),
                                  n=m.len().over("g"), mn=m.col("i").min().over("g"))  # fmt: skip

        assert_same_as_polars(table, steps, rtol=1e-8, kinds=("pyarrow",))
        assert_same_as_polars(table, aggregations, rtol=1e-8, kinds=("polars",))


def _keys(kind: str, n: int, rng: np.random.Generator) -> pa.Array:
    """Keys over ``n`` rows that stop (or not) the factorizer's pass before the last row."""
    if kind == "every-value-early":
        return pa.array(rng.integers(-3, 40, n))
    if kind == "one-value-missing":  # 0..39 but 17: all that can occur never do
        values = rng.integers(0, 39, n)
        return pa.array(np.where(values == 17, 39, values))
    if kind == "last-value-on-the-last-row":
        values = rng.integers(0, 40, n)
        values = np.where(values == 9, 8, values)
        values[-1] = 9
        return pa.array(values)
    if kind == "nulls":
        return pa.array(rng.integers(0, 6, n).astype(np.int8), mask=rng.random(n) < 0.05)
    if kind == "no-null-but-the-last-row":
        return pa.array(rng.integers(0, 6, n), mask=np.arange(n) == n - 1)
    labels = pa.array(["a", "b", "c", "d", "unused"])
    indices = rng.integers(0, 4, n).astype(np.int32)
    if kind == "dictionary":
        return pa.DictionaryArray.from_arrays(pa.array(indices), labels)
    assert kind == "dictionary-with-nulls"
    return pa.DictionaryArray.from_arrays(pa.array(indices, mask=rng.random(n) < 0.01), labels)


@pytest.mark.parametrize("kind", ["every-value-early", "one-value-missing",
                                  "last-value-on-the-last-row", "nulls",
                                  "no-null-but-the-last-row", "dictionary",
                                  "dictionary-with-nulls"])  # fmt: skip
def test_group_ids_number_groups_in_order_of_first_appearance(kind: str) -> None:
    # over NUMPY_MAX_ROWS rows: the compiled factorizer, whose first pass stops once every
    # code that can occur has been seen; pandas' factorize numbers groups the same way
    import pandas as pd

    from colbridge.backends.groups import NUMPY_MAX_ROWS, factorize

    n = NUMPY_MAX_ROWS + 5_000
    keys = _keys(kind, n, np.random.default_rng(len(kind)))
    got = factorize([keys], n)
    want, uniques = pd.factorize(keys.to_pandas(), use_na_sentinel=False)
    assert got.ids is not None
    np.testing.assert_array_equal(got.ids, want)
    assert got.count == len(uniques)
    firsts = np.array([np.flatnonzero(want == g)[0] for g in range(len(uniques))])
    np.testing.assert_array_equal(got.first_rows, firsts)


def test_pandas_numpy_floats_nan_is_null(tier: str) -> None:
    import pandas as pd
    import polars as pl

    pdf = pd.DataFrame(
        {"g": [1.0, np.nan, 1.0, 2.0, np.nan], "x": [1.0, 2.0, np.nan, 4.0, 5.0]}
    )
    got = pdf.gpu.group_by("g").agg(s=cb.col("x").sum(), n=cb.len(), c=cb.col("x").count())
    expected = (
        pl.from_pandas(pdf).group_by("g", maintain_order=True)
        .agg(s=pl.col("x").sum(), n=pl.len(), c=pl.col("x").count())
    )  # fmt: skip
    result = pl.from_pandas(got.compute(device="cpu"))
    assert result.rows() == expected.rows()
    over = pdf.gpu.with_columns(m=cb.col("x").mean().over("g")).compute(device="cpu")
    want = pl.from_pandas(pdf).with_columns(m=pl.col("x").mean().over("g"))["m"]
    assert over["m"].tolist() == [None if v is None else v for v in want.to_list()]


def test_pandas_categorical_key() -> None:
    import pandas as pd

    pdf = pd.DataFrame({"g": pd.Categorical(["b", "a", "b", None, "a"]), "x": [1, 2, 3, 4, 5]})
    out = pdf.gpu.group_by("g").agg(s=cb.col("x").sum()).compute(device="cpu")
    assert [None if pd.isna(v) else v for v in out["g"]] == ["b", "a", None]
    assert out["s"].tolist() == [4, 7, 4]


def test_dictionary_with_duplicate_labels_groups_by_label() -> None:
    # two dictionary entries with the same label are one group (categories by label)
    labels = pa.array(["a", "b", "a", None])
    keys = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 3, None, 2]), labels)
    table = pa.table({"g": keys, "x": [1, 2, 3, 4, 5, 6]})
    out = cb.lazy(table).group_by("g").agg(s=cb.col("x").sum(), n=cb.len()).compute()
    assert out.column("g").to_pylist() == ["a", "b", None]
    assert out.column("s").to_pylist() == [10, 2, 9]
    assert out.column("n").to_pylist() == [3, 1, 2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    kind=st.sampled_from(KEY_KINDS),
    func=st.sampled_from(FUNCS),
    column=st.sampled_from(list("xfiubw")),
)
def test_property_agg_and_window_match_polars(
    data: st.DataObject, kind: str, func: str, column: str
) -> None:
    n = data.draw(st.sampled_from([0, 1, 2, 7, 9, 33, 70]))
    groups = data.draw(st.sampled_from([1, 2, 5, 100]))
    table = frame(n, seed=data.draw(st.integers(0, 2**16)), key_kinds=(kind,), groups=groups,
                  key_nulls=data.draw(st.sampled_from([0.0, 0.3, 1.0])),
                  value_nulls=data.draw(st.sampled_from([0.0, 0.3, 1.0])),
                  offset=data.draw(st.sampled_from([0, 3, 13])),
                  chunks=data.draw(st.sampled_from([1, 2])))  # fmt: skip
    if func in ("sum", "mean", "std", "var") and column == "b" and func != "sum":
        column = "x"

    def reduce(m: Any) -> Any:
        return getattr(m.col(column), func)()

    # float32 values are summed in float64 here, in float32 by polars: float32's precision
    rtol = 1e-5 if column == "f" else RTOL
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        r=reduce(m)), rtol=rtol)  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.with_columns(r=reduce(m).over("g")),
                          rtol=rtol)  # fmt: skip


# -- the string language ---------------------------------------------------------------------


def test_eval_over_function_and_method_forms() -> None:
    import polars as pl

    df = pl.DataFrame({"carrier": ["a", "b", "a", None], "delay": [1.0, 5.0, 3.0, 2.0]})
    got = df.gpu.eval("m = over(mean(delay), carrier); d = delay - delay.mean().over(carrier)")
    want = df.with_columns(m=pl.col("delay").mean().over("carrier"),
                           d=pl.col("delay") - pl.col("delay").mean().over("carrier"))
    assert got.rows() == want.rows()
    z = df.gpu.eval(
        "z = ((delay - mean(delay)) / std(delay)).over(carrier); n = len().over(carrier)"
    )
    assert z["n"].to_list() == [2, 1, 2, 1]


# -- errors -----------------------------------------------------------------------------------


def test_errors_name_the_problem() -> None:
    t = pa.table({"g": ["a", "b"], "x": [1.0, 2.0], "l": pa.array([[1], [2]])})
    x = cb.col("x")
    with pytest.raises(cb.SchemaError, match="outside a reduction"):
        cb.lazy(t).group_by("g").agg(y=x).compute()
    with pytest.raises(cb.SchemaError, match=r"filter\(\.\.\.\)` inside an expression"):
        cb.lazy(t).with_columns(y=x.filter(x > 1)).compute()
    with pytest.raises(cb.SchemaError, match="at least one key"):
        x.mean().over()
    with pytest.raises(cb.UnsupportedTypeError, match="cannot be a grouping key"):
        cb.lazy(t).with_columns(y=x.mean().over("l")).compute()
    with pytest.raises(cb.UnsupportedTypeError, match="only be an output of `group_by"):
        cb.lazy(t).with_columns(y=cb.col("l").first().over("x")).compute()
    with pytest.raises(cb.UnsupportedTypeError, match="column `g` has type string"):
        cb.lazy(t).with_columns(y=cb.col("g").sum().over("x")).compute()
    with pytest.raises(cb.ColumnNotFoundError, match="`nope` not found"):
        cb.lazy(t).group_by("nope").agg(x.sum()).compute()
    with pytest.raises(cb.DuplicateColumnError, match="more than once"):
        cb.lazy(t).group_by("g").agg(g=x.sum()).compute()
    with pytest.raises(cb.SchemaError, match="predicate is float64"):
        cb.lazy(t).group_by("g").agg(x.filter(x).sum()).compute()


# -- plan, passes and the ids cache ----------------------------------------------------------


def test_zscore_over_groups_is_one_elementwise_kernel() -> None:
    t = frame(100, seed=1, key_kinds=("string",))
    x = cb.col("x")
    q = cb.lazy(t).with_columns(z=(x - x.mean().over("g")) / x.std().over("g"))
    text = q.explain(device="cpu")
    assert text.count("group ids pass") == 1
    assert text.count("elementwise pass") == 1
    # std's square root and division run once per group, not once per row
    assert text.count("per-group pass") == 1
    q.compute(device="cpu")
    assert q.last_report is not None
    kernels = q.last_report.stats.kernels
    over_rows = [k for k in kernels if k.startswith("elementwise[") and "__each" not in k]
    assert over_rows == ["elementwise[z] over 2 input(s) (compiled)"]  # x and the group ids
    assert sum(k.startswith("group ids") for k in kernels) == 1


def test_group_ids_are_cached_on_the_handle_while_the_columns_are_the_same() -> None:
    import polars as pl
    from polars.testing import assert_frame_equal

    t = frame(100, seed=2, key_kinds=("string",))
    q = cb.lazy(t).with_columns(s=cb.col("x").sum().over("g"))
    first = q.compute(device="cpu")
    assert q.last_report is not None
    assert not any("(cached)" in k for k in q.last_report.stats.kernels)
    second = q.compute(device="cpu")
    assert any("(cached)" in k for k in q.last_report.stats.kernels)
    assert_frame_equal(pl.from_arrow(first), pl.from_arrow(second))
    # another frame (other buffers) is factorized again
    other = cb.lazy(frame(100, seed=3, key_kinds=("string",))).with_columns(
        s=cb.col("x").sum().over("g"))  # fmt: skip
    other.compute(device="cpu")
    assert other.last_report is not None
    assert not any("(cached)" in k for k in other.last_report.stats.kernels)


def test_group_by_result_kind_follows_the_input() -> None:
    import pandas as pd
    import polars as pl

    t = frame(30, seed=4, key_kinds=("string",))
    for source, kind in ((t, pa.Table), (pl.from_arrow(t), pl.DataFrame),
                         (t.to_pandas(), pd.DataFrame)):  # fmt: skip
        out = cb.lazy(source).group_by("g").agg(s=cb.col("i").sum()).compute(device="cpu")
        assert isinstance(out, kind)


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_explain_shows_every_grouped_kernel_source(target: str) -> None:
    t = frame(20, seed=5, key_kinds=("string",))
    x = cb.col("x")
    over = cb.lazy(t).with_columns(z=((x - x.mean()) / x.std()).over("g"))
    titles = [line.strip() for line in over.explain(source=True, target=target).splitlines()
              if "kernel source" in line]  # fmt: skip
    assert titles == [f"--- {kind} kernel source ({target}) ---" for kind in (
        "grouped reduction", "grouped reduction", "per-group", "elementwise")]  # fmt: skip
    grouped = cb.lazy(t).group_by("g").agg(s=x.sum(), f=cb.col("g").first())
    text = grouped.explain(source=True, target=target)
    assert f"over-the-groups kernel source ({target})" in text


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.uint32, np.uint64])
def test_key_bounds_found_at_every_place_of_a_thread_s_range(dtype: Any) -> None:
    # a null-free key: each thread reads its range of rows in a loop the compiler
    # vectorises (several running extremes, then the rows after the last whole
    # vector); an extreme anywhere must be found
    from colbridge.backends._group_kernels import bounds

    no_nulls = np.zeros(0, dtype=np.bool_)

    rng = np.random.default_rng(11)
    for n in range(1, 34):
        base = rng.integers(100, 200, n).astype(dtype)
        for at in range(n):
            values = base.copy()
            values[at] = 7
            values[(at * 5 + 3) % n] = 900 if n > 1 else 7
            for parts in (1, 2, 3, 8):
                lo, hi, found = bounds(values, no_nulls, parts)
                assert (lo, hi, found) == (values.min(), values.max(), True), (n, at, parts)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64])
@pytest.mark.parametrize("nulls", ["none", "some", "first-half", "all"])
def test_key_bounds_read_only_the_valid_values(dtype: Any, nulls: str) -> None:
    # over NUMPY_MAX_ROWS rows the key's range is found on every core: the slots under
    # nulls hold the type's extremes here, which must not widen (or shift) the codes
    import pandas as pd

    from colbridge.backends.groups import NUMPY_MAX_ROWS, factorize

    n = NUMPY_MAX_ROWS + 3
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    values = rng.integers(max(info.min, -50), 50, n).astype(dtype)
    if dtype == np.uint64:
        values = values + np.uint64(2**63)  # beyond int64
    null = {"none": np.zeros(n, dtype=bool), "some": rng.random(n) < 0.1,
            "first-half": np.arange(n) < n // 2, "all": np.ones(n, dtype=bool)}[nulls]
    values = np.where(null, np.where(rng.random(n) < 0.5, info.min, info.max), values)
    values = values.astype(dtype)
    bitmap = pa.py_buffer(np.packbits(~null, bitorder="little"))
    keys = pa.Array.from_buffers(pa.from_numpy_dtype(dtype), n,
                                 [bitmap if null.any() else None, pa.py_buffer(values)])
    got = factorize([keys], n)
    want, uniques = pd.factorize(keys.to_pandas(), use_na_sentinel=False)
    assert got.ids is not None
    np.testing.assert_array_equal(got.ids, want)
    assert got.count == len(uniques)
