"""Fused CPU kernels end to end, against every peer and a hand-written roofline.

Run: python benchmarks/fused_cpu.py [--sizes 1e3,1e5,1e6,1e7] [--workloads NAME,...]
                                    [--background-load] [--repeats N] [--json out.json]

What keeps it honest:

* Every workload is computed by every contender that has the operation, in one
  run, with the rounds interleaved (contender 1, 2, ..., then again), so that
  machine noise and order effects fall on all of them alike; the table gives
  medians.
* Every contender's answer is compared with polars' eager answer (values,
  nulls; for colbridge and the hand kernels also the Arrow type) before it is
  timed: a contender that computes less, or something else, stops the run.
* For every workload a **hand-written numba kernel** (``hand_kernels.py``) is
  timed next to colbridge: flat ``for i in prange(n)`` loops over the values, validity
  bitmaps ANDed in a flat loop over their bytes (8 rows per byte, a loop LLVM
  vectorises), outputs written into buffers from ``pa.allocate_buffer`` and
  wrapped as Arrow arrays — what an ideal fused kernel does. It is timed on
  one thread and on numba's threads; the faster of the two is the roofline,
  and "colbridge ÷ hand kernel" is colbridge's speed as a fraction of it.
* A STREAM triad (``a = b + s*c``) is timed in the same rounds: the memory
  bandwidth no kernel that streams from DRAM can beat for long. "eff. GB/s"
  counts the bytes an ideal fused kernel must move (inputs read once, outputs
  written once, bitmaps included), divided by the median time.
* ``--background-load`` times every workload a second time while another
  process keeps one core busy, and prints the loaded figures next to the quiet
  ones.

Ratios are contender time ÷ colbridge (polars) time: > 1 means colbridge is
faster. colbridge runs on its default tier (``COLBRIDGE_CPU_TIER``, ``auto``);
plans are warmed before timing and background compiles awaited, so the timed
calls are the compiled kernels, as in a loop or a pipeline.

Contenders leave a workload out where they lack the operation or the
semantics: NumPy, numexpr and pandas.eval have no nulls; pyarrow.compute has
no integer floor division; numexpr and pandas.eval have no filter, z-score or
reduction step that returns the same result. numba's float ``max`` does not
vectorise, so in ``sum & max`` the hand kernel is a weaker roofline than
NumPy's ``max`` (NumPy is in that table without nulls).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import hand_kernels as hk
import numba
import numexpr as ne
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import colbridge as cb
from colbridge.backends.cpu import wait_for_background_compiles

#: The contender every ratio is taken against.
BASE = "colbridge (polars)"
HAND_1 = "hand kernel (1 thread)"
HAND_N = "hand kernel (threads)"
TRIAD = "numba triad"
NULL_FRACTION = 0.1

Contenders = dict[str, Callable[[], object]]


def _hand(make: Callable[[bool], Callable[[], object]]) -> Contenders:
    """The two hand-kernel contenders from ``make(threaded) -> contender``."""
    return {HAND_1: make(False), HAND_N: make(True)}


# -- data -----------------------------------------------------------------------------
@dataclass
class Data:
    """The same columns as Arrow arrays, a polars frame and a pandas frame.

    ``arrow`` arrays are one chunk each, read in place by the hand kernels and
    pyarrow; ``numpy`` holds their values (used by the contenders without nulls).
    pandas gets NumPy-backed columns, or its own nullable (masked) dtypes when
    there are nulls.
    """

    arrow: dict[str, pa.Array]
    polars: pl.DataFrame
    pandas: pd.DataFrame
    numpy: dict[str, np.ndarray]
    nulls: bool
    rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = self.polars.height

    def values(self, name: str) -> np.ndarray:
        return hk.values(self.arrow[name], self.numpy[name].dtype)

    def validity(self, name: str) -> np.ndarray | None:
        return hk.validity(self.arrow[name])


def make_data(columns: Mapping[str, np.ndarray], nulls: bool, seed: int = 1) -> Data:
    rng = np.random.default_rng(seed)
    masks = {k: rng.random(len(v)) < NULL_FRACTION if nulls else None for k, v in columns.items()}
    arrow = {k: pa.array(v, mask=masks[k]) for k, v in columns.items()}
    pldf = pl.from_arrow(pa.table(arrow))
    assert isinstance(pldf, pl.DataFrame)
    pldf = pldf.rechunk()
    arrow = {k: pldf[k].to_arrow() for k in columns}
    arrow = {
        k: a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for k, a in arrow.items()
    }
    if nulls:
        masked = {k: pd.array(v, dtype=f"{v.dtype.name.capitalize()}") for k, v in columns.items()}
        for k, arr in masked.items():
            arr[masks[k]] = pd.NA
        pdf = pd.DataFrame(masked)
    else:
        pdf = pd.DataFrame(dict(columns))
    numpy = {k: hk.values(arrow[k], v.dtype) for k, v in columns.items()}
    return Data(arrow, pldf, pdf, numpy, nulls)


def uniform_data(n: int, nulls: bool) -> Data:
    """a, b, c in [0.5, 1.5): sqrt and division stay finite."""
    rng = np.random.default_rng(0)
    return make_data({k: rng.random(n) + 0.5 for k in "abc"}, nulls)


def normal_data(n: int, nulls: bool) -> Data:
    """a, b standard normal: `2a + b > 1` keeps about a third of the rows."""
    rng = np.random.default_rng(0)
    return make_data({k: rng.standard_normal(n) for k in "ab"}, nulls)


def int_data(n: int, dtype: str) -> Data:
    """a, b integers in [-1000, 1000]: negatives exercise floor division, nothing overflows."""
    rng = np.random.default_rng(0)
    return make_data({k: rng.integers(-1000, 1001, n).astype(dtype) for k in "ab"}, nulls=False)


# -- workloads ------------------------------------------------------------------------
@dataclass
class Workload:
    """One workload at one size: the contenders (name -> call) and what they must produce."""

    title: str
    #: output columns compared with polars eager's answer
    outputs: tuple[str, ...]
    #: bytes an ideal fused kernel moves per row (inputs once, outputs once, bitmaps)
    bytes_per_row: float
    contenders: Contenders


def frame_contenders(data: Data, query: Callable[[Any, Any], Any]) -> Contenders:
    """colbridge and polars running one query, written once for both APIs.

    ``query(frame, ns)`` builds the query with ``ns.col``/``ns.when`` (``ns`` is
    ``polars`` or ``colbridge``), so every engine computes the same expression.
    """
    q_pl = query(data.polars.gpu, cb)
    q_pd = query(data.pandas.gpu, cb)
    lazy = query(data.polars.lazy(), pl)
    return {
        BASE: q_pl.compute,
        "colbridge (pandas)": q_pd.compute,
        "polars eager": lambda: query(data.polars, pl),
        "polars lazy": lazy.collect,
        "polars streaming": lambda: lazy.collect(engine="streaming"),
    }


def _bitmap_bytes(data: Data, count: int) -> float:
    return count / 8 if data.nulls else 0.0


def _expr_z(ns: Any) -> Any:
    a, b, c = ns.col("a"), ns.col("b"), ns.col("c")
    return (a * b + c).sqrt() * 2 - a / c


def _expr_w(ns: Any) -> Any:
    a, b, c = ns.col("a"), ns.col("b"), ns.col("c")
    return ns.when(a > b).then(a).otherwise(b) * c


def w_elementwise(n: int, outputs: int, nulls: bool) -> Workload:
    """``z = sqrt(a*b + c)*2 - a/c``; with 2 outputs ``w = when(a > b).then(a).otherwise(b)*c``."""
    data = uniform_data(n, nulls)
    two = outputs == 2

    def query(frame: Any, ns: Any) -> Any:
        return (
            frame.with_columns(z=_expr_z(ns), w=_expr_w(ns))
            if two
            else frame.with_columns(z=_expr_z(ns))
        )

    contenders = frame_contenders(data, query)
    pdf, table = data.pandas, pa.table(data.arrow)
    a, b, c = (data.numpy[k] for k in "abc")

    def pandas_eager() -> object:
        out = pdf.assign(z=np.sqrt(pdf.a * pdf.b + pdf.c) * 2 - pdf.a / pdf.c)
        if two:
            # a null condition takes `otherwise`, as in polars
            cond = (pdf.a > pdf.b).fillna(False) if nulls else pdf.a > pdf.b
            out = out.assign(w=pdf.a.where(cond, pdf.b) * pdf.c)
        return out

    def pyarrow_() -> object:
        ta, tb, tc = table["a"], table["b"], table["c"]
        z = pc.subtract(pc.multiply(pc.sqrt(pc.add(pc.multiply(ta, tb), tc)), 2), pc.divide(ta, tc))
        if not two:
            return {"z": z}
        cond = pc.fill_null(pc.greater(ta, tb), False)
        return {"z": z, "w": pc.multiply(pc.if_else(cond, ta, tb), tc)}

    contenders["pandas eager"] = pandas_eager
    contenders["pyarrow.compute"] = pyarrow_
    if not nulls:

        def pandas_eval() -> object:
            out = pdf.eval("z = sqrt(a * b + c) * 2 - a / c")
            if two:
                out["w"] = np.where(pdf.a > pdf.b, pdf.a, pdf.b) * pdf.c
            return out

        def numexpr_() -> object:
            env = {"a": a, "b": b, "c": c}
            z = ne.evaluate("sqrt(a * b + c) * 2 - a / c", local_dict=env)
            if two:
                return {"z": z, "w": ne.evaluate("where(a > b, a, b) * c", local_dict=env)}
            return {"z": z}

        def numpy_() -> object:
            z = np.sqrt(a * b + c) * 2 - a / c
            return {"z": z, "w": np.where(a > b, a, b) * c} if two else {"z": z}

        contenders.update({"numexpr": numexpr_, "numpy": numpy_, "pandas.eval": pandas_eval})
    contenders.update(_hand(lambda threaded: _hand_elementwise(data, two, threaded)))
    names = ("z", "w") if two else ("z",)
    title = "`z = sqrt(a*b + c)*2 - a/c`" + (
        ", `w = when(a > b).then(a).otherwise(b) * c`" if two else ""
    )
    return Workload(
        title=f"{title}, float64" + (", 10% nulls in every input" if nulls else ""),
        outputs=names,
        bytes_per_row=8 * (3 + len(names)) + _bitmap_bytes(data, 3 + len(names)),
        contenders=contenders,
    )


def _hand_elementwise(data: Data, two: bool, threaded: bool) -> Callable[[], object]:
    a, b, c = (data.values(k) for k in "abc")
    va, vb, vc = (data.validity(k) for k in "abc")
    n = data.rows
    f64 = pa.float64()

    def run() -> object:
        zbuf, z = hk.alloc(n, np.float64)
        vzbuf, vz = hk.alloc_bitmap(n) if data.nulls else (None, None)
        if not two:
            hk.pick(hk.K_Z, threaded)(a, b, c, va, vb, vc, z, vz)
            return {"z": hk.arrow(f64, n, zbuf, vzbuf)}
        wbuf, w = hk.alloc(n, np.float64)
        vwbuf, vw = hk.alloc_bitmap(n) if data.nulls else (None, None)
        hk.pick(hk.K_ZW, threaded)(a, b, c, va, vb, vc, z, w, vz, vw)
        return {"z": hk.arrow(f64, n, zbuf, vzbuf), "w": hk.arrow(f64, n, wbuf, vwbuf)}

    return run


def frame_round_trips(n: int) -> Contenders:
    """The least a ``with_columns(z=...)`` on a frame can do: the small-compute roofline.

    For the ``1 output`` workload's data (no nulls): read the three columns' buffers
    from the frame in place, run the hand kernel on one thread, wrap ``z`` as an Arrow
    array and add it to a new frame of the input's kind, with nothing else: no plan,
    no types checked, no nulls looked at. At 1,000 rows this is nearly all frame
    handling, which colbridge does too; what colbridge takes beyond it is its own
    fixed cost per compute.
    """
    data = uniform_data(n, nulls=False)
    kernel = hk.pick(hk.K_Z, False)
    f64 = pa.float64()

    def z_of(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> pa.Array:
        zbuf, z = hk.alloc(len(a), np.float64)
        kernel(a, b, c, None, None, None, z, None)
        return hk.arrow(f64, len(a), zbuf)

    def polars_trip() -> object:
        frame = data.polars
        a, b, c = (hk.values(pa.chunked_array(frame.get_column(k)).chunk(0), np.float64)
                   for k in "abc")  # fmt: skip
        return frame.hstack([pl.Series("z", z_of(a, b, c))])

    def pandas_trip() -> object:
        frame = data.pandas
        a, b, c = (frame[k].to_numpy(copy=False) for k in "abc")
        out = frame.copy(deep=False)
        out.insert(len(out.columns), "z", pd.arrays.ArrowExtensionArray(z_of(a, b, c)))
        return out

    return {"frame round trip (polars)": polars_trip, "frame round trip (pandas)": pandas_trip}


def w_integer(n: int, dtype: str) -> Workload:
    """``q = (a*3 + b) // 7`` (floor division) and ``p = a*3 > b`` on two integer columns."""
    data = int_data(n, dtype)

    def query(frame: Any, ns: Any) -> Any:
        a, b = ns.col("a"), ns.col("b")
        return frame.with_columns(q=(a * 3 + b) // 7, p=a * 3 > b)

    contenders = frame_contenders(data, query)
    pdf = data.pandas
    a, b = data.numpy["a"], data.numpy["b"]
    env = {"a": a, "b": b}
    contenders["pandas eager"] = lambda: pdf.assign(q=(pdf.a * 3 + pdf.b) // 7, p=pdf.a * 3 > pdf.b)
    contenders["numexpr"] = lambda: {
        "q": ne.evaluate("(a * 3 + b) // 7", local_dict=env),
        "p": ne.evaluate("a * 3 > b", local_dict=env),
    }
    contenders["numpy"] = lambda: {"q": (a * 3 + b) // 7, "p": a * 3 > b}
    contenders["pandas.eval"] = lambda: pdf.eval("q = (a * 3 + b) // 7\np = a * 3 > b")
    typ = pa.from_numpy_dtype(np.dtype(dtype))
    ha, hb = data.values("a"), data.values("b")

    def make(threaded: bool) -> Callable[[], object]:
        def run() -> object:
            qbuf, q = hk.alloc(n, dtype)
            pbuf = pa.allocate_buffer(8 * ((n + 63) // 64))
            hk.pick(hk.K_INT, threaded)(ha, hb, q, np.frombuffer(pbuf, dtype=np.uint64))
            return {"q": hk.arrow(typ, n, qbuf), "p": hk.arrow(pa.bool_(), n, pbuf)}

        return run

    contenders.update(_hand(make))
    size = np.dtype(dtype).itemsize
    return Workload(
        title=f"`q = (a*3 + b) // 7`, `p = a*3 > b`, {dtype}",
        outputs=("q", "p"),
        bytes_per_row=3 * size + 1 / 8,
        contenders=contenders,
    )


def w_filter(n: int, nulls: bool) -> Workload:
    """``w = a*2 + b``, then ``filter(w > 1)`` (about a third of the rows kept)."""
    data = normal_data(n, nulls)

    def query(frame: Any, ns: Any) -> Any:
        a, b = ns.col("a"), ns.col("b")
        return frame.with_columns(w=a * 2 + b).filter(ns.col("w") > 1)

    contenders = frame_contenders(data, query)
    pdf, table = data.pandas, pa.table(data.arrow)
    a, b = data.numpy["a"], data.numpy["b"]

    def pandas_eager() -> object:
        out = pdf.assign(w=pdf.a * 2 + pdf.b)
        keep = out.w > 1
        return out[keep.fillna(False) if nulls else keep]

    def pyarrow_() -> object:
        w = pc.add(pc.multiply(table["a"], 2), table["b"])
        return table.append_column("w", w).filter(pc.greater(w, 1))  # nulls are dropped

    def numpy_() -> object:
        w = a * 2 + b
        keep = w > 1
        return {"a": a[keep], "b": b[keep], "w": w[keep]}

    contenders["pandas eager"] = pandas_eager
    contenders["pyarrow.compute"] = pyarrow_
    if not nulls:
        contenders["numpy"] = numpy_
    ha, hb = data.values("a"), data.values("b")
    va, vb = data.validity("a"), data.validity("b")
    nblocks = (n + hk.BLOCK - 1) // hk.BLOCK

    def make(threaded: bool) -> Callable[[], object]:
        count, write = hk.pick(hk.K_FILTER_COUNT, threaded), hk.pick(hk.K_FILTER_WRITE, threaded)

        def run() -> object:
            counts = np.empty(nblocks, dtype=np.uint64)
            count(ha, hb, va, vb, hk.BLOCK, counts)
            starts = np.zeros(nblocks + 1, dtype=np.int64)
            np.cumsum(counts, out=starts[1:])
            kept = int(starts[-1])
            bufs = [hk.alloc(kept, np.float64) for _ in range(3)]
            write(ha, hb, va, vb, hk.BLOCK, starts, *(view for _, view in bufs))
            return {
                k: hk.arrow(pa.float64(), kept, buf)
                for k, (buf, _) in zip("abw", bufs, strict=True)
            }

        return run

    contenders.update(_hand(make))
    kept_fraction = float(np.mean(_hand_keep(data)))
    return Workload(
        title="`w = a*2 + b`, then `filter(w > 1)`, float64" + (", 10% nulls" if nulls else ""),
        outputs=("a", "b", "w"),
        bytes_per_row=16 + 24 * kept_fraction + _bitmap_bytes(data, 2),
        contenders=contenders,
    )


def _hand_keep(data: Data) -> np.ndarray:
    keep = data.numpy["a"] * 2 + data.numpy["b"] > 1
    for k in "ab":
        keep &= ~np.asarray(data.arrow[k].is_null())
    return keep


def w_zscore(n: int, nulls: bool) -> Workload:
    """``z = (a - a.mean()) / a.std()``: a reduction pass, then an elementwise pass."""
    data = normal_data(n, nulls)

    def query(frame: Any, ns: Any) -> Any:
        a = ns.col("a")
        return frame.with_columns(z=(a - a.mean()) / a.std())

    contenders = frame_contenders(data, query)
    pdf, arr = data.pandas, data.arrow["a"]
    a = data.numpy["a"]
    contenders["pandas eager"] = lambda: pdf.assign(z=(pdf.a - pdf.a.mean()) / pdf.a.std())
    contenders["pyarrow.compute"] = lambda: {
        "z": pc.divide(pc.subtract(arr, pc.mean(arr)), pc.stddev(arr, ddof=1))
    }
    if not nulls:
        contenders["numpy"] = lambda: {"z": (a - a.mean()) / a.std(ddof=1)}
    ha, va = data.values("a"), data.validity("a")

    def make(threaded: bool) -> Callable[[], object]:
        kernel = hk.pick(hk.K_ZSCORE, threaded)

        def run() -> object:
            zbuf, z = hk.alloc(n, np.float64)
            vzbuf, vz = hk.alloc_bitmap(n) if nulls else (None, None)
            kernel(ha, va, hk.BLOCK, z, vz)
            return {"z": hk.arrow(pa.float64(), n, zbuf, vzbuf)}

        return run

    contenders.update(_hand(make))
    return Workload(
        # `a` is read twice (the statistics, then the elementwise pass)
        title="`z = (a - a.mean()) / a.std()`, float64" + (", 10% nulls" if nulls else ""),
        outputs=("z",),
        bytes_per_row=24 + _bitmap_bytes(data, 3),
        contenders=contenders,
    )


def w_reduce(n: int, nulls: bool) -> Workload:
    """``select(a.sum(), b.max())``."""
    data = normal_data(n, nulls)

    def query(frame: Any, ns: Any) -> Any:
        return frame.select(ns.col("a").sum(), ns.col("b").max())

    contenders = frame_contenders(data, query)
    pdf, ta, tb = data.pandas, data.arrow["a"], data.arrow["b"]
    a, b = data.numpy["a"], data.numpy["b"]
    contenders["pandas eager"] = lambda: {"a": pdf.a.sum(), "b": pdf.b.max()}
    contenders["pyarrow.compute"] = lambda: {"a": pc.sum(ta), "b": pc.max(tb)}
    if not nulls:
        contenders["numpy"] = lambda: {"a": a.sum(), "b": b.max()}
    ha, hb = data.values("a"), data.values("b")
    va, vb = data.validity("a"), data.validity("b")

    def make(threaded: bool) -> Callable[[], object]:
        kernel = hk.pick(hk.K_SUM_MAX, threaded)

        def run() -> object:
            out = np.empty(2)
            kernel(ha, hb, va, vb, out)
            return {"a": pa.array(out[:1]), "b": pa.array(out[1:])}

        return run

    contenders.update(_hand(make))
    return Workload(
        title="`select(a.sum(), b.max())`, float64" + (", 10% nulls" if nulls else ""),
        outputs=("a", "b"),
        bytes_per_row=16 + _bitmap_bytes(data, 2),
        contenders=contenders,
    )


#: Every workload by name; each builds its data and contenders for a row count.
WORKLOADS: dict[str, Callable[[int], Workload]] = {
    "1 output": lambda n: w_elementwise(n, 1, nulls=False),
    "2 outputs": lambda n: w_elementwise(n, 2, nulls=False),
    "1 output + nulls": lambda n: w_elementwise(n, 1, nulls=True),
    "2 outputs + nulls": lambda n: w_elementwise(n, 2, nulls=True),
    "int64": lambda n: w_integer(n, "int64"),
    "int32": lambda n: w_integer(n, "int32"),
    "filter": lambda n: w_filter(n, nulls=False),
    "filter + nulls": lambda n: w_filter(n, nulls=True),
    "z-score": lambda n: w_zscore(n, nulls=False),
    "z-score + nulls": lambda n: w_zscore(n, nulls=True),
    "sum & max": lambda n: w_reduce(n, nulls=False),
    "sum & max + nulls": lambda n: w_reduce(n, nulls=True),
}


# -- checking answers against polars ---------------------------------------------------
def _as_arrow(x: Any) -> pa.Array:
    if isinstance(x, pa.ChunkedArray):
        return x.combine_chunks()
    if isinstance(x, pa.Array):
        return x
    if isinstance(x, pl.Series):
        return _as_arrow(x.to_arrow())
    if isinstance(x, pd.Series):
        arr = x.array
        # masked and Arrow-backed arrays know their Arrow form (nulls included);
        # NumPy-backed ones go through NumPy, so that NaN stays a value
        return _as_arrow(
            pa.array(arr) if hasattr(arr, "__arrow_array__") else pa.array(x.to_numpy())
        )
    if isinstance(x, np.ndarray):
        return pa.array(x)
    if isinstance(x, pa.Scalar):
        return pa.array([x.as_py()], type=x.type)
    return pa.array([x])  # a scalar from a reduction


def _columns(result: Any, names: tuple[str, ...]) -> dict[str, pa.Array]:
    return {k: _as_arrow(result[k]) for k in names}


def _difference(got: pa.Array, want: pa.Array, strict: bool) -> str | None:
    """What differs between two columns (None when they agree)."""
    if strict and got.type != want.type:
        return f"type {got.type} instead of {want.type}"
    if len(got) != len(want):
        return f"{len(got)} rows instead of {len(want)}"
    got_null = np.asarray(got.is_null())
    want_null = np.asarray(want.is_null())
    if not np.array_equal(got_null, want_null):
        return f"nulls differ in {int((got_null != want_null).sum())} rows"
    valid = ~want_null
    g = np.asarray(got.to_numpy(zero_copy_only=False))[valid]
    w = np.asarray(want.to_numpy(zero_copy_only=False))[valid]
    if pa.types.is_floating(want.type):
        same = np.allclose(g.astype(np.float64), w, rtol=1e-9, atol=1e-12, equal_nan=True)
    else:
        same = np.array_equal(g.astype(w.dtype), w)
    if not same:
        return "values differ"
    return None


def checker(name: str, workload: Workload) -> Callable[[str, object], None]:
    """Compare each contender's answer with polars eager's; raise on any difference."""
    expected = _columns(workload.contenders["polars eager"](), workload.outputs)

    def check(contender: str, result: object) -> None:
        if contender not in workload.contenders:
            return  # the triad: no answer to compare
        strict = contender.startswith(("colbridge", "hand kernel", "polars"))
        got = _columns(result, workload.outputs)
        for col, want in expected.items():
            problem = _difference(got[col], want, strict)
            if problem is not None:
                msg = (
                    f"{contender} disagrees with polars on `{col}` in workload {name!r}: {problem}"
                )
                raise RuntimeError(msg)

    return check


# -- timing -----------------------------------------------------------------------------
def time_all(
    fns: Mapping[str, Callable[[], object]],
    repeats: int,
    check: Callable[[str, object], None] | None = None,
) -> dict[str, float]:
    """Median time of each function; rounds interleave the contenders so that
    machine noise and order effects fall on all of them alike.

    Every function runs twice before timing (compiles, page faults; colbridge's
    ``auto`` tier compiles a plan when it recurs, in the background, which is
    awaited), then once more with its answer checked.
    """
    for _ in range(2):
        for fn in fns.values():
            fn()
    wait_for_background_compiles()
    for name, fn in fns.items():
        result = fn()
        if check is not None:
            check(name, result)
        del result
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(s) for name, s in samples.items()}


@contextlib.contextmanager
def background_load() -> Iterator[None]:
    """Keep one core busy with another process (a Python busy loop) for the duration."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start spinning
        yield
    finally:
        spinner.kill()
        spinner.wait()


def _triad_fn(n: int) -> Callable[[], object]:
    rng = np.random.default_rng(2)
    b, c = rng.random(n), rng.random(n)
    _, out = hk.alloc(n, np.float64)
    kernel = hk.K_TRIAD
    return lambda: kernel(out, b, c, 3.0)


def default_repeats(n: int) -> int:
    return 50 if n <= 100_000 else (15 if n <= 1_000_000 else 5)


def run(
    n: int,
    repeats: int | None = None,
    workloads: list[str] | None = None,
    loaded: bool = False,
) -> dict[str, Any]:
    """Time the workloads at n rows.

    Returns ``{"rows", "repeats", "triad_s", "workloads": {name: {"title",
    "bytes_per_row", "quiet": {contender: seconds}, "loaded": {...}}}}``
    ("loaded" only with ``loaded=True``). The triad is timed in every
    workload's rounds; ``triad_s`` is its best median.
    """
    repeats = repeats or default_repeats(n)
    triad = _triad_fn(n)
    triads: list[float] = []
    out: dict[str, Any] = {"rows": n, "repeats": repeats, "workloads": {}}
    for name in workloads or list(WORKLOADS):
        workload = WORKLOADS[name](n)
        fns = {**workload.contenders, TRIAD: triad}
        quiet = time_all(fns, repeats, checker(name, workload))
        triads.append(quiet.pop(TRIAD))
        entry: dict[str, Any] = {
            "title": workload.title,
            "bytes_per_row": workload.bytes_per_row,
            "quiet": quiet,
        }
        if loaded:
            with background_load():
                entry["loaded"] = time_all(fns, repeats)
            entry["loaded"].pop(TRIAD)
        out["workloads"][name] = entry
        del workload, fns
    out["triad_s"] = min(triads)
    return out


# -- reporting ------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_revision() -> str:
    try:
        proc = subprocess.run(
            ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=True,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return proc.stdout.strip()


def machine() -> dict[str, str]:
    """The machine and software a run was made on (call after a threaded kernel ran)."""
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "not started"
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} logical CPUs ({affinity} usable by this process)",
        "numba": f"numba {numba.__version__}, {numba.get_num_threads()} threads, "
        f"threading layer {layer}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}",
        "software": f"Python {platform.python_version()}, NumPy {np.__version__}, "
        f"pyarrow {pa.__version__}, polars {pl.__version__}, pandas {pd.__version__}, "
        f"numexpr {ne.__version__}, colbridge {_git_revision()}",
        "tier": f"COLBRIDGE_CPU_TIER={os.environ.get('COLBRIDGE_CPU_TIER', 'auto')}",
    }


def _peers(times: Mapping[str, float]) -> dict[str, float]:
    return {k: v for k, v in times.items() if not k.startswith(("colbridge", "hand kernel"))}


def hand_time(times: Mapping[str, float]) -> float:
    """The roofline: the faster of the one-thread and threaded hand kernels."""
    return min(times[HAND_1], times[HAND_N])


def summary(res: Mapping[str, Any], workload: str) -> dict[str, Any]:
    """Speed ratios of colbridge (polars) in one workload at one size (> 1: colbridge faster).

    ``best_peer`` is the fastest other library on the quiet machine; the busy
    figures (with ``--background-load``) compare with that same peer, and
    ``busy_over_quiet`` is the busy ratio over the quiet one.
    """
    w = res["workloads"][workload]
    quiet = w["quiet"]
    base = quiet[BASE]
    peers = _peers(quiet)
    best = min(peers, key=peers.__getitem__)
    out = {
        "colbridge_s": base,
        "vs_hand": hand_time(quiet) / base,
        "vs_streaming": quiet["polars streaming"] / base,
        "vs_eager": quiet["polars eager"] / base,
        "best_peer": best,
        "vs_best_peer": peers[best] / base,
    }
    if "loaded" in w:
        busy = w["loaded"]
        out["busy_colbridge_s"] = busy[BASE]
        out["busy_vs_hand"] = hand_time(busy) / busy[BASE]
        out["busy_vs_best_peer"] = busy[best] / busy[BASE]
        out["busy_over_quiet"] = out["busy_vs_best_peer"] / out["vs_best_peer"]
    return out


def markdown(runs: Mapping[int, Mapping[str, Any]], meta: Mapping[str, str]) -> str:
    lines = ["# fused CPU benchmark", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        "Times are medians of interleaved rounds. `÷ colbridge` = contender time ÷ "
        f"{BASE} time (> 1: colbridge faster); on the hand kernel rows it is colbridge's "
        "speed as a fraction of that kernel's (1.00: at the roofline). `eff. GB/s` = ideal "
        "bytes moved ÷ time. Every answer was checked against polars' before timing.",
    ]
    loaded = any("loaded" in w for r in runs.values() for w in r["workloads"].values())
    for n, res in runs.items():
        triad_gbs = 24 * n / res["triad_s"] / 1e9
        lines += ["", f"## {n:,} rows (median of {res['repeats']}); triad {triad_gbs:.1f} GB/s"]
        for name, w in res["workloads"].items():
            lines += ["", f"### {name}: {w['title']}; ideal {w['bytes_per_row']:.3g} bytes/row", ""]
            head = "| contender | time | ÷ colbridge | eff. GB/s |"
            rule = "|---|---:|---:|---:|"
            if loaded:
                head += " time, 1 core busy | ÷ colbridge, 1 core busy |"
                rule += "---:|---:|"
            lines += [head, rule]
            quiet = w["quiet"]
            for c, t in quiet.items():
                row = f"| {c} | {t * 1e3:.3f} ms | {t / quiet[BASE]:.2f}x | "
                row += f"{w['bytes_per_row'] * n / t / 1e9:.2f} |"
                if loaded:
                    lt = w["loaded"][c]
                    row += f" {lt * 1e3:.3f} ms | {lt / w['loaded'][BASE]:.2f}x |"
                lines.append(row)
    lines += ["", "## Summary: speed ratios of colbridge (polars), > 1: colbridge faster", ""]
    head = "| rows | workload | colbridge | ÷ hand kernel | vs polars streaming | vs polars eager"
    head += " | vs best peer |"
    rule = "|---:|---|---:|---:|---:|---:|---|"
    if loaded:
        head += " busy: colbridge | busy: ÷ hand kernel | busy: vs that peer | busy ÷ quiet |"
        rule += "---:|---:|---:|---:|"
    lines += [head, rule]
    for n, res in runs.items():
        for name in res["workloads"]:
            s = summary(res, name)
            row = (
                f"| {n:,} | {name} | {s['colbridge_s'] * 1e3:.3f} ms | {s['vs_hand']:.2f} | "
                f"{s['vs_streaming']:.2f} | {s['vs_eager']:.2f} | "
                f"{s['vs_best_peer']:.2f} ({s['best_peer']}) |"
            )
            if loaded:
                row += (
                    f" {s['busy_colbridge_s'] * 1e3:.3f} ms | {s['busy_vs_hand']:.2f} | "
                    f"{s['busy_vs_best_peer']:.2f} | {s['busy_over_quiet']:.2f} |"
                )
            lines.append(row)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e3,1e5,1e6,1e7", help="comma-separated row counts")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help=f"subset of: {'; '.join(WORKLOADS)}"
    )
    parser.add_argument("--repeats", type=int, default=None, help="rounds (default by size)")
    parser.add_argument(
        "--background-load", action="store_true",
        help="also time every workload with one core kept busy by another process",
    )  # fmt: skip
    parser.add_argument("--json", default=None, help="write raw medians here")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    runs = {}
    for n in sizes:
        runs[n] = run(n, args.repeats, chosen, args.background_load)
        print(f"  {n:,} rows done", file=sys.stderr)
    meta = {"command": f"`{shlex.join(sys.orig_argv)}`", **machine()}
    meta["background load"] = (
        "quiet runs, then the same runs with one core kept busy by a spinning process"
        if args.background_load
        else "none"
    )
    print(markdown(runs, meta))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"meta": meta, "runs": {str(k): v for k, v in runs.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
