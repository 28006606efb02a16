"""Memory: GPU placements of Arrow buffers, one implementation for `to_device` and the CUDA backend.

Stage: memory. Everything here talks to CUDA through the CuPy module returned
by `cupy_module` (CuPy itself, or a stand-in installed with `use_cupy`), and
CuPy is imported inside functions only: importing colbridge never imports it.

Placements
----------
``"device"`` (the default, `DEFAULT_PLACEMENT`)
    explicit copies into device memory (CuPy's memory pool), through pinned
    staging buffers so that copies run asynchronously on a stream. Works on
    every CUDA device and keeps kernels reading device memory at full speed.
``"managed"``
    CUDA managed (unified) memory: one allocation both the CPU and the GPU
    address. Buffers that already live in managed memory are used in place;
    prefetched to the device before a kernel and back to the host after.
``"host-mapped"``
    the Arrow host buffer itself, page-locked and mapped with
    ``cudaHostRegister`` (read-only where the device supports it); the GPU
    reads it over the bus and nothing is copied. Registrations are shared and
    counted per page (see `HostRegistry`).
``"pageable"``
    the Arrow host buffer as it is, with no registration, where the device
    reports ``cudaDevAttrPageableMemoryAccess`` (HMM, or a coherent CPU-GPU
    link); refused elsewhere.

Device and managed memory a run asks for never exceeds the device's free
memory (plus what CuPy's pool holds cached) times ``memory_fraction``, minus
what concurrent runs have reserved (`reserve`).
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import ctypes
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import DeviceError, UnsupportedTypeError

__all__ = [
    "DEFAULT_PLACEMENT",
    "GPU_PLACEMENTS",
    "PLACEMENTS",
    "DeviceColumn",
    "DeviceInfo",
    "HostLease",
    "Reservation",
    "Stager",
    "check_fits",
    "check_placement",
    "cuda_error",
    "cuda_failures",
    "cupy_module",
    "describe_cuda_failure",
    "device_info",
    "host_registry",
    "memory_type",
    "reserve",
    "stream_pool",
    "to_device",
    "use_cupy",
]

PLACEMENTS: tuple[str, ...] = ("device", "managed", "host-mapped", "pageable")
#: Placement used when none is named: explicit copies work on every device.
DEFAULT_PLACEMENT = "device"
GPU_PLACEMENTS = PLACEMENTS

PAGE = 4096
# cudaHostRegister flags
_REGISTER_PORTABLE = 1
_REGISTER_MAPPED = 2
_REGISTER_READ_ONLY = 8
# cudaError_t values named in messages
_ERR_INITIALIZATION = 3
_ERR_INSUFFICIENT_DRIVER = 35
_ERR_DEVICES_UNAVAILABLE = 46
_ERR_NO_DEVICE = 100
_ERR_ILLEGAL_ADDRESS = 700
_ERR_LAUNCH_FAILURE = 719
_ERR_ALREADY_REGISTERED = 712
_ERR_SYSTEM_NOT_READY = 802
_ERR_UNKNOWN = 999
# errors after which the CUDA context of the process cannot be used again
_STICKY = frozenset({_ERR_ILLEGAL_ADDRESS, 701, 702, 703, 704, 705, 714, 715, 716, 717, 718,
                     _ERR_LAUNCH_FAILURE, 720})  # fmt: skip
# cudaMemoryType
MEMORY_UNREGISTERED, MEMORY_HOST, MEMORY_DEVICE, MEMORY_MANAGED = 0, 1, 2, 3


# -- which CuPy ---------------------------------------------------------------

_CUPY: contextvars.ContextVar[Any | None] = contextvars.ContextVar("colbridge_cupy", default=None)


def cupy_module() -> Any:
    """The CuPy module GPU work goes through: the one installed by `use_cupy`, else CuPy.

    Raises `DeviceError` naming the cause when CuPy cannot be imported.
    """
    installed = _CUPY.get()
    if installed is not None:
        return installed
    try:
        import cupy
    except ImportError as exc:
        msg = (
            "GPU work needs CuPy (install the `gpu` extra: `pip install colbridge[gpu]`): "
            f"{exc}"
        )
        raise DeviceError(msg) from exc
    return cupy


@contextlib.contextmanager
def use_cupy(module: Any) -> Iterator[Any]:
    """Send GPU work in this block (and in `compute_async` calls made in it) to ``module``.

    ``module`` offers the part of CuPy's API colbridge uses; the test double
    `colbridge.testing.cupy_double.CupyDouble` is one.
    """
    token = _CUPY.set(module)
    try:
        yield module
    finally:
        _CUPY.reset(token)


# -- errors -------------------------------------------------------------------


def describe_cuda_failure(cp: Any, exc: BaseException) -> str:
    """What a CUDA runtime error means for the user, with the driver's own words kept."""
    status = getattr(exc, "status", None)
    text = f"{type(exc).__name__}: {exc}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    shown = f"CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else \
        "CUDA_VISIBLE_DEVICES is not set"  # fmt: skip
    mig = ("if the GPU is in MIG mode, CUDA sees only MIG instances: create one "
           "(`nvidia-smi mig`) and name it in CUDA_VISIBLE_DEVICES=MIG-<uuid>")  # fmt: skip
    if status == _ERR_INSUFFICIENT_DRIVER:
        driver = _version(cp, "driverGetVersion")
        runtime = _version(cp, "runtimeGetVersion")
        if not driver:
            return f"no NVIDIA driver is loaded on this machine ({text})"
        return (f"the NVIDIA driver supports CUDA {_cuda_version(driver)} but CuPy uses the "
                f"CUDA {_cuda_version(runtime)} runtime: update the driver or install the CuPy "
                f"wheel built for CUDA {_cuda_version(driver)} ({text})")  # fmt: skip
    if status == _ERR_NO_DEVICE:
        return f"no CUDA device is visible to this process ({shown}; {mig}) ({text})"
    if status == _ERR_DEVICES_UNAVAILABLE:
        return (f"the GPU is busy or unavailable: another process holds it in exclusive-process "
                f"compute mode, or {mig} ({text})")  # fmt: skip
    if status == _ERR_SYSTEM_NOT_READY:
        return (f"the GPU system is not ready; on NVSwitch systems start nvidia-fabricmanager "
                f"({text})")  # fmt: skip
    if status in (_ERR_INITIALIZATION, _ERR_UNKNOWN):
        return (f"the CUDA driver failed to initialise; check `nvidia-smi` (after a driver "
                f"update the machine may need a reboot) ({text})")  # fmt: skip
    if status in _STICKY:
        return (f"{text}; the CUDA context of this process cannot be used any more, restart "
                "the process")  # fmt: skip
    return text


