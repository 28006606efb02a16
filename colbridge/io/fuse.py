"""Jobs layer: feature fusion — chosen columns → one feature matrix per batch.

Per-column transforms (fill_null, z-score or min-max scaling, clip, cast) are
built as engine expressions and run in one fused kernel per batch; the results
are written into one ``(rows, features)`` matrix by
`colbridge.columns.to_tensor`, and dictionary/string columns are one-hot
encoded into their own block of it. Statistics come from a first pass over
the data or from a JSON file (`FeatureStats`), so training and serving
transform identically.

Outputs: a Parquet/IPC file with a ``features`` column of Arrow's fixed-shape
tensor type (and ``validity`` when asked), or an iterator of `FeatureBatch`
whose NumPy matrices are DLPack-able (``torch.from_dlpack``).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colbridge.columns import to_tensor
from colbridge.columns.frames import ArrowTableAdapter
from colbridge.errors import ColumnNotFoundError, JobSpecError, UnsupportedTypeError
from colbridge.expr.api import Expr, col
from colbridge.expr.nodes import Agg, Literal
from colbridge.io.progress import JobProgress
from colbridge.io.sink import AtomicWriter
from colbridge.io.source import (
    DEFAULT_BATCH_ROWS,
    parse_memory,
    rows_for_memory,
)
from colbridge.io.streams import InputSource, StreamSource, open_input
from colbridge.plan.logical import Step
from colbridge.runtime.execute import prepare
from colbridge.runtime.pieces import compute_piece, fold_reductions
from colbridge.runtime.report import describe
from colbridge.types import DType, parse_dtype

__all__ = [
    "ColumnTransform",
    "FeatureBatch",
    "FeatureBatches",
    "FeatureSpec",
    "FeatureStats",
    "FuseResult",
    "explain_fuse",
    "fit_stats",
    "fuse",
    "iter_features",
    "transform_batch",
]

PathLike = str | os.PathLike[str]
_STATS_FORMAT = "colbridge-feature-stats"


@dataclass(frozen=True)
class ColumnTransform:
    """How one column becomes features: fill_null → scale → clip → cast (or one-hot)."""

    name: str
    fill_null: float | None = None
    scale: str | None = None
    clip: tuple[float | None, float | None] | None = None
    one_hot: bool = False
    categories: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if self.scale not in (None, "zscore", "minmax"):
            msg = f"column `{self.name}`: unknown scale {self.scale!r}; use 'zscore' or 'minmax'"
            raise JobSpecError(msg)
        if self.one_hot and (self.scale or self.clip or self.fill_null is not None):
            msg = (
                f"column `{self.name}` is one-hot encoded and cannot also be scaled, clipped "
                "or filled; a null category gives an all-zero row"
            )
            raise JobSpecError(msg)


@dataclass(frozen=True)
class FeatureSpec:
    """Columns in matrix order with their transforms, the element type and extras."""

    columns: tuple[ColumnTransform, ...]
    dtype: str = "float32"
    validity: bool = False
    keep: tuple[str, ...] = ()
    ddof: int = 0

    def __post_init__(self) -> None:
        if not self.columns:
            msg = "a feature spec needs at least one column"
            raise JobSpecError(msg)
        dtype = parse_dtype(self.dtype)
        if not dtype.is_numeric:
            msg = f"feature dtype must be numeric, got {self.dtype!r}; use e.g. 'float32'"
            raise JobSpecError(msg)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> FeatureSpec:
        """From ``{"columns": {"a": {"scale": "zscore", ...}, ...}, "dtype": ...}``."""
        cols = spec.get("columns", {})
        if isinstance(cols, (list, tuple)):
            cols = {c: {} for c in cols}
        transforms = []
        for name, cfg in cols.items():
            clip = cfg.get("clip")
            cats = cfg.get("categories")
            transforms.append(
                ColumnTransform(
                    name=name,
                    fill_null=cfg.get("fill_null"),
                    scale=cfg.get("scale"),
                    clip=None if clip is None else (clip[0], clip[1]),
                    one_hot=bool(cfg.get("one_hot", False)),
                    categories=None if cats is None else tuple(cats),
                )
            )
        return cls(
            columns=tuple(transforms),
            dtype=str(spec.get("dtype", "float32")),
            validity=bool(spec.get("validity", False)),
            keep=tuple(spec.get("keep", ())),
            ddof=int(spec.get("ddof", 0)),
        )


@dataclass
class FeatureStats:
    """Per-column statistics (mean, std, min, max) and one-hot categories; JSON on disk."""

    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    ddof: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"format": _STATS_FORMAT, "version": 1, "ddof": self.ddof, "columns": self.columns}

    def save(self, path: PathLike) -> None:
        """Write to a JSON file (atomically)."""
        target = os.path.abspath(os.fspath(path))
        tmp = f"{target}.partial"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2, sort_keys=True)
        os.replace(tmp, target)

    @classmethod
    def load(cls, path: PathLike) -> FeatureStats:
        """Read a file written by `save`."""
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            msg = f"stats file {os.fspath(path)!r} does not exist; fit statistics first"
            raise JobSpecError(msg) from None
        except json.JSONDecodeError as exc:
            msg = f"stats file {os.fspath(path)!r} is not valid JSON: {exc}"
            raise JobSpecError(msg) from None
        if not isinstance(data, dict) or data.get("format") != _STATS_FORMAT:
            msg = f"{os.fspath(path)!r} is not a colbridge feature-stats file"
            raise JobSpecError(msg)
        return cls(columns=dict(data["columns"]), ddof=int(data.get("ddof", 0)))


@dataclass
class FeatureBatch:
    """One batch of features: a ``(rows, width)`` matrix, its validity, and kept columns.

    ``features`` and ``validity`` are NumPy arrays; both support DLPack
    (``torch.from_dlpack(batch.features)`` shares the memory).
    """

    features: np.ndarray[Any, Any]
    validity: np.ndarray[Any, Any] | None
    names: list[str]
    columns: dict[str, pa.Array | pa.ChunkedArray] = field(default_factory=dict)

    def to_arrow(self) -> pa.Table:
        """Return a table: fixed-shape-tensor ``features`` (+ ``validity``, kept columns).

        ``validity`` is stored as a uint8 (0/1) tensor: Arrow cannot turn a bool
        fixed-shape tensor back into a NumPy array.
        """
        data: dict[str, Any] = {
            "features": pa.FixedShapeTensorArray.from_numpy_ndarray(
                np.ascontiguousarray(self.features)
            )
        }
        if self.validity is not None:
            data["validity"] = pa.FixedShapeTensorArray.from_numpy_ndarray(
                np.ascontiguousarray(self.validity).view(np.uint8)
            )
        data.update(self.columns)
        return pa.table(data)


def _base(t: ColumnTransform) -> Expr:
    e = col(t.name).cast("float64")
    if t.fill_null is not None:
        e = e.fill_null(float(t.fill_null))
    return e


def _finite(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def _stat(s: Mapping[str, Any], key: str) -> float | None:
    value = s.get(key)
    if value is None or not _finite(value):
        return None
    return float(value)


def _feature_expr(t: ColumnTransform, stats: FeatureStats, dtype: DType) -> Expr:
    e = _base(t)
    s = stats.columns.get(t.name, {})
    if t.scale == "zscore":
        mean, std = _stat(s, "mean"), _stat(s, "std")
        e = (e - (mean or 0.0)) / (std if std is not None and std > 0 else 1.0)
    elif t.scale == "minmax":
        lo, hi = _stat(s, "min"), _stat(s, "max")
        base = lo if lo is not None else 0.0
        span = hi - base if hi is not None and hi > base else 1.0
        e = (e - base) / span
    if t.clip is not None:
        e = e.clip(t.clip[0], t.clip[1])
    return e.cast(dtype.value)


def _feature_names(spec: FeatureSpec, stats: FeatureStats) -> list[str]:
    names: list[str] = []
    for t in spec.columns:
        if t.one_hot:
            names += [f"{t.name}={c}" for c in _categories(t, stats)]
        else:
            names.append(t.name)
    return names


def _categories(t: ColumnTransform, stats: FeatureStats) -> list[Any]:
    if t.categories is not None:
        return list(t.categories)
    cats = stats.columns.get(t.name, {}).get("categories")
    if cats is None:
        msg = f"no categories for one-hot column `{t.name}`; fit statistics or list them"
        raise JobSpecError(msg)
    return list(cats)


def _codes(array: pa.Array, categories: list[Any]) -> pa.Array:
    """Category index per row (null for a null or unknown value)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        value_set = pa.array(categories, type=array.type.value_type)
        mapping = pc.index_in(array.dictionary, value_set=value_set)
        return mapping.take(array.indices)
    value_set = pa.array(categories, type=array.type)
    return pc.index_in(array, value_set=value_set)


