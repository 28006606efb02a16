"""Grouped work on the CUDA backend without a GPU: NVRTC compiles it, the host runtime runs it.

The generated CUDA C of grouped reductions (atomic updates of partial tables),
of per-group passes and of gathers in the row pass compiles with NVRTC for
sm_90; the very same text compiled with g++ and the test-only header runs
through the real CUDA segment runner (binding, row chunks, per-block tables,
`finalize_grouped`) and is compared with the CPU backend and polars. The host
runtime's threads run at once, so the tables' atomic updates really contend.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.backends.common import per_group_level, split_level
from colbridge.codegen import cuda as cuda_codegen
from colbridge.columns.frames import adapt_frame
from colbridge.plan.nullability import Nullability
from colbridge.runtime.execute import Columns, prepare
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from tests.grouped.grouped_data import frame


def _nvrtc_ready() -> bool:
    try:
        from colbridge.backends.cuda import compile_nvrtc

        compile_nvrtc('extern "C" __global__ void k() {}', "sm_90")
    except Exception:
        return False
    return True


def _kernels(q: Any) -> list[tuple[str, str]]:
    """(kind, CUDA source) of every kernel of the plan's first segment."""
    adapter = adapt_frame(q.frame)
    columns = Columns(adapter, [])
    plan = prepare(q.steps, adapter.names)
    out = []
    for seg in plan.typed(columns).segments:
        nullable = frozenset(n for n in seg.inputs if columns.get(n).null_count)
        nulls = Nullability(seg.types, nullable)
        for level in seg.agg_levels:
            aggs, by_keys = split_level(level)
            if aggs:
                out.append(("reduce", cuda_codegen.generate_reduce(aggs, seg.types, nulls).source))
            for grouped in by_keys.values():
                src = cuda_codegen.generate_grouped_reduce(grouped, seg.types, nulls)
                out.append(("grouped", src.source))
            for each in per_group_level(level).values():
                outputs = [(f"e{k}", node.arg) for k, node in enumerate(each)]
                src = cuda_codegen.generate_elementwise(outputs, None, seg.types, nulls)
                out.append(("per-group", src.source))
        if seg.outputs:
            src = cuda_codegen.generate_elementwise(seg.outputs, seg.mask, seg.types, nulls,
                                                    literals=seg.params)  # fmt: skip
            out.append(("elementwise", src.source))
    return out


def _queries(table: pa.Table) -> list[Any]:
    x, i, u, b, w = (cb.col(c) for c in "xiubw")
    q = cb.lazy(table)
    return [
        q.group_by("g").agg(s=x.sum(), m=x.mean(), sd=x.std(), mn=x.min(), mx=x.max(),
                            imn=i.min(), umx=u.max(), bmx=b.max(), bs=b.sum(), wm=w.mean(),
                            c=x.count(), nc=x.null_count(), fs=x.filter(i > 0).sum(),
                            fnc=x.filter(b).null_count()),
        q.with_columns(z=((x - x.mean()) / x.std()).over("g"), s=i.sum().over("g", "h"),
                       n=cb.len().over("g"), f=x.first().over("g")),
    ]


@pytest.mark.skipif(not _nvrtc_ready(), reason="NVRTC (nvidia-cuda-nvrtc-cu12) not usable here")
@pytest.mark.parametrize("nulls", [0.0, 0.3], ids=["no-nulls", "nulls"])
def test_grouped_kernels_compile_with_nvrtc(nulls: float) -> None:
    from colbridge.backends.cuda import compile_nvrtc

    table = frame(40, seed=1, key_kinds=("string", "int8"), value_nulls=nulls)
    kinds = set()
    for q in _queries(table):
        for kind, source in _kernels(q):
            kinds.add(kind)
            assert compile_nvrtc(source, "sm_90")
            if kind == "grouped":
                assert "atomicAdd" in source  # the GPU branch updates tables atomically
    assert kinds == {"grouped", "per-group", "elementwise"}


def _host_runs(q: Any, runtime: HostRuntime | None = None) -> None:
    got = compute_on_host(q, runtime)
    want = q.compute(device="cpu")
    assert_frame_equal(_polars(got), _polars(want), rel_tol=1e-12)


def _polars(result: Any) -> Any:
    import polars as pl

    return pl.from_arrow(result) if isinstance(result, pa.Table) else result


@pytest.mark.parametrize("kind", ["int64", "string", "float64", "categorical", "date32"])
def test_host_runtime_runs_grouped_passes(kind: str) -> None:
    # values without nulls: results without validity bitmaps (flat gathers)
    table = frame(150, seed=2, key_kinds=(kind, "bool"), value_nulls=0.0, offset=5)
    x, i, w = cb.col("x"), cb.col("i"), cb.col("w")
    q = cb.lazy(table)
    _host_runs(q.group_by("g").agg(s=x.sum(), c=x.count(), n=cb.len(), imn=i.min(),
                                   ws=w.sum(), fs=x.filter(i > 0).sum(), u=i.n_unique(),
                                   f=i.first()))  # fmt: skip
    _host_runs(q.with_columns(d=(x - x.mean()).over("g"), s=i.sum().over("g", "h"),
                              mx=w.max().over("h")))  # fmt: skip


def test_host_runtime_row_chunks_share_tables() -> None:
    # chunks of 64 rows: every launch adds to the same tables
    from colbridge.backends import cuda

    table = frame(300, seed=3, key_kinds=("int64",), value_nulls=0.0, groups=30)
    x, i = cb.col("x"), cb.col("i")
    q = cb.lazy(table).group_by("g").agg(s=x.sum(), c=i.count(), mn=i.min())
    runtime = HostRuntime()
    with cuda.options(max_chunk_rows=64):
        _host_runs(q, runtime)
    assert runtime.launches > 5


def test_host_runtime_runs_everything_with_nulls() -> None:
    table = frame(120, seed=4, key_kinds=("string", "int8"), value_nulls=0.3)
    for q in _queries(table):
        _host_runs(q)


def test_cuda_plan_matches_polars_where_no_bitmap_is_needed() -> None:
    import polars as pl

    table = frame(90, seed=5, key_kinds=("string",), value_nulls=0.0)
    x = cb.col("x")
    q = cb.lazy(table).group_by("g").agg(s=x.sum(), n=cb.len())
    got = _polars(compute_on_host(q, HostRuntime()))
    want = pl.from_arrow(table).group_by("g", maintain_order=True).agg(
        s=pl.col("x").sum(), n=pl.len())  # fmt: skip
    assert_frame_equal(got, want, rel_tol=1e-12)

