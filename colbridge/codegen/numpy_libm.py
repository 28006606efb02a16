"""The C library's math functions over NumPy arrays, for the NumPy tier's kernels.

NumPy's own vectorised ``exp``, ``log``, ``tanh``, ``pow``... differ from the C
library's in the last bit on a few rows in a hundred; the compiled kernels (and
polars) call the C library's, so the NumPy tier does too, row by row: float64
through `math`, float32 through the C library's float32 functions (``expf``...).
A domain or range error (`math` raises, C returns NaN or an infinity) takes NumPy's
IEEE value. Built once per process, when a NumPy kernel first calls one.

`DOUBLE` and `SINGLE` map a function's C name to its elementwise version; the
generated kernels convert the object arrays these return to their type.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["DOUBLE", "FUNCTIONS", "SINGLE"]

#: each function: its number of arguments and NumPy's version (the IEEE fallback)
_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "cbrt": (1, np.cbrt), "exp": (1, np.exp), "log": (1, np.log), "log10": (1, np.log10),
    "log1p": (1, np.log1p), "sin": (1, np.sin), "cos": (1, np.cos), "tan": (1, np.tan),
    "asin": (1, np.arcsin), "acos": (1, np.arccos), "atan": (1, np.arctan),
    "sinh": (1, np.sinh), "cosh": (1, np.cosh), "tanh": (1, np.tanh),
    "asinh": (1, np.arcsinh), "acosh": (1, np.arccosh), "atanh": (1, np.arctanh),
    "atan2": (2, np.arctan2), "pow": (2, np.power),
    "erf": (1, np.vectorize(math.erf, otypes=[np.float64])),  # NumPy has none
    "erfc": (1, np.vectorize(math.erfc, otypes=[np.float64])),
}  # fmt: skip


def _mapped(function: Callable[..., float], rowwise: Callable[..., Any],
            dtype: type[np.floating[Any]]) -> Callable[..., Any]:
    """``function`` of each row, through `map` over Python floats.

    Twice as fast as a ufunc of a Python function (`np.frompyfunc`) over the same
    C calls. Where a row raises (`math`'s domain and range errors), the whole call is
    made again by ``rowwise``, which takes each such row's IEEE value.
    """

    def call(*xs: Any) -> Any:
        arrays = np.broadcast_arrays(*(np.asarray(x) for x in xs))
        if arrays[0].ndim == 0:  # one value for all rows
            return rowwise(*xs)
        try:
            rows = map(function, *(a.ravel().tolist() for a in arrays))
            values = np.fromiter(rows, dtype, arrays[0].size)
        except (ValueError, OverflowError, ZeroDivisionError):
            return rowwise(*xs)
        return values.reshape(arrays[0].shape)

    return call


def _double(name: str, nin: int, fallback: Callable[..., Any]) -> Callable[..., Any]:
    function = getattr(math, name, None)
    if function is None:  # math.cbrt is Python 3.11's
        return fallback

    def one(*xs: float) -> float:
        try:
            return float(function(*xs))
        except (ValueError, OverflowError, ZeroDivisionError):
            return float(fallback(*xs))

    return _mapped(function, np.frompyfunc(one, nin, 1), np.float64)


def _single(library: Any, name: str, nin: int, fallback: Callable[..., Any]) -> Callable[..., Any]:
    function = getattr(library, name + "f", None) if library is not None else None
    if function is None:  # no C library found: float64's, rounded by the caller
        return lambda *xs: fallback(*(np.asarray(x, np.float64) for x in xs))
    function.restype = ctypes.c_float
    function.argtypes = [ctypes.c_float] * nin
    return _mapped(function, np.frompyfunc(function, nin, 1), np.float32)


def _c_library() -> Any:
    # by its usual name first: `find_library` runs a subprocess to look for it
    try:
        return ctypes.CDLL("libm.so.6")
    except OSError:
        pass
    try:
        return ctypes.CDLL(ctypes.util.find_library("m"))
    except (OSError, TypeError):
        return None


_LIBRARY = _c_library()
#: the C names of the functions this module gives (`numpy_eval` calls them for these)
FUNCTIONS = frozenset(_FUNCTIONS)
DOUBLE = {name: _double(name, nin, f) for name, (nin, f) in _FUNCTIONS.items()}
SINGLE = {name: _single(_LIBRARY, name, nin, f) for name, (nin, f) in _FUNCTIONS.items()}