def _batch_categories(array: pa.Array | pa.ChunkedArray) -> list[Any]:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        used = pc.unique(array.indices).drop_null()
        return array.dictionary.take(used).drop_null().to_pylist()  # type: ignore[no-any-return]
    return pc.unique(array).drop_null().to_pylist()  # type: ignore[no-any-return]


def transform_batch(
    batch: pa.RecordBatch | pa.Table, spec: FeatureSpec, stats: FeatureStats, device: str = "auto"
) -> FeatureBatch:
    """Features of one batch, with statistics already known (no pass over other data)."""
    _check_stats(spec, stats)
    dtype = parse_dtype(spec.dtype)
    names = batch.schema.names
    for name in [t.name for t in spec.columns] + list(spec.keep):
        if name not in names:
            msg = f"feature column `{name}` not found; available columns: {names}"
            raise ColumnNotFoundError(msg)
    numeric = [t for t in spec.columns if not t.one_hot]
    n = batch.num_rows
    mat: np.ndarray[Any, Any] | None = None
    valid: np.ndarray[Any, Any] | None = None
    if numeric:
        exprs = {f"f{j}": _feature_expr(t, stats, dtype) for j, t in enumerate(numeric)}
        items = tuple((name, e.node) for name, e in exprs.items())
        table = compute_piece(prepare((Step("select", items),), names), batch, device)
        fm = to_tensor(table, dtype=dtype.numpy, nulls="keep")
        mat, valid = fm.numpy(), fm.validity
    width = len(_feature_names(spec, stats))
    if len(numeric) == len(spec.columns):
        assert mat is not None
        features = mat
    else:
        features = np.zeros((n, width), dtype=dtype.numpy)
        full_valid = np.ones((n, width), dtype=bool)
        pos = 0
        j = 0
        for t in spec.columns:
            if not t.one_hot:
                assert mat is not None
                features[:, pos] = mat[:, j]
                if valid is not None:
                    full_valid[:, pos] = valid[:, j]
                pos += 1
                j += 1
                continue
            cats = _categories(t, stats)
            column = batch.column(t.name)
            codes = _codes(column, cats)
            ok = np.asarray(codes.is_valid())
            rows = np.flatnonzero(ok)
            idx = np.asarray(codes.drop_null(), dtype=np.int64)
            features[rows, pos + idx] = 1
            full_valid[:, pos : pos + len(cats)] = ok[:, None]
            pos += len(cats)
        valid = full_valid if not full_valid.all() else None
    if spec.validity and valid is None:
        valid = np.ones(features.shape, dtype=bool)
    kept = {name: batch.column(name) for name in spec.keep}
    return FeatureBatch(
        features=features,
        validity=valid if spec.validity else None,
        names=_feature_names(spec, stats),
        columns=kept,
    )


