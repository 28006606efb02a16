"""Lifetimes, aliasing and leaks of views, results and DLPack capsules.

Views (`colbridge.as_tensor`) outlive their source frames; results never
share memory with their inputs; writing through any view is refused; a DLPack
capsule is consumed at most once and an unconsumed one is freed. RSS after
10,000 ``compute`` calls and 10,000 view/DLPack round-trips grows by at most
5 % (measured in a fresh subprocess, after warm-up, from /proc/self/statm).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import colbridge as cb
from tests.reliability.fuzzing import FIGURES

ROOT = Path(__file__).resolve().parents[2]


def _ranges(table: pa.Table) -> list[tuple[int, int]]:
    out = []
    for column in table.columns:
        for chunk in column.chunks:
            for buf in chunk.buffers():
                if buf is not None and buf.size:
                    out.append((buf.address, buf.address + buf.size))
    return out


def test_views_outlive_their_frames() -> None:
    df = pl.DataFrame({"a": np.arange(1000, dtype=np.float64)})
    address = df["a"].to_numpy(allow_copy=False).ctypes.data  # polars' own buffer
    view = cb.as_tensor(df["a"])
    assert view.data_address == address
    del df
    gc.collect()
    for _ in range(3):  # churn memory so a dangling pointer would show
        np.ones(100_000).sum()
    assert view.data_address == address
    assert np.asarray(view).tolist() == list(np.arange(1000, dtype=np.float64))


def test_a_view_keeps_its_arrow_buffer_allocated_until_the_view_goes() -> None:
    # pyarrow's pool counts its live bytes: the buffer must stay allocated while only the
    # view refers to it, and be freed once the view is gone too
    gc.collect()
    base = pa.total_allocated_bytes()
    # computed by pyarrow, so its buffer comes from pyarrow's pool
    arr = pc.add(pa.array(np.arange(100_000, dtype=np.float64)), 0.0).slice(3)
    held = pa.total_allocated_bytes() - base
    assert held >= 100_000 * 8
    view = cb.as_tensor(arr)
    del arr
    gc.collect()
    assert pa.total_allocated_bytes() - base == held
    assert np.asarray(view)[:3].tolist() == [3.0, 4.0, 5.0]
    del view
    gc.collect()
    assert pa.total_allocated_bytes() - base < held


def test_results_never_alias_inputs() -> None:
    table = pa.table({"a": np.arange(64, dtype=np.float64), "b": np.arange(64, dtype=np.int32)})
    inputs = _ranges(table)
    for plan in (
        lambda q: q.with_columns(z=cb.col("a") * 1, w=cb.col("b") + 0),
        lambda q: q.select(z=cb.col("a").fill_null(0.0), w=cb.col("b").cast("int64")),
        lambda q: q.with_columns(z=cb.col("a")).filter(cb.col("b") >= 0),
    ):
        out = plan(cb.lazy(table)).compute(device="cpu")
        for name in out.column_names:
            if name in ("a", "b") and out.column(name) is table.column(name):
                continue  # untouched input columns are passed through, not results
            if name in ("z", "w"):
                for lo, hi in _ranges(out.select([name])):
                    assert all(hi <= ilo or lo >= ihi for ilo, ihi in inputs), name


def test_identity_outputs_are_zero_copy_renames_of_immutable_columns() -> None:
    # a same-type cast is planned as a rename: it shares the (immutable) Arrow buffer, as a
    # passed-through column does; only computed outputs get fresh buffers
    table = pa.table({"b": np.arange(8, dtype=np.int32)})
    out = cb.lazy(table).select(w=cb.col("b").cast("int32")).compute(device="cpu")
    shared = out.column("w").chunk(0).buffers()[1].address
    assert shared == table.column("b").chunk(0).buffers()[1].address
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(cb.as_tensor(out.column("w")))[0] = 1


def test_writing_through_any_view_is_refused() -> None:
    s = pl.Series("a", [1.0, 2.0, 3.0])
    view = cb.as_tensor(s)
    arr = np.asarray(view)
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 9.0
    with pytest.raises(ValueError, match="read-only"):
        view.numpy()[0] = 9.0
    with pytest.raises(ValueError, match="cannot set WRITEABLE"):
        arr.flags.writeable = True
    versioned = np.from_dlpack(view)  # NumPy asks for a versioned, read-only capsule
    with pytest.raises(ValueError, match="read-only"):
        versioned[0] = 9.0
    assert s.to_list() == [1.0, 2.0, 3.0]


def test_a_dlpack_capsule_is_consumed_once() -> None:
    torch = pytest.importorskip("torch")

    view = cb.as_tensor(pa.array([1.0, 2.0, 3.0]))
    capsule = view.__dlpack__(max_version=(1, 0))
    first = torch.from_dlpack(capsule)
    assert first.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises((RuntimeError, ValueError, BufferError)):
        torch.from_dlpack(capsule)  # a used capsule is renamed; a second use must fail
    legacy = view.__dlpack__()  # unversioned: a private copy
    t = torch.from_dlpack(legacy)
    with pytest.raises((RuntimeError, ValueError, BufferError)):
        torch.from_dlpack(legacy)
    t[0] = 5.0  # writable copy: the view is unchanged
    assert np.asarray(view).tolist() == [1.0, 2.0, 3.0]


LEAK_PROGRAM = r"""
import gc, json, os, numpy as np, pyarrow as pa, polars as pl, colbridge as cb

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

df = pl.DataFrame({"a": np.arange(2000, dtype=np.float64), "b": np.arange(2000) % 7})
q = df.gpu.with_columns(z=(cb.col("a") * cb.col("b")).sqrt() - cb.col("a").mean())
arr = pa.array(np.arange(2000, dtype=np.float64))

def computes(n):
    for _ in range(n):
        q.compute(device="cpu")

def views(n):
    for _ in range(n):
        v = cb.as_tensor(arr)
        x = np.from_dlpack(v)
        cap = v.__dlpack__(max_version=(1, 0))
        del cap  # never consumed: its deleter must free it
        legacy = v.__dlpack__()
        np.from_dlpack(type("C", (), {"__dlpack__": lambda s, **k: legacy,
                                       "__dlpack_device__": lambda s: (1, 0)})())
        del x, v, legacy

out = {}
for name, fn in (("compute", computes), ("views", views)):
    fn(2000); gc.collect()
    before = rss()
    fn(10000); gc.collect()
    after = rss()
    out[name] = {"before": before, "after": after, "growth": (after - before) / before}
print(json.dumps(out))
"""


def test_rss_growth_after_10000_computes_and_10000_dlpack_round_trips() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", LEAK_PROGRAM], env=env, capture_output=True,
                            text=True, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    FIGURES["rss"] = figures
    for name, f in figures.items():
        assert f["growth"] <= 0.05, f"{name}: RSS grew {f['growth']:.1%} ({f})"