def _version(cp: Any, name: str) -> int:
    try:
        return int(getattr(cp.cuda.runtime, name)())
    except Exception:  # the version query itself may fail without a driver
        return 0


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


def cuda_failures(cp: Any) -> tuple[type[BaseException], ...]:
    """The exception types CuPy raises for CUDA runtime, driver, memory and compile failures.

    Only these become `DeviceError`: any other exception is a bug and raises as it is.
    """
    found: list[type[BaseException]] = []
    for owner, name in ((getattr(cp.cuda, "runtime", None), "CUDARuntimeError"),
                        (getattr(cp.cuda, "memory", None), "OutOfMemoryError"),
                        (getattr(cp.cuda, "driver", None), "CUDADriverError"),
                        (getattr(cp.cuda, "compiler", None), "CompileException")):  # fmt: skip
        kind = getattr(owner, name, None)
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.append(kind)
    return tuple(found)


def cuda_error(cp: Any, exc: BaseException, what: str) -> DeviceError:
    """A `DeviceError` saying what failed and why, for an exception raised by CuPy or CUDA."""
    if isinstance(exc, DeviceError):
        return exc
    out_of_memory = getattr(getattr(cp.cuda, "memory", None), "OutOfMemoryError", ())
    if (out_of_memory and isinstance(exc, out_of_memory)) or getattr(exc, "status", None) == 2:
        return DeviceError(f"{what}: the GPU is out of memory ({type(exc).__name__}: {exc})")
    return DeviceError(f"{what}: {describe_cuda_failure(cp, exc)}")


# -- devices --------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceInfo:
    """What colbridge needs to know about one CUDA device, asked once per process."""

    index: int
    name: str
    compute_capability: str  # "90" for 9.0, as CuPy spells it
    sm_count: int
    max_threads_per_sm: int
    max_threads_per_block: int
    total_memory: int
    managed_memory: bool
    concurrent_managed_access: bool
    pageable_memory_access: bool
    host_register: bool
    host_register_read_only: bool
    host_pointer_for_registered: bool

    @property
    def resident_threads(self) -> int:
        """How many threads the device runs at once (every SM full)."""
        return self.sm_count * self.max_threads_per_sm


