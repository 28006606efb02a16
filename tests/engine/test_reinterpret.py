"""``reinterpret(signed=...)`` / ``(dtype=...)`` against polars: an integer's bits as its twin.

Generated columns of every integer type (the type's extremes, -1, 0, nulls, in two
chunks) read as the signed and the unsigned type of their width, by ``signed`` and by
``dtype``, then used in arithmetic; floats left as they are; every kernel tier (the
CUDA code path on the host); refusals as polars refuses (other widths, dates, a
Python number, both or neither parameter) and float bits, which polars reads and
colbridge refuses by name; the string language.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import ColbridgeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier

_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_TWIN = {"int8": "uint8", "int16": "uint16", "int32": "uint32", "int64": "uint64"}
_TWIN |= {v: k for k, v in _TWIN.items()}


def _column(kind: str, data: st.DataObject) -> pa.ChunkedArray:
    info = np.iinfo(kind)
    edges = st.sampled_from([int(info.min), int(info.max), 0, 1, int(info.max) // 2 + 1]
                            + ([-1] if info.min < 0 else []))  # fmt: skip
    values = data.draw(st.lists(st.one_of(st.integers(int(info.min), int(info.max)), edges,
                                          st.none()), max_size=30))  # fmt: skip
    column = pa.array(values, getattr(pa, kind)())
    cut = data.draw(st.integers(0, len(values)))
    return pa.chunked_array([column[:cut], column[cut:]], column.type)


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(_INTS), data=st.data())
def test_as_polars(kind: str, data: st.DataObject) -> None:
    table = pa.table({"x": _column(kind, data)})

    def steps(m: Any, q: Any) -> Any:
        x = m.col("x")
        return q.select(signed=x.reinterpret(signed=True), unsigned=x.reinterpret(signed=False),
                        twin=x.reinterpret(dtype=_polars_type(_TWIN[kind])),
                        same=x.reinterpret(dtype=_polars_type(kind)),
                        then=x.reinterpret(signed=kind.startswith("u")) // 3)  # fmt: skip

    assert_same_as_polars(table, steps)


def _polars_type(kind: str) -> Any:
    return getattr(pl, kind.capitalize().replace("Uint", "UInt"))


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    table = pa.table({"a": pa.array([-(2**63), -1, None, 0, 2**63 - 1], pa.int64()),
                      "b": pa.array([255, 128, None, 0, 1], pa.uint8()),
                      "f": pa.array([1.5, None, -0.0, float("nan"), 2.0], pa.float32())})

    def exprs(m: Any) -> dict[str, Any]:
        return {"a": m.col("a").reinterpret(signed=False), "b": m.col("b").reinterpret(signed=True),
                "f": m.col("f").reinterpret(signed=False)}  # fmt: skip

    got = compute_on_tier(cb.lazy(table).select(**exprs(cb)), tier)
    assert pl.from_arrow(got).equals(pl.from_arrow(table).select(**exprs(pl)))


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.col("a").reinterpret(dtype=pl.Int64),  # another width
        lambda m: m.col("d").reinterpret(signed=True),  # a date
        lambda m: m.col("ok").reinterpret(signed=True),  # booleans
        lambda m: m.lit(-1).reinterpret(signed=False),  # a Python number alone
    ],
)
def test_refusals_as_polars(make: Any) -> None:
    import datetime as dt

    df = pl.DataFrame({"a": pl.Series([-1], dtype=pl.Int32), "d": [dt.date(2024, 1, 1)],
                       "ok": [True]})  # fmt: skip
    with pytest.raises(Exception):  # noqa: B017, PT011 - polars' own error, any class
        df.select(make(pl))
    with pytest.raises(ColbridgeError, match="cannot reinterpret"):
        df.gpu.select(make(cb)).compute()


def test_float_bits_are_refused_by_name() -> None:
    # polars reads an Int32's bits as a Float32 (-1 is NaN); colbridge's kernels have no
    # bit cast between integers and floats, so it refuses with the way round
    df = pl.DataFrame({"a": pl.Series([-1], dtype=pl.Int32)})
    assert df.select(pl.col("a").reinterpret(dtype=pl.Float32)).dtypes == [pl.Float32]
    with pytest.raises(ColbridgeError, match="reinterpret float bits in polars"):
        df.gpu.select(cb.col("a").reinterpret(dtype=pl.Float32)).compute()


def test_one_parameter_and_the_string_language() -> None:
    with pytest.raises(ColbridgeError, match="exactly one of `signed` and `dtype`"):
        cb.col("a").reinterpret()
    with pytest.raises(ColbridgeError, match="exactly one of `signed` and `dtype`"):
        cb.col("a").reinterpret(signed=True, dtype="int8")
    df = pl.DataFrame({"a": pl.Series([-1, 3], dtype=pl.Int16)})
    got = cb.lazy(df).eval("u = a.reinterpret(signed=False)\nv = reinterpret(a, dtype='uint16')")
    want = df.with_columns(u=pl.col("a").reinterpret(signed=False),
                           v=pl.col("a").reinterpret(dtype=pl.UInt16))  # fmt: skip
    assert got.compute().equals(want)
