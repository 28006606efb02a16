"""``min``/``max`` of strings, categoricals and enums against polars.

Strings and categoricals in text order (UTF-8 bytes), enums in category order, as
polars orders them: whole column, ``group_by().agg()``, ``over``, after a filter,
of a string function, as a ``fill_null`` strategy; nulls, empty and one-row frames,
slices and chunks; a stream whose row groups hold other strings, in batches whose
per-group extremes (and temporal means) are merged; the CUDA code path (on the host).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host
from tests.grouped.grouped_data import frame


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["string", "large_string", "categorical"]),
    n=st.sampled_from([0, 1, 9, 200]),
    seed=st.integers(0, 2**31 - 1),
    groups=st.sampled_from([1, 3, 12]),
    nulls=st.sampled_from([0.0, 0.3, 1.0]),
    offset=st.sampled_from([0, 3]),
    chunks=st.sampled_from([1, 2]),
)
def test_equal_polars(kind: str, n: int, seed: int, groups: int, nulls: float, offset: int,
                      chunks: int) -> None:  # fmt: skip
    table = frame(n, seed, ("int64", kind), groups=groups, key_nulls=nulls, offset=offset,
                  chunks=chunks)  # fmt: skip
    typ = table.schema.field("h").type
    assume(not pa.types.is_null(getattr(typ, "value_type", typ)))  # polars' Null type

    def whole(m: Any, q: Any) -> Any:
        h = m.col("h")
        return q.select(lo=h.min(), hi=h.max(), kept=h.filter(m.col("g") > 0).max())

    def grouped(m: Any, q: Any) -> Any:
        h = m.col("h")
        return q.group_by("g", maintain_order=True).agg(lo=h.min(), hi=h.max(), n=h.count())

    def window(m: Any, q: Any) -> Any:
        h = m.col("h")
        return q.select(lo=h.min().over("g"), hi=h.max().over("g"), f=h.fill_null(strategy="max"),
                        is_lo=h == h.min())  # fmt: skip

    for steps in (whole, grouped, window):
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))


def test_enums_in_category_order_and_string_functions() -> None:
    df = pl.DataFrame({"s": ["b", "a", "c", None, "B"], "g": [1, 1, 2, 2, 1]})
    df = df.with_columns(e=pl.col("s").cast(pl.Enum(["c", "b", "a", "B"])))

    def steps(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(
            e_lo=m.col("e").min(), e_hi=m.col("e").max(), up=m.col("s").str.to_uppercase().max()
        )

    assert_frame_equal(steps(cb, df.gpu).compute(), steps(pl, df), check_row_order=False)
    got = df.gpu.select(lo=cb.col("e").min(), hi=cb.col("s").max()).compute()
    assert got.rows() == [("c", "c")]
    assert got.schema == pl.Schema({"lo": pl.Enum(["c", "b", "a", "B"]), "hi": pl.String})


def test_a_stream_and_the_cuda_code_path(tmp_path: Any) -> None:
    rng = np.random.default_rng(3)
    words = np.array([f"w{i:03d}" for i in range(150)] + ["", "Z", "é"], dtype=object)
    n = 3_000
    df = pl.DataFrame({"s": pa.array(words[rng.integers(0, len(words), n)],
                                     mask=rng.random(n) < 0.1),
                       "g": rng.integers(0, 7, n)})  # fmt: skip
    # the last row groups hold strings the first ones do not
    late = pl.int_range(pl.len()) > 2_200
    df = df.with_columns(s=pl.when(late).then("A" + pl.col("s")).otherwise(pl.col("s")))
    day = pl.date(2020, 1, 1) + pl.duration(days=pl.int_range(pl.len()) % 97 - 40)
    df = df.with_columns(c=pl.col("s").cast(pl.Categorical), d=day, n=pl.lit(None, pl.String),
                         t=day.cast(pl.Datetime("ms", "UTC")),
                         du=day - pl.date(2020, 1, 1))  # fmt: skip
    path = tmp_path / "s.parquet"
    df.write_parquet(path, row_group_size=400)

    def steps(m: Any, q: Any) -> Any:
        return q.group_by("g", maintain_order=True).agg(lo=m.col("s").min(), hi=m.col("s").max())

    def temporal(m: Any, q: Any) -> Any:
        d, du = m.col("d"), m.col("du")
        return q.group_by("g", maintain_order=True).agg(
            c=m.col("c").max(), n=m.col("n").min(), d_lo=d.min(), d_hi=d.max(),
            t=m.col("t").min(), du=du.max(), du_mean=du.mean(), d_mean=d.mean(),
        )

    want = steps(pl, df)
    streamed = steps(cb, cb.lazy(pl.scan_parquet(path), batch_rows=37)).compute()
    assert_frame_equal(streamed, want, check_row_order=False)
    # batches of 300 rows: the batches' per-group extremes and means merged
    for fn in (steps, temporal):
        batched = fn(cb, cb.lazy(pl.scan_parquet(path), batch_rows=300)).compute()
        assert_frame_equal(batched, fn(pl, df), check_row_order=False)
    windows = cb.lazy(pl.scan_parquet(path), batch_rows=300).with_columns(
        w=cb.col("s").max().over("g"), x=cb.col("d").min().over("g")).compute()  # fmt: skip
    assert_frame_equal(windows, df.with_columns(w=pl.col("s").max().over("g"),
                                                x=pl.col("d").min().over("g")))  # fmt: skip
    for fn in (steps, temporal):  # the CUDA code path, on the host
        on_host = pl.from_arrow(compute_on_host(fn(cb, cb.lazy(df.to_arrow()))))
        assert_frame_equal(on_host, fn(pl, df), check_row_order=False)
    # a whole column's least string is not folded from a stream's batches
    with pytest.raises(UnsupportedOperationError, match="compute it in memory"):
        pl.scan_parquet(path).gpu.select(cb.col("s").min()).compute()
