"""``str.to_time`` (and ``str.strptime(pl.Time)``) against polars.

polars reads times with chrono's ``NaiveTime``: an hour and a minute are needed,
seconds and their fraction optional, each number read greedily (``%H%M`` of "523"
is no time), a leap second the next minute's first second (``23:59:60`` none).
Generated strings mix valid, invalid and leap times, fractions of every length,
spaces, 12-hour clocks, nulls; formats with and without separators and fractions;
no format (polars' patterns, picked by the first value one of them reads, in row
order); ``strict`` both ways, where polars raises colbridge raises; sliced and
chunked columns, categoricals, the three frame kinds, the string language and the
CUDA code path.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import InvalidOperationError, UnsupportedOperationError
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.testing.cuda_host import compute_on_host

#: formats as users write them: separators or none, fractions, a 12-hour clock
FORMATS = (None, "%H:%M:%S", "%H:%M", "%T%.f", "%H:%M:%S%.3f", "%H%M%S", "%I:%M %p", "%R",
           "%H:%M:%S%.f", "%-H:%M")  # fmt: skip
_PIECES = ("0", "1", "05", "9", "12", "23", "24", "59", "60", ":", ".", ".5", ".123",
           ".1234567891", " ", "am", "PM", "x")  # fmt: skip
_CLOCK = st.builds(lambda h, m, s, f: f"{h}:{m:02d}{s}{f}", st.integers(0, 24),
                   st.integers(0, 60), st.sampled_from(["", ":00", ":59", ":60", ":7"]),
                   st.sampled_from(["", ".5", ".250", ".123456789", ".1234567891"]))  # fmt: skip
_TEXT = st.one_of(_CLOCK, st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join),
                  st.none())  # fmt: skip


def _column(texts: list[str | None], offset: int, categorical: bool) -> pa.ChunkedArray:
    values = pa.array(["pad"] * offset + texts, pa.string())[offset:]
    cut = len(texts) // 2
    column = pa.chunked_array([values[:cut], values[cut:]], pa.string())
    return column.dictionary_encode() if categorical else column


@settings(max_examples=120, deadline=None)
@given(texts=st.lists(_TEXT, max_size=10), fmt=st.sampled_from(FORMATS), strict=st.booleans(),
       offset=st.sampled_from([0, 2]), categorical=st.booleans())  # fmt: skip
def test_to_time_as_polars(texts: list[str | None], fmt: str | None, strict: bool,
                           offset: int, categorical: bool) -> None:  # fmt: skip
    table = pa.table({"s": _column(texts, offset, categorical)})

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s").cast(pl.String) if categorical else m.col("s")
        return q.select(t=s.str.to_time(fmt, strict=strict),
                        p=s.str.strptime(pl.Time, fmt, strict=False))  # fmt: skip

    assert_same_as_polars(table, steps)


@pytest.mark.parametrize(("texts", "want"), [
    (["10:59:60", "23:59:60", "10:59:60.5"], [dt.time(11), None, dt.time(11, 0, 0, 500000)]),
    (["523", "0523", "05230"], [None, dt.time(5, 23), None]),
    (["9:5", "09:05:07.123456789"], [dt.time(9, 5), None]),
])  # fmt: skip
def test_chrono_readings(texts: list[str], want: list[dt.time | None]) -> None:
    fmt = {"10:59:60": "%H:%M:%S%.f", "523": "%H%M"}.get(texts[0], "%H:%M")
    frame = pl.DataFrame({"s": texts})
    got = frame.gpu.select(cb.col("s").str.to_time(fmt, strict=False)).compute()["s"]
    assert got.to_list() == want == frame["s"].str.to_time(fmt, strict=False).to_list()


def test_the_pattern_is_that_of_the_first_value_read() -> None:
    # "x" reads with no pattern, "10:30" with `%R` only: `%R` then reads every row
    frame = pl.DataFrame({"s": ["x", "10:30", "10:30:15", None]})
    got = frame.gpu.select(cb.col("s").str.to_time(strict=False)).compute()
    assert got.equals(frame.select(pl.col("s").str.to_time(strict=False)))
    assert got["s"].to_list() == [None, dt.time(10, 30), None, None]
    with pytest.raises(InvalidOperationError, match=r"strict conversion of strings to time"):
        frame.gpu.select(cb.col("s").str.to_time()).compute()
    unreadable = pl.DataFrame({"s": ["10h30", None]})
    with pytest.raises(InvalidOperationError, match=r"could not find an appropriate format"):
        unreadable.gpu.select(cb.col("s").str.to_time()).compute()
    relaxed = unreadable.gpu.select(cb.col("s").str.to_time(strict=False)).compute()
    assert relaxed["s"].to_list() == [None, None]


def test_rows_that_do_not_decide_the_pattern_are_refused() -> None:
    # strings of two columns: which value comes first depends on the rows polars reads
    frame = pl.DataFrame({"a": ["10:30:15", None], "b": [None, "10:30"]})
    either = cb.coalesce(cb.col("a"), cb.col("b")).str.to_time(strict=False)
    with pytest.raises(UnsupportedOperationError, match=r"give the format"):
        frame.gpu.select(either).compute()


def test_the_string_language_and_frame_kinds() -> None:
    frame = pl.DataFrame({"s": ["07:45", "23:01", None]})
    want = frame.with_columns(t=pl.col("s").str.to_time("%H:%M"))
    got = cb.lazy(frame).eval("t = s.str.to_time('%H:%M')").compute()
    assert got.equals(want)
    pandas = cb.lazy(frame.to_pandas(use_pyarrow_extension_array=True)).with_columns(
        t=cb.col("s").str.to_time("%H:%M")).compute()
    assert pl.from_pandas(pandas).equals(want)


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    table = pa.table({"s": ["07:45:01.5", "x", None, "23:59:60", "10:59:60"] * 40})
    q = cb.lazy(table).select(t=cb.col("s").str.to_time("%H:%M:%S%.f", strict=False))
    on_host = compute_on_host(q)
    assert on_host.equals(q.compute(device="cpu"))
    want = pl.from_arrow(table).select(t=pl.col("s").str.to_time("%H:%M:%S%.f", strict=False))
    assert pl.from_arrow(on_host).equals(want)