def _fit(
    source: InputSource, spec: FeatureSpec, batch_rows: int, device: str
) -> FeatureStats:
    stats = FeatureStats(ddof=spec.ddof)
    scaled = [t for t in spec.columns if t.scale is not None]
    onehot = [t for t in spec.columns if t.one_hot and t.categories is None]
    aggs: list[Agg] = []
    for t in scaled:
        base = _base(t).node
        aggs += [Agg("mean", base), Agg("std", base, spec.ddof), Agg("min", base), Agg("max", base)]
    found: dict[str, set[Any]] = {t.name: set() for t in onehot}
    needed = sorted({t.name for t in scaled} | set(found))
    missing = [c for c in needed if c not in source.schema.names]
    if missing:
        msg = f"feature column `{missing[0]}` not found; available columns: {source.schema.names}"
        raise ColumnNotFoundError(msg)
    if not needed:
        return stats

    def batches() -> Any:
        # one pass over the data: the reductions' partials, and the one-hot categories
        for batch in source.batches(batch_rows, needed):
            for name in found:
                found[name].update(_batch_categories(batch.column(name)))
            yield batch

    if not aggs:
        for _ in batches():
            pass  # categories only: there are no reductions
    else:
        empty = source.schema.empty_table().select(needed)
        values = fold_reductions((), aggs, batches(), empty, device)
        for t in scaled:
            base = _base(t).node

            def value(a: Agg) -> Any:
                lit_ = values[a]
                assert isinstance(lit_, Literal)
                return lit_.value

            stats.columns[t.name] = {
                "mean": value(Agg("mean", base)),
                "std": value(Agg("std", base, spec.ddof)),
                "min": value(Agg("min", base)),
                "max": value(Agg("max", base)),
            }
    for name, cats in found.items():
        try:
            ordered = sorted(cats)
        except TypeError:
            ordered = sorted(cats, key=repr)
        stats.columns[name] = {"categories": ordered}
    return stats


