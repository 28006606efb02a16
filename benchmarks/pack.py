"""The feature-matrix pack: six columns of five dtypes into one float32 matrix.

Run: python benchmarks/pack.py [--sizes 1e5,336776,1e6,1e7] [--repeats 7]
                               [--json benchmarks/results/pack.json]

The columns are int64, int32, int16, float64, float32 and float64 in a polars
DataFrame (the case measured in the feature-matrix issue), first without nulls,
then with 10% nulls at random positions in every column. Contenders, in one run
with the rounds interleaved (`fused_cpu.time_all`), per case:

* ``cb.to_tensor(df, dtype="float32")`` in C (row-major) and F (column-major) order;
* polars: ``df.select(pl.all().cast(pl.Float32)).to_numpy()``;
* hand-written numba kernels, ``prange`` over the rows, the six columns written
  by name into a preallocated matrix (C and F): the roofline. They do not allocate
  the matrix; colbridge and polars do.

With nulls, two cases: filled (``nulls=0``; polars:
``df.select(pl.all().cast(pl.Float32).fill_null(0)).to_numpy()``) and kept
(``nulls="keep"``: 0 in null slots and a boolean validity matrix; polars: the
same plus ``df.select(pl.all().is_not_null()).to_numpy()``). The hand kernels
read the Arrow values and validity bitmaps directly, one flat ``prange`` over
rows that writes the values (and the validity) in the same pass. Every contender's
answer is checked before timing, and colbridge's also on a sliced frame (bitmap
bit offsets not a multiple of 8).

Ratios: polars time ÷ colbridge time (> 1: colbridge faster), and hand time ÷
colbridge time (colbridge's speed as a fraction of the roofline's). The issue's
goals: at least 1.5x polars from 1e5 to 1e7 rows, at least 0.9x the hand kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

import numpy as np
import polars as pl
import pyarrow as pa
from fused_cpu import machine, time_all
from numba import njit, prange

import colbridge as cb


@njit(parallel=True, cache=True)
def hand_c(a, b, c, d, e, f, out):  # type: ignore[no-untyped-def]
    for i in prange(a.shape[0]):
        out[i, 0] = a[i]
        out[i, 1] = b[i]
        out[i, 2] = c[i]
        out[i, 3] = d[i]
        out[i, 4] = e[i]
        out[i, 5] = f[i]


@njit(parallel=True, cache=True)
def hand_f(a, b, c, d, e, f, out):  # type: ignore[no-untyped-def]
    n = a.shape[0]
    for i in prange(n):
        out[i, 0] = a[i]
    for i in prange(n):
        out[i, 1] = b[i]
    for i in prange(n):
        out[i, 2] = c[i]
    for i in prange(n):
        out[i, 3] = d[i]
    for i in prange(n):
        out[i, 4] = e[i]
    for i in prange(n):
        out[i, 5] = f[i]


# With nulls: each column comes as (values, validity bitmap bytes, bit offset).
# Bit k of a bitmap is (bits[k >> 3] >> (k & 7)) & 1; the index is unsigned so
# numba adds no negative-index wraparound; the value is read and cast first, so
# the select compiles branch-free.


@njit(inline="always")
def _bit(bits, offset, i):  # type: ignore[no-untyped-def]
    k = np.uint64(offset + i)
    return (bits[k >> np.uint64(3)] >> (k & np.uint64(7))) & np.uint64(1)


@njit(parallel=True, cache=True)
def hand_c_fill(a, ma, oa, b, mb, ob, c, mc, oc, d, md, od, e, me, oe, f, mf, of, out):  # type: ignore[no-untyped-def]
    z = np.float32(0)
    for i in prange(a.shape[0]):
        x = np.float32(a[i])
        out[i, 0] = x if _bit(ma, oa, i) else z
        x = np.float32(b[i])
        out[i, 1] = x if _bit(mb, ob, i) else z
        x = np.float32(c[i])
        out[i, 2] = x if _bit(mc, oc, i) else z
        x = np.float32(d[i])
        out[i, 3] = x if _bit(md, od, i) else z
        x = np.float32(e[i])
        out[i, 4] = x if _bit(me, oe, i) else z
        x = np.float32(f[i])
        out[i, 5] = x if _bit(mf, of, i) else z


@njit(parallel=True, cache=True)
def hand_c_keep(a, ma, oa, b, mb, ob, c, mc, oc, d, md, od, e, me, oe, f, mf, of, out, valid):  # type: ignore[no-untyped-def]
    z = np.float32(0)
    for i in prange(a.shape[0]):
        ok = _bit(ma, oa, i)
        x = np.float32(a[i])
        out[i, 0] = x if ok else z
        valid[i, 0] = ok != 0
        ok = _bit(mb, ob, i)
        x = np.float32(b[i])
        out[i, 1] = x if ok else z
        valid[i, 1] = ok != 0
        ok = _bit(mc, oc, i)
        x = np.float32(c[i])
        out[i, 2] = x if ok else z
        valid[i, 2] = ok != 0
        ok = _bit(md, od, i)
        x = np.float32(d[i])
        out[i, 3] = x if ok else z
        valid[i, 3] = ok != 0
        ok = _bit(me, oe, i)
        x = np.float32(e[i])
        out[i, 4] = x if ok else z
        valid[i, 4] = ok != 0
        ok = _bit(mf, of, i)
        x = np.float32(f[i])
        out[i, 5] = x if ok else z
        valid[i, 5] = ok != 0


@njit(parallel=True, cache=True)
def hand_f_fill(a, ma, oa, b, mb, ob, c, mc, oc, d, md, od, e, me, oe, f, mf, of, out):  # type: ignore[no-untyped-def]
    """Column-major: one flat ``prange`` loop per column (as ``hand_f``)."""
    z = np.float32(0)
    n = a.shape[0]
    for i in prange(n):
        x = np.float32(a[i])
        out[i, 0] = x if _bit(ma, oa, i) else z
    for i in prange(n):
        x = np.float32(b[i])
        out[i, 1] = x if _bit(mb, ob, i) else z
    for i in prange(n):
        x = np.float32(c[i])
        out[i, 2] = x if _bit(mc, oc, i) else z
    for i in prange(n):
        x = np.float32(d[i])
        out[i, 3] = x if _bit(md, od, i) else z
    for i in prange(n):
        x = np.float32(e[i])
        out[i, 4] = x if _bit(me, oe, i) else z
    for i in prange(n):
        x = np.float32(f[i])
        out[i, 5] = x if _bit(mf, of, i) else z


@njit(parallel=True, cache=True)
def hand_f_keep(a, ma, oa, b, mb, ob, c, mc, oc, d, md, od, e, me, oe, f, mf, of, out, valid):  # type: ignore[no-untyped-def]
    z = np.float32(0)
    n = a.shape[0]
    for i in prange(n):
        ok = _bit(ma, oa, i)
        x = np.float32(a[i])
        out[i, 0] = x if ok else z
        valid[i, 0] = ok != 0
    for i in prange(n):
        ok = _bit(mb, ob, i)
        x = np.float32(b[i])
        out[i, 1] = x if ok else z
        valid[i, 1] = ok != 0
    for i in prange(n):
        ok = _bit(mc, oc, i)
        x = np.float32(c[i])
        out[i, 2] = x if ok else z
        valid[i, 2] = ok != 0
    for i in prange(n):
        ok = _bit(md, od, i)
        x = np.float32(d[i])
        out[i, 3] = x if ok else z
        valid[i, 3] = ok != 0
    for i in prange(n):
        ok = _bit(me, oe, i)
        x = np.float32(e[i])
        out[i, 4] = x if ok else z
        valid[i, 4] = ok != 0
    for i in prange(n):
        ok = _bit(mf, of, i)
        x = np.float32(f[i])
        out[i, 5] = x if ok else z
        valid[i, 5] = ok != 0


def frame(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    return pl.DataFrame({
        "a": rng.integers(0, 1000, n), "b": rng.integers(0, 1000, n).astype(np.int32),
        "c": rng.integers(0, 1000, n).astype(np.int16), "d": rng.random(n),
        "e": rng.random(n).astype(np.float32), "f": rng.random(n),
    })  # fmt: skip


def run(n: int, repeats: int) -> dict[str, float]:
    df = frame(n)
    cols = [df[c].to_numpy() for c in df.columns]
    out_c = np.empty((n, 6), np.float32)
    out_f = np.empty((n, 6), np.float32, order="F")
    expected = np.column_stack(cols).astype(np.float32)
    fns: dict[str, Callable[[], object]] = {
        "colbridge C": lambda: cb.to_tensor(df, dtype="float32").numpy(),
        "colbridge F": lambda: cb.to_tensor(df, dtype="float32", order="F").numpy(),
        "polars": lambda: df.select(pl.all().cast(pl.Float32)).to_numpy(),
        "hand C": lambda: (hand_c(*cols, out_c), out_c)[1],
        "hand F": lambda: (hand_f(*cols, out_f), out_f)[1],
    }

    def check(name: str, result: object) -> None:
        assert np.array_equal(np.asarray(result), expected), name

    return time_all(fns, repeats, check)


def with_nulls(df: pl.DataFrame, share: float = 0.1) -> pl.DataFrame:
    """``df`` with ``share`` of each column's values, at random rows, set to null."""
    rng = np.random.default_rng(1)
    n = df.height
    return pl.DataFrame(
        [s.scatter(np.flatnonzero(rng.random(n) < share), None) for s in df.get_columns()]
    ).rechunk()


