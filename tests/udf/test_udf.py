"""User functions (`cb.udf`): traced ones against inline expressions and polars, compiled ones
against the same function evaluated row by row in Python on NumPy scalars.

Integer overflow inside a compiled function follows numba (and C): int64 arithmetic wraps
modulo 2**64; the oracle computes with NumPy int64 scalars, which wrap the same way.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import assert_arrays_match
from colbridge.testing.data import make_column, tables

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
FLOATS = (pa.float64(), pa.float32())
INTS = (pa.int64(), pa.int32(), pa.int16(), pa.uint8())


# -- the functions under test ------------------------------------------------------------------
@cb.udf
def blend(x: Any, y: Any) -> Any:
    """Traced: operators, a method and `cb.when`."""
    return cb.when(x > y).then((x - y).abs().sqrt()).otherwise(x * 0.5 + y)


def blend_inline(x: Any, y: Any) -> Any:
    return cb.when(x > y).then((x - y).abs().sqrt()).otherwise(x * 0.5 + y)


def blend_polars(x: Any, y: Any) -> Any:
    return pl.when(x > y).then((x - y).abs().sqrt()).otherwise(x * 0.5 + y)


def _step(x: float, y: float) -> float:
    # Python control flow and `math`: cannot be traced, compiled by numba instead
    if x > y:
        return math.sqrt(abs(x - y))
    return x * 0.5 + y


step = cb.udf(_step)


def _mix(a: int, b: int) -> int:
    total = 0
    for k in range(3):  # a loop over constants would trace (unrolled): compiled on purpose
        total += a * (k + 1) - b
    return total


mix = cb.udf(_mix, compiled=True)


def _rows(
    fn: Callable[..., Any], table: pa.Table, names: list[str], cast: Any, result: Any = None
) -> list[Any]:
    """The oracle: ``fn`` called row by row on NumPy scalars; null where an argument is null.

    Arguments are converted by ``cast``, the result by ``result`` (default: ``cast``).
    """
    result = result or cast
    columns = [table.column(n).to_pylist() for n in names]
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # int64 overflow wraps, as in numba
        for row in zip(*columns, strict=True):
            if any(v is None for v in row):
                out.append(None)
            else:
                out.append(result(fn(*(cast(v) for v in row))).item())
    return out


# -- traced ------------------------------------------------------------------------------------
def test_tracing_gives_the_inline_expression() -> None:
    traced = blend("a", cb.col("b") + 1)
    inline = blend_inline(cb.col("a"), cb.col("b") + 1)
    assert repr(traced) == repr(inline)
    assert not blend.is_compiled
    assert blend(2.0, "b").node == blend_inline(cb.lit(2.0), cb.col("b")).node


@SETTINGS
@given(table=tables([pa.float64(), pa.float64()], ["a", "b"]))
def test_traced_equals_inline_and_polars(table: pa.Table) -> None:
    got = cb.lazy(table).with_columns(z=blend("a", "b")).compute(device="cpu")
    inline = cb.lazy(table).with_columns(z=blend_inline(cb.col("a"), cb.col("b"))).compute()
    want = pl.from_arrow(table).with_columns(z=blend_polars(pl.col("a"), pl.col("b")))
    assert_arrays_match(got.column("z"), inline.column("z"), what="traced vs inline")
    assert_arrays_match(got.column("z"), want.to_arrow().column("z"), what="traced vs polars")


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS], ids=str)
def test_traced_on_every_numeric_dtype(dtype: pa.DataType) -> None:
    rng = np.random.default_rng(3)

    @cb.udf
    def poly(x: Any) -> Any:
        return x * 3 - 1

    table = pa.table({"a": make_column(rng, dtype, 53, True)}).slice(5, 41)
    got = cb.lazy(table).with_columns(z=poly("a")).compute()
    want = pl.from_arrow(table).with_columns(z=pl.col("a") * 3 - 1).to_arrow()
    assert_arrays_match(got.column("z"), want.column("z"), what=f"poly on {dtype}")


def test_traced_returning_a_number_or_a_column() -> None:
    table = pa.table({"a": [1.0, None]})
    const = cb.udf(lambda x: 7)
    same = cb.udf(lambda x: x)
    out = cb.lazy(table).with_columns(k=const("a"), s=same("a")).compute()
    assert out.column("k").to_pylist() == [7, 7]
    assert out.column("s").to_pylist() == [1.0, None]


# -- compiled ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_compiled_equals_python_row_by_row(
    dtype: pa.DataType, tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    rng = np.random.default_rng(11)
    table = pa.table({"a": make_column(rng, dtype, 300, True),
                      "b": make_column(rng, dtype, 300, True)}).slice(13, 250)  # fmt: skip
    table = pa.concat_tables([table.slice(0, 100), table.slice(100)])  # two chunks
    out = cb.lazy(table).with_columns(z=step("a", "b")).compute()
    assert step.is_compiled
    # numba computes in float64 (float32 arguments widen, as in Python): the result is float64
    assert out.column("z").type == pa.float64()
    if dtype == pa.float64():
        want = _rows(_step, table, ["a", "b"], np.float64)  # plain Python on the values
    else:
        # numba keeps float32 math in float32 (`math.sqrt` of a float32 is a float32),
        # which Python cannot: the oracle calls the function compiled alone, row by row
        import numba

        alone = numba.njit(_step)
        want = _rows(alone, table, ["a", "b"], np.float32, np.float64)
    assert_arrays_match(out.column("z"), pa.array(want, pa.float64()), what="step")


@pytest.mark.parametrize("dtype", [pa.int64(), pa.int32(), pa.uint8()], ids=str)
@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_compiled_integers_wrap_like_numba(
    dtype: pa.DataType, tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    rng = np.random.default_rng(5)
    table = pa.table({"a": make_column(rng, dtype, 200, True),
                      "b": make_column(rng, pa.int64(), 200, True)}).slice(3)  # fmt: skip
    out = cb.lazy(table).with_columns(z=mix("a", "b")).compute()
    assert out.column("z").type == pa.int64()  # numba's inference: int64 arithmetic
    want = _rows(_mix, table, ["a", "b"], np.int64)
    assert out.column("z").to_pylist() == want


@SETTINGS
@given(table=tables([pa.float64(), pa.int32()], ["a", "b"]), tier=st.sampled_from(["numpy",
                                                                                  "compiled"]))
def test_compiled_property(table: pa.Table, tier: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLBRIDGE_CPU_TIER", tier)
        out = cb.lazy(table).with_columns(z=step("a", "b") + 1).compute()
    want = [None if v is None else v + 1 for v in _rows(_step, table, ["a", "b"], np.float64)]
    assert_arrays_match(out.column("z"), pa.array(want, pa.float64()), what="step + 1")


def test_return_dtype_converts_and_empty_frames() -> None:
    as_f32 = cb.udf(_step, return_dtype="float32")
    table = pa.table({"a": pa.array([], pa.float64()), "b": pa.array([], pa.float64())})
    out = cb.lazy(table).with_columns(z=as_f32("a", "b")).compute()
    assert out.column("z").type == pa.float32()
    assert out.num_rows == 0
    table = pa.table({"a": [4.0, 1.0], "b": [0.0, 2.0]})
    out = cb.lazy(table).with_columns(z=as_f32("a", "b")).compute()
    assert out.column("z").to_pylist() == [2.0, 2.5]

    @cb.udf(return_dtype="bool")
    def positive(x: float) -> bool:
        return x > 0

    out = cb.lazy(table).with_columns(p=positive("b")).compute()
    assert out.column("p").to_pylist() == [False, True]


def test_the_function_never_sees_a_null_row() -> None:
    @cb.udf(compiled=True)
    def tenth(a: int) -> int:
        return 10 // a  # raises on 0: the zero under the null must never reach it

    values = pa.array([5, 0, 2], pa.int64())
    masked = pa.Array.from_buffers(pa.int64(), 3, [pa.array([True, False, True]).buffers()[1],
                                                   values.buffers()[1]])  # fmt: skip
    out = cb.lazy(pa.table({"a": masked})).with_columns(z=tenth("a")).compute()
    assert out.column("z").to_pylist() == [2, None, 5]


def _first_valid(x: float, xv: bool, y: float, yv: bool) -> float:
    if xv:
        return x
    if yv:
        return y
    return -1.0


def _inverse(x: float, xv: bool) -> tuple[float, bool]:
    if xv and x != 0.0:
        return 1.0 / x, True
    return 0.0, False  # null where there is no inverse


first_valid = cb.udf(_first_valid, skip_nulls=False)
inverse = cb.udf(_inverse, skip_nulls=False)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_skip_nulls_false_sees_validity_and_may_return_it(
    tier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    rng = np.random.default_rng(4)
    table = pa.table({"a": make_column(rng, pa.float64(), 400, True),
                      "b": make_column(rng, pa.float64(), 400, True)}).slice(5)  # fmt: skip
    table = pa.concat_tables([table.slice(0, 150), table.slice(150)])
    table = table.set_column(0, "a", pa.chunked_array(
        [pa.array(np.where(np.arange(len(c)) % 7 == 0, 0.0, c.to_numpy(zero_copy_only=False)),
                  mask=c.is_null().to_numpy(zero_copy_only=False)) for c in table["a"].chunks]))
    out = cb.lazy(table).with_columns(f=first_valid("a", "b"), n=inverse("a")).compute()
    a, b = table.column("a").to_pylist(), table.column("b").to_pylist()
    want_f = [x if x is not None else (y if y is not None else -1.0)
              for x, y in zip(a, b, strict=True)]  # fmt: skip
    want_n = [None if x is None or x == 0.0 else 1.0 / x for x in a]
    assert out.column("f").null_count == 0  # the function decided every row
    assert_arrays_match(out.column("f"), pa.array(want_f, pa.float64()), what="first_valid")
    assert_arrays_match(out.column("n"), pa.array(want_n, pa.float64()), what="inverse")


@pytest.mark.parametrize("rows", [5, 100_000])
def test_division_by_zero_is_a_clear_error(rows: int) -> None:
    @cb.udf(compiled=True)
    def ratio(a: int, b: int) -> int:
        return a // b

    b = np.ones(rows, dtype=np.int64)
    b[rows // 2] = 0
    table = pa.table({"a": np.arange(rows), "b": b})
    message = (r"compiled user function `ratio` raised an exception \(for example an integer "
               r"division by zero\).*\(1 value\)")  # fmt: skip
    with pytest.raises(cb.InvalidOperationError, match=message):
        cb.lazy(table).with_columns(z=ratio("a", "b")).compute()


def test_compiled_fuses_into_one_kernel() -> None:
    table = pa.table({"a": np.linspace(-1, 1, 100_000), "b": np.linspace(1, -1, 100_000)})
    lf = cb.lazy(table).with_columns(z=step("a", "b") * 2 + cb.col("a").sin())
    text = lf.explain(source=True)
    assert "1 pass(es) over the rows, 1 fused kernel(s)" in text
    kernel = text[text.index("error_model='python')\ndef elementwise"):]
    assert f"_call{step.token}_float64_2_valid(" in kernel  # called inside the row loop
    assert "np.sin(" in kernel  # with the rest of the expression
    assert "cache=False" in text[text.index("def elementwise") - 80:]  # never cached on disk
    out = lf.compute()
    a, b = table.column("a").to_numpy(), table.column("b").to_numpy()
    want = np.array([_step(x, y) for x, y in zip(a, b, strict=True)]) * 2 + np.sin(a)
    np.testing.assert_allclose(out.column("z").to_numpy(), want, rtol=1e-15)


def test_a_new_function_of_the_same_name_gets_its_own_kernel() -> None:
    table = pa.table({"a": np.arange(100_000, dtype=np.float64)})

    def make(k: float) -> cb.UserFunction:
        def shift(x: float) -> float:
            if x >= 0.0:
                return x + k
            return x

        return cb.udf(shift)

    first = cb.lazy(table).with_columns(z=make(1.0)("a")).compute().column("z")
    second = cb.lazy(table).with_columns(z=make(2.0)("a")).compute().column("z")
    assert first[3].as_py() == 4.0
    assert second[3].as_py() == 5.0


def test_plans_with_user_functions_pickle() -> None:
    import pickle

    table = pa.table({"a": [4.0, None, 1.0], "b": [0.0, 2.0, 2.0]})
    expr = step("a", "b") + blend("a", "b")
    again = pickle.loads(pickle.dumps(expr))
    got = cb.lazy(table).with_columns(z=again).compute()
    want = cb.lazy(table).with_columns(z=expr).compute()
    assert_arrays_match(got.column("z"), want.column("z"), what="unpickled")
    copy = pickle.loads(pickle.dumps(step))
    assert copy.token != step.token  # a process's own number, never reused for another function


# -- frames, grouping, streams -----------------------------------------------------------------
def test_pandas_polars_and_pyarrow_frames() -> None:
    data = {"a": [4.0, None, 1.0], "b": [0.0, 2.0, 2.0]}
    want = [2.0, None, 2.5]
    frames = [pa.table(data), pl.DataFrame(data), pd.DataFrame(data),
              pd.DataFrame(data).convert_dtypes(dtype_backend="pyarrow")]  # fmt: skip
    for frame in frames:
        out = cb.lazy(frame).with_columns(z=step("a", "b"), y=blend("a", "b")).compute()
        z = out["z"]
        got = z.to_pylist() if hasattr(z, "to_pylist") else z.to_list()
        got = [None if pd.isna(v) else v for v in got]  # pandas NumPy: NaN is null
        assert got == want, type(frame)


def test_inside_group_by_agg_and_over() -> None:
    rng = np.random.default_rng(2)
    n = 500
    table = pa.table({"g": rng.integers(0, 5, n), "a": make_column(rng, pa.float64(), n, True),
                      "b": make_column(rng, pa.float64(), n, True)})  # fmt: skip
    table = pa.table({"g": table["g"], "a": pc_clip(table["a"]), "b": pc_clip(table["b"])})
    got = (cb.lazy(table).group_by("g", maintain_order=True)
           .agg(s=step("a", "b").sum(), t=blend("a", "b").max()).compute())  # fmt: skip
    frame = pl.from_arrow(table).with_columns(
        z=pl.Series(_rows(_step, table, ["a", "b"], np.float64), dtype=pl.Float64))
    want = frame.group_by("g", maintain_order=True).agg(
        s=pl.col("z").sum(), t=blend_polars(pl.col("a"), pl.col("b")).max()).to_arrow()
    assert_arrays_match(got.column("s"), want.column("s"), what="sum", rtol=1e-12)
    assert_arrays_match(got.column("t"), want.column("t"), what="max")
    over = cb.lazy(table).with_columns(m=step("a", "b").mean().over("g")).compute()
    want_over = frame.with_columns(m=pl.col("z").mean().over("g")).to_arrow()
    assert_arrays_match(over.column("m"), want_over.column("m"), what="over", rtol=1e-12)


def pc_clip(column: Any) -> pa.Array:
    # keep the sums finite, so the comparison is about the function, not about overflow
    import pyarrow.compute as pc

    return pc.if_else(pc.is_finite(column), pc.max_element_wise(pc.min_element_wise(
        column, 1e6), -1e6), 0.0)  # fmt: skip


def test_streamed_pipeline(tmp_path: Any) -> None:
    from colbridge.io import pipeline

    rng = np.random.default_rng(8)
    whole = pa.table({"a": make_column(rng, pa.float64(), 20_000, True),
                      "b": make_column(rng, pa.float64(), 20_000, False)})  # fmt: skip
    source = tmp_path / "in.parquet"
    pq.write_table(whole, source)
    plan = cb.lazy(whole.slice(0, 10)).with_columns(z=step("a", "b"), y=blend("a", "b"))
    out = tmp_path / "out.parquet"
    result = pipeline(source, out, steps=plan, batch_rows=3_000)
    assert result is not None
    got = pq.read_table(out)
    want = _rows(_step, whole, ["a", "b"], np.float64)
    assert_arrays_match(got.column("z"), pa.array(want, pa.float64()), what="streamed step")
    inline = cb.lazy(whole).with_columns(y=blend_inline(cb.col("a"), cb.col("b"))).compute()
    assert_arrays_match(got.column("y"), inline.column("y"), what="streamed blend")


# -- CUDA: traced udfs are ordinary IR; compiled ones run on the host, visibly --------------------
def test_traced_udf_lowers_to_the_same_cuda_c_as_the_expression() -> None:
    from colbridge.backends.cuda import compile_nvrtc

    table = pa.table({"a": [1.0, None, 3.0], "b": [2.0, 1.0, None]})
    traced = cb.lazy(table).with_columns(z=blend("a", "b"))
    inline = cb.lazy(table).with_columns(z=blend_inline(cb.col("a"), cb.col("b")))
    text = traced.explain(source=True, target="cuda")
    assert text == inline.explain(source=True, target="cuda")
    assert "__global__" in text
    start = text.index("--- ")
    source = text[text.index("\n", start) + 1: text.index("copies:")]
    assert compile_nvrtc(source, "compute_90")


def test_compiled_udf_on_cuda_runs_on_the_host_and_says_so() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    table = pa.table({"a": [4.0, None, 1.0, 9.0], "b": [0.0, 2.0, 2.0, 1.0]})
    lf = cb.lazy(table).with_columns(z=step("a", "b") + 1)
    got = compute_on_host(lf)
    assert got.column("z").to_pylist() == [3.0, None, 3.5, math.sqrt(8.0) + 1]
    kernels = " ".join(lf.last_report.stats.kernels)
    assert "segment on the host CPU: calls compiled user function(s) `_step`" in kernels
    assert "CUDA C cannot call" in kernels
    with pytest.warns(cb.DeviceFallbackWarning):
        text = lf.explain(device="cuda")
    assert "`_step` called inside the fused kernel; CUDA C cannot call them" in text
    # a traced function needs nothing of the sort: its kernels are CUDA kernels
    traced = cb.lazy(table).with_columns(z=blend("a", "b"))
    compute_on_host(traced)
    assert "host CPU" not in " ".join(traced.last_report.stats.kernels)


# -- errors ------------------------------------------------------------------------------------
def test_wrong_number_of_arguments() -> None:
    message = (r"user function `_step\(x, y\)` called with 3 argument\(s\).*one expression, "
               r"column name or number per parameter")  # fmt: skip
    with pytest.raises(cb.SchemaError, match=message):
        step("a", "b", "c")


def test_traced_function_returning_something_else() -> None:
    pair = cb.udf(lambda x: (x, x))
    message = (r"user function `<lambda>` returned a tuple when traced; a traced function must "
               r"return an expression or a number")  # fmt: skip
    with pytest.raises(cb.UserFunctionError, match=message):
        pair("a")


def test_numba_cannot_compile_it() -> None:
    def lookup(x: float) -> float:
        return {"k": x}["k"] + object()  # type: ignore[operator, no-any-return]

    table = pa.table({"a": [1.0]})
    with pytest.raises(cb.SchemaError, match=r"user function `lookup` cannot be compiled by "
                       r"numba for arguments \(float64\): .*numba's subset of Python"):  # fmt: skip
        cb.lazy(table).with_columns(z=cb.udf(lookup, return_dtype="float64")("a")).compute()


def test_bad_return_dtype() -> None:
    with pytest.raises(cb.UnsupportedTypeError, match=r"`return_dtype='string'` of user function "
                       r"`_step` is not a type a compiled function can return"):  # fmt: skip
        cb.udf(_step, return_dtype="string")


def test_string_and_list_arguments_are_refused() -> None:
    table = pa.table({"s": ["x", "y"], "l": [[1], [2]], "a": [1.0, 2.0]})
    with pytest.raises(cb.UnsupportedTypeError, match=r"compiled user function `_step`: argument "
                       r"1 `col\(\"s\"\)` is of type string.*traced.*pyarrow"):  # fmt: skip
        cb.lazy(table).with_columns(z=step("s", "a")).compute()
    with pytest.raises(cb.UnsupportedTypeError, match=r"argument 2 `col\(\"l\"\)` is of type "
                       r"list<item: int64>"):  # fmt: skip
        cb.lazy(table).with_columns(z=step("a", "l")).compute()
