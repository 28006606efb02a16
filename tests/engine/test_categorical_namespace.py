"""``cat.len_bytes``, ``cat.len_chars``, ``cat.starts_with``, ``cat.ends_with`` and
``cat.slice`` of categoricals and enums against polars.

Each reads the labels as the ``str`` function of the same name reads strings, once per
category. Generated columns with nulls, offsets and chunks, labels of one to four
bytes per character; the result computed on further (grouped, filtered, compared);
the string language; the refusal of other types, as polars refuses them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.errors import ColbridgeError
from colbridge.testing.asserts import assert_same_as_polars
from tests.ordered.ordered_data import cut_table

LABELS = ["", "a", "ab", "héllo", "日本語", "a🙂b", "UA", "AAL", "zz top"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), offset=st.integers(0, 9),
       chunks=st.integers(1, 3), enum=st.booleans(), prefix=st.sampled_from(["", "a", "日"]),
       offset_chars=st.integers(-4, 4), length=st.sampled_from([None, 0, 1, 3]))  # fmt: skip
def test_equal_polars(seed: int, n: int, offset: int, chunks: int, enum: bool, prefix: str,
                      offset_chars: int, length: int | None) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    labels = np.array(LABELS, dtype=object)[rng.integers(0, len(LABELS), offset + n)]
    column = pa.array(labels.tolist(), mask=rng.random(offset + n) < 0.2)
    dtype = pa.dictionary(pa.int32(), pa.string())
    table = pa.table({"c": column.cast(pa.string()).dictionary_encode().cast(dtype),
                      "g": pa.array(rng.integers(0, 3, offset + n))})  # fmt: skip
    table = cut_table(table, offset, n, chunks)

    def steps(m: Any, f: Any) -> Any:
        c = m.col("c")
        return f.select(b=c.cat.len_bytes(), ch=c.cat.len_chars(),
                        s=c.cat.starts_with(prefix), e=c.cat.ends_with(prefix),
                        sl=c.cat.slice(offset_chars, length),
                        k=c.cat.slice(0, 1).n_unique().over("g"),
                        t=c.cat.len_chars().sum())  # fmt: skip

    if not enum:
        assert_same_as_polars(table, steps, kinds=("polars", "pyarrow"))
        return
    # an Enum (Arrow has no such type: the polars frame holds it)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    frame = frame.with_columns(pl.col("c").cast(pl.Enum(LABELS)))
    assert_frame_equal(steps(cb, frame.gpu).compute(), steps(pl, frame))


def test_the_string_language_and_refusals() -> None:
    frame = pl.DataFrame({"c": pl.Series(["UA", None, "AAL"], dtype=pl.Categorical),
                          "s": ["UA", "x", None]})  # fmt: skip
    got = cb.lazy(frame).eval('n = c.cat.len_chars(); h = c.cat.slice(0, 1) == "A"').compute()
    want = frame.select(n=pl.col("c").cat.len_chars(),
                        h=pl.col("c").cat.slice(0, 1) == "A")  # fmt: skip
    assert_frame_equal(got.select("n", "h"), want)
    with pytest.raises(ColbridgeError, match=r"needs a Categorical or an Enum, got string; "
                                             r"use `.str.len_bytes`"):  # fmt: skip
        frame.gpu.select(cb.col("s").cat.len_bytes()).compute()
    with pytest.raises(ColbridgeError, match="is not supported by colbridge"):
        cb.col("c").cat.get_categories()
    with pytest.raises(ColbridgeError, match=r"`cat.slice\(offset=...\)` takes an integer"):
        cb.col("c").cat.slice("1")  # type: ignore[arg-type]
