"""Jobs layer: a loader a training loop can use — feature batches of a fixed size, shuffled.

`FeatureLoader` reads a dataset (Parquet/IPC files, or a stream: `colbridge.io.streams`)
in *units* — a Parquet row group, an IPC file, or for a stream one record batch — turns
each unit's rows into one feature matrix with the fused per-batch transform of
`colbridge.io.fuse` (statistics fitted once, or given), and cuts it into batches
of ``batch_size`` rows: slices of the matrix, so a batch costs no copy unless rows
are shuffled.

- **Shuffle** (seeded, reproducible): the order of the units is permuted, then
  rows go through a shuffle buffer of ``shuffle_buffer`` rows (as Ray Data's local
  shuffle and ``tf.data``'s buffer): a full buffer is permuted and emitted batch by
  batch, keeping what is left for the next fill. ``set_epoch(n)`` gives each epoch its
  own permutation, as ``DistributedSampler.set_epoch`` does.
- **Workers**: inside a ``torch.utils.data.DataLoader`` with ``num_workers > 0``,
  each worker reads every ``num_workers``-th unit (a stream: every worker reads it,
  and transforms only its own batches), so no row is served twice.
- **Prefetch**: batches are made on a background thread, ``prefetch`` ahead
  (reading Parquet and the kernels release the GIL).
- **Tensors**: ``output="torch"`` (default), ``"numpy"`` or ``"jax"`` (through
  DLPack); ``device="cuda"`` moves torch batches to the GPU (from pinned memory
  with ``pin_memory=True``).
"""

from __future__ import annotations

import queue
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.errors import JobSpecError
from colbridge.io.fuse import (
    FeatureSpec,
    FeatureStats,
    PathLike,
    classed_labels,
    feature_columns,
    iter_features,
    transform_batch,
)
from colbridge.io.source import DEFAULT_BATCH_ROWS, Source
from colbridge.io.streams import InputSource, open_input
from colbridge.types import parse_dtype

__all__ = ["FeatureLoader", "loader"]

_OUTPUTS = ("torch", "numpy", "jax")


@dataclass
class _Chunk:
    """Rows of one unit, transformed: the matrix, its validity, the label and kept columns."""

    features: np.ndarray[Any, Any]
    validity: np.ndarray[Any, Any] | None
    columns: dict[str, np.ndarray[Any, Any]]

    @property
    def rows(self) -> int:
        return int(self.features.shape[0])

    def take(self, index: np.ndarray[Any, Any] | slice) -> _Chunk:
        return _Chunk(
            self.features[index],
            None if self.validity is None else self.validity[index],
            {k: v[index] for k, v in self.columns.items()},
        )

    @staticmethod
    def join(chunks: Sequence[_Chunk]) -> _Chunk:
        if len(chunks) == 1:
            return chunks[0]
        return _Chunk(
            np.concatenate([c.features for c in chunks]),
            None if chunks[0].validity is None else np.concatenate(
                [c.validity for c in chunks if c.validity is not None]),
            {k: np.concatenate([c.columns[k] for c in chunks]) for k in chunks[0].columns},
        )  # fmt: skip


def _column_array(
    column: pa.Array | pa.ChunkedArray,
    name: str,
    dtype: str | None,
    classes: pa.Array | None = None,
) -> np.ndarray[Any, Any]:
    """A label or kept column as NumPy; nulls are refused (a tensor has no null).

    A string label is served as class ids: each value's index in its fitted
    ``classes`` (int64, the type torch's classification losses take).
    """
    if column.null_count:
        msg = (
            f"column `{name}` has {column.null_count} null(s); a training batch cannot hold "
            "nulls: fill them in the data, or pass the column as a feature with `fill_null`"
        )
        raise JobSpecError(msg)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if classes is not None:
        column = _class_ids(column, name, classes)
    try:
        values = column.to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        msg = f"column `{name}` of type `{column.type}` has no tensor form; pick a numeric column"
        raise JobSpecError(msg) from exc
    if values.dtype == object:
        msg = f"column `{name}` of type `{column.type}` has no tensor form; pick a numeric column"
        raise JobSpecError(msg)
    if dtype is not None:
        values = values.astype(parse_dtype(dtype).numpy, copy=False)
    if not values.flags.writeable:
        # Arrow's buffers are read-only; torch tensors must be writable. One column of
        # a unit is copied once (the feature matrix is the kernels' own, writable).
        values = values.copy()
    return np.asarray(values)


