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
import numbers
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from colbridge.columns import to_tensor
from colbridge.columns.frames import ArrowTableAdapter
from colbridge.errors import (
    ColumnNotFoundError,
    InvalidOperationError,
    JobSpecError,
    UnsupportedTypeError,
)
from colbridge.expr.api import Expr, col, when
from colbridge.expr.nodes import Agg, Literal
from colbridge.io.encoders import (
    NULL_ID,
    CategoryIndex,
    CategoryTotals,
    add_target_rows,
    category_array,
    check_kind,
    fnv1a64,
    fold_columns,
    fold_encodings,
    folds_of,
    id_order,
    infrequent_mask,
    linear_quantiles,
    quantile_edges,
    scatter_one_hot,
    sort_categories,
)
from colbridge.io.progress import JobProgress
from colbridge.io.sink import AtomicWriter
from colbridge.io.source import (
    DEFAULT_BATCH_ROWS,
    parse_memory,
    rows_for_memory,
)
from colbridge.io.streams import InputSource, StreamSource, empty_table, open_input
from colbridge.memory import one_array
from colbridge.plan.logical import Step
from colbridge.runtime.execute import prepare
from colbridge.runtime.pieces import compute_piece, fold_reductions
from colbridge.runtime.report import describe
from colbridge.types import DType, parse_dtype

__all__ = [
    "ColumnTransform",
    "FeatureBatch",
    "FeatureBatches",
    "FeaturePlan",
    "FeatureSpec",
    "FeatureStats",
    "FuseResult",
    "explain_fuse",
    "feature_columns",
    "feature_names",
    "fit_stats",
    "fuse",
    "iter_features",
    "transform_batch",
]

PathLike = str | os.PathLike[str]
_STATS_FORMAT = "colbridge-feature-stats"


#: How unseen categories of a one-hot column are written.
HANDLE_UNKNOWN = ("ignore", "error", "infrequent_if_exist")
#: Name of the one-hot column of infrequent categories (after the column's ``=``).
INFREQUENT = "<infrequent>"
#: Suffix of a missing-value indicator column's name.
MISSING_SUFFIX = "_missing"
#: Name of the one-hot column of null values (after the column's ``=``).
NULL_CATEGORY = "<null>"
#: Fill values fitted on the data (scikit-learn's ``SimpleImputer`` strategies), the
#: other choice of ``fill_null`` besides a number.
FILL_STRATEGIES = ("mean", "median", "most_frequent")
#: Date/time parts a ``datetime`` column gives, with the period of their sin/cos pair
#: (``cyclical``): a number, or the days of the value's own month or year.
DATE_PARTS: dict[str, int | str] = {
    "month": 12, "weekday": 7, "day": "days_in_month", "ordinal_day": "days_in_year",
    "hour": 24, "minute": 60,
}  # fmt: skip
#: Parts counted from 1 (polars' values); their angle is taken from ``value - 1``.
_ONE_BASED = frozenset({"month", "weekday", "day", "ordinal_day"})
#: Parts that a Date has (no time of day) and that a Time has (no date).
_DATE_ONLY = frozenset({"month", "weekday", "day", "ordinal_day"})
_TIME_ONLY = frozenset({"hour", "minute"})


def _plain_number(value: Any) -> Any:
    """A NumPy integer or float as Python's (``np.int64(2)`` from a parameter grid).

    So that it is checked as one and written to the statistics file; anything else as is.
    """
    if isinstance(value, bool | np.bool_):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _check_min_frequency(name: str, value: float | None) -> None:
    if value is None:
        return
    ok = (
        value >= 1
        if isinstance(value, int) and not isinstance(value, bool)
        else isinstance(value, float) and 0.0 < value < 1.0
    )
    if not ok:
        msg = (
            f"column `{name}`: `min_frequency` must be an integer count >= 1 or a fraction "
            f"between 0 and 1 (exclusive), got {value!r}"
        )
        raise JobSpecError(msg)


@dataclass(frozen=True)
class ColumnTransform:
    """How one column becomes features.

    A numeric column: fill_null → log1p → scale (``zscore``, ``minmax``, ``robust``)
    or ``quantile_bins`` → clip → cast, one feature. A categorical column is one of
    ``one_hot`` (a block of 0/1 features), ``ids`` (one integer id per row; hashed
    into ``hash_buckets`` when given) or ``target_encode`` (one float). A Date,
    Datetime or Time column gives the ``datetime`` parts (`DATE_PARTS`), one integer
    feature each, or with ``cyclical`` a sin/cos pair each; ``fill_null`` fills them.
    ``indicator`` adds a feature after the column's: 1 where the value is null (or NaN).

    ``fill_null`` is a number, or one of `FILL_STRATEGIES` for a numeric column: the
    column's mean, median or most frequent value (the smallest among ties), fitted
    over its non-null, non-NaN values as scikit-learn's ``SimpleImputer`` does; the
    scaling statistics are then fitted on the filled column. A categorical column
    (``one_hot``, ``ids``, ``hash_buckets``, ``target_encode``) takes ``"most_frequent"``
    only: its nulls become its most frequent category (counted by value; the smallest
    among ties), and the encoder is fitted on and applied to the filled column, as in
    ``make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder())``: no null
    reaches the encoder, so there is no null category.
    """

    name: str
    fill_null: float | str | None = None
    scale: str | None = None
    clip: tuple[float | None, float | None] | None = None
    one_hot: bool = False
    categories: tuple[Any, ...] | None = None
    ids: bool = False
    hash_buckets: int | None = None
    target_encode: bool = False
    min_frequency: float | None = None
    max_categories: int | None = None
    handle_unknown: str = "ignore"
    log1p: bool = False
    indicator: bool = False
    quantile_bins: int | None = None
    datetime: tuple[str, ...] | None = None
    cyclical: bool = False

    def __post_init__(self) -> None:
        for key in ("min_frequency", "max_categories", "hash_buckets", "quantile_bins"):
            object.__setattr__(self, key, _plain_number(getattr(self, key)))
        self._check_datetime()
        self._check_fill()
        if self.scale not in (None, "zscore", "minmax", "robust"):
            msg = (
                f"column `{self.name}`: unknown scale {self.scale!r}; "
                "use 'zscore', 'minmax' or 'robust'"
            )
            raise JobSpecError(msg)
        for option in ("hash_buckets", "quantile_bins", "max_categories"):
            _check_count(f"column `{self.name}`: `{option}`", getattr(self, option))
        if self.hash_buckets is not None:
            object.__setattr__(self, "ids", True)
            if self.hash_buckets < 1:
                msg = f"column `{self.name}`: `hash_buckets` must be >= 1, got {self.hash_buckets}"
                raise JobSpecError(msg)
        kinds = self._encodings()
        if self.datetime is not None:
            kinds.append("datetime")
        if len(kinds) > 1:
            msg = (
                f"column `{self.name}` is given two encodings ({', '.join(kinds)}); "
                "choose one per column"
            )
            raise JobSpecError(msg)
        # a categorical column is filled with its most frequent category, never a number
        filled = self.fill_null is not None and self.fill_strategy != "most_frequent"
        numeric = self.scale or self.clip or filled or self.log1p or self.quantile_bins is not None
        if kinds == ["datetime"] and (
            self.scale or self.clip or self.log1p or self.quantile_bins is not None
        ):
            msg = (
                f"column `{self.name}` gives date parts, which cannot also be scaled, clipped, "
                "log1p-ed or binned; only `fill_null` and `indicator` apply to them"
            )
            raise JobSpecError(msg)
        if kinds and kinds != ["datetime"] and numeric:
            msg = (
                f"column `{self.name}` is encoded as {kinds[0]} and cannot also be scaled, "
                "clipped, filled with a number, log1p-ed or binned; a null category has its "
                "own encoding, or `fill_null='most_frequent'` fills it with the most frequent "
                "category"
            )
            raise JobSpecError(msg)
        if self.quantile_bins is not None:
            if self.scale is not None:
                msg = f"column `{self.name}`: `quantile_bins` replaces scaling; drop `{self.scale}`"
                raise JobSpecError(msg)
            if self.quantile_bins < 2:  # as KBinsDiscretizer: one bin is a constant
                msg = (
                    f"column `{self.name}`: `quantile_bins` must be >= 2, got {self.quantile_bins}"
                )
                raise JobSpecError(msg)
        lower, upper = self.clip if self.clip is not None else (None, None)
        if lower is not None and upper is not None and lower > upper:
            msg = (
                f"column `{self.name}`: `clip` bounds {(lower, upper)} have the lower one "
                "above the upper one; give (lower, upper)"
            )
            raise JobSpecError(msg)
        if self.handle_unknown not in HANDLE_UNKNOWN:
            msg = (
                f"column `{self.name}`: unknown `handle_unknown` {self.handle_unknown!r}; "
                f"use one of {', '.join(repr(h) for h in HANDLE_UNKNOWN)}"
            )
            raise JobSpecError(msg)
        _check_min_frequency(self.name, self.min_frequency)
        if self.max_categories is not None and self.max_categories < 1:
            msg = f"column `{self.name}`: `max_categories` must be >= 1, got {self.max_categories}"
            raise JobSpecError(msg)
        limited = self.min_frequency is not None or self.max_categories is not None
        if limited and self.categories is not None:
            msg = (
                f"column `{self.name}` lists its categories: `min_frequency` and "
                "`max_categories` need counts from a fit; drop one or the other"
            )
            raise JobSpecError(msg)
        if limited and self.hash_buckets is not None:
            msg = (
                f"column `{self.name}` is hashed into buckets: `min_frequency` and "
                "`max_categories` do not apply; drop them or `hash_buckets`"
            )
            raise JobSpecError(msg)

    def _check_fill(self) -> None:
        fill = self.fill_null
        if not isinstance(fill, str):
            return
        if fill not in FILL_STRATEGIES:
            msg = (
                f"column `{self.name}`: unknown `fill_null` strategy {fill!r}; give a number or "
                f"one of {', '.join(repr(s) for s in FILL_STRATEGIES)}"
            )
            raise JobSpecError(msg)
        kinds = self._encodings()
        kinds += ["hash_buckets"] if self.hash_buckets is not None and not kinds else []
        if kinds and fill != "most_frequent":
            msg = (
                f"column `{self.name}` is encoded as {kinds[0]}: `fill_null={fill!r}` fills "
                "numeric columns only; a categorical column is filled with its most frequent "
                "category (`fill_null='most_frequent'`), or its null keeps its own encoding "
                "(a `<null>` one-hot column, the null id 0, its own target mean)"
            )
            raise JobSpecError(msg)
        if self.datetime is not None:
            msg = (
                f"column `{self.name}` gives date parts, which are filled with a number only "
                f"(`fill_null={{'{self.name}': -1}}`), not with {fill!r}"
            )
            raise JobSpecError(msg)

    def _encodings(self) -> list[str]:
        """The categorical encodings the column is given (one at most, once checked)."""
        return [k for k in ("one_hot", "ids", "target_encode") if getattr(self, k)]

    @property
    def fill_strategy(self) -> str | None:
        """The fitted fill (one of `FILL_STRATEGIES`), or None for a number or no fill."""
        return self.fill_null if isinstance(self.fill_null, str) else None

    @property
    def fills_category(self) -> bool:
        """Whether the column is categorical and filled with its most frequent category.

        Its fill value is a category (a string or an integer), fitted by value and
        written into the column before its encoder, never into a kernel.
        """
        return self.fill_strategy is not None and bool(
            self._encodings() or self.hash_buckets is not None
        )

    def _check_datetime(self) -> None:
        parts = self.datetime
        if isinstance(parts, str):
            parts = (parts,)
        if parts is not None:
            parts = tuple(parts)
            object.__setattr__(self, "datetime", parts)
            choices = ", ".join(DATE_PARTS)
            if not parts:
                msg = (
                    f"column `{self.name}`: `datetime` needs at least one part; "
                    f"choose from {choices}"
                )
                raise JobSpecError(msg)
            for part in parts:
                if part not in DATE_PARTS:
                    msg = f"column `{self.name}`: unknown date part {part!r}; choose from {choices}"
                    raise JobSpecError(msg)
            if len(set(parts)) != len(parts):
                msg = f"column `{self.name}`: a date part is asked twice in {list(parts)}"
                raise JobSpecError(msg)
        if self.cyclical and parts is None:
            msg = (
                f"column `{self.name}`: `cyclical` writes date parts as sin/cos pairs; give the "
                f"parts with `datetime` (e.g. datetime={{'{self.name}': ['hour']}})"
            )
            raise JobSpecError(msg)

    @property
    def kind(self) -> str:
        """``"one_hot"``, ``"ids"``, ``"target"``, ``"datetime"`` or ``"numeric"``."""
        if self.datetime is not None:
            return "datetime"
        if self.one_hot:
            return "one_hot"
        if self.ids:
            return "ids"
        if self.target_encode:
            return "target"
        return "numeric"


