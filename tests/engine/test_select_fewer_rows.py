"""``select`` outputs with fewer rows than the frame, against polars.

``x.filter(p)``, ``head``, ``tail``, ``slice``, ``gather_every``, ``drop_nulls``,
``unique``, ``mode``, ``top_k``, ``bottom_k`` as outputs of ``select``, with expressions of
them (arithmetic, ordered operations over the kept rows) and one-value outputs
broadcast beside them (reductions of the whole frame, literals). Planned as a filter
of the frame (`colbridge.plan.row_changing`). Generated frames with nulls, NaN,
strings, sliced and chunked columns, every frame kind, empty frames; streamed in
batches that cut the kept rows; and the shapes polars refuses, refused.
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import JobSpecError, ShapeError, UnsupportedOperationError
from colbridge.plan.logical import Step
from colbridge.plan.row_changing import filter_changing_rows
from colbridge.testing.asserts import as_polars, assert_same_as_polars
from colbridge.testing.cuda_host import KERNEL_TIERS, compute_on_tier
from tests.ordered.ordered_data import cut_table

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FLOATS = st.one_of(st.none(), st.sampled_from([1.5, -2.0, 0.0, -0.0, float("nan"), 7.25]))
INTS = st.one_of(st.none(), st.integers(-4, 4))


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    """Columns ``x`` (float), ``i`` (int), ``s`` (string): nulls, NaN, offsets, chunks."""
    n = draw(st.integers(0, 30))
    offset = draw(st.sampled_from([0, 2]))
    xs = draw(st.lists(FLOATS, min_size=n + offset, max_size=n + offset))
    ints = draw(st.lists(INTS, min_size=n + offset, max_size=n + offset))
    table = pa.table({
        "x": pa.array(xs, pa.float64()), "i": pa.array(ints, pa.int64()),
        "s": pa.array([None if v is None else f"s{v % 3}" for v in ints], pa.string()),
    })  # fmt: skip
    return cut_table(table, offset, n, draw(st.sampled_from([1, 2, 3])))


#: outputs of one select, each a function of the library (polars or colbridge) and
#: the drawn numbers; ``unique`` keeps the order of first appearance in both
CASES: dict[str, Any] = {
    "filter": lambda m, k, j: [m.col("x").filter(m.col("i") > j),
                               m.col("s").filter(m.col("i") > j)],
    "head": lambda m, k, j: [m.col("x").head(k), m.col("i").head(k), m.col("s").head(k)],
    "tail": lambda m, k, j: [m.col("i").tail(k), m.col("s").tail(k)],
    "slice": lambda m, k, j: [m.col("x").slice(j, k), m.col("i").slice(j, k)],
    "slice to the end": lambda m, k, j: [m.col("x").slice(j)],
    "gather_every": lambda m, k, j: [m.col("i").gather_every(k + 1, abs(j))],
    "drop_nulls": lambda m, k, j: [m.col("i").drop_nulls(), m.col("i").drop_nulls().alias("y")],
    "unique": lambda m, k, j: [m.col("i").unique(maintain_order=True)],
    "unique strings": lambda m, k, j: [m.col("s").unique(maintain_order=True)],
    "mode": lambda m, k, j: [m.col("x").mode(maintain_order=True)],
    "mode of strings": lambda m, k, j: [m.col("s").mode(maintain_order=True),
                                       m.col("i").n_unique().alias("n")],
    "arithmetic": lambda m, k, j: [(m.col("x").head(k) * 2 + m.col("i").head(k)).alias("y"),
                                  m.col("x").head(k).is_nan().alias("nan")],
    "with reductions": lambda m, k, j: [
        m.col("i").filter(m.col("x") > 0), m.col("i").sum().alias("total"),
        (m.col("i").filter(m.col("x") > 0) - m.col("i").filter(m.col("x") > 0).mean())
        .alias("centred"), m.len().alias("rows"), m.lit(3).alias("three")],
    "ordered after the filter": lambda m, k, j: [
        m.col("i").filter(m.col("x").is_not_null()).cum_sum().alias("run"),
        m.col("x").filter(m.col("x").is_not_null()).shift(1).alias("before"),
        m.col("i").filter(m.col("x").is_not_null()).diff().alias("step")],
    "strings mapped": lambda m, k, j: [m.col("s").tail(k).str.to_uppercase().alias("up"),
                                      m.col("s").tail(k).str.len_bytes().alias("n")],
    "every column": lambda m, k, j: [m.all().head(k)],
    "ranked, then the first rows": lambda m, k, j: [m.col("i").rank("min").head(k)],
    "the first rows, then ranked": lambda m, k, j: [m.col("i").head(k).rank("min")],
}


@SETTINGS
@given(table=tables(), case=st.sampled_from(sorted(CASES)), k=st.integers(0, 12),
       j=st.integers(-6, 6))  # fmt: skip
def test_equal_polars(table: pa.Table, case: str, k: int, j: int) -> None:
    assert_same_as_polars(table, lambda m, f: f.select(CASES[case](m, k, j)))


@SETTINGS
@given(table=tables(), k=st.integers(0, 12), column=st.sampled_from(["x", "i", "s"]))
def test_top_and_bottom_k_hold_polars_values(table: pa.Table, k: int, column: str) -> None:
    """polars gives them in no set order: compared sorted."""
    df = pl.DataFrame(pl.from_arrow(table, rechunk=False))
    for method in ("top_k", "bottom_k"):
        want = df.select(getattr(pl.col(column), method)(k))
        got = df.gpu.select(getattr(cb.col(column), method)(k)).compute()
        assert_frame_equal(got.sort(column, nulls_last=True), want.sort(column, nulls_last=True))


def test_a_stream_in_batches_that_cut_the_kept_rows(tmp_path: Any) -> None:
    """Positions and first appearances go on across batches of 7 rows."""
    table = pa.table({"x": [float(v % 5) if v % 4 else None for v in range(60)],
                      "i": [v % 9 for v in range(60)]})  # fmt: skip
    path = os.path.join(str(tmp_path), "rows.parquet")
    pq.write_table(table, path)
    want = pl.DataFrame(pl.from_arrow(table))

    def outputs(m: Any) -> list[Any]:
        return [m.col("i").slice(5, 30), (m.col("x").slice(5, 30) * 2).alias("x2")]

    for select in (outputs, lambda m: [m.col("x").drop_nulls().cum_sum()],
                   lambda m: [m.col("i").tail(3)]):  # fmt: skip
        got = cb.lazy(pl.scan_parquet(path), batch_rows=7).select(select(cb)).compute()
        assert_frame_equal(as_polars(got), want.select(select(pl)))
    # a stream does not carry which values it has seen: refused by name, as in `filter`
    with pytest.raises(JobSpecError, match=r"is_first_distinct.*does not carry the values it "
                                           r"has seen"):
        cb.lazy(pl.scan_parquet(path), batch_rows=7).select(cb.col("i").unique()).compute()


def test_empty_frame_and_a_filter_that_keeps_nothing() -> None:
    empty = pl.DataFrame({"x": []}, schema={"x": pl.Float64})
    for df in (empty, pl.DataFrame({"x": [1.0, 2.0]})):
        def outputs(m: Any) -> list[Any]:
            return [m.col("x").filter(m.col("x") > 5), m.col("x").sum().alias("s")]

        assert_frame_equal(df.gpu.select(outputs(cb)).compute(), df.select(outputs(pl)))


@pytest.mark.parametrize(("outputs", "error", "words"), [
    (lambda m: [m.col("x").head(2), m.col("i")], ShapeError, "has the frame's rows"),
    (lambda m: [m.col("x").head(2), m.col("i").head(3)], ShapeError, "different predicates"),
    (lambda m: [m.col("x").head(2) + m.col("i")], ShapeError, "values on every row"),
    (lambda m: [m.col("x").drop_nulls(), m.col("i").drop_nulls()], ShapeError,
     "different predicates"),
])  # fmt: skip
def test_shapes_polars_refuses_are_refused(outputs: Any, error: type, words: str) -> None:
    """polars raises for these frames too (their lengths differ)."""
    df = pl.DataFrame({"x": [1.0, None, None, 4.0], "i": [1, 2, None, 4]})
    with pytest.raises(pl.exceptions.ShapeError):
        df.select(outputs(pl))
    with pytest.raises(error, match=words):
        df.gpu.select(outputs(cb)).compute()


@pytest.mark.parametrize("outputs", [
    lambda m: [m.col("x").filter(m.col("i") > 1).head(1)],
    lambda m: [m.col("x").head(2).cum_sum().over("i")],
])  # fmt: skip
def test_what_is_not_planned_is_refused_by_name(outputs: Any) -> None:
    df = pl.DataFrame({"x": [1.0, None, 3.0, 4.0], "i": [1, 2, None, 4]})
    with pytest.raises(UnsupportedOperationError, match="as an output of `select`"):
        df.gpu.select(outputs(cb)).compute()


def test_the_plan_is_a_filter_of_the_frame() -> None:
    """Values and whole-frame reductions before the filter, what is written after it."""
    a, b = cb.col("a"), cb.col("b")
    step = Step("select", (("a", (a.filter(b > 0) * 2).node), ("m", a.mean().node),
                           ("c", (b.filter(b > 0) - a.mean()).cum_sum().node)))  # fmt: skip
    values, keep, out = filter_changing_rows((step,), ["a", "b", "__kept_0"])
    assert [values.kind, keep.kind, out.kind] == ["with_columns", "filter", "select"]
    taken = dict(values.items)
    assert "__kept_0" not in taken  # a name the frame has is not taken
    assert set(taken.values()) == {a.node, b.node, a.mean().node, (b > 0).node}
    assert [name for name, _ in out.items] == ["a", "m", "c"]
    plain = (Step("select", (("a", a.node),)),)
    assert filter_changing_rows(plain, ["a"]) is plain


@pytest.mark.parametrize("tier", KERNEL_TIERS)
def test_every_kernel_tier(tier: str) -> None:
    """The filter and what is written after it, on the NumPy, compiled and CUDA (run on
    the host) kernels: rows by position, drops, ordered work over the kept rows, modes."""
    frame = pl.DataFrame({"x": [3.0, None, 1.0, 3.0, 7.0, float("nan"), -0.0, 2.0] * 300,
                          "s": ["a", "b", None, "a", "c", "b", "a", "d"] * 300})  # fmt: skip

    def outputs(m: Any) -> list[Any]:
        x = m.col("x")
        return [x.slice(5, 900).alias("a"), (x.slice(5, 900) * 2).alias("b"),
                m.col("s").slice(5, 900).alias("c"), x.sum().alias("total")]  # fmt: skip

    for select in (outputs, lambda m: [m.col("x").drop_nulls().cum_sum()],
                   lambda m: [m.col("s").mode(maintain_order=True)]):  # fmt: skip
        got = compute_on_tier(cb.lazy(frame).select(select(cb)), tier)
        assert_frame_equal(got, frame.select(select(pl)))