_INFO: weakref.WeakKeyDictionary[Any, dict[int, DeviceInfo]] = weakref.WeakKeyDictionary()
_INFO_LOCK = threading.Lock()


def device_info(cp: Any, index: int) -> DeviceInfo:
    """`DeviceInfo` of device ``index`` (cached per CuPy module)."""
    with _INFO_LOCK:
        known = _INFO.setdefault(cp, {})
        found = known.get(index)
    if found is not None:
        return found
    rt = cp.cuda.runtime
    try:
        count = int(rt.getDeviceCount())
        if not 0 <= index < count:
            msg = f"no CUDA device {index}: this process sees {count} device(s)"
            raise DeviceError(msg)

        def attr(name: str, number: int) -> int:
            return int(rt.deviceGetAttribute(getattr(rt, name, number), index))

        props = rt.getDeviceProperties(index)
        name = props.get("name", b"?")
        info = DeviceInfo(
            index=index,
            name=name.decode() if isinstance(name, bytes) else str(name),
            compute_capability=str(cp.cuda.Device(index).compute_capability),
            sm_count=attr("cudaDevAttrMultiProcessorCount", 16),
            max_threads_per_sm=attr("cudaDevAttrMaxThreadsPerMultiProcessor", 39),
            max_threads_per_block=attr("cudaDevAttrMaxThreadsPerBlock", 1),
            total_memory=int(props.get("totalGlobalMem", 0)),
            managed_memory=bool(attr("cudaDevAttrManagedMemory", 83)),
            concurrent_managed_access=bool(attr("cudaDevAttrConcurrentManagedAccess", 89)),
            pageable_memory_access=bool(attr("cudaDevAttrPageableMemoryAccess", 88)),
            host_register=bool(attr("cudaDevAttrHostRegisterSupported", 99)),
            host_register_read_only=bool(attr("cudaDevAttrHostRegisterReadOnlySupported", 113)),
            host_pointer_for_registered=bool(
                attr("cudaDevAttrCanUseHostPointerForRegisteredMem", 91)
            ),
        )
    except cuda_failures(cp) as exc:
        raise cuda_error(cp, exc, f"could not query CUDA device {index}") from exc
    with _INFO_LOCK:
        _INFO.setdefault(cp, {})[index] = info
    return info


def check_placement(info: DeviceInfo, placement: str) -> None:
    """Raise `DeviceError` unless device ``info`` can serve ``placement``."""
    if placement not in PLACEMENTS:
        msg = f"unknown placement {placement!r}; use one of {', '.join(PLACEMENTS)}"
        raise DeviceError(msg)
    where = f"cuda:{info.index} ({info.name})"
    if placement == "pageable" and not info.pageable_memory_access:
        msg = (f"placement='pageable' needs a device that reads pageable host memory "
               f"(cudaDevAttrPageableMemoryAccess, HMM); {where} does not: use "
               "placement='host-mapped' or 'device'")  # fmt: skip
        raise DeviceError(msg)
    if placement == "managed" and not info.managed_memory:
        msg = f"{where} does not support managed memory; use placement='device'"
        raise DeviceError(msg)
    if placement == "host-mapped" and not info.host_register:
        msg = (f"{where} cannot map host memory (cudaDevAttrHostRegisterSupported is 0); use "
               "placement='device'")  # fmt: skip
        raise DeviceError(msg)


def memory_type(cp: Any, ptr: int) -> int:
    """The cudaMemoryType of address ``ptr`` (0 for ordinary pageable host memory)."""
    if ptr == 0:
        return MEMORY_UNREGISTERED
    try:
        return int(cp.cuda.runtime.pointerGetAttributes(ptr).type)
    except cuda_failures(cp) as exc:
        raise cuda_error(cp, exc, "could not ask CUDA where a buffer lives") from exc


# -- streams ------------------------------------------------------------------


