"""The host shim itself: real threads, warp primitives, atomics, shared memory, guards, sanitizers.

Hand-written CUDA C kernels (``tests/cuda/kernels``) that use what the
generated kernels will use (``__ballot_sync``, shuffles, atomics,
``__shared__`` with ``__syncthreads``) run on `HostRuntime` and are compared
with NumPy. Broken variants of the same kernels (made by replacing one piece
of their text) prove that the shim reports what a sequential emulation would
let through: a lane leaving a warp that waits for it, a one-byte overrun
(guard bytes, AddressSanitizer), a read past the end of an input
(AddressSanitizer), a plain ``+=`` where ``atomicAdd`` is needed
(ThreadSanitizer).

Tests marked ``sanitizer`` build stand-alone sanitized programs and run each
launch in a subprocess; they are part of the default run.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.backends.cuda import launch_config
from colbridge.testing import cuda_host
from colbridge.testing.asserts import assert_arrays_match
from colbridge.testing.cuda_host import (
    GUARD_BYTES,
    HostKernel,
    HostRuntime,
    KernelFault,
    compute_on_host,
    sanitizer_works,
)
from colbridge.testing.data import make_column
from tests.cuda.cuda_corpus import CB, GROUPS

KERNELS = Path(__file__).with_name("kernels")
#: 0, 1, around one warp, more than one block, and more than the grid (the loop wraps)
SIZES = (0, 1, 31, 32, 33, 100, 129, 1000)


def kernel(file: str, name: str | None = None, *, replace: tuple[str, str] | None = None
           ) -> HostKernel:  # fmt: skip
    """A kernel of ``kernels/``; ``replace`` = (old, new) makes a broken variant of it."""
    text = (KERNELS / file).read_text()
    if replace is not None:
        old, new = replace
        assert text.count(old) == 1, f"{old!r} must occur once in {file}"
        text = text.replace(old, new)
    return HostKernel.from_source(text, name)


def launch(runtime: HostRuntime, k: HostKernel, n: int, args: list[Any]) -> None:
    """Launch over ``n`` rows, one per thread, sized as the CUDA backend sizes launches."""
    grid, block = launch_config(n, runtime.block, runtime.max_blocks)
    runtime.launch(runtime.load(k), k, grid, block, [np.int64(n), *args])


# -- the launch shape -------------------------------------------------------------------------
def test_default_shape_is_whole_warps_and_wraps_grid_stride_loops_on_short_inputs() -> None:
    runtime = HostRuntime()
    assert runtime.block % 32 == 0
    assert runtime.block >= 64
    assert 2 <= runtime.max_blocks <= 3
    n = 300
    threads = runtime.block * runtime.max_blocks
    steps = runtime.zeros(threads, np.uint32)
    launch(runtime, kernel("trips.cu"), n, [steps])
    assert int(steps.sum()) == n
    assert int(steps.max()) >= 2  # threads go round the loop more than once
    assert sorted(set(steps.tolist())) == [n // threads, n // threads + 1]


_TWO_KERNELS = """// {token}
extern "C" __global__ void add_one(long long n, double* __restrict__ x) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) x[i] += 1.0;
}
extern "C" __global__ void twice(long long n, double* __restrict__ x) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) x[i] *= 2.0;
}
"""


def test_the_kernels_of_one_text_are_built_into_one_library(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    # a scan's program holds three kernels: one g++ run builds them all (counted here, not
    # as new files in the shared cache folder, where other processes build theirs)
    text = _TWO_KERNELS.replace("{token}", uuid.uuid4().hex)  # built afresh
    builds: list[Any] = []
    build = cuda_host._build
    monkeypatch.setattr(cuda_host, "_build", lambda *a: builds.append(a[2]) or build(*a))
    runtime = HostRuntime()
    first, second = HostKernel.from_source(text, "add_one"), HostKernel.from_source(text, "twice")
    x = runtime.zeros(100, np.float64)
    x[:] = np.arange(100.0)
    launch(runtime, first, 100, [x])
    launch(runtime, second, 100, [x])
    np.testing.assert_array_equal(x, (np.arange(100.0) + 1.0) * 2.0)
    assert len(builds) == 1
    assert builds[0].name.endswith(".so")


def test_another_compiler_builds_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds (and the runtime with its precompiled header) are kept per g++ and version."""
    from colbridge.testing import cuda_host

    text = _TWO_KERNELS.replace("{token}", uuid.uuid4().hex)
    kernel = HostKernel.from_source(text, "add_one")
    header = cuda_host.HEADER.read_text()
    ours = cuda_host._digest(kernel, "", ""), cuda_host._runtime_digest(header)
    assert "g++" in cuda_host._compiler()  # `--version` names it
    monkeypatch.setattr(cuda_host, "_compiler", lambda: "/usr/bin/g++\0g++ (GCC) 99.1.0")
    theirs = cuda_host._digest(kernel, "", ""), cuda_host._runtime_digest(header)
    assert ours[0] != theirs[0]
    assert ours[1] != theirs[1]