def bitmaps(df: pl.DataFrame) -> list[object]:
    """Per column: its values, validity bitmap bytes and bit offset, read from Arrow."""
    flat: list[object] = []
    for s in df.get_columns():
        array = s.to_arrow()
        if isinstance(array, pa.ChunkedArray):
            (array,) = array.chunks
        validity, data = array.buffers()[:2]
        dtype = np.dtype(array.type.to_pandas_dtype())
        flat.append(
            np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize)
        )
        flat.append(np.frombuffer(validity, np.uint8))
        flat.append(array.offset)
    return flat


def expected_nulls(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    values = np.column_stack([s.fill_null(0).to_numpy() for s in df.get_columns()])
    valid = np.column_stack([s.is_not_null().to_numpy() for s in df.get_columns()])
    return values.astype(np.float32), valid


def check_sliced(df: pl.DataFrame) -> None:
    """colbridge and the hand kernels on a slice: bitmap bit offsets not a multiple of 8."""
    part = df.slice(3, max(df.height - 10, 0))
    values, valid = expected_nulls(part)
    flat = bitmaps(part)
    assert {o % 8 for o in flat[2::3]} == {3}, "the slice should start at bit 3"
    for order in ("C", "F"):
        filled = cb.to_tensor(part, dtype="float32", nulls=0, order=order)
        kept = cb.to_tensor(part, dtype="float32", order=order)
        assert np.array_equal(filled.numpy(), values), f"sliced fill {order}"
        assert np.array_equal(kept.numpy(), values), f"sliced keep {order}"
        assert kept.validity is not None, order
        assert np.array_equal(kept.validity, valid), f"sliced validity {order}"
        out = np.empty(values.shape, np.float32, order=order)
        mask = np.empty(values.shape, bool, order=order)
        (hand_c_keep if order == "C" else hand_f_keep)(*flat, out, mask)
        assert np.array_equal(out, values), f"hand {order}"
        assert np.array_equal(mask, valid), f"hand validity {order}"


def run_nulls(n: int, repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """Times with 10% nulls: (filled with 0, kept with a validity matrix)."""
    df = with_nulls(frame(n))
    check_sliced(df)
    flat = bitmaps(df)
    values, valid = expected_nulls(df)
    out_c = np.empty((n, 6), np.float32)
    out_f = np.empty((n, 6), np.float32, order="F")
    valid_c = np.empty((n, 6), bool)
    valid_f = np.empty((n, 6), bool, order="F")
    filled = pl.all().cast(pl.Float32).fill_null(0)

    def keep(order: str) -> tuple[object, object]:
        m = cb.to_tensor(df, dtype="float32", order=order)
        return m.numpy(), m.validity

    fill_fns: dict[str, Callable[[], object]] = {
        "colbridge C": lambda: cb.to_tensor(df, dtype="float32", nulls=0).numpy(),
        "colbridge F": lambda: cb.to_tensor(df, dtype="float32", nulls=0, order="F").numpy(),
        "polars": lambda: df.select(filled).to_numpy(),
        "hand C": lambda: (hand_c_fill(*flat, out_c), out_c)[1],
        "hand F": lambda: (hand_f_fill(*flat, out_f), out_f)[1],
    }
    keep_fns: dict[str, Callable[[], object]] = {
        "colbridge C": lambda: keep("C"),
        "colbridge F": lambda: keep("F"),
        "polars": lambda: (
            df.select(filled).to_numpy(),
            df.select(pl.all().is_not_null()).to_numpy(),
        ),
        "hand C": lambda: (hand_c_keep(*flat, out_c, valid_c), (out_c, valid_c))[1],
        "hand F": lambda: (hand_f_keep(*flat, out_f, valid_f), (out_f, valid_f))[1],
    }

    def check_fill(name: str, result: object) -> None:
        assert np.array_equal(np.asarray(result), values), name

    def check_keep(name: str, result: object) -> None:
        got, mask = result  # type: ignore[misc]
        assert np.array_equal(np.asarray(got), values), name
        assert np.array_equal(np.asarray(mask), valid), name

    return time_all(fill_fns, repeats, check_fill), time_all(keep_fns, repeats, check_keep)


CASES = {
    "": "no nulls",
    " fill": "10% nulls in every column, `nulls=0` (polars: `.fill_null(0)`)",
    " keep": '10% nulls in every column, `nulls="keep"`: values with 0 in null slots and a '
    "boolean validity matrix (polars: the filled matrix plus "
    "`select(pl.all().is_not_null()).to_numpy()`)",
}


def table(results: dict[int, dict[str, float]], suffix: str) -> list[str]:
    lines = [
        "| rows | colbridge C | colbridge F | polars | hand C | hand F | "
        "C vs polars | F vs polars | C ÷ hand C | F ÷ hand F |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, all_times in results.items():
        t = {k[: len(k) - len(suffix)]: v for k, v in all_times.items() if k.endswith(suffix)}
        if suffix == "":
            t = {k: v for k, v in all_times.items() if not k.endswith((" fill", " keep"))}
        ms = {k: v * 1e3 for k, v in t.items()}
        lines.append(
            f"| {n:,} | {ms['colbridge C']:.3f} ms | {ms['colbridge F']:.3f} ms | "
            f"{ms['polars']:.3f} ms | {ms['hand C']:.3f} ms | {ms['hand F']:.3f} ms | "
            f"{t['polars'] / t['colbridge C']:.2f} | {t['polars'] / t['colbridge F']:.2f} | "
            f"{t['hand C'] / t['colbridge C']:.2f} | {t['hand F'] / t['colbridge F']:.2f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e5,336776,1e6,1e7")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", default=None, help="write results here (and .md beside it)")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    for n in sizes:
        times = run(n, args.repeats)
        fill, keep = run_nulls(n, args.repeats)
        times.update({f"{k} fill": v for k, v in fill.items()})
        times.update({f"{k} keep": v for k, v in keep.items()})
        results[n] = times
    info = machine()
    lines = [
        "# Feature-matrix pack: 6 columns (int64, int32, int16, float64, float32, float64) "
        "→ float32",
        "",
        f"Machine: {info['cpu']}; {info['cores']}; {info['numba']}. {info['software']}.",
        f"Command: `python benchmarks/pack.py {' '.join(sys.argv[1:])}`; medians of "
        f"{args.repeats} interleaved rounds. Ratios > 1: colbridge faster.",
    ]
    for suffix, title in CASES.items():
        lines += ["", f"## {title[0].upper()}{title[1:]}", "", *table(results, suffix)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"machine": info, "seconds": {str(k): v for k, v in results.items()}},
                      fh, indent=2)  # fmt: skip
        with open(os.path.splitext(args.json)[0] + ".md", "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