def _label_value_type(typ: pa.DataType) -> pa.DataType:
    return typ.value_type if pa.types.is_dictionary(typ) else typ


def _class_ids(column: pa.Array, name: str, classes: pa.Array) -> pa.Array:
    """Each value's index in ``classes``; a value the fit did not see is an error."""
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if column.type != classes.type:
        column = column.cast(classes.type)
    ids = pc.index_in(column, value_set=classes)
    if ids.null_count:
        unseen = column.filter(ids.is_null()).unique()
        shown = ", ".join(repr(v) for v in unseen[:5].to_pylist())
        msg = (
            f"label column `{name}` holds {len(unseen)} value(s) the statistics' classes "
            f"lack ({shown}); the fitted classes are {classes.to_pylist()[:20]}: refit the "
            "statistics on data that holds every class"
        )
        raise JobSpecError(msg)
    return ids.cast(pa.int64())


class FeatureLoader:
    """Feature batches for training; build with `loader`. Iterate once per epoch.

    Each item is a dict: ``"features"`` (``batch_size × width``), ``"validity"``
    (when the spec asks for it), and one entry per label and kept column.

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq, tempfile, os
    >>> from colbridge.io import loader
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]}), path)
    >>> batches = loader(path, columns=["x"], zscore=["x"], label="y", batch_size=2,
    ...                  output="numpy", shuffle=False)
    >>> [b["y"].tolist() for b in batches]
    [[0, 1], [0, 1]]
    """

    def __init__(
        self,
        source: InputSource,
        spec: FeatureSpec,
        stats: FeatureStats,
        *,
        labels: Sequence[str],
        dtypes: Mapping[str, str],
        batch_size: int,
        shuffle: bool,
        seed: int,
        shuffle_buffer: int,
        drop_last: bool,
        prefetch: int,
        pin_memory: bool,
        device: str | None,
        output: str,
        read_rows: int,
        transform_device: str,
    ) -> None:
        self.source = source
        self.spec = spec
        self.stats = stats
        self.labels = list(labels)
        #: the classes of each string label, by its class id (`fit_stats`)
        self.label_classes: dict[str, list[Any]] = {
            name: list(stats.columns[name]["classes"])
            for name in classed_labels(self.labels, source.schema)
        }
        self._classes: dict[str, pa.Array] = {}
        for name, values in self.label_classes.items():
            typ = source.schema.field(name).type
            self._classes[name] = pa.array(values, _label_value_type(typ))
        self.dtypes = dict(dtypes)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.shuffle_buffer = shuffle_buffer
        self.drop_last = drop_last
        self.prefetch = prefetch
        self.pin_memory = pin_memory
        self.device = device
        self.output = output
        self.read_rows = read_rows
        self.transform_device = transform_device
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Use the permutation of ``epoch`` for the next iteration (shuffle only)."""
        self.epoch = epoch

    # -- reading ----------------------------------------------------------------
    def _needed(self) -> list[str]:
        return list(dict.fromkeys(
            [t.name for t in self.spec.columns] + list(self.spec.keep) + self.labels))  # fmt: skip

    def _units(self) -> list[Any]:
        """The row groups (or files) of a file source; one unit for a stream."""
        if not isinstance(self.source, Source):
            return [None]
        units: list[Any] = []
        for fragment in self.source.dataset.get_fragments():
            split = getattr(fragment, "split_by_row_group", None)
            units.extend(split() if split is not None else [fragment])
        return units

    def _tables(self, worker: int, workers: int, rng: np.random.Generator | None
                ) -> Iterator[pa.Table | pa.RecordBatch]:  # fmt: skip
        units = self._units()
        needed = self._needed()
        if units == [None]:  # a stream: every worker reads it, keeping its own batches
            for k, table in enumerate(self.source.batches(self.read_rows, needed)):
                if k % workers == worker:
                    yield table
            return
        # every worker draws the same order of units, then takes its share of it
        order = (np.arange(len(units)) if rng is None else
                 np.random.default_rng([self.seed, self.epoch]).permutation(len(units)))
        for k in order[worker::workers]:
            yield from units[k].to_batches(columns=needed, batch_size=self.read_rows)

    def _chunks(self, worker: int, workers: int, rng: np.random.Generator | None
                ) -> Iterator[_Chunk]:  # fmt: skip
        for table in self._tables(worker, workers, rng):
            if table.num_rows == 0:
                continue
            fb = transform_batch(table, self.spec, self.stats, self.transform_device)
            columns = {
                name: _column_array(
                    table.column(name), name, self.dtypes.get(name), self._classes.get(name)
                )
                for name in [*self.labels, *self.spec.keep]
            }
            yield _Chunk(fb.features, fb.validity, columns)

    def _batches(self, worker: int, workers: int) -> Iterator[_Chunk]:
        """Batches of ``batch_size`` rows (the last one shorter unless ``drop_last``)."""
        rng = (np.random.default_rng([self.seed, self.epoch, worker])
               if self.shuffle else None)  # fmt: skip
        size = self.batch_size
        held: list[_Chunk] = []
        rows = 0
        fill = self.shuffle_buffer if rng is not None else size
        for chunk in self._chunks(worker, workers, rng):
            held.append(chunk)
            rows += chunk.rows
            if rows < fill:
                continue
            pool = _Chunk.join(held)
            if rng is not None:
                pool = pool.take(rng.permutation(pool.rows))
            full = (pool.rows // size) * size
            for start in range(0, full, size):
                yield pool.take(slice(start, start + size))
            held = [pool.take(slice(full, pool.rows))] if full < pool.rows else []
            rows = pool.rows - full
        if rows:
            pool = _Chunk.join(held)
            if rng is not None:
                pool = pool.take(rng.permutation(pool.rows))
            for start in range(0, pool.rows, size):
                part = pool.take(slice(start, start + size))
                if part.rows == size or not self.drop_last:
                    yield part

    # -- tensors ----------------------------------------------------------------
    def _item(self, chunk: _Chunk) -> dict[str, Any]:
        arrays: dict[str, np.ndarray[Any, Any]] = {"features": chunk.features}
        if chunk.validity is not None:
            arrays["validity"] = chunk.validity
        arrays.update(chunk.columns)
        if self.output == "numpy":
            return arrays
        if self.output == "jax":
            import jax.numpy as jnp

            return {k: jnp.from_dlpack(np.ascontiguousarray(v)) for k, v in arrays.items()}
        import torch

        out = {}
        for key, value in arrays.items():
            tensor = torch.from_numpy(np.ascontiguousarray(value))  # shares the memory
            if self.pin_memory and self._can_pin():
                tensor = tensor.pin_memory()
            if self.device is not None:
                tensor = tensor.to(self.device, non_blocking=self.pin_memory)
            out[key] = tensor
        return out

    def _can_pin(self) -> bool:
        import torch

        if torch.cuda.is_available():
            return True
        if not getattr(self, "_warned", False):
            self._warned = True
            warnings.warn("pin_memory=True ignored: torch finds no CUDA device", stacklevel=3)
        return False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        worker, workers = 0, 1
        if self.output == "torch":
            from torch.utils.data import get_worker_info

            info = get_worker_info()
            if info is not None:
                worker, workers = info.id, info.num_workers
        batches = self._batches(worker, workers)
        if self.prefetch <= 0:
            for chunk in batches:
                yield self._item(chunk)
            return
        yield from _prefetched((self._item(c) for c in batches), self.prefetch)

    def to_torch(self) -> Any:
        """A ``torch.utils.data.IterableDataset`` of these batches (for a ``DataLoader``)."""
        return _feature_dataset()(self)

    def data_loader(self, num_workers: int = 0, **options: Any) -> Any:
        """A ``torch.utils.data.DataLoader`` over `to_torch`: batches are made here, not collated.

        ``num_workers`` processes each read their share of the row groups; ``options``
        go to ``DataLoader`` (``persistent_workers``, ``multiprocessing_context``...).
        A polars query cannot be read in workers (polars' threads do not survive a
        fork, and a query is not sent to a spawned process): collect it, or write it
        to Parquet, first.
        """
        from torch.utils.data import DataLoader

        from colbridge.io.streams import PolarsLazySource

        if num_workers > 0 and isinstance(self.source, PolarsLazySource):
            msg = (
                "a polars LazyFrame cannot be read in DataLoader workers (polars' threads do "
                "not survive the fork: they hang); pass `lazy.collect()` (a DataFrame), "
                "or write it to Parquet and pass the path, or use num_workers=0"
            )
            raise JobSpecError(msg)
        return DataLoader(self.to_torch(), batch_size=None, num_workers=num_workers, **options)


_DONE = object()


def _prefetched(items: Iterator[Any], depth: int) -> Iterator[Any]:
    """``items`` made on a background thread, up to ``depth`` ahead; errors re-raised here."""
    slots: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                slots.put(item)
        except BaseException as exc:  # handed to the consumer, raised there
            slots.put(exc)
            return
        slots.put(_DONE)

    thread = threading.Thread(target=produce, name="colbridge-loader", daemon=True)
    thread.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                slots.get_nowait()
            except queue.Empty:
                thread.join(timeout=0.01)


def _refuse_target_encoding(encoded: Sequence[str]) -> None:
    # Served rows would be encoded with statistics that saw their own labels; the
    # out-of-fold encoding needs each row's fold, which `colbridge fuse` applies.
    msg = (
        f"column(s) {encoded} are target encoded: a training loader would leak each "
        "row's label into its feature. Write the features out of fold with `colbridge "
        "fuse` (or `FeatureFusion.fit_transform`) and load them as plain columns"
    )
    raise JobSpecError(msg)


def loader(
    input: Any,
    *,
    columns: Sequence[str] | None = None,
    spec: FeatureSpec | None = None,
    stats: FeatureStats | PathLike | None = None,
    dtype: str = "float32",
    validity: bool = False,
    label: str | Sequence[str] | None = None,
    keep: Sequence[str] = (),
    dtypes: Mapping[str, str] | None = None,
    batch_size: int = 1024,
    shuffle: bool = True,
    seed: int = 0,
    shuffle_buffer: int | None = None,
    drop_last: bool = False,
    prefetch: int = 2,
    pin_memory: bool = False,
    device: str | None = None,
    output: str = "torch",
    read_rows: int = DEFAULT_BATCH_ROWS // 4,
    transform_device: str = "auto",
    **encoders: Any,
) -> FeatureLoader:
    """Feature batches of ``input`` for a training loop (see `colbridge.io.loader`).

    Parameters
    ----------
    input : path, glob, folder, list of paths, or a stream
        Parquet/IPC data, a polars ``LazyFrame``, a pyarrow dataset, or anything with
        ``__arrow_c_stream__``.
    columns, dtype, validity : optional
        The feature columns in matrix order, the matrix's element type, and whether
        a validity matrix is served too.
    **encoders
        The transforms, spelled as ``colbridge fuse``'s flags and
        `colbridge.ml.FeatureFusion`'s keywords (``zscore=``, ``minmax=``, ``robust=``,
        ``one_hot=``, ``ids=``, ``log1p=``, ``indicator=``,
        ``fill_null=``, ``clip=``, ``quantile_bins=``, ``hash_buckets=``,
        ``min_frequency=``, ``max_categories=``, ``handle_unknown=``): see
        `colbridge.io.fuse.feature_columns`.
    spec : FeatureSpec, optional
        The features as one spec, instead of the keywords above.
    stats : FeatureStats or path, optional
        Statistics to use; fitted on one pass over ``input`` when not given.
    label : str or list of str, optional
        Columns served as their own tensors (no nulls allowed). A string label is
        served as int64 class ids: its index among the label's sorted classes
        (``label_classes``), fitted with the statistics (`colbridge.io.fuse.fit_stats`'s
        ``labels=``), as scikit-learn's ``LabelEncoder``.
    keep : list of str
        Other columns served alongside (no nulls allowed).
    dtypes : mapping, optional
        Element types of label/kept columns, e.g. ``{"y": "int64"}``.
    batch_size, shuffle, seed, shuffle_buffer, drop_last
        Batches of ``batch_size`` rows; with ``shuffle``, units in a seeded random
        order and rows through a buffer of ``shuffle_buffer`` rows (default 64 batches).
    prefetch : int
        Batches made ahead on a background thread (0: none).
    pin_memory, device
        Torch only: page-locked host memory, and the device batches are moved to.
    output : {"torch", "numpy", "jax"}
        The tensors' library (JAX through DLPack).
    read_rows : int
        Rows read and transformed at a time (a unit larger than this is read in parts).
    transform_device : str
        Where the feature kernels run (``"auto"``, ``"cpu"``, ``"cuda"``).

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq, tempfile, os
    >>> from colbridge.io import loader
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"x": [1.0, 3.0, None, 5.0], "y": [1, 0, 1, 0]}), path)
    >>> batches = loader(path, columns=["x"], fill_null={"x": 0.0}, label="y", batch_size=3,
    ...                  shuffle=False, output="numpy")
    >>> [(b["features"].ravel().tolist(), b["y"].tolist()) for b in batches]
    [([1.0, 3.0, 0.0], [1, 0, 1]), ([5.0], [0])]
    """
    if batch_size < 1:
        msg = f"`batch_size` must be at least 1, got {batch_size}"
        raise JobSpecError(msg)
    if output not in _OUTPUTS:
        msg = f"unknown output {output!r}; use one of {list(_OUTPUTS)}"
        raise JobSpecError(msg)
    if (device is not None or pin_memory) and output != "torch":
        msg = "`device` and `pin_memory` apply to torch batches; use output='torch'"
        raise JobSpecError(msg)
    labels = [label] if isinstance(label, str) else list(label or ())
    if spec is None:
        if not columns:
            msg = "give the feature `columns` (or a `spec`)"
            raise JobSpecError(msg)
        if encoders.get("target_encode"):
            te = encoders["target_encode"]
            _refuse_target_encoding([te] if isinstance(te, str) else list(te))
        config: dict[str, Any] = {
            "columns": feature_columns(columns, **encoders), "dtype": dtype,
            "validity": validity, "keep": list(keep),
        }  # fmt: skip
        spec = FeatureSpec.from_dict(config)
    elif encoders or columns:
        msg = "give the features either as a `spec` or as keywords, not both"
        raise JobSpecError(msg)
    encoded = [t.name for t in spec.columns if t.target_encode]
    if encoded:
        _refuse_target_encoding(encoded)
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(input, pl.DataFrame):
        # its Arrow columns (no copy), read without polars: a DataLoader worker forked
        # from a process whose polars threads run would hang in polars
        input = input.to_arrow()
    source = open_input(input)
    batches = iter_features(source, spec, stats=stats, batch_rows=read_rows,
                            device=transform_device, labels=labels)  # fmt: skip
    return FeatureLoader(
        source, spec, batches.stats, labels=labels, dtypes=dtypes or {},
        batch_size=batch_size, shuffle=shuffle, seed=seed,
        shuffle_buffer=shuffle_buffer or 64 * batch_size, drop_last=drop_last,
        prefetch=prefetch, pin_memory=pin_memory, device=device, output=output,
        read_rows=read_rows, transform_device=transform_device,
    )  # fmt: skip


def _torch_dataset() -> type:
    """`FeatureDataset`, a torch ``IterableDataset`` class made when first asked for.

    A class of the module (not of a function), so that a ``DataLoader`` worker started
    by ``spawn`` finds it by name when it unpickles the dataset; made on first use, so
    that importing colbridge does not import torch.
    """
    from torch.utils.data import IterableDataset

    class FeatureDataset(IterableDataset):  # type: ignore[type-arg,misc]
        """A `FeatureLoader`'s batches as a torch ``IterableDataset``."""

        def __init__(self, loader: FeatureLoader) -> None:
            self.loader = loader

        def __iter__(self) -> Iterator[dict[str, Any]]:
            return iter(self.loader)

    FeatureDataset.__module__ = __name__
    FeatureDataset.__qualname__ = "FeatureDataset"
    return FeatureDataset


def _feature_dataset() -> type:
    cls = globals().get("FeatureDataset")
    if cls is None:
        cls = globals()["FeatureDataset"] = _torch_dataset()
    return cls


def __getattr__(name: str) -> Any:
    # `FeatureDataset` is made (importing torch) when first asked for, by pickle too
    if name == "FeatureDataset":
        return _feature_dataset()
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
