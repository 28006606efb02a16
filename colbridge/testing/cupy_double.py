"""Testing: a stand-in for the part of CuPy colbridge uses, which holds callers to CuPy's contracts.

Stage: testing. `CupyDouble` answers the calls colbridge makes on ``cupy``
(``cupy.cuda.runtime``, streams and events, memory pools, pinned and managed
memory, ``RawModule``/``RawKernel``, a one-dimensional ``ndarray``) the way
CuPy and the CUDA driver do, and refuses what they refuse or what would only
work by luck on a GPU. Install it with `colbridge.memory.cuda.use_cupy`.
Kernels run for real: the very kernel text NVRTC compiled is compiled with g++
and executed by an executor (by default `colbridge.testing.cuda_host.HostRuntime`).

What it enforces, and where the rule comes from:

* Kernel arguments are converted as ``cupy.cuda.function._pointer`` does:
  ``None``, ``cupy.ndarray``, ``MemoryPointer``, NumPy arrays of size one and
  scalars (Python ``bool``/``int``/``float`` become bool/int64/float64);
  anything else raises CuPy's ``TypeError('Unsupported type ...')``. The
  driver copies each parameter with the size the kernel declares, so an
  argument whose size or kind differs from the kernel's parameter (an int64
  for an ``int``, a float64 for a ``float``, a missing argument) is a
  `ContractViolation`.
* Device memory is not host memory: device allocations get addresses the host
  cannot dereference, kernels and copies reach them through the double only.
* Every pointer a kernel receives must lie in memory the device can reach
  (device, managed, pinned, registered with ``cudaHostRegisterMapped``, or
  pageable memory on a device with pageable memory access) for as many bytes
  as the kernel reads or writes, and registered read-only memory is never
  written; otherwise the launch fails with ``cudaErrorIllegalAddress``, which,
  as on a GPU, is sticky: every later call fails too.
* ``cudaHostRegister`` of a range overlapping (by page) one already
  registered or pinned fails with ``cudaErrorHostMemoryAlreadyRegistered``;
  ``cudaHostUnregister`` needs the registered base address.
* Work is asynchronous: operations queued on a stream run only when the host
  waits for them (stream or event synchronisation, or a device-wide sync),
  which is the latest a GPU may run them. Reading results without waiting
  reads whatever was there (fresh allocations are filled with 0xA5).
* Freeing memory, or unregistering pages, while queued work on a stream may
  still use them is a `ContractViolation`, except for CuPy's stream-ordered
  reuse: a pooled device block freed while only the stream it was allocated on
  uses it. Unpooled frees (``cudaFree``, ``cudaFreeHost``) count as
  device-wide synchronisations, as do ``cudaDeviceSynchronize`` and freeing
  the pool's cached blocks.
* Launches and copies on a stream of another device fail with
  ``cudaErrorInvalidResourceHandle``; a cubin loads only on its architecture.
* ``cudaMemGetInfo`` counts live device allocations, CuPy's cached pool
  blocks, managed memory resident on the device and a configurable load of
  other processes; the pool raises ``OutOfMemoryError`` beyond the total.

What ran is recorded in `CupyDouble.counts` (``most_busy_streams``: the most
streams that had work queued at once) and `CupyDouble.log`; contract
breaches that cannot raise where they happen (frees in ``__del__``) are
collected in `CupyDouble.violations`: call `CupyDouble.check` after a test.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import itertools
import re
import threading
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from colbridge.codegen.cuda import CudaKernelSource
from colbridge.codegen.kernel import N_ERR_KINDS

__all__ = ["ContractViolation", "CupyDouble", "DeviceSpec"]

POISON = 0xA5
PAGE = 4096
# Device allocations live at addresses no host pointer has (non-canonical on x86-64).
_DEVICE_BASE = 0x4000_0000_0000_0000

_RUNTIME_ERRORS = {
    1: ("cudaErrorInvalidValue", "invalid argument"),
    2: ("cudaErrorMemoryAllocation", "out of memory"),
    3: ("cudaErrorInitializationError", "initialization error"),
    21: ("cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"),
    35: ("cudaErrorInsufficientDriver",
         "CUDA driver version is insufficient for CUDA runtime version"),
    46: ("cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"),
    100: ("cudaErrorNoDevice", "no CUDA-capable device is detected"),
    101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
    400: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
    700: ("cudaErrorIllegalAddress", "an illegal memory access was encountered"),
    712: ("cudaErrorHostMemoryAlreadyRegistered",
          "part or all of the requested memory range is already mapped"),
    713: ("cudaErrorHostMemoryNotRegistered",
          "pointer does not correspond to a registered memory region"),
    801: ("cudaErrorNotSupported", "operation not supported"),
    802: ("cudaErrorSystemNotReady", "system not yet initialized"),
    999: ("cudaErrorUnknown", "unknown error"),
}  # fmt: skip

_C_TYPES: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.bool_),
    "signed char": np.dtype(np.int8),
    "char": np.dtype(np.int8),
    "short": np.dtype(np.int16),
    "int": np.dtype(np.int32),
    "long long": np.dtype(np.int64),
    "unsigned char": np.dtype(np.uint8),
    "unsigned short": np.dtype(np.uint16),
    "unsigned int": np.dtype(np.uint32),
    "unsigned long long": np.dtype(np.uint64),
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
}

# cudaDeviceAttr numbers the double answers
_ATTRS = {
    1: "max_threads_per_block",
    16: "sm_count",
    39: "max_threads_per_sm",
    83: "managed_memory",
    88: "pageable_memory_access",
    89: "concurrent_managed_access",
    91: "host_pointer_for_registered",
    99: "host_register",
    100: "pageable_uses_host_page_tables",
    113: "host_register_read_only",
}


class ContractViolation(AssertionError):
    """Something CuPy or the CUDA driver does not allow (or allows only by luck) was done."""


class CUDARuntimeError(RuntimeError):
    """A CUDA runtime error, spelled as CuPy spells it (``name: description``)."""

    def __init__(self, status: int) -> None:
        self.status = status
        name, text = _RUNTIME_ERRORS.get(status, (f"cudaError{status}", "unknown error"))
        super().__init__(f"{name}: {text}")


class CUDADriverError(RuntimeError):
    """A CUDA driver error, spelled as CuPy spells it."""

    def __init__(self, status: int, name: str, text: str) -> None:
        self.status = status
        super().__init__(f"{name}: {text}")


class OutOfMemoryError(MemoryError):
    """CuPy's out-of-memory error of its memory pools."""

    def __init__(self, size: int, total: int, limit: int = 0) -> None:
        msg = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes)."
        if limit:
            msg += f" The memory limit is {limit:,} bytes."
        super().__init__(msg)


@dataclass
class DeviceSpec:
    """One simulated device: its facts as ``cudaDeviceGetAttribute`` reports them."""

    name: str = "colbridge test double"
    compute_capability: tuple[int, int] = (9, 0)
    sm_count: int = 4
    max_threads_per_sm: int = 256
    max_threads_per_block: int = 1024
    total_memory: int = 1 << 30
    other_usage: int = 0  # bytes used by other processes
    managed_memory: bool = True
    concurrent_managed_access: bool = True
    pageable_memory_access: bool = False
    pageable_uses_host_page_tables: bool = False
    host_register: bool = True
    host_register_read_only: bool = True
    host_pointer_for_registered: bool = True


