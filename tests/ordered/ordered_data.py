"""Generated frames for the ordered-expression tests: every numeric type, nulls in every position.

Values are kept in ranges where no ordered operation overflows its polars result
type (``diff`` of an ``int8`` stays ``int8``, ``cum_sum`` of an ``int32`` stays
``int32``), so every integer result is compared exactly. Floats carry NaN, ±inf
and ±0.0. ``p`` columns (values near ±1) feed ``cum_prod``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from colbridge.testing.asserts import EXACT, Tolerance

#: Every numeric type an ordered operation takes, by its pyarrow name.
NUMERIC_DTYPES = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
    "float64", "bool",
)  # fmt: skip
INT_DTYPES = tuple(d for d in NUMERIC_DTYPES if "int" in d)
FLOAT_DTYPES = ("float32", "float64")

#: Where the nulls of a column are.
NULL_PATTERNS = ("none", "random", "leading", "trailing", "runs", "alternate", "all")

#: Largest magnitude of generated integers, by type: sums of 100 rows and differences fit.
_INT_LIMIT = {
    "int8": 60, "int16": 16_000, "int32": 10_000_000, "int64": 10**15,
    "uint8": 120, "uint16": 30_000, "uint32": 20_000_000, "uint64": 10**15,
}  # fmt: skip
_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])

#: Float results whose value depends on the order of the additions (or multiplications)
#: are compared within these; everything else exactly. The absolute part covers results
#: near zero after cancellation (data of scale ~30, at most a few hundred rows).
F64_TOL = Tolerance(rtol=1e-9, atol=1e-9)
F32_TOL = Tolerance(rtol=1e-5, atol=1e-3)


def null_mask(pattern: str, n: int, rng: np.random.Generator) -> np.ndarray | None:
    """A validity mask (True = null) of ``n`` rows following ``pattern`` (one of NULL_PATTERNS)."""
    if pattern == "none" or n == 0:
        return None
    mask = np.zeros(n, dtype=bool)
    if pattern == "random":
        mask = rng.random(n) < 0.25
    elif pattern == "leading":
        mask[: max(1, n // 3)] = True
    elif pattern == "trailing":
        mask[n - max(1, n // 3):] = True
    elif pattern == "runs":
        # runs of 1..5 nulls between runs of 1..5 values, the first row null
        pos, null = 0, True
        while pos < n:
            length = int(rng.integers(1, 6))
            mask[pos: pos + length] = null
            pos, null = pos + length, not null
    elif pattern == "alternate":
        mask[::2] = True
    elif pattern == "all":
        mask[:] = True
    else:
        msg = f"unknown null pattern {pattern!r}"
        raise ValueError(msg)
    return mask


def numeric_values(dtype: str, n: int, rng: np.random.Generator, *, specials: float = 0.1,
                   small: bool = False) -> np.ndarray:  # fmt: skip
    """``n`` values of ``dtype``; floats with NaN/±inf/±0 at rate ``specials``.

    ``small`` draws values whose running product stays representable (for ``cum_prod``):
    integers in {-2..2} mostly ±1, floats near ±1.
    """
    if dtype == "bool":
        return rng.integers(0, 2, size=n).astype(bool)
    if dtype in FLOAT_DTYPES:
        if small:
            x = rng.choice(np.array([1.0, -1.0, 0.5, 2.0, 1.25, -0.75]), size=n)
        else:
            x = np.round(rng.normal(scale=30.0, size=n), 3)
        if specials > 0:
            hit = rng.random(n) < specials
            x[hit] = rng.choice(_SPECIALS, size=int(hit.sum()))
        return x.astype(dtype)
    unsigned = dtype.startswith("u")
    if small:
        pool = np.array([1, 1, 1, 2, 0]) if unsigned else np.array([1, -1, 1, -1, 2, -2, 0])
        return rng.choice(pool, size=n).astype(dtype)
    limit = _INT_LIMIT[dtype]
    low = 0 if unsigned else -limit
    return rng.integers(low, limit + 1, size=n).astype(dtype)


def column(dtype: str, n: int, rng: np.random.Generator, *, nulls: str = "random",
           specials: float = 0.1, small: bool = False) -> pa.Array:  # fmt: skip
    """One pyarrow column of ``dtype`` with nulls placed by the pattern ``nulls``."""
    values = numeric_values(dtype, n, rng, specials=specials, small=small)
    return pa.array(values, type=pa.from_numpy_dtype(values.dtype), mask=null_mask(nulls, n, rng))


def keys(kind: str, n: int, rng: np.random.Generator, *, groups: int = 3,
         nulls: float = 0.2) -> pa.Array:  # fmt: skip
    """Group keys: ``int`` (int64) or ``string``, about ``groups`` distinct values, some null.

    ``groups=0`` gives one group per row (every key distinct).
    """
    codes = np.arange(n) if groups == 0 else rng.integers(0, groups, size=n)
    mask = (rng.random(n) < nulls) if nulls > 0 else None
    if kind == "int":
        return pa.array(codes * 7 - 3, type=pa.int64(), mask=mask)
    if kind == "string":
        return pa.array([f"k{c}" for c in codes], type=pa.string(), mask=mask)
    msg = f"unknown key kind {kind!r}"
    raise ValueError(msg)


def frame(
    n: int,
    seed: int,
    dtypes: tuple[str, ...] = NUMERIC_DTYPES,
    *,
    nulls: str = "random",
    specials: float = 0.1,
    key: str = "int",
    groups: int = 3,
    key_nulls: float = 0.2,
    offset: int = 0,
    chunks: int = 1,
) -> pa.Table:
    """A table with key ``g``, one column per dtype (named by it), ``p_<dtype>`` small columns.

    ``offset`` slices the rows off the front (buffers and bitmaps start mid-byte);
    ``chunks`` splits the rows into that many record batches.
    """
    rng = np.random.default_rng(seed)
    total = n + offset
    columns: dict[str, pa.Array] = {"g": keys(key, total, rng, groups=groups, nulls=key_nulls)}
    for dtype in dtypes:
        columns[dtype] = column(dtype, total, rng, nulls=nulls, specials=specials)
    for dtype in dtypes:
        if dtype != "bool":
            columns[f"p_{dtype}"] = column(dtype, total, rng, nulls=nulls, specials=specials,
                                           small=True)  # fmt: skip
    return cut_table(pa.table(columns), offset, n, chunks)


def pattern_frame(dtype: str, n: int, seed: int, *, specials: float = 0.1, offset: int = 0,
                  chunks: int = 1) -> pa.Table:  # fmt: skip
    """One column of ``dtype`` per null pattern (named by it), ``p_<pattern>`` small
    (``cum_prod``) columns beside them, and an int64 key ``g``."""
    rng = np.random.default_rng(seed)
    total = n + offset
    columns: dict[str, pa.Array] = {"g": keys("int", total, rng)}
    for pattern in NULL_PATTERNS:
        columns[pattern] = column(dtype, total, rng, nulls=pattern, specials=specials)
        if dtype != "bool":
            columns[f"p_{pattern}"] = column(dtype, total, rng, nulls=pattern, specials=specials,
                                             small=True)  # fmt: skip
    return cut_table(pa.table(columns), offset, n, chunks)


def cut_table(table: pa.Table, offset: int, n: int, chunks: int) -> pa.Table:
    """``n`` rows of ``table`` from ``offset`` (bitmaps start mid-byte), in ``chunks`` chunks."""
    table = table.slice(offset, n)
    if chunks > 1 and n >= chunks:
        cuts = np.linspace(0, n, chunks + 1).astype(int)
        table = pa.concat_tables([table.slice(a, b - a) for a, b in itertools.pairwise(cuts)])
    return table


# -- the operations ---------------------------------------------------------------------------
#: One operation: (output suffix, builder(col, small_col) -> expression, summed).
Op = tuple[str, Callable[[Any, Any], Any], bool]


def fill_for(dtype: str) -> Any:
    """A ``fill_value`` of the column's own kind (polars widens a bool column filled with 0)."""
    if dtype == "bool":
        return True
    return 2.5 if dtype in FLOAT_DTYPES else 7


