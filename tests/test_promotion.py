"""The promotion table, checked against polars for every pair of types and every operator."""

from __future__ import annotations

import itertools

import polars as pl
import pytest

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
