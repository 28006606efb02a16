"""Testing: compare colbridge with polars (the oracle), with a tolerance per operation.

A *spec* is a function of a module: ``lambda m: m.col("a") * 2`` builds the
expression with ``m = colbridge`` and the same expression with ``m = polars``,
since colbridge's expression API uses polars' names. Steps are given the same
way: ``lambda m, q: q.with_columns(z=...)``.

Comparisons are exact unless a `Tolerance` says otherwise: equal types,
equal validity, integers and booleans equal, floats equal bit for bit except
that any NaN equals any NaN and −0.0 equals 0.0 (as in polars' own
``assert_frame_equal``: polars drops ``x + 0.0`` and keeps a −0.0 that IEEE
addition turns into 0.0; where the sign of a zero matters, a division by it,
the ±inf it gives is compared by kind). A tolerance only ever widens
the comparison of two *finite* floats: a NaN must meet a NaN and an infinity
the infinity of the same sign, whatever the tolerance.

Which operations get a tolerance is decided in one place, `TOLERANCES`
(rendered in docs/reliability.md): libm functions a number of ULPs, float
sums/means/variances a bound from the summation order, everything else exact.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = [
    "ALL_FRAME_KINDS",
    "EXACT",
    "FRAME_KINDS",
    "LIBM_OPS",
    "LIBM_ULPS",
    "SCALAR_DIVISION_ULPS",
    "SUMMATION_OPS",
    "TOLERANCES",
    "Tolerance",
    "as_arrow",
    "as_polars",
    "assert_arrays_match",
    "assert_same_as_polars",
    "assert_stream_and_dask_as_polars",
    "column_mismatch",
    "frame_mismatch",
    "summation_bound",
    "to_kind",
    "tolerance_table_markdown",
    "ulp_distance",
]

#: The frame kinds a differential check runs on by default (pandas: ArrowDtype, nulls kept).
FRAME_KINDS = ("polars", "pyarrow", "pandas")
#: Every frame kind colbridge ingests.
ALL_FRAME_KINDS = ("pyarrow", "polars", "pandas-numpy", "pandas-nullable", "pandas-arrow")

Steps = Callable[[Any, Any], Any]


# -- tolerances -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tolerance:
    """How far a finite float result may be from the oracle's.

    Two finite values are close when they are equal bit for bit, or within
    ``ulps`` units in the last place, or when ``|got - want| <= rtol *
    max(|got|, |want|)``, or ``|got - want| <= atol``. All zero (`EXACT`) means
    bit for bit. ``atol`` is a separate figure (a bound of the operation's
    error in the data's own scale), never a copy of ``rtol``.
    """

    ulps: int = 0
    rtol: float = 0.0
    atol: float = 0.0

    @property
    def exact(self) -> bool:
        """True when nothing but bit-for-bit equality is accepted."""
        return self.ulps == 0 and self.rtol == 0.0 and self.atol == 0.0


EXACT = Tolerance()

#: Functions computed by a libm (or CUDA's math library): the last bits may differ.
LIBM_OPS = frozenset({
    "exp", "log", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "cbrt", "**",
})  # fmt: skip
#: Allowed ULP distance of one libm function's result, by float width in bits.
LIBM_ULPS: dict[int, int] = {64: 4, 32: 4}
#: ULP distance of a division by a scalar from polars' multiplication by its reciprocal
#: (each of 1/c and x * (1/c) rounds once: within 1.5 ULPs of x / c, so 2 apart at most).
SCALAR_DIVISION_ULPS = 2
#: Reductions whose float result depends on the order of the additions.
SUMMATION_OPS = frozenset({"sum", "mean", "std", "var"})
#: Multiplier of the summation bound (see `summation_bound`).
SUMMATION_FACTOR = 4.0

#: The documented table: operation family -> how its float results are compared.
TOLERANCES: tuple[tuple[str, str], ...] = (
    ("`+ - * /`, `sqrt`, `//`, `%`, `abs`, `neg`, `sign`, `floor`, `ceil`, `round` "
     "(any decimals and mode)", "exact (bit for bit; −0.0 = 0.0, NaN = NaN)"),
    ("comparisons, `&` `|` `^` `~`, `is_*` predicates", "exact"),
    ("casts (strict and not), integer operations of every kind (`**` with an integer "
     "result too)", "exact"),
    ("`when`/`then`/`otherwise`, `coalesce`, `fill_null`, `fill_nan`, `clip`", "exact"),
    ("`min`, `max`, `count`, `null_count`; integer `sum`", "exact"),
    ("float `/`, `//`, `%` by a scalar (a literal or a reduction), against polars",
     "exact: polars multiplies by the reciprocal of a scalar (`x * (1 / c)`, "
     "`floor(x * (1 / c))`, `x - c * floor(x * (1 / c))`) and so does colbridge; at most "
     f"{SCALAR_DIVISION_ULPS} ULPs from polars' true division of frames of up to three rows "
     "(docs/semantics.md)"),
    ("libm functions: `exp log log10 log1p sin cos tan arcsin arccos arctan sinh cosh tanh "
     "cbrt`, `**` with a float result",
     f"at most {LIBM_ULPS[64]} ULPs (float64) / {LIBM_ULPS[32]} ULPs (float32) from polars"),
    ("float `sum`, `mean`, `std`, `var` (any ddof); `mean`, `std`, `var` of integers",
     f"|got − want| ≤ {SUMMATION_FACTOR:g} · n · ε · S, with S = Σ|x| (sum), Σ|x|/n (mean), "
     "Σx²/(n − ddof) (var), and for std the var bound divided by (got + want)"),
    ("any result NaN, +inf or −inf", "the other side must be the same kind, whatever the "
     "operation"),
    ("float32 results", "the same rules: float32 loosens no exact operation"),
)


def tolerance_table_markdown() -> str:
    """`TOLERANCES` as a Markdown table (docs/reliability.md)."""
    lines = ["| operations | float results compared |", "| --- | --- |"]
    lines += [f"| {_cell(ops)} | {_cell(rule)} |" for ops, rule in TOLERANCES]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Text for a Markdown table cell (a bare ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def summation_bound(op: str, values: np.ndarray[Any, Any], bits: int, ddof: int = 1) -> float:
    """An absolute bound of the difference two summation orders can make to ``op(values)``.

    ``values`` are the valid inputs of the reduction, ``bits`` the width of the
    result (64 or 32): each side is within n·ε·S of the exact value for any
    order of the additions (ε = 2⁻⁵² or 2⁻²³), so their difference is within
    2·n·ε·S; `SUMMATION_FACTOR` leaves room for the final division. For
    ``std`` the caller divides the ``var`` bound by ``got + want``.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n == 0:
        return 0.0
    eps = 2.0**-52 if bits == 64 else 2.0**-23
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "sum":
            scale = float(np.sum(np.abs(x)))
        elif op == "mean":
            scale = float(np.sum(np.abs(x))) / n
        else:
            scale = float(np.sum(x * x)) / max(n - ddof, 1)
    return SUMMATION_FACTOR * n * eps * scale


# -- comparing columns ------------------------------------------------------------------------
def _ordered(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Float bit patterns as integers whose difference is the ULP distance."""
    if x.dtype.itemsize == 4:
        as_int = x.view(np.int32).astype(np.int64)
        out: np.ndarray[Any, Any] = np.where(as_int < 0, -(2**31) - as_int, as_int)
        return out
    big = x.view(np.int64).astype(object)
    return np.array([(-(2**63) - v) if v < 0 else v for v in big], dtype=object)


def ulp_distance(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """ULP distance between equally typed float arrays (NaN vs NaN is 0, ±0 are 0 apart)."""
    dist = np.abs(np.asarray(_ordered(x) - _ordered(y), dtype=object))
    out: np.ndarray[Any, Any] = np.where(np.isnan(x) & np.isnan(y), 0, dist)
    return out


def _kind(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """0 finite, 1 NaN, 2 +inf, 3 -inf."""
    return np.select([np.isnan(x), np.isposinf(x), np.isneginf(x)], [1, 2, 3], 0)


def _float_close(g: np.ndarray[Any, Any], w: np.ndarray[Any, Any], tol: Tolerance
                 ) -> np.ndarray[Any, Any]:  # fmt: skip
    utype = np.uint32 if g.dtype.itemsize == 4 else np.uint64
    kinds_g, kinds_w = _kind(g), _kind(w)
    same = (kinds_g == kinds_w) & (kinds_g != 0)  # NaN meets NaN, inf the same inf
    finite = (kinds_g == 0) & (kinds_w == 0)
    close: np.ndarray[Any, Any] = same | (
        finite & ((g.view(utype) == w.view(utype)) | ((g == 0) & (w == 0)))
    )
    if tol.exact:
        return close
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        if tol.ulps:
            near = np.zeros(g.shape, dtype=bool)
            idx = np.flatnonzero(finite & ~close)
            if idx.size:
                near[idx] = ulp_distance(g[idx], w[idx]) <= tol.ulps
            close |= finite & near
        if tol.rtol:
            scale = np.maximum(np.abs(g), np.abs(w)).astype(np.float64)
            close |= finite & (diff <= tol.rtol * scale)
        if tol.atol:
            close |= finite & (diff <= tol.atol)
    return close


def _combined(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    return array


def column_mismatch(
    got: pa.Array | pa.ChunkedArray,
    want: pa.Array | pa.ChunkedArray,
    tolerance: Tolerance = EXACT,
) -> str | None:
    """How ``got`` differs from ``want`` (type, length, validity, values), or None."""
    got, want = _combined(got), _combined(want)
    if got.type != want.type:
        return f"type {got.type} != {want.type}"
    if len(got) != len(want):
        return f"length {len(got)} != {len(want)}"
    gv = np.asarray(got.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    wv = np.asarray(want.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if not np.array_equal(gv, wv):
        rows = np.flatnonzero(gv != wv)
        return f"validity differs at rows {rows[:10].tolist()}"
    if not gv.any():
        return None
    keep = pa.array(gv)
    if pa.types.is_temporal(got.type):
        # dates, times, datetimes and durations: their stored integers, compared exactly
        # (NumPy's datetime conversion refuses some nanosecond values)
        storage = pa.int64() if got.type.bit_width == 64 else pa.int32()
        got, want = got.view(storage), want.view(storage)
    g = got.filter(keep).to_numpy(zero_copy_only=False)
    w = want.filter(keep).to_numpy(zero_copy_only=False)
    if g.dtype.kind == "f" and w.dtype.kind == "f":
        bad = np.flatnonzero(~_float_close(g, w, tolerance))
    else:
        bad = np.flatnonzero(g != w)
    if bad.size == 0:
        return None
    rows = np.flatnonzero(gv)[bad]
    return (
        f"values differ at rows {rows[:5].tolist()} ({tolerance}): "
        f"got {g[bad][:5].tolist()!r} want {w[bad][:5].tolist()!r}"
    )


def assert_arrays_match(
    got: pa.Array | pa.ChunkedArray,
    want: pa.Array | pa.ChunkedArray,
    *,
    what: str,
    ulps: int = 0,
    rtol: float = 0.0,
    atol: float = 0.0,
) -> None:
    """Equal type, equal validity, equal valid values (bit for bit unless a tolerance allows)."""
    problem = column_mismatch(got, want, Tolerance(ulps=ulps, rtol=rtol, atol=atol))
    assert problem is None, f"{what}: {problem}"


def frame_mismatch(
    got: Any, expected: Any, tolerance: Tolerance | Mapping[str, Tolerance] = EXACT
) -> str | None:
    """How two polars frames differ (column names, then each column), or None."""
    if got.columns != expected.columns:
        return f"columns {got.columns} != {expected.columns}"
    g, w = got.to_arrow(), expected.to_arrow()
    for name in got.columns:
        tol = tolerance.get(name, EXACT) if isinstance(tolerance, Mapping) else tolerance
        problem = column_mismatch(g.column(name), w.column(name), tol)
        if problem is not None:
            return f"column `{name}`: {problem}"
    return None


# -- running both -----------------------------------------------------------------------------
def to_kind(table: pa.Table, kind: str) -> Any:
    """The same data as a frame of ``kind`` (one of `ALL_FRAME_KINDS`; ``pandas`` = ArrowDtype).

    ``pandas-numpy`` is pandas' default conversion (integers with nulls become
    float64 with NaN); ``pandas-nullable`` uses the masked dtypes (``Int64``,
    ``Float64``, ``boolean``) where pandas has one.
    """
    if kind == "pyarrow":
        return table
    if kind == "polars":
        import polars as pl

        return pl.from_arrow(table, rechunk=False)
    import pandas as pd

    if kind in ("pandas", "pandas-arrow"):
        return table.to_pandas(types_mapper=pd.ArrowDtype)
    if kind == "pandas-numpy":
        return table.to_pandas()
    if kind == "pandas-nullable":
        from colbridge.testing.data import _masked

        return table.to_pandas(types_mapper=_masked)
    msg = f"unknown frame kind {kind!r}; use one of {ALL_FRAME_KINDS}"
    raise ValueError(msg)


def as_arrow(result: Any) -> pa.Table:
    """A colbridge result as a pyarrow Table, its Arrow types as the frame holds them."""
    if isinstance(result, pa.Table):
        return result
    import polars as pl

    if isinstance(result, pl.DataFrame):
        return result.to_arrow()
    return pa.Table.from_pandas(result, preserve_index=False)


def as_polars(result: Any) -> Any:
    """A colbridge result of any frame kind (or a Series) as a polars DataFrame."""
    import polars as pl

    if isinstance(result, pa.Table):
        return pl.from_arrow(result)
    if isinstance(result, (pl.DataFrame, pl.Series)):
        return result if isinstance(result, pl.DataFrame) else result.to_frame()
    import pandas as pd

    if isinstance(result, pd.Series):
        result = result.to_frame()
    return pl.from_arrow(pa.Table.from_pandas(result, preserve_index=False))


def assert_same_as_polars(
    table: pa.Table,
    steps: Steps,
    *,
    kinds: Sequence[str] = FRAME_KINDS,
    tolerance: Tolerance | Mapping[str, Tolerance] = EXACT,
    rtol: float | None = None,
    ulps: int = 0,
    device: str = "cpu",
) -> None:
    """Check that colbridge's result equals polars' for every frame kind in ``kinds``.

    If polars raises, colbridge must raise a `ColbridgeError` too. Results are
    compared exactly (see the module docstring) unless ``tolerance`` (one for
    every column, or one per column name) or the shorthands ``rtol``/``ulps``
    (for every float column) allow more.

    The oracle is polars' lazy engine. Where it disagrees with polars' eager
    engine on the same steps (polars 2.1 types ``0.5 / f32`` as Float64 when a
    constant filter follows, Float32 otherwise), colbridge may match either.
    """
    import polars as pl

    import colbridge as cb

    if rtol is not None or ulps:
        tolerance = Tolerance(ulps=ulps, rtol=rtol or 0.0)
    try:
        source = pl.DataFrame(pl.from_arrow(table, rechunk=False))
        expected = steps(pl, source.lazy()).collect()
        polars_error: Exception | None = None
    except pl.exceptions.PolarsError as exc:
        expected, polars_error = None, exc
    for kind in kinds:
        frame = to_kind(table, kind)
        if polars_error is not None:
            try:
                steps(cb, cb.lazy(frame)).compute(device=device)
            except cb.ColbridgeError:
                continue
            msg = f"polars raised {polars_error!r} but colbridge did not ({kind} input)"
            raise AssertionError(msg)
        got = as_polars(steps(cb, cb.lazy(frame)).compute(device=device))
        mismatch = frame_mismatch(got, expected, tolerance)
        if mismatch is not None:
            eager = _eager_polars(steps, source)
            if (
                eager is not None
                and frame_mismatch(eager, expected, tolerance) is not None
                and frame_mismatch(got, eager, tolerance) is None
            ):
                continue  # polars' engines disagree with each other; colbridge matches eager
            msg = (
                f"{kind} input: colbridge differs from polars\n{mismatch}\n"
                f"colbridge:\n{got}\npolars:\n{expected}"
            )
            raise AssertionError(msg) from None


def assert_stream_and_dask_as_polars(table: pa.Table, columns: Callable[[Any], dict[str, Any]],
                                     folder: Any) -> None:
    """``with_columns(**columns(lib))`` streamed and on Dask partitions, as polars computes it.

    ``table`` is written as Parquet and streamed back in batches of 37 rows (each
    numbering its strings its own way); the same steps run by ``cb.dask.apply``
    on an Arrow-backed pandas frame of three partitions, each column compared with
    polars' (pandas' missing values as None). ``folder`` holds the file.

    >>> import polars as pl, colbridge as cb, tempfile
    >>> t = pa.table({"x": [1, None, 3]})
    >>> assert_stream_and_dask_as_polars(t, lambda m: {"y": m.col("x") * 2},
    ...                                  tempfile.mkdtemp())
    """
    import dask.dataframe as dd
    import pandas as pd
    import polars as pl
    import pyarrow.parquet as pq
    from polars.testing import assert_frame_equal

    import colbridge as cb

    path = os.path.join(str(folder), "stream.parquet")
    pq.write_table(table, path)
    want = pl.DataFrame(pl.from_arrow(table)).with_columns(**columns(pl))
    streamed = cb.lazy(pl.scan_parquet(path), batch_rows=37).with_columns(
        **columns(cb)).compute()  # fmt: skip
    assert_frame_equal(as_polars(streamed), want)
    pdf = table.to_pandas(types_mapper=pd.ArrowDtype)
    parts = dd.from_pandas(pdf, npartitions=3)  # type: ignore[no-untyped-call]
    out = cb.dask.apply(cb.lazy(pdf).with_columns(**columns(cb)), parts).compute()
    for name in columns(pl):
        got = [None if pd.isna(v) else v for v in out[name]]
        assert got == want[name].to_list(), name


def _eager_polars(steps: Steps, source: Any) -> Any:
    """The steps run by polars' eager engine, or None when they raise there."""
    import polars as pl

    try:
        result = steps(pl, source)
    except pl.exceptions.PolarsError:
        return None
    return result if isinstance(result, pl.DataFrame) else None


def std_bound(var_bound: float, got: float, want: float) -> float:
    """The bound of a std from its variance's bound: |√a − √b| = |a − b| / (√a + √b)."""
    total = got + want
    if total > 0 and math.isfinite(total):
        return var_bound / total
    return math.sqrt(var_bound)
