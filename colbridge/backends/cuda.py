"""The CUDA backend: compiles generated CUDA C with NVRTC and runs a segment through CuPy.

Stage: backends. Code generation lives in `colbridge.codegen.cuda`, placements
in `colbridge.memory.cuda`; this module binds Arrow columns to kernel
arguments, moves bytes, launches and wraps the results as Arrow arrays.

How a segment runs
------------------
One run holds the GPU through a `_Session`: the device is made current for the
run only (the caller's current device comes back afterwards), the run takes
non-blocking streams of its own from a pool, reserves its device memory
against concurrent runs (`colbridge.memory.cuda.reserve`), and allocates from
CuPy's pools (device memory, pinned host memory, and a managed-memory pool),
so no allocation or free synchronises the device.

Every pass (each reduction level, then the fused elementwise pass) walks the
rows in chunks; one chunk when everything fits, which is the usual case. Each
chunk is queued on one of two streams in turn: host-to-device copies from
pinned staging buffers, prefetches of managed memory, the kernel, the
device-to-host copies of its results. While the GPU works on one chunk the
host prepares the next, and copies of one chunk overlap the kernel of the
other. The host waits on a chunk's event only before reusing its buffers, and
on the streams at the end of a pass; nothing waits on the whole device.

* Inputs are uploaded once per segment when the segment fits in one chunk
  (every reduction level and the elementwise pass read the same device
  copies); with several chunks each pass streams them again.
* Outputs are copied once, straight into their final host buffers (pinned for
  ``device`` and ``host-mapped``; managed memory for ``managed``; pageable
  memory the kernel writes directly for ``pageable``).
* Chunks start at multiples of 64 rows and bit-packed outputs get whole 64-bit
  words, so the bitmaps of chunks land word-aligned in the result's bitmap.
* Reductions launch one partial row per resident thread of the device; the
  partial rows of a chunk are folded into one row on the host as soon as the
  chunk is done, so a run with many chunks holds one row per chunk.
* Kernel failure counters are read once per pass.
* When anything fails between a launch and the end of the run, the streams
  are synchronised before a buffer is freed or a page unregistered.

Only CUDA and CuPy runtime failures become `DeviceError` (the caller's
fallback policy applies to those); a wrong argument or any other bug raises as
it is, so it is never hidden behind a fallback to the CPU.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import os
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.common import (
    GroupedValues,
    RunStats,
    check_scalar_outputs,
    finalize_grouped,
    finalize_slots,
    fold_partials,
    grouped_operand,
    input_nullability,
    lag_directions,
    per_group_level,
    raise_kernel_errors,
    reduction_outputs,
    split_level,
    wrap_outputs,
)
from colbridge.backends.groups import GroupIds, Grouping
from colbridge.backends.kernel_cache import cache_dir, kernel_cache
from colbridge.backends.scans import run_scan as host_scan
from colbridge.codegen.cuda import (
    COMPILE_OPTIONS,
    CudaKernelSource,
    generate_elementwise,
    generate_grouped_reduce,
    generate_reduce,
)
from colbridge.codegen.kernel import (
    N_ERR_KINDS,
    AggSlot,
    InputSpec,
    OutputSpec,
    ScalarSpec,
    table_args,
    table_key,
)
from colbridge.errors import DeviceError, KernelCompileError
from colbridge.expr.nodes import Agg, Column, GroupAgg, Node
from colbridge.memory.cuda import (
    DEFAULT_PLACEMENT,
    MEMORY_DEVICE,
    MEMORY_MANAGED,
    PLACEMENTS,
    DeviceInfo,
    HostLease,
    Reservation,
    Stager,
    check_placement,
    cuda_error,
    cuda_failures,
    cupy_module,
    device_info,
    host_bytes,
    host_registry,
    managed_pool,
    memory_type,
    reserve,
    stream_pool,
)
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment
from colbridge.types import DType

__all__ = [
    "BINARIES",
    "BLOCK_THREADS",
    "CHUNK_ALIGN",
    "PLACEMENTS",
    "CudaOptions",
    "Geometry",
    "Runtime",
    "compile_nvrtc",
    "compile_nvrtc_with_ptx",
    "current_options",
    "launch_config",
    "numbered",
    "options",
    "run_scan",
    "run_segment",
    "use_runtime",
]

#: What NVRTC may build: the device's own code, or PTX the driver compiles (`CudaOptions`).
BINARIES = ("cubin", "ptx")
#: Threads per block of every launch unless `CudaOptions.block_threads` says otherwise.
BLOCK_THREADS = 256
#: Chunks start at multiples of this many rows: bitmaps of chunks stay 64-bit word aligned.
CHUNK_ALIGN = 64
#: Elementwise grids cover at most this many waves of resident blocks (grid-stride beyond).
_WAVES = 32
_CUDA_CPU_DEVICE = -1  # cudaCpuDeviceId: prefetch target meaning "the host"


@dataclass(frozen=True)
class CudaOptions:
    """How the CUDA backend runs: which device, which placement, how much memory it may use.

    ``placement`` is one of `PLACEMENTS` (default ``"device"``, see
    `colbridge.memory.cuda`). ``memory_fraction`` bounds what one run may
    allocate on the device as a fraction of the memory free to it (see
    `colbridge.memory.cuda.reserve`). ``max_chunk_rows`` caps the rows of one
    chunk (0: no cap; rounded down to a multiple of 64). ``block_threads`` is
    the number of threads per block (0: 256; a multiple of 32). ``binary`` is what
    NVRTC builds (`BINARIES`): ``"cubin"``, the device's own code (PTX where NVRTC
    does not know the device), or ``"ptx"``, PTX of its compute capability that the
    driver compiles when a kernel is first loaded (NVRTC then stops before the
    assembler; the test suite runs so).
    """

    device: int = 0
    placement: str = DEFAULT_PLACEMENT
    memory_fraction: float = 0.5
    max_chunk_rows: int = 0
    block_threads: int = 0
    binary: str = "cubin"

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            msg = f"unknown placement {self.placement!r}; use one of {', '.join(PLACEMENTS)}"
            raise DeviceError(msg)
        if self.binary not in BINARIES:
            msg = f"unknown binary {self.binary!r}; use one of {', '.join(BINARIES)}"
            raise DeviceError(msg)
        if not 0.0 < self.memory_fraction <= 1.0:
            msg = f"memory_fraction must be in (0, 1], got {self.memory_fraction!r}"
            raise DeviceError(msg)
        if self.max_chunk_rows < 0:
            msg = f"max_chunk_rows must be 0 (no cap) or positive, got {self.max_chunk_rows!r}"
            raise DeviceError(msg)
        if self.block_threads < 0 or self.block_threads % 32 or self.block_threads > 1024:
            msg = (f"block_threads must be 0 (automatic) or a multiple of 32 up to 1024, "
                   f"got {self.block_threads!r}")  # fmt: skip
            raise DeviceError(msg)


def _default_options() -> CudaOptions:
    placement = os.environ.get("COLBRIDGE_CUDA_PLACEMENT", DEFAULT_PLACEMENT)
    fraction = float(os.environ.get("COLBRIDGE_CUDA_MEMORY_FRACTION", "0.5"))
    binary = os.environ.get("COLBRIDGE_CUDA_BINARY", "cubin")
    return CudaOptions(placement=placement, memory_fraction=fraction, binary=binary)


_OPTIONS: contextvars.ContextVar[CudaOptions | None] = contextvars.ContextVar(
    "colbridge_cuda_options", default=None
)
_RUNTIME: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar(
    "colbridge_cuda_runtime", default=None
)


def current_options() -> CudaOptions:
    """The options in effect (set with `options`, else from the environment)."""
    found = _OPTIONS.get()
    return found if found is not None else _default_options()


@contextlib.contextmanager
def options(**changes: Any) -> Iterator[CudaOptions]:
    """Run CUDA work in this block with changed `CudaOptions` (``device``, ``placement``, ...).

    The options follow the work into `compute_async` workers started in the block.

    Examples
    --------
    >>> from colbridge.backends import cuda
    >>> with cuda.options(placement="managed", memory_fraction=0.25) as opts:
    ...     opts.placement
    'managed'
    """
    new = replace(current_options(), **changes)
    token = _OPTIONS.set(new)
    try:
        yield new
    finally:
        _OPTIONS.reset(token)


class Runtime:
    """A kernel executor for running segments without a GPU (``colbridge.testing.cuda_host``).

    Installed with `use_runtime`, it executes the kernels of the CuPy test
    double (`colbridge.testing.cupy_double`), which then stands in for the GPU
    with this runtime's launch geometry and memory budget.
    """

    #: threads per block, most elementwise blocks, most reduction blocks
    block: int = BLOCK_THREADS
    max_blocks: int = 4096
    max_reduce_blocks: int = 256

    def load(self, kernel: CudaKernelSource) -> Any:
        """A handle `launch` accepts, for the compiled ``kernel``."""
        raise NotImplementedError

    def launch(
        self, handle: Any, kernel: CudaKernelSource, grid: int, block: int, args: list[Any]
    ) -> None:
        """Run ``handle`` on ``grid`` blocks of ``block`` threads (pointers as NumPy arrays)."""
        raise NotImplementedError

    def budget_bytes(self) -> int | None:
        """How many bytes one run may allocate on the device (None: no limit)."""
        return None


@contextlib.contextmanager
def use_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """Run CUDA segments in this block with ``runtime`` executing the kernels, without a GPU."""
    token = _RUNTIME.set(runtime)
    try:
        yield runtime
    finally:
        _RUNTIME.reset(token)


def numbered(source: str) -> str:
    """``source`` with line numbers, for compile errors."""
    return "\n".join(f"{i + 1:4d}  {line}" for i, line in enumerate(source.splitlines()))


def launch_config(threads: int, block: int, max_blocks: int) -> tuple[int, int]:
    """(grid, block) for ``threads`` logical threads, grid-stride beyond ``max_blocks``."""
    blocks = (threads + block - 1) // block
    return max(1, min(blocks, max_blocks)), block


@dataclass(frozen=True)
class Geometry:
    """Launch shape: threads per block and the most blocks of each kind of launch.

    ``max_reduce_blocks`` blocks of ``block`` threads fill the device once: a
    reduction writes one partial row per thread, so that is how many rows it
    leaves. Elementwise launches may use up to ``max_blocks``.
    """

    block: int
    max_blocks: int
    max_reduce_blocks: int

    @classmethod
    def for_device(cls, info: DeviceInfo, block_threads: int = 0) -> Geometry:
        """The geometry that fills device ``info`` with blocks of ``block_threads`` (0: 256)."""
        limit = info.max_threads_per_block
        block = min(block_threads or BLOCK_THREADS, limit)
        if block >= 32:
            block -= block % 32  # whole warps: bitmap words are built per warp
        resident = max(1, info.resident_threads // block)
        return cls(block, resident * _WAVES, resident)


# -- NVRTC --------------------------------------------------------------------


def _nvrtc() -> Any:
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()  # loads libnvrtc: CuPy finds it only when it is installed
    except Exception as exc:
        msg = (
            "compiling CUDA kernels needs CuPy and NVRTC: install the `gpu` extra "
            "(`pip install colbridge[gpu]`) and NVRTC (`pip install nvidia-cuda-nvrtc-cu12`, or "
            f"the CUDA toolkit) ({type(exc).__name__}: {exc})"
        )
        raise DeviceError(msg) from exc
    return nvrtc


def compile_nvrtc(source: str, arch: str, *, name: str = "kernel.cu") -> bytes:
    """Compile ``source`` with NVRTC for ``arch`` (``"sm_90"`` → cubin, ``"compute_90"`` → PTX).

    Needs no GPU or driver. Raises `KernelCompileError` with the numbered
    source and NVRTC's log on failure.
    """
    return _nvrtc_compile(source, arch, name)[0]


def compile_nvrtc_with_ptx(source: str, arch: str = "sm_90") -> tuple[bytes, str]:
    """The cubin of ``source`` for the real ``arch`` and the PTX it was made from.

    One NVRTC compile gives both, and both are kept in the kernel cache folder
    beside the backend's own compiles: the checks of every generated kernel (it
    builds for the GPU; its PTX holds each entry and no fused multiply-add) read
    what a run of the kernel compiled already, and the other way round.
    """
    if not arch.startswith("sm_"):
        msg = f"{arch!r} is not a real architecture (sm_XX): it has no cubin"
        raise ValueError(msg)
    cubin = _cached_binary(source, arch)
    ptx = cubin.with_suffix(".ptx")
    if not ptx.exists():  # a cubin cached before its PTX was kept beside it
        binary, text = _nvrtc_compile(source, arch, "kernel.cu", with_ptx=True)
        assert text is not None
        _write_atomic(ptx, text.encode())
        _write_atomic(cubin, binary)
        return binary, text
    return cubin.read_bytes(), ptx.read_text()


def _nvrtc_compile(source: str, arch: str, name: str,
                   with_ptx: bool = False) -> tuple[bytes, str | None]:  # fmt: skip
    nvrtc = _nvrtc()
    opts = [f"--gpu-architecture={arch}", *COMPILE_OPTIONS]
    try:
        prog = nvrtc.createProgram(source, name, [], [])
    except Exception as exc:
        msg = f"NVRTC could not start ({type(exc).__name__}: {exc})"
        raise DeviceError(msg) from exc
    try:
        try:
            nvrtc.compileProgram(prog, opts)
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            msg = (
                f"generated CUDA kernel failed to compile with NVRTC for {arch} "
                f"({' '.join(opts)}):\n{log}\n{numbered(source)}"
            )
            raise KernelCompileError(msg) from exc
        ptx = None
        if with_ptx or not arch.startswith("sm_"):
            text = nvrtc.getPTX(prog)
            ptx = text.decode() if isinstance(text, bytes) else str(text)
        if arch.startswith("sm_"):
            return bytes(nvrtc.getCUBIN(prog)), ptx
        assert ptx is not None
        return ptx.encode(), ptx
    finally:
        nvrtc.destroyProgram(prog)


def _cached_binary(source: str, arch: str) -> Path:
    """The compiled kernel on disk (``<cache>/cuda/<sha256>_<arch>.cubin|ptx``), built once.

    The source is kept beside it as ``<sha256>.cu``, for reading and debugging, and a
    cubin's PTX as ``<sha256>_<arch>.ptx`` (see `compile_nvrtc_with_ptx`).
    """
    folder = cache_dir() / "cuda"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = hashlib.sha256((source + "\0" + " ".join(COMPILE_OPTIONS)).encode()).hexdigest()
    suffix = "cubin" if arch.startswith("sm_") else "ptx"
    path = folder / f"{digest[:40]}_{arch}.{suffix}"
    text = folder / f"{digest[:40]}.cu"
    if not text.exists():
        _write_atomic(text, source.encode())
    if path.exists() and path.stat().st_size > 0:
        return path
    binary, ptx = _nvrtc_compile(source, arch, "kernel.cu", with_ptx=True)
    if arch.startswith("sm_"):  # the PTX on the way to the cubin: the checks read it
        assert ptx is not None
        _write_atomic(path.with_suffix(".ptx"), ptx.encode())
    _write_atomic(path, binary)
    return path


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _arch(info: DeviceInfo, binary: str = "cubin") -> str:
    """A cubin for the device itself when NVRTC knows it, else PTX the driver compiles.

    ``binary="ptx"``: PTX (the newest virtual architecture the device runs) anyway.
    """
    supported = _nvrtc().getSupportedArchs()
    cc = int(info.compute_capability)
    if binary == "cubin" and cc in supported:
        return f"sm_{cc}"
    return f"compute_{max(a for a in supported if a <= cc)}"


# -- one run's hold on the GPU ----------------------------------------------------

class _LegacyExecutor:
    """Runs the double's kernels with the `Runtime` of the current run (`use_runtime`)."""

    def __init__(self) -> None:
        self.last: Runtime | None = None

    def _runtime(self) -> Runtime:
        runtime = _RUNTIME.get() or self.last  # frees may flush queued work from elsewhere
        assert runtime is not None
        return runtime

    def load(self, kernel: CudaKernelSource) -> Any:
        return self._runtime().load(kernel)

    def launch(self, handle: Any, kernel: CudaKernelSource, grid: int, block: int,
               args: list[Any]) -> None:  # fmt: skip
        self._runtime().launch(handle, kernel, grid, block, args)


