"""Dates and strings in fused CPU kernels vs polars and pandas, with a numba roofline.

Run: python benchmarks/temporal_strings.py [--size 1e7] [--repeats 5] [--json out.json]
     python benchmarks/temporal_strings.py --to-string [--size 1e6]
     python benchmarks/temporal_strings.py --business-days [--size 1e7]
     python benchmarks/temporal_strings.py --text-parts [--size 1e6]

The query, flights-style: keep rows whose carrier is "UA" and whose origin is JFK
or LGA, and give them the hour and weekday of ``time_hour``. Contenders, in one run:

* colbridge over a polars frame with String columns (each plain string column is
  dictionary-encoded once; later computes over the same buffers reuse it) and
  with Categorical columns (the codes are read in place);
* the same query in polars (lazy) and in pandas (Arrow-backed strings, NumPy
  datetimes);
* a hand-written numba kernel over the same integers (timestamps, dictionary
  codes and a lookup table) that computes the filter, then the fields of the kept
  rows only, packed: the roofline a fused kernel can approach.

``--to-string`` times ``cast(pl.String)`` of numbers and dates (and one
``dt.strftime``, one ``concat_str``) instead (new strings,
one per distinct value, written on the host): colbridge against polars, and Arrow's
own cast of the same column to strings as the writing cost a single C++ pass pays
(its texts differ from polars': ``1`` for ``1.0``, ``1e+15`` for
``1000000000000000.0``), each answer of colbridge checked against polars' first.

``--business-days`` times ``dt.add_business_days(n, holidays=..., roll="forward")`` and
``dt.is_business_day(holidays=...)`` of dates over 30 years (10% nulls, 300 holidays):
colbridge's closed form in its kernel against polars (a day-by-day loop per row),
NumPy's ``busday_offset``/``is_busday`` (the algorithm polars ported; no nulls, so
run on the column's values as they are) and a hand-written numba kernel of the same
closed form over the same buffers (the roofline).

``--text-parts`` times what is taken of strings' parts and matches
(``str.split(...).list.first()``/``len()``, ``str.split_exact(...).struct.field``,
``str.extract_all(...).list.len()``, ``str.replace_many``, ``str.contains_any``)
and string maps of all-distinct strings (a literal ``str.replace``,
``strip_suffix`` then ``pad_start``):
colbridge works once per distinct string on the host, polars and pandas once per
row. Two columns: 1,000 distinct routes, and e-mail addresses all distinct (the
worst case for colbridge, whose work is per distinct string). For the two splits,
the roofline is a hand-written numba kernel that finds each row's part in the
string bytes in place and writes it (no dictionary); for the literal replace, one
that finds each row's byte and writes the row with it replaced; for ``strip_suffix``
then ``pad_start``, one that writes each row's kept bytes after its padding. Each answer is
checked against polars' first. ``--only TEXT`` runs the cases whose name holds TEXT.

Ratios are contender time / colbridge time (> 1: colbridge is faster). Numbers
from a shared or small machine are indications, not measurements to quote.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable

import numba
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import colbridge as cb

CARRIERS = ["UA", "AA", "DL", "B6", "EV", "MQ", "US", "9E", "WN", "VX", "FL", "AS", "F9",
            "YV", "HA", "OO"]  # fmt: skip
ORIGINS = ["JFK", "LGA", "EWR"]


_BLOCK = 65_536


@numba.njit(parallel=True, cache=True, nogil=True)
def _roofline(ts, carrier, origin, ua, origin_ok, hour, weekday, keep, counts):  # type: ignore[no-untyped-def]
    # the query's work and no more: the filter's bitmap and kept rows per block, then the
    # fields of the kept rows only, written packed (as colbridge compacts in its pass)
    n, blocks = ts.shape[0], counts.shape[0]
    for b in numba.prange(blocks):
        kept = 0
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            k = (carrier[i] == ua) & origin_ok[origin[i]]
            keep[i] = k
            kept += k
        counts[b] = kept
    starts = np.empty(blocks, np.int64)
    total = 0
    for b in range(blocks):
        starts[b] = total
        total += counts[b]
    for b in numba.prange(blocks):
        at = starts[b]
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            if keep[i]:
                t = ts[i]
                days = t // 86_400_000_000
                rem = t - days * 86_400_000_000
                hour[at] = np.int8(rem // 3_600_000_000)
                weekday[at] = np.int8((days + 3) % 7 + 1)
                at += 1
    return total


def _time_all(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each contender; rounds interleave them so noise falls on all alike."""
    for fn in fns.values():
        fn()  # warm: compiles, encodings cached, page faults
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