def catalogue(dtype: str) -> list[Op]:
    """Every ordered operation polars 2.1 accepts on a ``dtype`` column, with edge arguments."""
    fill = fill_for(dtype)
    ops: list[Op] = [
        ("shift", lambda c, p: c.shift(1), False),
        ("shift_m2", lambda c, p: c.shift(-2), False),
        ("shift_0", lambda c, p: c.shift(0), False),
        ("shift_far", lambda c, p: c.shift(500), False),
        ("shift_mfar", lambda c, p: c.shift(-500), False),
        ("shift_fill", lambda c, p: c.shift(2, fill_value=fill), False),
        ("shift_mfill", lambda c, p: c.shift(-1, fill_value=fill), False),
        ("pct", lambda c, p: c.pct_change(), True),
        ("pct_m2", lambda c, p: c.pct_change(-2), True),
        ("cum_sum", lambda c, p: c.cum_sum(), True),
        ("cum_sum_r", lambda c, p: c.cum_sum(reverse=True), True),
        ("cum_min", lambda c, p: c.cum_min(), False),
        ("cum_min_r", lambda c, p: c.cum_min(reverse=True), False),
        ("cum_max", lambda c, p: c.cum_max(), False),
        ("cum_max_r", lambda c, p: c.cum_max(reverse=True), False),
        ("cum_count", lambda c, p: c.cum_count(), False),
        ("cum_count_r", lambda c, p: c.cum_count(reverse=True), False),
        ("rsum", lambda c, p: c.rolling_sum(3), True),
        ("rsum_1", lambda c, p: c.rolling_sum(1), True),
        ("rmean", lambda c, p: c.rolling_mean(2, min_samples=1), True),
        ("rmean_c", lambda c, p: c.rolling_mean(4, min_samples=2, center=True), True),
        ("rmin", lambda c, p: c.rolling_min(3), False),
        ("rmin_1", lambda c, p: c.rolling_min(5, min_samples=1), False),
        ("rmax", lambda c, p: c.rolling_max(4, min_samples=1, center=True), False),
        ("rmax_c", lambda c, p: c.rolling_max(3, center=True), False),
        ("rstd", lambda c, p: c.rolling_std(3), True),
        ("rstd_1", lambda c, p: c.rolling_std(4, min_samples=1), True),
        ("rvar", lambda c, p: c.rolling_var(5, min_samples=2, center=True), True),
        ("rvar_0", lambda c, p: c.rolling_var(3, min_samples=1, ddof=0), True),
        ("ewm", lambda c, p: c.ewm_mean(alpha=0.3), True),
        ("ewm_n", lambda c, p: c.ewm_mean(span=4, adjust=False, ignore_nulls=True), True),
        ("ffill", lambda c, p: c.fill_null(strategy="forward"), False),
        ("bfill", lambda c, p: c.fill_null(strategy="backward"), False),
        ("ffill_1", lambda c, p: c.fill_null(strategy="forward", limit=1), False),
        ("bfill_2", lambda c, p: c.fill_null(strategy="backward", limit=2), False),
        ("forward_fill", lambda c, p: c.forward_fill(), False),
        ("backward_fill_2", lambda c, p: c.backward_fill(limit=2), False),
    ]
    if dtype != "bool":  # polars: `diff` is not defined on booleans
        ops += [
            ("diff", lambda c, p: c.diff(), False),
            ("diff_m3", lambda c, p: c.diff(-3), False),
            ("diff_0", lambda c, p: c.diff(0), False),
            ("cum_prod", lambda c, p: p.cum_prod(), True),
            ("cum_prod_r", lambda c, p: p.cum_prod(reverse=True), True),
        ]
    else:
        ops += [("cum_prod", lambda c, p: c.cum_prod(), True)]
    return ops