_LEGACY: dict[tuple[type[Runtime], str], Any] = {}
_LEGACY_LOCK = threading.Lock()


def _legacy_cupy(runtime: Runtime) -> Any:
    """The CuPy test double whose kernels ``runtime`` executes (one per runtime class and arch).

    One per class and architecture, not per runtime, so that compiled kernels
    are shared by the runtimes of a class; a runtime's ``arch`` (a sanitized
    host build is its own) keeps kernels loaded differently apart.
    """
    from colbridge.testing.cupy_double import CupyDouble, DeviceSpec  # test-only, on use

    with _LEGACY_LOCK:
        key = (type(runtime), str(getattr(runtime, "arch", "")))
        double = _LEGACY.get(key)
        if double is None:
            double = CupyDouble(devices=[DeviceSpec(total_memory=1 << 40)],
                                executor=_LegacyExecutor(), log_limit=10_000)  # fmt: skip
            _LEGACY[key] = double
        double.executor.last = runtime
        return double


@dataclass(eq=False)
class _Slot:
    """One of the run's streams with the buffers of the chunk queued on it."""

    stream: Any
    device: dict[Hashable, tuple[int, Any]] = field(default_factory=dict)
    staging: dict[Hashable, tuple[int, Any]] = field(default_factory=dict)
    done: Any = None
    after: list[Callable[[], None]] = field(default_factory=list)
    err_zeroed: bool = False