def _data(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    start = np.datetime64("2013-01-01T00:00:00", "us").astype(np.int64)
    ts = start + rng.integers(0, 365 * 86_400, n) * 1_000_000
    mask = rng.random(n) < 0.01
    time_hour = pa.array(ts, pa.timestamp("us"), mask=mask)
    carrier = pa.array(np.array(CARRIERS)[rng.integers(0, len(CARRIERS), n)])
    origin = pa.array(np.array(ORIGINS)[rng.integers(0, len(ORIGINS), n)])
    return pl.from_arrow(pa.table({"time_hour": time_hour, "carrier": carrier, "origin": origin}))


def run(n: int, repeats: int) -> dict[str, float]:
    df = _data(n)
    cat = df.with_columns(pl.col("carrier").cast(pl.Categorical),
                          pl.col("origin").cast(pl.Categorical))  # fmt: skip
    pdf = df.to_pandas(use_pyarrow_extension_array=False)
    pdf["carrier"] = pdf["carrier"].astype(pd.ArrowDtype(pa.large_string()))
    pdf["origin"] = pdf["origin"].astype(pd.ArrowDtype(pa.large_string()))

    t = cb.col("time_hour")
    query = lambda frame: frame.gpu.filter(  # noqa: E731
        (cb.col("carrier") == "UA") & cb.col("origin").is_in(["JFK", "LGA"])
    ).with_columns(hour=t.dt.hour(), weekday=t.dt.weekday())
    q_str, q_cat = query(df), query(cat)
    lazy = df.lazy()

    def polars_query() -> object:
        stamp = pl.col("time_hour")
        keep = (pl.col("carrier") == "UA") & pl.col("origin").is_in(["JFK", "LGA"])
        return lazy.filter(keep).with_columns(hour=stamp.dt.hour(),
                                              weekday=stamp.dt.weekday()).collect()  # fmt: skip

    def pandas_query() -> object:
        kept = pdf[(pdf["carrier"] == "UA") & pdf["origin"].isin(["JFK", "LGA"])]
        stamps = kept["time_hour"].dt
        return kept.assign(hour=stamps.hour, weekday=stamps.day_of_week + 1)

    arrow = df.to_arrow()
    ts = arrow.column("time_hour").chunk(0).cast(pa.int64()).to_numpy(zero_copy_only=False)
    carrier = arrow.column("carrier").combine_chunks().dictionary_encode()
    origin = arrow.column("origin").combine_chunks().dictionary_encode()
    carrier_codes = carrier.indices.to_numpy()
    origin_codes = origin.indices.to_numpy()
    ua = np.int32(carrier.dictionary.to_pylist().index("UA"))
    origin_ok = np.array([v in ("JFK", "LGA") for v in origin.dictionary.to_pylist()])
    hour = np.empty(n, np.int8)
    weekday = np.empty(n, np.int8)
    keep = np.empty(n, np.bool_)
    counts = np.empty((n + _BLOCK - 1) // _BLOCK, np.int64)

    def roofline() -> tuple[np.ndarray, np.ndarray]:
        kept = _roofline(ts, carrier_codes, origin_codes, ua, origin_ok, hour, weekday, keep,
                         counts)  # fmt: skip
        return hour[:kept], weekday[:kept]

    times = _time_all({
        "colbridge (String)": lambda: q_str.compute(device="cpu"),
        "colbridge (Categorical)": lambda: q_cat.compute(device="cpu"),
        "polars": polars_query,
        "pandas": pandas_query,
        "numba roofline": roofline,
    }, repeats)  # fmt: skip
    got = q_str.compute(device="cpu")
    want = polars_query()
    assert got.select("hour", "weekday").equals(want.select("hour", "weekday"))  # type: ignore[attr-defined]
    # the roofline's answer too, on the rows whose time is not null (it reads no validity)
    hours, days = roofline()
    valid = want.filter(pl.col("hour").is_not_null())
    stamps = want["hour"].is_not_null().to_numpy()
    assert hours[stamps].tolist() == valid["hour"].to_list()
    assert days[stamps].tolist() == valid["weekday"].to_list()
    return times


def run_to_string(n: int, repeats: int) -> dict[str, dict[str, float]]:
    """``cast(pl.String)`` of columns with few and with all values distinct."""
    rng = np.random.default_rng(0)
    stamps = pl.Series(rng.integers(0, 2 * 10**15, n)).cast(pl.Datetime("us"))
    columns = {
        "int64, 1,000 distinct": pl.Series(rng.integers(0, 1_000, n)),
        "float64, 1,000 distinct (0.1 steps)": pl.Series(rng.integers(0, 1_000, n) / 10),
        "float64, all distinct": pl.Series(rng.standard_normal(n)),
        "date, 1,000 distinct": pl.Series(rng.integers(18_000, 19_000, n).astype(np.int32))
        .cast(pl.Date),
        "datetime[us], all distinct": stamps,
        "datetime[us], all distinct, %a %d %b %Y %H:%M": stamps,
    }
    out: dict[str, dict[str, float]] = {}
    for case, series in columns.items():
        frame = pl.DataFrame({"x": series})
        fmt = case.partition("distinct, ")[2] or None
        handle = frame.gpu.select(s=cb.col("x").dt.strftime(fmt) if fmt
                                  else cb.col("x").cast(pl.String))  # fmt: skip
        lazy = frame.lazy().select(s=pl.col("x").dt.strftime(fmt) if fmt
                                   else pl.col("x").cast(pl.String))  # fmt: skip
        arrow = frame.to_arrow().column("x")
        got, want = handle.compute(device="cpu"), lazy.collect()
        assert got.equals(want), case
        out[case] = _time_all({
            "colbridge": lambda h=handle: h.compute(device="cpu"),
            "polars": lazy.collect,
            "Arrow cast (other texts)": lambda a=arrow: a.cast(pa.string()),
        }, repeats)  # fmt: skip
    # concat_str of two string columns of 100 distinct values and an int64 of 10
    words = np.array([f"w{k}" for k in range(100)])
    frame = pl.DataFrame({"a": words[rng.integers(0, 100, n)], "b": words[rng.integers(0, 100, n)],
                          "i": rng.integers(0, 10, n)})  # fmt: skip
    handle = frame.gpu.select(s=cb.concat_str("a", "b", "i", separator="-"))
    lazy = frame.lazy().select(s=pl.concat_str("a", "b", "i", separator="-"))
    arrow = frame.to_arrow()
    assert handle.compute(device="cpu").equals(lazy.collect())
    out["concat_str(a, b, i), 100 x 100 x 10 distinct"] = _time_all({
        "colbridge": lambda: handle.compute(device="cpu"),
        "polars": lazy.collect,
        "Arrow cast+join (other)": lambda: pc.binary_join_element_wise(
            arrow.column("a"), arrow.column("b"), arrow.column("i").cast(pa.large_string()),
            pa.scalar("-", pa.large_string())),
    }, repeats)  # fmt: skip
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _part_bounds(offsets, data, sep, index, starts, stops, counts):  # type: ignore[no-untyped-def]
    # per row: where part `index` of the row split at byte `sep` starts and stops (-1:
    # no such part), and how many parts the row has
    for i in numba.prange(offsets.shape[0] - 1):
        part, start = 0, offsets[i]
        starts[i] = -1
        for j in range(offsets[i], offsets[i + 1]):
            if data[j] == sep:
                if part == index:
                    starts[i], stops[i] = start, j
                part += 1
                start = j + 1
        if part == index:
            starts[i], stops[i] = start, offsets[i + 1]
        counts[i] = part + 1


@numba.njit(parallel=True, cache=True, nogil=True)
def _gather_bytes(data, starts, stops, out_offsets, out):  # type: ignore[no-untyped-def]
    for i in numba.prange(starts.shape[0]):
        if starts[i] >= 0:
            out[out_offsets[i] : out_offsets[i + 1]] = data[starts[i] : stops[i]]


def _hand_part(column: pa.Array, sep: str, index: int) -> tuple[pa.Array, np.ndarray]:
    """Part ``index`` of each row split at the one-byte ``sep``, and each row's part count.

    The hand-written roofline: two parallel passes over the string bytes in place (the
    part's bounds, then its bytes), the result a new string column, no dictionary.
    """
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[: len(column) + 1]
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
    n = len(column)
    starts, stops = np.empty(n, np.int64), np.empty(n, np.int64)
    counts = np.empty(n, np.uint32)
    _part_bounds(offsets, data, np.uint8(ord(sep)), index, starts, stops, counts)
    lengths = np.where(starts >= 0, stops - starts, 0)
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(out_offsets[-1], np.uint8)
    _gather_bytes(data, starts, stops, out_offsets, out)
    valid = pa.array(starts >= 0).buffers()[1]
    parts = pa.LargeStringArray.from_buffers(n, pa.py_buffer(out_offsets), pa.py_buffer(out),
                                             valid)  # fmt: skip
    return parts, counts


@numba.njit(parallel=True, cache=True, nogil=True)
def _first_byte(offsets, data, byte, at):  # type: ignore[no-untyped-def]
    # per row: where its first `byte` is (-1: none)
    for i in numba.prange(offsets.shape[0] - 1):
        at[i] = -1
        for j in range(offsets[i], offsets[i + 1]):
            if data[j] == byte:
                at[i] = j
                break


@numba.njit(parallel=True, cache=True, nogil=True)
def _replaced_bytes(offsets, data, at, new, out_offsets, out):  # type: ignore[no-untyped-def]
    for i in numba.prange(at.shape[0]):
        o = out_offsets[i]
        if at[i] < 0:
            out[o : out_offsets[i + 1]] = data[offsets[i] : offsets[i + 1]]
            continue
        head = at[i] - offsets[i]
        out[o : o + head] = data[offsets[i] : at[i]]
        out[o + head : o + head + new.shape[0]] = new
        out[o + head + new.shape[0] : out_offsets[i + 1]] = data[at[i] + 1 : offsets[i + 1]]


def _hand_replace_first(column: pa.Array, byte: str, new: str) -> pa.Array:
    """Each row with its first one-byte ``byte`` replaced by ``new``: the roofline of a
    literal `str.replace` over distinct strings (two parallel passes over the bytes in
    place: where the byte is, then the new bytes; no dictionary, no nulls)."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[: len(column) + 1]
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
    at = np.empty(len(column), np.int64)
    _first_byte(offsets, data, np.uint8(ord(byte)), at)
    replacement = np.frombuffer(new.encode(), dtype=np.uint8)
    lengths = np.diff(offsets) + np.where(at >= 0, len(replacement) - 1, 0)
    out_offsets = np.zeros(len(column) + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(out_offsets[-1], np.uint8)
    _replaced_bytes(offsets, data, at, replacement, out_offsets, out)
    return pa.LargeStringArray.from_buffers(len(column), pa.py_buffer(out_offsets),
                                            pa.py_buffer(out))  # fmt: skip


@numba.njit(parallel=True, cache=True, nogil=True)
def _kept_lengths(offsets, data, suffix, kept):  # type: ignore[no-untyped-def]
    # per row: its byte length, less the suffix where it ends with it
    k = suffix.shape[0]
    for i in numba.prange(offsets.shape[0] - 1):
        n = offsets[i + 1] - offsets[i]
        ends = n >= k
        for j in range(k):
            if ends and data[offsets[i + 1] - k + j] != suffix[j]:
                ends = False
        kept[i] = n - k if ends else n


@numba.njit(parallel=True, cache=True, nogil=True)
def _padded_bytes(offsets, data, kept, fill, out_offsets, out):  # type: ignore[no-untyped-def]
    for i in numba.prange(kept.shape[0]):
        o = out_offsets[i]
        pad = out_offsets[i + 1] - o - kept[i]
        out[o : o + pad] = fill
        out[o + pad : out_offsets[i + 1]] = data[offsets[i] : offsets[i] + kept[i]]


def _hand_strip_pad(column: pa.Array, suffix: str, width: int, fill: str) -> pa.Array:
    """Each ASCII row without ``suffix``, padded on the left with ``fill`` to ``width``:
    the roofline of ``strip_suffix`` then ``pad_start`` (two parallel passes over the
    bytes in place: the kept lengths, then the padded bytes; ASCII, so bytes are
    characters; no dictionary, no nulls)."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)[: len(column) + 1]
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)
    kept = np.empty(len(column), np.int64)
    _kept_lengths(offsets, data, np.frombuffer(suffix.encode(), dtype=np.uint8), kept)
    out_offsets = np.zeros(len(column) + 1, np.int64)
    np.cumsum(np.maximum(kept, width), out=out_offsets[1:])
    out = np.empty(out_offsets[-1], np.uint8)
    _padded_bytes(offsets, data, kept, np.uint8(ord(fill)), out_offsets, out)
    return pa.LargeStringArray.from_buffers(len(column), pa.py_buffer(out_offsets),
                                            pa.py_buffer(out))  # fmt: skip


def run_text_parts(n: int, repeats: int, only: str = "") -> dict[str, dict[str, float]]:
    """Values taken of strings' parts and matches, over few and over all-distinct strings
    (the cases whose name holds ``only``)."""
    rng = np.random.default_rng(0)
    airports = np.array(["JFK", "LGA", "EWR", "LAX", "SFO", "ORD", "ATL", "SEA", "BOS", "DEN"])
    routes = np.array(["-".join(rng.choice(airports, size=2 + k % 3)) for k in range(1_000)])
    frame = pl.DataFrame({
        "route": routes[rng.integers(0, 1_000, n)],
        "email": [f"user{k}@host{k % 50}.org" for k in range(n)],
    })  # fmt: skip
    pdf = frame.to_pandas(use_pyarrow_extension_array=True)
    # the roofline reads large strings in place (polars' string views converted once,
    # outside the timing)
    plain = {c: frame[c].to_arrow().cast(pa.large_string()) for c in frame.columns}
    rooflines: dict[str, Callable[[], object]] = {
        "route.str.split('-'): first, len (1,000 distinct)":
            lambda: _hand_part(plain["route"], "-", 0),
        "email.str.split('@').list.get(1) (all distinct)":
            lambda: _hand_part(plain["email"], "@", 1)[0],
        "email.str.replace('@', ' at ', literal=True) (all distinct)":
            lambda: _hand_replace_first(plain["email"], "@", " at "),
        "email.str.strip_suffix('.org').str.pad_start(20, '*') (all distinct)":
            lambda: _hand_strip_pad(plain["email"], ".org", 20, "*"),
    }  # fmt: skip
    padded = frame.select(pl.col("email").str.strip_suffix(".org").str.pad_start(20, "*"))
    assert _hand_strip_pad(plain["email"], ".org", 20, "*").to_pylist() == \
        padded["email"].to_list()  # fmt: skip
    replaced = frame.select(pl.col("email").str.replace("@", " at ", literal=True))["email"]
    assert _hand_replace_first(plain["email"], "@", " at ").to_pylist() == replaced.to_list()
    checks = {
        "route.str.split('-'): first, len (1,000 distinct)": ("route", "-", 0),
        "email.str.split('@').list.get(1) (all distinct)": ("email", "@", 1),
    }
    for case, (column, sep, index) in checks.items():  # the hand kernel answers as polars
        parts, counts = _hand_part(plain[column], sep, index)
        want = frame.select(a=pl.col(column).str.split(sep).list.get(index, null_on_oob=True),
                            n=pl.col(column).str.split(sep).list.len())  # fmt: skip
        assert parts.to_pylist() == want["a"].to_list(), case
        assert counts.tolist() == want["n"].to_list(), case
    cases: dict[str, tuple[Callable[[object], object], Callable[[], object] | None]] = {
        "route.str.split('-'): first, len (1,000 distinct)": (
            lambda m: [m.col("route").str.split("-").list.first().alias("a"),  # type: ignore[attr-defined]
                       m.col("route").str.split("-").list.len().alias("n")],  # type: ignore[attr-defined]
            lambda: (pdf["route"].str.split("-").list[0], pdf["route"].str.split("-").list.len())),
        "route.str.split_exact('-', 1).struct.field('field_1') (1,000 distinct)": (
            lambda m: [m.col("route").str.split_exact("-", 1).struct.field("field_1")],  # type: ignore[attr-defined]
            lambda: pdf["route"].str.split("-").list[1]),
        "route.str.replace_many + contains_any (1,000 distinct)": (
            lambda m: [m.col("route").str.replace_many(["JFK", "LGA", "EWR"], ["NYC"]),  # type: ignore[attr-defined]
                       m.col("route").str.contains_any(["SFO", "LAX"]).alias("west")],  # type: ignore[attr-defined]
            None),
        "email.str.split('@').list.get(1) (all distinct)": (
            lambda m: [m.col("email").str.split("@").list.get(1)],  # type: ignore[attr-defined]
            lambda: pdf["email"].str.split("@").list[1]),
        "email.str.replace('@', ' at ', literal=True) (all distinct)": (
            lambda m: [m.col("email").str.replace("@", " at ", literal=True)],  # type: ignore[attr-defined]
            lambda: pdf["email"].str.replace("@", " at ", n=1, regex=False)),
        "email.str.strip_suffix('.org').str.pad_start(20, '*') (all distinct)": (
            lambda m: [m.col("email").str.strip_suffix(".org").str.pad_start(20, "*")],  # type: ignore[attr-defined]
            lambda: pdf["email"].str.removesuffix(".org").str.pad(20, side="left", fillchar="*")),
        "email.str.extract_all(r'\\d+').list.len() (all distinct)": (
            lambda m: [m.col("email").str.extract_all(r"\d+").list.len()],  # type: ignore[attr-defined]
            lambda: pdf["email"].str.findall(r"\d+").list.len()),
    }
    out: dict[str, dict[str, float]] = {}
    for case, (exprs, pandas_query) in cases.items():
        if only not in case:
            continue
        handle = frame.gpu.select(exprs(cb))
        lazy = frame.lazy().select(exprs(pl))
        assert handle.compute(device="cpu").equals(lazy.collect()), case
        contenders: dict[str, Callable[[], object]] = {
            "colbridge": lambda h=handle: h.compute(device="cpu"), "polars": lazy.collect}
        if pandas_query is not None:
            contenders["pandas (Arrow strings)"] = pandas_query
        if case in rooflines:
            contenders["hand kernel (roofline)"] = rooflines[case]
        out[case] = _time_all(contenders, repeats)
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _busday_roofline(days, steps, before, nth, on_mask, holidays, shifted, per_week, out,  # type: ignore[no-untyped-def]
                     flag):  # fmt: skip
    # colbridge's closed form (colbridge.types.business_days), written by hand: a day's
    # business index, plus n, back to its day; the weekday's mask bit less a holiday
    for i in numba.prange(days.shape[0]):
        d = np.int64(days[i])
        weeks, weekday = np.divmod(d - 4, 7)
        before_d = np.searchsorted(holidays, d)  # holidays < d
        index = weeks * per_week + before[weekday] - before_d + steps[i]
        index += np.searchsorted(shifted, index, side="right")  # holidays before the answer
        w, r = np.divmod(index, per_week)
        out[i] = 4 + 7 * w + nth[r]
        holiday = before_d < holidays.shape[0] and holidays[before_d] == d
        flag[i] = on_mask[weekday] and not holiday


def run_business_days(n: int, repeats: int) -> dict[str, float]:
    """``add_business_days`` and ``is_business_day`` of ``n`` dates, 300 holidays."""
    from colbridge.types.business_days import DEFAULT_WEEK_MASK, busday_table, holiday_days

    rng = np.random.default_rng(0)
    days = rng.integers(7_300, 18_250, n).astype(np.int32)  # 1990 to 2020
    holidays = sorted({dt_date(int(d)) for d in rng.integers(7_300, 18_250, 300)})
    frame = pl.DataFrame({
        "d": pl.Series(days).cast(pl.Date).set(pl.Series(rng.random(n) < 0.1), None),
        "n": rng.integers(-30, 30, n).astype(np.int32),
    })  # fmt: skip

    def exprs(m: object) -> dict[str, object]:
        d = m.col("d").dt  # type: ignore[attr-defined]
        return {"a": d.add_business_days(m.col("n"), holidays=holidays, roll="forward"),  # type: ignore[attr-defined]
                "b": d.is_business_day(holidays=holidays)}

    handle = frame.gpu.select(**exprs(cb))
    lazy = frame.lazy().select(**exprs(pl))
    assert handle.compute(device="cpu").equals(lazy.collect())
    mask = DEFAULT_WEEK_MASK
    hol = holiday_days(holidays, mask, "add_business_days")
    tables = [np.asarray(busday_table(mask, hol, which), np.int64)
              for which in ("before", "nth", "mask", "holidays", "shifted")]  # fmt: skip
    tables[3], tables[4] = tables[3][1:], tables[4][1:]  # searchsorted needs no sentinel
    arrow = frame.to_arrow()
    values = np.asarray(arrow.column("d").combine_chunks().buffers()[1]).view(np.int32)[:n]
    steps = arrow.column("n").to_numpy()
    out, flag = np.empty(n, np.int32), np.empty(n, np.bool_)

    def roofline() -> tuple[np.ndarray, np.ndarray]:
        _busday_roofline(values, steps, *tables[:2], tables[2].astype(np.bool_), *tables[3:],
                         sum(mask), out, flag)  # fmt: skip
        return out, flag

    roofline()
    valid = ~frame["d"].is_null().to_numpy()
    want = lazy.collect()
    assert (out[valid] == want["a"].to_physical().to_numpy()[valid]).all()
    numpy_days = values.astype("datetime64[D]")
    numpy_holidays = np.array(holidays, dtype="datetime64[D]")
    return _time_all({
        "colbridge": lambda: handle.compute(device="cpu"),
        "polars": lazy.collect,
        "NumPy busday (no nulls)": lambda: (
            np.busday_offset(numpy_days, steps, roll="forward", holidays=numpy_holidays),
            np.is_busday(numpy_days, holidays=numpy_holidays)),
        "hand kernel (roofline)": roofline,
    }, repeats)  # fmt: skip


def dt_date(day: int) -> object:
    """A day count as a ``datetime.date``."""
    import datetime

    return datetime.date(1970, 1, 1) + datetime.timedelta(days=day)


def _print_to_string(n: int, times: dict[str, dict[str, float]], title: str) -> None:
    print(f"{title}, {n:,} rows; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; numba threads {numba.get_num_threads()}")  # fmt: skip
    width = max(50, *(len(case) + 2 for case in times))
    print(f"{'column':<{width}}{'contender':<26}{'median ms':>11}{'vs colbridge':>14}")
    for case, row in times.items():
        for name, seconds in row.items():
            print(f"{case:<{width}}{name:<26}{seconds * 1e3:>11.2f}"
                  f"{seconds / row['colbridge']:>13.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=str, default=None)
    parser.add_argument("--to-string", action="store_true",
                        help="time cast(pl.String) of numbers and dates instead")
    parser.add_argument("--business-days", action="store_true",
                        help="time add_business_days and is_business_day instead")
    parser.add_argument("--text-parts", action="store_true",
                        help="time str.split/extract_all/replace_many and what lists give")
    parser.add_argument("--only", type=str, default="",
                        help="with --text-parts: the cases whose name holds this text")
    args = parser.parse_args()
    n = int(args.size)
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
               f"numba threads {numba.get_num_threads()}")  # fmt: skip
    times: dict[str, object]
    if args.business_days:
        days = run_business_days(n, args.repeats)
        _print_times(f"add_business_days + is_business_day, {n:,} dates; {machine}", days,
                     "colbridge", milliseconds=True)  # fmt: skip
        times = dict(days)
    elif args.to_string:
        written = run_to_string(n, args.repeats)
        _print_to_string(n, written, "cast(pl.String)")
        times = dict(written)
    elif args.text_parts:
        parts = run_text_parts(n, args.repeats, args.only)
        _print_to_string(n, parts, "values of strings' parts")
        times = dict(parts)
    else:
        query = run(n, args.repeats)
        _print_times(f"{n:,} rows; {machine}", query, "colbridge (String)", milliseconds=False)
        times = dict(query)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": n, "seconds": times}, fh, indent=2)


def _print_times(title: str, times: dict[str, float], base: str, *, milliseconds: bool) -> None:
    """One table: each contender's median and its time over ``base``'s."""
    scale, label = (1e3, "median ms") if milliseconds else (1.0, "median s")
    print(title)
    print(f"{'contender':<26}{label:>12}{'vs colbridge':>14}")
    for name, seconds in times.items():
        value = f"{seconds * scale:.2f}" if milliseconds else f"{seconds:.4f}"
        print(f"{name:<26}{value:>12}{seconds / times[base]:>13.2f}x")

if __name__ == "__main__":
    main()