# -- memory -------------------------------------------------------------------


@dataclass(eq=False)
class _Region:
    """One allocation or registration the device knows."""

    kind: str  # "device" | "managed" | "pinned" | "registered"
    address: int  # as handed out
    size: int
    host: int  # where the bytes are on the host
    device: int
    backing: Any = None
    stream: int | None = None  # arena stream of a pooled block
    pooled: bool = False
    flags: int = 0
    pending: Counter[int] = field(default_factory=Counter)
    resident: set[int] = field(default_factory=set)  # managed pages on the device
    free: bool = False  # a pooled block back in its pool
    pool: Any = None  # the pool a pooled block goes back to
    base: int = 0  # the address a registration was asked for (hostUnregister takes it)

    def contains(self, address: int, nbytes: int) -> bool:
        return self.address <= address and address + nbytes <= self.address + self.size

    @property
    def mapped(self) -> bool:
        return self.kind != "registered" or bool(self.flags & 2)

    @property
    def read_only(self) -> bool:
        return self.kind == "registered" and bool(self.flags & 8)


class _Memory:
    """Base of the double's memory objects: frees its region when collected."""

    def __init__(self, double: CupyDouble, region: _Region | None, ptr: int, size: int,
                 device_id: int) -> None:  # fmt: skip
        self._double = double
        self._region = region
        self.ptr = ptr
        self.size = size
        self.device_id = device_id

    def __int__(self) -> int:
        return self.ptr

    def __del__(self) -> None:
        region = self._region
        if region is not None:
            self._region = None
            self._double._release(region)


class MemoryPointer:
    """``cupy.cuda.MemoryPointer``: an address inside a memory object it keeps alive."""

    def __init__(self, mem: Any, offset: int) -> None:
        self.mem = mem
        self.ptr = int(mem.ptr) + offset
        self.device_id = getattr(mem, "device_id", 0)

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.ptr - int(self.mem.ptr) + offset)


class UnownedMemory:
    """``cupy.cuda.UnownedMemory``: memory allocated elsewhere, kept alive through ``owner``."""

    def __init__(self, ptr: int, size: int, owner: Any, device_id: int = -1) -> None:
        self.ptr = ptr
        self.size = size
        self.owner = owner
        self.device_id = device_id


class PinnedMemoryPointer:
    """``cupy.cuda.PinnedMemoryPointer``: not a `MemoryPointer` (kernels refuse it)."""

    def __init__(self, mem: Any, offset: int) -> None:
        self.mem = mem
        self.ptr = int(mem.ptr) + offset

    def __int__(self) -> int:
        return self.ptr

    def size(self) -> int:
        return int(self.mem.size) - (self.ptr - int(self.mem.ptr))


