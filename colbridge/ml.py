"""Jobs layer: `FeatureFusion`, the feature job as a scikit-learn transformer.

The keywords are those of ``colbridge fuse`` (``--zscore a,b`` is ``zscore=["a", "b"]``),
both go through `colbridge.io.fuse.feature_columns`, and the fitted state is the
same statistics file (`FeatureFusion.save_stats`, ``stats=``), so a spec fitted in
Python serves from the command line and the other way round. Importing this module
imports scikit-learn; ``import colbridge`` does not import it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from colbridge.errors import NullValuesError
from colbridge.io.fuse import (
    FeatureBatch,
    FeaturePlan,
    FeatureSpec,
    FeatureStats,
    PathLike,
    feature_columns,
    fit_stats,
)
from colbridge.io.loader import FeatureLoader, loader
from colbridge.types import parse_dtype

__all__ = ["FeatureFusion", "FeatureLoader", "loader"]

#: Name given to ``y`` when it is joined to ``X`` for target encoding.
_Y = "__colbridge_target__"
#: Most rows `FeatureFusion.fit` reads at once (a batch's temporary columns: 128 MiB each)
_FIT_BATCH_MAX = 1 << 24


def _to_arrow(X: Any) -> pa.Table:
    """An Arrow table of ``X``: pandas, polars, pyarrow, or a 2-D array (columns x0, x1, ...)."""
    if isinstance(X, pa.Table):
        return X
    if isinstance(X, pa.RecordBatch):
        return pa.Table.from_batches([X])
    module = type(X).__module__.split(".")[0]
    if module == "polars":
        table: pa.Table = X.to_arrow()
        return table
    if module == "pandas":
        return pa.Table.from_pandas(X, preserve_index=False)
    if hasattr(X, "__arrow_c_stream__"):
        return pa.table(X)
    array = np.asarray(X)
    if array.ndim != 2:
        msg = (
            f"Expected a 2D array or a dataframe, got an array of {array.ndim} dimension(s); "
            "reshape your data with array.reshape(-1, 1) for one feature"
        )
        raise ValueError(msg)
    return pa.table({f"x{j}": array[:, j] for j in range(array.shape[1])})


def _y_array(y: Any) -> pa.Array:
    if isinstance(y, (pa.Array, pa.ChunkedArray)):
        return y
    module = type(y).__module__.split(".")[0]
    if module == "polars":
        return y.to_arrow()
    values = np.asarray(y)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values.reshape(-1)  # a column vector, as scikit-learn takes one
    if values.ndim != 1:
        msg = f"y must be one target column; got an array of shape {values.shape}"
        raise ValueError(msg)
    return pa.array(values)


def _plan(spec: FeatureSpec, stats: FeatureStats) -> FeaturePlan:
    """The transformer's plan: NaN where a numeric or date feature has no value.

    As scikit-learn's scalers leave it: the CLI writes 0 there beside a validity
    matrix, but a transformer returns one array, where a missing value must not look
    like a real 0 (the mean, after ``zscore``). The pack writes the NaN itself. An
    integer matrix cannot hold NaN: its plan builds the validity, which
    `_refuse_missing` reads. Encoders have no missing values (a null is a category; an
    unseen one-hot value is all zeros, as in scikit-learn).
    """
    if parse_dtype(spec.dtype).numpy.kind == "f":
        return FeaturePlan(dataclasses.replace(spec, validity=False), stats, missing=np.nan)
    return FeaturePlan(dataclasses.replace(spec, validity=True), stats)


def _refuse_missing(batch: FeatureBatch, plan: FeaturePlan) -> np.ndarray[Any, Any]:
    """The matrix, or an error naming the features of an integer matrix with no value."""
    features, valid = batch.features, batch.validity
    if valid is None or features.dtype.kind == "f":
        return features
    kernel = np.isin(np.asarray(batch.names, dtype=object), plan.kernel_names)
    missing_at = ~valid & kernel
    if not missing_at.any():
        return features
    missing = [batch.names[j] for j in np.flatnonzero(missing_at.any(axis=0))]
    msg = (
        f"features {missing} have missing values, which a {features.dtype} matrix cannot "
        f"hold; fill them (`fill_null={{{missing[0]!r}: ...}}`) or use a float dtype "
        "(NaN where missing)"
    )
    raise NullValuesError(msg)


class FeatureFusion(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """Columns → one feature matrix, fitted like ``colbridge fuse`` (scikit-learn API).

    Parameters
    ----------
    columns
        Feature columns in matrix order; ``None`` takes every column of ``X`` (but the
        ``target``). Columns named by a transform below are added after these.
    zscore, minmax, robust, log1p, indicator
        Numeric columns to standardise, scale to [0, 1], centre on the median and divide
        by the interquartile range, take ``log(1 + x)`` of (before scaling), or follow
        by a ``<name>_missing`` 0/1 feature.
    one_hot, ids, target_encode
        Categorical columns: one-hot block, integer ids (0 null, 1 rare or unseen), or
        the smoothed target mean (out of fold in `fit_transform`). As in scikit-learn's
        ``OneHotEncoder`` and ``TargetEncoder``, a null is a category of its own (a
        ``<name>=<null>`` column, its own target mean) when the fit saw one, unless
        ``fill_null={name: "most_frequent"}`` fills it with the most frequent category.
    datetime, cyclical
        ``{column: [parts]}``: date/time parts of a Date, Datetime or Time column, from
        ``month``, ``weekday`` (Monday 1), ``day``, ``ordinal_day``, ``hour``, ``minute``
        (polars' values; a time-zoned datetime's are local), one feature each
        (``<name>_<part>``); the columns listed in ``cyclical`` give a sin/cos pair per
        part instead (``<name>_<part>_sin``, ``<name>_<part>_cos``).
    fill_null, clip, quantile_bins, hash_buckets
        ``{column: value}``: fill value, ``(lo, hi)`` bounds, number of quantile bins,
        number of hash buckets (ids from a stable hash). A fill value is a number or,
        for a numeric column, ``"mean"``, ``"median"`` or ``"most_frequent"``: fitted
        on the column's non-null, non-NaN values as ``SimpleImputer`` does (NaN of a
        pandas float column is a null), before the column's other transforms, whose
        statistics are then fitted on the filled values (as
        ``make_pipeline(SimpleImputer(strategy="median"), StandardScaler())``). A
        one-hot, ids or target-encoded column takes ``"most_frequent"``: its nulls become
        its most frequent category (the smallest among ties) before the encoder, as
        ``make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder())``, so
        it has no null category. A column with no value to fit the fill on is an error.
    min_frequency, max_categories, handle_unknown
        Infrequent categories of one-hot and id columns, as in scikit-learn's
        ``OneHotEncoder``; ``handle_unknown`` is ``"ignore"``, ``"error"`` or
        ``"infrequent_if_exist"``.
    target, folds, smoothing, seed
        The label column of ``X`` for target encoding (or pass ``y`` to `fit`), the
        number of folds, ``"auto"`` or a float smoothing, and the fold assignment's seed.
    dtype
        Element type of the matrix.
    stats
        A `FeatureStats` or the path of a statistics file: `fit` then reads no data.

    Examples
    --------
    >>> import pyarrow as pa
    >>> X = pa.table({"x": [1.0, 2.0, None, 4.0], "c": ["a", "b", "a", "z"]})
    >>> ff = FeatureFusion(["x", "c"], robust=["x"], indicator=["x"], one_hot=["c"],
    ...                    min_frequency=2, dtype="float64")
    >>> ff.fit_transform(X)[0]  # (1 - median 2) / IQR 1.5
    array([-0.66666667,  0.        ,  1.        ,  0.        ])
    >>> list(ff.get_feature_names_out())
    ['x', 'x_missing', 'c=a', 'c=<infrequent>']

    A fill value fitted on the data, before scaling:

    >>> ff = FeatureFusion(["x"], fill_null={"x": "mean"}, minmax=["x"], dtype="float64")
    >>> ff.fit_transform(X)[:, 0]  # the null becomes the mean 7/3, then (x - 1) / 3
    array([0.        , 0.33333333, 0.44444444, 1.        ])

    Date/time parts, as integers or as sin/cos pairs:

    >>> import datetime as dt
    >>> X = pa.table({"ts": [dt.datetime(2024, 5, 6, 18), dt.datetime(2024, 5, 12, 6)]})
    >>> ff = FeatureFusion(datetime={"ts": ["hour", "weekday"]}, dtype="float64")
    >>> ff.fit_transform(X)
    array([[18.,  1.],
           [ 6.,  7.]])
    >>> ff.set_params(cyclical=["ts"]).fit_transform(X)[:, :2].round(3) + 0.0  # hour 18 of 24
    array([[-1.,  0.],
           [ 1.,  0.]])
    >>> list(ff.get_feature_names_out())[:3]
    ['ts_hour_sin', 'ts_hour_cos', 'ts_weekday_sin']
    """

    def __init__(
        self,
        columns: Sequence[str] | None = None,
        *,
        zscore: Sequence[str] = (),
        minmax: Sequence[str] = (),
        robust: Sequence[str] = (),
        one_hot: Sequence[str] = (),
        ids: Sequence[str] = (),
        target_encode: Sequence[str] = (),
        log1p: Sequence[str] = (),
        indicator: Sequence[str] = (),
        fill_null: Mapping[str, float | str] | None = None,
        clip: Mapping[str, tuple[float | None, float | None]] | None = None,
        quantile_bins: Mapping[str, int] | None = None,
        hash_buckets: Mapping[str, int] | None = None,
        datetime: Mapping[str, Sequence[str]] | None = None,
        cyclical: Sequence[str] = (),
        min_frequency: float | None = None,
        max_categories: int | None = None,
        handle_unknown: str = "ignore",
        target: str | None = None,
        folds: int = 5,
        smoothing: float | str = "auto",
        seed: int = 0,
        dtype: str = "float32",
        stats: FeatureStats | PathLike | None = None,
    ) -> None:
        self.columns = columns
        self.zscore = zscore
        self.minmax = minmax
        self.robust = robust
        self.one_hot = one_hot
        self.ids = ids
        self.target_encode = target_encode
        self.log1p = log1p
        self.indicator = indicator
        self.fill_null = fill_null
        self.clip = clip
        self.quantile_bins = quantile_bins
        self.hash_buckets = hash_buckets
        self.datetime = datetime
        self.cyclical = cyclical
        self.min_frequency = min_frequency
        self.max_categories = max_categories
        self.handle_unknown = handle_unknown
        self.target = target
        self.folds = folds
        self.smoothing = smoothing
        self.seed = seed
        self.dtype = dtype
        self.stats = stats

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # nulls and NaN are data here (fill_null, indicator)
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        try:
            tags.transformer_tags.preserves_dtype = [str(np.dtype(self.dtype))]
        except TypeError:  # not a dtype: the spec's check names it when fitting
            tags.transformer_tags.preserves_dtype = []
        tags.target_tags.required = False
        return tags

    def _spec(self, table: pa.Table, target: str | None) -> FeatureSpec:
        columns = self.columns
        if columns is None:
            columns = [c for c in table.column_names if c != target]
        per_column = feature_columns(
            list(columns), zscore=self.zscore, minmax=self.minmax, robust=self.robust,
            one_hot=self.one_hot, ids=self.ids, target_encode=self.target_encode,
            log1p=self.log1p, indicator=self.indicator, fill_null=self.fill_null,
            clip=self.clip, quantile_bins=self.quantile_bins, hash_buckets=self.hash_buckets,
            datetime=self.datetime, cyclical=self.cyclical, min_frequency=self.min_frequency,
            max_categories=self.max_categories, handle_unknown=self.handle_unknown,
        )  # fmt: skip
        return FeatureSpec.from_dict(
            {
                "columns": per_column,
                "dtype": self.dtype,
                "target": target,
                "folds": self.folds,
                "smoothing": self.smoothing,
                "seed": self.seed,
            }
        )

    def _table(self, X: Any, *, reset: bool) -> pa.Table:
        # feature-name and feature-count checks as every scikit-learn estimator does them
        if isinstance(X, pa.RecordBatch):
            X = pa.Table.from_batches([X])
        if hasattr(X, "tocsr"):  # scipy.sparse, without importing scipy to ask
            msg = (
                "A sparse matrix was passed, but dense data is required: FeatureFusion reads "
                "dataframe columns. Use X.toarray() to convert to a dense NumPy array."
            )
            raise TypeError(msg)
        if hasattr(X, "__array__") and not hasattr(X, "columns") and not isinstance(X, pa.Table):
            X = np.asarray(X)
            if X.ndim != 2:
                msg = (
                    f"Expected a 2D array, got a {X.ndim}D array instead. Reshape your data "
                    "with array.reshape(-1, 1) for one feature or array.reshape(1, -1) for "
                    "one sample."
                )
                raise ValueError(msg)
            if np.iscomplexobj(X):
                msg = "Complex data not supported; pass the real and imaginary parts as columns"
                raise ValueError(msg)
        table = _to_arrow(X)
        needed = {t.name for t in self.spec_.columns} if not reset else set()
        if (
            reset
            or not (hasattr(X, "columns") or isinstance(X, pa.Table))
            or not (needed <= set(table.column_names))
        ):
            # a frame holding every feature column is read by name, whatever else it holds
            # or its column order (a serving frame without the label, say)
            validate_data(self, X, reset=reset, skip_check_array=True)
        if table.num_columns == 0:
            shape = (table.num_rows, 0)
            msg = f"0 feature(s) (shape={shape}) while a minimum of 1 is required."
            raise ValueError(msg)
        return table

    def _with_target(self, table: pa.Table, y: Any) -> tuple[pa.Table, str | None]:
        if y is None:
            return table, self.target
        name = self.target if self.target is not None else _Y
        values = _y_array(y)
        if self.target_encode and not (
            pa.types.is_integer(values.type)
            or pa.types.is_floating(values.type)
            or pa.types.is_boolean(values.type)
            or pa.types.is_null(values.type)
        ):
            msg = (
                f"y has type `{values.type}`; target encoding needs a numeric or boolean "
                "target (encode class labels as 0/1 first)"
            )
            raise ValueError(msg)
        if len(values) != table.num_rows:
            msg = f"y has {len(values)} rows but X has {table.num_rows}; they must match"
            raise ValueError(msg)
        if name in table.column_names:
            table = table.drop_columns([name])
        return table.append_column(name, values), name

    def fit(self, X: Any, y: Any = None) -> FeatureFusion:
        """Fit the statistics on ``X`` (one pass), or read them from ``stats``."""
        self._fit(X, y)
        return self

    def _fit(self, X: Any, y: Any) -> pa.Table:
        table = self._table(X, reset=True)
        if table.num_rows == 0 and self.stats is None:
            msg = f"Found array with 0 sample(s) (shape={(0, table.num_columns)}) while a "
            msg += "minimum of 1 is required to fit statistics."
            raise ValueError(msg)
        fit_table, target = self._with_target(table, y if self.target_encode else None)
        spec = self._spec(table, target)
        if self.stats is None:
            # the frame is in memory already: numeric statistics are fitted whole (batches
            # would add each pass's overhead per batch and a copy of the values exact
            # quantiles hold), up to a cap; categories are counted batch by batch, which
            # measured faster (each batch's strings numbered into one table)
            categorical = any(t.one_hot or t.ids or t.target_encode for t in spec.columns)
            rows = None if categorical else min(max(fit_table.num_rows, 1), _FIT_BATCH_MAX)
            stats = fit_stats(fit_table, spec, batch_rows=rows)
        elif isinstance(self.stats, FeatureStats):
            stats = self.stats
        else:
            stats = FeatureStats.load(self.stats)
        self.spec_ = spec
        self.stats_ = stats
        self._plan = _plan(spec, stats)
        self.feature_names_out_ = self._plan.names
        return table

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = super().__getstate__()
        state.pop("_plan", None)  # rebuilt from spec_ and stats_ when needed
        return state

    def _fitted_plan(self) -> FeaturePlan:
        plan = getattr(self, "_plan", None)
        if plan is None:
            plan = self._plan = _plan(self.spec_, self.stats_)
        return plan

    def transform(self, X: Any) -> Any:
        """The feature matrix of ``X`` (target encodings fitted on all training rows)."""
        check_is_fitted(self, "stats_")
        table = self._table(X, reset=False)
        plan = self._fitted_plan()
        return _refuse_missing(plan.transform(table), plan)

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        """Fit, then transform ``X``; target-encoded columns of these rows are out of fold.

        Each row's target encoding is fitted on the ``folds - 1`` folds it is not in
        (as scikit-learn's ``TargetEncoder.fit_transform``), so it never sees its own
        label; `transform` uses the encodings fitted on all rows.
        """
        table = self._fit(X, y)
        out_of_fold = self.stats is None and self.spec_.target_encoded
        plan = self._fitted_plan()
        return _refuse_missing(plan.transform(table, out_of_fold=out_of_fold), plan)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray[Any, Any]:
        """Names of the matrix's columns (``c=value``, ``<name>_missing``, ``ts_hour``...).

        ``input_features``, when given, must be the fitted input's columns (as for any
        scikit-learn transformer; a mismatch raises ``ValueError``).
        """
        check_is_fitted(self, "stats_")
        _check_feature_names_in(self, input_features)
        return np.asarray(self.feature_names_out_, dtype=object)

    def save_stats(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted statistics (for ``colbridge fuse --stats`` or ``stats=``)."""
        check_is_fitted(self, "stats_")
        self.stats_.save(path)
