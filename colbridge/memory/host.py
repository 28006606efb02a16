"""Memory: host buffers, read-only NumPy views over them, and who keeps whom alive.

A view never owns memory. :class:`HostBuffer` names a span of host memory
(address and size) together with the object that owns it (a ``pa.Buffer``,
an ndarray, a frame); NumPy arrays made by :func:`host_view` keep that
``HostBuffer`` as their ``base``, so the owner lives as long as any view,
DLPack export or NumPy slice of it does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa

__all__ = [
    "PLACEMENTS",
    "HostBuffer",
    "HostLayout",
    "Placement",
    "allocate_host",
    "empty_array",
    "host_view",
    "writable_view",
]

#: Where a buffer lives. Only ``"host"`` exists now; GPU placements
#: (``"managed"``, ``"device"``, ``"host-mapped"``) will join this list.
Placement = Literal["host"]
PLACEMENTS: tuple[str, ...] = ("host",)


@dataclass(eq=False)
class HostBuffer:
    """A span of host memory and the object that keeps it alive.

    Attributes
    ----------
    address : int
        Address of the first byte.
    nbytes : int
        Size in bytes.
    owner : object
        The object owning the memory (a ``pa.Buffer``, an ndarray, ...). Held
        for as long as this object lives.
    placement : str
        Always ``"host"`` for now.
    """

    address: int
    nbytes: int
    owner: Any = field(repr=False)
    placement: Placement = "host"

    @classmethod
    def from_arrow(cls, buffer: pa.Buffer) -> HostBuffer:
        """Wrap a ``pa.Buffer`` (host memory only)."""
        if not buffer.is_cpu:
            msg = (
                f"buffer at {buffer.address:#x} is not in host memory; "
                "GPU placements are not supported yet, copy it to the host first"
            )
            raise ValueError(msg)
        return cls(int(buffer.address), int(buffer.size), buffer)


def host_view(
    buffer: HostBuffer,
    dtype: np.dtype[Any] | str,
    shape: tuple[int, ...],
    *,
    byte_offset: int = 0,
    strides: tuple[int, ...] | None = None,
) -> np.ndarray[Any, Any]:
    """Return a read-only ndarray over ``buffer``, starting ``byte_offset`` bytes in.

    Zero-copy: the array's data pointer is ``buffer.address + byte_offset``
    (NumPy allocates a placeholder only for arrays with no elements and a
    null address). The array's ``base`` is an object holding ``buffer``, so
    the owner stays alive while the array (or any view of it) does.

    Examples
    --------
    >>> import pyarrow as pa, numpy as np
    >>> buf = pa.py_buffer(np.arange(4, dtype="int32").tobytes())
    >>> v = host_view(HostBuffer.from_arrow(buf), "int32", (2,), byte_offset=8)
    >>> v.tolist(), v.flags.writeable
    ([2, 3], False)
    """
    dt = np.dtype(dtype)
    count = 1
    for s in shape:
        count *= s
    if count and strides is None and byte_offset + count * dt.itemsize > buffer.nbytes:
        msg = (
            f"view of {count} x {dt} at byte offset {byte_offset} runs past the end "
            f"of a {buffer.nbytes}-byte buffer"
        )
        raise ValueError(msg)
    holder = _Holder(buffer, dt, shape, buffer.address + byte_offset, strides)
    array: np.ndarray[Any, Any] = np.asarray(holder)
    array.flags.writeable = False
    return array


class _Holder:
    """Carries an ``__array_interface__`` and keeps the buffer alive as the ndarray's base."""

    __slots__ = ("__array_interface__", "buffer")

    def __init__(
        self,
        buffer: Any,
        dtype: np.dtype[Any],
        shape: tuple[int, ...],
        address: int,
        strides: tuple[int, ...] | None,
    ) -> None:
        self.buffer = buffer
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": dtype.str,
            "data": (address, True),
            "strides": strides,
        }