def op_steps(dtype: str, columns: tuple[str, ...], ops: list[Op] | None = None, *,
             over: str | None = None, prefix: Callable[[Any, Any], Any] | None = None,
             ) -> tuple[Callable[[Any, Any], Any], dict[str, Tolerance]]:  # fmt: skip
    """Steps applying every op of ``ops`` (default: the `catalogue`) to every column, and
    the tolerance of each output column (``<column>_<op>``).

    ``over`` runs each op per group of that key column (``.over(key)``); ``prefix`` is
    steps applied first, ``prefix(m, q)`` (a filter, say).
    """
    ops = catalogue(dtype) if ops is None else ops
    summed_tol = F32_TOL if dtype == "float32" else F64_TOL
    tolerance = {f"{c}_{name}": (summed_tol if summed else EXACT)
                 for c in columns for name, _, summed in ops}  # fmt: skip

    def steps(m: Any, q: Any) -> Any:
        out = {}
        for c in columns:
            col = m.col(c)
            small = m.col(f"p_{c}") if dtype != "bool" else col
            for name, build, _ in ops:
                expr = build(col, small)
                out[f"{c}_{name}"] = expr.over(over) if over is not None else expr
        if prefix is not None:
            q = prefix(m, q)
        return q.select(m.col("g"), **out)

    return steps, tolerance