class StreamPool:
    """Non-blocking CUDA streams handed to runs and taken back, per device.

    Every concurrent run gets streams of its own. They are reused rather than
    destroyed because CuPy's memory pool keeps freed blocks per stream: blocks
    freed on a stream that never comes back would stay cached forever.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: weakref.WeakKeyDictionary[Any, dict[int, list[Any]]] = \
            weakref.WeakKeyDictionary()  # fmt: skip

    def acquire(self, cp: Any, device: int) -> Any:
        """A stream of ``device`` (the current device) no other run is using."""
        with self._lock:
            idle = self._idle.setdefault(cp, {}).setdefault(device, [])
            if idle:
                return idle.pop()
        try:
            return cp.cuda.Stream(non_blocking=True)
        except cuda_failures(cp) as exc:
            raise cuda_error(cp, exc, "could not create a CUDA stream") from exc

    def release(self, cp: Any, device: int, stream: Any) -> None:
        """Give ``stream`` back once nothing is queued on it any more."""
        with self._lock:
            self._idle.setdefault(cp, {}).setdefault(device, []).append(stream)


stream_pool = StreamPool()


# -- memory budget ------------------------------------------------------------


@dataclass(eq=False)
class Reservation:
    """Device memory one run may allocate, held against concurrent runs until `release`."""

    ledger: _Ledger
    nbytes: int
    held: int = 0
    released: bool = False

    def hold(self, nbytes: int) -> None:
        """Count ``nbytes`` the run now holds on the device (allocated or made resident)."""
        with self.ledger.lock:
            self.held += nbytes

    def release(self) -> None:
        """The run is over: its memory is no longer reserved."""
        with self.ledger.lock:
            if not self.released:
                self.released = True
                self.ledger.active.discard(self)


@dataclass(eq=False)
class _Ledger:
    lock: threading.Lock = field(default_factory=threading.Lock)
    active: set[Reservation] = field(default_factory=set)


_LEDGERS: weakref.WeakKeyDictionary[Any, dict[int, _Ledger]] = weakref.WeakKeyDictionary()
_LEDGERS_LOCK = threading.Lock()


def _ledger(cp: Any, device: int) -> _Ledger:
    with _LEDGERS_LOCK:
        return _LEDGERS.setdefault(cp, {}).setdefault(device, _Ledger())


def _pool_free_bytes(cp: Any) -> int:
    """Bytes CuPy's default pool holds cached (free for this process, not in memGetInfo)."""
    try:
        return int(cp.get_default_memory_pool().free_bytes())
    except Exception:  # a user-installed allocator may have no pool
        return 0


def reserve(
    cp: Any, device: int, fraction: float, wanted: int, minimum: int
) -> Reservation:
    """Reserve up to ``wanted`` bytes of device memory (at least ``minimum``) for one run.

    What may be reserved is ``fraction`` of the memory free to this process
    (``cudaMemGetInfo``'s free bytes plus CuPy's cached pool blocks plus what
    running colbridge runs hold) minus what running runs have reserved. The
    device must be current. Raises `DeviceError` when not even ``minimum`` fits.
    """
    ledger = _ledger(cp, device)
    try:
        free, total = cp.cuda.runtime.memGetInfo()
    except cuda_failures(cp) as exc:
        raise cuda_error(cp, exc, "could not query free device memory") from exc
    cached = _pool_free_bytes(cp)
    with ledger.lock:
        held = sum(r.held for r in ledger.active)
        reserved = sum(r.nbytes for r in ledger.active)
        allowed = int((int(free) + cached + held) * fraction) - reserved
        if allowed < minimum:
            msg = (
                f"not enough free memory on cuda:{device}: this run needs at least {minimum} "
                f"bytes, {max(allowed, 0)} may be used ({free} free + {cached} cached in "
                f"CuPy's pool, memory_fraction={fraction}, {reserved} reserved by "
                f"{len(ledger.active)} running computation(s), {total} total); free GPU memory, "
                "lower the work in flight or use placement='host-mapped'"
            )
            raise DeviceError(msg)
        granted = Reservation(ledger, min(wanted, allowed))
        ledger.active.add(granted)
    return granted


def check_fits(nbytes: int, *, device: int = 0, memory_fraction: float = 0.5) -> None:
    """Raise `DeviceError` unless ``nbytes`` may be allocated on ``device`` now (see `reserve`)."""
    cp = cupy_module()
    try:
        with cp.cuda.Device(device):
            reserve(cp, device, memory_fraction, nbytes, nbytes).release()
    except DeviceError as exc:
        msg = (f"placing {nbytes} bytes on cuda:{device} would exceed the allowed share of free "
               f"memory: {exc}")  # fmt: skip
        raise DeviceError(msg) from exc
    except cuda_failures(cp) as exc:
        raise cuda_error(cp, exc, f"could not use cuda:{device}") from exc


