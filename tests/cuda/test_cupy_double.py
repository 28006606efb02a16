"""The CuPy test double refuses what CuPy and the CUDA driver refuse, and sees what a GPU would.

Where real CuPy can answer without a GPU (how a kernel argument is converted,
the text of its errors), the double is compared with it; the rest follows
CuPy's source and the CUDA runtime documentation (see the double's docstring).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from colbridge.testing.cupy_double import (
    ContractViolation,
    CupyDouble,
    DeviceSpec,
    kernel_params,
)

SCALE = r"""
extern "C" __global__ void scale(
    long long n,
    const double* __restrict__ x0,
    double p0,
    double* __restrict__ o0,
    unsigned long long* __restrict__ err)
{
    const long long stride = (long long)blockDim.x * (long long)gridDim.x;
    for (long long i = (long long)blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += stride) {
        o0[i] = x0[i] * p0;
    }
}
"""


@pytest.fixture
def double() -> Iterator[CupyDouble]:
    d = CupyDouble(devices=[DeviceSpec(), DeviceSpec(name="second")])
    yield d
    gc.collect()
    d.check()


def _upload(d: CupyDouble, values: np.ndarray[Any, Any]) -> Any:
    return d.asarray(values)


def _kernel(d: CupyDouble) -> Any:
    return d.RawModule(code=SCALE).get_function("scale")


def test_kernel_signature_is_read_from_the_source() -> None:
    assert kernel_params(SCALE)["scale"] == [
        ("long long", "n"), ("const double*", "x0"), ("double", "p0"), ("double*", "o0"),
        ("unsigned long long*", "err"),
    ]  # fmt: skip


def test_scalar_arguments_convert_as_cupy_converts_them() -> None:
    cupy = pytest.importorskip("cupy")
    from cupy._core._scalar import CScalar  # the class CuPy's kernel launch uses

    from colbridge.testing.cupy_double import _cupy_scalar_dtype

    values = [True, 3, -(2**63), 2**63 + 5, 2.5, np.float32(1.5), np.int8(-3), np.uint64(7),
              np.bool_(False)]  # fmt: skip
    for value in values:
        assert _cupy_scalar_dtype(value) == np.dtype(CScalar(value).get_numpy_type()), value
    for bad in [(1, 2), "text", [1]]:
        with pytest.raises(TypeError) as real:
            CScalar(bad)
        with pytest.raises(TypeError) as ours:
            _cupy_scalar_dtype(bad)
        assert str(ours.value) == str(real.value)
    assert cupy is not None


def test_a_tuple_argument_is_refused_like_cupy_refuses_it(double: CupyDouble) -> None:
    # what `host-mapped` passed for its outputs (issue 13, item 1)
    x = _upload(double, np.arange(8.0))
    out = double.empty(8)
    err = double.zeros(2, dtype=np.uint64)
    host = np.zeros(8)
    with pytest.raises(TypeError, match=r"Unsupported type <class 'tuple'>"):
        _kernel(double)((1,), (32,), (np.int64(8), x, np.float64(2), (host, out), err))
    with pytest.raises(TypeError, match=r"Only numpy.ndarrays of size one can be passed by value"):
        _kernel(double)((1,), (32,), (np.int64(8), np.arange(8.0), np.float64(2), out, err))


def test_arguments_must_match_the_kernel_parameters(double: CupyDouble) -> None:
    x = _upload(double, np.arange(8.0))
    out, err = double.empty(8), double.zeros(2, dtype=np.uint64)
    kernel = _kernel(double)
    with pytest.raises(ContractViolation, match=r"takes 8 byte.*got a int32"):
        kernel((1,), (32,), (np.int32(8), x, np.float64(2), out, err))
    with pytest.raises(ContractViolation, match=r"`p0` .*float64.*got a float32"):
        kernel((1,), (32,), (np.int64(8), x, np.float32(2), out, err))
    with pytest.raises(ContractViolation, match="declares 5 parameters but was launched with 4"):
        kernel((1,), (32,), (np.int64(8), x, np.float64(2), out))
    with pytest.raises(TypeError, match="must be tuples"):
        kernel(1, (32,), (np.int64(8), x, np.float64(2), out, err))
    # Python numbers are int64 and float64 for CuPy: right here, since n and p0 are
    kernel((1,), (32,), (8, x, 2.0, out, err))
    assert double.asnumpy(out).tolist() == (np.arange(8.0) * 2).tolist()


def test_work_runs_when_the_host_waits_for_it(double: CupyDouble) -> None:
    stream = double.cuda.Stream(non_blocking=True)
    pinned = double.cuda.alloc_pinned_memory(64)
    view = np.frombuffer((np.ctypeslib.as_array(
        (np.ctypeslib.ctypes.c_uint8 * 64).from_address(pinned.ptr))), dtype=np.float64)
    with stream:
        x = _upload(double, np.arange(8.0))
        out = double.empty(8)
        _kernel(double)((2,), (32,), (8, x, 3.0, out, double.zeros(2, dtype=np.uint64)))
        rt = double.cuda.runtime
        rt.memcpyAsync(pinned.ptr, out.data.ptr, 64, rt.memcpyDeviceToHost, stream.ptr)
        assert view.view(np.uint8).tolist() == [0xA5] * 64  # not run yet: read too early
        event = stream.record()
        event.synchronize()
    assert view.tolist() == (np.arange(8.0) * 3).tolist()
    assert double.counts["pageable_copies"] == 1  # asarray: from pageable memory, synchronous


def test_device_memory_is_not_host_memory(double: CupyDouble) -> None:
    out = double.empty(8)
    assert out.data.ptr >= 1 << 62  # an address no host pointer has
    attrs = double.cuda.runtime.pointerGetAttributes(out.data.ptr)
    assert (attrs.type, attrs.hostPointer) == (2, 0)


def test_a_kernel_reading_unmapped_host_memory_kills_the_context(double: CupyDouble) -> None:
    host = np.arange(8.0)
    x = double.ndarray(8, np.float64, double.cuda.MemoryPointer(
        double.cuda.UnownedMemory(host.ctypes.data, 64, host, 0), 0))  # fmt: skip
    out, err = double.empty(8), double.zeros(2, dtype=np.uint64)
    _kernel(double)((1,), (32,), (8, x, 2.0, out, err))  # queued: the fault shows later
    with pytest.raises(double.cuda.runtime.CUDARuntimeError, match="cudaErrorIllegalAddress"):
        double.cuda.get_current_stream().synchronize()
    with pytest.raises(double.cuda.runtime.CUDARuntimeError, match="cudaErrorIllegalAddress"):
        double.empty(8)  # sticky, as on a GPU


def test_kernels_may_not_read_past_a_mapping(double: CupyDouble) -> None:
    rt = double.cuda.runtime
    page = np.zeros(3 * 4096 // 8)
    start = page.ctypes.data + (-page.ctypes.data % 4096)
    rt.hostRegister(start, 4096, 2)  # one page mapped
    n = 4096 // 8 + 1  # one value more than the page holds
    view = double.ndarray(n, np.float64, double.cuda.MemoryPointer(
        double.cuda.UnownedMemory(start, 8 * n, page, 0), 0))  # fmt: skip
    out, err = double.empty(n), double.zeros(2, dtype=np.uint64)
    _kernel(double)((1,), (32,), (n, view, 2.0, out, err))
    with pytest.raises(double.cuda.runtime.CUDARuntimeError, match="IllegalAddress"):
        double.cuda.get_current_stream().synchronize()
    assert "beyond the registered memory" in double.log[-1][1]


def test_host_registration_is_page_wise_and_refuses_overlaps(double: CupyDouble) -> None:
    rt = double.cuda.runtime
    block = np.zeros(4 * 4096, dtype=np.uint8)
    base = block.ctypes.data + (-block.ctypes.data % 4096)
    rt.hostRegister(base + 100, 200, 2)  # rounds out to the whole first page
    with pytest.raises(rt.CUDARuntimeError, match="cudaErrorHostMemoryAlreadyRegistered"):
        rt.hostRegister(base + 1000, 100, 2)  # another buffer on the same page
    rt.hostRegister(base + 4096, 100, 2)  # the next page is free
    with pytest.raises(rt.CUDARuntimeError, match="cudaErrorHostMemoryNotRegistered"):
        rt.hostUnregister(base)  # not the address that was registered
    rt.hostUnregister(base + 100)
    rt.hostUnregister(base + 4096)
    plain = CupyDouble(devices=[DeviceSpec(host_register_read_only=False)])
    with pytest.raises(rt.CUDARuntimeError, match="cudaErrorNotSupported"):
        plain.cuda.runtime.hostRegister(base, 100, 2 | 8)


def test_freeing_memory_queued_work_uses_is_a_violation(double: CupyDouble) -> None:
    rt = double.cuda.runtime
    one, two = double.cuda.Stream(non_blocking=True), double.cuda.Stream(non_blocking=True)
    with one:
        block = double.cuda.alloc(64)
    staging = double.cuda.alloc_pinned_memory(64)
    with two:  # used on a stream it was not allocated on, then dropped before the stream ran
        rt.memcpyAsync(block.ptr, staging.ptr, 64, rt.memcpyHostToDevice, two.ptr)
    del block
    gc.collect()
    assert any("device memory freed" in v for v in double.violations)
    # the pinned pool knows no streams: a staging buffer freed while a copy reads it
    del staging
    gc.collect()
    assert any("pinned memory freed" in v for v in double.violations)
    two.synchronize()
    double.violations.clear()
    with one:  # stream-ordered reuse: freeing a block its own stream still uses is fine
        mine = double.cuda.alloc(64)
        rt.memsetAsync(mine.ptr, 0, 64, one.ptr)
    del mine
    gc.collect()
    assert double.violations == []
    one.synchronize()


def test_unpooled_frees_synchronise_the_device(double: CupyDouble) -> None:
    managed = double.cuda.malloc_managed(4096)
    del managed
    gc.collect()
    assert double.counts["device_syncs"] == 1
    assert double.counts["unpooled_frees"] == 1


def test_memory_accounting(double: CupyDouble) -> None:
    rt = double.cuda.runtime
    pool = double.get_default_memory_pool()
    free0, total = rt.memGetInfo()
    block = double.cuda.alloc(1 << 20)
    assert rt.memGetInfo()[0] == free0 - (1 << 20)
    assert pool.used_bytes() == 1 << 20
    del block
    gc.collect()
    assert rt.memGetInfo()[0] == free0 - (1 << 20)  # cached by the pool, not free for others
    assert pool.free_bytes() == 1 << 20
    pool.free_all_blocks()
    assert rt.memGetInfo() == (free0, total)
    with pytest.raises(double.cuda.memory.OutOfMemoryError, match="Out of memory allocating"):
        double.cuda.alloc(total + 1)


def test_streams_and_devices_must_match(double: CupyDouble) -> None:
    rt = double.cuda.runtime
    stream = double.cuda.Stream(non_blocking=True)  # on device 0
    with double.cuda.Device(1):
        block = double.cuda.alloc(64)
        with pytest.raises(rt.CUDARuntimeError, match="cudaErrorInvalidResourceHandle"):
            rt.memsetAsync(block.ptr, 0, 64, stream.ptr)
        assert rt.getDevice() == 1
    assert rt.getDevice() == 0


def test_a_cubin_loads_only_on_its_architecture(tmp_path: Any) -> None:
    cubin = tmp_path / "0123abcd_sm_90.cubin"
    cubin.write_bytes(b"\x7fELF" + bytes(64))
    (tmp_path / "0123abcd.cu").write_text(SCALE)
    hopper = CupyDouble(devices=[DeviceSpec(compute_capability=(9, 0))])
    hopper.RawModule(path=str(cubin)).get_function("scale")
    ampere = CupyDouble(devices=[DeviceSpec(compute_capability=(8, 0))])
    with pytest.raises(ampere.cuda.driver.CUDADriverError, match="NO_BINARY_FOR_GPU"):
        ampere.RawModule(path=str(cubin)).get_function("scale")


def test_failed_initialisation_is_reported_by_every_call() -> None:
    d = CupyDouble(init_error=35)
    assert d.cuda.is_available() is False
    assert d.cuda.runtime.driverGetVersion() == 0
    with pytest.raises(d.cuda.runtime.CUDARuntimeError, match="cudaErrorInsufficientDriver"):
        d.cuda.runtime.getDeviceCount()
    with pytest.raises(d.cuda.runtime.CUDARuntimeError, match="cudaErrorInsufficientDriver"):
        d.cuda.runtime.memGetInfo()
