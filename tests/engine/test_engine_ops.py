"""Differential tests: every operation × dtype × nulls × offsets × chunks, against polars."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import SchemaError
from colbridge.testing.asserts import (
    LIBM_ULPS,
    SCALAR_DIVISION_ULPS,
    Tolerance,
    assert_same_as_polars,
    std_bound,
    summation_bound,
)
from colbridge.testing.data import limit_values, tables

I8, I16, I32, I64 = pa.int8(), pa.int16(), pa.int32(), pa.int64()
U8, U16, U32, U64 = pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()
F32, F64, BOOL = pa.float32(), pa.float64(), pa.bool_()

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _arith(m):  # type: ignore[no-untyped-def]
    a, b = m.col("a"), m.col("b")
    return {
        "add": a + b, "sub": a - b, "mul": a * b, "truediv": a / b, "floordiv": a // b,
        "mod": a % b, "eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
        "ge": a >= b,
    }  # fmt: skip


def _logic(m):  # type: ignore[no-untyped-def]
    a, b = m.col("a"), m.col("b")
    return {"and": a & b, "or": a | b, "xor": a ^ b, "not": ~a}


ARITH_PAIRS = [
    (I8, I8), (I16, I64), (I64, I64), (U8, U8), (U64, U64), (I32, U16), (I8, U8), (U32, I64),
    (F32, F32), (F64, F64), (F32, I64), (I16, F32), (F64, U8), (U64, F32), (BOOL, I32),
]  # fmt: skip


@pytest.mark.parametrize("types", ARITH_PAIRS, ids=lambda t: f"{t[0]}-{t[1]}")
@SETTINGS
@given(data=st.data())
def test_arithmetic_and_comparisons(types, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables(types, names=("a", "b")))
    assert_same_as_polars(table, lambda m, q: q.with_columns(**_arith(m)))


@pytest.mark.parametrize(
    "types", [(BOOL, BOOL), (I64, I64), (U8, I16), (I32, I32)], ids=lambda t: f"{t[0]}-{t[1]}"
)
@SETTINGS
@given(data=st.data())
def test_logic_kleene_and_bitwise(types, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables(types, names=("a", "b")))
    assert_same_as_polars(table, lambda m, q: q.with_columns(**_logic(m)))


EXACT_UNARY = ["abs", "sqrt", "floor", "ceil", "round", "sign", "is_null", "is_not_null"]
FLOAT_ONLY = ["is_nan", "is_not_nan", "is_finite", "is_infinite"]
TRANSCENDENTAL = ["exp", "log", "log1p", "sin", "cos", "tan", "tanh", "log10", "cbrt", "arctan"]


@pytest.mark.parametrize("dtype", [I8, I32, I64, U8, U64, F32, F64], ids=str)
@SETTINGS
@given(data=st.data())
def test_unary_functions(dtype, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([dtype], names=("a",)))

    def exact(m, q):  # type: ignore[no-untyped-def]
        a = m.col("a")
        out = {f: getattr(a, f)() for f in EXACT_UNARY}
        if pa.types.is_floating(dtype):
            out.update({f: getattr(a, f)() for f in FLOAT_ONLY})
        if not pa.types.is_unsigned_integer(dtype):
            out["neg"] = -a
        return q.with_columns(**out)

    def transcendental(m, q):  # type: ignore[no-untyped-def]
        a = m.col("a")
        return q.with_columns(**{f: getattr(a, f)() for f in TRANSCENDENTAL})

    assert_same_as_polars(table, exact)
    # libm functions: a few ULPs from polars' (docs/reliability.md, "Tolerances")
    assert_same_as_polars(table, transcendental, ulps=LIBM_ULPS[32 if dtype == F32 else 64])


@pytest.mark.parametrize("dtype", [I16, F32, F64], ids=str)
@SETTINGS
@given(
    data=st.data(),
    decimals=st.sampled_from([0, 1, 2, 3, 6, 15, 22, 30, 300, 308, 400]),
    mode=st.sampled_from(["half_to_even", "half_away_from_zero"]),
)
def test_round_with_decimals_and_modes(dtype, data, decimals, mode) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([dtype], names=("a",)))
    ties = pa.array([2.5, -2.5, 0.125, -0.125, 2.675, 0.49999999999999994, 1e300, -0.0], F64)

    def steps(m, q):  # type: ignore[no-untyped-def]
        return q.with_columns(z=m.col("a").round(decimals, mode=mode))

    assert_same_as_polars(table, steps)
    assert_same_as_polars(pa.table({"a": ties}), steps)


CAST_TARGETS = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32",
                "float64", "bool"]  # fmt: skip


@pytest.mark.parametrize("dtype", [I8, I64, U16, U64, F32, F64, BOOL], ids=str)
@SETTINGS
@given(data=st.data())
def test_casts_non_strict(dtype, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([dtype], names=("a",)))
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(
            **{f"to_{t}": m.col("a").cast(_dtype(m, t), strict=False) for t in CAST_TARGETS}
        ),
    )


def _dtype(m, name: str):  # type: ignore[no-untyped-def]
    """The dtype spelled for module ``m``: polars wants its own classes."""
    if m.__name__ != "polars":
        return name
    return getattr(m, {"bool": "Boolean"}.get(name, name.capitalize().replace("Uint", "UInt")))


LIMIT_SOURCES = [I8, I16, I32, I64, U8, U16, U32, U64, F32, F64]


@pytest.mark.parametrize("source", LIMIT_SOURCES, ids=str)
def test_casts_at_every_limit(source) -> None:  # type: ignore[no-untyped-def]
    # every limit of every type (and one ulp and one either side of each) in one column: the
    # non-strict casts equal polars' value by value; from floats, the strict ones fail on as
    # many values as polars' (integer sources: the non-strict nulls are the same check)
    table = pa.table({"a": pa.array(limit_values(source), source)})
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(
            **{f"to_{t}": m.col("a").cast(_dtype(m, t), strict=False) for t in CAST_TARGETS}
        ),
        kinds=("pyarrow",),
    )
    for target in CAST_TARGETS if pa.types.is_floating(source) else ():
        try:
            pl.from_arrow(table).with_columns(z=pl.col("a").cast(_dtype(pl, target)))
            failing = 0
        except pl.exceptions.InvalidOperationError as exc:
            failing = int(re.search(r"for (\d+) out of", str(exc)).group(1))  # type: ignore[union-attr]
        lf = cb.lazy(table).with_columns(z=cb.col("a").cast(target))
        if failing == 0:
            lf.compute()
            continue
        noun = "value" if failing == 1 else "values"
        with pytest.raises(cb.InvalidOperationError, match=rf"\({failing} {noun}\)"):
            lf.compute()


@pytest.mark.parametrize("dtype", [I64, F64], ids=str)
@SETTINGS
@given(data=st.data())
def test_strict_cast_raises_like_polars(dtype, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([dtype], names=("a",)))
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(
            z=m.col("a").cast(m.Int8 if m.__name__ == "polars" else "int8")
        ),
    )


@pytest.mark.parametrize("types", [(I64, F64, I8), (F32, I32, BOOL), (U8, I8, F32)],
                         ids=lambda t: "-".join(map(str, t)))  # fmt: skip
@SETTINGS
@given(data=st.data())
def test_conditionals_and_null_handling(types, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables(types))

    def steps(m, q):  # type: ignore[no-untyped-def]
        a, b, c = m.col("a"), m.col("b"), m.col("c")
        numeric_c = c.cast(m.Int32 if m.__name__ == "polars" else "int32") if types[2] == BOOL \
            else c  # fmt: skip
        return q.with_columns(
            w=m.when(a > b).then(a).otherwise(b),
            w2=m.when(a.is_null()).then(1).when(b > 0).then(b).otherwise(numeric_c),
            w3=m.when(b < 0).then(2.5),
            co=m.coalesce(a, b, 0),
            fn=a.fill_null(b),
            fn1=a.fill_null(1),
            fnan=b.fill_nan(0) if types[1].id in (F32.id, F64.id) else b,
            fnan_null=a.fill_nan(None) if types[0].id in (F32.id, F64.id) else a,
            cl=a.clip(-3, 5),
            cl_lo=b.clip(lower_bound=0),
            isn=a.is_null() | b.is_not_null(),
        )

    assert_same_as_polars(table, steps)


REDUCTIONS = ["sum", "mean", "min", "max", "std", "var", "count", "null_count"]


@pytest.mark.parametrize("dtype", [I8, I32, I64, U32, U64, F32, F64, BOOL], ids=str)
@SETTINGS
@given(data=st.data())
def test_reductions(dtype, data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([dtype], names=("a",)))
    funcs = REDUCTIONS if dtype != BOOL else ["sum", "mean", "min", "max", "count", "null_count"]
    values = [v for v in table.column("a").to_pylist() if v is not None]
    if dtype in (I64, U64) and any(abs(v) > 2**53 for v in values):
        # polars sums 64-bit integers as floats, so its mean loses whatever cancels near
        # 2**63; colbridge's integer mean is exact: check it against Python integers.
        import colbridge as cb

        got = cb.lazy(table).select(m=cb.col("a").mean()).compute().column("m")[0].as_py()
        assert got == sum(values) / len(values)
        funcs = [f for f in funcs if f not in ("mean", "std", "var")]
    # sums, means, variances: the summation-order bound; min, max, counts: exact
    x = np.asarray([float(v) for v in values], dtype=np.float64)
    bits = 32 if dtype == F32 else 64
    tolerance = {f: Tolerance(atol=summation_bound(f, x, bits)) for f in ("sum", "mean", "var")}
    tolerance["v0"] = Tolerance(atol=summation_bound("var", x, bits, ddof=0))
    with np.errstate(over="ignore", invalid="ignore"):
        std = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    tolerance["std"] = Tolerance(atol=std_bound(tolerance["var"].atol, std, std))
    if not pa.types.is_floating(dtype):
        tolerance = {k: v for k, v in tolerance.items() if k != "sum"}  # integer sums: exact
    assert_same_as_polars(
        table,
        lambda m, q: q.select(
            **{f: getattr(m.col("a"), f)() for f in funcs},
            **({"v0": m.col("a").var(ddof=0)} if "var" in funcs else {}),
        ),
        tolerance=tolerance,
    )


@SETTINGS
@given(data=st.data())
def test_reductions_inside_elementwise(data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([F64, I32], names=("a", "b")))

    def steps(m, q):  # type: ignore[no-untyped-def]
        a, b = m.col("a"), m.col("b")
        return q.with_columns(
            z=(a - a.mean()) / a.std(),
            share=b / b.sum(),
            rng=(b - b.min()) / (b.max() - b.min()),
            spread=(a - a.mean()).abs().max(),
            n=a.count() + b.null_count(),
        )

    # z, share and spread divide by (or subtract) a float sum: its summation order shows in
    # the last bits; rng divides by a scalar (polars multiplies by its reciprocal); n is exact
    loose = Tolerance(rtol=1e-9)
    assert_same_as_polars(table, steps, tolerance={
        "z": loose, "share": loose, "spread": loose, "rng": Tolerance(ulps=SCALAR_DIVISION_ULPS),
    })  # fmt: skip


@SETTINGS
@given(data=st.data())
def test_filters_and_chained_steps(data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([F64, I64, BOOL]))

    def steps(m, q):  # type: ignore[no-untyped-def]
        a, b, c = m.col("a"), m.col("b"), m.col("c")
        q = q.with_columns(z=a * 2 + b)
        q = q.filter(m.col("z") > 0)
        q = q.with_columns(w=m.col("z") - a, c=~c)
        q = q.filter(c | (b > 3))
        return q.select("w", "a", m.col("z").alias("zz"), b.alias("b2"))

    assert_same_as_polars(table, steps)


@SETTINGS
@given(data=st.data())
def test_reduction_after_filter_sees_kept_rows(data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([F64, I32], names=("a", "b")))

    def steps(m, q):  # type: ignore[no-untyped-def]
        a = m.col("a")
        q = q.with_columns(m0=a.mean()).filter(m.col("b") > 0)
        return q.with_columns(m1=a.mean(), d=a - a.mean(), s=m.col("b").sum())

    loose = Tolerance(rtol=1e-9)  # means: summation order; the integer sum is exact
    assert_same_as_polars(table, steps, tolerance={"m0": loose, "m1": loose, "d": loose})


LITERAL_CASES = {
    "i8_plus_300": (I8, lambda m: m.col("a") + 300),
    "u8_plus_minus_one": (U8, lambda m: m.col("a") + (-1)),
    "u8_times_1000": (U8, lambda m: m.col("a") * 1000),
    "i32_plus_big": (I32, lambda m: m.col("a") + 2**40),
    "f32_plus_float": (F32, lambda m: m.col("a") + 1.1),
    "i16_plus_float": (I16, lambda m: m.col("a") * 0.5),
    "bool_times_two": (BOOL, lambda m: m.col("a") * 2),
    "bool_plus_bool": (BOOL, lambda m: m.col("a") + m.col("a")),
    "lit_only": (I64, lambda m: m.lit(7) + 1),
    "lit_div": (I64, lambda m: m.lit(7) / 2 + m.col("a")),
    "rpow_float": (F64, lambda m: 2.0 ** m.col("a")),
    "pow_int": (I8, lambda m: m.col("a") ** 2),
    "pow_float": (F32, lambda m: m.col("a") ** 0.5),
    "neg_pow_error": (I32, lambda m: m.col("a") ** (m.col("a") - 100)),
    "int_floordiv_zero": (I64, lambda m: m.col("a") // 0),
    "lit_none_fill": (F64, lambda m: m.col("a").fill_null(m.lit(None)).fill_null(3)),
}


@pytest.mark.parametrize("case", list(LITERAL_CASES))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_literal_typing(case, data) -> None:  # type: ignore[no-untyped-def]
    dtype, build = LITERAL_CASES[case]
    table = data.draw(tables([dtype], names=("a",)))
    # powers with a float result are libm's pow: a few ULPs
    ulps = LIBM_ULPS[32 if dtype == F32 else 64] if case in ("pow_float", "rpow_float") else 0
    assert_same_as_polars(table, lambda m, q: q.with_columns(z=build(m)), ulps=ulps)


def test_empty_frame_every_kind() -> None:
    table = pa.table({"a": pa.array([], pa.float64()), "b": pa.array([], pa.int32())})
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(z=m.col("a") * m.col("b"), s=m.col("b").sum())
        .filter(m.col("a") > 0),
    )
    assert_same_as_polars(table, lambda m, q: q.select(m.col("a").mean(), m.col("b").max()))


@SETTINGS
@given(data=st.data())
def test_int_uint64_comparisons_are_exact(data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([I64, U64, I8]))

    def steps(m, q):  # type: ignore[no-untyped-def]
        a, b, c = m.col("a"), m.col("b"), m.col("c")
        return q.with_columns(
            lt=a < b, le=a <= b, gt=a > b, ge=a >= b, eq=a == b, ne=a != b, rev=b < c, req=b == c
        )

    assert_same_as_polars(table, steps)


@pytest.fixture
def parallel_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the multi-threaded kernel variant (used above 200k rows) on small data."""
    import colbridge.backends.cpu as cpu

    monkeypatch.setattr(cpu, "PARALLEL_MIN_ROWS", 0)