_COLUMN_FIELDS = (
    "fill_null", "scale", "one_hot", "ids", "hash_buckets", "target_encode", "min_frequency",
    "max_categories", "handle_unknown", "log1p", "indicator", "quantile_bins", "cyclical",
)  # fmt: skip


@dataclass(frozen=True)
class FeatureSpec:
    """Columns in matrix order with their transforms, the element type and extras.

    ``target`` names the label column that ``target_encode`` columns are fitted on;
    ``folds`` and ``seed`` fix the out-of-fold assignment of the training rows, and
    ``smoothing`` is a float or ``"auto"`` (scikit-learn's ``TargetEncoder.smooth``).
    """

    columns: tuple[ColumnTransform, ...]
    dtype: str = "float32"
    validity: bool = False
    keep: tuple[str, ...] = ()
    ddof: int = 0
    target: str | None = None
    folds: int = 5
    smoothing: float | str = "auto"
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.columns:
            msg = "a feature spec needs at least one column"
            raise JobSpecError(msg)
        dtype = parse_dtype(self.dtype)
        if not dtype.is_numeric:
            msg = f"feature dtype must be numeric, got {self.dtype!r}; use e.g. 'float32'"
            raise JobSpecError(msg)
        encoded = [t.name for t in self.columns if t.target_encode]
        if encoded and self.target is None:
            msg = (
                f"column `{encoded[0]}` is target encoded but no target is given; "
                "pass `target=` (`--target` on the command line)"
            )
            raise JobSpecError(msg)
        _check_count("`folds`", self.folds)
        _check_count("`seed`", self.seed)
        if self.folds < 2:
            msg = f"`folds` must be >= 2 (out-of-fold target encoding), got {self.folds}"
            raise JobSpecError(msg)
        if self.smoothing != "auto" and not (
            isinstance(self.smoothing, (int, float)) and self.smoothing >= 0
        ):
            msg = f"`smoothing` must be 'auto' or a number >= 0, got {self.smoothing!r}"
            raise JobSpecError(msg)

    @property
    def target_encoded(self) -> bool:
        """Whether a column is target encoded (its training rows are encoded out of fold)."""
        return any(t.target_encode for t in self.columns)

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
            parts = cfg.get("datetime")
            options = {k: cfg[k] for k in _COLUMN_FIELDS if cfg.get(k) is not None}
            transforms.append(
                ColumnTransform(
                    name=name,
                    clip=None if clip is None else (clip[0], clip[1]),
                    categories=None if cats is None else tuple(cats),
                    datetime=None if parts is None else tuple(_parts(parts)),
                    **options,
                )
            )
        smoothing = spec.get("smoothing", "auto")
        if smoothing != "auto":
            try:
                smoothing = float(smoothing)
            except (TypeError, ValueError):
                msg = f"`smoothing` must be 'auto' or a number >= 0, got {smoothing!r}"
                raise JobSpecError(msg) from None
        return cls(
            columns=tuple(transforms),
            dtype=str(spec.get("dtype", "float32")),
            validity=bool(spec.get("validity", False)),
            keep=tuple(spec.get("keep", ())),
            ddof=int(spec.get("ddof", 0)),
            target=spec.get("target"),
            folds=spec.get("folds", 5),
            smoothing=smoothing,
            seed=spec.get("seed", 0),
        )


def _check_count(what: str, value: Any) -> None:
    """Refuse a count that is not a whole number (``folds=2.9`` ran as 2 folds)."""
    if value is None or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        return
    msg = f"{what} must be a whole number, got {value!r}"
    raise JobSpecError(msg)


