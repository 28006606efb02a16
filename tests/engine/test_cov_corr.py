"""``cb.cov`` and ``cb.corr`` (Pearson and Spearman) against polars' ``pl.cov``/``pl.corr``.

Both take the rows where the two sides are non-null; ``cov`` is null where those rows
are at most ``ddof``, ``corr`` NaN where the spread is 0. Whole columns, ``group_by``
and ``over``, on generated columns of numbers and booleans with nulls, NaN and
infinities; polars is the oracle, within a few units in the last place (it sums in
blocks of 128 rows merged pairwise, colbridge in one pass). The generated values are
small integers and binary fractions, whose sums are exact, so that a side that does
not vary has a mean equal to its values in both (see `test_a_side_that_does_not_vary`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import InvalidOperationError, SchemaError, UnsupportedOperationError

_TYPES = {"i16": pa.int16(), "u8": pa.uint8(), "i64": pa.int64(), "f32": pa.float32(),
          "f64": pa.float64(), "bool": pa.bool_()}  # fmt: skip
_POOLS: dict[str, list[Any]] = {
    "i16": [0, 1, -1, 3, 300], "u8": [0, 2, 5, 255], "i64": [0, 7, -3, 2**40],
    "f32": [0.0, -0.0, 1.5, -2.25, 8.0, math.nan], "f64": [0.5, -7.5, 3.0, 1e3, math.nan],
    "bool": [True, False],
}  # fmt: skip
_INFINITE = [math.inf, -math.inf]


def _column(kind: str, n: int, data: Any, infinite: bool) -> pa.Array:
    pool = [None, *_POOLS[kind], *(_INFINITE if infinite and kind[0] == "f" else [])]
    values = data.draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    return pa.array(values, type=_TYPES[kind])


def _statistics(m: Any, ddof: int, float32: bool = False) -> dict[str, Any]:
    out = {
        "cov": m.cov("a", "b", ddof=ddof),
        "pearson": m.corr("a", "b"),
        "spearman": m.corr("a", "b", method="spearman"),
        "cov_expr": m.cov(m.col("a") * 2, "b"),
    }
    if not float32:  # polars' type depends on the data there: `test_spearman_nan_float32`
        out["spearman_nan"] = m.corr("a", "b", method="spearman", propagate_nans=True)
    return out


def _float32(kinds: tuple[str, str]) -> bool:
    """Whether the common type of two kinds is Float32 (one is, the other fits in it)."""
    return "f32" in kinds and all(k in ("f32", "i16", "u8", "bool") for k in kinds)


def _close(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= 1e-9 * max(abs(got), abs(want)) + 1e-12


def _assert_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    assert got.schema == want.schema, (got.schema, want.schema)
    for name in want.columns:
        if not want.schema[name].is_float():  # the group keys
            assert got[name].to_list() == want[name].to_list()
            continue
        pairs = list(zip(got[name].to_list(), want[name].to_list(), strict=True))
        bad = [(i, g, w) for i, (g, w) in enumerate(pairs) if not _close(g, w)]
        assert not bad, f"{name}: (row, colbridge, polars) {bad[:5]}"


#: pairs of column kinds: each kind on either side, each result type (Float32 where one
#: side is and the other fits in it, Float64 otherwise), booleans against numbers.
#: Drawn from these rather than from all 36 pairs: each pair compiles its own kernels
#: (most of this test's time with an empty kernel cache); every pair's results and
#: types are checked on the NumPy tier (`test_every_pair_of_kinds_as_polars`).
_PAIRS = [("f32", "i16"), ("bool", "f32"), ("f32", "f32"), ("f32", "i64"), ("u8", "bool"),
          ("i64", "f64"), ("f64", "u8"), ("i16", "bool"), ("bool", "bool")]  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(data=st.data(), n=st.integers(0, 24), ddof=st.integers(0, 2),
       kinds=st.sampled_from(_PAIRS), infinite=st.booleans())  # fmt: skip
def test_equal_polars(data: Any, n: int, ddof: int, kinds: tuple[str, str],
                      infinite: bool) -> None:  # fmt: skip
    keys = data.draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
    table = pa.table({"a": _column(kinds[0], n, data, infinite),
                      "b": _column(kinds[1], n, data, infinite),
                      "g": pa.array(keys, pa.string())})  # fmt: skip
    source = pl.DataFrame(pl.from_arrow(table))
    f32 = _float32(kinds)
    # pandas with Arrow-backed columns: a column of nulls keeps its type there
    for frame in (source, source.to_pandas(types_mapper=pd.ArrowDtype)):
        mine, theirs = _statistics(cb, ddof, f32), _statistics(pl, ddof, f32)
        whole = frame.gpu.select(**mine).compute()
        _assert_close(pl.DataFrame(whole), source.select(**theirs))
        grouped = frame.gpu.group_by("g", maintain_order=True).agg(**mine)
        want = source.group_by("g", maintain_order=True).agg(**theirs)
        _assert_close(pl.DataFrame(grouped.compute()), want)
        over = frame.gpu.select(**{k: v.over("g") for k, v in mine.items()})
        _assert_close(pl.DataFrame(over.compute()),
                      source.select(**{k: v.over("g") for k, v in theirs.items()}))


@pytest.mark.parametrize("kinds", [(a, b) for a in sorted(_TYPES) for b in sorted(_TYPES)])
def test_every_pair_of_kinds_as_polars(kinds: tuple[str, str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # the NumPy tier computes what the compiled kernels do (`test_cpu_tiers.py`) and
    # compiles nothing: types and values of every pair, nulls and a NaN among them
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", "numpy")
    values = {"i16": [1, None, -1, 3, 300, 0], "u8": [0, 2, None, 5, 255, 2],
              "i64": [7, -3, None, 2**40, 0, 7], "f32": [1.5, -2.25, None, 8.0, math.nan, 0.0],
              "f64": [0.5, -7.5, 3.0, None, 1e3, 3.0],
              "bool": [True, False, None, True, True, False]}  # fmt: skip
    table = pa.table({"a": pa.array(values[kinds[0]], _TYPES[kinds[0]]),
                      "b": pa.array(values[kinds[1]], _TYPES[kinds[1]]),
                      "g": pa.array(list("xyxyxx"))})  # fmt: skip
    source = pl.DataFrame(pl.from_arrow(table))
    f32 = _float32(kinds)
    for ddof in (0, 1):
        mine, theirs = _statistics(cb, ddof, f32), _statistics(pl, ddof, f32)
        _assert_close(source.gpu.select(**mine).compute(), source.select(**theirs))
        got = source.gpu.group_by("g", maintain_order=True).agg(**mine).compute()
        _assert_close(got, source.group_by("g", maintain_order=True).agg(**theirs))


@pytest.mark.parametrize(("a", "b", "expected"), [
    (pl.Float32, pl.Float32, pl.Float32), (pl.Int16, pl.Float32, pl.Float32),
    (pl.Boolean, pl.Float32, pl.Float32), (pl.Int32, pl.Float32, pl.Float64),
    (pl.Float32, pl.Float64, pl.Float64), (pl.Int64, pl.Int8, pl.Float64),
])  # fmt: skip
def test_the_result_type_is_polars(a: Any, b: Any, expected: Any) -> None:
    df = pl.DataFrame({"a": [1, 2, 4, 3], "b": [1, 3, 2, 2]}).cast({"a": a, "b": b})
    exprs = {"c": ("cov", {}), "r": ("corr", {}), "s": ("corr", {"method": "spearman"})}
    got = df.gpu.select(**{k: getattr(cb, f)("a", "b", **kw) for k, (f, kw) in exprs.items()})
    want = df.select(**{k: getattr(pl, f)("a", "b", **kw) for k, (f, kw) in exprs.items()})
    assert want.schema == dict.fromkeys(exprs, expected)
    _assert_close(got.compute(), want)


def test_spearman_nan_float32() -> None:
    # polars 2.1 declares Float32 here, but answers a NaN found in the data as a Float64
    # column (and raises "cannot build list with different dtypes" in `group_by` and
    # `over`); colbridge keeps the declared Float32 everywhere
    df = pl.DataFrame({"a": [1.0, math.nan, 4.0, 2.0], "b": [1.0, 3.0, 2.0, 5.0],
                       "g": [1, 1, 2, 2]}).cast({"a": pl.Float32, "b": pl.Float32})  # fmt: skip
    spearman = pl.corr("a", "b", method="spearman", propagate_nans=True)
    assert df.lazy().select(spearman).collect_schema()["a"] == pl.Float32
    assert df.select(spearman).schema["a"] == pl.Float64
    e = cb.corr("a", "b", method="spearman", propagate_nans=True)
    whole = df.gpu.select(e).compute()
    grouped = df.gpu.group_by("g", maintain_order=True).agg(e).compute()
    windowed = df.gpu.select(e.over("g")).compute()
    expected = ((whole, [True]), (grouped, [True, False]), (windowed, [True] * 2 + [False] * 2))
    for got, nans in expected:
        assert got.schema["a"] == pl.Float32
        assert [math.isnan(v) for v in got["a"].to_list()] == nans
    # without NaN the rank correlation is polars' own, in Float32
    clean = df.filter(pl.col("a").is_not_nan())
    _assert_close(clean.gpu.select(e).compute(), clean.select(spearman))


def test_many_rows_match_numpy_and_polars() -> None:
    # more rows than polars' blocks of 128: its merged blocks against one pass
    rng = np.random.default_rng(7)
    n = 10_000
    x = rng.normal(5.0, 2.0, n)
    y = 0.3 * x + rng.normal(size=n)
    mask = rng.random(n) < 0.1
    df = pl.DataFrame({"a": pa.array(x, mask=mask), "b": y, "g": rng.integers(0, 4, n)})
    got = df.gpu.select(c=cb.cov("a", "b"), r=cb.corr("a", "b"),
                        s=cb.corr("a", "b", method="spearman")).compute()  # fmt: skip
    want = df.select(c=pl.cov("a", "b"), r=pl.corr("a", "b"),
                     s=pl.corr("a", "b", method="spearman"))  # fmt: skip
    _assert_close(got, want)
    keep = ~mask
    assert got["c"].item() == pytest.approx(np.cov(x[keep], y[keep])[0, 1], rel=1e-12)
    assert got["r"].item() == pytest.approx(np.corrcoef(x[keep], y[keep])[0, 1], rel=1e-12)
    grouped = df.gpu.group_by("g").agg(r=cb.corr("a", "b")).compute().sort("g")
    _assert_close(grouped, df.group_by("g").agg(r=pl.corr("a", "b")).sort("g"))


def test_a_side_that_does_not_vary() -> None:
    # 0.1 three times sums to 0.30000000000000004: a mean of sum / n is an ulp off 0.1,
    # and polars 2.1's answers then hang on that ulp (corr 0.0 against [1, 2, 3], 1.0
    # against itself). colbridge anchors each mean on the first value, as later polars
    # does: every difference is exactly 0, so cov is 0 and corr is NaN (no spread)
    df = pl.DataFrame({"a": [0.1, 0.1, 0.1], "b": [1.0, 2.0, 3.0]})
    got = df.gpu.select(c=cb.cov("a", "b"), r=cb.corr("a", "b"), rr=cb.corr("a", "a"),
                        v=cb.cov("a", "a")).compute().row(0)  # fmt: skip
    assert got[0] == 0.0
    assert math.isnan(got[1])
    assert math.isnan(got[2])
    assert got[3] == 0.0


def test_fewer_rows_than_needed() -> None:
    df = pl.DataFrame({"a": [1.0, None, 3.0], "b": [2.0, 5.0, None]}, schema={
        "a": pl.Float64, "b": pl.Float64})  # fmt: skip
    # one pair: the correlation is NaN; no pair: null (polars 2.2; NaN before)
    for frame, pair in ((df, True), (df.head(0), False), (df.tail(2), False)):
        stats = lambda m: dict(c=m.cov("a", "b"), c0=m.cov("a", "b", ddof=0),  # noqa: E731
                               r=m.corr("a", "b"), s=m.corr("a", "b", method="spearman"))
        got = frame.gpu.select(**stats(cb)).compute().row(0)
        want = frame.select(**stats(pl)).row(0)
        assert got[:2] == want[:2]
        for r in (got[2:], want[2:]):
            assert all(math.isnan(v) for v in r) if pair else r == (None, None)


def test_a_lone_row_has_covariance_zero() -> None:
    # polars' running state: one row (of a frame or group without nulls) has a co-moment
    # of exactly 0 whatever its values; beside a null row the formula's NaN stays
    df = pl.DataFrame({"g": ["x", "z", "y", "z", "w", "w"],
                       "a": [-math.inf, 1000.0, math.nan, 1000.0, 5.0, None],
                       "b": [3.0, None, 1000.0, 0.5, math.nan, 1.0]})  # fmt: skip
    stats = lambda m: [m.cov("a", "b", ddof=0), m.cov("a", "b").alias("c1")]  # noqa: E731
    got = df.gpu.group_by("g", maintain_order=True).agg(stats(cb)).compute()
    want = df.group_by("g", maintain_order=True).agg(stats(pl))
    assert_frame_equal(got, want)
    assert got["a"].to_list()[:3] == [0.0, 0.0, 0.0]
    assert math.isnan(got["a"][3])
    assert_frame_equal(df.gpu.select([e.over("g") for e in stats(cb)]).compute(),
                       df.select([e.over("g") for e in stats(pl)]))  # fmt: skip
    one = df.head(1)
    assert_frame_equal(one.gpu.select(stats(cb)).compute(), one.select(stats(pl)))


def test_unaliased_results_take_the_first_sides_name() -> None:
    df = pl.DataFrame({"a": [1.0, 2.0, 4.0], "b": [3.0, 1.0, 2.0]})
    exprs = lambda m: [m.cov("a", "b"), m.corr("b", "a").alias("r"),  # noqa: E731
                       m.cov(m.col("b") * 2, "a").alias("q")]
    assert df.gpu.select(exprs(cb)[0]).compute().columns == ["a"]
    assert df.gpu.select(cb.cov(cb.col("b") * 2, "a")).compute().columns == ["b"]
    assert_frame_equal(df.gpu.select(exprs(cb)).compute(), df.select(exprs(pl)))


@pytest.mark.parametrize("column", [pa.array(["a", "b"]), pa.array([1, 2], pa.date32())])
def test_other_types_are_refused(column: pa.Array) -> None:
    # polars answers null for strings; colbridge names the column and the way out
    table = pa.table({"a": column, "b": [1.0, 2.0]})
    for func in ("cov", "corr"):
        with pytest.raises(InvalidOperationError, match=rf"`{func}` takes numbers.*cast"):
            cb.lazy(table).select(getattr(cb, func)("a", "b")).compute()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SchemaError, match=r"unknown method.*'pearson', 'spearman'"):
        cb.corr("a", "b", method="kendall")
    with pytest.raises(UnsupportedOperationError, match=r"lazy.*df\.gpu\.select"):
        cb.cov("a", "b", eager=True)
    with pytest.raises(SchemaError, match=r"ddof"):
        cb.cov("a", "b", ddof=-1)


def test_the_string_language() -> None:
    table = pa.table({"a": [1.0, 2.0, 4.0, None], "b": [1.0, 3.0, 2.0, 5.0]})
    got = cb.lazy(table).eval(
        'c = cov(a, b)\nc0 = cov(a, b, ddof=0)\nr = corr(a, b)\ns = corr(a, b, method="spearman")'
    ).compute().select(["c", "c0", "r", "s"]).slice(0, 1)  # each row holds the values
    want = pl.DataFrame(pl.from_arrow(table)).select(
        c=pl.cov("a", "b"), c0=pl.cov("a", "b", ddof=0), r=pl.corr("a", "b"),
        s=pl.corr("a", "b", method="spearman"))  # fmt: skip
    _assert_close(pl.DataFrame(pl.from_arrow(got)), want)


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    rng = np.random.default_rng(3)
    n = 300
    table = pa.table({"a": pa.array(rng.normal(size=n), mask=rng.random(n) < 0.1),
                      "b": rng.integers(-5, 5, n), "g": rng.integers(0, 4, n)})  # fmt: skip
    stats = {"c": cb.cov("a", "b"), "r": cb.corr("a", "b"),
             "s": cb.corr("a", "b", method="spearman")}  # fmt: skip
    whole = cb.lazy(table).select(**stats)
    grouped = cb.lazy(table).group_by("g", maintain_order=True).agg(**stats)
    for q in (whole, grouped):
        # the device sums in another order than the CPU (docs/cuda.md)
        assert_frame_equal(pl.from_arrow(compute_on_host(q)),
                           pl.from_arrow(q.compute(device="cpu")), rel_tol=1e-12)  # fmt: skip
