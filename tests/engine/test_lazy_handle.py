"""The lazy handle and accessors: laziness, reuse, result kinds, no aliasing, caches, async."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb


def test_import_is_light() -> None:
    # no dataframe or GPU library, and none of the engine (planner, code generators,
    # backends, runtime): a handle loads those on its first compute
    code = (
        "import sys, colbridge\n"
        "engine = ('colbridge.runtime', 'colbridge.backends', 'colbridge.codegen',\n"
        "          'colbridge.plan.planner', 'colbridge.columns.matrix')\n"
        "print(sorted(m for m in sys.modules if m in ('polars', 'pandas', 'cupy', 'numba')\n"
        "             or m.startswith(engine)))\n"
        "import pyarrow as pa\n"
        "t = colbridge.lazy(pa.table({'a': [1.0]})).with_columns(b=colbridge.col('a') * 2)\n"
        "print(t.compute().column('b').to_pylist(), 'colbridge.runtime.execute' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "[2.0] True"]


def test_accessor_registers_when_polars_is_imported_later() -> None:
    code = (
        "import colbridge as cb\n"
        "import polars as pl\n"
        "df = pl.DataFrame({'a': [1.0, 4.0]})\n"
        "print(df.gpu.with_columns(b=cb.col('a').sqrt()).compute()['b'].to_list())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[1.0, 2.0]"


def test_nothing_runs_before_compute() -> None:
    df = pl.DataFrame({"a": [1, 2, 3]})
    before = cb.cache_info()
    q = df.gpu.with_columns(b=(cb.col("a") * 100).cast("int8")).filter(cb.col("b") > 0)
    # a strict-cast failure would raise if anything ran; building the plan runs nothing
    assert cb.cache_info() == before
    with pytest.raises(cb.InvalidOperationError):
        q.compute()


def test_handles_are_immutable_and_reusable() -> None:
    df = pl.DataFrame({"a": [1.0, 2.0, 3.0]})
    base = df.gpu.with_columns(b=cb.col("a") * 2)
    left = base.filter(cb.col("b") > 2)
    right = base.select("b")
    assert base.compute().columns == ["a", "b"]
    assert left.compute()["b"].to_list() == [4.0, 6.0]
    assert right.compute().columns == ["b"]
    assert base.compute()["b"].to_list() == [2.0, 4.0, 6.0]


def test_result_kinds_and_pandas_index() -> None:
    pdf = pd.DataFrame({"a": [1.0, 2.0, 3.0]}, index=[10, 20, 30])
    out = pdf.gpu.with_columns(b=cb.col("a") + 1).filter(cb.col("a") > 1).compute()
    assert isinstance(out, pd.DataFrame)
    assert list(out.index) == [20, 30]
    assert out["a"].dtype == np.float64  # untouched column keeps its dtype
    assert isinstance(out["b"].dtype, pd.ArrowDtype)
    as_numpy = pdf.gpu.with_columns(b=cb.col("a") + 1).compute(numpy_output=True)
    assert as_numpy["b"].dtype == np.float64
    table = pa.table({"a": [1, 2]})
    assert isinstance(cb.lazy(table).with_columns(b=cb.col("a")).compute(), pa.Table)
    series = pl.Series("x", [1.0, 9.0])
    assert series.gpu.select(cb.col("x").sqrt()).compute().to_list() == [1.0, 3.0]
    ps = pd.Series([4.0, 16.0], name="x")
    assert ps.gpu.select(cb.col("x").sqrt()).compute().tolist() == [2.0, 4.0]


def test_untouched_columns_are_shared_and_results_are_fresh() -> None:
    df = pl.DataFrame({"a": np.arange(1000, dtype=np.float64), "b": np.ones(1000)})
    out = df.gpu.with_columns(c=cb.col("a") + cb.col("b")).compute()
    a_in = df["a"].to_arrow().buffers()[1].address
    assert out["a"].to_arrow().buffers()[1].address == a_in
    c_buf = out["c"].to_arrow().buffers()[1]
    inputs = [df[n].to_arrow().buffers()[1] for n in ("a", "b")]
    for buf in inputs:
        assert not (buf.address <= c_buf.address < buf.address + buf.size)
    # a result replacing an input column is a new buffer too
    replaced = df.gpu.with_columns(a=cb.col("a") * 1).compute()
    assert replaced["a"].to_arrow().buffers()[1].address != a_in
    assert df["a"][5] == 5.0


@pytest.mark.parametrize("kind", ["pyarrow", "polars", "pandas"])
def test_wide_frames_keep_their_columns_in_place_whatever_the_steps(kind: str) -> None:
    # 300 columns, one of each appended, replaced, moved and left out, as polars orders
    # them; untouched columns are the input's buffers (a result is assembled by name
    # lookups into the frame, which must hold for every column of a wide frame)
    rng = np.random.default_rng(7)
    data = {f"w{i}": rng.normal(size=40) for i in range(300)}
    base = pl.DataFrame(data)
    frame = {"pyarrow": base.to_arrow(), "polars": base, "pandas": base.to_pandas()}[kind]
    steps = [
        (lambda f, ns: f.with_columns(z=ns.col("w7") * 2)),  # appended
        (lambda f, ns: f.with_columns(w150=ns.col("w150") + 1)),  # replaced in place
        (lambda f, ns: f.select("w299", "w0", y=ns.col("w3") - ns.col("w4"))),  # reordered
    ]
    for step in steps:
        got = step(cb.lazy(frame), cb).compute()
        want = step(base, pl)
        as_polars = pl.from_pandas(got) if kind == "pandas" else pl.DataFrame(got)
        assert as_polars.equals(want), (kind, as_polars.columns[:5], want.columns[:5])
        if kind == "pandas":
            continue
        for name in ("w0", "w299"):
            if name in want.columns:
                src = base[name].to_arrow().buffers()[1].address
                assert pl.DataFrame(got)[name].to_arrow().buffers()[1].address == src


def test_kernel_cache_counts_compiles() -> None:
    cb.clear_cache()
    df1 = pl.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    df2 = pl.DataFrame({"a": [5.0, 6.0, 7.0], "b": [1.0, 1.0, 1.0]})
    expr = (cb.col("a") * cb.col("b") + 0.25).sqrt()
    df1.gpu.with_columns(z=expr).compute()
    assert cb.cache_info().compiles == 1
    df1.gpu.with_columns(z=expr).compute()  # the same plan again
    df2.gpu.with_columns(z=expr).compute()  # different data, same types
    info = cb.cache_info()
    assert (info.compiles, info.hits) == (1, 2)
    df1.with_columns(pl.col("a").cast(pl.Float32)).gpu.with_columns(z=expr).compute()
    assert cb.cache_info().compiles == 2  # other input types: another kernel
    with_nulls = pl.DataFrame({"a": [1.0, None], "b": [3.0, 4.0]})
    with_nulls.gpu.with_columns(z=expr).compute()
    assert cb.cache_info().compiles == 3  # the variant that reads validity


def test_explain_lists_passes_copies_and_source() -> None:
    chunked = pl.concat([pl.DataFrame({"a": [1.0]}), pl.DataFrame({"a": [2.0]})], rechunk=False)
    q = chunked.gpu.with_columns(z=(cb.col("a") - cb.col("a").mean()) / cb.col("a").std())
    text = q.explain()
    assert "2 pass(es) over the rows" in text
    assert "reduction pass 1: col(\"a\").mean(), col(\"a\").std()" in text
    assert "column `a`: 2 chunks combined into one (a copy)" in text
    source = q.explain(source=True)
    assert "def reduce(" in source
    assert "def elementwise(" in source


def test_compute_async_and_threads() -> None:
    df = pl.DataFrame({"a": np.arange(100, dtype=np.float64)})
    q = df.gpu.with_columns(b=cb.col("a") * 3)
    expected = q.compute()

    async def main() -> list[pl.DataFrame]:
        futures = [asyncio.wrap_future(q.compute_async()) for _ in range(8)]
        return await asyncio.gather(*futures)

    for result in asyncio.run(main()):
        assert result.equals(expected)


def test_device_fallback_policy() -> None:
    df = pl.DataFrame({"a": [1.0]})
    q = df.gpu.with_columns(b=cb.col("a") + 1)
    with pytest.raises(cb.DeviceError, match="no usable GPU"):
        q.compute(device="cuda", fallback="raise")
    with pytest.warns(cb.DeviceFallbackWarning, match="fell back to cpu"):
        out = q.compute(device="cuda:0", fallback="cpu")
    assert out["b"].to_list() == [2.0]
    assert "fell back to cpu" in q.explain()


def test_pandas_numpy_floats_read_nan_as_missing_like_polars_from_pandas() -> None:
    pdf = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "b": [1, 2, 3, 4]})
    data_address = pdf["a"].to_numpy().ctypes.data
    q = pdf.gpu.with_columns(
        m=cb.col("a").mean(), f=cb.col("a").fill_null(0.0), n=cb.col("a").is_null()
    )
    got = pl.from_pandas(q.compute())
    src = pl.from_pandas(pdf)  # nan_to_null=True, polars' reading of pandas frames
    want = src.with_columns(
        m=pl.col("a").mean(), f=pl.col("a").fill_null(0.0), n=pl.col("a").is_null()
    )
    assert got.equals(want)
    assert pdf["a"].to_numpy().ctypes.data == data_address  # the input is untouched
    view = cb.lazy(pdf).compute()  # no steps: the frame itself comes back
    assert np.isnan(view["a"].iloc[1])


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.none()),
        max_size=40,
    ),
    offset=st.integers(0, 3),
)
def test_pandas_numpy_floats_match_polars_from_pandas(
    values: list[float | None], offset: int
) -> None:
    pdf = pd.DataFrame({"a": np.array([np.nan if v is None else v for v in values], np.float64)})
    pdf = pdf.iloc[offset:]  # a sliced frame: the column starts inside its buffer
    q = pdf.gpu.with_columns(
        f=cb.col("a").fill_null(-1.0), s=cb.col("a").sum(), c=cb.col("a").count(),
        z=(cb.col("a") - cb.col("a").mean()).abs(), nn=cb.col("a").is_null(),
    ).filter(cb.col("a").is_not_null() | (cb.col("c") > 100))  # fmt: skip
    want = (
        pl.from_pandas(pdf)
        .with_columns(
            f=pl.col("a").fill_null(-1.0), s=pl.col("a").sum(), c=pl.col("a").count(),
            z=(pl.col("a") - pl.col("a").mean()).abs(), nn=pl.col("a").is_null(),
        )
        .filter(pl.col("a").is_not_null() | (pl.col("c") > 100))
    )  # fmt: skip
    got = pl.from_pandas(q.compute().reset_index(drop=True))
    from polars.testing import assert_frame_equal

    assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_string_statements_run_in_order() -> None:
    table = pa.table({"a": [1.0, 4.0]})
    out = cb.lazy(table).eval("r = sqrt(a)\ns = r * 10; a = a + s").compute()
    assert out.column_names == ["a", "r", "s"]
    assert out.column("a").to_pylist() == [11.0, 24.0]


def test_a_new_handle_with_the_same_steps_reuses_the_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = importlib.import_module("colbridge.runtime.execute")  # where plans are prepared

    calls: list[int] = []
    real = runtime.plan_segments

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime, "plan_segments", counting)
    df = pl.DataFrame({"a": [1.0, 2.0], "b_unique_to_this_test": [3.0, 4.0]})
    expr = cb.col("a") * 3.25 + cb.col("b_unique_to_this_test")
    first = df.gpu.with_columns(z=expr).compute()
    second = df.gpu.with_columns(z=cb.col("a") * 3.25 + cb.col("b_unique_to_this_test")).compute()
    assert first["z"].to_list() == second["z"].to_list() == [6.25, 10.5]
    assert len(calls) == 1  # the second handle found the untyped plan in the shared cache
    df.gpu.with_columns(z=expr * 2).compute()
    assert len(calls) == 2  # other steps: planned again


def test_ir_nodes_hash_again_after_pickling_into_another_process() -> None:
    import pickle

    node = ((cb.col("a") * 2 + cb.lit(3.5)).sqrt() > cb.col("b")).node
    hash(node)  # the hash is now cached on the node
    code = (
        "import pickle, sys, colbridge as cb\n"
        "node = pickle.loads(sys.stdin.buffer.read())\n"
        "fresh = ((cb.col('a') * 2 + cb.lit(3.5)).sqrt() > cb.col('b')).node\n"
        "print(node == fresh, hash(node) == hash(fresh), {fresh: 'found'}.get(node))\n"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=pickle.dumps(node),
            capture_output=True,
            check=True,
            env={"PYTHONHASHSEED": seed},
        )
        assert out.stdout.decode().split() == ["True", "True", "found"]


def test_plans_differing_only_in_numbers_share_one_compiled_kernel() -> None:
    df = pl.DataFrame({"x": [1.0, None, 4.0], "i": pl.Series([1, 2, 3], dtype=pl.Int16)})

    def run(scale: float, offset: int, bound: float) -> pl.DataFrame:
        x, i = cb.col("x"), cb.col("i")
        q = df.gpu.with_columns(z=x * scale + offset, w=i * offset).filter(x < bound)
        return q.compute(device="cpu")

    def want(scale: float, offset: int, bound: float) -> pl.DataFrame:
        x, i = pl.col("x"), pl.col("i")
        return df.with_columns(z=x * scale + offset, w=i * offset).filter(x < bound)

    run(1.5, 7, 3.0)  # compiles (or loads) this plan's kernels
    before = cb.cache_info().compiles
    for scale, offset, bound in [(2.5, 3, 10.0), (-0.125, -40, 2.0), (float("nan"), 0, 5.0)]:
        assert run(scale, offset, bound).equals(want(scale, offset, bound))
    assert cb.cache_info().compiles == before  # new numbers, same kernels
    # equal numbers in two places are one argument; different ones are two: another kernel
    df.gpu.with_columns(z=cb.col("x") * 2.0 + 2.0).compute(device="cpu")
    shared = cb.cache_info().compiles
    got = df.gpu.with_columns(z=cb.col("x") * 2.0 + 3.0).compute(device="cpu")
    assert got["z"].to_list() == [5.0, None, 11.0]
    assert cb.cache_info().compiles == shared + 1


@pytest.mark.parametrize("above", [0, 100])
def test_row_count_after_a_filter_alone(above: int) -> None:
    """`filter(...).select(cb.len())`: a segment with no output column still has its rows."""
    t = pa.table({"b": np.arange(-5, 5)})
    got = cb.lazy(t).filter(cb.col("b") > above).select(n=cb.len()).compute()
    want = pl.from_arrow(t).filter(pl.col("b") > above).select(n=pl.len())
    assert got.to_pylist() == want.to_dicts()


def test_filter_takes_a_list_of_predicates_and_constraints_as_polars() -> None:
    import warnings

    df = pl.DataFrame({"a": [1, 2, 3, 1], "c": [True, False, None, True]})
    cases = [
        (lambda m: ([m.col("c"), m.col("a") > 0],), {}),
        (lambda m: (), {"c": True, "a": 1}),
        (lambda m: (m.col("a") > 1,), {"c": None}),  # `== None` is null: no row kept
        (lambda m: ((m.col("a") > 0, m.col("a") < 3), m.col("c")), {}),
    ]
    for args, kwargs in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # polars: comparing with None
            want = df.filter(*args(pl), **kwargs)
        assert_frame_equal(df.gpu.filter(*args(cb), **kwargs).compute(), want)
    with pytest.raises(cb.SchemaError, match="a mask of rows"):
        df.gpu.filter([True, False, True, True])