def _open(
    input: Any,
    spec: FeatureSpec,
    batch_rows: int | None,
    memory_limit: str | int | None,
) -> tuple[InputSource, int]:
    source = open_input(input)
    for t in spec.columns:
        if t.name not in source.schema.names:
            msg = f"feature column `{t.name}` not found; available columns: {source.schema.names}"
            raise ColumnNotFoundError(msg)
        typ = source.schema.field(t.name).type
        if t.one_hot and not (
            pa.types.is_dictionary(typ)
            or pa.types.is_string(typ)
            or pa.types.is_large_string(typ)
            or pa.types.is_integer(typ)
        ):
            msg = (
                f"column `{t.name}` of type `{typ}` cannot be one-hot encoded; "
                "use a dictionary, string or integer column"
            )
            raise UnsupportedTypeError(msg)
    rows = batch_rows
    if memory_limit is not None:
        rows = rows_for_memory(source, parse_memory(memory_limit), batch_rows)
    return source, rows or DEFAULT_BATCH_ROWS


def _stats_for(
    source: InputSource,
    spec: FeatureSpec,
    stats: FeatureStats | PathLike | None,
    rows: int,
    device: str,
) -> FeatureStats:
    if isinstance(stats, FeatureStats):
        _check_stats(spec, stats)
        return stats
    if stats is not None:
        loaded = FeatureStats.load(stats)
        _check_stats(spec, loaded, f"stats file {os.fspath(stats)!r}")
        return loaded
    return _fit(source, spec, rows, device)


#: The statistics each scaling reads.
_NEEDED_STATS = {"zscore": ("mean", "std"), "minmax": ("min", "max")}


def _check_stats(spec: FeatureSpec, stats: FeatureStats, where: str = "the statistics") -> None:
    """Refuse statistics that lack what a transform of ``spec`` reads.

    Scaling a column with a missing mean (say) would silently write the raw values:
    training and serving would then disagree. A statistic that is present but null
    (the fit saw no value in the column) is kept: the column is then all null.

    Raises
    ------
    JobSpecError
        Naming the column, the statistic and the transform.
    """
    for t in spec.columns:
        needed = _NEEDED_STATS.get(t.scale or "", ())
        entry = stats.columns.get(t.name)
        for key in needed:
            if entry is None or key not in entry:
                msg = (
                    f"{where} has no `{key}` for column `{t.name}`, which `{t.scale}` needs; "
                    "fit statistics that include the column (e.g. `colbridge fuse ... "
                    "--save-stats stats.json` on the training data), or leave out `--stats`"
                )
                raise JobSpecError(msg)
        if t.one_hot and t.categories is None and (entry is None or "categories" not in entry):
            msg = (
                f"{where} has no `categories` for one-hot column `{t.name}`; fit statistics "
                "that include the column, or list its categories in the spec"
            )
            raise JobSpecError(msg)


