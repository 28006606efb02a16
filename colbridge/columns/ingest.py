"""Ingest: any column-like object → an Arrow ChunkedArray, without copying where Arrow allows."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import UnsupportedTypeError

__all__ = ["column_to_arrow", "source_kind"]


def source_kind(obj: Any) -> str:
    """Name the library an object comes from: ``pyarrow``, ``polars``, ``pandas``, ``numpy``.

    Never imports pandas or polars to find out.
    """
    if isinstance(obj, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return "pyarrow"
    if isinstance(obj, np.ndarray):
        return "numpy"
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(obj, (pl.Series, pl.DataFrame)):
        return "polars"
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, (pd.Series, pd.DataFrame)):
        return "pandas"
    if hasattr(obj, "__arrow_c_stream__") or hasattr(obj, "__arrow_c_array__"):
        return "arrow-capsule"
    return type(obj).__module__.split(".")[0]


def column_to_arrow(obj: Any, name: str | None = None) -> pa.ChunkedArray:
    """Return the Arrow data of one column, as a ChunkedArray.

    Zero-copy for pyarrow arrays, polars Series (every chunk kept as it is),
    NumPy arrays and NumPy-backed or Arrow-backed pandas Series. A
    nullable-masked pandas Series (``Int64``, ``Float64``, ``boolean``) keeps its
    values buffer; only its byte mask is packed into an Arrow validity bitmap.

    Raises
    ------
    UnsupportedTypeError
        For objects that are not columns, and for pandas ``object`` columns,
        whose values are Python objects with no Arrow buffer behind them.
    """
    if isinstance(obj, pa.ChunkedArray):
        return obj
    if isinstance(obj, pa.Array):
        return pa.chunked_array([obj], type=obj.type)
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(obj, pl.Series):
        # The C stream interface hands over polars' own chunks, one per chunk.
        return pa.chunked_array(obj)
    label = f"column `{name}`" if name is not None else "the column"
    kind = source_kind(obj)
    if kind == "polars":
        # The C stream interface hands over polars' own chunks, one per chunk.
        return pa.chunked_array(obj)
    if kind == "numpy":
        return _numpy_to_arrow(obj, label)
    if kind == "pandas":
        return _pandas_to_arrow(obj, label)
    if hasattr(obj, "__arrow_c_stream__"):
        return pa.chunked_array(obj)
    if hasattr(obj, "__arrow_c_array__"):
        array = pa.array(obj)
        return pa.chunked_array([array], type=array.type)
    msg = (
        f"{label} is a {type(obj).__module__}.{type(obj).__name__}, which is not a column; "
        "pass a pyarrow Array/ChunkedArray, a polars or pandas Series, a NumPy array, "
        "or an object with `__arrow_c_array__` / `__arrow_c_stream__`"
    )
    raise UnsupportedTypeError(msg)


def _numpy_to_arrow(array: np.ndarray, label: str) -> pa.ChunkedArray:
    if array.dtype == object:
        msg = (
            f"{label} has NumPy dtype `object` (Python objects, no typed buffer); "
            "convert it to a typed array first, e.g. `np.asarray(x, dtype='float64')`"
        )
        raise UnsupportedTypeError(msg)
    if array.ndim != 1:
        msg = (
            f"{label} is a {array.ndim}-D NumPy array; a column is 1-D "
            "(pass a 2-D array as a FixedSizeList: `pa.FixedSizeListArray.from_arrays`)"
        )
        raise UnsupportedTypeError(msg)
    # pa.array refuses strided input without copying; say so rather than copy silently.
    return pa.chunked_array([pa.array(array)])


def _pandas_to_arrow(series: Any, label: str) -> pa.ChunkedArray:
    if series.dtype == object:
        msg = (
            f"{label} has pandas dtype `object` (Python objects, no typed buffer); "
            "convert it first, e.g. `s.astype('float64')` or "
            "`s.astype(pd.ArrowDtype(pa.float64()))`"
        )
        raise UnsupportedTypeError(msg)
    values = series.array
    if getattr(series.dtype, "name", "") == "category":
        # pandas categories: the codes become the dictionary indices (-1 marks a null)
        result = pa.array(values, from_pandas=True)
        return pa.chunked_array([result], type=result.type)
    arrow_array = getattr(values, "__arrow_array__", None)
    # ArrowDtype and masked extension arrays know their own Arrow form; for
    # NumPy-backed data NaN stays a value (from_pandas=False), as Arrow and polars keep it.
    result = arrow_array() if arrow_array is not None else pa.array(series.to_numpy(copy=False))
    if isinstance(result, pa.Array):
        return pa.chunked_array([result], type=result.type)
    return result
