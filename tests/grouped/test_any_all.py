"""``any`` and ``all`` against polars: whole columns, groups, windows, filters, streams.

Both ways of ``ignore_nulls`` (nulls left out, or Kleene logic), booleans and
numbers (cast to Boolean strictly, as polars does: non-zero and NaN are true),
groups that are all null, empty frames, sliced and chunked inputs, the three
frame kinds, the string language, the CUDA code path; a stream merges them per
group and refuses the whole-column form, naming the way out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import JobSpecError, SchemaError, UnsupportedTypeError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.ordered.ordered_data import cut_table


def _table(n: int, seed: int, *, nulls: float, truth: float, groups: int, offset: int,
           chunks: int) -> pa.Table:  # fmt: skip
    rng = np.random.default_rng(seed)
    total = n + offset

    def mask() -> np.ndarray | None:
        return rng.random(total) < nulls if nulls else None

    floats = rng.choice(np.array([0.0, -0.0, 1.5, np.nan]), total)
    table = pa.table({
        "g": pa.array(rng.integers(0, groups, total), mask=rng.random(total) < 0.1),
        "b": pa.array(rng.random(total) < truth, mask=mask()),
        "i": pa.array(np.where(rng.random(total) < truth, rng.integers(-3, 3, total), 0),
                      mask=mask()),
        "f": pa.array(floats, mask=mask()),
    })  # fmt: skip
    return cut_table(table, offset, n, chunks)


def _both(m: Any, column: Any, ignore: bool) -> dict[str, Any]:
    return {"any": column.any(ignore_nulls=ignore), "all": column.all(ignore_nulls=ignore)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.sampled_from([0, 1, 3, 40, 300]),
    seed=st.integers(0, 2**31 - 1),
    nulls=st.sampled_from([0.0, 0.3, 1.0]),
    truth=st.sampled_from([0.0, 0.05, 0.5, 1.0]),
    groups=st.sampled_from([1, 4, 60]),
    offset=st.sampled_from([0, 3]),
    chunks=st.sampled_from([1, 3]),
    ignore=st.booleans(),
)
def test_any_and_all_equal_polars(n: int, seed: int, nulls: float, truth: float, groups: int,
                                  offset: int, chunks: int, ignore: bool) -> None:  # fmt: skip
    table = _table(n, seed, nulls=nulls, truth=truth, groups=groups, offset=offset,
                   chunks=chunks)  # fmt: skip

    def columns(m: Any) -> dict[str, Any]:
        out = {}
        for c in ("b", "i", "f"):
            for k, e in _both(m, m.col(c), ignore).items():
                out[f"{k}_{c}"] = e
        out["kept"] = m.col("b").filter(m.col("i") > 0).any(ignore_nulls=ignore)
        out["of_expr"] = (m.col("i") > 1).all(ignore_nulls=ignore)
        return out

    def whole(m: Any, q: Any) -> Any:
        return q.select(**columns(m))

    def grouped(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(**columns(m))

    def windows(m: Any, q: Any) -> Any:
        return q.select(**{k: e.over("g") for k, e in columns(m).items()},
                        mixed=m.col("b").any(ignore_nulls=ignore) | m.col("b"))  # fmt: skip

    for steps in (whole, grouped, windows):
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_every_frame_kind(tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLBRIDGE_CPU_TIER", tier)
    table = _table(300, 2, nulls=0.2, truth=0.1, groups=9, offset=0, chunks=2)
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        a=m.col("b").any(), z=m.col("i").all(ignore_nulls=False),
        w=(m.col("f") > 0).any().cast(m.Int8 if m is pl else "int8") * 2))  # fmt: skip


def test_the_string_language() -> None:
    table = pa.table({"g": [1, 1, 2], "b": [True, None, False], "i": [0, 3, None]})
    got = cb.lazy(table).eval("a = any(b)\nz = all(i > 0, ignore_nulls=False).over(g)")
    want = pl.from_arrow(table).with_columns(
        a=pl.col("b").any(), z=(pl.col("i") > 0).all(ignore_nulls=False).over("g"))
    assert pl.from_arrow(got.compute()).equals(want)


def test_strings_dates_and_bad_flags_are_refused() -> None:
    table = pa.table({"s": ["a", "b"], "d": pa.array([1, 2], pa.int32()).cast(pa.date32())})
    for column in ("s", "d"):
        with pytest.raises(UnsupportedTypeError, match=rf"column `{column}` has type .*`any`"):
            cb.lazy(table).select(cb.col(column).any()).compute()
        with pytest.raises(pl.exceptions.InvalidOperationError):  # as polars refuses them
            pl.from_arrow(table).select(pl.col(column).any())
    with pytest.raises(SchemaError, match=r"`all\(ignore_nulls='no'\)`: expected True or False"):
        cb.col("b").all(ignore_nulls="no")


def test_a_stream_merges_them_per_group_and_refuses_the_whole_column(tmp_path: Any) -> None:
    import pyarrow.parquet as pq

    from colbridge.io import pipeline

    table = _table(5_000, 6, nulls=0.3, truth=0.001, groups=40, offset=0, chunks=1)
    path = tmp_path / "a.parquet"
    pq.write_table(table, path, row_group_size=700)
    out = tmp_path / "o.parquet"
    pipeline(str(path), str(out), batch_rows=300,
             with_="a = any(b).over(g)\nz = all(i, ignore_nulls=False).over(g)")  # fmt: skip
    want = pl.from_arrow(table).with_columns(
        a=pl.col("b").any().over("g"), z=pl.col("i").all(ignore_nulls=False).over("g"))
    assert pl.read_parquet(out).equals(want)
    with pytest.raises(JobSpecError, match=r"whole-column reductions taken from all the rows .* "
                       r"or per group with `group_by\(\.\.\.\)\.agg\(\.\.\.\)`"):  # fmt: skip
        pl.scan_parquet(path).gpu.select(a=cb.col("b").any()).compute()


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = _table(3_000, 7, nulls=0.2, truth=0.01, groups=50, offset=0, chunks=1)
    q = cb.lazy(table).select("g", a=cb.col("b").any().over("g"),
                              z=cb.col("i").all(ignore_nulls=False).over("g"),
                              w=cb.col("f").any() & cb.col("b"))  # fmt: skip
    on_host = compute_on_host(q)
    assert on_host.equals(q.compute(device="cpu"))
    want = pl.from_arrow(table).select("g", a=pl.col("b").any().over("g"),
                                       z=pl.col("i").all(ignore_nulls=False).over("g"),
                                       w=pl.col("f").any() & pl.col("b"))  # fmt: skip
    assert pl.from_arrow(on_host).equals(want)