def fit_stats(
    input: Any,
    spec: FeatureSpec,
    *,
    batch_rows: int | None = None,
    device: str = "auto",
) -> FeatureStats:
    """Statistics of the spec's scaled columns and categories of its one-hot columns (one pass)."""
    source, rows = _open(input, spec, batch_rows, None)
    return _fit(source, spec, rows, device)


class FeatureBatches:
    """A re-iterable stream of `FeatureBatch` over a dataset, with fixed statistics."""

    def __init__(
        self,
        source: InputSource,
        spec: FeatureSpec,
        stats: FeatureStats,
        batch_rows: int,
        device: str,
    ) -> None:
        self.source = source
        self.spec = spec
        self.stats = stats
        self.batch_rows = batch_rows
        self.device = device
        self.names = _feature_names(spec, stats)

    def __iter__(self) -> Iterator[FeatureBatch]:
        needed = list(dict.fromkeys([t.name for t in self.spec.columns] + list(self.spec.keep)))
        for batch in self.source.batches(self.batch_rows, needed):
            yield transform_batch(batch, self.spec, self.stats, self.device)

    def to_torch(self) -> Any:
        """Wrap as a ``torch.utils.data.IterableDataset`` of dicts of tensors.

        Each item holds ``features`` (and ``validity``) shared with the batch's
        fresh matrix (DLPack, no copy), and every ``keep`` column (a label, say):
        numeric, bool and temporal ones as tensors (copied once from the batch, with
        ``<name>_validity`` when they hold nulls), others (strings) as Python lists.
        Use with ``DataLoader(ds, batch_size=None)``: each item is already a batch.
        """
        import torch
        from torch.utils.data import IterableDataset

        outer = self

        class _Dataset(IterableDataset):  # type: ignore[type-arg,misc]
            def __iter__(self) -> Iterator[dict[str, Any]]:
                from_dlpack: Any = getattr(torch, "from_dlpack")  # noqa: B009
                for fb in outer:
                    item = {"features": from_dlpack(fb.features)}
                    if fb.validity is not None:
                        item["validity"] = from_dlpack(fb.validity)
                    for name, column in fb.columns.items():
                        item.update(_kept_for_torch(name, column))
                    yield item

        return _Dataset()


def _kept_for_torch(name: str, column: pa.Array | pa.ChunkedArray) -> dict[str, Any]:
    """A kept column for torch: a tensor (and its validity when it has nulls), or a list."""
    import torch

    from colbridge.columns import to_torch
    from colbridge.types import tensor_spec

    try:
        tensor_spec(column.type, name)
    except UnsupportedTypeError:
        return {name: column.to_pylist()}  # strings and the like: no tensor form
    out = {name: to_torch(column, nulls="keep")}
    if column.null_count:
        valid = column.is_valid()
        if isinstance(valid, pa.ChunkedArray):
            valid = valid.combine_chunks()
        mask = np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)
        out[f"{name}_validity"] = torch.from_numpy(mask)
    return out


def iter_features(
    input: Any,
    spec: FeatureSpec,
    *,
    stats: FeatureStats | PathLike | None = None,
    batch_rows: int | None = None,
    memory_limit: str | int | None = None,
    device: str = "auto",
) -> FeatureBatches:
    """Feature batches of ``input``; fits statistics first (one pass) unless ``stats`` is given.

    ``input`` is a path, glob or folder of Parquet/IPC files, or a stream (a polars
    ``LazyFrame``, a pyarrow dataset, anything with ``__arrow_c_stream__``).
    """
    source, rows = _open(input, spec, batch_rows, memory_limit)
    if isinstance(source, StreamSource):  # fitting reads the input once more
        source.plan_passes(1 if stats is not None else 2)
    fitted = _stats_for(source, spec, stats, rows, device)
    return FeatureBatches(source, spec, fitted, rows, device)


