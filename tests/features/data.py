"""Generated data for the feature-encoder tests: skewed categories, nulls, a label."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from colbridge.io.fuse import FeatureSpec, fit_stats, iter_features, transform_batch

LETTERS = [f"k{i:02d}" for i in range(12)]
# skewed, with ties (k04/k05 and k08/k09 equally likely) so tie rules are exercised
WEIGHTS = np.array([30, 20, 12, 10, 6, 6, 5, 4, 2, 2, 2, 1], dtype=float)


def make_table(n: int, seed: int = 0, null_rate: float = 0.0) -> pa.Table:
    """Columns ``c`` (string category), ``x`` (float), ``e`` (exponential), ``y`` (label)."""
    rng = np.random.default_rng(seed)
    c = rng.choice(LETTERS, n, p=WEIGHTS / WEIGHTS.sum())
    x = rng.normal(2.0, 3.0, n)
    y = rng.normal(size=n) + np.array([int(v[1:]) for v in c]) * 0.3
    mask = rng.random(n) < null_rate if null_rate else None
    return pa.table(
        {
            "c": pa.array(c, mask=mask),
            "x": pa.array(x, mask=mask),
            "e": rng.exponential(2.0, n),
            "y": y,
        }
    )


def as_type(column: pa.Array, kind: str) -> pa.Array | pa.ChunkedArray:
    """``column`` (strings) as another categorical Arrow type, or split into chunks."""
    if kind == "string":
        return column
    if kind == "large_string":
        return column.cast(pa.large_string())
    if kind == "dictionary":
        return column.dictionary_encode()
    if kind == "int":
        return pc_int(column)
    if kind == "chunked":
        n = len(column)
        return pa.chunked_array([column.slice(0, n // 3), column.slice(n // 3)])
    if kind == "sliced":
        # an offset that is not a multiple of 8 in the validity bitmap
        padded = pa.concat_arrays([pa.array(["pad"] * 3, type=column.type), column])
        return padded.slice(3)
    raise AssertionError(kind)


def pc_int(column: pa.Array) -> pa.Array:
    """``k07`` → 7 (keeps nulls)."""
    import pyarrow.compute as pc

    return pc.utf8_slice_codeunits(column, 1).cast(pa.int64())


def matrix(table: pa.Table, spec: FeatureSpec, batch_rows: int | None = None) -> Any:
    """Features of ``table`` (statistics fitted on it, as ``colbridge fuse`` does)."""
    batches = list(iter_features(table, spec, batch_rows=batch_rows))
    return np.concatenate([b.features for b in batches]), batches[0].names


def fitted(train: pa.Table, spec: FeatureSpec, test: pa.Table) -> Any:
    """Fit on ``train``, transform ``test`` (the serving path)."""
    stats = fit_stats(train, spec)
    fb = transform_batch(test, spec, stats)
    return fb.features, fb.names


def objects(column: Any, null: Any = None) -> np.ndarray:
    """A column as scikit-learn's input: one object column, ``null`` (None, or NaN for
    ``SimpleImputer``'s default ``missing_values``) where a value is null."""
    values = column.to_pylist() if hasattr(column, "to_pylist") else list(column)
    return np.array([null if v is None else v for v in values], dtype=object)[:, None]


def sklearn_names(encoder: Any) -> list[str]:
    """A fitted ``OneHotEncoder``'s feature names as colbridge spells them (column ``c``)."""
    return [
        n.replace("x0_", "c=")
        .replace("infrequent_sklearn", "<infrequent>")
        .replace("c=None", "c=<null>")
        for n in encoder.get_feature_names_out()
    ]