@pytest.mark.usefixtures("parallel_kernels")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_parallel_variant_matches_polars(data) -> None:  # type: ignore[no-untyped-def]
    table = data.draw(tables([F64, I32, BOOL], max_rows=40))

    def steps(m, q):  # type: ignore[no-untyped-def]
        a, b, c = m.col("a"), m.col("b"), m.col("c")
        q = q.with_columns(
            z=(a * b + 1).sqrt(), gt=a > b, k=c & (b > 0), d=b // 3, s=(a - a.mean()) / a.std(),
            n=b.sum(), mx=a.max(),
        )  # fmt: skip
        return q.filter(m.col("gt") | c)

    loose = Tolerance(rtol=1e-9)  # a mean and a std: summation order
    assert_same_as_polars(table, steps, tolerance={"s": loose})


@pytest.mark.usefixtures("parallel_kernels")
def test_parallel_variant_on_many_blocks() -> None:
    from colbridge.testing.data import make_column

    rng = np.random.default_rng(7)
    n = 3 * 16384 + 1001  # several blocks, the last one partial
    table = pa.table(
        {"a": make_column(rng, F64, n + 5, 0.3), "b": make_column(rng, I64, n + 5, 0.1)}
    ).slice(5)

    def steps(m, q):  # type: ignore[no-untyped-def]
        a, b = m.col("a"), m.col("b")
        return q.with_columns(
            z=a * 2, lt=a < b, nb=b.is_null(), cnt=a.count(), v=a.var(), s=b.sum(), mn=b.min()
        ).filter(m.col("lt"))

    loose = Tolerance(rtol=1e-9)  # a variance: summation order over several blocks
    assert_same_as_polars(table, steps, kinds=("polars",), tolerance={"v": loose})