class _Session:
    """One run's hold on the GPU: device facts, streams, memory and what must outlive the work."""

    def __init__(self, cp: Any, opts: CudaOptions, legacy: Runtime | None) -> None:
        self.cp = cp
        self.rt = cp.cuda.runtime
        self.opts = opts
        self.legacy = legacy
        self.info = device_info(cp, opts.device)
        check_placement(self.info, opts.placement)
        self.placement = opts.placement
        if legacy is not None:
            self.geometry = Geometry(legacy.block, legacy.max_blocks, legacy.max_reduce_blocks)
        else:
            self.geometry = Geometry.for_device(self.info, opts.block_threads)
        self.arch = _arch(self.info, opts.binary)
        self.token = getattr(cp, "cache_token", "cupy")
        self.slots: list[_Slot] = []
        self.stager = Stager(cp)  # pinned bounce buffers for every upload of the run
        self.keep: list[Any] = []  # buffers replaced while queued work may still read them
        self.leases: dict[tuple[int, int], HostLease] = {}
        self.reservation: Reservation | None = None
        self.prefetch_to_host = True
        self.pageable_results = False
        self.managed_inputs: set[tuple[int, int]] = set()

    # streams
    def slot(self, k: int) -> _Slot:
        while len(self.slots) <= k:
            self.slots.append(_Slot(stream_pool.acquire(self.cp, self.opts.device)))
        return self.slots[k]

    def wait(self, slot: _Slot) -> None:
        """Wait for the work queued on ``slot``, then run the host work waiting for it."""
        if slot.done is not None:
            slot.done.synchronize()
            slot.done = None
        while slot.after:
            slot.after.pop(0)()

    def finish(self) -> None:
        """Wait for every stream of the run and run the host work waiting for them."""
        for slot in self.slots:
            slot.stream.synchronize()
            slot.done = None
            self.wait(slot)

    # memory
    def budget(self, wanted: int, minimum: int) -> int:
        """Reserve device memory for the run; how many bytes it may use."""
        if self.legacy is not None:
            budget = self.legacy.budget_bytes()
            if budget is not None and budget < minimum:
                msg = (f"not enough free GPU memory: the run needs at least {minimum} bytes, "
                       f"{budget} allowed")  # fmt: skip
                raise DeviceError(msg)
            return wanted if budget is None else budget
        self.reservation = reserve(self.cp, self.opts.device, self.opts.memory_fraction,
                                   wanted, minimum)  # fmt: skip
        return self.reservation.nbytes

    def device_buffer(self, slot: _Slot, key: Hashable, nbytes: int) -> int:
        """Address of device buffer ``key`` of ``slot`` holding at least ``nbytes``."""
        found = slot.device.get(key)
        if found is not None and found[0] >= nbytes:
            return int(found[1].ptr)
        size = max(nbytes, 8)
        with slot.stream:  # CuPy's pool reuses a block only on the stream it was taken on
            mem = self.cp.cuda.alloc(size)
        if self.reservation is not None:
            # what the run holds is counted once: not also as free memory or the pool's cache
            self.reservation.hold(size - (found[0] if found is not None else 0))
        slot.device[key] = (size, mem)
        return int(mem.ptr)

    def staging_buffer(self, slot: _Slot, key: Hashable, nbytes: int) -> int:
        """Address of pinned host buffer ``key`` of ``slot`` holding at least ``nbytes``."""
        found = slot.staging.get(key)
        if found is not None and found[0] >= nbytes:
            return int(found[1].ptr)
        if found is not None:
            self.keep.append(found[1])  # queued copies may still read it
        size = max(nbytes, 8)
        mem = self.cp.cuda.alloc_pinned_memory(size)
        slot.staging[key] = (size, mem)
        return int(mem.ptr)

    def host_result(self, nbytes: int) -> tuple[int, pa.Buffer]:
        """A whole-result host buffer the GPU can write (or copy) into, and its Arrow buffer."""
        if nbytes == 0:
            buf = pa.allocate_buffer(0)
            return 0, buf
        if self.placement == "pageable":
            buf = pa.allocate_buffer(nbytes)
            return int(buf.address), buf
        if self.placement == "managed":
            with self.slot(0).stream:
                mem = managed_pool(self.cp).malloc(nbytes)
            return int(mem.ptr), pa.foreign_buffer(int(mem.ptr), nbytes, base=mem)
        # device and host-mapped: pinned (page-locked) memory from CuPy's pinned pool
        try:
            mem = self.cp.cuda.alloc_pinned_memory(nbytes)
        except cuda_failures(self.cp):
            if self.placement != "device":
                raise
            # No page-locked memory left: copy into pageable memory instead (the driver
            # stages such copies itself, and they wait for the stream).
            self.pageable_results = True
            buf = pa.allocate_buffer(nbytes)
            return int(buf.address), buf
        return int(mem.ptr), pa.foreign_buffer(int(mem.ptr), nbytes, base=mem)

    def lease(self, ptr: int, nbytes: int, owner: Any) -> int:
        """Device address of host bytes mapped for the run (``host-mapped``)."""
        key = (ptr, nbytes)
        found = self.leases.get(key)
        if found is None:
            found = host_registry.lease(self.cp, self.info, ptr, nbytes, owner)
            self.leases[key] = found
        return found.device_address(ptr)

    def prefetch(self, ptr: int, nbytes: int, to_device: bool, stream: Any) -> None:
        """Move managed memory to the device (or back to the host) in stream order."""
        if nbytes == 0 or not self.info.concurrent_managed_access:
            return
        if to_device:
            # the reservation covers these pages; while on the device they are simply not free
            self.rt.memPrefetchAsync(ptr, nbytes, self.opts.device, stream.ptr)
            return
        if not self.prefetch_to_host:
            return
        try:
            self.rt.memPrefetchAsync(ptr, nbytes, _CUDA_CPU_DEVICE, stream.ptr)
        except self.rt.CUDARuntimeError:
            # CuPy built for CUDA 13 passes the host as a device location, which the driver
            # refuses; the host then migrates the pages on first touch instead.
            self.prefetch_to_host = False

    def close(self, *, strict: bool) -> None:
        """Wait for all queued work, then give back pages, memory and streams.

        Runs on every exit, exceptions included: nothing is freed or unregistered
        while a kernel or a copy may still use it. A failure while waiting is
        raised afterwards when ``strict`` (the run itself went well).
        """
        failure: BaseException | None = None
        try:
            if self.managed_inputs and self.slots:
                with self.slots[0].stream:
                    for ptr, nbytes in sorted(self.managed_inputs):
                        self.prefetch(ptr, nbytes, False, self.slots[0].stream)
            for slot in self.slots:
                slot.stream.synchronize()
        except BaseException as exc:  # a failed device leaves nothing to wait for
            failure = exc
        for slot in self.slots:
            slot.device.clear()
            slot.staging.clear()
            slot.after.clear()
            stream_pool.release(self.cp, self.opts.device, slot.stream)
        self.slots.clear()
        self.keep.clear()
        self.stager.ring.clear()
        for lease in self.leases.values():
            lease.release()
        self.leases.clear()
        if self.reservation is not None:
            self.reservation.release()
        if failure is not None and (strict or not isinstance(failure, Exception)):
            raise failure