# -- managed memory -----------------------------------------------------------

_MANAGED_POOLS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_MANAGED_LOCK = threading.Lock()


def managed_pool(cp: Any) -> Any:
    """A CuPy memory pool over ``cudaMallocManaged``: freeing returns blocks, no device sync."""
    with _MANAGED_LOCK:
        pool = _MANAGED_POOLS.get(cp)
        if pool is None:
            pool = cp.cuda.MemoryPool(cp.cuda.malloc_managed)
            _MANAGED_POOLS[cp] = pool
        return pool


# -- host registration ----------------------------------------------------------


@dataclass(eq=False)
class _Span:
    start: int  # page aligned
    stop: int  # page aligned
    users: int = 0
    owned: bool = True  # registered by colbridge (else found registered by someone else)


class HostLease:
    """Pages of host memory mapped for the GPU while this lease lives.

    The lease is the owner of every device view of the memory (CuPy keeps an
    ``UnownedMemory``'s owner alive for as long as any array, slice or DLPack
    export of it exists), so the pages stay registered until the last user is
    gone. `release` (or garbage collection) gives the pages back.
    """

    def __init__(
        self, registry: HostRegistry, cp: Any, spans: list[_Span], keep: Any, host_pointer: bool
    ) -> None:
        self.cp = cp
        self.spans = spans
        self.host_pointer = host_pointer
        self.keep = keep  # the host buffer itself: it must outlive the mapping
        self._finalizer = weakref.finalize(self, registry._drop, cp, spans)

    def device_address(self, ptr: int) -> int:
        """The address the GPU reads host address ``ptr`` of this lease at."""
        if self.host_pointer or ptr == 0:
            return ptr  # unified addressing: the host address works on the device
        return int(self.cp.cuda.runtime.pointerGetAttributes(ptr).devicePointer)

    def release(self) -> None:
        """Unregister the pages no other lease uses (idempotent)."""
        self._finalizer()