def test_reductions_of_scalars_see_one_value() -> None:
    table = pa.table({"a": [1.0, None, 3.0]})
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(
            s=m.lit(2).sum(),
            c=m.lit(2).count(),
            mm=m.col("a").mean().max(),
            sd=m.lit(1.5).std(),
            v0=m.lit(1.5).var(ddof=0),
            n=m.col("a").sum().null_count(),
        ),
    )


@pytest.mark.parametrize("rows", [0, 3])
def test_factorized_reductions_of_one_value_see_it_over_any_frame(rows: int) -> None:
    # polars: `lit(2).first()` is 2 over an empty frame too (one value, not the rows'
    # copies of it); the reductions computed from a factorization took the rows
    table = pa.table({"a": pa.array([1.0, None, 3.0][:rows], pa.float64())})
    assert_same_as_polars(
        table,
        lambda m, q: q.select(
            f=m.lit(2).first(),
            la=m.lit(2.5).last(),
            n=m.lit(0).n_unique(),
            md=m.lit(2).median(),
            qf=m.lit(2.5, dtype=pl.Float32).quantile(0.3),
            an=m.lit(0).any(),
            al=m.lit(0).all(),
            ak=m.col("a").max().any(ignore_nulls=False),
            am=m.col("a").max().arg_min(),
            ax=m.lit(True).arg_max(),
            ba=m.lit(6).bitwise_and(),
            bo=m.col("a").sum().cast(pl.Int8).bitwise_or(),
        ),
    )