class _Pool:
    """A CuPy memory pool: blocks cached per stream, reused on that stream only."""

    def __init__(self, double: CupyDouble, kind: str) -> None:
        self._double = double
        self._kind = kind
        self._free: dict[tuple[int, int, int], list[_Region]] = {}  # (device, stream, size)
        self._in_use = 0
        self._total = 0

    def malloc(self, size: int) -> MemoryPointer:
        d = self._double
        with d._lock:
            d._guard()
            if size == 0:
                return MemoryPointer(_Memory(d, None, 0, 0, d._device()), 0)
            rounded = -(-size // 512) * 512
            stream = d._current_stream()
            # best fit among the blocks cached for this stream (CuPy splits them; this does not)
            fits = [k for k, v in self._free.items() if v and k[0] == d._device()
                    and k[1] == stream.ptr and k[2] >= rounded]  # fmt: skip
            cached = self._free[min(fits, key=lambda k: k[2])] if fits else None
            region: _Region | None
            if cached:
                region = cached.pop()
                region.free = False
                # reuse is ordered after the stream's earlier work: poison in stream order
                reused = region
                d._enqueue(stream._state, "poison", [(reused, True)],
                           lambda: d._fill(reused, POISON))  # fmt: skip
            else:
                region = d._allocate(self._kind, rounded, pooled=True, stream=stream.ptr)
                if region is None:
                    self.free_all_blocks()
                    region = d._allocate(self._kind, rounded, pooled=True, stream=stream.ptr)
                if region is None:
                    raise OutOfMemoryError(rounded, self._total)
                self._total += rounded
            region.pool = self
            self._in_use += region.size
            mem = _Memory(d, region, region.address, size, region.device)
            return MemoryPointer(mem, 0)

    def _back(self, region: _Region) -> None:
        self._in_use -= region.size
        region.free = True
        self._free.setdefault((region.device, region.stream or 0, region.size), []).append(region)

    def used_bytes(self) -> int:
        return self._in_use

    def free_bytes(self) -> int:
        return self._total - self._in_use

    def total_bytes(self) -> int:
        return self._total

    def free_all_blocks(self, stream: Any = None) -> None:
        d = self._double
        with d._lock:
            freed = 0
            for key in list(self._free):
                if stream is not None and key[1] != stream.ptr:
                    continue
                for region in self._free.pop(key):
                    d._forget(region)
                    freed += region.size
            self._total -= freed
            if freed:
                d._device_sync("cudaFree of cached pool blocks")


class _PinnedPool:
    """CuPy's pinned memory pool: power-of-two sizes, cached, not stream aware."""

    def __init__(self, double: CupyDouble) -> None:
        self._double = double
        self._free: dict[int, list[_Region]] = {}

    def malloc(self, size: int) -> PinnedMemoryPointer:
        d = self._double
        with d._lock:
            d._guard()
            if size == 0:
                return PinnedMemoryPointer(_Memory(d, None, 0, 0, -1), 0)
            rounded = 1 << (-(-size // 512) * 512 - 1).bit_length()
            cached = self._free.get(rounded)
            region: _Region | None
            if cached:
                region = cached.pop()
                region.free = False
                d._fill(region, POISON)
            else:
                region = d._allocate("pinned", rounded, pooled=True)
                if region is None:  # as CuPy's pool: give the cached blocks back, try again
                    self.free_all_blocks()
                    region = d._allocate("pinned", rounded, pooled=True)
                if region is None:
                    raise CUDARuntimeError(2)
            region.pool = self
            return PinnedMemoryPointer(_Memory(d, region, region.address, size, -1), 0)

    def _back(self, region: _Region) -> None:
        region.free = True
        self._free.setdefault(region.size, []).append(region)

    def free_all_blocks(self) -> None:
        d = self._double
        with d._lock:
            for regions in self._free.values():
                for region in regions:
                    d._forget(region)
            self._free.clear()


# -- streams --------------------------------------------------------------------


@dataclass(eq=False)
class _Op:
    kind: str
    uses: list[tuple[_Region, bool]]
    run: Callable[[], object]
    seq: int = 0


@dataclass(eq=False)
class _StreamState:
    ptr: int
    device: int
    blocking: bool
    queue: list[_Op] = field(default_factory=list)
    issued: int = 0  # operations ever queued
    done: int = 0  # operations completed


class Stream:
    """``cupy.cuda.Stream``: work queued here runs when the host waits for it."""

    def __init__(
        self,
        null: bool = False,
        non_blocking: bool = False,
        ptds: bool = False,
        priority: int | None = None,
        *,
        _double: CupyDouble | None = None,
    ) -> None:
        double = _double if _double is not None else type(self)._owner
        self._double = double
        self._state = double._new_stream(null, non_blocking)
        self.ptr = self._state.ptr

    _owner: CupyDouble  # set on the per-double subclass

    def __enter__(self) -> Stream:
        self._double._push_stream(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._double._pop_stream(self)

    def use(self) -> Stream:
        self._double._local().streams[self._double._device()] = [self]
        return self

    def synchronize(self) -> None:
        d = self._double
        with d._lock:
            d._guard()
            d.counts["stream_syncs"] += 1
            d.log.append(("synchronize", self.ptr))
            d._flush(self._state)

    def record(self, event: Event | None = None) -> Event:
        event = event if event is not None else self._double.cuda.Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        d = self._double
        with d._lock:
            d._guard()
            target = event._state
            if target is None:
                return
            upto = event._seq
            d._enqueue(self._state, "wait", [], lambda: d._flush(target, upto))

    @property
    def done(self) -> bool:
        self.synchronize()  # a GPU finishes its work eventually
        return True


class Event:
    """``cupy.cuda.Event``: a point in a stream's queue the host can wait for."""

    def __init__(
        self,
        block: bool = False,
        disable_timing: bool = False,
        interprocess: bool = False,
        *,
        _double: CupyDouble | None = None,
    ) -> None:
        self._double = _double if _double is not None else type(self)._owner
        self._state: _StreamState | None = None
        self._seq = 0

    _owner: CupyDouble

    def record(self, stream: Stream | None = None) -> None:
        d = self._double
        with d._lock:
            d._guard()
            stream = stream if stream is not None else d._current_stream()
            self._state = stream._state
            self._seq = stream._state.issued

    def synchronize(self) -> None:
        d = self._double
        with d._lock:
            d._guard()
            if self._state is not None:
                d.counts["event_syncs"] += 1
                d.log.append(("event synchronize", self._state.ptr, self._seq))
                d._flush(self._state, self._seq)

    @property
    def done(self) -> bool:
        self.synchronize()
        return True


# -- kernels --------------------------------------------------------------------

_SIGNATURE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)


def kernel_params(source: str) -> dict[str, list[tuple[str, str]]]:
    """(C type, name) of every parameter of every ``extern "C" __global__`` kernel in ``source``."""
    found: dict[str, list[tuple[str, str]]] = {}
    for match in _SIGNATURE.finditer(source):
        params = []
        for raw in match.group(2).split(","):
            words = raw.replace("*", " * ").split()
            words = [w for w in words if w != "__restrict__"]
            if not words:
                continue
            name = words[-1]
            ctype = " ".join(words[:-1]).replace(" *", "*")
            params.append((ctype, name))
        found[match.group(1)] = params
    return found


def _cupy_scalar_dtype(value: Any) -> np.dtype[Any]:
    """The dtype ``cupy._core._scalar.CScalar`` gives a kernel argument, or CuPy's TypeError."""
    typ = type(value)
    if typ is bool:
        return np.dtype(np.bool_)
    if typ is float:
        return np.dtype(np.float64)
    if typ is complex:
        return np.dtype(np.complex128)
    if typ is int:
        return np.dtype(np.uint64) if value >= 0x8000000000000000 else np.dtype(np.int64)
    if isinstance(value, np.generic):
        return value.dtype
    msg = f"Unsupported type {type(value)}"
    raise TypeError(msg)


class RawKernel:
    """A kernel of a `RawModule`; calling it queues a launch on the current stream."""

    def __init__(self, double: CupyDouble, source: CudaKernelSource, handle: Any) -> None:
        self._double = double
        self._source = source
        self._handle = handle
        self.max_threads_per_block = double._spec().max_threads_per_block
        # columns of each partial-row array, read off the kernel's stores (`pf[row * 3 + k]`)
        self._widths = {m.group(1): int(m.group(2)) for m in
                        re.finditer(r"\b(pf|pi|pu)\[row \* (\d+)", source.source)}  # fmt: skip
        # bit-packed outputs, read off the kernel's stores of one 32-bit word per warp
        self._bitmaps = frozenset(re.findall(r"\b(\w+)\[i >> 5\] =", source.source))

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: Sequence[Any],
                 **kwargs: Any) -> None:  # fmt: skip
        d = self._double
        if not isinstance(grid, tuple) or not isinstance(block, tuple):
            msg = "Argument 'grid' and 'block' must be tuples"
            raise TypeError(msg)
        shared_mem = int(kwargs.pop("shared_mem", 0))
        if kwargs:
            msg = f"unexpected keyword arguments {sorted(kwargs)}"
            raise TypeError(msg)
        gx, bx = max(1, grid[0] if grid else 1), max(1, block[0] if block else 1)
        if int(np.prod((*block, 1, 1)[:3])) > self.max_threads_per_block:
            raise CUDADriverError(1, "CUDA_ERROR_INVALID_VALUE", "invalid argument")
        values = [d._kernel_argument(a) for a in args]  # CuPy's conversion first
        params = self._source.params
        if len(values) != len(params):
            msg = (f"kernel `{self._source.name}` declares {len(params)} parameters but was "
                   f"launched with {len(args)} arguments: the driver would read past them")
            raise ContractViolation(msg)
        for (ctype, name), (kind, value) in zip(params, values, strict=True):
            _check_argument(self._source.name, ctype, name, kind, value)
        with d._lock:
            d._guard()
            stream = d._current_stream()
            d._check_stream_device(stream)
            plan = d._plan_launch(self, values, gx * bx)
            d._enqueue(stream._state, "launch",
                       [(r, w) for r, _a, _n, w in plan if r is not None],
                       lambda: d._execute(self, values, plan, gx, bx))  # fmt: skip
            d.counts["launches"] += 1
            d.log.append(("launch", stream.ptr, self._source.name, gx, bx, shared_mem))


def _check_argument(kernel: str, ctype: str, name: str, kind: str, value: Any) -> None:
    where = f"argument `{name}` ({ctype}) of kernel `{kernel}`"
    if ctype.endswith("*"):
        if kind != "pointer" and not (kind == "scalar" and value.dtype in
                                      (np.dtype(np.int64), np.dtype(np.uint64))):  # fmt: skip
            msg = f"{where} is a pointer but got a {value.dtype} value"
            raise ContractViolation(msg)
        return
    want = _C_TYPES[ctype]
    if kind != "scalar" or value.dtype != want:
        got = "a pointer" if kind != "scalar" else f"a {value.dtype} value"
        msg = (f"{where} takes {want.itemsize} byte(s) of {want} but got {got}: the kernel "
               "would read other bytes than the ones meant")
        raise ContractViolation(msg)


# -- arrays ---------------------------------------------------------------------


class ndarray:
    """A one-dimensional ``cupy.ndarray``: shape, dtype and a `MemoryPointer`."""

    _owner: CupyDouble

    def __init__(self, shape: Any, dtype: Any = float, memptr: MemoryPointer | None = None) -> None:
        d = self._owner
        self._double = d
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(int(x) for x in shape)  # fmt: skip
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape))
        self.nbytes = self.size * self.dtype.itemsize
        self.data = memptr if memptr is not None else d.cuda.alloc(self.nbytes)

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": [("", self.dtype.str)],
                "data": (self.data.ptr, False), "strides": None, "version": 3}  # fmt: skip

    def __dlpack_device__(self) -> tuple[int, int]:
        kind = self._double.cuda.runtime.pointerGetAttributes(self.data.ptr).type
        return (13 if kind == 3 else 2), self.data.device_id

    def __dlpack__(self, **kwargs: Any) -> Any:
        # Not a real capsule: what matters here is that an export keeps the array alive.
        return SimpleNamespace(owner=self)

    def view(self, dtype: Any) -> ndarray:
        dtype = np.dtype(dtype)
        return type(self)(self.nbytes // dtype.itemsize, dtype, self.data)

    def __getitem__(self, key: slice) -> ndarray:
        start, stop, step = key.indices(self.size)
        if step != 1:
            msg = "the double's ndarray slices with step 1 only"
            raise NotImplementedError(msg)
        return type(self)(max(stop - start, 0), self.dtype,
                          self.data + start * self.dtype.itemsize)  # fmt: skip

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a[...] = scalar``: a fill queued on the current stream, as CuPy's fill kernel."""
        if key is not Ellipsis and key != slice(None):
            msg = "the double's ndarray assigns whole arrays only (a[...] = value)"
            raise NotImplementedError(msg)
        pattern = np.full(self.size, value, dtype=self.dtype).view(np.uint8)
        self._double._fill_async(self.data.ptr, pattern)

    def get(self) -> np.ndarray[Any, Any]:
        """A host copy (waits for the current stream)."""
        return self._double.asnumpy(self)


# -- the double -----------------------------------------------------------------


class CupyDouble:
    """A stand-in for ``cupy`` with simulated devices (see the module docstring).

    ``devices`` describe the simulated GPUs (one by default); ``init_error``
    makes every device query fail with that ``cudaError_t`` (35: no driver
    or one too old for ``runtime_version`` (then give ``driver_version``),
    100: no device, 46: busy or MIG without an instance, ...);
    ``prefetch_to_host`` False makes prefetches to the host fail as with CuPy
    built for CUDA 13. ``executor`` runs the kernels (``load``/``launch`` of
    `colbridge.backends.cuda.Runtime`; default a `cuda_host.HostRuntime`).
    ``log_limit`` keeps only that many of the latest log entries;
    ``pinned_limit`` bounds page-locked host memory (``cudaHostAlloc`` then
    fails with ``cudaErrorMemoryAllocation``, as when the system refuses to
    lock more).
    """

    def __init__(
        self,
        *,
        devices: Sequence[DeviceSpec] | None = None,
        init_error: int | None = None,
        driver_version: int | None = None,
        runtime_version: int = 12090,
        prefetch_to_host: bool = True,
        executor: Any = None,
        log_limit: int | None = None,
        pinned_limit: int | None = None,
    ) -> None:
        self.devices = list(devices) if devices is not None else [DeviceSpec()]
        self.init_error = init_error
        if driver_version is None:  # cudaErrorInsufficientDriver without a driver reads 0
            driver_version = 0 if init_error == 35 else 12080
        self.driver_version = driver_version
        self.runtime_version = runtime_version
        self.prefetch_to_host_supported = prefetch_to_host
        self.pinned_limit = pinned_limit
        if executor is None:
            from colbridge.testing.cuda_host import HostRuntime

            executor = HostRuntime()
        self.executor = executor
        self.cache_token = f"double-{uuid.uuid4().hex}"
        self.__version__ = "colbridge-double"
        self.counts: Counter[str] = Counter()
        self.log: deque[tuple[Any, ...]] = deque(maxlen=log_limit)
        self.violations: list[str] = []
        self._lock = threading.RLock()
        self._tls = threading.local()
        self._sticky: int | None = None
        self._starts: list[int] = []
        self._regions: list[_Region] = []
        self._next_device = itertools.count(_DEVICE_BASE, 1 << 32)
        self._streams: dict[int, _StreamState] = {}
        self._stream_ids = itertools.count(0x1000, 0x10)
        self._null: dict[int, Stream] = {}
        self._build_namespace()

    # -- namespace -------------------------------------------------------------
    def _build_namespace(self) -> None:
        double = self
        stream_cls = type("Stream", (Stream,), {"_owner": double})
        event_cls = type("Event", (Event,), {"_owner": double})
        self.ndarray = type("ndarray", (ndarray,), {"_owner": double})
        self._pool = _Pool(self, "device")
        self._pinned_pool = _PinnedPool(self)
        runtime = SimpleNamespace(
            CUDARuntimeError=CUDARuntimeError,
            memcpyHostToHost=0, memcpyHostToDevice=1, memcpyDeviceToHost=2,
            memcpyDeviceToDevice=3, memcpyDefault=4,
            memoryTypeUnregistered=0, memoryTypeHost=1, memoryTypeDevice=2, memoryTypeManaged=3,
            hostAllocPortable=1, hostAllocMapped=2, streamNonBlocking=1, cudaCpuDeviceId=-1,
            **{f"cudaDevAttr{self._attr_name(n)}": n for n in _ATTRS},
            getDeviceCount=self._getDeviceCount, getDevice=self._getDevice,
            setDevice=self._setDevice, driverGetVersion=lambda: self.driver_version,
            runtimeGetVersion=lambda: self.runtime_version,
            deviceGetAttribute=self._deviceGetAttribute,
            getDeviceProperties=self._getDeviceProperties, memGetInfo=self._memGetInfo,
            deviceSynchronize=self._deviceSynchronize, hostRegister=self._hostRegister,
            hostUnregister=self._hostUnregister, pointerGetAttributes=self._pointerGetAttributes,
            memcpy=self._memcpy, memcpyAsync=self._memcpyAsync, memsetAsync=self._memsetAsync,
            memPrefetchAsync=self._memPrefetchAsync, hostAlloc=self._hostAlloc,
            freeHost=self._freeHost,
        )  # fmt: skip
        self.cuda = SimpleNamespace(
            runtime=runtime,
            driver=SimpleNamespace(CUDADriverError=CUDADriverError),
            memory=SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
            Stream=stream_cls, Event=event_cls, Device=self._device_class(),
            MemoryPointer=MemoryPointer, UnownedMemory=UnownedMemory,
            PinnedMemoryPointer=PinnedMemoryPointer,
            MemoryPool=self._memory_pool, PinnedMemoryPool=lambda: _PinnedPool(self),
            alloc=lambda size: self._pool.malloc(size),
            alloc_pinned_memory=lambda size: self._pinned_pool.malloc(size),
            malloc_managed=self._malloc_managed, PinnedMemory=self._pinned_memory,
            is_available=self._is_available,
            get_current_stream=lambda: self._current_stream(),
            get_device_id=lambda: self._device(),
        )  # fmt: skip
        self.uint8, self.int64, self.uint64, self.float64 = (np.uint8, np.int64, np.uint64,
                                                               np.float64)  # fmt: skip

    @staticmethod
    def _attr_name(number: int) -> str:
        return {
            1: "MaxThreadsPerBlock", 16: "MultiProcessorCount",
            39: "MaxThreadsPerMultiProcessor", 83: "ManagedMemory",
            88: "PageableMemoryAccess", 89: "ConcurrentManagedAccess",
            91: "CanUseHostPointerForRegisteredMem", 99: "HostRegisterSupported",
            100: "PageableMemoryAccessUsesHostPageTables", 113: "HostRegisterReadOnlySupported",
        }[number]  # fmt: skip

    def _device_class(self) -> type:
        double = self

        class Device:
            """``cupy.cuda.Device``: ``with Device(i):`` makes ``i`` current, then restores."""

            def __init__(self, device: int | None = None) -> None:
                self.id = double._device() if device is None else int(device)

            def __enter__(self) -> Device:
                local = double._local()
                local.device_stack.append(double._getDevice())
                if self.id != local.device:
                    double._setDevice(self.id)
                return self

            def __exit__(self, *exc: object) -> None:
                previous = double._local().device_stack.pop()
                if previous != double._local().device:
                    double._setDevice(previous)

            def use(self) -> None:
                double._setDevice(self.id)

            def synchronize(self) -> None:
                double._deviceSynchronize()

            @property
            def compute_capability(self) -> str:
                double._check_device(self.id)
                major, minor = double.devices[self.id].compute_capability
                return f"{major}{minor}"

        return Device

    # -- public helpers ----------------------------------------------------------
    def get_default_memory_pool(self) -> _Pool:
        """``cupy.get_default_memory_pool()``."""
        return self._pool

    def get_default_pinned_memory_pool(self) -> _PinnedPool:
        """``cupy.get_default_pinned_memory_pool()``."""
        return self._pinned_pool

    def RawModule(self, *, code: str | None = None, path: str | None = None,
                  options: tuple[str, ...] = (), **kwargs: Any) -> Any:  # fmt: skip
        """``cupy.RawModule``: from a cubin/PTX file (the source is read beside it) or code."""
        if (code is None) == (path is None):
            msg = "Exactly one of `code` and `path` keyword arguments must be given."
            raise TypeError(msg)
        arch = None
        if path is not None:
            file = Path(path)
            blob = file.read_bytes()
            if not (blob.startswith(b"\x7fELF") or b".target" in blob[:4096]):
                raise CUDADriverError(218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed")
            arch = file.stem.split("_", 1)[1] if "_" in file.stem else None
            code = (file.parent / f"{file.stem.split('_', 1)[0]}.cu").read_text()
        assert code is not None
        return SimpleNamespace(get_function=lambda name: self._load(code, name, arch))

    def _load(self, code: str, name: str, arch: str | None) -> RawKernel:
        with self._lock:
            self._guard()
            device = self._device()
            major, minor = self.devices[device].compute_capability
            if arch is not None:
                want = int(arch.split("_")[1])
                have = major * 10 + minor
                ok = (want // 10 == major and want % 10 <= minor) if arch.startswith("sm_") \
                    else want <= have  # fmt: skip
                if not ok:
                    raise CUDADriverError(209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
                                          "no kernel image is available for execution on the "
                                          "device")  # fmt: skip
        params = kernel_params(code).get(name)
        if params is None:
            raise CUDADriverError(500, "CUDA_ERROR_NOT_FOUND", "named symbol not found")
        source = CudaKernelSource(kind="", source=code, inputs=[], scalars=[], params=params,
                                  name=name)  # fmt: skip
        handle = self.executor.load(source)
        return RawKernel(self, source, handle)

    def asnumpy(self, array: Any) -> np.ndarray[Any, Any]:
        """A host copy of a device array (waits for the current stream)."""
        out = np.empty(array.shape, dtype=array.dtype)
        if out.nbytes:
            with self._lock:
                stream = self._current_stream()
                self._memcpyAsync(out.ctypes.data, array.data.ptr, out.nbytes, 4, stream.ptr)
                self._flush(stream._state)
        return out

    def asarray(self, host: Any) -> Any:
        """A device copy of a host array."""
        host = np.ascontiguousarray(host)
        out = self.ndarray(host.size, host.dtype)
        if host.nbytes:
            with self._lock:
                stream = self._current_stream()
                self._memcpyAsync(out.data.ptr, host.ctypes.data, host.nbytes, 1, stream.ptr)
                self._flush(stream._state)
        return out

    def empty(self, shape: Any, dtype: Any = float) -> Any:
        """An uninitialised device array."""
        return self.ndarray(shape, dtype)

    def zeros(self, shape: Any, dtype: Any = float) -> Any:
        """A zero-filled device array (filled in the current stream's order)."""
        out = self.ndarray(shape, dtype)
        if out.nbytes:
            self._memsetAsync(out.data.ptr, 0, out.nbytes, self._current_stream().ptr)
        return out

    def check(self) -> None:
        """Raise `ContractViolation` listing every breach recorded so far (then forget them)."""
        if self.violations:
            found, self.violations = self.violations, []
            raise ContractViolation("\n".join(found))

    def registered(self) -> list[tuple[int, int, int]]:
        """(start, size, flags) of every host registration the device holds now."""
        with self._lock:
            return [(r.address, r.size, r.flags) for r in self._regions if r.kind == "registered"]

    def live(self, kind: str) -> int:
        """Bytes of ``kind`` memory in use (not counting cached pool blocks)."""
        with self._lock:
            return sum(r.size for r in self._regions if r.kind == kind and not r.free)

    def pending(self) -> int:
        """Operations queued on streams and not yet run."""
        with self._lock:
            return sum(len(s.queue) for s in self._streams.values())

    def region_of(self, address: int) -> _Region | None:
        """The allocation or registration holding ``address``, if any."""
        with self._lock:
            return self._find(address)

    # -- thread state --------------------------------------------------------------
    def _local(self) -> Any:
        local = self._tls
        if not hasattr(local, "device"):
            local.device = 0
            local.device_stack = []
            local.streams = {}
        return local

    def _device(self) -> int:
        return int(self._local().device)

    def _spec(self) -> DeviceSpec:
        return self.devices[self._device()]

    def _guard(self) -> None:
        if self.init_error is not None:
            raise CUDARuntimeError(self.init_error)
        if self._sticky is not None:
            raise CUDARuntimeError(self._sticky)

    def _check_device(self, device: int) -> None:
        self._guard()
        if not 0 <= device < len(self.devices):
            raise CUDARuntimeError(101)

    def _current_stream(self) -> Stream:
        local = self._local()
        stack = local.streams.get(local.device)
        if stack:
            return stack[-1]  # type: ignore[no-any-return]
        null = self._null.get(local.device)
        if null is None:
            null = Stream(null=True, _double=self)
            self._null[local.device] = null
        return null

    def _push_stream(self, stream: Stream) -> None:
        self._local().streams.setdefault(self._device(), []).append(stream)

    def _pop_stream(self, stream: Stream) -> None:
        stack = self._local().streams.get(self._device(), [])
        if stack and stack[-1] is stream:
            stack.pop()

    def _new_stream(self, null: bool, non_blocking: bool) -> _StreamState:
        with self._lock:
            self._guard()
            ptr = 0 if null else next(self._stream_ids)
            state = _StreamState(ptr, self._device(), blocking=not non_blocking)
            if not null:
                self._streams[ptr] = state
                self.counts["streams_created"] += 1
            else:
                self._streams.setdefault(-1 - self._device(), state)
            return state

    def _stream_state(self, ptr: int) -> _StreamState:
        if ptr == 0:
            return self._current_null()._state
        state = self._streams.get(ptr)
        if state is None:
            raise CUDARuntimeError(400)
        return state

    def _current_null(self) -> Stream:
        null = self._null.get(self._device())
        if null is None:
            null = Stream(null=True, _double=self)
            self._null[self._device()] = null
        return null

    def _check_stream_device(self, stream: Stream) -> None:
        if stream._state.device != self._device():
            raise CUDARuntimeError(400)

    # -- runtime calls --------------------------------------------------------------
    def _is_available(self) -> bool:
        return self.init_error is None and bool(self.devices)

    def _getDeviceCount(self) -> int:
        if self.init_error is not None:
            raise CUDARuntimeError(self.init_error)
        return len(self.devices)

    def _getDevice(self) -> int:
        self._guard()
        return self._device()

    def _setDevice(self, device: int) -> None:
        self._check_device(device)
        self._local().device = device
        self.log.append(("setDevice", device))

    def _deviceGetAttribute(self, attr: int, device: int) -> int:
        self._check_device(device)
        name = _ATTRS.get(attr)
        if name is None:
            raise CUDARuntimeError(1)
        return int(getattr(self.devices[device], name))

    def _getDeviceProperties(self, device: int) -> dict[str, Any]:
        self._check_device(device)
        spec = self.devices[device]
        return {"name": spec.name.encode(), "totalGlobalMem": spec.total_memory,
                "multiProcessorCount": spec.sm_count, "major": spec.compute_capability[0],
                "minor": spec.compute_capability[1],
                "maxThreadsPerMultiProcessor": spec.max_threads_per_sm,
                "maxThreadsPerBlock": spec.max_threads_per_block}  # fmt: skip

    def _used(self, device: int) -> int:
        used = self.devices[device].other_usage
        for r in self._regions:
            if r.device != device:
                continue
            if r.kind == "device":
                used += r.size
            elif r.kind == "managed":
                used += len(r.resident) * PAGE
        return used

    def _memGetInfo(self) -> tuple[int, int]:
        with self._lock:
            self._guard()
            device = self._device()
            total = self.devices[device].total_memory
            return max(total - self._used(device), 0), total

    def _deviceSynchronize(self) -> None:
        with self._lock:
            self._guard()
            self._device_sync("cudaDeviceSynchronize")

    def _device_sync(self, why: str) -> None:
        self.counts["device_syncs"] += 1
        self.log.append(("device_sync", why))
        for state in list(self._streams.values()):
            self._flush(state)

    def _hostRegister(self, ptr: int, size: int, flags: int) -> None:
        with self._lock:
            self._guard()
            spec = self._spec()
            if not spec.host_register:
                raise CUDARuntimeError(801)
            if flags & 8 and not spec.host_register_read_only:
                raise CUDARuntimeError(801)
            if size <= 0 or ptr >= _DEVICE_BASE:
                raise CUDARuntimeError(1)
            lo = ptr - ptr % PAGE
            hi = -(-(ptr + size) // PAGE) * PAGE
            for region in self._regions:
                if region.kind not in ("registered", "pinned") or (region.free and \
                        region.kind == "registered"):  # fmt: skip
                    continue
                r_lo = region.host - region.host % PAGE
                r_hi = -(-(region.host + region.size) // PAGE) * PAGE
                if r_lo < hi and lo < r_hi:
                    raise CUDARuntimeError(712)
            region = _Region("registered", lo, hi - lo, lo, self._device(), flags=flags)
            region.base = ptr
            self._index(region)
            self.counts["host_register"] += 1
            self.log.append(("hostRegister", ptr, size, flags))

    def _hostUnregister(self, ptr: int) -> None:
        with self._lock:
            self._guard()
            for region in self._regions:
                if region.kind == "registered" and region.base == ptr:
                    self._check_unused(region, "host memory unregistered")
                    self._forget(region)
                    self.counts["host_unregister"] += 1
                    self.log.append(("hostUnregister", ptr))
                    return
            raise CUDARuntimeError(713)

    def _pointerGetAttributes(self, ptr: int) -> Any:
        with self._lock:
            self._guard()
            region = self._find(ptr)
            if region is None or (region.free and not region.pooled):
                return SimpleNamespace(device=-2, devicePointer=0, hostPointer=0, type=0)
            kind = {"device": 2, "managed": 3, "pinned": 1, "registered": 1}[region.kind]
            device_ptr = ptr if region.mapped else 0
            host_ptr = 0 if region.kind == "device" else ptr
            return SimpleNamespace(device=region.device, devicePointer=device_ptr,
                                   hostPointer=host_ptr, type=kind)  # fmt: skip

    def _hostAlloc(self, size: int, flags: int) -> int:
        with self._lock:
            self._guard()
            region = self._allocate("pinned", size, pooled=False)
            if region is None:
                raise CUDARuntimeError(2)
            self.counts["unpooled_allocs"] += 1
            return region.address

    def _freeHost(self, ptr: int) -> None:
        with self._lock:
            region = self._find(ptr)
            if region is None or region.kind != "pinned" or region.address != ptr:
                raise CUDARuntimeError(1)
            self._release(region)

    def _pinned_memory(self, size: int, flags: int = 0) -> _Memory:
        with self._lock:
            self._guard()
            region = self._allocate("pinned", size, pooled=False)
            if region is None:
                raise CUDARuntimeError(2)
            self.counts["unpooled_allocs"] += 1
            return _Memory(self, region, region.address, size, -1)

    def _malloc_managed(self, size: int) -> MemoryPointer:
        with self._lock:
            self._guard()
            if not self._spec().managed_memory:
                raise CUDARuntimeError(801)
            region = self._allocate("managed", max(size, 1), pooled=False)
            if region is None:
                raise CUDARuntimeError(2)
            self.counts["unpooled_allocs"] += 1
            return MemoryPointer(_Memory(self, region, region.address, size, self._device()), 0)

    def _memory_pool(self, allocator: Any = None) -> _Pool:
        if allocator is None:
            return _Pool(self, "device")
        if allocator is self.cuda.malloc_managed:
            return _Pool(self, "managed")
        msg = "the double's MemoryPool takes no allocator or cupy.cuda.malloc_managed"
        raise NotImplementedError(msg)

    # -- copies -----------------------------------------------------------------------
    def _memcpy(self, dst: int, src: int, size: int, kind: int) -> None:
        with self._lock:
            null = self._current_null()
            self._memcpyAsync(dst, src, size, kind, 0)
            self._flush(null._state)

    def _memcpyAsync(self, dst: int, src: int, size: int, kind: int,
                     stream: int) -> None:  # fmt: skip
        with self._lock:
            self._guard()
            state = self._stream_state(stream)
            if state.device != self._device():
                raise CUDARuntimeError(400)
            if size == 0:
                return
            d_region, s_region = self._copy_end(dst, size), self._copy_end(src, size)
            d_dev = d_region is not None and d_region.kind in ("device", "managed")
            s_dev = s_region is not None and s_region.kind in ("device", "managed")
            d_host = d_region is None or d_region.kind != "device"
            s_host = s_region is None or s_region.kind != "device"
            allowed = {0: s_host and d_host, 1: s_host and d_dev, 2: s_dev and d_host,
                       3: s_dev and d_dev, 4: True}  # fmt: skip
            if not allowed.get(kind, False):
                raise CUDARuntimeError(21)
            pageable = (d_region is None) or (s_region is None)
            uses = [(r, w) for r, w in ((d_region, True), (s_region, False)) if r is not None]
            d_at = self._host_address(d_region, dst)
            s_at = self._host_address(s_region, src)
            direction = "h2d" if (d_dev and not s_dev) else "d2h" if (s_dev and not d_dev) \
                else "d2d" if d_dev else "h2h"  # fmt: skip
            self.counts[f"{direction}_copies"] += 1
            self.log.append(("memcpyAsync", state.ptr, direction, size))
            if state.ptr == 0:
                self.counts["null_stream_ops"] += 1
            self._enqueue(state, "copy", uses, lambda: ctypes.memmove(d_at, s_at, size))
            if pageable:
                # Pageable host memory cannot be copied asynchronously: the copy waits for the
                # stream and is done before the call returns.
                self.counts["pageable_copies"] += 1
                self._flush(state)

    def _copy_end(self, address: int, size: int) -> _Region | None:
        region = self._find(address)
        if region is None:
            if address >= _DEVICE_BASE:
                raise CUDARuntimeError(1)
            return None
        if not self._covered(region, address, size):
            raise CUDARuntimeError(1)
        return region

    def _memsetAsync(self, ptr: int, value: int, size: int, stream: int) -> None:
        with self._lock:
            self._guard()
            state = self._stream_state(stream)
            if state.device != self._device():
                raise CUDARuntimeError(400)
            region = self._copy_end(ptr, size)
            if region is None:
                raise CUDARuntimeError(1)
            host = self._host_address(region, ptr)
            if state.ptr == 0:
                self.counts["null_stream_ops"] += 1
            self._enqueue(state, "memset", [(region, True)],
                          lambda: ctypes.memset(host, value, size))  # fmt: skip

    def _fill_async(self, ptr: int, pattern: np.ndarray[Any, Any]) -> None:
        with self._lock:
            self._guard()
            stream = self._current_stream()
            region = self._copy_end(ptr, pattern.nbytes)
            if region is None:
                raise CUDARuntimeError(1)
            host = self._host_address(region, ptr)
            self._enqueue(stream._state, "fill", [(region, True)],
                          lambda: ctypes.memmove(host, pattern.ctypes.data, pattern.nbytes))

    def _memPrefetchAsync(self, ptr: int, count: int, device: int,
                          stream: int) -> None:  # fmt: skip
        with self._lock:
            self._guard()
            state = self._stream_state(stream)
            if state.device != self._device():
                raise CUDARuntimeError(400)
            spec = self._spec()
            if not spec.concurrent_managed_access:
                raise CUDARuntimeError(1)
            region = self._find(ptr)
            if region is None or region.kind != "managed" or not region.contains(ptr, count):
                raise CUDARuntimeError(1)
            if device == -1 and not self.prefetch_to_host_supported:
                raise CUDARuntimeError(101)
            if device != -1:
                self._check_device(device)
            first = (ptr - region.address) // PAGE
            last = (ptr + count - 1 - region.address) // PAGE
            pages = set(range(first, last + 1))
            where = "device" if device != -1 else "host"
            self.counts[f"prefetch_to_{where}"] += 1
            self.log.append(("prefetch", state.ptr, where, ptr, count))

            def move() -> None:
                if device == -1:
                    region.resident -= pages
                else:
                    region.resident |= pages

            self._enqueue(state, "prefetch", [(region, False)], move)

    # -- regions ------------------------------------------------------------------------
    def _allocate(self, kind: str, size: int, *, pooled: bool,
                  stream: int | None = None) -> _Region | None:  # fmt: skip
        device = self._device() if kind in ("device", "managed") else -1
        if kind == "device":
            spec = self.devices[device]
            if self._used(device) + size > spec.total_memory:
                return None
        if kind == "pinned" and self.pinned_limit is not None:
            locked = sum(r.size for r in self._regions if r.kind == "pinned")
            if locked + size > self.pinned_limit:
                return None
        # whole pages of their own, as the driver allocates: no neighbour shares a page
        pages = -(-max(size, 1) // PAGE) * PAGE
        raw = np.full(pages + PAGE, POISON, dtype=np.uint8)
        skip = -int(raw.ctypes.data) % PAGE
        backing = raw[skip : skip + pages]
        host = int(backing.ctypes.data)
        address = next(self._next_device) if kind == "device" else host
        region = _Region(kind, address, size, host, device, backing, stream, pooled)
        self._index(region)
        return region

    def _index(self, region: _Region) -> None:
        at = bisect.bisect_left(self._starts, region.address)
        self._starts.insert(at, region.address)
        self._regions.insert(at, region)

    def _forget(self, region: _Region) -> None:
        for at in range(bisect.bisect_left(self._starts, region.address), len(self._regions)):
            if self._regions[at] is region:
                del self._starts[at]
                del self._regions[at]
                return

    def _find(self, address: int) -> _Region | None:
        at = bisect.bisect_right(self._starts, address) - 1
        if at < 0:
            return None
        region = self._regions[at]
        if region.address <= address < region.address + max(region.size, 1):
            return region
        return None

    def _covered(self, region: _Region, address: int, nbytes: int) -> bool:
        """Whether ``[address, address + nbytes)`` lies in ``region`` (or registrations after)."""
        end = address + nbytes
        while True:
            top = region.address + region.size
            if end <= top:
                return True
            if region.kind != "registered":
                return False
            nxt = self._find(top)
            if nxt is None or nxt.kind != "registered" or nxt.flags != region.flags:
                return False
            region = nxt

    @staticmethod
    def _host_address(region: _Region | None, address: int) -> int:
        if region is None:
            return address
        return region.host + (address - region.address)

    def _fill(self, region: _Region, value: int) -> None:
        if region.backing is not None:
            region.backing[:] = value

    def _check_unused(
        self, region: _Region, what: str, *, except_stream: int | None = None
    ) -> None:
        busy = {s: n for s, n in region.pending.items() if n and s != except_stream}
        if busy:
            self.violations.append(
                f"{what} at {region.address:#x} ({region.kind}, {region.size} bytes) while "
                f"{sum(busy.values())} queued operation(s) on stream(s) "
                f"{', '.join(hex(s) for s in busy)} may still use it"
            )

    def _release(self, region: _Region) -> None:
        """A memory object was collected: back to its pool, or freed."""
        with self._lock:
            pool = region.pool
            if pool is not None:
                # CuPy's device pools reuse a block only on its stream (stream-ordered);
                # the pinned pool knows no streams.
                except_stream = region.stream if isinstance(pool, _Pool) else None
                self._check_unused(region, f"{region.kind} memory freed",
                                   except_stream=except_stream)  # fmt: skip
                pool._back(region)
                return
            self._check_unused(region, f"{region.kind} memory freed")
            self.counts["unpooled_frees"] += 1
            if self._sticky is None and self.init_error is None:
                # cudaFree waits for the device; a fault found now shows at the next call
                with contextlib.suppress(CUDARuntimeError):
                    self._device_sync(f"cudaFree{'Host' if region.kind == 'pinned' else ''}")
            self._forget(region)

    # -- the queue ------------------------------------------------------------------------
    def _enqueue(self, state: _StreamState, kind: str, uses: list[tuple[_Region, bool]],
                 run: Callable[[], object]) -> None:  # fmt: skip
        if state.blocking:
            # the legacy default stream and the blocking streams of a device wait for each
            # other: what is queued on the one side runs before this operation can
            for other in list(self._streams.values()):
                if other.blocking and other.device == state.device and other is not state and \
                        (state.ptr == 0 or other.ptr == 0):  # fmt: skip
                    self._flush(other)
        op = _Op(kind, uses, run, state.issued + 1)
        state.issued += 1
        for region, _write in uses:
            region.pending[state.ptr] += 1
        state.queue.append(op)
        # how many streams had work queued at once: work that could overlap on a GPU
        busy = sum(1 for other in self._streams.values() if other.queue)
        self.counts["most_busy_streams"] = max(self.counts["most_busy_streams"], busy)

    def _flush(self, state: _StreamState, upto: int | None = None) -> None:
        """Run the operations queued on ``state`` (up to number ``upto``)."""
        while state.queue and (upto is None or state.queue[0].seq <= upto):
            op = state.queue.pop(0)
            for region, _write in op.uses:
                region.pending[state.ptr] -= 1
            state.done = op.seq
            if self._sticky is not None:
                continue
            try:
                op.run()
            except _IllegalAddress as exc:
                self._sticky = 700
                self.log.append(("illegal address", str(exc)))
                self._drop_all()
        if self._sticky is not None:
            raise CUDARuntimeError(self._sticky)

    def _drop_all(self) -> None:
        for state in self._streams.values():
            for op in state.queue:
                for region, _w in op.uses:
                    region.pending[state.ptr] -= 1
            state.queue.clear()

    # -- kernels ---------------------------------------------------------------------------
    def _kernel_argument(self, arg: Any) -> tuple[str, Any]:
        """(kind, value) of one kernel argument, converted as ``cupy.cuda.function._pointer``."""
        if arg is None:
            return "pointer", 0
        if isinstance(arg, ndarray):
            return "pointer", int(arg.data.ptr)
        if isinstance(arg, MemoryPointer):
            return "pointer", int(arg.ptr)
        if isinstance(arg, np.ndarray):
            if arg.size == 1:
                return "scalar", arg.reshape(()).astype(arg.dtype)[()]
            msg = (f"You are trying to pass a numpy.ndarray of shape {arg.shape} as a kernel "
                   "parameter. Only numpy.ndarrays of size one can be passed by value. If you "
                   "meant to pass a pointer to __global__ memory, you need to pass a "
                   "cupy.ndarray instead.")  # fmt: skip
            raise TypeError(msg)
        dtype = _cupy_scalar_dtype(arg)
        return "scalar", np.array(arg, dtype=dtype)[()]

    def _plan_launch(self, kernel: RawKernel, values: list[tuple[str, Any]],
                     threads: int) -> list[tuple[_Region | None, int, int, bool]]:  # fmt: skip
        """(region, address, bytes touched, written) of every pointer argument, checked later."""
        params = kernel._source.params
        named = {name: v for (_, name), (_, v) in zip(params, values, strict=True)}
        n = int(named.get("n", 0))
        plan: list[tuple[_Region | None, int, int, bool]] = []
        for k, ((ctype, _name), (_, value)) in enumerate(zip(params, values, strict=True)):
            if not ctype.endswith("*"):
                continue
            address = int(value)
            nbytes = _extent(params, values, k, n, threads, kernel._widths,
                             kernel._bitmaps)  # fmt: skip
            written = not ctype.startswith("const")
            region = self._find(address) if address and nbytes else None
            if nbytes == _WHOLE_ALLOCATION:
                # indexed by group id, not by row: any byte of the allocation may be touched
                nbytes = region.address + region.size - address if region is not None else 0
            plan.append((region, address, nbytes, written))
        return plan

    def _execute(self, kernel: RawKernel, values: list[tuple[str, Any]],
                 plan: list[tuple[_Region | None, int, int, bool]], grid: int,
                 block: int) -> None:  # fmt: skip
        spec = self.devices[self._device()]
        args: list[Any] = []
        keep: list[Any] = []
        pointers = iter(plan)
        for (ctype, name), (_kind, value) in zip(kernel._source.params, values, strict=True):
            if not ctype.endswith("*"):
                args.append(value)
                continue
            _region, address, nbytes, written = next(pointers)
            region = self._find(address) if address and nbytes else None
            if nbytes == 0:
                host = address
            elif region is None or (region.free and not region.pooled):
                if address >= _DEVICE_BASE or not spec.pageable_memory_access:
                    msg = (f"kernel `{kernel._source.name}` argument `{name}` points at "
                           f"{address:#x}, which the device cannot reach")  # fmt: skip
                    raise _IllegalAddress(msg)
                self.counts["pageable_kernel_access"] += 1
                host = address
            else:
                if not region.mapped or not self._covered(region, address, nbytes):
                    msg = (f"kernel `{kernel._source.name}` argument `{name}` reads or writes "
                           f"{nbytes} bytes at {address:#x}, beyond the {region.kind} memory "
                           f"there ({region.size} bytes at {region.address:#x})")  # fmt: skip
                    raise _IllegalAddress(msg)
                if written and region.read_only:
                    msg = (f"kernel `{kernel._source.name}` writes through `{name}` into host "
                           "memory registered read-only")  # fmt: skip
                    raise _IllegalAddress(msg)
                if region.kind == "managed":
                    first = (address - region.address) // PAGE
                    last = (address + nbytes - 1 - region.address) // PAGE
                    missing = set(range(first, last + 1)) - region.resident
                    self.counts["gpu_page_faults"] += len(missing)
                    region.resident |= missing
                host = self._host_address(region, address)
            view = np.ctypeslib.as_array((ctypes.c_uint8 * max(nbytes, 1)).from_address(host)) \
                if host else np.zeros(0, dtype=np.uint8)  # fmt: skip
            keep.append(view)
            args.append(view)
        self.executor.launch(kernel._handle, kernel._source, grid, block, args)


class _IllegalAddress(Exception):
    """A kernel touched memory the device cannot reach (the GPU's illegal address fault)."""


#: `_extent` of a per-group array or grouped table: the rest of its allocation.
_WHOLE_ALLOCATION = -1


def _extent(params: list[tuple[str, str]], values: list[tuple[str, Any]], k: int, n: int,
            threads: int, widths: dict[str, int], bitmaps: frozenset[str]) -> int:  # fmt: skip
    """Bytes kernel parameter ``k`` (a pointer) is read or written over, by the kernel convention.

    Values are ``n`` elements; a ``const unsigned char*`` followed by a ``long
    long`` is a bitmap read from that bit offset; bit-packed outputs (``bitmaps``,
    named by the kernel) are ``n`` bits in 32-bit words; reduction partials
    ``pf``/``pi``/``pu`` hold one row of 8-byte columns per launched thread;
    ``err`` one counter per failure kind; per-group arrays ``g{j}``/``gv{j}`` and
    grouped tables ``tf``/``ti``/``tu`` are indexed by group id, a weighted
    window's weights ``wts`` by the place in the window, and lookup tables
    ``lut{k}``/``lutv{k}`` by a dictionary code, below their length ``lutn{k}``
    (`_WHOLE_ALLOCATION`).
    """
    ctype, name = params[k]
    base = ctype.removeprefix("const ").rstrip("*").strip()
    if n <= 0:
        return 0
    if re.fullmatch(r"gv?\d+|t[fiu]|wts|lutv?\d+", name):
        return _WHOLE_ALLOCATION
    if name == "err":
        return 8 * N_ERR_KINDS
    if name in ("pf", "pi", "pu"):
        return threads * 8 * widths.get(name, 1)
    const = ctype.startswith("const")
    if name in bitmaps:
        return (n + 31) // 32 * 4
    if base == "unsigned char" and const:
        following = params[k + 1] if k + 1 < len(params) else None
        if following is not None and following[0] == "long long":
            offset = int(values[k + 1][1])
            return (offset + n + 7) // 8
    return n * _C_TYPES[base].itemsize