def _parts(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def feature_columns(
    columns: Any = (),
    *,
    zscore: Any = (),
    minmax: Any = (),
    robust: Any = (),
    one_hot: Any = (),
    ids: Any = (),
    target_encode: Any = (),
    log1p: Any = (),
    indicator: Any = (),
    fill_null: Mapping[str, float | str | None] | None = None,
    clip: Mapping[str, tuple[float | None, float | None]] | None = None,
    quantile_bins: Mapping[str, int] | None = None,
    hash_buckets: Mapping[str, int] | None = None,
    datetime: Mapping[str, str | Sequence[str]] | None = None,
    cyclical: Any = (),
    min_frequency: float | None = None,
    max_categories: int | None = None,
    handle_unknown: str | None = None,
    base: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per-column settings (the ``columns`` of `FeatureSpec.from_dict`) from flag-style lists.

    The command line's ``--zscore a,b --one-hot c ...`` and `colbridge.ml.FeatureFusion`'s
    keywords both go through here, so one spec reads the same in a shell and in Python.
    Columns are in the order of ``base``, then ``columns``, then first mention.
    ``min_frequency`` and ``max_categories`` apply to every one-hot and (unhashed) ids
    column, ``handle_unknown`` to every one-hot column, unless the column sets its own.
    ``datetime`` maps a column to its date parts; ``cyclical`` lists the columns whose
    parts are written as sin/cos pairs. ``fill_null`` maps a column to a number or to
    one of `FILL_STRATEGIES` (``"mean"``, ``"median"``, ``"most_frequent"``).

    Examples
    --------
    >>> feature_columns(["ts"], datetime={"ts": ["hour", "weekday"]}, cyclical=["ts"])
    {'ts': {'datetime': ['hour', 'weekday'], 'cyclical': True}}
    >>> feature_columns(zscore=["x"], fill_null={"x": "median"})
    {'x': {'scale': 'zscore', 'fill_null': 'median'}}
    """
    out: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (base or {}).items()}

    def names(value: Any) -> list[str]:
        return [value] if isinstance(value, str) else list(value or ())

    for name in names(columns):
        out.setdefault(name, {})
    for key, value in (("zscore", zscore), ("minmax", minmax), ("robust", robust)):
        for name in names(value):
            cfg = out.setdefault(name, {})
            if cfg.get("scale", key) != key:
                msg = (
                    f"column `{name}` is given two scalings ({cfg['scale']}, {key}); "
                    "choose one per column"
                )
                raise JobSpecError(msg)
            cfg["scale"] = key
    flags = (
        ("one_hot", one_hot), ("ids", ids), ("target_encode", target_encode),
        ("log1p", log1p), ("indicator", indicator),
    )  # fmt: skip
    for key, value in flags:
        for name in names(value):
            out.setdefault(name, {})[key] = True
    for name, parts in (datetime or {}).items():
        out.setdefault(name, {})["datetime"] = _parts(parts)
    for name in names(cyclical):
        out.setdefault(name, {})["cyclical"] = True
    for name, (lo, hi) in (clip or {}).items():
        out.setdefault(name, {})["clip"] = [lo, hi]
    Fills = Mapping[str, float | str | None]
    mappings: tuple[tuple[str, Fills | Mapping[str, int] | None], ...] = (
        ("fill_null", fill_null), ("quantile_bins", quantile_bins), ("hash_buckets", hash_buckets),
    )  # fmt: skip
    for key, mapping in mappings:
        for name, v in (mapping or {}).items():
            out.setdefault(name, {})[key] = v
    for cfg in out.values():
        counted = cfg.get("one_hot") or (cfg.get("ids") and "hash_buckets" not in cfg)
        if counted and "categories" not in cfg:
            if min_frequency is not None:
                cfg.setdefault("min_frequency", min_frequency)
            if max_categories is not None:
                cfg.setdefault("max_categories", max_categories)
        if cfg.get("one_hot") and handle_unknown is not None:
            cfg.setdefault("handle_unknown", handle_unknown)
    return out


#: Versions of the statistics file this code reads; it writes the last one.
STATS_VERSIONS = (1, 2, 3, 4)


@dataclass
class FeatureStats:
    """Fitted statistics, per column; one versioned JSON file on disk.

    Per column, as its transform needs: ``mean``/``std`` (zscore), ``min``/``max``
    (minmax), ``median``/``q25``/``q75`` (robust), ``bin_edges`` (quantile bins),
    ``categories`` with their ``counts`` and the fitting ``rows`` (one-hot, ids), and
    per-fold target sums (target encoding). Version 2 added all but the first two
    groups and the categories; a version-1 file still reads. Version 3 counts a null
    as a category of its own (one-hot and target-encoded columns, as scikit-learn's
    encoders do): a JSON ``null`` last in ``categories`` when the fit saw nulls. A file
    of version 1 or 2 keeps its meaning: a null one-hot value gives an all-zero block
    (whatever ``handle_unknown`` says) and a null target-encoded one the target mean.
    Version 4 adds the fitted fill value of a column filled by a strategy
    (``fill_value``: a number, or the category of a categorical column; with the
    ``fill_strategy`` it was fitted by); a file of an older version has none, so a
    spec asking for a fitted fill cannot apply it (an error). A string label column
    of `colbridge.io.loader` has its sorted ``classes`` (fitted with ``labels=``);
    readers that serve no labels ignore them.
    A file is saved at the version it was read with; a fit writes version 4. In
    memory a list may be held as a NumPy array; `to_dict` and `save` write plain
    JSON lists.
    """

    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    ddof: int = 0
    version: int = STATS_VERSIONS[-1]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (NumPy arrays held in memory become lists)."""
        columns = {
            name: {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in entry.items()}
            for name, entry in self.columns.items()
        }
        return {
            "format": _STATS_FORMAT, "version": self.version, "ddof": self.ddof,
            "columns": columns,
        }  # fmt: skip

    def save(self, path: PathLike) -> None:
        """Write to a JSON file (atomically)."""
        target = os.path.abspath(os.fspath(path))
        tmp = f"{target}.partial"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2, sort_keys=True)
        os.replace(tmp, target)

    @classmethod
    def from_dict(cls, data: Any, where: str = "the statistics") -> FeatureStats:
        """Read the dict of `to_dict`; refuses another format or an unknown version."""
        if not isinstance(data, dict) or data.get("format") != _STATS_FORMAT:
            msg = f"{where} is not a colbridge feature-stats file"
            raise JobSpecError(msg)
        version = data.get("version")
        # exactly an integer: JSON's `true` and `4.0` compare equal to 1 and 4
        if type(version) is not int or version not in STATS_VERSIONS:
            msg = (
                f"{where} has version {version!r}, which this colbridge cannot read "
                f"(it reads versions {', '.join(map(str, STATS_VERSIONS))}); refit the "
                "statistics with this version, or upgrade colbridge"
            )
            raise JobSpecError(msg)
        return cls(
            columns=dict(data["columns"]), ddof=int(data.get("ddof", 0)), version=int(version)
        )

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
        return cls.from_dict(data, f"stats file {os.fspath(path)!r}")


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


def _base(t: ColumnTransform, fill: float | None) -> Expr:
    """The column as float64, its nulls filled with ``fill``, then ``log1p`` when asked.

    What the column's scaling statistics are fitted on and applied to: the fill comes
    first, as in ``make_pipeline(SimpleImputer(...), StandardScaler())``.
    """
    e = col(t.name).cast("float64")
    if fill is not None:
        e = e.fill_null(fill)
    if t.log1p:
        e = e.log1p()
    return e


def _fill_value(t: ColumnTransform, stats: FeatureStats) -> float | None:
    """The number ``t``'s nulls are filled with: its own, or the fitted one in ``stats``.

    For a numeric column; a categorical one's fill is a category (`_category_fill`).
    """
    if t.fill_null is None or t.fills_category:
        return None
    if t.fill_strategy is None:
        return float(t.fill_null)
    value = stats.columns[t.name]["fill_value"]
    return None if value is None else float(value)


def _category_fill(t: ColumnTransform, stats: FeatureStats) -> Any:
    """The category ``t``'s nulls become (a string or an integer, as fitted), or None."""
    return stats.columns[t.name]["fill_value"] if t.fills_category else None


def _fill_scalar(name: str, value: Any, typ: pa.DataType) -> pa.Scalar:
    try:
        return pa.scalar(value, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        msg = (
            f"column `{name}` of type `{typ}` cannot be filled with its fitted most frequent "
            f"category {value!r}: the statistics were fitted on a column of another type; "
            "refit them on data of this type"
        )
        raise JobSpecError(msg) from None


def _fill_categories(name: str, column: pa.Array | pa.ChunkedArray, value: Any) -> pa.Array:
    """A categorical column with its nulls set to the category ``value``.

    A dictionary column keeps its codes: ``value`` is appended to its dictionary (a
    null entry of the dictionary becomes ``value`` too), and the null rows point at it;
    the codes of a category may then differ from one batch to the next, which is why
    everything downstream reads categories by value. A column without nulls is
    returned as it is (no copy).
    """
    array = one_array(column)
    if value is None:
        return array
    if pa.types.is_dictionary(array.type):
        dictionary, indices = array.dictionary, array.indices
        if not indices.null_count and not dictionary.null_count:
            return array
        fill = _fill_scalar(name, value, dictionary.type)
        position = len(dictionary)
        entries = pa.concat_arrays(
            [dictionary.fill_null(fill), pa.array([fill.as_py()], dictionary.type)]
        )
        if position > np.iinfo(indices.type.to_pandas_dtype()).max:
            indices = indices.cast(pa.int64())
        return pa.DictionaryArray.from_arrays(
            indices.fill_null(position), entries, ordered=array.type.ordered
        )
    if not array.null_count:
        return array
    return pc.fill_null(array, _fill_scalar(name, value, array.type))


def _fill_batch(
    batch: pa.RecordBatch | pa.Table, fills: Mapping[str, Any]
) -> pa.RecordBatch | pa.Table:
    """``batch`` with each categorical column of ``fills`` filled with its category."""
    for name, value in fills.items():
        i = batch.schema.get_field_index(name)
        filled = _fill_categories(name, batch.column(i), value)
        batch = batch.set_column(i, pa.field(name, filled.type), filled)
    return batch


def _finite(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def _stat(s: Mapping[str, Any], key: str) -> float | None:
    value = s.get(key)
    if value is None or not _finite(value):
        return None
    return float(value)


def _feature_expr(t: ColumnTransform, stats: FeatureStats, dtype: DType) -> Expr:
    fill = _fill_value(t, stats)
    whole = [v for v in (fill, *(t.clip or ())) if v is not None]
    if dtype.is_integer and t.scale is None and t.quantile_bins is None and not t.log1p \
            and all(float(v).is_integer() for v in whole):  # fmt: skip
        # integers into an integer matrix: not through float64, which rounds above 2**53
        e = col(t.name)
        if fill is not None:
            e = e.fill_null(int(fill))
        if t.clip is not None:
            e = e.clip(*(None if v is None else int(v) for v in t.clip))
        return e.cast(dtype.value)
    e = _base(t, fill)
    s = stats.columns.get(t.name, {})
    if t.scale == "zscore":
        mean, std = _stat(s, "mean"), _stat(s, "std")
        e = (e - (mean or 0.0)) / (std if std is not None and std > 0 else 1.0)
    elif t.scale == "minmax":
        lo, hi = _stat(s, "min"), _stat(s, "max")
        base = lo if lo is not None else 0.0
        # MinMaxScaler's rule: a span below 10 ulps of 1 scales by 1
        span = hi - base if hi is not None else 0.0
        e = (e - base) / (span if span >= 10 * np.finfo(np.float64).eps else 1.0)
    elif t.scale == "robust":
        # RobustScaler: centre on the median, divide by the interquartile range (1 if 0)
        med, q25, q75 = _stat(s, "median"), _stat(s, "q25"), _stat(s, "q75")
        iqr = q75 - q25 if q75 is not None and q25 is not None else 0.0
        e = (e - (med or 0.0)) / (iqr if iqr > 10 * np.finfo(np.float64).eps else 1.0)
    elif t.quantile_bins is not None:
        # the bin is the number of inner edges <= x (np.searchsorted(..., side="right"));
        # NaN has no bin: null, as a null (polars orders NaN above every edge)
        inner = list(s.get("bin_edges") or [])[1:-1]
        binned = e.clip(0.0, 0.0)
        if inner:
            binned = (e >= inner[0]).cast("float64")
            for edge in inner[1:]:
                binned = binned + (e >= edge).cast("float64")
        e = when(e.is_nan()).then(None).otherwise(binned)
    if t.clip is not None:
        e = e.clip(t.clip[0], t.clip[1])
    return e.cast(dtype.value)


def _date_part_exprs(t: ColumnTransform, dtype: DType) -> list[Expr]:
    """The features of a date/time column: its parts, or each part's sin and cos.

    A part counted from 1 (month, weekday, day, ordinal_day) turns from ``value - 1``,
    so its first value is angle 0; ``day`` turns once per the value's month (28 to 31
    days), ``ordinal_day`` once per its year (365 or 366). Null in, null out.
    """
    assert t.datetime is not None
    ts = col(t.name)
    out = []
    for part in t.datetime:
        value: Expr = getattr(ts.dt, part)()
        features = [value]
        if t.cyclical:
            x = value.cast("float64")
            if part in _ONE_BASED:
                x = x - 1.0
            period = DATE_PARTS[part]
            if part == "day":
                turn: Expr | float = ts.dt.days_in_month().cast("float64")
            elif part == "ordinal_day":
                turn = ts.dt.is_leap_year().cast("float64") + 365.0
            else:
                assert isinstance(period, int)
                turn = float(period)
            angle = (2.0 * math.pi) * x / turn
            features = [angle.sin(), angle.cos()]
        for e in features:
            if t.fill_null is not None:
                e = e.fill_null(float(t.fill_null))
            out.append(e.cast(dtype.value))
    return out


def _feature_exprs(t: ColumnTransform, stats: FeatureStats, dtype: DType) -> list[Expr]:
    """The kernel's features of a numeric or date/time column, in matrix order."""
    if t.datetime is not None:
        return _date_part_exprs(t, dtype)
    return [_feature_expr(t, stats, dtype)]


def _date_part_names(t: ColumnTransform) -> list[str]:
    """``ts_hour``, or ``ts_hour_sin`` and ``ts_hour_cos`` with ``cyclical``."""
    assert t.datetime is not None
    if t.cyclical:
        return [f"{t.name}_{p}_{f}" for p in t.datetime for f in ("sin", "cos")]
    return [f"{t.name}_{p}" for p in t.datetime]


def _categories(t: ColumnTransform, stats: FeatureStats) -> list[Any]:
    if t.categories is not None:
        return list(t.categories)
    cats = stats.columns.get(t.name, {}).get("categories")
    if cats is None:
        msg = f"no categories for one-hot column `{t.name}`; fit statistics or list them"
        raise JobSpecError(msg)
    return list(cats)


@dataclass
class _OneHot:
    """A one-hot column: all fitted categories, the output column of each, the width.

    ``null_unknown``: a null that is not among the categories is an unseen value
    (``handle_unknown`` decides); false for statistics files of version 1 and 2, where
    a null gives an all-zero block.
    """

    categories: CategoryIndex
    column_of: np.ndarray[Any, Any]  # output column per category (sorted order)
    names: list[str]
    infrequent: int | None  # output column of the infrequent bucket
    null_unknown: bool = True


def _one_hot(t: ColumnTransform, stats: FeatureStats) -> _OneHot:
    cats = _categories(t, stats)
    limited = t.min_frequency is not None or t.max_categories is not None
    if limited:
        s = stats.columns[t.name]
        mask = infrequent_mask(
            np.asarray(s["counts"]), int(s["rows"]), t.min_frequency, t.max_categories
        )
    else:
        mask = np.zeros(len(cats), dtype=bool)
    frequent = np.flatnonzero(~mask)
    column_of = np.empty(len(cats), dtype=np.int64)
    column_of[frequent] = np.arange(frequent.size)
    infrequent = int(frequent.size) if mask.any() else None
    if infrequent is not None:
        column_of[mask] = infrequent
    names = [f"{t.name}={NULL_CATEGORY if cats[i] is None else cats[i]}" for i in frequent]
    if infrequent is not None:
        names.append(f"{t.name}={INFREQUENT}")
    null_unknown = t.categories is not None or stats.version >= 3
    index = CategoryIndex(category_array(cats))
    return _OneHot(index, column_of, names, infrequent, null_unknown)


@dataclass
class _Target:
    """A target-encoded column: categories, encodings (all rows, and per held-out fold)."""

    categories: CategoryIndex
    full: np.ndarray[Any, Any]  # (categories + 1,): the last one is the unseen value's
    per_fold: np.ndarray[Any, Any]  # (folds, categories + 1)


def _target(t: ColumnTransform, spec: FeatureSpec, stats: FeatureStats) -> _Target:
    s = stats.columns[t.name]
    sums = np.asarray(s["fold_sums"], dtype=np.float64).reshape(-1, len(s["categories"]))
    counts = np.asarray(s["fold_counts"], dtype=np.float64).reshape(sums.shape)
    sumsq = np.asarray(s["fold_sumsq"], dtype=np.float64).reshape(sums.shape)
    ys = np.asarray(s["fold_target"], dtype=np.float64).reshape(-1, 3)
    full, per_fold = fold_encodings(sums, counts, sumsq, ys, spec.smoothing)
    # a copy of the list (of pointers): the statistics may change after the plan is made
    return _Target(CategoryIndex(list(s["categories"])), full, per_fold)


class FeaturePlan:
    """What transforming a batch needs, worked out once from the spec and the statistics.

    Infrequent categories, id vocabularies, per-fold target encodings and the fused
    numeric expressions; `transform_batch` builds one per call, `FeatureBatches` and
    `colbridge.ml.FeatureFusion` keep theirs.
    """

    def __init__(self, spec: FeatureSpec, stats: FeatureStats, missing: float = 0.0) -> None:
        _check_stats(spec, stats)
        self.spec = spec
        self.stats = stats
        self.dtype = parse_dtype(spec.dtype)
        #: what a numeric or date feature without a value holds where the spec builds no
        #: validity matrix: 0 (the CLI), NaN (`colbridge.ml.FeatureFusion`, as
        #: scikit-learn's scalers leave it), written by the pack itself
        self.missing = missing
        # numeric and date/time columns: their features come out of one fused kernel
        self.kernel = [t for t in spec.columns if t.kind in ("numeric", "datetime")]
        self.one_hot = {t.name: _one_hot(t, stats) for t in spec.columns if t.one_hot}
        self.vocab: dict[str, CategoryIndex] = {}
        for t in spec.columns:
            if t.ids and t.hash_buckets is None:
                s = stats.columns[t.name]
                order = id_order(s["counts"], int(s["rows"]), t.min_frequency, t.max_categories)
                self.vocab[t.name] = CategoryIndex(list(s["categories"]), order)
        for t in spec.columns:
            if t.ids:
                _check_ids_fit(t.name, self.id_table_size(t) - 1, self.dtype.numpy)
        self.target = {t.name: _target(t, spec, stats) for t in spec.columns if t.target_encode}
        #: fitted fills: the strategy and the value of each column filled by one
        self.fills = {
            t.name: (
                t.fill_strategy,
                _category_fill(t, stats) if t.fills_category else _fill_value(t, stats),
            )
            for t in spec.columns
            if t.fill_strategy is not None
        }
        #: categorical columns filled with their most frequent category, before the encoder
        self.category_fills = {
            t.name: _category_fill(t, stats) for t in spec.columns if t.fills_category
        }
        self.names: list[str] = []
        for t in spec.columns:
            if t.one_hot:
                self.names += self.one_hot[t.name].names
            elif t.datetime is not None:
                self.names += _date_part_names(t)
            else:
                self.names.append(t.name)
            if t.indicator:
                self.names.append(f"{t.name}{MISSING_SUFFIX}")
        _check_unique_names(self.names)
        #: per kernel column: its features' expressions, and their names in the matrix
        self.kernel_exprs = {t.name: _feature_exprs(t, stats, self.dtype) for t in self.kernel}
        self.kernel_names = [
            n for t in self.kernel
            for n in (_date_part_names(t) if t.datetime is not None else [t.name])
        ]  # fmt: skip
        flat = [e for t in self.kernel for e in self.kernel_exprs[t.name]]
        self.exprs = {f"f{j}": e for j, e in enumerate(flat)}

    def _check_category_kinds(self, schema: pa.Schema) -> None:
        """Refuse, by name, a column served with values of another kind than it was fitted on."""
        fitted = {
            **{name: oh.categories for name, oh in self.one_hot.items()},
            **self.vocab,
            **{name: te.categories for name, te in self.target.items()},
        }
        for name, index in fitted.items():
            if name in self.category_fills:
                continue  # its fill value, a fitted category, is checked against it first
            try:
                check_kind(index.categories.type, schema.field(name).type)
            except UnsupportedTypeError as exc:
                msg = f"column `{name}`: {exc}"
                raise UnsupportedTypeError(msg) from None

    def id_table_size(self, t: ColumnTransform) -> int:
        """Rows an embedding table needs for the ids of ``t`` (the two reserved ids included)."""
        if t.hash_buckets is not None:
            return t.hash_buckets + 2
        return len(self.vocab[t.name]) + 2

    def transform(
        self,
        batch: pa.RecordBatch | pa.Table,
        device: str = "auto",
        start: int = 0,
        out_of_fold: bool = False,
    ) -> FeatureBatch:
        """Features of one batch (see `transform_batch`)."""
        spec = self.spec
        names = batch.schema.names
        for name in [t.name for t in spec.columns] + list(spec.keep):
            if name not in names:
                msg = f"feature column `{name}` not found; available columns: {names}"
                raise ColumnNotFoundError(msg)
        batch = _typed_null_columns(spec, batch, self.stats)
        _check_types(spec, batch.schema)
        self._check_category_kinds(batch.schema)
        n = batch.num_rows
        mat: np.ndarray[Any, Any] | None = None
        valid: np.ndarray[Any, Any] | None = None
        if self.exprs:
            items = tuple((name, e.node) for name, e in self.exprs.items())
            kernel_input = _kernel_batch(spec, batch)
            table = compute_piece(prepare((Step("select", items),), names), kernel_input, device)
            fm = to_tensor(table, dtype=self.dtype.numpy,
                           nulls="keep" if spec.validity else self.missing)  # fmt: skip
            mat, valid = fm.numpy(), fm.validity
        width = len(self.names)
        if len(self.kernel) == len(spec.columns) and len(self.exprs) == width:
            assert mat is not None
            features = mat
        else:
            features = np.zeros((n, width), dtype=self.dtype.numpy)
            # the validity matrix is only built when the spec asks for it
            full_valid = np.ones((n, width), dtype=bool) if spec.validity else None
            pos = j = 0
            folds = folds_of(start, n, spec.folds, spec.seed) if out_of_fold else None
            for t in spec.columns:
                column = batch.column(t.name)
                # the encoder reads the filled column; the indicator the one given
                encoded = (
                    _fill_categories(t.name, column, self.category_fills[t.name])
                    if t.name in self.category_fills
                    else column
                )
                if t.kind in ("numeric", "datetime"):
                    assert mat is not None
                    k = len(self.kernel_exprs[t.name])
                    features[:, pos : pos + k] = mat[:, j : j + k]
                    if valid is not None and full_valid is not None:
                        full_valid[:, pos : pos + k] = valid[:, j : j + k]
                    pos += k
                    j += k
                elif t.one_hot:
                    pos += self._write_one_hot(t, encoded, features, full_valid, pos)
                elif t.ids:
                    features[:, pos] = self._ids(t, encoded)
                    pos += 1
                else:
                    te = self.target[t.name]
                    code = te.categories.codes(encoded)
                    code = np.where(code < 0, len(te.categories), code)
                    if folds is None:
                        features[:, pos] = te.full[code]
                    else:
                        features[:, pos] = te.per_fold[folds, code]
                    pos += 1
                if t.indicator:
                    missing = pc.is_null(column, nan_is_null=True)
                    features[:, pos] = _bools(missing)
                    pos += 1
            valid = full_valid if full_valid is not None and not full_valid.all() else None
        if spec.validity and valid is None:
            valid = np.ones(features.shape, dtype=bool)
        kept = {name: batch.column(name) for name in spec.keep}
        return FeatureBatch(
            features=features,
            validity=valid if spec.validity else None,
            names=list(self.names),
            columns=kept,
        )

    def _write_one_hot(
        self,
        t: ColumnTransform,
        column: pa.Array | pa.ChunkedArray,
        features: np.ndarray[Any, Any],
        full_valid: np.ndarray[Any, Any] | None,
        pos: int,
    ) -> int:
        oh = self.one_hot[t.name]
        code = oh.categories.codes(column)
        if oh.null_unknown:  # a null the fit did not see is an unseen value
            code[code == -2] = -1
        if t.handle_unknown == "error" and (unknown := code == -1).any():
            seen = _plain_values(one_array(column)).filter(pa.array(unknown))
            values = sort_categories(pc.unique(seen).to_pylist())
            shown = ", ".join("null" if v is None else repr(v) for v in values[:10])
            more = f" and {len(values) - 10} more" if len(values) > 10 else ""
            msg = (
                f"column `{t.name}` has categories not seen when fitting: {shown}{more}; "
                "refit on data that includes them, or pass `handle_unknown='ignore'` "
                "(all-zero row) or 'infrequent_if_exist'"
            )
            raise InvalidOperationError(msg)
        to_infrequent = t.handle_unknown == "infrequent_if_exist" and oh.infrequent is not None
        unknown_column = oh.infrequent if to_infrequent and oh.infrequent is not None else -1
        mapped = scatter_one_hot(features, code, oh.column_of, unknown_column, pos)
        # a null or an unseen value that maps nowhere: all-zero and marked invalid
        if full_valid is not None:
            full_valid[:, pos : pos + len(oh.names)] = mapped[:, None]
        return len(oh.names)

    def _ids(self, t: ColumnTransform, column: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
        if t.hash_buckets is not None:
            ids = (fnv1a64(column) % np.uint64(t.hash_buckets)).astype(np.int64) + 2
            # decoded: a row of a dictionary column pointing at a null entry is null too
            plain = _plain_values(one_array(column))
            if plain.null_count:
                ids[~_bools(plain.is_valid())] = NULL_ID
            return ids
        code = self.vocab[t.name].codes(column)
        # a vocabulary position p is id p + 2; -1 (unseen) is RARE_ID, -2 (null) NULL_ID
        code += 2
        return code



def _plain_values(array: pa.Array) -> pa.Array:
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def _bools(array: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
    return np.asarray(one_array(array).to_numpy(zero_copy_only=False), dtype=bool)


def feature_names(spec: FeatureSpec, stats: FeatureStats) -> list[str]:
    """Names of the matrix's columns, in order (``c=value`` for one-hot, ``a_missing``)."""
    return FeaturePlan(spec, stats).names


def _check_ids_fit(name: str, largest: int, dtype: np.dtype[Any]) -> None:
    """Refuse a matrix type that cannot hold a column's largest id (it would wrap or round)."""
    # a float holds every integer up to 2 ** (mantissa bits + 1)
    top = int(np.iinfo(dtype).max) if dtype.kind in "iu" else 2 ** (np.finfo(dtype).nmant + 1)
    if largest > top:
        msg = (
            f"the ids of `{name}` go up to {largest}, which a {dtype} matrix cannot hold "
            f"exactly (it holds integers up to {top}); use a wider dtype, or fewer ids "
            "(`max_categories`, `min_frequency`, fewer hash buckets)"
        )
        raise InvalidOperationError(msg)


def transform_batch(
    batch: pa.RecordBatch | pa.Table,
    spec: FeatureSpec,
    stats: FeatureStats,
    device: str = "auto",
    *,
    start: int = 0,
    out_of_fold: bool = False,
) -> FeatureBatch:
    """Features of one batch, with statistics already known (no pass over other data).

    ``out_of_fold`` encodes target-encoded columns as for the training rows (each row
    with the encodings fitted on the folds it is not in; its fold comes from its
    position ``start + i`` in the input); otherwise with the encodings of all rows.
    """
    return FeaturePlan(spec, stats).transform(batch, device, start, out_of_fold)


def _categorical_type(typ: pa.DataType) -> pa.DataType:
    """The type in which a categorical column's values are counted and stored."""
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_large_string(typ):
        return pa.string()
    return typ


class _FillFit:
    """Fitted fill values (scikit-learn's ``SimpleImputer``), gathered batch by batch.

    Nulls and NaN are left out, as ``SimpleImputer(missing_values=np.nan)`` leaves
    them out: ``mean`` keeps a float64 sum and a count per column, ``median`` the
    values (8 bytes each, as the exact quantiles do; NumPy's median at the end), and
    ``most_frequent`` each batch's distinct values with their counts (summed at the
    end; the smallest value wins a tie, -0.0 counts as 0.0).

    A categorical column (`ColumnTransform.fills_category`) is counted by value, as
    its encoder counts it (`CategoryTotals`: a dictionary column's codes named by
    its dictionary, so a category that has other codes in other batches or row
    groups is one value); the most frequent value wins, the smallest (code-point
    order for strings, as Python's ``min`` in ``SimpleImputer``) among ties.
    """

    def __init__(self, columns: Sequence[ColumnTransform]) -> None:
        self.columns = list(columns)
        self.names = [t.name for t in self.columns]
        self.sums = dict.fromkeys(self.names, 0.0)
        self.counts = dict.fromkeys(self.names, 0)
        self.parts: dict[str, list[np.ndarray[Any, Any]]] = {n: [] for n in self.names}
        self.freqs: dict[str, list[np.ndarray[Any, Any]]] = {n: [] for n in self.names}
        self.tables = {n: CategoryTotals(1) for n in self.names}
        self.types: dict[str, pa.DataType] = {}

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Take one batch's partials."""
        for t in self.columns:
            if t.fills_category:
                self.tables[t.name].count(batch.column(t.name))
                self.types.setdefault(t.name, _categorical_type(batch.schema.field(t.name).type))
                continue
            column = one_array(batch.column(t.name)).drop_null()
            v = np.asarray(column.cast(pa.float64()).to_numpy(zero_copy_only=False))
            v = v[~np.isnan(v)]
            if t.fill_strategy == "mean":
                self.sums[t.name] += float(v.sum())
                self.counts[t.name] += v.size
            elif t.fill_strategy == "median":
                self.parts[t.name].append(v)
            else:
                values, counts = np.unique(v + 0.0, return_counts=True)
                self.parts[t.name].append(values)
                self.freqs[t.name].append(counts)

    def finish(self) -> dict[str, dict[str, Any]]:
        """Per column ``{"fill_value": v, "fill_strategy": s}``.

        Raises
        ------
        InvalidOperationError
            For a column with no value to fit on (every row null or NaN, or no rows).
            scikit-learn's ``SimpleImputer`` drops such a column (or fills it with 0
            when asked); here the matrix's columns stay those of the spec.
        """
        out = {}
        for t in self.columns:
            parts = self.parts[t.name]
            v = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0)
            if t.fills_category:
                cats, freq = self.tables[t.name].counts(self.types.get(t.name, pa.null()))
                # ascending values: the first of the most frequent is the smallest
                value = cats[int(np.argmax(freq))] if cats else None
            elif t.fill_strategy == "mean":
                n = self.counts[t.name]
                value = self.sums[t.name] / n if n else None
            elif not v.size:
                value = None
            elif t.fill_strategy == "median":
                value = float(np.median(v, overwrite_input=True))
            else:
                counts = self.freqs[t.name]
                c = counts[0] if len(counts) == 1 else np.concatenate(counts)
                distinct, where = np.unique(v, return_inverse=True)
                total = np.zeros(distinct.size, dtype=np.int64)
                np.add.at(total, where, c)
                value = float(distinct[np.argmax(total)])  # the first (smallest) of the most
            if value is None and t.fills_category:
                msg = (
                    f"column `{t.name}` has no category to fit `fill_null={t.fill_strategy!r}` "
                    "on (every row is null, or there are no rows); drop its `fill_null` (a "
                    "null then has its own encoding) or leave the column out"
                )
                raise InvalidOperationError(msg)
            if value is None:
                msg = (
                    f"column `{t.name}` has no value to fit `fill_null={t.fill_strategy!r}` on "
                    "(every row is null or NaN, or there are no rows); fill it with a number "
                    f"(`fill_null={{'{t.name}': 0.0}}`, `--fill-null {t.name}=0`) or leave "
                    "the column out"
                )
                raise InvalidOperationError(msg)
            out[t.name] = {"fill_value": value, "fill_strategy": t.fill_strategy}
        return out


def _fit_passes(spec: FeatureSpec) -> int:
    """Passes a fit makes over the input: 2 when the statistics of a column need its fill.

    A column whose fill value is fitted (``fill_null="mean"``, say) and that is also
    scaled or binned has its scaling statistics fitted on the filled values, so its
    fill value is fitted first, in a pass of its own. So has a categorical column
    filled with its most frequent category whose encoder is fitted (one-hot without
    listed categories, ids from a vocabulary, target encoding): its category counts or
    target sums are those of the filled column. Otherwise one pass fits all.
    """
    staged = any(t.fill_strategy is not None and _fitted_on_fill(t) for t in spec.columns)
    return 2 if staged else 1


def _fitted_on_fill(t: ColumnTransform) -> bool:
    """Whether ``t``'s other statistics are fitted on its filled values."""
    return (
        t.scale is not None
        or t.quantile_bins is not None
        or (t.one_hot and t.categories is None)
        or (t.ids and t.hash_buckets is None)
        or t.target_encode
    )


def _finite_only(e: Expr) -> Expr:
    """``e`` where it is a finite number, else null (what the moments are fitted on)."""
    return when(e.is_finite()).then(e).otherwise(None)


def _scale_of(mean: Any, std: Any, count: Any, ddof: int) -> Any:
    """The fitted std, 0.0 where scikit-learn's `StandardScaler` finds the column constant.

    Rounding leaves the std of a constant column a few ulps above 0 (``[0.1] * 3``:
    1.4e-17), which would scale its values to ±1; `StandardScaler` tests the variance
    against a bound of its rounding (``_is_constant_feature``) and divides by 1 there.
    """
    if mean is None or std is None or not count or not math.isfinite(std):
        return std
    eps = float(np.finfo(np.float64).eps)
    variance = std * std * (count - ddof) / count  # the population variance it tests
    bound = count * eps * variance + (count * mean * eps) ** 2
    return 0.0 if variance <= bound else std


def _fit(
    source: InputSource,
    spec: FeatureSpec,
    batch_rows: int,
    device: str,
    labels: Sequence[str] = (),
) -> FeatureStats:
    stats = FeatureStats(ddof=spec.ddof)
    fills = _FillFit([t for t in spec.columns if t.fill_strategy is not None])
    if _fit_passes(spec) == 2:  # `_open` checked that the columns are there
        # first the fill values, then every other statistic over the filled columns
        for batch in source.batches(batch_rows, fills.names):
            fills.add(batch)
        stats.columns.update(fills.finish())
        fills = _FillFit(())
    moments = [t for t in spec.columns if t.scale in ("zscore", "minmax")]
    exact = [t for t in spec.columns if t.scale == "robust" or t.quantile_bins is not None]
    counted = [
        t for t in spec.columns
        if (t.one_hot and t.categories is None) or (t.ids and t.hash_buckets is None)
    ]  # fmt: skip
    encoded = [t for t in spec.columns if t.target_encode]
    # a scaled column's statistics are those of its values after the fill (and log1p),
    # NaN and infinities left out, as the exact quantiles leave them out (scikit-learn's
    # scalers leave NaN out and refuse infinities); they stay as they are in the matrix
    bases = {t.name: _base(t, _fill_value(t, stats)).node for t in moments + exact}
    finite = {t.name: _finite_only(Expr(bases[t.name])).node for t in moments}
    # categorical columns filled before they are counted (fitted in the first pass)
    category_fills = {
        t.name: _category_fill(t, stats) for t in counted + encoded if t.fills_category
    }
    aggs: list[Agg] = []
    for t in moments:
        base = finite[t.name]
        aggs += [Agg("mean", base), Agg("std", base, spec.ddof), Agg("min", base),
                 Agg("max", base), Agg("count", base)]  # fmt: skip
    classed = classed_labels(labels, source.schema)
    needed = sorted(
        {t.name for t in moments + exact + counted + encoded} | set(fills.names) | set(classed)
    )
    if encoded:
        assert spec.target is not None
        needed = sorted({*needed, spec.target})
    missing = [c for c in needed if c not in source.schema.names]
    if missing:
        msg = f"feature column `{missing[0]}` not found; available columns: {source.schema.names}"
        raise ColumnNotFoundError(msg)
    if not needed:
        return stats
    counts = {t.name: CategoryTotals(1) for t in counted}
    label_counts = {name: CategoryTotals(1) for name in classed}
    targets = {t.name: CategoryTotals(3 * spec.folds) for t in encoded}
    ys = np.zeros((spec.folds, 3))  # per fold: labelled rows, sum, sum of squares
    values: dict[str, list[np.ndarray[Any, Any]]] = {t.name: [] for t in exact}
    exact_plan = (
        prepare((Step("select", tuple((t.name, bases[t.name]) for t in exact)),), needed)
        if exact
        else None
    )
    rows = 0

    def batches() -> Any:
        # one pass over the data: the reductions' partials, counts, target sums, values
        nonlocal rows
        for batch in source.batches(batch_rows, needed):
            n = batch.num_rows
            fills.add(batch)  # fill values are fitted on the column as given
            batch = _fill_batch(batch, category_fills)
            for name, totals in counts.items():
                totals.count(batch.column(name))
            for name, totals in label_counts.items():
                totals.count(batch.column(name))
            if encoded:
                _target_partials(batch, spec, rows, encoded, targets, ys)
            if exact_plan is not None:
                table = compute_piece(exact_plan, batch, device)
                for t in exact:
                    v = table.column(t.name).to_numpy(zero_copy_only=False)
                    # non-finite values stay: the quantiles leave them out themselves
                    values[t.name].append(np.asarray(v, dtype=np.float64))
            rows += n
            yield batch

    if not aggs:
        for _ in batches():
            pass  # no reductions: the generator gathers everything
    else:
        empty = empty_table(source.schema).select(needed)
        reduced = fold_reductions((), aggs, batches(), empty, device)
        for t in moments:
            base = finite[t.name]

            def value(a: Agg) -> Any:
                lit_ = reduced[a]
                assert isinstance(lit_, Literal)
                return lit_.value

            lo, hi = value(Agg("min", base)), value(Agg("max", base))
            mean, std = value(Agg("mean", base)), value(Agg("std", base, spec.ddof))
            count = value(Agg("count", base))
            stats.columns.setdefault(t.name, {}).update(
                {"mean": mean, "std": _scale_of(mean, std, count, spec.ddof), "min": lo, "max": hi}
            )
    for name, entry in fills.finish().items():
        stats.columns.setdefault(name, {}).update(entry)
    for t in exact:
        # exact quantiles: the column's finite values are all held (8 bytes each)
        parts = values[t.name]
        v = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0)
        entry = stats.columns.setdefault(t.name, {})
        if t.scale == "robust":
            q = linear_quantiles(v, [0.25, 0.5, 0.75])
            entry.update(
                {"q25": _json_float(q[0]), "median": _json_float(q[1]), "q75": _json_float(q[2])}
            )
        if t.quantile_bins is not None:
            entry["bin_edges"] = quantile_edges(v[np.isfinite(v)], t.quantile_bins)
    for t in counted:
        typ = _categorical_type(source.schema.field(t.name).type)
        cats, freq = counts[t.name].counts(typ)
        nulls = rows - sum(freq)
        if t.one_hot and nulls:  # null is a category of its own, last (as scikit-learn's)
            cats, freq = [*cats, None], [*freq, nulls]
        # `update`: a filled column keeps its `fill_value` beside its counts
        stats.columns.setdefault(t.name, {}).update(
            {"categories": cats, "counts": freq, "rows": rows}
        )
    if encoded:
        for t in encoded:
            typ = _categorical_type(source.schema.field(t.name).type)
            entry = _target_stats(t.name, targets[t.name], typ, spec.folds, ys)
            stats.columns.setdefault(t.name, {}).update(entry)
    for name, totals in label_counts.items():
        # sorted, as scikit-learn's LabelEncoder: class id i is `classes[i]`
        classes, _ = totals.counts(_categorical_type(source.schema.field(name).type))
        stats.columns[name] = {"classes": classes}
    return stats


def classed_labels(labels: Sequence[str], schema: pa.Schema) -> list[str]:
    """The label columns served as class ids: those of strings (or a string dictionary).

    A tensor holds no string; numeric and boolean labels are served as they are.
    """
    out = []
    for name in labels:
        typ = _categorical_type(schema.field(name).type) if name in schema.names else None
        if typ is not None and (pa.types.is_string(typ) or pa.types.is_string_view(typ)):
            out.append(name)
    return out


def check_label_stats(
    labels: Sequence[str], schema: pa.Schema, stats: FeatureStats, where: str = "the statistics"
) -> None:
    """Refuse statistics without the ``classes`` of a string label (naming both)."""
    for name in classed_labels(labels, schema):
        if "classes" not in stats.columns.get(name, {}):
            msg = (
                f"{where} has no `classes` for label column `{name}` (strings are served as "
                "class ids): fit the statistics with the label, e.g. "
                f"`fit_stats(data, spec, labels=[{name!r}])`, or leave out `stats`"
            )
            raise JobSpecError(msg)


def _json_float(x: Any) -> float | None:
    return None if x is None else float(x)


def _target_partials(
    batch: pa.RecordBatch | pa.Table,
    spec: FeatureSpec,
    start: int,
    encoded: list[ColumnTransform],
    targets: dict[str, CategoryTotals],
    ys: np.ndarray[Any, Any],
) -> None:
    """Add one batch to the target's sums per category and fold, and per fold.

    Each row goes to its category's fold in the column's `CategoryTotals` (null a
    category of its own, as in scikit-learn's ``TargetEncoder``); a row whose target is
    null or NaN is left out of the fit.
    """
    assert spec.target is not None
    y_col = one_array(batch.column(spec.target))
    typ = y_col.type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)):
        msg = (
            f"target column `{spec.target}` has type `{typ}`; target encoding needs a numeric "
            "or boolean target (encode class labels as 0/1 first)"
        )
        raise UnsupportedTypeError(msg)
    # a null target (NaN here) or a NaN label is left out of the fit
    y = np.asarray(y_col.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    k = spec.folds
    fold = folds_of(start, len(y), k, spec.seed)
    for j, t in enumerate(encoded):
        totals = targets[t.name]
        per_fold = ys if j == 0 else np.zeros((0, 3))  # the folds' totals are added once
        add_target_rows(totals, totals.codes(batch.column(t.name)), fold, y, k, per_fold)


def _target_stats(
    name: str,
    totals: CategoryTotals,
    value_type: pa.DataType,
    folds: int,
    ys: np.ndarray[Any, Any],
) -> dict[str, Any]:
    """A column's ``(folds, categories)`` sums, counts and squares, categories in order.

    Categories none of whose rows had a finite target are left out.
    """
    values, order = totals.order(value_type)
    sums, counts, squares, counted = fold_columns(totals.table, order, folds)
    if not counted.any():
        msg = (
            f"target encoding of `{name}`: no fitting row has a target value (every label "
            "is null or NaN, or there are no rows); give labels to fit the encodings on"
        )
        raise InvalidOperationError(msg)
    if not counted.all():
        values = values.filter(pa.array(counted))
        sums, counts, squares = sums[:, counted], counts[:, counted], squares[:, counted]
    return {
        "categories": values.to_pylist(),
        "fold_sums": sums,
        "fold_counts": counts,
        "fold_sumsq": squares,
        "fold_target": ys.copy(),
    }


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
    _check_types(spec, source.schema)
    if spec.target_encoded and spec.target not in source.schema.names:
        msg = f"target column `{spec.target}` not found; available columns: {source.schema.names}"
        raise ColumnNotFoundError(msg)
    rows = batch_rows
    if memory_limit is not None:
        rows = rows_for_memory(source, parse_memory(memory_limit), batch_rows)
    return source, rows or DEFAULT_BATCH_ROWS


def _check_types(spec: FeatureSpec, schema: pa.Schema) -> None:
    """Refuse a column whose type its encoding cannot read, naming what to do instead."""
    for t in spec.columns:
        typ = schema.field(t.name).type
        if pa.types.is_null(typ):  # at transform, `_typed_null_columns` typed it
            msg = (
                f"column `{t.name}` has no value to fit on (Arrow type null: every value is "
                "missing, as in a pandas object column of None); give it a type first "
                "(e.g. `astype('float64')`, `astype('string')`) or leave it out"
            )
            raise UnsupportedTypeError(msg)
        categorical = (
            pa.types.is_dictionary(typ) or pa.types.is_string(typ) or pa.types.is_large_string(typ)
        )
        if t.fill_strategy is not None and t.kind == "numeric" and categorical:
            msg = (
                f"column `{t.name}` of type `{typ}` cannot be filled with its "
                f"{t.fill_strategy.replace('_', ' ')} value as a number: a categorical column "
                "needs an encoding (one_hot, ids, hash_buckets or target_encode); there "
                "`fill_null='most_frequent'` fills its nulls with its most frequent category, "
                "or a null keeps an encoding of its own"
            )
            raise UnsupportedTypeError(msg)
        if (
            t.fill_strategy is not None
            and not t.fills_category
            and not (
                pa.types.is_integer(typ)
                or pa.types.is_floating(typ)
                or pa.types.is_boolean(typ)
                or pa.types.is_decimal(typ)
            )
        ):
            msg = (
                f"column `{t.name}` of type `{typ}` cannot be filled with its "
                f"{t.fill_strategy.replace('_', ' ')} value: `fill_null={t.fill_strategy!r}` "
                "fills numeric columns; encode a categorical column (one-hot, ids or target "
                "encoding, where a null has its own encoding) or fill it with a number"
            )
            raise UnsupportedTypeError(msg)
        textual = categorical or pa.types.is_string_view(typ) or pa.types.is_binary(typ) \
            or pa.types.is_large_binary(typ)  # fmt: skip
        if t.kind == "numeric" and textual:
            msg = (
                f"column `{t.name}` of type `{typ}` is not a number: encode it "
                f"(one_hot=['{t.name}'], ids=['{t.name}'], hash_buckets or "
                f"target_encode=['{t.name}']) or leave it out of the feature columns"
            )
            raise UnsupportedTypeError(msg)
        if t.kind == "datetime":
            _check_date_parts(t, typ)
        elif t.kind != "numeric":
            # a dictionary column encodes as its values would: strings or integers
            values = typ.value_type if pa.types.is_dictionary(typ) else typ
            if not (
                pa.types.is_string(values)
                or pa.types.is_large_string(values)
                or pa.types.is_integer(values)
            ):
                what = {"one_hot": "one-hot", "ids": "id", "target": "target"}[t.kind]
                msg = (
                    f"column `{t.name}` of type `{typ}` cannot be {what} encoded; "
                    "use a string, integer or categorical (dictionary of strings or "
                    "integers) column"
                )
                raise UnsupportedTypeError(msg)


def _check_unique_names(names: list[str]) -> None:
    """Refuse two features of one name (``x``'s indicator beside a column ``x_missing``)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            msg = (
                f"two features would be named `{name}` (a column of that name beside a "
                "feature made from another column); rename that column, or drop one of "
                "the two features"
            )
            raise JobSpecError(msg)
        seen.add(name)


def _typed_null_columns(
    spec: FeatureSpec, batch: pa.RecordBatch | pa.Table, stats: FeatureStats
) -> pa.RecordBatch | pa.Table:
    """Columns of Arrow type null as the type their transform reads, every value null.

    A pandas object column of None only (or an empty one) reaches Arrow as type null:
    float64 for a number, a timestamp for date parts, the fitted categories' type for
    an encoded column (strings where no category was fitted), so that they encode as
    nulls do.
    """
    for t in spec.columns:
        i = batch.schema.get_field_index(t.name)
        if i < 0 or not pa.types.is_null(batch.schema.field(i).type):
            continue
        if t.kind == "numeric":
            typ = pa.float64()
        elif t.kind == "datetime":
            typ = pa.timestamp("us")
        else:
            fitted = stats.columns.get(t.name, {}).get("categories") or []
            known = [c for c in fitted if c is not None]
            typ = category_array(known).type if known else pa.string()
        batch = batch.set_column(i, pa.field(t.name, typ), pa.nulls(batch.num_rows, typ))
    return batch


def _check_date_parts(t: ColumnTransform, typ: pa.DataType) -> None:
    assert t.datetime is not None
    is_date = pa.types.is_date(typ)
    is_time = pa.types.is_time(typ)
    if not (is_date or is_time or pa.types.is_timestamp(typ)):
        msg = (
            f"column `{t.name}` of type `{typ}` has no date parts; `datetime` needs a Date, "
            "Datetime or Time column: convert it first (polars `str.to_datetime`, pandas "
            f"`pd.to_datetime`), or scale it as a number instead of asking for {list(t.datetime)}"
        )
        raise UnsupportedTypeError(msg)
    has, lacks = (_DATE_ONLY, "time of day") if is_date else (_TIME_ONLY, "date")
    if is_date or is_time:
        wrong = [p for p in t.datetime if p not in has]
        if wrong:
            kind = "Date" if is_date else "Time"
            msg = (
                f"column `{t.name}` of type `{typ}` has no `{wrong[0]}`: a {kind} has no {lacks}; "
                f"ask only for {', '.join(p for p in DATE_PARTS if p in has)}"
                + (", or use a Datetime column" if is_date else "")
            )
            raise UnsupportedTypeError(msg)


def _kernel_type(typ: pa.DataType) -> pa.DataType | None:
    """The type the kernels read a date/time column of type ``typ`` as, when it differs.

    The engine reads Date (date32), Datetime in ns/us/ms and Time in ns, as polars
    has them; a date64, a datetime in seconds or a time32/time64[us] is cast once.
    """
    if pa.types.is_date64(typ):
        return pa.date32()
    if pa.types.is_timestamp(typ) and typ.unit == "s":
        return pa.timestamp("ms", typ.tz)
    if pa.types.is_time(typ) and not (pa.types.is_time64(typ) and typ.unit == "ns"):
        return pa.time64("ns")
    return None


def _kernel_batch(spec: FeatureSpec, batch: pa.RecordBatch | pa.Table) -> pa.Table:
    """``batch`` with its date/time feature columns in types the kernels read (a copy)."""
    for t in spec.columns:
        if t.datetime is None:
            continue
        i = batch.schema.get_field_index(t.name)
        target = _kernel_type(batch.schema.field(i).type)
        if target is not None:
            if isinstance(batch, pa.RecordBatch):
                batch = pa.Table.from_batches([batch])
            batch = batch.set_column(i, t.name, batch.column(i).cast(target))
    return batch  # type: ignore[return-value]


def _stats_for(
    source: InputSource,
    spec: FeatureSpec,
    stats: FeatureStats | PathLike | None,
    rows: int,
    device: str,
    labels: Sequence[str] = (),
) -> FeatureStats:
    if isinstance(stats, FeatureStats):
        _check_stats(spec, stats)
        check_label_stats(labels, source.schema, stats)
        return stats
    if stats is not None:
        loaded = FeatureStats.load(stats)
        where = f"stats file {os.fspath(stats)!r}"
        _check_stats(spec, loaded, where)
        check_label_stats(labels, source.schema, loaded, where)
        return loaded
    return _fit(source, spec, rows, device, labels)


#: The statistics each transform reads (beyond those of one-hot columns).
_NEEDED_STATS = {
    "zscore": ("mean", "std"),
    "minmax": ("min", "max"),
    "robust": ("median", "q25", "q75"),
    "quantile_bins": ("bin_edges",),
    "limited": ("categories", "counts", "rows"),
    "ids": ("categories", "counts", "rows"),
    "target": ("categories", "fold_sums", "fold_counts", "fold_sumsq", "fold_target"),
}


def _needs(t: ColumnTransform) -> tuple[str, tuple[str, ...]]:
    """What ``t`` is called in an error, and the statistics it reads."""
    if t.scale is not None:
        return f"`{t.scale}`", _NEEDED_STATS[t.scale]
    if t.quantile_bins is not None:
        return "`quantile_bins`", _NEEDED_STATS["quantile_bins"]
    if t.one_hot:
        if t.min_frequency is not None or t.max_categories is not None:
            return "one-hot with `min_frequency`/`max_categories`", _NEEDED_STATS["limited"]
        return "one-hot", () if t.categories is not None else ("categories",)
    if t.ids and t.hash_buckets is None:
        return "`ids`", _NEEDED_STATS["ids"]
    if t.target_encode:
        return "`target_encode`", _NEEDED_STATS["target"]
    return "", ()  # numeric without statistics, and date/time parts


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
        what, needed = _needs(t)
        entry = stats.columns.get(t.name)
        if needed == ("categories",) and (entry is None or "categories" not in entry):
            msg = (
                f"{where} has no `categories` for one-hot column `{t.name}`; fit statistics "
                "that include the column, or list its categories in the spec"
            )
            raise JobSpecError(msg)
        if t.fill_strategy is not None:
            # the fill comes first: its value is asked for before the scaling's statistics
            needs = [(f"`fill_null={t.fill_strategy!r}`", ("fill_value",)), (what, needed)]
        else:
            needs = [(what, needed)]
        for what, keys in needs:
            for key in keys:
                if entry is None or key not in entry:
                    msg = (
                        f"{where} has no `{key}` for column `{t.name}`, which {what} needs; "
                        "fit statistics that include the column (e.g. `colbridge fuse ... "
                        "--save-stats stats.json` on the training data), or leave out `--stats`"
                    )
                    raise JobSpecError(msg)
        fitted_by = (entry or {}).get("fill_strategy")
        if t.fill_strategy is not None and fitted_by not in (None, t.fill_strategy):
            msg = (
                f"{where} holds the `fill_null={fitted_by!r}` value of column `{t.name}` but "
                f"the spec asks for {t.fill_strategy!r}; refit, or pass the same strategy"
            )
            raise JobSpecError(msg)
        if t.target_encode and len(stats.columns[t.name]["fold_target"]) != spec.folds:
            msg = (
                f"{where} was fitted with {len(stats.columns[t.name]['fold_target'])} folds "
                f"for column `{t.name}` but the spec asks for {spec.folds}; refit, or pass "
                "the same `folds`"
            )
            raise JobSpecError(msg)


def fit_stats(
    input: Any,
    spec: FeatureSpec,
    *,
    batch_rows: int | None = None,
    device: str = "auto",
    labels: Sequence[str] = (),
) -> FeatureStats:
    """Statistics the spec's transforms read, from one pass over ``input``.

    Two passes when a column's fill value is fitted (``fill_null="median"``, say) and the
    column is also scaled or binned, or is a categorical column whose encoder is fitted:
    the fill values first, then the statistics of the filled columns.

    ``labels`` names the columns a `colbridge.io.loader` serves as labels: those of
    strings get their sorted ``classes`` (a label's class id is its index there, as
    scikit-learn's ``LabelEncoder``), fitted in the same pass.

    Examples
    --------
    >>> import pyarrow as pa
    >>> spec = FeatureSpec.from_dict({"columns": {"x": {"fill_null": "median", "scale": "minmax"}}})
    >>> stats = fit_stats(pa.table({"x": [1.0, None, 2.0, 10.0]}), spec)
    >>> stats.columns["x"]["fill_value"], stats.columns["x"]["min"], stats.columns["x"]["max"]
    (2.0, 1.0, 10.0)
    """
    source, rows = _open(input, spec, batch_rows, None)
    _check_labels(spec, labels, source.schema)
    if isinstance(source, StreamSource):
        source.plan_passes(_fit_passes(spec))
    return _fit(source, spec, rows, device, labels)


def _check_labels(spec: FeatureSpec, labels: Sequence[str], schema: pa.Schema) -> None:
    overlap = sorted(set(labels) & {t.name for t in spec.columns})
    if overlap:
        msg = f"label column(s) {overlap} are also features; a model would see its label"
        raise JobSpecError(msg)
    missing = [n for n in labels if n not in schema.names]
    if missing:
        msg = f"label column(s) {missing} not found; available columns: {schema.names}"
        raise JobSpecError(msg)


class FeatureBatches:
    """A re-iterable stream of `FeatureBatch` over a dataset, with fixed statistics."""

    def __init__(
        self,
        source: InputSource,
        spec: FeatureSpec,
        stats: FeatureStats,
        batch_rows: int,
        device: str,
        out_of_fold: bool = False,
    ) -> None:
        self.source = source
        self.spec = spec
        self.stats = stats
        self.batch_rows = batch_rows
        self.device = device
        self.out_of_fold = out_of_fold
        self._plan = FeaturePlan(spec, stats)
        self.names = self._plan.names

    def __iter__(self) -> Iterator[FeatureBatch]:
        needed = list(dict.fromkeys([t.name for t in self.spec.columns] + list(self.spec.keep)))
        start = 0
        for batch in self.source.batches(self.batch_rows, needed):
            yield self._plan.transform(batch, self.device, start, self.out_of_fold)
            start += batch.num_rows

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
    labels: Sequence[str] = (),
) -> FeatureBatches:
    """Feature batches of ``input``; fits statistics first (one pass) unless ``stats`` is given.

    ``input`` is a path, glob or folder of Parquet/IPC files, or a stream (a polars
    ``LazyFrame``, a pyarrow dataset, anything with ``__arrow_c_stream__``). When the
    statistics are fitted here, ``input`` is the training data: target-encoded columns
    are then encoded out of fold (as scikit-learn's ``TargetEncoder.fit_transform``).
    ``labels``: as `fit_stats`'s (string labels need their ``classes`` in ``stats``).
    """
    source, rows = _open(input, spec, batch_rows, memory_limit)
    _check_labels(spec, labels, source.schema)
    if isinstance(source, StreamSource):  # fitting reads the input once or twice more
        source.plan_passes(1 if stats is not None else 1 + _fit_passes(spec))
    fitted = _stats_for(source, spec, stats, rows, device, labels)
    return FeatureBatches(source, spec, fitted, rows, device, out_of_fold=stats is None)


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
                {k: pa.nulls(0, batches.source.schema.field(k).type) for k in spec.keep},
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
    if isinstance(source, StreamSource) and stats is None:
        source.plan_passes(_fit_passes(spec))
    fitted = _stats_for(source, spec, stats, rows, device)
    dtype = parse_dtype(spec.dtype)
    if isinstance(source, StreamSource):
        read = source.describe()
    else:
        read = f"{len(source.files)} {source.format} file(s), {source.count_rows()} rows"
    plan = FeaturePlan(spec, fitted)
    names = plan.names
    lines = [
        f"colbridge fuse over {read}",
        f"matrix: {len(names)} {dtype} features per row, batches of up to {rows} rows",
        "features: " + ", ".join(names),
    ]
    encoders = _describe_encoders(plan, out_of_fold=stats is None)
    if encoders:
        lines.append("encoders (per batch, beside the kernel):")
        lines += [f"  {line}" for line in encoders]
    if plan.exprs:
        empty = _kernel_batch(spec, empty_table(source.schema))
        items = tuple(
            (name, e.node) for name, e in zip(plan.kernel_names, plan.exprs.values(), strict=True)
        )
        steps = prepare((Step("select", items),), empty.column_names)
        report = describe(steps, ArrowTableAdapter(empty), device=device)
        lines += report.to_text().splitlines()[1:]
    return "\n".join(lines)


def _describe_encoders(plan: FeaturePlan, *, out_of_fold: bool) -> list[str]:
    """One line per categorical encoding and missing-value indicator of ``plan``."""
    spec = plan.spec
    lines = []
    for t in spec.columns:
        if t.name in plan.fills:
            strategy, value = plan.fills[t.name]
            then = "its encoding" if t.fills_category else "its other transforms"
            lines.append(
                f"{t.name}: nulls filled with the fitted {strategy.replace('_', ' ')} {value!r}, "
                f"before {then}"
            )
        if t.one_hot:
            oh = plan.one_hot[t.name]
            extra = ", the last for infrequent categories" if oh.infrequent is not None else ""
            if t.name in plan.category_fills:
                null = f"filled with {plan.category_fills[t.name]!r} first"
            elif oh.categories.null_position() is not None:
                null = "a category of its own"
            elif oh.null_unknown:
                null = "unseen when fitting"
            else:
                null = "all-zero (statistics file of version 1 or 2)"
            lines.append(
                f"{t.name}: one-hot, {len(oh.names)} columns{extra}; unseen values: "
                f"{t.handle_unknown}; null: {null}"
            )
        elif t.ids and t.hash_buckets is not None:
            lines.append(
                f"{t.name}: ids from FNV-1a 64 into {t.hash_buckets} buckets (2 ..), 0 null"
            )
        elif t.ids:
            lines.append(
                f"{t.name}: ids, a table of {plan.id_table_size(t)} rows "
                "(0 null, 1 rare or unseen, 2 .. by falling count)"
            )
        elif t.target_encode:
            how = (
                f"out of fold ({spec.folds} folds, seed {spec.seed})"
                if out_of_fold
                else ("with all training rows")
            )
            lines.append(
                f"{t.name}: target encoding of `{spec.target}`, smoothing {spec.smoothing}, {how}"
            )
        if t.indicator:
            lines.append(f"{t.name}{MISSING_SUFFIX}: 1 where `{t.name}` is null or NaN")
    return lines