def test_launches_growing_and_shrinking_the_block_stay_correct() -> None:
    """Launches reuse the threads the one before left (a pool per library): a launch with
    fewer threads than the pool holds, or more, still runs every thread of every block."""
    runtime = HostRuntime()
    text = _TWO_KERNELS.replace("{token}", uuid.uuid4().hex)
    first = HostKernel.from_source(text, "add_one")
    x = runtime.zeros(300, np.float64)
    for block, grid in [(64, 2), (256, 1), (32, 3), (64, 5), (128, 1)]:  # grow and shrink
        x[:] = np.arange(300.0)
        runtime.launch(runtime.load(first), first, grid, block, [np.int64(300), x])
        np.testing.assert_array_equal(x, np.arange(300.0) + 1.0)


# -- warp primitives --------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
def test_ballot_packs_32_rows_per_word(n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.normal(size=n)
    values[rng.random(n) < 0.1] = np.nan
    runtime = HostRuntime()
    words = (n + 31) // 32
    bits = runtime.output(4 * words).view(np.uint32)
    count = runtime.zeros(1, np.uint64)
    launch(runtime, kernel("ballot_pack.cu"), n, [runtime.input(values), bits, count])
    packed = np.packbits(np.pad(values > 0, (0, words * 32 - n)), bitorder="little")
    assert bits.tolist() == packed.view("<u4").tolist()
    assert int(count[0]) == int((values > 0).sum())


WARP_TYPES = {
    "int": np.int32, "uint": np.uint32, "ll": np.int64, "ull": np.uint64,
    "float": np.float32, "double": np.float64,
}  # fmt: skip


@pytest.mark.parametrize("suffix", list(WARP_TYPES))
@pytest.mark.parametrize("n", [1, 33, 1000])
def test_shuffles_sum_each_warp_for_every_type(suffix: str, n: int) -> None:
    dtype = np.dtype(WARP_TYPES[suffix])
    rng = np.random.default_rng(7)
    if dtype.kind == "u":
        values = rng.integers(0, np.iinfo(dtype).max, size=n, dtype=dtype, endpoint=True)
    else:  # signed sums must not overflow; float values are integers, so sums are exact
        values = rng.integers(-(2**20), 2**20, size=n).astype(dtype)
    runtime = HostRuntime()
    words = (n + 31) // 32
    down = runtime.output(words * dtype.itemsize).view(dtype)
    butterfly = runtime.output(words * 32 * dtype.itemsize).view(dtype)
    k = kernel("warp_sum.cu", f"warp_sum_{suffix}")
    launch(runtime, k, n, [runtime.input(values), down, butterfly])
    padded = np.zeros(words * 32, dtype=dtype)
    padded[:n] = values
    with np.errstate(over="ignore"):
        want = padded.reshape(words, 32).sum(axis=1, dtype=dtype)
    assert down.tolist() == want.tolist()
    assert butterfly.reshape(words, 32).tolist() == np.repeat(want[:, None], 32, 1).tolist()


@pytest.mark.parametrize("n", [5, 64, 333])
def test_shuffle_up_scans_and_shuffle_broadcasts(n: int) -> None:
    values = np.random.default_rng(n).integers(-1000, 1000, size=n)
    runtime = HostRuntime()
    scan, total, scan8 = (runtime.output(8 * n).view(np.int64) for _ in range(3))
    launch(runtime, kernel("warp_scan.cu"), n, [runtime.input(values), scan, total, scan8])
    padded = np.zeros((n + 31) // 32 * 32, dtype=np.int64)
    padded[:n] = values
    warps = padded.reshape(-1, 32)
    assert scan.tolist() == np.cumsum(warps, axis=1).reshape(-1)[:n].tolist()
    assert total.tolist() == np.repeat(warps.sum(axis=1), 32)[:n].tolist()
    eights = padded.reshape(-1, 8)
    assert scan8.tolist() == np.cumsum(eights, axis=1).reshape(-1)[:n].tolist()


# -- atomics and shared memory ----------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 100, 5000])
def test_atomics_of_every_overload_are_exact(n: int) -> None:
    values = np.random.default_rng(n).integers(0, 2**40, size=n)
    runtime = HostRuntime()
    si, su = runtime.zeros(1, np.int32), runtime.zeros(1, np.uint32)
    sull = runtime.zeros(1, np.uint64)
    sf, sd = runtime.zeros(1, np.float32), runtime.zeros(1, np.float64)
    mm = runtime.zeros(2, np.int64)
    mm[:] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min]
    umm = runtime.zeros(2, np.uint64)
    umm[:] = [np.iinfo(np.uint64).max, 0]
    or32, or64 = runtime.zeros(1, np.uint32), runtime.zeros(1, np.uint64)
    args = [runtime.input(values), si, su, sull, sf, sd, mm, umm, or32, or64]
    launch(runtime, kernel("atomics.cu"), n, args)
    assert int(si[0]) == int((values % 1000).sum())
    assert int(su[0]) == int((values & 0xFF).sum()) % 2**32
    assert int(sull[0]) == int(values.sum())
    assert float(sf[0]) == float((values % 64).sum())
    assert float(sd[0]) == float(values.sum()) * 0.5
    assert mm.tolist() == [int(values.min()), int(values.max())]
    assert umm.tolist() == [int(values.min()), int(values.max())]
    bits32 = np.uint32(1) << (values & 31).astype(np.uint32)
    bits64 = np.uint64(1) << (values & 63).astype(np.uint64)
    assert int(or32[0]) == int(np.bitwise_or.reduce(bits32))
    assert int(or64[0]) == int(np.bitwise_or.reduce(bits64))


@pytest.mark.parametrize("n", [0, 1, 64, 127, 1000])
def test_shared_memory_tree_sum_with_syncthreads(n: int) -> None:
    values = np.random.default_rng(n).integers(-(2**30), 2**30, size=n)
    runtime = HostRuntime()
    grid, block = launch_config(n, runtime.block, runtime.max_blocks)
    stride = grid * block
    steps = max(1, (n + stride - 1) // stride) * grid
    total = runtime.zeros(1, np.int64)
    per_step = runtime.output(8 * steps).view(np.int64)
    k = kernel("block_sum.cu")
    runtime.launch(runtime.load(k), k, grid, block,
                   [np.int64(n), runtime.input(values), total, per_step])  # fmt: skip
    assert int(total[0]) == int(values.sum())
    padded = np.zeros(steps * block, dtype=np.int64)
    padded[:n] = values
    if n:
        assert per_step.tolist() == padded.reshape(-1, block).sum(axis=1).tolist()


# -- misuse is reported, not computed ---------------------------------------------------------
def test_a_lane_leaving_while_its_warp_waits_in_a_ballot_is_reported() -> None:
    # the trip count not rounded up to whole warps: lanes past n return from the kernel
    broken = kernel("ballot_pack.cu", replace=("i < rounded;", "i < n;"))
    runtime = HostRuntime()
    n = 40
    bits, count = runtime.output(8).view(np.uint32), runtime.zeros(1, np.uint64)
    args = [runtime.input(np.ones(n)), bits, count]
    # whichever the scheduler runs first, the lane leaving or the ballot, names the other
    seen = (r"returned from the kernel while lanes .* __ballot_sync"
            r"|__ballot_sync with mask 0xffffffff but lanes .* have returned from the kernel")
    with pytest.raises(KernelFault, match=seen):
        launch(runtime, broken, n, args)


def test_blocks_that_are_not_whole_warps_are_refused_for_warp_primitives() -> None:
    runtime = HostRuntime(block=48)
    k = kernel("ballot_pack.cu")
    args = [np.int64(4), runtime.input(np.ones(4)), runtime.output(4), runtime.zeros(1, np.uint64)]
    with pytest.raises(ValueError, match=r"blocks of 48 threads.*multiple of 32"):
        runtime.launch(runtime.load(k), k, 1, 48, args)
    # kernels without warp primitives run on any block size
    small = HostRuntime(block=8)
    out = small.output(5)
    launch(small, kernel("shift_bytes.cu"), 5, [small.input(np.arange(5, dtype=np.uint8)), out])
    assert out.tolist() == [1, 2, 3, 4, 5]


MISUSE = {
    "different primitives": (
        "if (lane < 16) r[t] = __ballot_sync(0xffffffffu, 1);\n"
        "    else r[t] = __shfl_down_sync(0xffffffffu, t, 1);",
        r"calls __(ballot|shfl_down)_sync with mask 0xffffffff while lanes .* wait in",
    ),
    "different masks": (
        "r[t] = __ballot_sync(lane < 16 ? 0xffffffffu : 0xfffffffeu, 1);",
        r"(does not name its own lane|while lanes .* wait in __ballot_sync with mask)",
    ),
    "shuffle outside the mask": (
        "if (lane < 16) r[t] = __shfl_down_sync(0x0000ffffu, t, 8);",
        r"lane \d+ reads lane \d+, which is not in the mask 0x0000ffff",
    ),
    "syncthreads after a return": (
        "if (t >= 40) return;\n    __syncthreads();\n    r[t] = t;",
        r"(reaches __syncthreads\(\) after|returned from the kernel while) .*",
    ),
    "deadlock": (
        "if (t == 0) r[t] = __ballot_sync(0xffffffffu, 1);\n    else __syncthreads();",
        r"deadlock|returned from the kernel while",
    ),
}


@pytest.mark.parametrize("case", list(MISUSE))
def test_undefined_warp_and_barrier_use_is_reported(case: str) -> None:
    body, pattern = MISUSE[case]
    source = (
        'extern "C" __global__ void misuse(unsigned int* __restrict__ r) {\n'
        "    const unsigned int t = threadIdx.x, lane = t & 31;\n"
        f"    {body}\n"
        "}\n"
    )
    k = HostKernel.from_source(source)
    runtime = HostRuntime()
    with pytest.raises(KernelFault, match=pattern):
        runtime.launch(runtime.load(k), k, 1, 64, [runtime.zeros(64, np.uint32)])


@pytest.mark.parametrize("n", SIZES)
def test_a_correct_kernel_leaves_every_guard_byte_alone(n: int) -> None:
    values = np.arange(n, dtype=np.uint8)
    runtime = HostRuntime()
    out = runtime.output(n)
    launch(runtime, kernel("shift_bytes.cu"), n, [runtime.input(values), out])
    assert out.tolist() == (values + 1).tolist()


@pytest.mark.parametrize("n", [1, 7, 100, 1000])
def test_a_one_byte_overrun_of_an_output_is_caught_without_a_sanitizer(n: int) -> None:
    broken = kernel("shift_bytes.cu", replace=("i < n;", "i <= n;"))
    runtime = HostRuntime(sanitize="")
    with pytest.raises(KernelFault, match=rf"`out` \({n} bytes\): bytes written past its end, "
                                          rf"at offsets \[{n}\]"):  # fmt: skip
        launch(runtime, broken, n, [runtime.input(np.zeros(n, np.uint8)), runtime.output(n)])


def test_a_write_before_the_start_of_an_output_is_caught() -> None:
    broken = kernel("shift_bytes.cu", replace=("out[i] =", "out[i - 1] ="))
    runtime = HostRuntime(sanitize="")
    with pytest.raises(KernelFault, match=r"`out` \(9 bytes\): bytes written before its start"):
        launch(runtime, broken, 9, [runtime.input(np.zeros(9, np.uint8)), runtime.output(9)])
    assert GUARD_BYTES >= 16


# -- sanitizers (stand-alone programs, one subprocess per launch) ------------------------------
def _need(sanitize: str) -> None:
    if not sanitizer_works(sanitize):
        pytest.skip(f"g++ here cannot build and run {sanitize}-sanitized programs")


@pytest.mark.sanitizer
def test_tsan_reports_a_plain_add_where_atomic_add_is_needed() -> None:
    _need("thread")
    values = np.random.default_rng(1).normal(size=500)
    runtime = HostRuntime(sanitize="thread")
    total = runtime.zeros(1, np.uint64)
    launch(runtime, kernel("count_positive.cu"), 500, [runtime.input(values), total])
    assert int(total[0]) == int((values > 0).sum())  # the correct kernel: no report
    racy = kernel("count_positive.cu", replace=("atomicAdd(total, mine);", "*total += mine;"))
    with pytest.raises(KernelFault, match=r"ThreadSanitizer: data race"):
        launch(runtime, racy, 500, [runtime.input(values), runtime.zeros(1, np.uint64)])


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
def test_warp_and_block_kernels_are_clean_under_sanitizers(sanitize: str) -> None:
    # the shim's own synchronisation gives no false reports, and the answers stay exact
    _need(sanitize)
    runtime = HostRuntime(sanitize=sanitize)
    n = 333
    values = np.random.default_rng(3).integers(-50, 50, size=n)
    bits = runtime.output(4 * ((n + 31) // 32)).view(np.uint32)
    count = runtime.zeros(1, np.uint64)
    launch(runtime, kernel("ballot_pack.cu"), n,
           [runtime.input(values.astype(np.float64)), bits, count])  # fmt: skip
    assert int(count[0]) == int((values > 0).sum())
    scan, total, scan8 = (runtime.output(8 * n).view(np.int64) for _ in range(3))
    launch(runtime, kernel("warp_scan.cu"), n, [runtime.input(values), scan, total, scan8])
    assert scan[:32].tolist() == np.cumsum(values[:32]).tolist()
    grid, block = launch_config(n, runtime.block, runtime.max_blocks)
    total = runtime.zeros(1, np.int64)
    per_step = runtime.output(8 * grid * 4).view(np.int64)
    k = kernel("block_sum.cu")
    runtime.launch(runtime.load(k), k, grid, block,
                   [np.int64(n), runtime.input(values), total, per_step])  # fmt: skip
    assert int(total[0]) == int(values.sum())


@pytest.mark.sanitizer
@pytest.mark.parametrize(
    ("replace", "access"),
    [
        (None, None),
        (("i < n;", "i <= n;"), r"(READ|WRITE) of size 1"),  # one row too many: both ends
        (("= (unsigned char)(x[i] + 1)", "= (unsigned char)(x[i + 1] + 1)"), r"READ of size 1"),
        (("out[i] =", "out[i + 1] ="), r"WRITE of size 1"),
    ],
    ids=["correct", "loop-one-too-far", "read-past-input", "write-past-output"],
)
def test_asan_catches_a_one_byte_overrun_of_any_buffer(
    replace: tuple[str, str] | None, access: str | None
) -> None:
    _need("address")
    n = 77
    runtime = HostRuntime(sanitize="address")
    k = kernel("shift_bytes.cu", replace=replace)
    out = runtime.output(n)
    args = [runtime.input(np.arange(n, dtype=np.uint8)), out]
    if access is None:
        launch(runtime, k, n, args)
        assert out.tolist() == list(range(1, n + 1))
        return
    with pytest.raises(KernelFault, match=rf"(?s)AddressSanitizer: heap-buffer-overflow.*{access}"):
        launch(runtime, k, n, args)


SANITIZED_GROUPS = ("float64_exact", "int8", "bool_logic", "casts")


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitize", ["address", "thread"])
@pytest.mark.parametrize("group", SANITIZED_GROUPS)
def test_generated_kernels_are_clean_under_sanitizers(group: str, sanitize: str) -> None:
    _need(sanitize)
    spec = next(g for g in GROUPS if g.name == group)
    rng = np.random.default_rng(5)
    n, offset = 300, 3
    table = pa.table({
        name: make_column(rng, t, n + offset, nulls=name != "b")
        for name, t in zip("abc", spec.types, strict=True)
    }).slice(offset, n)  # fmt: skip
    lf = cb.lazy(table).with_columns(**spec.exprs(CB))
    got = compute_on_host(lf, HostRuntime(sanitize=sanitize))
    want = cb.lazy(table).with_columns(**spec.exprs(CB)).compute(device="cpu")
    assert got.equals(want) or _same_up_to_nan_bits(got, want)


def _same_up_to_nan_bits(got: pa.Table, want: pa.Table) -> bool:
    for name in want.column_names:
        assert_arrays_match(got.column(name), want.column(name), what=name)
    return True


@pytest.mark.sanitizer
def test_tsan_checks_the_generated_error_counters() -> None:
    # many rows fail a strict cast: many threads of a block add to the error counter at once
    _need("thread")
    values = np.where(np.arange(700) % 3 == 0, 1000.0, 1.0)
    table = pa.table({"a": values})
    lf = cb.lazy(table).with_columns(z=cb.col("a").cast("int8"))
    failing = int((values > 127).sum())
    with pytest.raises(cb.InvalidOperationError, match=rf"\({failing} values\)"):
        compute_on_host(lf, HostRuntime(sanitize="thread"))
