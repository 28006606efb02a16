"""Memory: GPU placements of Arrow buffers (device copies, managed memory, host-mapped pages).

Stage: memory. `to_device` places the values (and validity bitmap) of a column
or of every column of a frame on a CUDA device and returns views that speak
``__cuda_array_interface__`` (v3) and ``__dlpack__``/``__dlpack_device__``
through the CuPy arrays they hold (CUDA device type for device and
host-mapped memory, CUDA-managed where CuPy reports managed memory).

Placements: ``"device"`` copies into device memory; ``"managed"`` copies once
into CUDA managed (unified) memory, which the CPU can read too;
``"host-mapped"`` registers the Arrow host buffer itself (``cudaHostRegister``,
mapped) and hands the GPU its device alias, copying nothing. Device and
managed placements never allocate more than the free device memory times
``memory_fraction`` (`check_fits`).

CuPy is imported inside the functions only: importing colbridge never imports it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import DeviceError, UnsupportedTypeError

__all__ = ["GPU_PLACEMENTS", "DeviceColumn", "check_fits", "to_device"]

GPU_PLACEMENTS: tuple[str, ...] = ("managed", "device", "host-mapped")
_PAGE = 4096


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as exc:
        msg = (
            "GPU placements need CuPy (install the `gpu` extra: "
            f"`pip install colbridge[gpu]`): {exc}"
        )
        raise DeviceError(msg) from exc
    try:
        available = cupy.cuda.is_available()
    except Exception as exc:
        msg = f"CuPy could not reach a CUDA device ({type(exc).__name__}: {exc})"
        raise DeviceError(msg) from exc
    if not available:
        msg = "CuPy found no CUDA device (no driver or no GPU); use the host column instead"
        raise DeviceError(msg)
    return cupy


def check_fits(nbytes: int, *, device: int = 0, memory_fraction: float = 0.5) -> None:
    """Raise `DeviceError` unless ``nbytes`` fit in free device memory × ``memory_fraction``."""
    cp = _cupy()
    with cp.cuda.Device(device):
        free, total = cp.cuda.runtime.memGetInfo()
    allowed = int(free * memory_fraction)
    if nbytes > allowed:
        msg = (
            f"placing {nbytes} bytes on cuda:{device} would exceed the allowed share of free "
            f"memory ({allowed} of {free} free bytes, memory_fraction={memory_fraction}, "
            f"{total} total); process the data in chunks or use placement='host-mapped'"
        )
        raise DeviceError(msg)


@dataclass(eq=False)
class DeviceColumn:
    """One column on a GPU: values as a CuPy array, plus its validity bitmap where it has nulls.

    ``validity`` is the bit-packed Arrow bitmap (uint8, LSB first) starting at
    bit ``validity_offset``; None when the column holds no nulls.
    """

    name: str
    placement: str
    device: int
    values: Any
    validity: Any | None = None
    validity_offset: int = 0
    _keep: list[Any] = field(default_factory=list, repr=False)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The values' CUDA array interface (version 3), from CuPy."""
        return self.values.__cuda_array_interface__  # type: ignore[no-any-return]

    def __dlpack__(self, **kwargs: Any) -> Any:
        """A DLPack capsule of the values, exported by CuPy."""
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLPack device type, device id): CUDA (2) or CUDA managed (13)."""
        return tuple(self.values.__dlpack_device__())  # type: ignore[return-value]

    def __len__(self) -> int:
        return int(self.values.shape[0])


class _Registration:
    """Pages of host memory registered with CUDA (mapped) while any view uses them."""

    def __init__(self, cp: Any, start: int, size: int) -> None:
        self.start = start
        registered = True
        try:
            cp.cuda.runtime.hostRegister(start, size, 2)  # cudaHostRegisterMapped
        except cp.cuda.runtime.CUDARuntimeError as exc:
            if "AlreadyRegistered" not in str(exc):
                msg = f"could not register host memory for mapping ({exc})"
                raise DeviceError(msg) from exc
            registered = False  # someone else's registration; leave it to them
        if registered:
            weakref.finalize(self, _unregister, cp, start)


def _unregister(cp: Any, start: int) -> None:
    try:
        cp.cuda.runtime.hostUnregister(start)
    except Exception:  # the process may be shutting down; nothing to do
        return


def _host_mapped(cp: Any, host: np.ndarray[Any, Any], device: int, keep: list[Any]) -> Any:
    if host.nbytes == 0:
        return cp.asarray(host)
    ptr = int(host.ctypes.data)
    start = ptr - ptr % _PAGE
    size = (ptr + host.nbytes - start + _PAGE - 1) // _PAGE * _PAGE
    attr = cp.cuda.runtime.cudaDevAttrPageableMemoryAccess
    if not cp.cuda.runtime.deviceGetAttribute(attr, device):
        keep.append(_Registration(cp, start, size))
        dev_ptr = int(cp.cuda.runtime.pointerGetAttributes(ptr).devicePointer)
    else:
        dev_ptr = ptr  # HMM: the device reads pageable host memory as it is
    keep.append(host)
    mem = cp.cuda.UnownedMemory(dev_ptr, host.nbytes, host, device)
    raw = cp.ndarray((host.nbytes,), dtype=cp.uint8, memptr=cp.cuda.MemoryPointer(mem, 0))
    return raw.view(host.dtype)


def _place(cp: Any, host: np.ndarray[Any, Any], placement: str, device: int,
           keep: list[Any]) -> Any:  # fmt: skip
    if placement == "device":
        return cp.asarray(host)
    if placement == "managed":
        mem = cp.cuda.malloc_managed(max(host.nbytes, 1))
        out = cp.ndarray(host.shape, dtype=host.dtype, memptr=mem)
        if host.nbytes:
            cp.cuda.runtime.memcpy(out.data.ptr, host.ctypes.data, host.nbytes,
                                   cp.cuda.runtime.memcpyDefault)  # fmt: skip
        return out
    return _host_mapped(cp, host, device, keep)


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
    placement: str = "managed",
    device: int = 0,
    *,
    memory_fraction: float = 0.5,
) -> DeviceColumn | dict[str, DeviceColumn]:
    """Place a column (or every column of a frame) on CUDA device ``device``.

    Returns a `DeviceColumn` for a column and a dict of them (by name) for a
    frame. ``placement`` is ``"managed"``, ``"device"`` or ``"host-mapped"``
    (see the module docstring). Raises `DeviceError` without a usable GPU or
    when the data would not fit in the allowed share of free device memory.
    """
    if placement not in GPU_PLACEMENTS:
        msg = f"unknown placement {placement!r}; use one of {', '.join(GPU_PLACEMENTS)}"
        raise DeviceError(msg)
    cp = _cupy()
    cols = _columns(frame_or_column)
    single = not isinstance(cols, dict)
    named: dict[str, pa.Array] = {"": cols} if single else cols  # type: ignore[dict-item]
    hosts = {name: _host_arrays(arr) for name, arr in named.items()}
    if placement != "host-mapped":
        need = sum(v.nbytes + (b.nbytes if b is not None else 0) for v, b, _ in hosts.values())
        check_fits(need, device=device, memory_fraction=memory_fraction)
    out: dict[str, DeviceColumn] = {}
    try:
        with cp.cuda.Device(device):
            for name, (values, bits, bit_offset) in hosts.items():
                keep: list[Any] = []
                dev_values = _place(cp, values, placement, device, keep)
                dev_bits = _place(cp, bits, placement, device, keep) if bits is not None else None
                out[name] = DeviceColumn(name, placement, device, dev_values, dev_bits,
                                         bit_offset, keep)  # fmt: skip
    except DeviceError:
        raise
    except Exception as exc:
        msg = f"could not place data on cuda:{device} ({type(exc).__name__}: {exc})"
        raise DeviceError(msg) from exc
    return out[""] if single else out