class HostLayout:
    """A read-only tensor over host memory, described but not yet an ndarray.

    Holds what ``__array_interface__`` needs (address, shape, dtype, strides)
    and the object owning the memory, so a view can answer shape, dtype,
    address and the array interface without building a NumPy array;
    :meth:`materialize` builds one (read-only, keeping ``owner`` alive as its
    base) when it is actually asked for.

    Attributes
    ----------
    address : int
        Address of the first element.
    shape : tuple of int
        Tensor shape.
    dtype : numpy.dtype
        Element type.
    strides : tuple of int or None
        Byte strides; None for C-contiguous.
    owner : object
        The object owning the memory (a ``pa.Buffer``, an ndarray, ...).
    """

    __slots__ = ("address", "dtype", "owner", "shape", "strides")

    def __init__(
        self,
        address: int,
        shape: tuple[int, ...],
        dtype: np.dtype[Any],
        owner: Any,
        strides: tuple[int, ...] | None = None,
    ) -> None:
        self.address = address
        self.shape = shape
        self.dtype = dtype
        self.owner = owner
        self.strides = strides

    @property
    def size(self) -> int:
        """Number of elements."""
        count = 1
        for s in self.shape:
            count *= s
        return count

    def interface(self) -> dict[str, Any]:
        """A fresh NumPy array interface (version 3) dict, flagged read-only."""
        typestr = self.dtype.str
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": typestr,
            "descr": [("", typestr)],
            "data": (self.address, True),
            "strides": self.strides,
        }

    def materialize(self) -> np.ndarray[Any, Any]:
        """Build the read-only ndarray; its ``base`` keeps ``owner`` alive."""
        holder = _Holder(self.owner, self.dtype, self.shape, self.address, self.strides)
        array: np.ndarray[Any, Any] = np.asarray(holder)
        array.flags.writeable = False
        return array


def allocate_host(nbytes: int) -> HostBuffer:
    """Fresh, writable host memory from the Arrow memory pool.

    The pool recycles pages, which makes large outputs far cheaper to fill
    than fresh ``np.empty`` pages that must be faulted in one by one.
    """
    buf = pa.allocate_buffer(max(nbytes, 1), resizable=False)
    return HostBuffer(int(buf.address), int(buf.size), buf)


def empty_array(n: int, dtype: npt.DTypeLike) -> np.ndarray[Any, Any]:
    """An uninitialised, writable 1-D array of ``n`` values in Arrow's memory pool.

    For large outputs and temporaries of the kernels: the pool keeps the pages it
    has touched, where the C allocator behind ``np.empty`` maps an array of more than
    32 MiB anew each time, and the kernel that first writes it faults each page in,
    which can take longer than the kernel's own work. Wrap the array's memory in
    Arrow with ``pa.py_buffer(array)`` (no copy).

    Examples
    --------
    >>> from colbridge.memory import empty_array
    >>> a = empty_array(3, "int64")
    >>> a[:] = [1, 2, 3]
    >>> a.tolist(), a.flags.writeable
    ([1, 2, 3], True)
    """
    dt = np.dtype(dtype)
    return writable_view(allocate_host(n * dt.itemsize), dt, (n,))


def read_only(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A read-only view of ``array`` (no copy; ``array`` keeps its own flags).

    For kernel inputs: numba compiles a kernel once per argument type, and a writable
    array is another type than a read-only one. An Arrow buffer read in place is
    either, as it was made (a computed one read-only, one made from a NumPy mask
    writable), and a converted copy is writable: giving a kernel every input read-only
    compiles it once per element type instead of once per origin.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(3)
    >>> read_only(a).flags.writeable, a.flags.writeable
    (False, True)
    """
    view = array.view()
    view.flags.writeable = False
    return view


def writable_view(
    buffer: HostBuffer, dtype: np.dtype[Any] | str, shape: tuple[int, ...], order: str = "C"
) -> np.ndarray[Any, Any]:
    """Return a writable ndarray over freshly allocated ``buffer`` (for filling outputs)."""
    dt = np.dtype(dtype)
    strides: tuple[int, ...] | None = None
    if order == "F" and len(shape) == 2:
        strides = (dt.itemsize, dt.itemsize * shape[0])
    holder = _Holder(buffer, dt, shape, buffer.address, strides)
    holder.__array_interface__["data"] = (buffer.address, False)
    return np.asarray(holder)


def one_array(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``array`` as one Arrow array: a chunked array's chunks joined (one chunk: no copy)."""
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array