def test_a_literal_replaced_or_powered_is_typed_as_polars_types_it() -> None:
    # `lit(3).replace(1, 9)`, `lit(1).replace_strict(...)` and `lit(True) ** 2` met an
    # untyped Python number (a KeyError from inside); polars types the literal first
    table = pa.table({"a": [1.0, None, 3.0]})
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(
            kept=m.lit(3).replace(1, 9),
            swapped=m.lit(1).replace([1, 2], [300, 4]),
            floats=m.lit(1.5).replace(1.5, 2),
            strict=m.lit(1).replace_strict({1: 10}),
            default=m.lit(0.5).replace_strict({1: 10}, default=0),
        ),
    )
    for bad in (lambda m: m.lit(True).pow(2), lambda m: m.lit(2) ** m.lit(True)):
        assert_same_as_polars(table, lambda m, q, bad=bad: q.select(z=bad(m)))


def test_a_literal_of_several_values_is_refused_by_name() -> None:
    # a Series of many values was a ValueError from inside (`.item()`), a list a TypeError
    for values in (pl.Series([1, 2, 3]), np.array([1.0, 2.0]), [1, 2], [3], (1,)):
        with pytest.raises(SchemaError, match=r"values as a literal.*as a column first"):
            cb.lit(values)
    # one value of a Series keeps its type, as polars' `lit(Series)` of one value
    table = pa.table({"a": pa.array([1, 2, None], pa.int8())})
    for one in (pl.Series([5]), pl.Series([1], dtype=pl.UInt8), np.array([7])):
        assert_same_as_polars(
            table, lambda m, q, one=one: q.with_columns(z=m.col("a") + m.lit(one))
        )