# -- the segment runner -------------------------------------------------------------


@dataclass
class _Compiled:
    source: CudaKernelSource
    handle: Any


@dataclass(frozen=True)
class _Part:
    """One buffer of one input column as the kernels read it.

    ``bits``: a bitmap (or bool values) read from bit ``bit0`` of ``data``;
    otherwise ``itemsize``-byte values starting at byte ``byte0`` of ``data``.
    """

    key: tuple[str, str]
    data: np.ndarray  # the whole buffer's bytes (uint8)
    bits: bool
    itemsize: int = 0
    byte0: int = 0
    bit0: int = 0

    def span(self, start: int, stop: int) -> tuple[int, int, int]:
        """(first byte, end byte, bit offset) of rows ``start:stop`` within ``data``."""
        if self.bits:
            first = (self.bit0 + start) >> 3
            return first, (self.bit0 + stop + 7) >> 3, (self.bit0 + start) & 7
        return self.byte0 + start * self.itemsize, self.byte0 + stop * self.itemsize, 0

    def per_row(self) -> float:
        return 0.125 if self.bits else float(self.itemsize)


def _bytes(buffer: pa.Buffer | None) -> np.ndarray:
    if buffer is None or buffer.size == 0:
        return np.zeros(8, dtype=np.uint8)
    return np.frombuffer(buffer, dtype=np.uint8)