class HostRegistry:
    """Host memory registered with CUDA, shared per page and counted.

    ``cudaHostRegister`` works on whole pages and refuses a range overlapping
    one already registered (``cudaErrorHostMemoryAlreadyRegistered``), while
    neighbouring Arrow buffers often share a page. So registered ranges are
    kept as non-overlapping page spans with a user count: a new lease registers
    only the gaps between spans it overlaps, every span it touches counts one
    more user, and a span is unregistered when its last user is gone. Ranges
    registered by someone else (pinned allocations, a user's own registration)
    are used as they are and never unregistered.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: weakref.WeakKeyDictionary[Any, list[_Span]] = weakref.WeakKeyDictionary()

    def lease(self, cp: Any, info: DeviceInfo, ptr: int, nbytes: int, keep: Any) -> HostLease:
        """Map host bytes ``[ptr, ptr + nbytes)`` for the GPU (read-only where supported)."""
        lo = ptr - ptr % PAGE
        hi = -(-(ptr + max(nbytes, 1)) // PAGE) * PAGE
        flags = _REGISTER_PORTABLE | _REGISTER_MAPPED
        if info.host_register_read_only:
            # read-only mappings also accept read-only pages (memory-mapped files)
            flags |= _REGISTER_READ_ONLY
        rt = cp.cuda.runtime
        need = (ptr, ptr + max(nbytes, 1))
        with self._lock:
            spans = self._spans.setdefault(cp, [])
            used: list[_Span] = []
            cursor = lo
            try:
                for span in self._overlapping(spans, lo, hi):
                    if span.start > cursor:
                        used.append(self._register(cp, spans, cursor, span.start, flags, need))
                    used.append(span)
                    cursor = max(cursor, span.stop)
                if cursor < hi:
                    used.append(self._register(cp, spans, cursor, hi, flags, need))
            except Exception:
                self._unregister_unused(rt, spans, used)
                raise
            for span in used:
                span.users += 1
        if len(used) > 1 and not info.host_pointer_for_registered:
            HostLease(self, cp, used, keep, False).release()
            msg = (f"host buffer at {ptr:#x} spans {len(used)} separate registrations and "
                   f"cuda:{info.index} cannot use host pointers for registered memory; use "
                   "placement='device'")  # fmt: skip
            raise DeviceError(msg)
        return HostLease(self, cp, used, keep, info.host_pointer_for_registered)

    @staticmethod
    def _overlapping(spans: list[_Span], lo: int, hi: int) -> list[_Span]:
        starts = [s.start for s in spans]
        first = max(bisect.bisect_right(starts, lo) - 1, 0)
        return [s for s in spans[first:] if s.start < hi and s.stop > lo]

    def _register(
        self, cp: Any, spans: list[_Span], lo: int, hi: int, flags: int, need: tuple[int, int]
    ) -> _Span:
        rt = cp.cuda.runtime
        span = _Span(lo, hi)
        try:
            rt.hostRegister(lo, hi - lo, flags)
        except cuda_failures(cp) as exc:
            if getattr(exc, "status", None) != _ERR_ALREADY_REGISTERED:
                msg = (f"could not map host memory at {lo:#x} ({hi - lo} bytes) for the GPU; "
                       f"use placement='device'")  # fmt: skip
                raise cuda_error(cp, exc, msg) from exc
            # Registered outside colbridge (pinned memory, a user's registration): use it
            # as it is when it covers the bytes needed here, and never unregister it.
            first, last = max(lo, need[0]), min(hi, need[1]) - 1
            if memory_type(cp, first) != MEMORY_HOST or memory_type(cp, last) != MEMORY_HOST:
                msg = (f"host memory at {lo:#x} ({hi - lo} bytes) is partly registered with "
                       "CUDA by someone else; use placement='device'")  # fmt: skip
                raise DeviceError(msg) from exc
            span.owned = False
        bisect.insort(spans, span, key=lambda s: s.start)
        return span

    @staticmethod
    def _unregister_unused(rt: Any, spans: list[_Span], used: list[_Span]) -> None:
        for span in used:
            if span.users == 0 and span in spans:
                spans.remove(span)
                if span.owned:
                    with contextlib.suppress(Exception):
                        rt.hostUnregister(span.start)

    def _drop(self, cp: Any, used: list[_Span]) -> None:
        with self._lock:
            spans = self._spans.get(cp, [])
            for span in used:
                span.users -= 1
            self._unregister_unused(cp.cuda.runtime, spans, used)

    def registered(self, cp: Any) -> list[tuple[int, int, int]]:
        """(start, stop, users) of every span colbridge holds registered, for tests and reports."""
        with self._lock:
            return [(s.start, s.stop, s.users) for s in self._spans.get(cp, [])]


host_registry = HostRegistry()


# -- to_device ------------------------------------------------------------------


@dataclass(eq=False)
class DeviceColumn:
    """One column on a GPU: values as a CuPy array, plus its validity bitmap where it has nulls.

    ``validity`` is the bit-packed Arrow bitmap (uint8, LSB first) starting at
    bit ``validity_offset``; None when the column holds no nulls. The arrays
    keep whatever they need alive (a host-mapped registration, the Arrow
    buffer), also through slices and DLPack exports.
    """

    name: str
    placement: str
    device: int
    values: Any
    validity: Any | None = None
    validity_offset: int = 0

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The values' CUDA array interface (version 3), from CuPy."""
        return self.values.__cuda_array_interface__  # type: ignore[no-any-return]

    def __dlpack__(self, **kwargs: Any) -> Any:
        """A DLPack capsule of the values, exported by CuPy."""
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLPack device type, device id) as CuPy reports it for the values."""
        return tuple(self.values.__dlpack_device__())  # type: ignore[return-value]

    def __len__(self) -> int:
        return int(self.values.shape[0])


def _view(cp: Any, ptr: int, host: np.ndarray[Any, Any], owner: Any, device: int) -> Any:
    mem = cp.cuda.UnownedMemory(ptr, host.nbytes, owner, device)
    return cp.ndarray(host.shape, dtype=host.dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


def _place_one(
    cp: Any,
    info: DeviceInfo,
    host: np.ndarray[Any, Any],
    placement: str,
    stream: Any,
    stager: Stager,
) -> Any:
    """``host`` (read-only) as a CuPy array under ``placement``.

    Copies (through ``stager``) and prefetches are queued on ``stream``.
    """
    rt = cp.cuda.runtime
    if host.nbytes == 0:
        return cp.ndarray(host.shape, dtype=host.dtype)
    ptr = int(host.ctypes.data)
    kind = memory_type(cp, ptr)
    if placement == "pageable" or kind in (MEMORY_MANAGED, MEMORY_DEVICE):
        # already readable by the device as it is: view it, keep the host buffer alive
        return _view(cp, ptr, host, host, info.index)
    if placement == "host-mapped":
        lease = host_registry.lease(cp, info, ptr, host.nbytes, host)
        return _view(cp, lease.device_address(ptr), host, lease, info.index)
    if placement == "managed":
        mem = managed_pool(cp).malloc(host.nbytes)
        np.copyto(host_bytes(mem.ptr, host.nbytes), host.view(np.uint8).reshape(-1))
        if info.concurrent_managed_access:
            rt.memPrefetchAsync(mem.ptr, host.nbytes, info.index, stream.ptr)
        return cp.ndarray(host.shape, dtype=host.dtype, memptr=mem)
    mem = cp.cuda.alloc(host.nbytes)
    stager.upload(host, int(mem.ptr), stream)
    return cp.ndarray(host.shape, dtype=host.dtype, memptr=mem)


#: Bytes of one pinned bounce buffer, and how many a `Stager` keeps in turn.
STAGE_PIECE = 16 << 20
STAGE_RING = 4
_SMALLEST_PIECE = 64 << 10


class Stager:
    """Host-to-device copies through a few pinned bounce buffers taken in turn.

    A copy from pageable memory waits for its stream before it starts; from
    pinned memory it is queued like a kernel. So host bytes are copied piece by
    piece into one of `STAGE_RING` pinned buffers of `STAGE_PIECE` bytes and
    queued from there; the host fills the next buffer while the copy engine
    moves the last, and waits (on that buffer's event) only when it comes round
    to a buffer still being copied. Pinned memory held stays bounded whatever
    the data size. Where no pinned memory can be had, copies go straight from
    pageable memory (correct, but waiting for the stream).

    Its buffers must outlive the copies queued from them: synchronise the
    streams before dropping the stager.
    """

    def __init__(self, cp: Any) -> None:
        self.cp = cp
        self.piece = STAGE_PIECE
        self.ring: list[list[Any]] = []  # [pinned memory, size, event of the last copy or None]
        self.turn = 0
        self.pageable = False
        self.copies = 0

    def _buffer(self) -> list[Any] | None:
        if len(self.ring) < STAGE_RING and not self.pageable:
            while True:
                try:
                    self.ring.append([self.cp.cuda.alloc_pinned_memory(self.piece), self.piece,
                                      None])  # fmt: skip
                    break
                except cuda_failures(self.cp):
                    if self.piece > _SMALLEST_PIECE:
                        self.piece //= 2
                        continue
                    self.pageable = not self.ring  # no page-locked memory at all
                    break
        if not self.ring:
            return None
        slot = self.ring[self.turn % len(self.ring)]
        self.turn += 1
        if slot[2] is not None:
            slot[2].synchronize()  # the copy from this buffer is done: it may be refilled
            slot[2] = None
        return slot

    def upload(self, host: np.ndarray[Any, Any], dst: int, stream: Any) -> None:
        """Queue a copy of the bytes of ``host`` to device address ``dst`` on ``stream``."""
        data = host.view(np.uint8).reshape(-1)
        rt = self.cp.cuda.runtime
        done = 0
        while done < data.nbytes:
            slot = self._buffer()
            if slot is None:
                rest = np.ascontiguousarray(data[done:])
                rt.memcpyAsync(dst + done, int(rest.ctypes.data), rest.nbytes,
                               rt.memcpyHostToDevice, stream.ptr)  # fmt: skip
                self.copies += 1
                return
            mem, size, _ = slot
            n = min(size, data.nbytes - done)
            np.copyto(host_bytes(int(mem.ptr), n), data[done : done + n])
            rt.memcpyAsync(dst + done, int(mem.ptr), n, rt.memcpyHostToDevice, stream.ptr)
            slot[2] = stream.record()
            self.copies += 1
            done += n


def host_bytes(ptr: int, nbytes: int) -> np.ndarray[Any, Any]:
    """A writable uint8 view of ``nbytes`` of host memory at ``ptr`` (pinned, managed, Arrow)."""
    if nbytes == 0:
        return np.zeros(0, dtype=np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))


def _host_arrays(array: pa.Array) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any] | None, int]:
    """Host values (unpacked for bool: a copy), validity bytes and the bitmap's bit offset."""
    if pa.types.is_boolean(array.type):
        values = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.bool_)
    elif pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        dtype = np.dtype(array.type.to_pandas_dtype())
        data = array.buffers()[1]
        if data is not None and len(array):
            start = array.offset * dtype.itemsize
            values = np.frombuffer(data, dtype=dtype, count=len(array), offset=start)
        else:
            values = np.zeros(0, dtype=dtype)
    else:
        msg = (
            f"column of type {array.type} cannot be placed on a GPU as a tensor; "
            "use a numeric or boolean column (cast it first)"
        )
        raise UnsupportedTypeError(msg)
    if array.null_count == 0 or array.buffers()[0] is None:
        return values, None, 0
    first = array.offset >> 3
    last = (array.offset + len(array) + 7) >> 3
    bits = np.frombuffer(array.buffers()[0], dtype=np.uint8, count=last - first, offset=first)
    return values, bits, array.offset & 7


