"""The CUDA backend: compiles generated CUDA C with NVRTC and runs a segment through CuPy.

Stage: backends. Code generation lives in `colbridge.codegen.cuda`; this module
binds Arrow columns to kernel arguments, moves bytes according to the
placement, launches, and wraps the results as Arrow arrays.

The work is split between a generic segment runner (argument binding, chunking,
combining reduction partials with the CPU backend's ``finalize_reduction``, building
Arrow arrays) and a `Runtime` that owns memory, compilation and launches. The
real runtime is `CupyRuntime`; the test-only `colbridge.testing.cuda_host`
runtime compiles the very same kernel text with g++ and emulates the launch
grid on the CPU, so everything above the runtime is exercised without a GPU.

Placements
----------
``"device"``
    explicit copies: inputs are copied to device memory, outputs copied back
    into Arrow buffers.
``"managed"``
    inputs are copied once into CUDA managed (unified) memory; outputs are
    allocated in managed memory and wrapped as Arrow buffers without a copy.
``"host-mapped"``
    the Arrow host buffers themselves are read over the bus: registered with
    ``cudaHostRegister`` (or used as they are where the device reports
    pageable memory access, HMM); outputs are host Arrow buffers the kernel
    writes straight into.

Managed and device allocations never exceed the device's free memory times
`CudaOptions.memory_fraction`; larger inputs are processed in chunks of rows.
CuPy is imported only when a kernel is about to run on a GPU.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.backends.common import (
    RunStats,
    finalize_reduction,
    raise_kernel_errors,
    wrap_outputs,
)
from colbridge.backends.cpu import check_scalar_outputs
from colbridge.backends.kernel_cache import cache_dir, kernel_cache
from colbridge.codegen.cuda import (
    COMPILE_OPTIONS,
    CudaKernelSource,
    generate_elementwise,
    generate_reduce,
)
from colbridge.codegen.kernel import (
    N_ERR_KINDS,
    InputSpec,
    ScalarSpec,
    kernel_tables,
    table_args,
    table_key,
)
from colbridge.errors import DeviceError, KernelCompileError
from colbridge.expr.nodes import Agg
from colbridge.plan.nullability import Nullability
from colbridge.plan.planner import Segment

__all__ = [
    "PLACEMENTS",
    "CudaOptions",
    "CupyRuntime",
    "Runtime",
    "compile_nvrtc",
    "launch_config",
    "numbered",
    "options",
    "run_segment",
    "use_runtime",
]

PLACEMENTS: tuple[str, ...] = ("device", "managed", "host-mapped")

#: Threads per block of every launch.
BLOCK_THREADS = 256
#: Most blocks of one elementwise launch (the grid-stride loop covers the rest).
MAX_BLOCKS = 4096
#: Most blocks of one reduction launch: each thread writes one partial row.
MAX_REDUCE_BLOCKS = 256


@dataclass(frozen=True)
class CudaOptions:
    """How the CUDA backend runs: which device, which placement, how much memory it may use.

    ``memory_fraction`` bounds what one chunk of rows may allocate (inputs and
    outputs together) as a fraction of the free device memory reported by
    ``cudaMemGetInfo``. ``max_chunk_rows`` caps a chunk independently (0: no cap).
    """

    device: int = 0
    placement: str = "device"
    memory_fraction: float = 0.5
    max_chunk_rows: int = 0

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            msg = f"unknown placement {self.placement!r}; use one of {', '.join(PLACEMENTS)}"
            raise DeviceError(msg)
        if not 0.0 < self.memory_fraction <= 1.0:
            msg = f"memory_fraction must be in (0, 1], got {self.memory_fraction!r}"
            raise DeviceError(msg)


def _default_options() -> CudaOptions:
    placement = os.environ.get("COLBRIDGE_CUDA_PLACEMENT", "device")
    fraction = float(os.environ.get("COLBRIDGE_CUDA_MEMORY_FRACTION", "0.5"))
    return CudaOptions(placement=placement, memory_fraction=fraction)


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


@contextlib.contextmanager
def use_runtime(runtime: Runtime) -> Iterator[Runtime]:
    """Run CUDA segments in this block on ``runtime`` instead of a CuPy device."""
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


# -- NVRTC --------------------------------------------------------------------


def _nvrtc() -> Any:
    try:
        from cupy.cuda import nvrtc
    except ImportError as exc:
        msg = (
            "compiling CUDA kernels needs CuPy and NVRTC "
            f"(install the `gpu` extra: `pip install colbridge[gpu]`): {exc}"
        )
        raise DeviceError(msg) from exc
    return nvrtc


def compile_nvrtc(source: str, arch: str, *, name: str = "kernel.cu") -> bytes:
    """Compile ``source`` with NVRTC for ``arch`` (``"sm_90"`` → cubin, ``"compute_90"`` → PTX).

    Needs no GPU or driver. Raises `KernelCompileError` with the numbered
    source and NVRTC's log on failure.
    """
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
        if arch.startswith("sm_"):
            return bytes(nvrtc.getCUBIN(prog))
        ptx = nvrtc.getPTX(prog)
        return ptx if isinstance(ptx, bytes) else str(ptx).encode()
    finally:
        nvrtc.destroyProgram(prog)


def _cached_binary(source: str, arch: str) -> Path:
    """The compiled kernel on disk (``<cache>/cuda/<sha256>_<arch>.cubin|ptx``), built once."""
    folder = cache_dir() / "cuda"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    digest = hashlib.sha256((source + "\0" + " ".join(COMPILE_OPTIONS)).encode()).hexdigest()
    suffix = "cubin" if arch.startswith("sm_") else "ptx"
    path = folder / f"{digest[:40]}_{arch}.{suffix}"
    if path.exists() and path.stat().st_size > 0:
        return path
    binary = compile_nvrtc(source, arch)
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(binary)
    os.replace(tmp, path)
    return path


# -- runtimes -----------------------------------------------------------------


class Runtime:
    """Memory, compilation and launches for the segment runner (one per `run_segment`).

    Arrays handed out by a runtime are opaque to the runner: it passes them to
    `launch`, `to_numpy` and `into_arrow` only.
    """

    #: architecture name used in kernel cache keys, e.g. ``"sm_90"``
    arch: str = ""
    block: int = BLOCK_THREADS
    max_blocks: int = MAX_BLOCKS
    max_reduce_blocks: int = MAX_REDUCE_BLOCKS

    def load(self, kernel: CudaKernelSource) -> Any:
        """A handle `launch` accepts, for the compiled ``kernel``."""
        raise NotImplementedError

    def launch(
        self, handle: Any, kernel: CudaKernelSource, grid: int, block: int, args: list[Any]
    ) -> None:
        """Run ``handle`` on ``grid`` blocks of ``block`` threads."""
        raise NotImplementedError

    def input(self, host: np.ndarray[Any, Any]) -> Any:
        """A device-visible array with the bytes of the read-only host array ``host``."""
        raise NotImplementedError

    def zeros(self, count: int, dtype: Any) -> Any:
        """A zero-filled device array."""
        raise NotImplementedError

    def output(self, nbytes: int) -> Any:
        """An uninitialised byte array the kernel writes an output into."""
        raise NotImplementedError

    def to_numpy(self, array: Any) -> np.ndarray[Any, Any]:
        """The contents of a device array on the host (waits for the device)."""
        raise NotImplementedError

    def into_arrow(self, array: Any, whole: bool) -> pa.Buffer | None:
        """An Arrow buffer over ``array`` without a copy, when the host can read it, else None.

        ``whole`` is True when the array holds the entire output (not one chunk).
        """
        raise NotImplementedError

    def budget_bytes(self) -> int | None:
        """How many bytes one chunk may allocate on the device (None: no limit)."""
        return None

    def close(self) -> None:
        """Release what this runtime registered or pinned."""


def _ctypes_scalar(ct: str) -> Any:
    return {
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
    }[ct]


class CupyRuntime(Runtime):
    """A real GPU through CuPy: NVRTC-compiled cubins loaded with `cupy.RawModule`."""

    def __init__(self, opts: CudaOptions) -> None:
        try:
            import cupy
        except ImportError as exc:
            msg = (
                "the CUDA backend needs CuPy (install the `gpu` extra: "
                f"`pip install colbridge[gpu]`): {exc}"
            )
            raise DeviceError(msg) from exc
        self.cp = cupy
        self.opts = opts
        try:
            if not cupy.cuda.is_available():
                msg = "CuPy found no CUDA device (no driver or no GPU)"
                raise DeviceError(msg)
            self.device = cupy.cuda.Device(opts.device)
            self.device.use()
            major, minor = self.device.compute_capability[:-1], self.device.compute_capability[-1]
            cc = f"{major}{minor}"
            supported = _nvrtc().getSupportedArchs()
            # A cubin for the device itself when NVRTC knows it, else PTX the driver JITs.
            self.arch = f"sm_{cc}" if int(cc) in supported else f"compute_{max(supported)}"
            attr = cupy.cuda.runtime.cudaDevAttrPageableMemoryAccess
            self.pageable = bool(cupy.cuda.runtime.deviceGetAttribute(attr, opts.device))
        except DeviceError:
            raise
        except Exception as exc:
            raise _device_error(exc, "could not open the CUDA device") from exc
        self._registered: list[int] = []
        self._keep: list[Any] = []

    # compilation and launch
    def load(self, kernel: CudaKernelSource) -> Any:
        """See `Runtime.load`."""
        path = _cached_binary(kernel.source, self.arch)
        try:
            module = self.cp.RawModule(path=str(path))
            return module.get_function(kernel.name)
        except Exception as exc:
            raise _device_error(exc, f"could not load the compiled kernel {path}") from exc

    def launch(
        self, handle: Any, kernel: CudaKernelSource, grid: int, block: int, args: list[Any]
    ) -> None:
        """See `Runtime.launch`."""
        bound = []
        for (ct, _), arg in zip(kernel.params, args, strict=True):
            bound.append(arg if ct.endswith("*") else _ctypes_scalar(ct)(arg))
        try:
            handle((grid,), (block,), tuple(bound))
        except Exception as exc:
            raise _device_error(exc, "kernel launch failed") from exc

    # memory
    def _wrap_pointer(self, ptr: int, nbytes: int, owner: Any) -> Any:
        cp = self.cp
        mem = cp.cuda.UnownedMemory(ptr, nbytes, owner, self.opts.device)
        return cp.ndarray((nbytes,), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))

    def _managed(self, nbytes: int) -> Any:
        cp = self.cp
        mem = cp.cuda.malloc_managed(max(nbytes, 1))
        return cp.ndarray((nbytes,), dtype=cp.uint8, memptr=mem)

    def input(self, host: np.ndarray[Any, Any]) -> Any:
        """See `Runtime.input`."""
        cp = self.cp
        raw = host.view(np.uint8).reshape(-1) if host.size else np.zeros(0, np.uint8)
        try:
            placement = self.opts.placement
            if placement == "device" or raw.nbytes == 0:
                return cp.asarray(raw)
            if placement == "managed":
                out = self._managed(raw.nbytes)
                cp.cuda.runtime.memcpy(out.data.ptr, raw.ctypes.data, raw.nbytes,
                                       cp.cuda.runtime.memcpyDefault)  # fmt: skip
                return out
            # host-mapped: the GPU reads the Arrow buffer in place
            return self._wrap_pointer(self._device_pointer(raw), raw.nbytes, raw)
        except DeviceError:
            raise
        except Exception as exc:
            raise _device_error(exc, "could not place an input on the device") from exc

    def _device_pointer(self, host: np.ndarray[Any, Any]) -> int:
        ptr = int(host.ctypes.data)
        if self.pageable:
            return ptr  # HMM: the device reads pageable host memory directly
        rt = self.cp.cuda.runtime
        page = 4096
        start = ptr - ptr % page
        stop = ptr + host.nbytes
        size = (stop - start + page - 1) // page * page
        try:
            rt.hostRegister(start, size, 2)  # cudaHostRegisterMapped
            self._registered.append(start)
        except self.cp.cuda.runtime.CUDARuntimeError as exc:
            if "AlreadyRegistered" not in str(exc):
                raise
        self._keep.append(host)
        return int(rt.pointerGetAttributes(ptr).devicePointer)

    def zeros(self, count: int, dtype: Any) -> Any:
        """See `Runtime.zeros`."""
        try:
            if self.opts.placement == "managed":
                nbytes = count * np.dtype(dtype).itemsize
                out = self._managed(nbytes).view(dtype)
                out[...] = 0
                return out
            return self.cp.zeros(count, dtype=dtype)
        except Exception as exc:
            raise _device_error(exc, "could not allocate device memory") from exc

    def output(self, nbytes: int) -> Any:
        """See `Runtime.output`."""
        try:
            if self.opts.placement == "managed":
                return self._managed(nbytes)
            if self.opts.placement == "host-mapped" and nbytes:
                host = np.frombuffer(pa.allocate_buffer(nbytes), dtype=np.uint8)
                return (host, self._wrap_pointer(self._device_pointer(host), nbytes, host))
            return self.cp.empty(nbytes, dtype=self.cp.uint8)
        except DeviceError:
            raise
        except Exception as exc:
            raise _device_error(exc, "could not allocate device memory") from exc

    def to_numpy(self, array: Any) -> np.ndarray[Any, Any]:
        """See `Runtime.to_numpy`."""
        try:
            if isinstance(array, tuple):
                self.cp.cuda.Device(self.opts.device).synchronize()
                return array[0]  # type: ignore[no-any-return]
            return self.cp.asnumpy(array)  # type: ignore[no-any-return]
        except Exception as exc:
            raise _device_error(exc, "could not copy results back from the device") from exc

    def into_arrow(self, array: Any, whole: bool) -> pa.Buffer | None:
        """See `Runtime.into_arrow`."""
        if isinstance(array, tuple):  # host-mapped: the kernel wrote into host memory
            self.cp.cuda.Device(self.opts.device).synchronize()
            return pa.py_buffer(array[0])
        if self.opts.placement == "managed" and whole:
            self.cp.cuda.Device(self.opts.device).synchronize()
            # unified memory: the Arrow buffer is the managed allocation itself
            return pa.foreign_buffer(array.data.ptr, array.nbytes, base=array)
        return None

    def budget_bytes(self) -> int | None:
        """See `Runtime.budget_bytes`."""
        if self.opts.placement == "host-mapped":
            return None
        try:
            free, _total = self.cp.cuda.runtime.memGetInfo()
        except Exception as exc:
            raise _device_error(exc, "could not query free device memory") from exc
        return int(free * self.opts.memory_fraction)

    def close(self) -> None:
        """See `Runtime.close`."""
        rt = self.cp.cuda.runtime
        for start in self._registered:
            with contextlib.suppress(Exception):
                rt.hostUnregister(start)
        self._registered.clear()
        self._keep.clear()


def _device_error(exc: BaseException, what: str) -> DeviceError:
    kind = type(exc).__name__
    if "OutOfMemory" in kind or ("memory" in str(exc).lower() and "out of" in str(exc).lower()):
        return DeviceError(f"{what}: the GPU is out of memory ({kind}: {exc})")
    return DeviceError(f"{what} ({kind}: {exc})")


# -- the segment runner -------------------------------------------------------


@dataclass
class _Compiled:
    source: CudaKernelSource
    handle: Any


def _kernel(
    runtime: Runtime, key: tuple[Any, ...], generate: Callable[[], CudaKernelSource],
    stats: RunStats,
) -> _Compiled:  # fmt: skip
    def build() -> _Compiled:
        src = generate()
        return _Compiled(src, runtime.load(src))

    compiled, hit = kernel_cache.get_or_build(("cuda", type(runtime).__name__, runtime.arch, *key),
                                              build)  # fmt: skip
    if hit:
        stats.cache_hits += 1
    else:
        stats.compiled += 1
    stats.sources.append(compiled.source.source)
    return compiled  # type: ignore[no-any-return]


def _host_input(spec: InputSpec, array: pa.Array, start: int, stop: int) -> list[Any]:
    """Host arrays and offsets of rows ``start:stop`` of one input, in argument order."""
    # a one-row pass over reductions still lists the columns inside them: clamp to the array
    stop = min(stop, len(array))
    start = min(start, stop)
    buffers = array.buffers()
    offset = array.offset
    bound: list[Any] = []
    if spec.dtype.is_bool:
        bound += _bits(buffers[1], offset + start, stop - start)
    else:
        dt = spec.dtype.numpy
        data = buffers[1]
        if data is None or stop <= start:
            values = np.zeros(0, dtype=dt)
        else:
            values = np.frombuffer(
                data, dtype=dt, count=stop - start, offset=(offset + start) * dt.itemsize
            )
        bound.append(values)
    if spec.nullable:
        validity = buffers[0]
        if validity is None:  # planned nullable but no bitmap: all valid
            nbits = stop - start
            bound += [np.full((nbits + 7) // 8 + 1, 0xFF, dtype=np.uint8), 0]
        else:
            bound += _bits(validity, offset + start, stop - start)
    return bound


def _bits(buffer: pa.Buffer | None, bit_start: int, nbits: int) -> list[Any]:
    """The bytes covering ``nbits`` bits from ``bit_start`` and the bit offset into them."""
    if buffer is None or nbits <= 0:
        return [np.zeros(1, dtype=np.uint8), 0]
    first = bit_start >> 3
    last = (bit_start + nbits + 7) >> 3
    raw = np.frombuffer(buffer, dtype=np.uint8, count=last - first, offset=first)
    return [raw, bit_start & 7]


def _scalar_args(spec: ScalarSpec, value: Any, valid: bool) -> list[Any]:
    bound: list[Any] = [value if valid else 0]
    if spec.dtype.is_bool:
        bound = [bool(value) if valid else False]
    if spec.nullable:
        bound.append(bool(valid))
    return bound


def _row_bytes(inputs: list[InputSpec], out_itemsizes: list[float]) -> float:
    per_row = 0.0
    for spec in inputs:
        per_row += 0.125 if spec.dtype.is_bool else spec.dtype.numpy.itemsize
        per_row += 0.125 if spec.nullable else 0.0
    return per_row + sum(out_itemsizes)


def _chunks(runtime: Runtime, n: int, per_row: float, fixed: int) -> list[tuple[int, int]]:
    """Row ranges (multiples of 8 long) whose allocations fit the runtime's memory budget."""
    limit = current_options().max_chunk_rows
    budget = runtime.budget_bytes()
    rows = n
    if budget is not None:
        room = budget - fixed
        if room <= 0 or (per_row > 0 and room / per_row < 8):
            msg = (
                f"not enough free GPU memory for even 8 rows ({budget} bytes allowed by "
                f"memory_fraction={current_options().memory_fraction}); free memory or use "
                "placement='host-mapped'"
            )
            raise DeviceError(msg)
        if per_row > 0:
            rows = min(rows, int(room / per_row))
    if limit:
        rows = min(rows, limit)
    rows = max(8, rows - rows % 8)
    if n <= rows:
        return [(0, n)]
    return [(s, min(s + rows, n)) for s in range(0, n, rows)]


