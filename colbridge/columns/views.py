"""Columns and views: the array protocols every colbridge tensor speaks (NumPy, DLPack).

:class:`ArrayProtocols` wraps one read-only ndarray that views memory someone
else owns and exposes it through ``__array_interface__``, ``__array__``,
``__dlpack__`` and ``__dlpack_device__``. :class:`~colbridge.columns.tensor.TensorView`
(one column) and :class:`~colbridge.columns.matrix.FeatureMatrix` (many columns)
build on it. DLPack export goes through NumPy, which writes the versioned
DLPack 1.0 capsule with the read-only flag itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ArrayProtocols"]

_KDL_CPU = 1


class ArrayProtocols:
    """Read-only array protocols over one ndarray.

    Parameters
    ----------
    array : numpy.ndarray
        The data; made read-only here if it is not already.
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
        array: np.ndarray[Any, Any],
        *,
        copied: bool,
        copy_reason: str = "",
        readonly: bool = True,
    ) -> None:
        if readonly and array.flags.writeable:
            array.flags.writeable = False
        self._array = array
        self.copied = copied
        self.copy_reason = copy_reason

    # -- shape and type -------------------------------------------------
    @property
    def dtype(self) -> np.dtype[Any]:
        """NumPy (and CuPy) dtype of the elements."""
        dtype: np.dtype[Any] = self._array.dtype
        return dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """Tensor shape; the first axis is the rows."""
        return tuple(self._array.shape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return int(self._array.ndim)

    @property
    def nbytes(self) -> int:
        """Bytes spanned by the elements."""
        return int(self._array.nbytes)

    @property
    def data_address(self) -> int:
        """Address of the first element."""
        return int(self._array.__array_interface__["data"][0])

    def __len__(self) -> int:
        return int(self._array.shape[0])

    def numpy(self) -> np.ndarray[Any, Any]:
        """Return the ndarray (a view; no copy). For views of Arrow data it is read-only."""
        return self._array

    # -- NumPy protocols --------------------------------------------------
    @property
    def __array_interface__(self) -> dict[str, Any]:
        """NumPy array interface (version 3); ``data`` is ``(address, True)``: read-only."""
        return dict(self._array.__array_interface__)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        """Return the data for ``np.asarray`` / ``np.array``, with NumPy 2 ``copy`` semantics.

        ``copy=None`` returns the read-only view when no cast is needed,
        ``copy=False`` raises ``ValueError`` when a cast would need a copy,
        ``copy=True`` returns a fresh, writable array.
        """
        target = self._array.dtype if dtype is None else np.dtype(dtype)
        if copy is True:
            return self._array.astype(target, copy=True)
        if target != self._array.dtype:
            if copy is False:
                msg = (
                    f"copy not allowed: casting {self._array.dtype} to {target} "
                    "needs a copy; pass `copy=None` or `copy=True`"
                )
                raise ValueError(msg)
            return self._array.astype(target)
        return self._array

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
        The old unversioned capsule cannot say "read-only", so a consumer that
        does not pass ``max_version`` gets one over a fresh copy (DLPack allows
        the producer to copy when ``copy`` is None); with ``copy=False`` it
        raises ``BufferError`` instead of handing out writable access to
        shared memory.
        """
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        if versioned or self._array.flags.writeable:
            return self._array.__dlpack__(
                stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
            )
        if copy is False:
            msg = (
                "cannot export a read-only view through an unversioned DLPack capsule "
                "without copying; ask for `max_version=(1, 0)` or allow `copy`"
            )
            raise BufferError(msg)
        fresh = np.array(self._array, copy=True)
        return fresh.__dlpack__(stream=stream, dl_device=dl_device)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLCPU, 0)``: host memory."""
        return (_KDL_CPU, 0)