def _columns(obj: Any) -> dict[str, pa.Array] | pa.Array:
    if isinstance(obj, pa.ChunkedArray):
        return obj.combine_chunks() if obj.num_chunks != 1 else obj.chunk(0)
    if isinstance(obj, pa.Array):
        return obj
    if isinstance(obj, np.ndarray):
        return pa.array(obj)
    if isinstance(obj, pa.RecordBatch):
        obj = pa.table(obj)
    if not isinstance(obj, pa.Table) and hasattr(obj, "__arrow_c_stream__"):
        if (
            hasattr(obj, "columns")
            and hasattr(obj, "shape")
            and len(getattr(obj, "shape", ())) == 2
        ):
            obj = pa.table(obj)  # pandas/polars frames through the Arrow PyCapsule stream
        else:
            return _columns(pa.chunked_array(obj))
    if isinstance(obj, pa.Table):
        return {n: _columns(obj.column(n)) for n in obj.column_names}  # type: ignore[misc]
    msg = (
        f"cannot place a {type(obj).__name__} on a GPU; pass a pyarrow Array/Table, a NumPy "
        "array, or a pandas/polars frame or series"
    )
    raise UnsupportedTypeError(msg)


def to_device(
    frame_or_column: Any,
    placement: str = DEFAULT_PLACEMENT,
    device: int = 0,
    *,
    memory_fraction: float = 0.5,
) -> DeviceColumn | dict[str, DeviceColumn]:
    """Place a column (or every column of a frame) on CUDA device ``device``.

    Returns a `DeviceColumn` for a column and a dict of them (by name) for a
    frame. ``placement`` is one of `PLACEMENTS` (see the module docstring);
    ``"host-mapped"`` and ``"pageable"`` copy nothing: the views read the
    Arrow buffers themselves, as do ``"device"``/``"managed"`` views of data
    that already lives in device or managed memory. Raises `DeviceError`
    without a usable GPU, for a placement the device cannot serve, or when
    the data would not fit in the allowed share of free device memory.
    """
    if placement not in PLACEMENTS:
        msg = f"unknown placement {placement!r}; use one of {', '.join(PLACEMENTS)}"
        raise DeviceError(msg)
    cp = cupy_module()
    cols = _columns(frame_or_column)
    single = not isinstance(cols, dict)
    named: dict[str, pa.Array] = {"": cols} if single else cols  # type: ignore[dict-item]
    hosts = {name: _host_arrays(arr) for name, arr in named.items()}
    out: dict[str, DeviceColumn] = {}
    try:
        with cp.cuda.Device(device):
            info = device_info(cp, device)
            check_placement(info, placement)
            need = 0
            if placement in ("device", "managed"):
                need = sum(v.nbytes + (b.nbytes if b is not None else 0)
                           for v, b, _ in hosts.values())  # fmt: skip
            reservation = reserve(cp, device, memory_fraction, need, need)
            stream = stream_pool.acquire(cp, device)
            stager = Stager(cp)
            try:
                with stream:
                    for name, (values, bits, bit_offset) in hosts.items():
                        dev_values = _place_one(cp, info, values, placement, stream, stager)
                        dev_bits = (_place_one(cp, info, bits, placement, stream, stager)
                                    if bits is not None else None)  # fmt: skip
                        out[name] = DeviceColumn(name, placement, device, dev_values, dev_bits,
                                                 bit_offset)  # fmt: skip
            finally:
                # copies and prefetches are queued on the stream: they finish before the
                # views are handed out, the staging buffers are freed and the stream reused
                stream.synchronize()
                del stager
                stream_pool.release(cp, device, stream)
                reservation.release()
    except cuda_failures(cp) as exc:
        raise cuda_error(cp, exc, f"could not place data on cuda:{device}") from exc
    return out[""] if single else out