def _column_parts(spec: InputSpec, array: pa.Array, num_rows: int,
                  name: str | None = None) -> list[_Part]:  # fmt: skip
    """The buffers of input ``spec`` as the kernels read them, keyed by ``name``.

    ``name`` (default: the input's own) is the frame column a shift read in place reads,
    so the column and its lags are one upload.
    """
    name = spec.name if name is None else name
    if len(array) < num_rows:
        msg = (f"internal error: input column `{spec.name}` has {len(array)} rows but the pass "
               f"reads {num_rows}")  # fmt: skip
        raise RuntimeError(msg)
    buffers = array.buffers()
    offset = array.offset
    parts: list[_Part] = []
    if spec.dtype.is_bool:
        parts.append(_Part((name, "values"), _bytes(buffers[1]), True, bit0=offset))
    else:
        size = spec.dtype.numpy.itemsize
        parts.append(_Part((name, "values"), _bytes(buffers[1]), False, size, offset * size))
    if spec.nullable:
        if buffers[0] is None:  # planned nullable but no bitmap: all valid
            ones = np.full((num_rows + 7) // 8 + 8, 0xFF, dtype=np.uint8)
            parts.append(_Part((name, "validity"), ones, True))
        else:
            parts.append(_Part((name, "validity"), _bytes(buffers[0]), True, bit0=offset))
    return parts


def _scalar_args(spec: ScalarSpec, value: Any, valid: bool) -> list[Any]:
    bound: list[Any] = [value if valid else 0]
    if spec.dtype.is_bool:
        bound = [bool(value) if valid else False]
    if spec.nullable:
        bound.append(bool(valid))
    return bound


_C_SCALARS: dict[str, type[np.generic]] = {
    "bool": np.bool_,
    "signed char": np.int8,
    "short": np.int16,
    "int": np.int32,
    "long long": np.int64,
    "unsigned char": np.uint8,
    "unsigned short": np.uint16,
    "unsigned int": np.uint32,
    "unsigned long long": np.uint64,
    "float": np.float32,
    "double": np.float64,
}


def _typed_args(kernel: CudaKernelSource, args: list[Any]) -> tuple[Any, ...]:
    """Arguments as CuPy passes them: pointers as 64-bit addresses, values in their C type."""
    if len(args) != len(kernel.params):
        msg = (f"internal error: kernel `{kernel.name}` takes {len(kernel.params)} arguments, "
               f"{len(args)} were bound")  # fmt: skip
        raise RuntimeError(msg)
    typed: list[Any] = []
    for (ct, _), arg in zip(kernel.params, args, strict=True):
        typed.append(np.uint64(arg) if ct.endswith("*") else _C_SCALARS[ct](arg))
    return tuple(typed)


def run_segment(
    segment: Segment,
    columns: Mapping[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str] = frozenset(),
    groups: Grouping | None = None,
) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
    """Run one segment on the GPU: reduction passes, then the fused elementwise pass.

    ``nan_null`` names float columns in which NaN means null (pandas NumPy floats);
    ``groups`` holds the group ids of the segment's grouped work (factorized on the
    host; the ids travel to the device as an input column).

    Raises `DeviceError` when CuPy, the driver or the device fails (so the
    caller's fallback policy applies) and `KernelCompileError` when NVRTC
    rejects a generated kernel.
    """
    ran: tuple[dict[str, pa.Array], pa.BooleanArray | None]
    ran = _on_device(lambda run: run.run(), segment, columns, num_rows, stats, nan_null, groups)
    return ran


def run_scan(
    func: str,
    options: tuple[Any, ...],
    arg: pa.Array,
    arg_type: DType,
    result: DType,
    stats: RunStats,
    groups: GroupIds | None = None,
) -> tuple[pa.Array, str]:
    """One ordered operation over a whole column on the GPU (generated CUDA scans).

    Computes what `colbridge.backends.scans.run_scan` computes (per group of
    ``groups`` with keys), for the functions
    `colbridge.codegen.cuda_scans.device_scan_reason` lets through; returns the
    result and where it ran, for the report. See `colbridge.backends.cuda_scans`.
    """
    from colbridge.backends.cuda_scans import run_device_scan  # it imports this module

    return run_device_scan(func, options, arg, arg_type, result, stats, groups)


def reduce_partials(
    segment: Segment,
    columns: Mapping[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str] = frozenset(),
) -> tuple[list[AggSlot], np.ndarray, np.ndarray, np.ndarray]:
    """The last reduction pass of ``segment`` as one folded partial row (see `cpu`)."""
    rows: tuple[list[AggSlot], np.ndarray, np.ndarray, np.ndarray]
    rows = _on_device(lambda run: run.partials(), segment, columns, num_rows, stats, nan_null)
    return rows


def _on_device(
    what: Callable[[_SegmentRun], Any],
    segment: Segment,
    columns: Mapping[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str],
    groups: Grouping | None = None,
) -> Any:
    return in_session(
        lambda session: what(
            _SegmentRun(session, segment, columns, num_rows, stats, nan_null, groups)
        ),
        "the CUDA backend failed",
    )


def in_session(work: Callable[[_Session], Any], failure: str) -> Any:
    """``work(session)`` on the current device, in a session closed whatever happens.

    CUDA errors become `DeviceError` (``failure`` names what failed); the first
    error is the one reported, and host-run tests check the session's contracts.
    """
    opts = current_options()
    legacy = _RUNTIME.get()
    cp = _legacy_cupy(legacy) if legacy is not None else cupy_module()
    failures = cuda_failures(cp)
    try:
        with cp.cuda.Device(opts.device):  # the caller's current device comes back after
            session = _Session(cp, opts, legacy)
            try:
                result = work(session)
            except BaseException:
                session.close(strict=False)  # the first error is the one to report
                raise
            session.close(strict=True)
            if legacy is not None:
                cp.check()  # host-run tests are held to the contracts too
            return result
    except failures as exc:
        raise cuda_error(cp, exc, f"{failure} on cuda:{opts.device}") from exc


#: Results of reductions computed before a run: whole-column values, per-group values.
Prior = tuple[Mapping[Agg, tuple[Any, bool]], Mapping[GroupAgg, GroupedValues]]

#: Most bytes of per-block grouped tables; beyond, the blocks share one table.
PER_BLOCK_TABLE_BYTES = 64 << 20

_TABLE_KINDS = (("f", np.float64), ("i", np.int64), ("u", np.uint64))


_RUN_SCOPES = itertools.count()


class _SegmentRun:
    """One segment on one session: planning chunks, binding arguments, the passes."""

    def __init__(
        self,
        session: _Session,
        segment: Segment,
        columns: Mapping[str, pa.Array],
        num_rows: int,
        stats: RunStats,
        nan_null: frozenset[str],
        groups: Grouping | None = None,
        prior: Prior | None = None,
    ) -> None:
        self.s = session
        self.segment = segment
        self.num_rows = num_rows
        self.stats = stats
        self.groups = groups
        self.nan_null = nan_null & frozenset(segment.inputs)
        self.input_types = tuple((c, columns[c].type) for c in segment.inputs)
        self.nullable = input_nullability(segment, columns, (self.nan_null, self.input_types))
        #: inputs read rows back (shifts fused into the passes), by input name
        self.lagged = groups.lagged if groups is not None else {}
        self.scalar_values: dict[Agg, tuple[Any, bool]] = dict(prior[0]) if prior else {}
        self.grouped_values: dict[GroupAgg, GroupedValues] = dict(prior[1]) if prior else {}
        if groups is not None:
            # the group ids are an input column; results made on the host are operands
            columns = {**columns, **{name: ids.ids_array() for name, ids in groups.ids.items()}}
            for node, array in groups.host.items():
                if node in segment.types:
                    self.grouped_values[node] = grouped_operand(array, segment.types[node])
        self.columns = columns
        self.nulls, self.variant = self._nullability()
        # rows every pass reads (a one-row segment's reductions still read every row)
        self.rows_read = num_rows
        self.column_parts: dict[str, list[_Part]] = {}
        self.parts: dict[tuple[str, str], _Part] = {}
        self.in_place: dict[tuple[str, str], bool] = {}
        self.resident: dict[tuple[str, str], int] = {}  # uploaded once for the whole segment
        self.group_uploads: dict[tuple[int, tuple[str, str]], int] = {}
        # a run over the groups (sub-run) uploads its own columns of the same names: its
        # device buffers are its own, so the outer run's resident uploads stay intact
        self.scope = next(_RUN_SCOPES)
        self.uploads = 0

    # -- kernels
    def _kernel(
        self,
        key: tuple[Any, ...],
        generate: Callable[[], CudaKernelSource],
        roots: Sequence[Node],
    ) -> _Compiled:
        """The compiled kernel of ``key`` (made by ``generate``), computing ``roots``."""
        s = self.s

        def build() -> _Compiled:
            src = generate()
            path = _cached_binary(src.source, s.arch)
            module = s.cp.RawModule(path=str(path))
            return _Compiled(src, module.get_function(src.name))

        compiled, hit = kernel_cache.get_or_build(("cuda", s.token, s.arch, *key), build)
        if hit:
            self.stats.cache_hits += 1
        else:
            self.stats.compiled += 1
        self.stats.sources.append(compiled.source.source)
        src = compiled.source.for_roots(roots)  # made for other literals, perhaps
        if src is compiled.source:
            return compiled  # type: ignore[no-any-return]
        return _Compiled(src, compiled.handle)  # type: ignore[arg-type]

    def _kernels(self) -> tuple[list[_Compiled], _Compiled | None]:
        segment = self.segment
        reduces = [self._reduce_kernel(index, split_level(level)[0])
                   for index, level in enumerate(segment.agg_levels)]  # fmt: skip
        if (not segment.outputs and segment.mask is None) or segment.outputs_are_reductions:
            return reduces, None
        return reduces, self._elementwise_kernel()

    def _nullability(self) -> tuple[Nullability, tuple[Any, ...]]:
        """What kernels are generated for now, and its part of their cache keys."""
        # group results with no null group are read without validity (flat row loops)
        valid = frozenset(g for g, (_, v) in self.grouped_values.items() if v is None)
        nulls = Nullability(self.segment.types, self.nullable, self.nan_null, valid,
                            self.lagged)  # fmt: skip
        key = (tuple(sorted(self.nullable)), self.nan_null, self.input_types,
               *((self.segment.group_numbers_of(valid),) if valid else ()),
               *((lag_directions(self.lagged),) if self.lagged else ()))  # fmt: skip
        return nulls, key

    def _reduce_kernel(self, index: int, level: list[Agg]) -> _Compiled:
        """The kernel of reduction pass ``index`` (its whole-column reductions ``level``).

        As the elementwise kernel, it takes the segment's tables and literals as
        arguments, and its key (the segment's signature) leaves them out.
        """
        segment, nulls = self.segment, self.nulls
        return self._kernel(
            ("reduce", segment.signature, index, *self.variant),
            lambda: generate_reduce(level, segment.types, nulls, plan_text=segment.kernel_text,
                                    tables=segment.tables, literals=segment.params),
            level,
        )

    def _elementwise_kernel(self) -> _Compiled:
        segment, nulls = self.segment, self.nulls

        def make_elementwise() -> CudaKernelSource:
            return generate_elementwise(segment.outputs, segment.mask, segment.types, nulls,
                                        plan_text=segment.kernel_text, literals=segment.params,
                                        gate=segment.gate, tables=segment.tables)  # fmt: skip

        # literals are kernel arguments: the key (the segment's signature) leaves them out
        key = ("elementwise", segment.signature, segment.one_row, *self.variant)
        return self._kernel(key, make_elementwise, segment.row_roots)

    # -- planning
    def _plan(
        self, reduces: list[_Compiled], elementwise: _Compiled | None
    ) -> tuple[list[tuple[int, int]], int, list[tuple[int, int]]]:
        """(chunks of the reduction passes, their slot count, chunks of the elementwise pass)."""
        s = self.s
        for compiled in [*reduces, *([elementwise] if elementwise else [])]:
            for spec in compiled.source.inputs:
                if spec.name not in self.column_parts:
                    # a shift read in place reads its frame column's buffers: one upload
                    read = self.lagged.get(spec.name)
                    parts = _column_parts(spec, self.columns[spec.name], self.rows_read,
                                          read.source if read is not None else None)  # fmt: skip
                    self.column_parts[spec.name] = parts
                    for part in parts:
                        self.parts[part.key] = part
                        self.in_place[part.key] = self._readable_in_place(part)
        per_row = sum(p.per_row() for k, p in self.parts.items() if not self.in_place[k])
        if elementwise is not None and s.placement in ("device", "managed"):
            for out in elementwise.source.outputs:
                per_row += 0.125 if out.dtype.is_bool else out.dtype.numpy.itemsize
                per_row += 0.125 if out.nullable else 0.0
        geo = s.geometry
        width = max((8 * (max(c.source.n_f, 1) + max(c.source.n_i, 1) + max(c.source.n_u, 1))
                     for c in reduces), default=0)  # fmt: skip
        buffers = len(self.parts) + 3 + 2 * (len(elementwise.source.outputs) if elementwise
                                              else 0)  # fmt: skip
        fixed = geo.max_reduce_blocks * geo.block * width + 8 * N_ERR_KINDS + 512 * buffers
        n = self.num_rows
        cap = s.opts.max_chunk_rows
        cap = max(CHUNK_ALIGN, cap - cap % CHUNK_ALIGN) if cap else 0
        whole = fixed + int(per_row * n + 1)  # everything at once, one stream
        # with a cap below the row count: two streams taking turns, chunks of at most `cap` rows
        wanted = 2 * fixed + int(2 * per_row * cap + 1) if cap and cap < n else whole
        minimum = fixed + int(per_row * CHUNK_ALIGN + 1)
        granted = s.budget(wanted, minimum)
        if granted >= whole and (not cap or n <= cap):
            rows, slots = n, 1
        else:
            two = (granted - 2 * fixed) / (2 * per_row) if per_row else float("inf")
            one = (granted - fixed) / per_row if per_row else float("inf")
            slots = 2 if two >= CHUNK_ALIGN else 1
            rows = int(min(two if slots == 2 else one, cap or n))
            rows = max(CHUNK_ALIGN, rows - rows % CHUNK_ALIGN)
        if n == 0:
            rows = 1
        chunks = [(a, min(a + rows, n)) for a in range(0, n, rows)] or [(0, 0)]
        if elementwise is not None and self.segment.one_row:
            return chunks, slots, [(0, 1)]
        return chunks, slots, chunks

    def _readable_in_place(self, part: _Part) -> bool:
        """Whether kernels read this buffer where it is (else it is uploaded)."""
        placement = self.s.placement
        if placement in ("host-mapped", "pageable"):
            return True
        kind = memory_type(self.s.cp, int(part.data.ctypes.data))
        return kind in (MEMORY_MANAGED, MEMORY_DEVICE)

    # -- binding
    def _input_args(self, spec: InputSpec, slot: _Slot, start: int, stop: int,
                    single: bool) -> list[Any]:  # fmt: skip
        """Addresses (and bit offsets) of rows ``start:stop`` of input ``spec`` on the device."""
        args: list[Any] = []
        for part in self.column_parts[spec.name]:
            lo, hi, bit = part.span(start, stop)
            if self.in_place[part.key]:
                address = self._in_place_address(part, lo, hi, slot)
            elif single and part.key in self.resident:
                address = self.resident[part.key]  # uploaded by an earlier pass
            else:
                address = self._upload(part.key, part.data[lo:max(hi, lo)], slot)
                if single:
                    self.resident[part.key] = address
            args.append(address)
            if part.bits:
                args.append(bit)
        if spec.lag:
            args.append(self.lagged[spec.name].rows)  # `lg{k}`: rows back, negative: ahead
        if spec.fill:
            args.append(self.lagged[spec.name].fill)  # `fl{k}`: the rows shifted in
        return args

    def _in_place_address(self, part: _Part, lo: int, hi: int, slot: _Slot) -> int:
        s = self.s
        base = int(part.data.ctypes.data)
        if s.placement == "host-mapped":
            # one registration per buffer and run: the bytes every pass reads
            first, end, _ = part.span(0, self.rows_read)
            mapped = s.lease(base + first, max(end - first, 1), part.data)
            return mapped + (lo - first)
        if hi > lo and memory_type(s.cp, base) == MEMORY_MANAGED:
            s.prefetch(base + lo, hi - lo, True, slot.stream)
            s.managed_inputs.add((base + lo, hi - lo))
        return base + lo

    def _upload(self, key: tuple[str, str], host: np.ndarray, slot: _Slot) -> int:
        """Queue a copy of ``host`` to a device buffer of ``slot`` through pinned staging."""
        s = self.s
        nbytes = host.nbytes
        dev = s.device_buffer(slot, ("in", self.scope, key), nbytes)
        if nbytes:
            s.stager.upload(host, dev, slot.stream)
            self.uploads += 1
        return dev

    def _err(self, slot: _Slot) -> int:
        s = self.s
        dev = s.device_buffer(slot, "err", 8 * N_ERR_KINDS)
        if not slot.err_zeroed:
            s.rt.memsetAsync(dev, 0, 8 * N_ERR_KINDS, slot.stream.ptr)
            slot.err_zeroed = True
        return dev

    def _read_errors(self, used: list[_Slot]) -> np.ndarray:
        """Failure counts of the pass: one copy per stream, one wait."""
        s = self.s
        stages = []
        for slot in used:
            if not slot.err_zeroed:
                continue
            stage = s.staging_buffer(slot, "err", 8 * N_ERR_KINDS)
            with slot.stream:
                s.rt.memcpyAsync(stage, s.device_buffer(slot, "err", 8 * N_ERR_KINDS),
                                 8 * N_ERR_KINDS, s.rt.memcpyDeviceToHost,
                                 slot.stream.ptr)  # fmt: skip
            stages.append(stage)
            slot.err_zeroed = False
        s.finish()
        total = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)
        for stage in stages:
            total[:, 0] += host_bytes(stage, 8 * N_ERR_KINDS).view(np.uint64).astype(np.int64)
        return total

    def _launch(self, compiled: _Compiled, rows: int, args: list[Any], reduce: bool) -> int:
        """Queue the kernel on the current stream; the number of threads it runs."""
        geo = self.s.geometry
        cap = geo.max_reduce_blocks if reduce else geo.max_blocks
        grid, block = launch_config(compiled.source.threads_for(rows), geo.block, cap)
        compiled.handle((grid,), (block,), _typed_args(compiled.source, args))
        return grid * block

    # -- passes
    def _without_lags(self) -> None:
        """Read the shifts the kernels would read in place as shifted columns made on the host.

        For runs whose kernels do not see every row at once (rows in several chunks, the
        passes over groups): the lagged input becomes the shift itself (one copy).
        """
        for name, read in self.lagged.items():
            shifted = host_scan("shift", (read.rows, read.fill), self.columns[name],
                               self.segment.types[Column(name)],
                               self.segment.types[Column(name)], None)  # fmt: skip
            self.columns = {**self.columns, name: shifted}
            dropped = self.column_parts.pop(name, [])
            kept = {p.key for parts in self.column_parts.values() for p in parts}
            for part in dropped:
                if part.key not in kept:  # not also the buffers of the column or another lag
                    self.parts.pop(part.key, None)
                    self.in_place.pop(part.key, None)
        self.nullable = self.nullable | {n for n in self.lagged if self.columns[n].null_count}
        self.lagged = {}
        self.nulls, self.variant = self._nullability()

    def run(self) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
        segment = self.segment
        if segment.one_row and segment.group_by is None and self.groups is not None:
            # one row of whole-frame reductions, some made on the host as Arrow values
            opaque = {name: self.groups.host[node] for name, node in segment.outputs
                      if node in segment.opaque}  # fmt: skip
            if opaque:
                kept = [(name, node) for name, node in segment.outputs if name not in opaque]
                if not kept:
                    return opaque, None
                self.segment = replace(segment, outputs=kept)
                results, mask = self.run()
                return {**results, **opaque}, mask
        if self.segment.group_by is not None or any(
            isinstance(r, GroupAgg) for level in self.segment.agg_levels for r in level
        ):
            if self.lagged:  # the passes over groups read their rows group by group
                self._without_lags()
            return self._run_by_level()
        reduces, elementwise = self._kernels()
        chunks, nslots, row_chunks = self._plan(reduces, elementwise)
        if self.lagged and max(len(chunks), len(row_chunks)) > 1:
            # a chunk's kernels see its rows only, not the rows before it a lag reads
            self._without_lags()
            reduces, elementwise = self._kernels()
            chunks, nslots, row_chunks = self._plan(reduces, elementwise)
        scalar_values = self.scalar_values
        for level, compiled in zip(self.segment.agg_levels, reduces, strict=True):
            pf, pi, pu = self._reduce(compiled, chunks, nslots, scalar_values)
            scalar_values.update(finalize_slots(compiled.source.slots, pf, pi, pu,
                                                self.num_rows))  # fmt: skip
            self.stats.kernels.append(
                f"cuda reduce[{self.segment.reductions_text(level)}] in {len(chunks)} chunk(s), "
                f"placement={self.s.placement}"
            )
        if self.segment.outputs_are_reductions:
            return reduction_outputs(self.segment, scalar_values), None
        if elementwise is None:
            return {}, None
        return self._elementwise_pass(elementwise, row_chunks, nslots)

    def _elementwise_pass(
        self, elementwise: _Compiled, row_chunks: list[tuple[int, int]], nslots: int
    ) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
        scalar_values = self.scalar_values
        if self.num_rows == 0 and not self.segment.one_row:
            check_scalar_outputs(self.segment, self.nulls, scalar_values, self.stats,
                                 self.grouped_values)  # fmt: skip
        result = self._elementwise(elementwise, row_chunks, nslots, scalar_values)
        src = elementwise.source
        self.stats.kernels.append(
            f"cuda elementwise[{', '.join(o.name for o in src.outputs)}] over "
            f"{len(src.inputs)} input(s) in {len(row_chunks)} chunk(s), "
            f"placement={self.s.placement}, {self.uploads} upload(s)"
            + (", results in pageable memory (no pinned memory left)" if self.s.pageable_results
               else "")
        )  # fmt: skip
        return result

    def _run_by_level(self) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
        """A segment with grouped work: pass by pass, as earlier results decide the kernels.

        A grouped result with no null group is read without validity by the kernels after
        it, so each pass's kernels are generated once the passes before it ran.
        """
        segment, groups = self.segment, self.groups
        assert groups is not None
        for index, level in enumerate(segment.agg_levels):
            aggs, by_keys = split_level(level)
            for keys, grouped in by_keys.items():
                self._grouped_pass(index, grouped, groups.of(keys.ids_column))
            for keys, each in per_group_level(level).items():
                self._per_group(each, groups.of(keys.ids_column))
            self.nulls, self.variant = self._nullability()
            if not aggs:
                continue
            compiled = self._reduce_kernel(index, aggs)
            chunks, nslots, _ = self._plan([compiled], None)
            pf, pi, pu = self._reduce(compiled, chunks, nslots, self.scalar_values)
            self.scalar_values.update(finalize_slots(compiled.source.slots, pf, pi, pu,
                                                     self.num_rows))  # fmt: skip
            self.stats.kernels.append(
                f"cuda reduce[{self.segment.reductions_text(aggs)}] in {len(chunks)} chunk(s), "
                f"placement={self.s.placement}"
            )
        if segment.group_by is not None:
            # the rows of what is computed now are the groups: row g gathers group g
            ids_name = segment.group_by.keys.ids_column
            opaque = {name: groups.host[node] for name, node in segment.outputs
                      if node in segment.opaque}  # fmt: skip
            kept = [(name, node) for name, node in segment.outputs if name not in opaque]
            if not kept:
                return opaque, None
            sub = replace(segment, outputs=kept, agg_levels=[], group_by=None)
            results, mask = self._over_groups(sub, groups.of(ids_name), ids_name)
            return {**results, **opaque}, mask
        if not segment.outputs and segment.mask is None:
            return {}, None
        elementwise = self._elementwise_kernel()
        _, nslots, row_chunks = self._plan([], elementwise)
        return self._elementwise_pass(elementwise, row_chunks, nslots)

    def _over_groups(
        self, sub: Segment, ids: GroupIds, ids_name: str | None
    ) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
        """Run ``sub`` over the groups of ``ids``: row ``g`` reads group ``g``."""
        columns = dict(self.columns)
        if ids_name is not None:
            columns[ids_name] = pa.array(np.arange(ids.count, dtype=np.int32))
        run = _SegmentRun(self.s, sub, columns, ids.count, self.stats, self.nan_null, None,
                          (self.scalar_values, self.grouped_values))  # fmt: skip
        return run.run()

    def _per_group(self, each: list[GroupAgg], ids: GroupIds) -> None:
        """Evaluate expressions of group results once per group (a pass over the groups)."""
        keys = each[0].keys
        names = [f"__each{k}__" for k in range(len(each))]
        sub = replace(
            self.segment,
            outputs=[(name, node.arg) for name, node in zip(names, each, strict=True)],
            mask=None, agg_levels=[], order=names, passthrough={}, one_row=False, pre=None,
            key_sets=[], host_aggs=[], group_by=None,
        )  # fmt: skip
        done, _ = self._over_groups(sub, ids, keys.ids_column)
        for name, node in zip(names, each, strict=True):
            self.grouped_values[node] = grouped_operand(done[name], self.segment.types[node])

    def _grouped_pass(self, index: int, aggs: list[GroupAgg], ids: GroupIds) -> None:
        """Partial tables by group id, filled with atomics, finished into `grouped_values`.

        Tables start at the accumulators' initial values (made on the host, copied
        once); with few groups each block updates a table of its own (less contention
        on the same addresses), with many the blocks share one. Chunks run one after
        another on one stream, so they update the same tables in order. The host
        merges the tables as it merges the CPU's per-chunk ones
        (`colbridge.backends.common.finalize_grouped`).
        """
        s, segment, nulls = self.s, self.segment, self.nulls
        keys = aggs[0].keys
        compiled = self._kernel(
            ("grouped", segment.signature, index, repr(keys), *self.variant),
            lambda: generate_grouped_reduce(aggs, segment.types, nulls,
                                            plan_text=segment.kernel_text,
                                            tables=segment.tables, literals=segment.params),
            aggs,
        )
        src = compiled.source
        chunks, _, _ = self._plan([compiled], None)
        widths = {"f": max(src.n_f, 1), "i": max(src.n_i, 1), "u": max(src.n_u, 1)}
        blocks = s.geometry.max_reduce_blocks
        row_bytes = ids.count * 8 * sum(widths.values())
        per_block = blocks > 1 and blocks * row_bytes <= PER_BLOCK_TABLE_BYTES
        tables = blocks if per_block else 1
        host = {kind: np.zeros((tables, ids.count, widths[kind]), dtype=dtype)
                for kind, dtype in _TABLE_KINDS}  # fmt: skip
        for kind, column, start in src.table_starts:
            host[kind][:, :, column] = start
        slot = s.slot(0)
        s.wait(slot)
        single = len(chunks) == 1
        with slot.stream:
            device = {kind: self._upload(("table", kind), host[kind], slot)
                      for kind, _ in _TABLE_KINDS}  # fmt: skip
            for start, stop in chunks:
                if stop <= start:
                    continue
                args: list[Any] = [stop - start]
                for spec in src.inputs:
                    args += self._input_args(spec, slot, start, stop, single)
                for sc in src.scalars:
                    args += _scalar_args(sc, *self.scalar_values[sc.agg])
                args += self._group_args(src, slot)
                args += list(segment.param_values)
                args += [device["f"], device["i"], device["u"], self._err(slot), ids.count,
                         1 if per_block else 0]  # fmt: skip
                self._launch(compiled, stop - start, args, reduce=True)
            stages = {}
            for kind, _ in _TABLE_KINDS:
                stage = s.staging_buffer(slot, ("table", kind), host[kind].nbytes)
                s.rt.memcpyAsync(stage, device[kind], host[kind].nbytes,
                                 s.rt.memcpyDeviceToHost, slot.stream.ptr)  # fmt: skip
                stages[kind] = stage
        raise_kernel_errors(src, self._read_errors([slot]))  # waits for the stream
        out = {kind: host_bytes(stages[kind], host[kind].nbytes).view(dtype)
               .reshape(host[kind].shape).copy() for kind, dtype in _TABLE_KINDS}  # fmt: skip
        self.stats.kernels.append(
            f"cuda grouped reduce[{self.segment.reductions_text(aggs)}] into {ids.count} "
            f"group(s), {tables} table(s), {len(chunks)} chunk(s)"
        )
        for agg_slot in src.slots:
            assert isinstance(agg_slot.agg, GroupAgg)
            self.grouped_values[agg_slot.agg] = finalize_grouped(
                agg_slot, out["f"], out["i"], out["u"], ids)  # fmt: skip

    def _group_args(self, src: CudaKernelSource, slot: _Slot) -> list[Any]:
        """Device addresses of the per-group results ``src`` gathers, then its lookup tables.

        Per-group results are ``g{j}`` (``gv{j}``), lookup tables ``lut{k}`` (``lutv{k}``)
        and their length ``lutn{k}``.

        Every kernel of a segment takes all of the segment's tables, in the order its
        signature (the kernel's key) numbers them: a kernel made for another plan of the
        same signature reads this plan's tables.
        """
        args: list[Any] = []
        for spec in src.groups:
            data, valid = self.grouped_values[spec.node]
            values = np.ascontiguousarray(data, dtype=spec.dtype.numpy)
            args.append(self._group_upload(("group", repr(spec.node)), values, slot))
            if spec.nullable:
                flags = np.ones(len(data), dtype=np.bool_) if valid is None else valid
                flags = np.ascontiguousarray(flags, dtype=np.bool_)
                args.append(self._group_upload(("group valid", repr(spec.node)), flags, slot))
        for table in self.segment.tables:
            bound = table_args(table, self.columns[table_key(table)])
            key = table_key(table)
            args.append(self._group_upload(("table", key), bound[0], slot))
            if table.nullable:
                args.append(self._group_upload(("table valid", key), bound[1], slot))
            args.append(int(bound[-1]))
        return args

    def _group_upload(self, key: tuple[str, str], host: np.ndarray, slot: _Slot) -> int:
        # a group result never changes once made: one upload per stream serves every chunk
        found = self.group_uploads.get((id(slot), key))
        if found is None:
            found = self.group_uploads[(id(slot), key)] = self._upload(key, host, slot)
        return found

    def partials(self) -> tuple[list[AggSlot], np.ndarray, np.ndarray, np.ndarray]:
        """Every reduction level, the last one left as its folded partial row."""
        if self.lagged:  # partials are made piece by piece (never lagged: `grouping`)
            self._without_lags()
        reduces, _ = self._kernels()
        chunks, nslots, _ = self._plan(reduces, None)
        scalar_values: dict[Agg, tuple[Any, bool]] = {}
        for compiled in reduces[:-1]:
            pf, pi, pu = self._reduce(compiled, chunks, nslots, scalar_values)
            scalar_values.update(finalize_slots(compiled.source.slots, pf, pi, pu,
                                                self.num_rows))  # fmt: skip
        last = reduces[-1]
        return (last.source.slots, *self._reduce(last, chunks, nslots, scalar_values))

    def _reduce(
        self,
        compiled: _Compiled,
        chunks: list[tuple[int, int]],
        nslots: int,
        scalar_values: dict[Agg, tuple[Any, bool]],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.s
        src = compiled.source
        widths = (max(src.n_f, 1), max(src.n_i, 1), max(src.n_u, 1))
        dtypes = (np.float64, np.int64, np.uint64)
        single = len(chunks) == 1
        rows_kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        used: list[_Slot] = []
        for index, (start, stop) in enumerate(chunks):
            if stop <= start:
                continue
            slot = s.slot(index % nslots)
            s.wait(slot)
            if slot not in used:
                used.append(slot)
            with slot.stream:
                args: list[Any] = [stop - start]
                for spec in src.inputs:
                    args += self._input_args(spec, slot, start, stop, single)
                for sc in src.scalars:
                    args += _scalar_args(sc, *scalar_values[sc.agg])
                args += self._group_args(src, slot)
                args += list(self.segment.param_values)
                capacity = s.geometry.max_reduce_blocks * s.geometry.block
                partials = [s.device_buffer(slot, ("partials", k), capacity * widths[k] * 8)
                            for k in range(3)]  # fmt: skip
                args += [*partials, self._err(slot)]
                threads = self._launch(compiled, stop - start, args, reduce=True)
                stages = []
                for k in range(3):
                    nbytes = threads * widths[k] * 8
                    stage = s.staging_buffer(slot, ("partials", k), capacity * widths[k] * 8)
                    s.rt.memcpyAsync(stage, partials[k], nbytes, s.rt.memcpyDeviceToHost,
                                     slot.stream.ptr)  # fmt: skip
                    stages.append(stage)
                slot.done = slot.stream.record()

            def collect(stages: list[int] = stages, threads: int = threads) -> None:
                got = tuple(
                    host_bytes(stage, threads * widths[k] * 8).view(dtypes[k])
                    .reshape(threads, widths[k]).copy()
                    for k, stage in enumerate(stages)
                )  # fmt: skip
                if single:
                    rows_kept.append(got)  # type: ignore[arg-type]
                    return
                merged = [np.concatenate([r[k] for r in [*rows_kept, got]]) for k in range(3)]
                rows_kept[:] = [fold_partials(src.slots, *merged)]

            slot.after.append(collect)
        raise_kernel_errors(src, self._read_errors(used))
        if rows_kept:
            pf, pi, pu = (np.concatenate([r[k] for r in rows_kept]) for k in range(3))
        else:  # no rows: nothing was launched
            pf, pi, pu = (np.zeros((0, widths[k]), dtype=dtypes[k]) for k in range(3))
        return fold_partials(src.slots, pf, pi, pu)

    def _elementwise(
        self,
        compiled: _Compiled,
        chunks: list[tuple[int, int]],
        nslots: int,
        scalar_values: dict[Agg, tuple[Any, bool]],
    ) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
        s = self.s
        src = compiled.source
        n = 1 if self.segment.one_row else self.num_rows
        single = len(chunks) == 1
        results: list[list[tuple[int, pa.Buffer, bool, int]]] = []  # per output: its parts
        for out in src.outputs:
            parts = [self._result_part(out.dtype.is_bool, out, n)]
            if out.nullable:
                parts.append(self._result_part(True, out, n))
            results.append(parts)
        used: list[_Slot] = []
        for index, (start, stop) in enumerate(chunks):
            rows = stop - start
            if rows <= 0:
                continue
            slot = s.slot(index % nslots)
            s.wait(slot)
            if slot not in used:
                used.append(slot)
            with slot.stream:
                args: list[Any] = [rows]
                for spec in src.inputs:
                    args += self._input_args(spec, slot, start, stop, single)
                for sc in src.scalars:
                    args += _scalar_args(sc, *scalar_values[sc.agg])
                args += self._group_args(src, slot)
                args += list(self.segment.param_values)
                copies: list[tuple[int, int, int]] = []  # (host address, device address, bytes)
                for m, parts in enumerate(results):
                    for p, (address, _buf, bits, itemsize) in enumerate(parts):
                        at = start // 8 if bits else start * itemsize
                        nbytes = (rows + 7) // 8 if bits else rows * itemsize
                        if s.placement == "device":
                            size = -(-rows // 64) * 8 if bits else nbytes
                            dev = s.device_buffer(slot, ("out", m, p), size)
                            copies.append((address + at, dev, nbytes))
                            args.append(dev)
                        else:
                            if s.placement == "managed":
                                s.prefetch(address + at, nbytes, True, slot.stream)
                            args.append(address + at)
                args.append(self._err(slot))
                self._launch(compiled, rows, args, reduce=False)
                for host, dev, nbytes in copies:
                    s.rt.memcpyAsync(host, dev, nbytes, s.rt.memcpyDeviceToHost, slot.stream.ptr)
                if s.placement == "managed":
                    for parts in results:
                        for address, _buf, bits, itemsize in parts:
                            at = start // 8 if bits else start * itemsize
                            nbytes = (rows + 7) // 8 if bits else rows * itemsize
                            s.prefetch(address + at, nbytes, False, slot.stream)
                slot.done = slot.stream.record()
        raise_kernel_errors(src, self._read_errors(used))
        buffers: list[tuple[pa.Buffer, pa.Buffer | None]] = []
        for parts in results:
            data = parts[0][1]
            valid = parts[1][1] if len(parts) > 1 else None
            buffers.append((data, valid))
        return wrap_outputs(src.outputs, buffers, n)

    def _result_part(
        self, bits: bool, spec: OutputSpec, n: int
    ) -> tuple[int, pa.Buffer, bool, int]:
        """A whole-result host buffer: (address, Arrow buffer, bit-packed, value size)."""
        itemsize = 0 if bits else spec.dtype.numpy.itemsize
        nbytes = -(-n // 64) * 8 if bits else n * itemsize
        address, buf = self.s.host_result(nbytes)
        return address, buf, bits, itemsize


def kernel_sources(segment: Segment, nulls: Nullability, num_rows: int) -> list[tuple[str, str]]:
    """(title, CUDA C source) of the kernels that run ``segment`` (no GPU needed)."""
    from colbridge.backends import common
    from colbridge.codegen import cuda as cuda_codegen

    return common.kernel_sources(cuda_codegen, "cuda", segment, nulls, num_rows=num_rows,
                                 parallel_from=0)  # fmt: skip