#: The strings of `sortable_table`: ties, bytes order and multi-byte characters.
SORTABLE_WORDS = ["", "a", "b", "bb", "é", "日本", "a\x00", "Z"]


def sortable_table(n: int, seed: int, *, nulls: float, offset: int = 0, chunks: int = 1,
                   groups: int = 3) -> pa.Table:  # fmt: skip
    """Columns of every type polars sorts and ranks, with ties and specials in each.

    ``g`` holds the keys (10% null); ``f`` ``0.0`` and ``-0.0``, NaN and the
    infinities; ``s`` and ``c`` (its categorical) empty, multi-byte and NUL-holding
    strings; ``u64`` both halves of its range. Every other column has ``nulls`` of
    its rows null.
    """
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    floats = rng.choice(np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 3.25]), total)
    words = [SORTABLE_WORDS[k] for k in rng.integers(0, len(SORTABLE_WORDS), total)]
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "f": pa.array(floats, mask=mask()),
        "f32": pa.array(rng.integers(-3, 3, total).astype(np.float32), mask=mask()),
        "i8": pa.array(rng.integers(-3, 3, total).astype(np.int8), mask=mask()),
        "u64": pa.array(rng.choice(np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64), total),
                        mask=mask()),
        "b": pa.array(rng.random(total) < 0.5, mask=mask()),
        "s": pa.array(words, pa.string(), mask=mask()),
        "c": pa.array(words, pa.string(), mask=mask()).dictionary_encode(),
        "d": pa.array(rng.integers(-3, 3, total).astype(np.int32), mask=mask())
        .cast(pa.date32()),
        "t": pa.array(rng.integers(-3, 3, total) * 10**6, mask=mask()).cast(pa.timestamp("us")),
        "du": pa.array(rng.integers(-3, 3, total), mask=mask()).cast(pa.duration("ms")),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


#: Hypothesis strategies for `sortable_table`'s arguments: sizes from empty to a few
#: hundred rows, no to all nulls, slices and chunks, one to a hundred groups.
SORTABLE_SHAPES = {
    "n": st.sampled_from([0, 1, 2, 5, 40, 300]), "seed": st.integers(0, 2**31 - 1),
    "nulls": st.sampled_from([0.0, 0.3, 1.0]), "offset": st.sampled_from([0, 5]),
    "chunks": st.sampled_from([1, 3]), "groups": st.sampled_from([1, 4, 100]),
}

#: The columns of `sortable_table` besides its keys ``g``.
SORTABLE_COLUMNS = ("f", "f32", "i8", "u64", "b", "s", "c", "d", "t", "du")


def assert_streams_and_dask_refuse(tmp_path: Any, build: Callable[[Any], Any],
                                   streamed: str) -> None:  # fmt: skip
    """``build(cb.col("x"))`` refused by a streamed job (message ``streamed``) and by Dask.

    For operations computed on the host from a whole column: no stream carries them,
    and a Dask partition holds only part of the column.
    """
    import dask.dataframe as dd
    import pandas as pd
    import polars as pl
    import pyarrow.parquet as pq
    import pytest

    import colbridge as cb
    from colbridge.errors import JobSpecError

    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0]}), path)
    with pytest.raises(JobSpecError, match=streamed):
        pl.scan_parquet(path).gpu.with_columns(r=build(cb.col("x"))).compute()
    pdf = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    q = cb.lazy(pdf).with_columns(r=build(cb.col("x")))
    with pytest.raises(JobSpecError, match=r"not supported in a Dask plan .* Run them in memory"):
        cb.dask.apply(q, dd.from_pandas(pdf, npartitions=2)).compute()


def assert_cuda_code_path_agrees(table: pa.Table, outputs: Callable[[Any], dict[str, Any]]
                                 ) -> Any:  # fmt: skip
    """``select(**outputs(m))`` on the CUDA code path (run on the host): the CPU's answer
    and polars' (compared in polars, which counts NaN equal to NaN). Returns the query."""
    import polars as pl

    import colbridge as cb
    from colbridge.testing.cuda_host import compute_on_host

    q = cb.lazy(table).select("g", **outputs(cb))
    on_host = pl.from_arrow(compute_on_host(q))
    assert on_host.equals(pl.from_arrow(q.compute(device="cpu")))
    assert on_host.equals(pl.from_arrow(table).select("g", **outputs(pl)))
    return q