def run_segment(
    segment: Segment,
    columns: Mapping[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str] = frozenset(),
) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
    """Run one segment on the GPU: reduction passes, then the fused elementwise pass.

    ``nan_null`` names float columns in which NaN means null (pandas NumPy floats).

    Raises `DeviceError` when CuPy, the driver or the device fails (so the
    caller's fallback policy applies) and `KernelCompileError` when NVRTC
    rejects a generated kernel.
    """
    runtime = _RUNTIME.get()
    owned = runtime is None
    if runtime is None:
        opts = current_options()
        runtime = CupyRuntime(opts)
    try:
        if owned:
            with runtime.device:  # type: ignore[attr-defined]
                return _run(runtime, segment, columns, num_rows, stats, nan_null)
        return _run(runtime, segment, columns, num_rows, stats, nan_null)
    finally:
        runtime.close()


def _run(
    runtime: Runtime,
    segment: Segment,
    columns: Mapping[str, pa.Array],
    num_rows: int,
    stats: RunStats,
    nan_null: frozenset[str] = frozenset(),
) -> tuple[dict[str, pa.Array], pa.BooleanArray | None]:
    nullable = frozenset(name for name in segment.inputs if columns[name].null_count > 0)
    nan_null = nan_null & frozenset(segment.inputs)
    nulls = Nullability(segment.types, nullable, nan_null)
    n = 1 if segment.one_row else num_rows
    scalar_values: dict[Agg, tuple[Any, bool]] = {}
    plan_text = "\n".join(f"{name} = {node!r}" for name, node in segment.outputs)
    if segment.mask is not None:
        plan_text += f"\nfilter: {segment.mask!r}"
    input_types = tuple((c, columns[c].type) for c in segment.inputs)

    for level in segment.agg_levels:
        key: tuple[Any, ...] = (
            "reduce", tuple(level), tuple(sorted(nullable)), nan_null, input_types
        )

        def make_reduce(level: list[Agg] = level) -> CudaKernelSource:
            return generate_reduce(level, segment.types, nulls, plan_text=plan_text)

        compiled = _kernel(runtime, key, make_reduce, stats)
        src = compiled.source
        widths = (max(src.n_f, 1), max(src.n_i, 1), max(src.n_u, 1))
        parts: list[list[np.ndarray[Any, Any]]] = [[], [], []]
        err_total = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)
        max_rows = runtime.block * runtime.max_reduce_blocks
        fixed = max_rows * 8 * sum(widths) + 8 * N_ERR_KINDS
        for start, stop in _chunks(runtime, num_rows, _row_bytes(src.inputs, []), fixed):
            grid, block = launch_config(src.threads_for(stop - start), runtime.block,
                                        runtime.max_reduce_blocks)  # fmt: skip
            rows = grid * block
            partials = [
                runtime.zeros(rows * widths[0], np.float64),
                runtime.zeros(rows * widths[1], np.int64),
                runtime.zeros(rows * widths[2], np.uint64),
            ]
            err = runtime.zeros(N_ERR_KINDS, np.uint64)
            args: list[Any] = [stop - start]
            for in_spec in src.inputs:
                args += [_place(runtime, a) for a in
                         _host_input(in_spec, columns[in_spec.name], start, stop)]  # fmt: skip
            for s in src.scalars:
                args += _scalar_args(s, *scalar_values[s.agg])
            for table in kernel_tables(aggs=level):
                args += [_place(runtime, a) for a in
                         table_args(table, columns[table_key(table)])]  # fmt: skip
            args += [*partials, err]
            runtime.launch(compiled.handle, src, grid, block, args)
            for k in range(3):
                parts[k].append(runtime.to_numpy(partials[k]).reshape(rows, widths[k]))
            err_total[:, 0] += runtime.to_numpy(err).astype(np.int64)
        raise_kernel_errors(src, err_total)
        stats.kernels.append(f"cuda reduce[{', '.join(repr(a) for a in level)}]")
        pf, pi, pu = (np.concatenate(p) for p in parts)
        for slot in src.slots:
            scalar_values[slot.agg] = finalize_reduction(slot, pf, pi, pu, num_rows)

    if not segment.outputs and segment.mask is None:
        return {}, None
    if num_rows == 0 and not segment.one_row:
        check_scalar_outputs(segment, nulls, scalar_values, stats)

    # literals are kernel arguments: the key (the segment's signature) leaves them out
    key = ("elementwise", segment.signature, tuple(sorted(nullable)), nan_null, input_types,
           segment.one_row)  # fmt: skip
    compiled = _kernel(
        runtime, key,
        lambda: generate_elementwise(segment.outputs, segment.mask, segment.types, nulls,
                                     plan_text=segment.kernel_text, literals=segment.params),
        stats,
    )  # fmt: skip
    literal_values = segment.param_values
    src = compiled.source
    out_sizes = [
        0.125 + (0.125 if s.nullable else 0.0) if s.dtype.is_bool
        else s.dtype.numpy.itemsize + (0.125 if s.nullable else 0.0)
        for s in src.outputs
    ]  # fmt: skip
    chunks = _chunks(runtime, n, _row_bytes(src.inputs, out_sizes), 64 * (len(src.outputs) + 1))
    whole = len(chunks) == 1
    nbits = (n + 7) // 8
    # host Arrow buffers the chunks are copied into (when a result cannot be wrapped)
    host_out: list[tuple[pa.Buffer | None, pa.Buffer | None]] = []
    host_views: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None]] = []
    if not whole:
        for spec in src.outputs:
            nbytes = nbits if spec.dtype.is_bool else n * spec.dtype.numpy.itemsize
            data = pa.allocate_buffer(nbytes)
            valid = pa.allocate_buffer(nbits) if spec.nullable else None
            host_out.append((data, valid))
            valid_view = np.frombuffer(valid, dtype=np.uint8) if valid else None
            host_views.append((np.frombuffer(data, dtype=np.uint8), valid_view))
    err_total = np.zeros((N_ERR_KINDS, 1), dtype=np.int64)
    for start, stop in chunks:
        rows = stop - start
        cbits = (rows + 7) // 8
        args = [rows]
        for in_spec in src.inputs:
            args += [_place(runtime, a) for a in
                     _host_input(in_spec, columns[in_spec.name], start, stop)]  # fmt: skip
        for s in src.scalars:
            args += _scalar_args(s, *scalar_values[s.agg])
        args += literal_values
        for table in kernel_tables(segment.outputs, segment.mask):
            args += [_place(runtime, a) for a in table_args(table, columns[table_key(table)])]
        dev_out: list[tuple[Any, Any | None]] = []
        for spec in src.outputs:
            data_dev = runtime.output(cbits if spec.dtype.is_bool
                                      else rows * spec.dtype.numpy.itemsize)  # fmt: skip
            args.append(data_dev)
            valid_dev = None
            if spec.nullable:
                valid_dev = runtime.output(cbits)
                args.append(valid_dev)
            dev_out.append((data_dev, valid_dev))
        err = runtime.zeros(N_ERR_KINDS, np.uint64)
        args.append(err)
        if rows > 0:
            grid, block = launch_config(src.threads_for(rows), runtime.block, runtime.max_blocks)
            runtime.launch(compiled.handle, src, grid, block, args)
            err_total[:, 0] += runtime.to_numpy(err).astype(np.int64)
        if whole:
            for data_dev, valid_dev in dev_out:
                host_out.append((_to_buffer(runtime, data_dev),
                                 _to_buffer(runtime, valid_dev) if valid_dev is not None
                                 else None))  # fmt: skip
            continue
        for spec, (data_dev, valid_dev), (data_view, valid_view) in zip(
            src.outputs, dev_out, host_views, strict=True
        ):
            lo = start // 8 if spec.dtype.is_bool else start * spec.dtype.numpy.itemsize
            chunk = runtime.to_numpy(data_dev).view(np.uint8)
            data_view[lo : lo + chunk.size] = chunk
            if valid_dev is not None and valid_view is not None:
                vchunk = runtime.to_numpy(valid_dev)
                valid_view[start // 8 : start // 8 + vchunk.size] = vchunk
    raise_kernel_errors(src, err_total)
    stats.kernels.append(
        f"cuda elementwise[{', '.join(s.name for s in src.outputs)}] over "
        f"{len(src.inputs)} input(s) in {len(chunks)} chunk(s)"
    )
    return wrap_outputs(src.outputs, host_out, n)


def _place(runtime: Runtime, arg: Any) -> Any:
    return runtime.input(arg) if isinstance(arg, np.ndarray) else arg


def _to_buffer(runtime: Runtime, array: Any) -> pa.Buffer:
    wrapped = runtime.into_arrow(array, whole=True)
    if wrapped is not None:
        return wrapped
    host = runtime.to_numpy(array)
    buf = pa.allocate_buffer(host.nbytes)
    np.frombuffer(buf, dtype=np.uint8)[:] = host.view(np.uint8).reshape(-1)
    return buf


def kernel_sources(segment: Segment, nulls: Nullability, num_rows: int) -> list[tuple[str, str]]:
    """(title, CUDA C source) of the kernels that run ``segment`` (no GPU needed)."""
    from colbridge.backends import common
    from colbridge.codegen import cuda as cuda_codegen

    return common.kernel_sources(cuda_codegen, "cuda", segment, nulls, num_rows=num_rows,
                                 parallel_from=0)  # fmt: skip
