"""The CUDA backend's runtime, run through the CuPy test double (no GPU here), against the CPU.

Every placement, chunking, async and fallback path runs the real backend code
with kernels compiled by NVRTC and executed by the g++ host shim, on the
double, which holds the backend to CuPy's and the driver's contracts (see
`colbridge.testing.cupy_double`). After every test the double must have seen
no contract breach, no queued work left behind and no host registration left.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.backends import cuda
from colbridge.backends.cuda import Geometry
from colbridge.backends.device import gpu_status, resolve_device
from colbridge.codegen.kernel import N_ERR_KINDS
from colbridge.memory.cuda import (
    device_info,
    host_registry,
    reserve,
    stream_pool,
    to_device,
    use_cupy,
)
from colbridge.testing.cupy_double import CupyDouble, DeviceSpec
from colbridge.testing.gpu_cases import assert_arrays_match, make_column

#: small devices: grids wrap around, reductions fill the device, memory runs out early
SMALL = DeviceSpec(sm_count=2, max_threads_per_sm=64, max_threads_per_block=64)


@pytest.fixture
def double() -> Iterator[CupyDouble]:
    d = CupyDouble(devices=[DeviceSpec(pageable_memory_access=True)])
    with use_cupy(d):
        yield d
    _clean(d)


def _clean(d: CupyDouble) -> None:
    gc.collect()
    d.check()
    assert d.pending() == 0, "work left queued on a stream"
    assert d.registered() == [], "host memory left registered"
    assert host_registry.registered(d) == []


def _table(n: int = 1003, offset: int = 5, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "a": make_column(rng, pa.float64(), n + offset, True),
        "b": make_column(rng, pa.int64(), n + offset, True),
        "c": make_column(rng, pa.bool_(), n + offset, True),
        "d": make_column(rng, pa.int32(), n + offset, False),
    }).slice(offset, n)  # fmt: skip


def _query(q: Any) -> Any:
    a, b, c, d = cb.col("a").clip(-1e6, 1e6), cb.col("b"), cb.col("c"), cb.col("d")
    return q.with_columns(
        x=a * 2 + b, y=b // 3, k=c & (a > 0), s=a.sum(), mx=b.max(), mn=d.min(),
        z=(a - a.mean()) / a.std(), m=b.mean(), w=d.cast("float32") * 0.5,
    ).filter((cb.col("b") > -20) | cb.col("k"))  # fmt: skip


def _same(got: pa.Table, want: pa.Table) -> None:
    assert got.column_names == want.column_names
    for name in got.column_names:
        assert_arrays_match(got.column(name), want.column(name), what=name, rtol=1e-12)


def _gpu(lf: Any) -> Any:
    return lf.compute(device="cuda", fallback="raise")


@pytest.mark.parametrize("chunk", [0, 128])
@pytest.mark.parametrize("placement", cuda.PLACEMENTS)
def test_every_placement_matches_the_cpu(double: CupyDouble, placement: str, chunk: int) -> None:
    table = _table()
    with cuda.options(placement=placement, max_chunk_rows=chunk):
        lf = _query(cb.lazy(table))
        got = _gpu(lf)
    _same(got, _query(cb.lazy(table)).compute(device="cpu"))
    kernels = lf.last_report.stats.kernels
    assert all(f"placement={placement}" in k for k in kernels)
    assert all(f" in {8 if chunk else 1} chunk(s)" in k for k in kernels), kernels
    # stream synchronisation only; nothing on the legacy default stream
    assert double.counts["device_syncs"] == 0
    assert double.counts["null_stream_ops"] == 0
    assert double.counts["pageable_copies"] == 0  # copies go through pinned staging
    assert double.counts["gpu_page_faults"] == 0  # managed memory is prefetched
    assert double.counts["unpooled_allocs"] == 0  # every buffer comes from a pool
    assert double.counts["streams_created"] == (2 if chunk else 1)
    assert double.counts["most_busy_streams"] == (2 if chunk else 1)  # chunks overlap
    waited = {entry[1] for entry in double.log if entry[0] in ("synchronize",
                                                               "event synchronize")}
    assert 0 not in waited  # the host waited on the run's own streams only
    if placement == "managed":
        assert double.counts["prefetch_to_device"] > 0
        assert double.counts["prefetch_to_host"] > 0
    if placement in ("host-mapped", "pageable"):
        assert double.counts["h2d_copies"] == 0


def test_results_live_where_the_placement_says(double: CupyDouble) -> None:
    table = _table(300)
    kinds = {}
    for placement in cuda.PLACEMENTS:
        with cuda.options(placement=placement):
            out = _gpu(cb.lazy(table).with_columns(x=cb.col("a") * 2, k=~cb.col("c")))
        buffers = [out.column(n).chunk(0).buffers()[1] for n in ("x", "k")]
        regions = [double.region_of(buf.address) for buf in buffers]
        kinds[placement] = {r.kind if r is not None else "pageable" for r in regions}
        if placement == "managed":  # handed back to the host after the kernel wrote them
            assert all(r is not None and not r.resident for r in regions)
        del out, buffers, regions
    # host-mapped results are pinned host memory the kernel wrote into (issue 13, item 1)
    assert kinds == {"device": {"pinned"}, "managed": {"managed"}, "host-mapped": {"pinned"},
                     "pageable": {"pageable"}}  # fmt: skip


def test_inputs_are_uploaded_once_and_outputs_copied_once(double: CupyDouble) -> None:
    n = 1000
    table = pa.table({"a": np.arange(n, dtype=np.float64), "b": np.arange(n, dtype=np.int64)})
    _gpu(cb.lazy(table).with_columns(x=cb.col("a") * 2, y=cb.col("b") + 1))
    assert double.counts["h2d_copies"] == 2  # a, b
    assert double.counts["d2h_copies"] == 3  # x, y and the failure counters, once
    double.counts.clear()
    # two reduction levels and the elementwise pass read `a`: it is uploaded once
    lf = cb.lazy(table).with_columns(z=(cb.col("a") - cb.col("a").mean()) / cb.col("a").std(),
                                     centred=cb.col("a") - (cb.col("a") - cb.col("a").mean())
                                     .abs().mean())  # fmt: skip
    got = _gpu(lf)
    assert double.counts["h2d_copies"] == 1
    assert "1 upload(s)" in lf.last_report.stats.kernels[-1]
    _same(got, lf.compute(device="cpu"))


def test_a_column_and_its_shifts_are_one_upload(double: CupyDouble) -> None:
    # shifts read in place bind the column's own buffers: its values and its bitmap are
    # uploaded once for the column and every lag of it
    table = _table(1000)
    a, d = cb.col("a"), cb.col("d")
    lf = cb.lazy(table).with_columns(x=a - a.shift(1), y=a.shift(-3, fill_value=2.0) * a,
                                     z=d.shift(2, fill_value=0) + d.shift(5))  # fmt: skip
    got = _gpu(lf)
    assert double.counts["h2d_copies"] == 3  # a: values and bitmap; d: values
    assert "3 upload(s)" in lf.last_report.stats.kernels[-1]
    _same(got, lf.compute(device="cpu"))
    # rows in chunks: the shifts are made on the host, the column's own upload stays
    double.counts.clear()
    with cuda.options(max_chunk_rows=256):
        chunked = _gpu(lf)
    _same(chunked, lf.compute(device="cpu"))


def test_chunks_overlap_on_two_streams(double: CupyDouble) -> None:
    with cuda.options(max_chunk_rows=64):
        _gpu(cb.lazy(_table(640)).with_columns(x=cb.col("a") * 2))
    launches = [entry for entry in double.log if entry[0] == "launch"]
    streams = [entry[1] for entry in launches]
    assert len(launches) == 10
    assert len(set(streams)) == 2
    assert all(s != 0 for s in streams)
    assert streams[0::2] == [streams[0]] * 5  # chunks take turns
    # the host queued chunk i+1 while chunk i was still queued: on a GPU they overlap
    assert double.counts["most_busy_streams"] == 2
    assert double.counts["h2d_copies"] == 20  # values and validity of each chunk


def test_reductions_fill_the_device_and_fold_chunk_partials(double: CupyDouble) -> None:
    # 300 blocks of one warp: more blocks than 256, few host threads to run them
    wide = CupyDouble(devices=[DeviceSpec(sm_count=300, max_threads_per_sm=32,
                                          max_threads_per_block=32)])  # fmt: skip
    geo = Geometry.for_device(device_info(wide, 0))
    assert geo.max_reduce_blocks == 300  # not capped at 256 blocks
    assert geo.block == 32
    n = 300 * 32 * 8 + 77  # enough rows for every resident thread (8 rows each today)
    rng = np.random.default_rng(1)
    table = pa.table({"a": rng.normal(size=n), "b": rng.integers(-(2**62), 2**62, n),
                      "u": rng.integers(0, 2**64 - 1, n, dtype=np.uint64)})  # fmt: skip

    def build(q: Any) -> Any:
        a, b, u = cb.col("a"), cb.col("b"), cb.col("u")
        return q.select(s=a.sum(), v=a.var(), mn=a.min(), mx=b.max(), mb=b.mean(), su=u.sum(),
                        mu=u.mean(), c=b.count())  # fmt: skip

    want = build(cb.lazy(table)).compute(device="cpu")
    with use_cupy(wide):
        one = _gpu(build(cb.lazy(table)))
        with cuda.options(max_chunk_rows=12_800):
            lf = build(cb.lazy(table))
            chunked = _gpu(lf)
    grids = {entry[3] for entry in wide.log if entry[0] == "launch"}
    assert 300 in grids
    assert " in 7 chunk(s)" in lf.last_report.stats.kernels[0]
    # the reductions are the outputs: no one-row elementwise kernel after them
    assert [k.split("[")[0] for k in lf.last_report.stats.kernels] == ["cuda reduce"]
    for got in (one, chunked):
        for name in ("mx", "mb", "su", "mu", "c"):  # integers: exact, whatever the grouping
            assert got.column(name).equals(want.column(name)), name
        _same(got.select(["s", "v", "mn"]), want.select(["s", "v", "mn"]))
    _clean(wide)


def test_errors_are_counted_once_per_pass(double: CupyDouble) -> None:
    table = pa.table({"a": pa.array([1.0, 300.0, None, 5.5] * 40)})
    with cuda.options(max_chunk_rows=64), pytest.raises(
        cb.InvalidOperationError, match=r"strict cast to int8 failed.*\(40 values\)"
    ):
        _gpu(cb.lazy(table).with_columns(x=cb.col("a").cast("int8")))
    reads = [e for e in double.log
             if e[0] == "memcpyAsync" and e[2] == "d2h" and e[3] == 8 * N_ERR_KINDS]  # fmt: skip
    assert len(reads) == 2  # one per stream, after the last chunk


def test_host_mapped_registrations_share_pages_and_end_with_the_run(double: CupyDouble) -> None:
    # four columns cut from one buffer: neighbours share pages, which the driver registers once
    raw = np.arange(4 * 300, dtype=np.float64)
    buf = pa.py_buffer(raw)
    cols = {f"c{k}": pa.Array.from_buffers(pa.float64(), 300, [None, buf], offset=300 * k)
            for k in range(4)}  # fmt: skip
    table = pa.table(cols)
    with cuda.options(placement="host-mapped"):
        out = _gpu(cb.lazy(table).with_columns(t=sum((cb.col(f"c{k}") for k in range(4)),
                                                     cb.lit(0.0))))  # fmt: skip
    assert out.column("t").to_pylist() == (raw.reshape(4, 300).sum(axis=0)).tolist()
    assert double.registered() == []  # all unregistered after the run
    registers = [e for e in double.log if e[0] == "hostRegister"]
    assert all(e[3] == 1 | 2 | 8 for e in registers)  # portable, mapped, read-only
    assert 1 <= len(registers) < 4
    assert double.counts["host_register"] == double.counts["host_unregister"]


def test_registrations_are_counted_per_page_across_runs(double: CupyDouble) -> None:
    info = device_info(double, 0)
    page = np.zeros(2 * 4096, dtype=np.uint8)
    base = page.ctypes.data + (-page.ctypes.data % 4096)
    first = host_registry.lease(double, info, base + 16, 100, page)
    second = host_registry.lease(double, info, base + 2000, 100, page)  # same page
    assert double.counts["host_register"] == 1
    first.release()
    assert len(double.registered()) == 1  # the other lease still uses the page
    second.release()
    assert double.registered() == []
    # a range registered by someone else is used, never unregistered by colbridge
    rt = double.cuda.runtime
    rt.hostRegister(base, 4096, 2)
    third = host_registry.lease(double, info, base + 8, 64, page)
    third.release()
    assert len(double.registered()) == 1
    rt.hostUnregister(base)


def test_a_dlpack_consumer_keeps_the_pages_mapped(double: CupyDouble) -> None:
    arr = pa.array(np.arange(64, dtype=np.float64))
    col = to_device(arr, placement="host-mapped")
    assert not isinstance(col, dict)
    assert col.values.data.ptr == arr.buffers()[1].address  # no copy: the Arrow buffer itself
    exported = col.__dlpack__()
    view = col.values[8:]
    del col
    gc.collect()
    assert double.registered() != []
    del exported
    gc.collect()
    assert double.registered() != []  # the slice still reads the pages
    assert double.asnumpy(view)[:2].tolist() == [8.0, 9.0]
    del view
    gc.collect()
    assert double.registered() == []


def test_to_device_copies_only_where_asked(double: CupyDouble) -> None:
    arr = pa.array([1.5, None, 3.5, 4.5, None, 6.5, 7.5, 8.5, 9.5]).slice(1)
    for placement in cuda.PLACEMENTS:
        col = to_device(arr, placement=placement)
        assert not isinstance(col, dict)
        assert double.asnumpy(col.values)[1:3].tolist() == [3.5, 4.5]
        host = arr.buffers()[1].address + 8 * arr.offset
        assert (col.values.data.ptr == host) == (placement in ("host-mapped", "pageable"))
        kind, device = col.__dlpack_device__()
        assert (kind, device) == ((13 if placement == "managed" else 2), 0)
        assert col.validity is not None
        assert col.validity_offset == 1
        del col
    gc.collect()


def test_an_error_after_a_launch_frees_nothing_queued_work_uses(double: CupyDouble) -> None:
    rt = double.cuda.runtime
    real = rt.memcpyAsync

    def failing(dst: int, src: int, size: int, kind: int, stream: int) -> None:
        if kind == rt.memcpyDeviceToHost:  # the first copy back, after the kernel is queued
            raise rt.CUDARuntimeError(2)
        real(dst, src, size, kind, stream)

    rt.memcpyAsync = failing
    try:
        for placement in ("device", "host-mapped", "managed"):
            with cuda.options(placement=placement), pytest.raises(
                cb.DeviceError, match="out of memory"
            ):
                _gpu(cb.lazy(_table(200)).with_columns(z=cb.col("a") - cb.col("a").mean()))
            gc.collect()
            double.check()  # nothing freed or unregistered under the queued kernel
    finally:
        rt.memcpyAsync = real
    assert double.pending() == 0


def test_the_memory_guard_counts_the_pool_cache_and_concurrent_runs() -> None:
    d = CupyDouble(devices=[DeviceSpec(total_memory=64 << 20)])
    table = _table(4000)
    plans = []
    with use_cupy(d):
        for _ in range(3):  # what the pool keeps cached from a run stays usable by the next
            lf = cb.lazy(table).with_columns(x=cb.col("a") * 2 + cb.col("b"))
            _gpu(lf)
            plans.append(lf.last_report.stats.kernels[-1])
        assert d.get_default_memory_pool().free_bytes() > 0
    assert len(set(plans)) == 1
    free, _total = d.cuda.runtime.memGetInfo()
    cached = d.get_default_memory_pool().free_bytes()
    half = int((free + cached) * 0.5)  # cached pool blocks count as free
    first = reserve(d, 0, 0.5, half // 2, 1)
    assert first.nbytes == half // 2
    second = reserve(d, 0, 0.5, 1 << 40, 1)  # a concurrent run: what the first took is gone
    assert second.nbytes == half - half // 2
    with pytest.raises(cb.DeviceError, match=r"2 running computation\(s\)"):
        reserve(d, 0, 0.5, 1 << 40, 1)
    first.release()
    second.release()
    assert reserve(d, 0, 0.5, 1 << 40, 1).nbytes == half
    _clean(d)


def test_small_memory_processes_in_chunks_and_too_small_says_so() -> None:
    d = CupyDouble(devices=[DeviceSpec(total_memory=1 << 20)])
    table = _table(20_000)
    with use_cupy(d):
        lf = cb.lazy(table).with_columns(x=cb.col("a") * 2 + cb.col("b"), s=cb.col("a").sum())
        got = _gpu(lf)
        assert " in 1 chunk(s)" not in lf.last_report.stats.kernels[-1]
        _same(got, lf.compute(device="cpu"))
    _clean(d)
    # another process holds nearly all of the device
    full = CupyDouble(devices=[DeviceSpec(total_memory=1 << 20, other_usage=(1 << 20) - 4096)])
    with use_cupy(full):
        with pytest.raises(cb.DeviceError, match="not enough free memory on cuda:0"):
            _gpu(lf)
        with pytest.warns(cb.DeviceFallbackWarning, match="not enough free memory"):
            lf.compute(device="cuda", fallback="cpu")
    _clean(full)


def test_the_callers_current_device_comes_back() -> None:
    d = CupyDouble(devices=[DeviceSpec(), DeviceSpec(name="second")])
    with use_cupy(d):
        d.cuda.runtime.setDevice(1)
        with cuda.options(device=0):
            _gpu(cb.lazy(_table(100)).with_columns(x=cb.col("a") + 1))
        assert d.cuda.runtime.getDevice() == 1
        out = cb.lazy(_table(100)).with_columns(x=cb.col("a") + 1).compute(device="cuda:1",
                                                                             fallback="raise")
        assert out.num_rows == 100
        assert d.cuda.runtime.getDevice() == 1
    assert ("setDevice", 0) in d.log
    _clean(d)


def test_compute_async_runs_with_the_callers_options_and_stand_in(double: CupyDouble) -> None:
    table = _table(500)
    with cuda.options(placement="host-mapped"):
        futures = [cb.lazy(table).with_columns(x=cb.col("a") * k).compute_async(
            device="cuda", fallback="raise") for k in range(4)]  # fmt: skip
    for k, future in enumerate(futures):
        got = future.result()
        _same(got, cb.lazy(table).with_columns(x=cb.col("a") * k).compute(device="cpu"))
    assert double.counts["host_register"] > 0  # the worker used the caller's placement
    assert double.counts["h2d_copies"] == 0


def test_concurrent_runs_take_streams_of_their_own(double: CupyDouble) -> None:
    held: list[Any] = []
    barrier = threading.Barrier(3)

    def take() -> None:
        with use_cupy(double):
            stream = stream_pool.acquire(double, 0)
            held.append(stream)
            barrier.wait()
            stream_pool.release(double, 0, stream)

    threads = [threading.Thread(target=take) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({s.ptr for s in held}) == 3
    assert all(not s._state.blocking for s in held)  # non-blocking: no legacy stream sync


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (35, "no NVIDIA driver is loaded on this machine"),
        (100, "no CUDA device is visible to this process"),
        (46, "busy or unavailable"),
        (802, "nvidia-fabricmanager"),
    ],
)
def test_driver_failures_name_their_cause(error: int, cause: str) -> None:
    d = CupyDouble(init_error=error)
    with use_cupy(d):
        usable, reason = gpu_status()
        assert not usable
        assert cause in reason
        assert d.cuda.runtime.CUDARuntimeError(error).args[0].split(":")[0] in reason
        if error == 100:
            assert "MIG" in reason
            assert "CUDA_VISIBLE_DEVICES" in reason
        with pytest.raises(cb.DeviceError, match=cause):
            _gpu(cb.lazy(_table(10)).with_columns(x=cb.col("a") + 1))
        with pytest.warns(cb.DeviceFallbackWarning, match=cause):
            out = cb.lazy(_table(10)).with_columns(x=cb.col("a") + 1).compute(device="cuda")
        assert out.num_rows == 10
        assert resolve_device("auto").target == "cpu"


def test_a_driver_older_than_the_runtime_says_which_versions() -> None:
    d = CupyDouble(init_error=35, driver_version=11040, runtime_version=12090)
    with use_cupy(d):
        assert "supports CUDA 11.4 but CuPy uses the CUDA 12.9 runtime" in gpu_status()[1]


def test_pageable_needs_a_device_that_reads_host_memory() -> None:
    d = CupyDouble(devices=[DeviceSpec(pageable_memory_access=False)])
    with use_cupy(d), cuda.options(placement="pageable"):
        with pytest.raises(cb.DeviceError, match="placement='pageable' needs a device"):
            _gpu(cb.lazy(_table(10)).with_columns(x=cb.col("a") + 1))
        with pytest.raises(cb.DeviceError, match="placement='pageable' needs a device"):
            to_device(np.arange(4.0), placement="pageable")
    _clean(d)


def test_a_bug_is_not_hidden_behind_the_cpu_fallback(
    double: CupyDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    original: Callable[..., Any] = cuda._typed_args

    def broken(kernel: Any, args: list[Any]) -> tuple[Any, ...]:
        typed = list(original(kernel, args))
        typed[-2] = (np.zeros(1), typed[-2])  # what host-mapped outputs used to be
        return tuple(typed)

    monkeypatch.setattr(cuda, "_typed_args", broken)
    with pytest.raises(TypeError, match="Unsupported type <class 'tuple'>"):
        cb.lazy(_table(10)).with_columns(x=cb.col("a") + 1).compute(device="cuda",
                                                                      fallback="cpu")


def test_the_launch_geometry_follows_the_device() -> None:
    info = device_info(CupyDouble(devices=[SMALL]), 0)
    geo = Geometry.for_device(info)
    assert geo.block % 32 == 0
    assert geo == Geometry(64, 2 * 32, 2)
    with pytest.raises(cb.DeviceError, match="multiple of 32"):
        cuda.CudaOptions(block_threads=48)
    d = CupyDouble(devices=[SMALL])
    with use_cupy(d):
        table = _table(3000)
        got = _gpu(_query(cb.lazy(table)))
        _same(got, _query(cb.lazy(table)).compute(device="cpu"))
    assert {e[4] for e in d.log if e[0] == "launch"} == {64}
    _clean(d)



# The kernels of the coming emitter: one row per thread, bit-packed outputs as 32-bit words
# written by one lane per warp (here without __ballot_sync, which the host shim lacks today).
_WORD_KERNEL = r"""
extern "C" __global__ void elementwise(
    long long n,
    const double* __restrict__ x0,
    double p0,
    double p1,
    unsigned int* __restrict__ o0,
    double* __restrict__ o1,
    unsigned long long* __restrict__ err)
{
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    const long long rows = (n + 31) / 32 * 32;  // whole warps
    for (long long i = (long long)blockIdx.x * (long long)blockDim.x + threadIdx.x; i < rows;
         i += stride) {
        if (i < n) o1[i] = x0[i] * p1;
        if ((i & 31) == 0) {
            unsigned int word = 0u;
            for (long long k = 0; k < 32 && i + k < n; ++k) {
                word |= ((unsigned int)(x0[i + k] > p0)) << k;
            }
            o0[i >> 5] = word;
        }
    }
}
"""


@pytest.mark.parametrize("chunk", [0, 128])
@pytest.mark.parametrize("placement", cuda.PLACEMENTS)
def test_one_row_per_thread_and_word_bitmaps(
    double: CupyDouble, monkeypatch: pytest.MonkeyPatch, placement: str, chunk: int
) -> None:
    from colbridge.codegen.cuda import CudaKernelSource
    from colbridge.codegen.kernel import InputSpec, OutputSpec
    from colbridge.testing.cupy_double import kernel_params
    from colbridge.types import DType

    def generate(*_args: Any, **_kwargs: Any) -> CudaKernelSource:
        return CudaKernelSource(
            kind="elementwise", source=_WORD_KERNEL, name="elementwise",
            inputs=[InputSpec("wa", DType.FLOAT64, False)], scalars=[],
            outputs=[OutputSpec("k", DType.BOOL, False), OutputSpec("x", DType.FLOAT64, False)],
            params=kernel_params(_WORD_KERNEL)["elementwise"], rows_per_thread=1,
        )  # fmt: skip

    monkeypatch.setattr(cuda, "generate_elementwise", generate)
    values = np.random.default_rng(5).normal(size=1000 + 3)
    table = pa.table({"wa": values}).slice(3)
    with cuda.options(placement=placement, max_chunk_rows=chunk):
        lf = cb.lazy(table).with_columns(k=cb.col("wa") > 0, x=cb.col("wa") * 2)
        got = _gpu(lf)
    assert got.column("k").to_pylist() == (values[3:] > 0).tolist()
    assert got.column("x").to_pylist() == (values[3:] * 2).tolist()
    launches = [e for e in double.log if e[0] == "launch"]
    rows = 128 if chunk else 1000
    assert launches[0][3] * launches[0][4] >= min(rows, 256)  # a thread per row


def test_results_fall_back_to_pageable_memory_when_none_can_be_locked() -> None:
    d = CupyDouble(pinned_limit=300 << 10)  # enough for staging, not for a 800 kB result
    table = pa.table({"a": np.arange(100_000, dtype=np.float64)})
    with use_cupy(d):
        lf = cb.lazy(table).with_columns(z=cb.col("a") * 2)
        got = _gpu(lf)
        assert got.column("z").to_pylist()[:3] == [0.0, 2.0, 4.0]
        assert got.column("z").to_numpy().tolist() == (np.arange(100_000) * 2.0).tolist()
        assert "results in pageable memory" in lf.last_report.stats.kernels[-1]
        assert d.counts["pageable_copies"] == 1  # the driver staged it, in stream order
        with cuda.options(placement="host-mapped"), pytest.raises(cb.DeviceError,
                                                                  match="out of memory"):
            _gpu(lf)  # the kernel writes host-mapped results itself: they must be pinned
    _clean(d)


def test_uploads_go_through_a_few_pinned_buffers_in_turn(
    double: CupyDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    from colbridge.memory import cuda as memory

    monkeypatch.setattr(memory, "STAGE_PIECE", 4096)
    stager = memory.Stager(double)
    host = np.random.default_rng(2).integers(0, 255, 50_000, dtype=np.uint8)
    stream = double.cuda.Stream(non_blocking=True)
    with stream:
        dev = double.cuda.alloc(host.nbytes)
        stager.upload(host, dev.ptr, stream)  # 13 pieces through 4 buffers
        out = double.ndarray(host.nbytes, np.uint8, dev)
        got = double.asnumpy(out)  # waits for the stream
    assert got.tobytes() == host.tobytes()  # no buffer refilled before its copy had run
    assert stager.copies == 13
    assert len(stager.ring) == memory.STAGE_RING
    assert double.live("pinned") <= memory.STAGE_RING * 4096
    assert double.counts["h2d_copies"] == 13
    assert double.counts["pageable_copies"] == 1  # only reading the result back into NumPy
    del out, dev, stager


@pytest.mark.parametrize("binary", ["cubin", "ptx"])
def test_binary_says_what_nvrtc_builds(double: CupyDouble, binary: str, tmp_path: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("COLBRIDGE_CACHE_DIR", str(tmp_path))
    table = _table(300)
    with cuda.options(binary=binary):
        got = _gpu(cb.lazy(table).with_columns(x=cb.col("a") * 3 + 1))
    _same(got, cb.lazy(table).with_columns(x=cb.col("a") * 3 + 1).compute(device="cpu"))
    built = {p.name.split("_", 1)[1] for p in (tmp_path / "cuda").iterdir() if p.suffix != ".cu"}
    # a cubin keeps the PTX it was made from beside it
    assert built == ({"sm_90.cubin", "sm_90.ptx"} if binary == "cubin" else {"compute_90.ptx"})


def test_an_unknown_binary_is_refused() -> None:
    with pytest.raises(cb.DeviceError, match=r"unknown binary 'sass'; use one of cubin, ptx"):
        cuda.CudaOptions(binary="sass")
