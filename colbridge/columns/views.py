"""Columns and views: the array protocols every colbridge tensor speaks (NumPy, DLPack).

:class:`ArrayProtocols` wraps one read-only ndarray that views memory someone
else owns and exposes it through ``__array_interface__``, ``__array__``,
``__dlpack__`` and ``__dlpack_device__``. :class:`~colbridge.columns.tensor.TensorView`
(one column) and :class:`~colbridge.columns.matrix.FeatureMatrix` (many columns)
build on it. DLPack export goes through NumPy, which writes the versioned
DLPack 1.0 capsule with the read-only flag itself.

A zero-copy view may be built from a :class:`~colbridge.memory.host.HostLayout`
(address, shape, dtype, owner) instead of an ndarray: shape, dtype, address
and ``__array_interface__`` are then answered from the layout, and the
ndarray is built once, on first use (``.numpy()``, ``__array__``,
``__dlpack__``). Making a view thus costs the same whatever the row count.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

from colbridge.errors import WritableAliasWarning
from colbridge.memory.host import HostLayout

__all__ = ["ArrayProtocols"]

_KDL_CPU = 1
#: Modules whose DLPack import ignores the read-only flag: their tensors are writable.
_IGNORES_READ_ONLY = ("torch",)


def _caller_ignores_read_only() -> str | None:
    """The DLPack consumer calling `__dlpack__` when it is one that ignores read-only, else None.

    torch's `from_dlpack`, `as_tensor` and `asarray` all call `__dlpack__` from
    `torch.utils.dlpack`; two frames up from here is that caller.
    """
    module = str(sys._getframe(2).f_globals.get("__name__", ""))
    root = module.partition(".")[0]
    return root if root in _IGNORES_READ_ONLY else None


class ArrayProtocols:
    """Read-only array protocols over one ndarray.

    Parameters
    ----------
    array : numpy.ndarray or HostLayout
        The data; made read-only here if it is not already. A
        :class:`~colbridge.memory.host.HostLayout` describes read-only memory
        whose ndarray is built only when first needed.
    copied : bool
        Whether building ``array`` copied data.
    copy_reason : str, optional
        Why it copied (empty when it did not).
    readonly : bool, default True
        Make ``array`` read-only. Only fresh results that alias nothing
        (a feature matrix copied into its own buffer) stay writable.
    """

    placement: str = "host"

    def __init__(
        self,
        array: np.ndarray[Any, Any] | HostLayout,
        *,
        copied: bool,
        copy_reason: str = "",
        readonly: bool = True,
    ) -> None:
        if isinstance(array, HostLayout):
            self._array: np.ndarray[Any, Any] | None = None
            self._layout: HostLayout | None = array
        else:
            if readonly and array.flags.writeable:
                array.flags.writeable = False
            self._array = array
            self._layout = None
        self.copied = copied
        self.copy_reason = copy_reason

    def _ndarray(self) -> np.ndarray[Any, Any]:
        array = self._array
        if array is None:
            assert self._layout is not None
            array = self._array = self._layout.materialize()
        return array

    # -- shape and type -------------------------------------------------
    @property
    def dtype(self) -> np.dtype[Any]:
        """NumPy (and CuPy) dtype of the elements."""
        layout = self._layout
        if layout is not None:
            return layout.dtype
        dtype: np.dtype[Any] = self._ndarray().dtype
        return dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """Tensor shape; the first axis is the rows."""
        layout = self._layout
        if layout is not None:
            return layout.shape
        return tuple(self._ndarray().shape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes spanned by the elements."""
        layout = self._layout
        if layout is not None:
            return layout.size * layout.dtype.itemsize
        return int(self._ndarray().nbytes)

    @property
    def data_address(self) -> int:
        """Address of the first element."""
        layout = self._layout
        if layout is not None:
            return layout.address
        return int(self._ndarray().__array_interface__["data"][0])

    def __len__(self) -> int:
        return self.shape[0]

    def numpy(self) -> np.ndarray[Any, Any]:
        """Return the ndarray (a view; no copy). For views of Arrow data it is read-only."""
        return self._ndarray()

    # -- NumPy protocols --------------------------------------------------
    @property
    def __array_interface__(self) -> dict[str, Any]:
        """NumPy array interface (version 3); ``data`` is ``(address, True)``: read-only."""
        layout = self._layout
        if layout is not None:
            return layout.interface()
        return dict(self._ndarray().__array_interface__)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        """Return the data for ``np.asarray`` / ``np.array``, with NumPy 2 ``copy`` semantics.

        ``copy=None`` returns the read-only view when no cast is needed,
        ``copy=False`` raises ``ValueError`` when a cast would need a copy,
        ``copy=True`` returns a fresh, writable array.
        """
        array = self._ndarray()
        target = array.dtype if dtype is None else np.dtype(dtype)
        if copy is True:
            return array.astype(target, copy=True)
        if target != array.dtype:
            if copy is False:
                msg = (
                    f"copy not allowed: casting {array.dtype} to {target} "
                    "needs a copy; pass `copy=None` or `copy=True`"
                )
                raise ValueError(msg)
            return array.astype(target)
        return array

    # -- DLPack -------------------------------------------------------------
    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export as a DLPack capsule, through NumPy.

        A consumer asking ``max_version >= (1, 0)`` gets a versioned capsule
        (``dltensor_versioned``) flagged READ_ONLY that views the same memory.
        torch ignores that flag (its tensors are always writable), so a read-only
        view exported to torch comes with a `WritableAliasWarning`: writes to the
        tensor would change the source frame (`colbridge.to_torch` copies instead).
        The old unversioned capsule cannot say "read-only", so a consumer that
        does not pass ``max_version`` gets one over a fresh copy (DLPack allows
        the producer to copy when ``copy`` is None); with ``copy=False`` it
        raises ``BufferError`` instead of handing out writable access to
        shared memory.
        """
        array = self._ndarray()
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        if versioned and not array.flags.writeable:
            consumer = _caller_ignores_read_only()
            if consumer is not None:
                msg = (
                    f"{consumer} ignores DLPack's read-only flag: this tensor shares the "
                    "source's memory (no copy), and writing to it changes the source frame. "
                    f"Use `cb.to_torch(x)` for a private copy, or "
                    f"`cb.to_torch(x, writable_alias=True)` to share it knowingly"
                )
                warnings.warn(msg, WritableAliasWarning, stacklevel=3)
        if versioned or array.flags.writeable:
            return array.__dlpack__(
                stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
            )
        if copy is False:
            msg = (
                "cannot export a read-only view through an unversioned DLPack capsule "
                "without copying; ask for `max_version=(1, 0)` or allow `copy`"
            )
            raise BufferError(msg)
        fresh = np.array(array, copy=True)
        return fresh.__dlpack__(stream=stream, dl_device=dl_device)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLCPU, 0)``: host memory."""
        return (_KDL_CPU, 0)
