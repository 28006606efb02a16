"""Bad input to the engine: a clear colbridge error, and the input frame unchanged."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.testing.bad_inputs import PointType


def _fingerprint(frame: pl.DataFrame | pd.DataFrame | pa.Table) -> str:
    if isinstance(frame, pa.Table):
        table = frame
    elif isinstance(frame, pl.DataFrame):
        table = frame.to_arrow()
    else:
        table = pa.Table.from_pandas(frame)
    digest = hashlib.sha256()
    for column in table.columns:
        for chunk in column.chunks:
            for buf in chunk.buffers():
                if buf is not None:
                    digest.update(buf.to_pybytes())
    return digest.hexdigest()


@pytest.fixture
def frame(constructor):  # type: ignore[no-untyped-def]
    """The same small frame, once per frame kind colbridge ingests.

    ``ok`` has no null: pandas' NumPy-backed kind would hold it as Python objects.
    """
    return constructor(pa.table({
        "price": pa.array([1.0, 2.0, None]),
        "qty": pa.array([1, 2, 3], pa.int64()),
        "name": pa.array(["x", "y", "z"]),
        "ok": pa.array([True, False, True]),
    }))  # fmt: skip


CASES = [
    ("unknown column", lambda q: q.with_columns(z=cb.col("prcie") * 2), cb.ColumnNotFoundError,
     r"(?s)column `prcie` not found.*did you mean.*'price'"),
    ("string in arithmetic", lambda q: q.with_columns(z=cb.col("name") + 1),
     cb.UnsupportedOperationError, r"`add` is not defined for strings"),
    ("duplicate outputs", lambda q: q.select(cb.col("price"), cb.col("qty").alias("price")),
     cb.DuplicateColumnError, r"output name `price` appears more than once"),
    ("float in logic", lambda q: q.with_columns(z=cb.col("price") & cb.col("ok")), cb.SchemaError,
     r"needs booleans"),
    ("non-bool filter", lambda q: q.filter(cb.col("qty") + 1), cb.SchemaError,
     r"filter predicate .* is int64, not boolean"),
    ("non-bool when", lambda q: q.with_columns(z=cb.when(cb.col("qty")).then(1).otherwise(2)),
     cb.SchemaError, r"`when` condition must be boolean"),
    ("negate unsigned", lambda q: q.with_columns(z=-cb.col("qty").cast("uint8")), cb.SchemaError,
     r"cannot negate unsigned uint8"),
    ("int128 needed", lambda q: q.with_columns(z=cb.col("qty") + cb.col("qty").cast("uint64")),
     cb.SchemaError, r"int64 and uint64 have no common type short of int128"),
    ("strict cast overflow", lambda q: q.with_columns(z=(cb.col("qty") * 1000).cast("int8")),
     cb.InvalidOperationError, r"strict cast to int8 failed.*strict=False"),
    ("negative int power", lambda q: q.with_columns(z=cb.col("qty") ** (cb.col("qty") - 5)),
     cb.InvalidOperationError, r"negative integer power"),
    ("huge literal", lambda q: q.with_columns(z=cb.col("qty") * cb.lit(2**70)),
     cb.SchemaError, r"(does not fit in int64|needs a 128-bit integer)"),
    ("clip bound out of range", lambda q: q.with_columns(z=cb.col("qty").cast("uint8").clip(-3, 5)),
     cb.SchemaError, r"bound -3 does not fit"),
    ("bad string", lambda q: q.eval("z = price +* 2"), cb.ExpressionSyntaxError, r"cannot parse"),
    ("float16 column", lambda q: q.with_columns(z=cb.col("price").cast("float16")),
     cb.UnsupportedTypeError, r"float16 is not computed"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "build", "error", "match"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_and_leaves_input_alone(frame, case, build, error, match) -> None:  # type: ignore[no-untyped-def]
    before = _fingerprint(frame)
    with pytest.raises(error, match=match) as info:
        build(cb.lazy(frame)).compute()
    assert _fingerprint(frame) == before
    # the error raised can be caught as the base class and as the builtin it refines
    raised = info.value
    assert isinstance(raised, cb.ColbridgeError)
    refined = [k for k in type(raised).__mro__[1:] if k.__module__ == "builtins"
               and k not in (Exception, BaseException, object)]  # fmt: skip
    assert refined, f"{type(raised).__name__} refines no builtin exception"
    assert all(isinstance(raised, k) for k in refined)


def test_and_or_on_expressions_explains_what_to_write() -> None:
    with pytest.raises(TypeError, match=r"use `&` for AND"):
        _ = cb.col("a") > 1 and cb.col("b") < 2
    with pytest.raises(TypeError, match=r"chained comparisons"):
        _ = 0 < cb.col("a") < 1


def test_unsupported_objects_and_options() -> None:
    with pytest.raises(cb.UnsupportedTypeError, match=r"cannot compute on a builtins.dict"):
        cb.lazy({"a": [1]}).compute()
    with pytest.raises(cb.UnsupportedTypeError, match=r"LazyFrame has no data yet"):
        cb.to_tensor(pl.LazyFrame({"a": [1]}), ["a"])
    df = pl.DataFrame({"a": [1.0]})
    with pytest.raises(cb.DeviceError, match=r"unknown device 'tpu'"):
        df.gpu.with_columns(b=cb.col("a")).compute(device="tpu")
    with pytest.raises(cb.DeviceError, match=r"unknown fallback policy"):
        df.gpu.with_columns(b=cb.col("a")).compute(fallback="maybe")
    with pytest.raises(cb.UnsupportedOperationError, match=r"round\(decimals=-1\)"):
        cb.col("a").round(-1)
    with pytest.raises(cb.UnsupportedOperationError, match=r"round\(decimals=1.5\)"):
        cb.col("a").round(1.5)  # type: ignore[arg-type]
    with pytest.raises(cb.UnsupportedOperationError, match=r"half_away_from_zero"):
        cb.col("a").round(1, mode="bankers")
    with pytest.raises(cb.SchemaError, match=r"round.*needs a numeric column"):
        pl.DataFrame({"a": [True]}).gpu.select(cb.col("a").round(2)).compute()
    with pytest.raises(cb.SchemaError, match="literals are bool, int, float, str, date"):
        cb.col("a") + object()
    with pytest.raises(cb.UnsupportedOperationError, match="`add` is not defined for strings"):
        pl.DataFrame({"a": [1]}).gpu.select(cb.col("a") + "x").compute()


def test_pandas_object_and_duplicate_columns() -> None:
    objects = pd.DataFrame({"a": [1, "x", None]}, dtype=object)
    with pytest.raises(cb.UnsupportedTypeError, match=r"column `a` has pandas dtype `object`"):
        objects.gpu.with_columns(b=cb.col("a") * 2).compute()
    dupes = pd.DataFrame(np.ones((2, 2)), columns=["a", "a"])
    with pytest.raises(cb.UnsupportedTypeError, match=r"duplicate column names \['a'\]"):
        dupes.gpu.with_columns(b=cb.col("a") * 2).compute()


def test_integer_division_by_zero_is_null_like_polars() -> None:
    df = pl.DataFrame({"a": [7, -7, 5], "b": [0, 2, -1]})
    out = df.gpu.with_columns(q=cb.col("a") // cb.col("b"), r=cb.col("a") % cb.col("b")).compute()
    assert out["q"].to_list() == [None, -4, -5]
    assert out["r"].to_list() == [None, 1, 0]


def test_a_column_of_a_users_extension_type_is_kept_and_refused_by_name() -> None:
    points = pa.ExtensionArray.from_storage(PointType(), pa.array([1, 2, 3]))
    table = pa.table({"p": points, "y": [1.0, 2.0, 3.0]})
    with pytest.raises(TypeError):
        hash(points.type)  # what the engine must not need
    # untouched, it is carried through every kind of plan as it is
    out = cb.lazy(table).with_columns(z=cb.col("y") * 2).compute()
    assert out.column("p").type == points.type
    assert out.column("p").chunk(0).storage.to_pylist() == [1, 2, 3]
    assert out.column("z").to_pylist() == [2.0, 4.0, 6.0]
    kept = cb.lazy(table).filter(cb.col("y") > 1).compute()
    assert kept.column("p").chunk(0).storage.to_pylist() == [2, 3]
    # read by an expression or as a key, it is refused by name
    for query in (lambda q: q.with_columns(z=cb.col("p") + 1),
                  lambda q: q.select(cb.col("p").max()),
                  lambda q: q.group_by("p").agg(cb.col("y").sum())):  # fmt: skip
        with pytest.raises(cb.UnsupportedTypeError, match=r"column `p` has type extension<"):
            query(cb.lazy(table)).compute()
