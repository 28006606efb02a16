"""Grouped work on generated frames against polars: cases a differential hunt found wrong."""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb

_ENUM = pl.Enum(["b", "a", "zz"])


def _frame(rows: int) -> pl.DataFrame:
    df = pl.DataFrame({"g": [1, 2, 1][:rows], "s": ["a", None, "b"][:rows]})
    return df.with_columns(e=pl.col("s").cast(_ENUM), c=pl.col("s").cast(pl.Categorical))


def _aggs(m: Any) -> dict[str, Any]:
    e = m.col("e")
    return {"f": e.first(), "l": e.last(), "lo": e.min(), "ff": e.filter(m.col("g") > 5).first(),
            "cf": m.col("c").first()}  # fmt: skip


@pytest.mark.parametrize("rows", [0, 1, 3])
@pytest.mark.parametrize("source", ["polars", "pyarrow"])
def test_an_enum_taken_per_group_keeps_its_categories(rows: int, source: str, tier: str) -> None:
    # a group's first/last is taken from the Arrow column; on an empty frame the take
    # made nulls of the dictionary type, whose dictionary is empty: Enum([]) came back
    df = _frame(rows)
    frame = df.gpu if source == "polars" else cb.lazy(df.to_arrow())
    for keys in ({"by": "g"}, {"by": "e"}, {"k": cb.col("e")}):
        named = {k: v for k, v in keys.items() if k != "by"}
        by = [keys["by"]] if "by" in keys else []
        got = frame.group_by(*by, maintain_order=True, **named).agg(**_aggs(cb)).compute()
        pl_named = {k: pl.col("e") for k in named}
        want = df.group_by(*by, maintain_order=True, **pl_named).agg(**_aggs(pl))
        if isinstance(got, pa.Table):
            # an Arrow table carries the enum as an ordered dictionary: its values are the
            # categories (polars' own marking of an Enum is field metadata it reads alone)
            for name in ("f", "l", "lo", "ff", *named):
                column = got.column(name).combine_chunks()
                assert column.type.ordered
                assert column.dictionary.to_pylist() == _ENUM.categories.to_list()
            got = pl.from_arrow(got)
            assert isinstance(got, pl.DataFrame)
            got = got.with_columns(pl.col(n).cast(t) for n, t in want.schema.items()
                                   if t == _ENUM and got.schema[n] != t)  # fmt: skip
        assert_frame_equal(got, want)
