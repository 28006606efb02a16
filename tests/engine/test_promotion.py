"""The promotion table, checked against polars for every pair of types and every operator."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.expr.nodes import Agg, Binary, Column, Literal, Unary
from colbridge.plan.typecheck import ColumnType, TypeChecker
from colbridge.types import DType

DTYPES = [d for d in DType if d is not DType.FLOAT16]
POLARS = {
    DType.BOOL: pl.Boolean, DType.INT8: pl.Int8, DType.INT16: pl.Int16, DType.INT32: pl.Int32,
    DType.INT64: pl.Int64, DType.UINT8: pl.UInt8, DType.UINT16: pl.UInt16,
    DType.UINT32: pl.UInt32, DType.UINT64: pl.UInt64, DType.FLOAT32: pl.Float32,
    DType.FLOAT64: pl.Float64,
}  # fmt: skip
FROM_POLARS = {v: k for k, v in POLARS.items()}
BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "eq", "lt", "and", "xor"]
PL_OP = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a**b, "eq": lambda a, b: a == b, "lt": lambda a, b: a < b,
    "and": lambda a, b: a & b, "xor": lambda a, b: a ^ b,
}  # fmt: skip


def _ours(node, schema):  # type: ignore[no-untyped-def]
    checker = TypeChecker(schema, list(schema))
    try:
        return checker.dtype(checker.check(node))
    except cb.ColbridgeError:
        return "error"


def _polars(expr, frame):  # type: ignore[no-untyped-def]
    # Run it (on one row of ones): polars' planned schema and its result can differ.
    one = pl.DataFrame({c: pl.Series([1]).cast(t) for c, t in frame.schema.items()})
    try:
        dtype = one.select(expr).dtypes[0]
    except pl.exceptions.PolarsError:
        return "error"
    return FROM_POLARS.get(dtype, "error")  # int128 and the like: colbridge refuses them


def _schema(**cols: DType) -> dict[str, ColumnType]:
    return {n: ColumnType(n, d, d.arrow) for n, d in cols.items()}


@pytest.mark.parametrize("op", BINARY)
def test_binary_result_types_match_polars(op: str) -> None:
    mismatches = []
    for a, b in itertools.product(DTYPES, DTYPES):
        frame = pl.DataFrame(schema={"a": POLARS[a], "b": POLARS[b]})
        ours = _ours(Binary(op, Column("a"), Column("b")), _schema(a=a, b=b))
        theirs = _polars(PL_OP[op](pl.col("a"), pl.col("b")), frame)
        if ours != theirs:
            mismatches.append(f"{a} {op} {b}: colbridge {ours}, polars {theirs}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("value", [1, -1, 300, 70000, 2**40, 1.5, True])
def test_literal_result_types_match_polars(value: object) -> None:
    mismatches = []
    for a in DTYPES:
        frame = pl.DataFrame(schema={"a": POLARS[a]})
        for op in ["add", "mul", "lt"]:
            ours = _ours(Binary(op, Column("a"), Literal(value)), _schema(a=a))  # type: ignore[arg-type]
            theirs = _polars(PL_OP[op](pl.col("a"), pl.lit(value)), frame)
            if ours != theirs:
                mismatches.append(f"{a} {op} lit({value!r}): colbridge {ours}, polars {theirs}")
    assert not mismatches, "\n".join(mismatches)


UNARY = ["abs", "sqrt", "exp", "floor", "round", "sign", "is_nan", "neg", "not"]
AGGS = ["sum", "mean", "min", "max", "std", "var", "count", "null_count"]


def test_unary_and_reduction_result_types_match_polars() -> None:
    mismatches = []
    for a in DTYPES:
        frame = pl.DataFrame(schema={"a": POLARS[a]})
        for op in UNARY:
            ours = _ours(Unary(op, Column("a")), _schema(a=a))
            pl_expr = {"neg": -pl.col("a"), "not": ~pl.col("a")}.get(op)
            if pl_expr is None:
                pl_expr = getattr(pl.col("a"), op)()
            theirs = _polars(pl_expr, frame)
            if ours != theirs:
                mismatches.append(f"{op}({a}): colbridge {ours}, polars {theirs}")
        for func in AGGS:
            ours = _ours(Agg(func, Column("a")), _schema(a=a))
            theirs = _polars(getattr(pl.col("a"), func)(), frame)
            if ours != theirs:
                mismatches.append(f"{func}({a}): colbridge {ours}, polars {theirs}")
    assert not mismatches, "\n".join(mismatches)


# -- dynamic expressions ---------------------------------------------------------------------
# polars keeps expressions of Python numbers untyped ("dyn int" / "dyn float") until they meet
# a typed operand: `when(c).then(1.0).otherwise(-1) * float32` is Float32. Each case is checked
# against polars, types and values, exactly.
DYNAMIC_FRAME = pl.DataFrame(
    {
        "c": [True, False, None],
        "f": pl.Series([1.5, None, 2.0], dtype=pl.Float32),
        "f0": pl.Series([0.0, None, 0.0], dtype=pl.Float32),
        "i": pl.Series([1, 2, None], dtype=pl.Int8),
        "u": pl.Series([1, 2, 3], dtype=pl.UInt8),
        "b": [True, False, True],
        "i64": [1, 2, 3],
    }
)


def when_c(m, a, b):  # type: ignore[no-untyped-def]
    return m.when(m.col("c")).then(a).otherwise(b)


def num(m, v):  # type: ignore[no-untyped-def]
    return m.lit(v)


DYNAMIC_CASES = {
    "when_c(300,1)+i8": lambda m: when_c(m,300,1)+m.col("i"),
    "when_c(1,300)+i8": lambda m: when_c(m,1,300)+m.col("i"),
    "when_c(3,1)+u8": lambda m: when_c(m,3,1)+m.col("u"),
    "when_c(-3,1)+u8": lambda m: when_c(m,-3,1)+m.col("u"),
    "when_c(3,-1)+u8": lambda m: when_c(m,3,-1)+m.col("u"),
    "when_c(300,-1)+u8": lambda m: when_c(m,300,-1)+m.col("u"),
    "when_c(-1,3)+u8": lambda m: when_c(m,-1,3)+m.col("u"),
    "when_c(3,1)+b": lambda m: when_c(m,3,1)+m.col("b"),
    "when_c(3,1)": lambda m: when_c(m,3,1),
    "when_c(3,2**40)": lambda m: when_c(m,3,2**40),
    "when_c(3,2**40)+i8": lambda m: when_c(m,3,2**40)+m.col("i"),
    "when_c(3,1.5)+i8": lambda m: when_c(m,3,1.5)+m.col("i"),
    "when_c(3,1.5)+f": lambda m: when_c(m,3,1.5)+m.col("f"),
    "when_c(3,None)+f": lambda m: when_c(m,3,None)+m.col("f"),
    "when_c(None,300)+i8": lambda m: when_c(m,None,300)+m.col("i"),
    "(3+1.5)+f": lambda m: (num(m,3)+num(m,1.5))+m.col("f"),
    "(300+1)+i8": lambda m: (num(m,300)+num(m,1))+m.col("i"),
    "(100+100)+i8": lambda m: (num(m,100)+num(m,100))+m.col("i"),
    "(3/2)+f": lambda m: (num(m,3)/num(m,2))+m.col("f"),
    "(3.0/2)+f": lambda m: (num(m,3.0)/num(m,2))+m.col("f"),
    "(3//0)+i8": lambda m: (num(m,3)//num(m,0))+m.col("i"),
    "(3%2)+i8": lambda m: (num(m,3)%num(m,2))+m.col("i"),
    "3**2+i8": lambda m: (num(m,3)**num(m,2))+m.col("i"),
    "3**2": lambda m: (num(m,3)**num(m,2)),
    "round(3.5)+f": lambda m: num(m,3.5).round()+m.col("f"),
    "round(3.5)": lambda m: num(m,3.5).round(),
    "round(2.5)": lambda m: num(m,2.5).round(),
    "round(3)+i8": lambda m: num(m,3).round()+m.col("i"),
    "floorW+f": lambda m: when_c(m,3.5,1).floor()+m.col("f"),
    "signW+f": lambda m: when_c(m,3.5,1).sign()+m.col("f"),
    "sign3+i8": lambda m: num(m,3).sign()+m.col("i"),
    "absW+f": lambda m: when_c(m,-3.5,1).abs()+m.col("f"),
    "-W+f": lambda m: (-when_c(m,3.5,1))+m.col("f"),
    "clipW+f": lambda m: when_c(m,3.5,1).clip(0,2)+m.col("f"),
    "W.fill_null(2)+i8": lambda m: when_c(m,3,1).fill_null(2)+m.col("i"),
    "W.fill_nan(2)+f": lambda m: when_c(m,3.5,1).fill_nan(2)+m.col("f"),
    "coalesce(W,2)+f": lambda m: m.coalesce(when_c(m,3.5,1),2)+m.col("f"),
    "W+2+f": lambda m: when_c(m,3.5,1)+num(m,2)+m.col("f"),
    "W*W+f": lambda m: when_c(m,3.5,1)*when_c(m,2,1)+m.col("f"),
    "W.sqrt+f": lambda m: when_c(m,3.5,1).sqrt()+m.col("f"),
    "W.sum+i8": lambda m: when_c(m,3,1).sum()+m.col("i"),
    "when_c(100,1).sum+i8": lambda m: when_c(m,100,1).sum()+m.col("i"),
    "W.max+i8": lambda m: when_c(m,3,1).max()+m.col("i"),
    "W.mean+f": lambda m: when_c(m,3.0,1).mean()+m.col("f"),
    "W.count+i8": lambda m: when_c(m,3,1).count()+m.col("i"),
    "lit3.sum+i8": lambda m: num(m,3).sum()+m.col("i"),
    "lit3.0.max+f": lambda m: num(m,3.0).max()+m.col("f"),
    "W//W+i8": lambda m: when_c(m,3,1)//when_c(m,2,2)+m.col("i"),
    "W/W+f": lambda m: when_c(m,3,1)/when_c(m,2,2)+m.col("f"),
    "WW+f": lambda m: when_c(m,when_c(m,3,1),2.5)+m.col("f"),
    "when_c(c,3)": lambda m: m.when(m.col("c")).then(3),
    "W&i8": lambda m: when_c(m,3,1)&m.col("i"),
    "W+i64": lambda m: when_c(m,3,1)+m.col("i64"),
    "when_c(1e300)+f": lambda m: when_c(m,1e300,1)+m.col("f"),
    "when_c(100)+when_c(100)+i8": lambda m: (when_c(m,100,1)+when_c(m,100,1))+m.col("i"),
    "when_c(1.0000001)-when_c(1)+f0": lambda m: (when_c(m,1.0000001,1.0)-when_c(m,1,1))+m.col("f0"),
    "(1.0000001-1)+f0": lambda m: (num(m,1.0000001)-num(m,1))+m.col("f0"),
    "W*2+i8": lambda m: (when_c(m,100,1)*2)+m.col("i"),
    "when_c(16777217.0).sum+f": lambda m: when_c(m,16777217.0,1).sum()+m.col("f"),
    "-when_c(300)+i8": lambda m: -when_c(m,300,1)+m.col("i"),
    "when_c(300).clip(0,5)+i8": lambda m: when_c(m,300,1).clip(0,5)+m.col("i"),
    "when_c(-3).clip(0,5)+u8": lambda m: when_c(m,-3,1).clip(0,5)+m.col("u"),
    "when_c(3,1)>i8": lambda m: when_c(m,3,1)>m.col("i"),
    "when_c(3.5,1)>f": lambda m: when_c(m,3.5,1)>m.col("f"),
    "when_c(2**40,1)==i8": lambda m: when_c(m,2**40,1)==m.col("i"),
    "f*when_c(1.0,-1.0)": lambda m: m.col("f")*when_c(m,1.0,-1.0),
    "-7//2+i8": lambda m: num(m,-7)//num(m,2)+m.col("i"),
    "-7%2+i8": lambda m: num(m,-7)%num(m,2)+m.col("i"),
    "2.0**3+f": lambda m: num(m,2.0)**num(m,3)+m.col("f"),
    "2**0.5+f": lambda m: num(m,2)**num(m,0.5)+m.col("f"),
    "3&1+i8": lambda m: (num(m,3)&num(m,1))+m.col("i"),
    "W.cast(f32)+i8": lambda m: when_c(m,3,1).cast(pl.Float32 if m is pl else "float32")+m.col("i"),
    "W.is_nan": lambda m: when_c(m,3.5,1).is_nan(),
    "f.fill_null(W)": lambda m: m.col("f").fill_null(when_c(m,3,1)),
    "i8.fill_null(when_c(300,1))": lambda m: m.col("i").fill_null(when_c(m,300,1)),
    "coalesce(i8,W)": lambda m: m.coalesce(m.col("i"),when_c(m,3,1)),
    "f.clip(0,1)*W": lambda m: m.col("f").clip(0,1)*when_c(m,2,1),
    "when_c(f,3)": lambda m: when_c(m,m.col("f"),3),
    "when_c(i,when_c(3,1))": lambda m: when_c(m,m.col("i"),when_c(m,3,1)),
    "when_c(i,when_c(300,1))": lambda m: when_c(m,m.col("i"),when_c(m,300,1)),
    "when_c(3,1)-lit(True)": lambda m: when_c(m,3,1)-m.col("b"),
    "when_c(3.5,1).fill_nan(f)": lambda m: when_c(m,3.5,1).fill_nan(m.col("f")),
    "f.fill_nan(when_c(3.5,1))": lambda m: m.col("f").fill_nan(when_c(m,3.5,1)),
    "(when_c(3,1)+f).sum()": lambda m: (when_c(m,3,1)+m.col("f")).sum(),
    "when_c(3,1).std()": lambda m: when_c(m,3,1).std(),
    # polars 2.2 types a dynamic integer expression by every number in it
    "when_c(1,300)+when_c(2,3)+i8": lambda m: (when_c(m,1,300)+when_c(m,2,3))+m.col("i"),
    "when_c(1,2)+when_c(300,3)+i8": lambda m: (when_c(m,1,2)+when_c(m,300,3))+m.col("i"),
    "when_c(3,1)-5+u8": lambda m: (when_c(m,3,1)-5)+m.col("u"),
    "when_c(3,1)+300+i8": lambda m: (when_c(m,3,1)+300)+m.col("i"),
    "when_c(1,300).sign()+i8": lambda m: when_c(m,1,300).sign()+m.col("i"),
    "300.sign()+i8": lambda m: num(m,300).sign()+m.col("i"),
    "when_c(1,300).sum()+i8": lambda m: when_c(m,1,300).sum()+m.col("i"),
    "when_c(1,300).fill_nan(2)+i8": lambda m: when_c(m,1,300).fill_nan(2)+m.col("i"),
    "i8.fill_null(when_c(1,300))": lambda m: m.col("i").fill_null(when_c(m,1,300)),
    "when_c(-1,300)+u8": lambda m: when_c(m,-1,300)+m.col("u"),
    "7.truncdiv(-2)+u8": lambda m: num(m,7).truncdiv(-2)+m.col("u"),
    "700//100+i8": lambda m: (num(m,700)//num(m,100))+m.col("i"),
    "300&1+i8": lambda m: (num(m,300)&num(m,1))+m.col("i"),
    "2**10+i8": lambda m: (num(m,2)**num(m,10))+m.col("i"),
    "(-3)**2+u8": lambda m: (num(m,-3)**num(m,2))+m.col("u"),
    "when_c(3,1)**300+i8": lambda m: (when_c(m,3,1)**300)+m.col("i"),
    "when_c(1,300).clip(0,5)+i8 keeps 300": lambda m: when_c(m,1,300).clip(0,5)+m.col("i"),
    # a clipped number is typed by the number (it was folded to the bound)
    "(-3).clip(0,5)+u8": lambda m: num(m,-3).clip(0,5)+m.col("u"),
    "300.clip(0,5)+i8": lambda m: num(m,300).clip(0,5)+m.col("i"),
    "2**40.clip(0,5)": lambda m: num(m,2**40).clip(0,5),
    "3.clip(5,1)": lambda m: num(m,3).clip(5,1),
    # powers: the base's type decides unless the exponent is a float
    "2**i64": lambda m: num(m, 2) ** m.col("i64"),
    "300**u8": lambda m: num(m, 300) ** m.col("u"),
    "2**i8+i8": lambda m: num(m, 2) ** m.col("i") + m.col("i"),
    "2**f": lambda m: num(m, 2) ** m.col("f"),
    "2.5**f": lambda m: num(m, 2.5) ** m.col("f"),
    "2.5**i8+f": lambda m: num(m, 2.5) ** m.col("i") + m.col("f"),
    "i8**2.5+f": lambda m: m.col("i") ** 2.5 + m.col("f"),
    "-(i8**2.5)+f": lambda m: -(m.col("i") ** 2.5) + m.col("f"),
    "i8**0.5+f": lambda m: m.col("i") ** 0.5 + m.col("f"),
    "i8**2": lambda m: m.col("i") ** 2,
    "f**2.5": lambda m: m.col("f") ** 2.5,
}  # fmt: skip


@pytest.mark.parametrize("case", list(DYNAMIC_CASES))
def test_dynamic_expressions_type_and_compute_like_polars(case: str) -> None:
    _same_or_both_refuse(DYNAMIC_FRAME, DYNAMIC_CASES[case])


def test_uint64_meeting_a_negative_number_in_when_and_coalesce_is_int64() -> None:
    from polars.testing import assert_frame_equal

    fits = pl.DataFrame({"i": [1, -2, 3], "u": pl.Series([1, None, 7], dtype=pl.UInt64)})
    cases = [
        lambda m: m.coalesce(m.col("u"), -3),
        lambda m: m.col("u").fill_null(-5),
        lambda m: m.when(m.col("i") > 0).then(-5).otherwise(m.col("u")),
        lambda m: m.when(m.col("i") > 0).then(m.col("u")).otherwise(-5),
        lambda m: m.coalesce(m.col("u"), m.lit(-4).clip(-1.5, 2.5), -3),
        # arithmetic: the same int64, with a dynamic expression as well as a bare number
        lambda m: m.col("u") + m.when(m.col("i") > 0).then(-5).otherwise(1),
        lambda m: m.when(m.col("i") > 0).then(-5).otherwise(1) * m.col("u"),
        lambda m: m.lit(-5) - m.col("u"),
    ]
    for build in cases:
        want = fits.select(z=build(pl))
        assert want.schema["z"] == pl.Int64
        assert_frame_equal(fits.gpu.select(z=build(cb)).compute(), want, check_exact=True)
    # a uint64 value beyond int64 cannot be converted: an error (as polars raises for these)
    too_big = pl.DataFrame({"u": pl.Series([1, 2**63 + 5], dtype=pl.UInt64)})
    with pytest.raises(pl.exceptions.InvalidOperationError):
        too_big.select(z=pl.col("u").fill_null(-5))
    with pytest.raises(cb.InvalidOperationError, match="strict cast to int64"):
        too_big.gpu.select(z=cb.col("u").fill_null(-5)).compute()


def test_uint64_divided_with_a_negative_number_is_converted_to_int64_first() -> None:
    # polars converts the uint64 side to int64 (null above it), as for `+ - * // %`
    from polars.testing import assert_frame_equal

    df = pl.DataFrame({"u": pl.Series([3, 2**63, None, 2**64 - 1], dtype=pl.UInt64)})
    for build in (lambda m: m.col("u") / -300, lambda m: m.lit(-300) / m.col("u"),
                  lambda m: m.col("u") / 300, lambda m: m.col("u") / -2.5,
                  lambda m: m.col("u") // -3):  # fmt: skip
        assert_frame_equal(df.gpu.select(z=build(cb)).compute(), df.select(z=build(pl)))


# -- & | ^ with Python booleans and bare nulls, and fill_nan, against polars -----------------
# polars refuses an integer next to a boolean literal (`int8 & True`: "& on Int8 and Boolean is
# not supported"), a bare null next to a Python integer (`lit(None) & 1`) and `fill_nan` of a
# boolean; colbridge must refuse each with its own error, and compute the rest as polars does.
LOGIC_OPS = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}
LOGIC_OTHERS = {
    "True": lambda m: True, "False": lambda m: False, "1": lambda m: 1, "-3": lambda m: -3,
    "None": lambda m: None, "lit(True)": lambda m: m.lit(True), "lit(2)": lambda m: m.lit(2),
    "lit(None)": lambda m: m.lit(None), "col(n)": lambda m: m.col("n"),
    "col(b)": lambda m: m.col("b"), "lit(1)+1": lambda m: m.lit(1) + 1,
}  # fmt: skip
FILL_VALUES = {
    "0": lambda m: 0, "0.5": lambda m: 0.5, "True": lambda m: True, "None": lambda m: None,
    "col(f)": lambda m: m.col("f"), "col(b)": lambda m: m.col("b"),
}  # fmt: skip


def _frame_of(dtype: DType, values: list[int | None]) -> pl.DataFrame:
    ints = [None if v is None else abs(v) % 2 if dtype is DType.BOOL else abs(v) % 100
            for v in values]  # fmt: skip
    return pl.DataFrame({
        "a": pl.Series(ints).cast(POLARS[dtype]),
        "b": pl.Series([None if v is None else v % 3 == 0 for v in values], dtype=pl.Boolean),
        "f": pl.Series([None if v is None else v / 2 if v % 4 else float("nan") for v in values],
                       dtype=pl.Float64),
        "n": pl.Series([None] * len(values), dtype=pl.Null),
    })  # fmt: skip


def _same_or_both_refuse(frame: pl.DataFrame, build) -> None:  # type: ignore[no-untyped-def]
    from polars.testing import assert_frame_equal

    try:
        want = frame.select(z=build(pl))
    except pl.exceptions.PolarsError:
        with pytest.raises(cb.ColbridgeError):
            frame.gpu.select(z=build(cb)).compute()
        return
    got = frame.gpu.select(z=build(cb)).compute()
    assert_frame_equal(got, want, check_exact=True)


@pytest.mark.parametrize("op", list(LOGIC_OPS))
@pytest.mark.parametrize("other", list(LOGIC_OTHERS))
@pytest.mark.parametrize("dtype", [DType.BOOL, DType.INT8, DType.INT64, DType.UINT8,
                                   DType.UINT64, DType.FLOAT64])  # fmt: skip
def test_logic_with_python_booleans_and_nulls_as_polars(op: str, other: str,
                                                        dtype: DType) -> None:  # fmt: skip
    for values in ([], [3, None, 6, 1, 0]):
        frame = _frame_of(dtype, values)
        for flip in (False, True):

            def build(m, flip=flip):  # type: ignore[no-untyped-def]
                a, b = m.col("a"), LOGIC_OTHERS[other](m)
                if flip:  # the literal on the left (a Python value through `lit`)
                    a, b = (b if not isinstance(b, (bool, int, type(None))) else m.lit(b)), a
                return LOGIC_OPS[op](a, b)

            _same_or_both_refuse(frame, build)


@pytest.mark.parametrize("other", ["True", "1", "None", "lit(None)", "col(n)", "lit(1)+1"])
def test_logic_of_a_null_and_python_values_as_polars(other: str) -> None:
    frame = _frame_of(DType.INT8, [1, None, 2])
    for op in LOGIC_OPS.values():
        _same_or_both_refuse(frame, lambda m, op=op: op(m.col("n"), LOGIC_OTHERS[other](m)))
        _same_or_both_refuse(frame, lambda m, op=op: op(m.lit(None), LOGIC_OTHERS[other](m)))


@settings(max_examples=30, deadline=None)
@given(
    dtype=st.sampled_from([DType.BOOL, DType.INT16, DType.UINT32, DType.FLOAT32, DType.FLOAT64]),
    values=st.lists(st.one_of(st.none(), st.integers(-50, 50)), max_size=8),
    fill=st.sampled_from(sorted(FILL_VALUES)),
    computed=st.booleans(),
)
def test_fill_nan_types_and_refusals_as_polars(dtype: DType, values: list[int | None],
                                               fill: str, computed: bool) -> None:  # fmt: skip
    frame = _frame_of(dtype, values)
    if dtype.is_float:  # some NaN in the column
        frame = frame.with_columns(pl.col("a") / pl.col("a"))

    def build(m):  # type: ignore[no-untyped-def]
        arg = m.col("a")
        if computed and dtype is DType.BOOL:
            arg = m.col("a") | m.col("b")  # a computed boolean
        elif computed:
            arg = m.col("a").abs()
        return arg.fill_nan(FILL_VALUES[fill](m))

    if dtype is not DType.BOOL:
        _same_or_both_refuse(frame, build)
    for boolean in (build, lambda m: m.lit(True).fill_nan(FILL_VALUES[fill](m))):
        if dtype is not DType.BOOL and boolean is build:
            continue
        # colbridge refuses a boolean's `fill_nan` always; polars evaluates `is_not_nan` on
        # it (and raises) unless the frame is empty or its optimiser folds
        # `lit(True).fill_nan(True)` away
        with pytest.raises(cb.ColbridgeError, match=r"fill_nan.*not defined for bool"):
            frame.gpu.select(z=boolean(cb)).compute()
        if len(frame) and fill != "True":
            with pytest.raises(pl.exceptions.InvalidOperationError, match="is_not_nan"):
                frame.select(z=boolean(pl))


@pytest.mark.parametrize("dtype", [DType.FLOAT64, DType.INT32])
def test_fill_nan_with_a_string_is_refused_by_name(dtype: DType) -> None:
    # polars makes the column strings; a string's code passed for the number 0.0 here
    frame = _frame_of(dtype, [1, None, 0])
    if dtype.is_float:
        frame = frame.with_columns(pl.col("a") / pl.col("a"))  # 1.0, null, NaN
    assert frame.select(pl.col("a").fill_nan("x")).dtypes == [pl.String]
    with pytest.raises(cb.SchemaError, match=r"fill_nan\(lit\('x'\)\)`: a string fill of a num"):
        frame.gpu.select(cb.col("a").fill_nan("x")).compute()