def test_equal_python_literals_of_different_types_stay_apart() -> None:
    # 3 == 3.0 == True in Python; as IR literals they must not be merged
    table = pa.table({"a": [1.0, 5.0], "b": pa.array([1, 2], pa.int32())})
    assert_same_as_polars(
        table,
        lambda m, q: q.with_columns(
            z=m.when(m.col("a") < 3).then(m.col("b")).otherwise(3.0),
            y=m.col("b") + 1,
            x=m.col("b") * 1.0,
        ),
    )


@pytest.mark.parametrize("lists", [([1, 3], [1.0, 3.0]), ([1.0, 3.0], [1, 3]),
                                   ([True], [1]), ([1], [True])], ids=str)  # fmt: skip
def test_is_in_lists_equal_in_python_are_planned_apart(lists: tuple[list[Any], ...]) -> None:
    # 1 == 1.0 == True in Python, but polars refuses a list of another kind than the
    # column's: computed one after another in one process, an accepted list must not make
    # its Python-equal twin accepted, nor a refused one refuse its twin
    table = pa.table({"i": pa.array([1, None, 3, 4], I8), "b": pa.array([True, None, False, True])})
    column = "b" if any(isinstance(v[0], bool) for v in lists) else "i"
    for values in lists:
        assert_same_as_polars(table, lambda m, q, values=values: q.select(
            s=m.col(column).is_in(values)), kinds=("pyarrow",))  # fmt: skip
