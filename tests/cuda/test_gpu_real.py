"""On a real GPU: the CUDA backend against the CPU backend, placements, chunking and views.

Marked ``gpu``: deselected by default (``pytest -m gpu`` runs them), and
skipped where no CUDA device is usable. Collecting this module imports only
what a bare GPU machine has (NumPy, pandas, pyarrow, CuPy, pytest): the corpus
comes from `colbridge.testing.gpu_cases`.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.backends import cuda
from colbridge.backends.device import gpu_status
from colbridge.memory.cuda import check_fits, host_registry, to_device
from colbridge.testing.gpu_cases import (
    CB,
    GROUPS,
    NULL_PATTERNS,
    Group,
    assert_arrays_match,
    make_column,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_status()[0], reason=f"no usable GPU: {gpu_status()[1]}"),
]

#: CUDA's double functions are within 2 ULP of the correctly rounded result (sin, cos, tan,
#: pow ...), float functions within 4; glibc is within 1-2: allow the sum of both.
ULPS = {"float64": 4, "float32": 6}


def _placements() -> list[str]:
    import cupy

    from colbridge.memory.cuda import device_info

    pageable = device_info(cupy, 0).pageable_memory_access
    return [p for p in cuda.PLACEMENTS if p != "pageable" or pageable]


def _table(
    group: Group, pattern: tuple[bool, bool, bool], n: int = 1000, offset: int = 5
) -> pa.Table:
    rng = np.random.default_rng(3)
    cols = {name: make_column(rng, t, n + offset, nulls)
            for name, t, nulls in zip("abc", group.types, pattern, strict=True)}  # fmt: skip
    return pa.table(cols).slice(offset, n)


def _gpu(lf: Any) -> Any:
    return lf.compute(device="cuda", fallback="raise")


@pytest.mark.parametrize("placement", cuda.PLACEMENTS)
@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.name)
def test_gpu_matches_cpu(group: Group, placement: str) -> None:
    if placement not in _placements():
        pytest.skip("the device does not read pageable host memory")
    for pattern in NULL_PATTERNS:
        table = _table(group, pattern)
        with cuda.options(placement=placement):
            got = _gpu(cb.lazy(table).with_columns(**group.exprs(CB)))
        want = cb.lazy(table).with_columns(**group.exprs(CB)).compute(device="cpu")
        for name in got.column_names:
            dtype = (
                str(got.column(name).type).replace("double", "float64").replace("float", "float32")
            )
            ulps = ULPS.get(dtype, 0) if group.ulps else 0
            assert_arrays_match(got.column(name), want.column(name), what=name, ulps=ulps)


@pytest.mark.parametrize("max_chunk_rows", [0, 4096])
def test_gpu_reductions_nested_and_filter(max_chunk_rows: int) -> None:
    group = Group("r", (pa.float64(), pa.int64(), pa.int64()), lambda m: {})
    table = _table(group, (True, True, False), n=100_003)

    def build(q: Any) -> Any:
        a, b = cb.col("a").fill_nan(0.0).clip(-1e6, 1e6), cb.col("b")
        return q.with_columns(z=(a - a.mean()) / a.std(), s=b.sum(), mx=b.max(),
                              mn=a.min()).filter(cb.col("z") > 0)  # fmt: skip

    with cuda.options(max_chunk_rows=max_chunk_rows):
        got = _gpu(build(cb.lazy(table)))
    want = build(cb.lazy(table)).compute(device="cpu")
    for name in got.column_names:
        assert_arrays_match(got.column(name), want.column(name), what=name, rtol=1e-9)


def test_chunked_gpu_run_matches_one_pass() -> None:
    group = GROUPS[0]
    table = _table(group, (True, False, True), n=50_001)
    want = cb.lazy(table).with_columns(**group.exprs(CB)).compute(device="cpu")
    with cuda.options(max_chunk_rows=4096):
        lf = cb.lazy(table).with_columns(**group.exprs(CB))
        got = _gpu(lf)
    assert any("13 chunk(s)" in k for k in lf.last_report.stats.kernels)
    for name in got.column_names:
        assert_arrays_match(got.column(name), want.column(name), what=name)


def test_strict_cast_error_on_gpu() -> None:
    table = pa.table({"a": pa.array([1.0, 300.0, None])})
    with pytest.raises(cb.InvalidOperationError, match="strict cast to int8 failed"):
        _gpu(cb.lazy(table).with_columns(x=cb.col("a").cast("int8")))


def test_managed_results_are_arrow_over_unified_memory() -> None:
    import cupy

    table = pa.table({"a": pa.array(np.arange(1000.0))})
    with cuda.options(placement="managed"):
        out = _gpu(cb.lazy(table).with_columns(z=cb.col("a") * 2))
    buf = out.column("z").chunk(0).buffers()[1]
    attrs = cupy.cuda.runtime.pointerGetAttributes(buf.address)
    assert attrs.type == cupy.cuda.runtime.memoryTypeManaged
    assert out.column("z").to_pylist()[:3] == [0.0, 2.0, 4.0]


@pytest.mark.parametrize("placement", cuda.PLACEMENTS)
def test_to_device_views(placement: str) -> None:
    import cupy

    if placement not in _placements():
        pytest.skip("the device does not read pageable host memory")
    arr = pa.array([1.5, None, 3.5, 4.5, None, 6.5, 7.5, 8.5, 9.5]).slice(1)
    host_address = arr.buffers()[1].address + arr.offset * 8
    col = to_device(arr, placement=placement)
    assert not isinstance(col, dict)
    iface = col.__cuda_array_interface__
    assert iface["version"] == 3
    assert iface["shape"] == (8,)
    kind, dev = col.__dlpack_device__()
    assert kind in (2, 13)
    assert dev == 0
    assert cupy.asnumpy(col.values)[1:3].tolist() == [3.5, 4.5]
    assert col.validity is not None
    assert col.validity_offset == 1
    viewed = cupy.from_dlpack(col)
    assert viewed.shape == (8,)
    address = col.values.data.ptr
    if placement in ("host-mapped", "pageable"):  # no copy: the device reads the Arrow pages
        mapped = cupy.cuda.runtime.pointerGetAttributes(host_address).devicePointer
        assert address in (host_address, mapped)
    else:  # a copy of its own
        assert address != host_address


def test_host_mapped_pages_stay_registered_while_a_dlpack_consumer_lives() -> None:
    import cupy

    # two small arrays: Arrow puts them close together, often on one page
    first = pa.array(np.arange(16.0))
    second = pa.array(np.arange(16.0) * 2)
    col = to_device(first, placement="host-mapped")
    other = to_device(second, placement="host-mapped")
    consumer = cupy.from_dlpack(col)
    del col
    gc.collect()
    assert host_registry.registered(cupy)  # still mapped for the consumer
    assert cupy.asnumpy(consumer * 2).tolist() == (np.arange(16.0) * 2).tolist()
    del consumer, other
    gc.collect()
    assert host_registry.registered(cupy) == []


def test_compute_async_keeps_the_options_and_the_callers_device() -> None:
    import cupy

    before = cupy.cuda.runtime.getDevice()
    table = pa.table({"a": pa.array(np.arange(4096.0))})
    with cuda.options(placement="managed"):
        futures = [cb.lazy(table).with_columns(z=cb.col("a") * k).compute_async(device="cuda",
                                                                                 fallback="raise")
                   for k in range(4)]  # fmt: skip
    for k, future in enumerate(futures):
        out = future.result()
        buf = out.column("z").chunk(0).buffers()[1]
        assert cupy.cuda.runtime.pointerGetAttributes(buf.address).type == \
            cupy.cuda.runtime.memoryTypeManaged  # fmt: skip
        assert out.column("z").to_pylist()[:3] == [0.0, 1.0 * k, 2.0 * k]
    assert cupy.cuda.runtime.getDevice() == before


def test_to_device_frame_and_free_memory_guard() -> None:
    import pandas as pd

    frame = to_device(pd.DataFrame({"a": [1, 2, 3], "b": [0.5, 1.5, None]}), placement="device")
    assert isinstance(frame, dict)
    assert set(frame) == {"a", "b"}
    with pytest.raises(cb.DeviceError, match="exceed the allowed share of free memory"):
        check_fits(1 << 50)
