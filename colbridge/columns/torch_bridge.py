"""Columns and views: handing a column to torch without letting it write into the source.

torch ignores DLPack's read-only flag: a tensor made with ``torch.from_dlpack`` of
a zero-copy view is writable, and writing to it changes the source frame
(``ArrayProtocols.__dlpack__`` warns when that happens). :func:`to_torch` is the
torch-facing door: it copies memory colbridge does not own, unless the caller
asks to share it (``writable_alias=True``), and it shares fresh results
(a feature matrix, a filled copy) that alias nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from colbridge.columns.tensor import as_tensor, fill_scalar
from colbridge.columns.views import ArrayProtocols
from colbridge.errors import NullValuesError

__all__ = ["to_torch"]


def to_torch(obj: Any, *, writable_alias: bool = False, nulls: Any = "raise") -> Any:
    """A torch tensor of a column or a colbridge tensor, never writing into the source silently.

    Parameters
    ----------
    obj : object
        Anything `colbridge.as_tensor` takes (a pyarrow, polars or pandas column,
        a NumPy array, ...), or a `TensorView` / `FeatureMatrix`.
    writable_alias : bool, default False
        False: memory colbridge does not own (the source's Arrow or NumPy buffer)
        is copied once, so the tensor is private and writable. True: the tensor
        shares that memory (no copy); torch cannot make it read-only, so **writing
        to it changes the source frame**; use it only for read-only work.
        Fresh colbridge results (a `to_tensor` matrix, a filled copy) alias nothing
        and are shared either way.
    nulls : {"raise", "keep"} or scalar, default "raise"
        As in `colbridge.as_tensor`: torch tensors have no nulls, so by default a
        column with nulls is refused; a fill value fills them (in the copy).

    Returns
    -------
    torch.Tensor

    Examples
    --------
    >>> import polars as pl
    >>> import colbridge as cb
    >>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
    >>> t = cb.to_torch(df["x"])
    >>> t[0] = -1.0  # a private copy: the frame is unchanged
    >>> df["x"].to_list()
    [1.0, 2.0, 3.0]
    >>> shared = cb.to_torch(df["x"], writable_alias=True)
    >>> shared.data_ptr() == cb.as_tensor(df["x"]).data_address
    True
    """
    import torch
    from torch.utils.dlpack import from_dlpack

    if isinstance(obj, ArrayProtocols):
        filled = _view_nulls(obj, nulls)
        if filled is not None:  # a private copy, nulls filled
            return torch.from_numpy(filled)
        view = obj
    else:
        view = as_tensor(obj, allow_copy=True, nulls=nulls)
    array = view.numpy()
    if array.flags.writeable:
        # a fresh result colbridge made: nobody else's memory, share it
        return from_dlpack(array)
    if writable_alias:
        # the caller asked to share: take the capsule here, so no warning is raised
        return from_dlpack(view.__dlpack__(max_version=(1, 0)))
    return torch.from_numpy(np.array(array, copy=True, order="K"))


def _view_nulls(view: ArrayProtocols, nulls: Any) -> np.ndarray[Any, Any] | None:
    """A view's values with its nulls filled (a copy); None where it has none to fill.

    A `TensorView` or `FeatureMatrix` made with ``nulls="keep"`` holds whatever bytes
    sit under its nulls: ``nulls="raise"`` refuses them, a fill value fills them, as
    for a column.
    """
    validity = getattr(view, "validity", None)
    if validity is None or (isinstance(nulls, str) and nulls == "keep"):
        return None
    valid = validity if isinstance(validity, np.ndarray) else validity.to_numpy()
    missing = ~np.asarray(valid, dtype=np.bool_)
    if not missing.any():
        return None
    if isinstance(nulls, str):
        if nulls != "raise":
            msg = f"`nulls` must be 'keep', 'raise' or a fill value, got {nulls!r}"
            raise ValueError(msg)
        msg = (
            f"{view!r} has {int(missing.sum())} null value(s), which a torch tensor cannot "
            "hold; pass `nulls='keep'` for the values as they are (and use its `validity`), "
            "or a fill value"
        )
        raise NullValuesError(msg)
    values = np.array(view.numpy(), copy=True, order="K")
    if missing.shape != values.shape:  # a row's validity over a row of several values
        missing = missing.reshape(missing.shape + (1,) * (values.ndim - missing.ndim))
        missing = np.broadcast_to(missing, values.shape)
    values[missing] = fill_scalar(nulls, values.dtype, "a torch tensor")
    return values