@dataclass(frozen=True)
class FuseResult:
    """What `fuse` wrote."""

    output: str
    rows: int
    width: int
    names: list[str]
    stats: FeatureStats
    seconds: float


def fuse(
    input: Any,
    output: PathLike,
    spec: FeatureSpec,
    *,
    stats: FeatureStats | PathLike | None = None,
    save_stats: PathLike | None = None,
    batch_rows: int | None = None,
    memory_limit: str | int | None = None,
    device: str = "auto",
    output_format: str | None = None,
    progress: bool = False,
) -> FuseResult:
    """Write the feature matrix of ``input`` to ``output`` (Parquet/IPC, atomically).

    The file has a ``features`` column of type ``fixed_shape_tensor(dtype, [width])``,
    a ``validity`` column of the same shape (uint8, 1 = valid) when ``spec.validity``, and the
    ``spec.keep`` columns; the feature names are in the schema metadata under
    ``colbridge.features``. ``save_stats`` writes the statistics used, for serving.
    """
    start = time.perf_counter()
    batches = iter_features(
        input, spec, stats=stats, batch_rows=batch_rows, memory_limit=memory_limit, device=device
    )
    if save_stats is not None:
        batches.stats.save(save_stats)
    meta = {b"colbridge.features": json.dumps(batches.names).encode()}
    total = batches.source.count_rows()
    out = os.path.abspath(os.fspath(output))
    if any(os.path.abspath(f) == out for f in batches.source.files):
        msg = f"output {os.fspath(output)!r} is also an input file; write to another path"
        raise JobSpecError(msg)
    with JobProgress(progress) as bar, AtomicWriter(out, format=output_format, metadata=meta) as w:
        bar.start("fusing", total)
        for fb in batches:
            table = fb.to_arrow()
            w.write(table)
            bar.advance(table.num_rows, fb.features.nbytes)
        if w.rows == 0:
            dtype = parse_dtype(spec.dtype)
            empty = FeatureBatch(
                np.zeros((0, len(batches.names)), dtype=dtype.numpy),
                np.zeros((0, len(batches.names)), dtype=bool) if spec.validity else None,
                batches.names,
                {k: pa.array([], type=batches.source.schema.field(k).type) for k in spec.keep},
            )
            w.write(empty.to_arrow())
        rows = w.rows
    return FuseResult(
        out, rows, len(batches.names), batches.names, batches.stats, time.perf_counter() - start
    )


def explain_fuse(
    input: Any,
    spec: FeatureSpec,
    *,
    stats: FeatureStats | PathLike | None = None,
    batch_rows: int | None = None,
    memory_limit: str | int | None = None,
    device: str = "auto",
) -> str:
    """Describe the fused per-batch plan; with ``stats`` given only metadata is read."""
    source, rows = _open(input, spec, batch_rows, memory_limit)
    fitted = _stats_for(source, spec, stats, rows, device)
    dtype = parse_dtype(spec.dtype)
    if isinstance(source, StreamSource):
        read = source.describe()
    else:
        read = f"{len(source.files)} {source.format} file(s), {source.count_rows()} rows"
    numeric = [t for t in spec.columns if not t.one_hot]
    names = _feature_names(spec, fitted)
    lines = [
        f"colbridge fuse over {read}",
        f"matrix: {len(names)} {dtype} features per row, batches of up to {rows} rows",
        "features: " + ", ".join(names),
    ]
    if numeric:
        exprs = {t.name: _feature_expr(t, fitted, dtype) for t in numeric}
        empty = source.schema.empty_table()
        items = tuple((name, e.node) for name, e in exprs.items())
        plan = prepare((Step("select", items),), empty.column_names)
        report = describe(plan, ArrowTableAdapter(empty), device=device)
        lines += report.to_text().splitlines()[1:]
    return "\n".join(lines)
