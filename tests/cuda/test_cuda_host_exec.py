"""Generated CUDA kernels, compiled with g++ and run on the CPU, against the CPU backend and polars.

Three answers per example: the CUDA backend's code path with its kernels run
by `colbridge.testing.cuda_host.HostRuntime` (real threads, small grids, so the
grid-stride loops wrap), colbridge's own CPU backend, and polars as the
oracle. Data: lengths that are not multiples of 8, slices whose offsets are
not multiples of 8, nulls, NaN, ±inf, ±0 and integer extremes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import (
    EXACT,
    LIBM_ULPS,
    Tolerance,
    assert_arrays_match,
    std_bound,
    summation_bound,
)
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from colbridge.testing.data import limit_values, make_column
from tests.cuda.cuda_corpus import CB, GROUPS, PL, Group, tables
from tests.reliability.fuzzing import known_bug

SETTINGS = settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)

COMPARISONS = {"count": 0}


def _three_way(
    table: pa.Table,
    build: Any,
    *,
    tolerance: Tolerance | Mapping[str, Tolerance] = EXACT,
    runtime: HostRuntime | None = None,
    oracle: Mapping[str, Callable[[pa.Table, pa.Table], pa.Array]] | None = None,
    reductions: Mapping[str, tuple[str, str]] | None = None,
) -> None:
    """CUDA-on-host == CPU and == polars, exactly unless ``tolerance`` (per column) allows more.

    The same tolerance serves both comparisons: it is the operation's (libm
    ULPs, or the summation-order bound of a reduction), never a loosening for
    float32 or for the whole frame. ``oracle`` replaces polars' answer for
    the columns it names, where polars is known not to round correctly; it is
    given the input and the CPU backend's result (whose other columns are
    checked against polars). ``reductions`` names the (operation, column) of
    reduction outputs, so a known wrong value (`fuzzing.KNOWN_BUGS`, each
    pinned by a strict xfail) is recognised as that bug and nothing else.
    """
    got = compute_on_host(build(CB, cb.lazy(table)), runtime)
    cpu = build(CB, cb.lazy(table)).compute(device="cpu")
    want = build(PL, pl.from_arrow(table).lazy()).collect().to_arrow()
    assert got.column_names == cpu.column_names == want.column_names
    for name in got.column_names:
        tol = tolerance.get(name, EXACT) if isinstance(tolerance, Mapping) else tolerance
        g, c, w = got.column(name), cpu.column(name), want.column(name)
        if oracle and name in oracle and pa.types.is_floating(w.type):
            w = oracle[name](table, cpu)
        if name in (reductions or {}) and _known_cuda_bug(table, reductions[name], g, c):
            continue
        assert_arrays_match(g, c, what=f"cuda-host vs cpu `{name}`", ulps=tol.ulps,
                            rtol=tol.rtol, atol=tol.atol)  # fmt: skip
        assert_arrays_match(g, w, what=f"cuda-host vs polars `{name}`", ulps=tol.ulps,
                            rtol=tol.rtol, atol=tol.atol)  # fmt: skip
        COMPARISONS["count"] += 1


def _share(table: pa.Table, result: pa.Table) -> pa.Array:
    # b / b.sum() on the rows the filter kept (column b of the result, compared exactly on
    # its own), multiplied by the sum's reciprocal, as polars (and colbridge) divide by one
    # value
    total = np.sum(table.column("b").drop_null().to_numpy(), dtype=np.int64)
    kept = result.column("b").combine_chunks()
    with np.errstate(divide="ignore"):  # a sum of 0: infinities, as polars gives
        reciprocal = 1.0 / np.float64(total)
    values = kept.to_numpy(zero_copy_only=False).astype(np.float64) * reciprocal
    return pa.array(values, type=pa.float64(), mask=np.asarray(kept.is_null()))



def _known_cuda_bug(table: pa.Table, reduction: tuple[str, str], got: Any, cpu: Any) -> bool:
    op, column = reduction
    values = table.column(column).drop_null().to_numpy().astype(np.float64)
    g, c = _combined(got), _combined(cpu)
    return known_bug((op, ("col", column)), values, g, c, "cuda-host") is not None


def _combined(array: Any) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _summation(table: pa.Table, column: str, op: str, bits: int, ddof: int = 1) -> Tolerance:
    """The summation-order bound of ``op`` over the valid values of ``column``."""
    values = table.column(column).drop_null().to_numpy()
    return Tolerance(atol=summation_bound(op, values.astype(np.float64), bits, ddof))


def _with(group: Group) -> Any:
    return lambda m, q: q.with_columns(**group.exprs(m))


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.name)
@SETTINGS
@given(data=st.data())
def test_elementwise_groups(group: Group, data: st.DataObject) -> None:
    table = data.draw(tables(group))
    # libm functions may differ from polars (and CUDA's math library) in the last bits
    bits = 32 if group.types[0] == pa.float32() else 64
    tolerance = Tolerance(ulps=LIBM_ULPS[bits]) if group.ulps else EXACT
    _three_way(table, _with(group), tolerance=tolerance)


def _reductions(m: Any, q: Any) -> Any:
    a, b = m.col("a"), m.col("b")
    return q.select(
        s=a.sum(), mean=a.mean(), mn=a.min(), mx=a.max(), sd=a.std(), var=a.var(ddof=0),
        cnt=a.count(), nc=a.null_count(), bs=b.sum(), bmin=b.min(), bmax=b.max(),
    )  # fmt: skip


@pytest.mark.parametrize("types", [(pa.float64(), pa.int64()), (pa.float32(), pa.uint8()),
                                   (pa.int32(), pa.int8())], ids=str)  # fmt: skip
@SETTINGS
@given(data=st.data())
def test_reductions(types: tuple[pa.DataType, pa.DataType], data: st.DataObject) -> None:
    group = Group("r", (*types, pa.int64()), lambda m: {})
    table = data.draw(tables(group))
    # per-thread partials sum in another order than the CPU's per-block partials and polars
    bits = 32 if types[0] == pa.float32() else 64
    tolerance = {
        "s": _summation(table, "a", "sum", bits), "mean": _summation(table, "a", "mean", bits),
        "var": _summation(table, "a", "var", bits, ddof=0),
    }  # fmt: skip
    var1 = _summation(table, "a", "var", bits).atol
    sd = pl.from_arrow(table).select(pl.col("a").std()).item()
    tolerance["sd"] = Tolerance(atol=std_bound(var1, sd or 0.0, sd or 0.0))
    _three_way(table, _reductions, tolerance=tolerance,
               reductions={"sd": ("std", "a"), "var": ("var", "a")})  # fmt: skip


def _standardise(m: Any, q: Any) -> Any:
    # clipped: near float64's max, whether mean/std overflow depends on the summation order
    a, b = m.col("a").clip(-1e6, 1e6), m.col("b")
    return q.with_columns(
        z=(a - a.mean()) / a.std(), share=b / b.sum(), above=a > a.mean(),
        centred=(a - (a - a.mean()).abs().mean()),
    ).filter(m.col("z").is_not_null() & (b > -20))  # fmt: skip


@SETTINGS
@given(data=st.data())
def test_nested_reductions_and_filter(data: st.DataObject) -> None:
    group = Group("z", (pa.float64(), pa.int64(), pa.int64()), lambda m: {})
    table = data.draw(tables(group))
    # mean and std differ by the summation order; z and centred carry that difference
    a = np.clip(table.column("a").drop_null().to_numpy(), -1e6, 1e6)
    a = a[~np.isnan(a)]
    tolerance = {}
    if a.size > 1:
        mean_bound = summation_bound("mean", a, 64)
        std = float(np.std(a, ddof=1))
        std_err = std_bound(summation_bound("var", a, 64), std, std)
        z_max = float(np.max(np.abs(a - a.mean())) / std) if std > 0 else 0.0
        z_bound = 2 * (mean_bound + z_max * std_err) / std if std > 0 else 0.0
        centred_bound = 2 * mean_bound + summation_bound("mean", np.abs(a - a.mean()), 64)
        tolerance = {"z": Tolerance(atol=z_bound), "centred": Tolerance(atol=centred_bound)}
    _three_way(table, _standardise, tolerance=tolerance, oracle={"share": _share})


@pytest.mark.parametrize("budget", [20_000, 40_000])
def test_chunked_processing_matches_one_pass(budget: int) -> None:
    # a tiny memory budget forces many chunks (row ranges, multiples of 64 long)
    rng = np.random.default_rng(7)
    n, offset = 1003, 5
    table = pa.table({
        "a": make_column(rng, pa.float64(), n + offset, True),
        "b": make_column(rng, pa.int64(), n + offset, True),
        "c": make_column(rng, pa.bool_(), n + offset, True),
    }).slice(offset, n)  # fmt: skip

    def build(m: Any, q: Any) -> Any:
        a, b, c = m.col("a"), m.col("b"), m.col("c")
        return q.with_columns(x=a * 2 + b, y=b // 3, k=c & (a > 0), s=a.sum(), mx=b.max())

    runtime = HostRuntime(block=32, max_blocks=2, budget=budget)
    _three_way(table, build, tolerance={"s": _summation(table, "a", "sum", 64)}, runtime=runtime)
    kernels = " ".join(compute_report(table, build, runtime))
    assert "chunk(s)" in kernels
    assert " in 1 chunk(s)" not in kernels


def compute_report(table: pa.Table, build: Any, runtime: HostRuntime) -> list[str]:
    lf = build(CB, cb.lazy(table))
    compute_on_host(lf, runtime)
    return list(lf.last_report.stats.kernels)


def test_strict_cast_failure_raises_like_the_cpu() -> None:
    table = pa.table({"a": pa.array([1.0, 300.0, None, 5.5]), "b": pa.array([1, 2, 3, 4])})
    lf = cb.lazy(table).with_columns(x=cb.col("a").cast("int8"))
    with pytest.raises(cb.InvalidOperationError, match=r"strict cast to int8 failed.*\(1 value\)"):
        compute_on_host(lf)
    with pytest.raises(cb.InvalidOperationError, match=r"strict cast to int8 failed"):
        lf.compute(device="cpu")
    with pytest.raises(pl.exceptions.InvalidOperationError):
        pl.from_arrow(table).with_columns(x=pl.col("a").cast(pl.Int8))


def test_negative_integer_exponent_is_an_error_on_every_backend() -> None:
    table = pa.table({"a": pa.array([2, 3, 4], pa.int64()), "b": pa.array([1, -1, None])})
    lf = cb.lazy(table).with_columns(p=cb.col("a") ** cb.col("b"))
    with pytest.raises(cb.InvalidOperationError, match="negative integer power"):
        compute_on_host(lf)
    with pytest.raises(cb.InvalidOperationError, match="negative integer power"):
        lf.compute(device="cpu")


def test_unwritten_output_bytes_would_be_caught() -> None:
    # outputs start poisoned; a 9-row bool output must come back with every bit decided
    table = pa.table({"a": pa.array([1.0, None, 3.0, -4.0, 5.0, 6.0, None, 8.0, 9.0])})
    out = compute_on_host(cb.lazy(table).with_columns(p=cb.col("a") > 2))
    assert out.column("p").to_pylist() == [False, None, True, False, True, True, None, True, True]


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.name)
def test_every_group_compares_its_columns(group: Group) -> None:
    # the differential runs really compare columns: each group's expressions over one
    # fixed table give outputs, and every one of them is compared (the count of
    # comparisons is kept per worker process, so it is checked here, not summed at the end)
    rng = np.random.default_rng(3)
    n = 97
    table = pa.table({
        name: pa.array(
            (rng.integers(-50, 50, n) if pa.types.is_integer(t) else rng.normal(size=n) * 10)
            .astype(t.to_pandas_dtype()), mask=rng.random(n) < 0.1)
        for name, t in zip(("a", "b", "c"), group.types, strict=True)
    })  # fmt: skip
    bits = 32 if group.types[0] == pa.float32() else 64
    tolerance = Tolerance(ulps=LIBM_ULPS[bits]) if group.ulps else EXACT
    before = COMPARISONS["count"]
    _three_way(table, _with(group), tolerance=tolerance)
    assert COMPARISONS["count"] - before >= len(group.exprs(CB)) > 0


CAST_TARGETS = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
                "Float32", "Float64", "Boolean")  # fmt: skip


@pytest.mark.parametrize("source", [pa.float32(), pa.float64(), pa.int64(), pa.uint64()],
                         ids=str)  # fmt: skip
def test_casts_at_every_limit_on_the_host(source: pa.DataType) -> None:
    # each limit of each type, one ulp and one either side, through the CUDA kernels
    table = pa.table({"a": pa.array(limit_values(source), source)})

    def build(m: Any, q: Any) -> Any:
        return q.with_columns(**{f"to_{t}": m.col("a").cast(getattr(m, t), strict=False)
                                 for t in CAST_TARGETS})  # fmt: skip

    _three_way(table, build)
    if not pa.types.is_floating(source):
        return
    for target in ("int8", "uint8", "int32", "uint64", "int64"):
        lf = cb.lazy(table).with_columns(z=cb.col("a").cast(target))
        with pytest.raises(cb.InvalidOperationError) as cpu:
            lf.compute(device="cpu")
        with pytest.raises(cb.InvalidOperationError) as host:
            compute_on_host(cb.lazy(table).with_columns(z=cb.col("a").cast(target)))
        assert str(host.value) == str(cpu.value)


def test_string_lookup_tables_on_more_rows_than_the_table_has_entries() -> None:
    # a string column's lookup tables (`lut{k}`) hold one entry per dictionary string:
    # reads of them stay below their length whatever the rows (the device double once
    # sized them by the rows, and a frame of 150 rows of 6 strings faulted)
    rng = np.random.default_rng(2)
    words = np.array(["ab", "cd", "ef", "gh", "ij", "kl"])
    n = 5_000
    keys = words[rng.integers(0, 6, n)]
    table = pa.table({"k": pa.array(keys, mask=rng.random(n) < 0.2)})
    k = cb.col("k")
    q = cb.lazy(table).select(a=cb.when(k.is_null()).then(cb.lit("null")).otherwise(k),
                              b=k.replace({"ab": "AB", None: "?"}),
                              c=k.str.len_chars())  # fmt: skip
    on_host = compute_on_host(q)
    assert on_host.equals(q.compute(device="cpu"))


def test_regex_functions_and_column_selections_on_the_host_run_cuda_text() -> None:
    # regex replacement and counts are tables of the distinct strings, and a selection
    # of columns is expanded before planning: the CUDA code path reads them as the CPU's
    rng = np.random.default_rng(3)
    words = np.array(["a1b22", "x", "ééé 12", "", "333c"])
    n = 3_000
    table = pa.table({"s": pa.array(words[rng.integers(0, 5, n)], mask=rng.random(n) < 0.2),
                      "x_1": rng.normal(size=n), "x_2": rng.normal(size=n)})  # fmt: skip

    def build(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.select((m.col("^x_.*$") * 2).name.suffix("_2"),
                        r=s.str.replace_all(r"(\d)", "<$1>"), n=s.str.count_matches(r"\d"),
                        c=s.str.contains(r"\d{2}"))  # fmt: skip

    _three_way(table, build)
