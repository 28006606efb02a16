"""Feature encoders: colbridge's `FeatureFusion` against scikit-learn and hand-written polars.

Run: python benchmarks/features.py [--sizes 1e6] [--repeats 5] [--workloads NAME,...]
                                   [--json out.json]

The data (no nulls, so that every contender takes its plain path): float64
columns ``x1`` (normal), ``x2`` (uniform), ``x3`` (exponential), a string
column ``c`` with 30 categories (Zipf-like frequencies, for one-hot), a string
column ``u`` with 100,000 categories (Zipf-like, for ids and target encoding),
and a float64 label ``y``. Workloads, each timed as ``fit`` (statistics only)
and ``transform`` (the fitted transform of the same rows), and target encoding
also as ``fit_transform`` (out of fold):

* scaling: zscore ``x1``, min-max ``x2``, robust ``x3`` — scikit-learn
  ``ColumnTransformer([StandardScaler, MinMaxScaler, RobustScaler])``;
* one_hot: ``c`` with ``min_frequency=0.01``, ``handle_unknown="infrequent_if_exist"``
  — ``OneHotEncoder(sparse_output=False, dtype=float32)``;
* ids: ``u`` to integer ids (most frequent first, ``min_frequency=2``) —
  scikit-learn has no frequency-ordered ids; its nearest is
  ``OrdinalEncoder(min_frequency=2, handle_unknown="use_encoded_value")``
  (ids in value order), timed as the comparable scikit-learn work;
* target: ``u`` target-encoded on ``y`` with ``smoothing=10`` and 5 folds —
  ``TargetEncoder(smooth=10.0, cv=5)``; ``fit_transform`` gives out-of-fold
  encodings (scikit-learn draws its own folds; colbridge and polars use
  colbridge's fold assignment).

Contenders, in one run with the rounds interleaved (``fused_cpu.time_all``):

* colbridge: ``FeatureFusion`` on a pyarrow table, float32 matrix;
* scikit-learn on a pandas frame (strings as object, its usual input), float32
  output where the encoder takes a ``dtype``;
* hand-written polars: the statistics with polars expressions (``mean``,
  ``std(ddof=0)``, ``quantile(..., "linear")``, ``value_counts``,
  ``group_by``), the transform with polars expressions and joins, then
  ``to_numpy()`` of the float32 result (a one-hot block is written with NumPy
  from polars' codes).

* hand kernel: the roofline of every fit and transform (`feature_kernels.py`): the
  plain numba loop of each case, with none of the nulls, batches, dtypes and
  option checks colbridge handles. Strings are hashed on every core; a fit
  groups rows by string in one open-addressing table per thread (each thread
  keeps the strings whose hash falls to it), sized for the data's known category
  count, and counts and sums in the same loop; a transform looks each row up in
  a table of the fitted categories (built once per fit) and writes its value or
  one-hot column in that loop; scaling is two parallel passes and NumPy's
  ``partition`` for the quantiles. The transforms apply the polars contender's
  fitted values; the hand fits are checked by applying their own.
  Its ratio is colbridge's speed as a fraction of the roofline's.

Answers are checked before timing: colbridge against scikit-learn (scaling,
one-hot, target encoding's transform), against the polars version (every
workload) and against the hand kernel's transform of its own fit, with float32
tolerances. Ratios are contender time ÷ colbridge time (> 1: colbridge faster).
The issue's goals: >= 5x scikit-learn, >= 1.5x hand-written polars. Results
depend on the machine: the committed ones (benchmarks/results/features.md) name
theirs.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from feature_kernels import StringIndex, group_strings, pooled, scaling_stats, thread_count
from fused_cpu import machine, time_all
from numba import njit, prange
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    RobustScaler,
    StandardScaler,
    TargetEncoder,
)

from colbridge.io.encoders import folds_of
from colbridge.ml import FeatureFusion

BASE = "colbridge"
SKLEARN = "scikit-learn"
POLARS = "polars (hand-written)"
HAND = "hand kernel"
SMOOTH = 10.0
FOLDS = 5


#: the category counts of ``c`` and ``u``
SMALL = 30
BIG = 100_000


def make_data(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    small = np.array([f"c{i:02d}" for i in range(SMALL)], dtype=object)
    p_small = 1.0 / np.arange(1, SMALL + 1)
    big = np.array([f"u{i:06d}" for i in range(BIG)], dtype=object)
    p_big = 1.0 / np.arange(1, BIG + 1) ** 0.8
    u_codes = rng.choice(big.size, n, p=p_big / p_big.sum())
    return pa.table(
        {
            "x1": rng.normal(3.0, 2.0, n),
            "x2": rng.uniform(-5.0, 5.0, n),
            "x3": rng.exponential(2.0, n),
            "c": pa.array(small[rng.choice(SMALL, n, p=p_small / p_small.sum())], pa.string()),
            "u": pa.array(big[u_codes], pa.string()),
            "y": rng.normal(size=n) + (u_codes % 7) * 0.2,
        }
    )


@dataclass
class Workload:
    """One encoder: how each contender fits, transforms (and fits out of fold)."""

    colbridge: Callable[[], FeatureFusion]
    sklearn: Callable[[], Any]
    polars_fit: Callable[[pl.DataFrame], Any]
    polars_transform: Callable[[pl.DataFrame, Any], np.ndarray]
    columns: list[str]
    hand_fit: Callable[[pa.Table], Any]
    hand_transform: Callable[[pa.Table, Any], np.ndarray]
    polars_oof: Callable[[pl.DataFrame], np.ndarray] | None = None
    sklearn_matches: bool = True


# -- hand kernels (the roofline of every fit and transform; `feature_kernels`) ---------
_FITTED: dict[int, tuple[object, StringIndex]] = {}


def _fitted_index(fitted: object, keys: Callable[[], Any], values: Callable[[], np.ndarray]
                  ) -> StringIndex:  # fmt: skip
    """The fitted categories' lookup table, made once per fit (as colbridge builds its
    lookups once per fitted spec), not in every round."""
    hit = _FITTED.get(id(fitted))
    if hit is None or hit[0] is not fitted:
        index = StringIndex(pa.array(keys(), pa.string()), np.asarray(values(), np.float32))
        hit = _FITTED[id(fitted)] = (fitted, index)
    return hit[1]


def _values(table: pa.Table, name: str) -> np.ndarray:
    """A float column without nulls as NumPy, in place (one chunk) or combined."""
    column = table.column(name)
    array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return array.to_numpy(zero_copy_only=True)


def _hand_scaling_fit(table: pa.Table) -> dict[str, float]:
    x1, x2, x3 = (_values(table, n) for n in ("x1", "x2", "x3"))
    return scaling_stats(x1, x2, x3)


def _hand_one_hot_fit(table: pa.Table) -> tuple[list[str], bool]:
    keys, counts, _ = group_strings(table.column("c"), None, SMALL, thread_count())
    frequent = sorted(k for k, n in zip(keys.to_pylist(), counts, strict=True)
                      if n >= 0.01 * table.num_rows)  # fmt: skip
    return frequent, len(frequent) < len(keys)


def _hand_ids_fit(table: pa.Table) -> pl.DataFrame:
    keys, counts, _ = group_strings(table.column("u"), None, BIG, thread_count())
    keep = counts >= 2
    kept = pa.table({"u": keys.filter(pa.array(keep)), "n": counts[keep]})
    vocab = kept.take(pc.sort_indices(kept, [("n", "descending"), ("u", "ascending")]))
    return pl.DataFrame({"u": vocab["u"], "id": np.arange(2, 2 + vocab.num_rows)})


def _hand_target_fit(table: pa.Table) -> tuple[pl.DataFrame, float]:
    y = _values(table, "y")
    keys, counts, sums = group_strings(table.column("u"), y, BIG, thread_count())
    mean = float(y.mean())
    return pl.DataFrame({"u": keys, "enc": (sums + SMOOTH * mean) / (counts + SMOOTH)}), mean


@njit(parallel=True, cache=True)
def _scale3(x1, x2, x3, m, s, lo, span, med, iqr, out):  # type: ignore[no-untyped-def]
    for i in prange(x1.shape[0]):
        out[i, 0] = (x1[i] - m) / s
        out[i, 1] = (x2[i] - lo) / span
        out[i, 2] = (x3[i] - med) / iqr


def _hand_scaling(table: pa.Table, s: dict[str, float]) -> np.ndarray:
    cols = [_values(table, n) for n in ("x1", "x2", "x3")]
    out = pooled((table.num_rows, 3), np.float32)
    _scale3(*cols, s["m"], s["s"], s["lo"], s["hi"] - s["lo"], s["med"], s["q75"] - s["q25"],
            out)  # fmt: skip
    return out


def _hand_one_hot(table: pa.Table, fitted: tuple[list[str], bool]) -> np.ndarray:
    frequent, infrequent = fitted
    index = _fitted_index(fitted, lambda: frequent, lambda: np.zeros(len(frequent)))
    width = len(frequent) + int(infrequent)
    return index.one_hot(table.column("c"), width, len(frequent) if infrequent else -1)


def _hand_ids(table: pa.Table, vocab: pl.DataFrame) -> np.ndarray:
    index = _fitted_index(vocab, lambda: vocab["u"].to_list(), lambda: vocab["id"].to_numpy())
    return index.gather(table.column("u"), 1.0)


def _hand_target(table: pa.Table, fitted: tuple[pl.DataFrame, float]) -> np.ndarray:
    enc, mean = fitted
    index = _fitted_index(enc, lambda: enc["u"].to_list(), lambda: enc["enc"].to_numpy())
    return index.gather(table.column("u"), mean)


# -- hand-written polars ---------------------------------------------------------------
def _scaling_fit(df: pl.DataFrame) -> dict[str, float]:
    row = df.select(
        m=pl.col("x1").mean(), s=pl.col("x1").std(ddof=0),
        lo=pl.col("x2").min(), hi=pl.col("x2").max(),
        med=pl.col("x3").median(), q25=pl.col("x3").quantile(0.25, "linear"),
        q75=pl.col("x3").quantile(0.75, "linear"),
    ).row(0, named=True)  # fmt: skip
    return dict(row)


def _scaling_transform(df: pl.DataFrame, s: dict[str, float]) -> np.ndarray:
    return df.select(
        ((pl.col("x1") - s["m"]) / s["s"]).cast(pl.Float32),
        ((pl.col("x2") - s["lo"]) / (s["hi"] - s["lo"])).cast(pl.Float32),
        ((pl.col("x3") - s["med"]) / (s["q75"] - s["q25"])).cast(pl.Float32),
    ).to_numpy()


def _one_hot_fit(df: pl.DataFrame) -> tuple[list[str], bool]:
    counts = df["c"].value_counts()
    frequent = counts.filter(pl.col("count") >= 0.01 * df.height)["c"].sort().to_list()
    return frequent, len(frequent) < counts.height


def _one_hot_transform(df: pl.DataFrame, fitted: tuple[list[str], bool]) -> np.ndarray:
    frequent, infrequent = fitted
    width = len(frequent) + int(infrequent)
    mapping = pl.DataFrame({"c": frequent, "k": np.arange(len(frequent), dtype=np.int64)})
    codes = df.select("c").join(mapping, on="c", how="left", maintain_order="left")["k"]
    idx = codes.fill_null(len(frequent) if infrequent else -1).to_numpy()
    out = np.zeros((df.height, width), dtype=np.float32)
    rows = np.flatnonzero(idx >= 0)
    out[rows, idx[rows]] = 1.0
    return out


def _ids_fit(df: pl.DataFrame) -> pl.DataFrame:
    return (
        df["u"].value_counts().filter(pl.col("count") >= 2)
        .sort(["count", "u"], descending=[True, False])
        .with_row_index("id", offset=2).select("u", pl.col("id").cast(pl.Int64))
    )  # fmt: skip


def _ids_transform(df: pl.DataFrame, vocab: pl.DataFrame) -> np.ndarray:
    return (
        df.select("u").join(vocab, on="u", how="left", maintain_order="left")
        .select(pl.col("id").fill_null(1).cast(pl.Float32)).to_numpy()
    )  # fmt: skip


def _target_fit(df: pl.DataFrame) -> tuple[pl.DataFrame, float]:
    mean = float(df["y"].mean())  # type: ignore[arg-type]
    enc = (
        df.group_by("u")
        .agg(s=pl.col("y").sum(), n=pl.len())
        .select("u", enc=(pl.col("s") + SMOOTH * mean) / (pl.col("n") + SMOOTH))
    )
    return enc, mean


def _target_transform(df: pl.DataFrame, fitted: tuple[pl.DataFrame, float]) -> np.ndarray:
    enc, mean = fitted
    return (
        df.select("u").join(enc, on="u", how="left", maintain_order="left")
        .select(pl.col("enc").fill_null(mean).cast(pl.Float32)).to_numpy()
    )  # fmt: skip


def _target_oof(df: pl.DataFrame) -> np.ndarray:
    folds = pl.Series("fold", folds_of(0, df.height, FOLDS, 0))
    d = df.select("u", "y").with_columns(folds)
    per = d.group_by("u", "fold").agg(fs=pl.col("y").sum(), fn=pl.len())
    tot = per.group_by("u").agg(ts=pl.col("fs").sum(), tn=pl.col("fn").sum())
    ys = d.group_by("fold").agg(ys=pl.col("y").sum(), yn=pl.len())
    all_s, all_n = float(ys["ys"].sum()), float(ys["yn"].sum())
    ys = ys.with_columns(mean=(all_s - pl.col("ys")) / (all_n - pl.col("yn")))
    out = (
        d.join(per, on=["u", "fold"], how="left", maintain_order="left")
        .join(tot, on="u", how="left", maintain_order="left")
        .join(ys.select("fold", "mean"), on="fold", how="left", maintain_order="left")
        .select(
            ((pl.col("ts") - pl.col("fs") + SMOOTH * pl.col("mean"))
             / (pl.col("tn") - pl.col("fn") + SMOOTH)).cast(pl.Float32)
        )
    )  # fmt: skip
    return out.to_numpy()


WORKLOADS: dict[str, Workload] = {
    "scaling": Workload(
        lambda: FeatureFusion(["x1", "x2", "x3"], zscore=["x1"], minmax=["x2"], robust=["x3"]),
        lambda: ColumnTransformer(
            [
                ("z", StandardScaler(), ["x1"]),
                ("m", MinMaxScaler(), ["x2"]),
                ("r", RobustScaler(), ["x3"]),
            ]
        ),
        _scaling_fit,
        _scaling_transform,
        ["x1", "x2", "x3"],
        _hand_scaling_fit,
        _hand_scaling,
    ),
    "one_hot": Workload(
        lambda: FeatureFusion(
            ["c"], one_hot=["c"], min_frequency=0.01, handle_unknown="infrequent_if_exist"
        ),
        lambda: ColumnTransformer(
            [
                (
                    "c",
                    OneHotEncoder(
                        sparse_output=False,
                        dtype=np.float32,
                        min_frequency=0.01,
                        handle_unknown="infrequent_if_exist",
                    ),
                    ["c"],
                )
            ]
        ),
        _one_hot_fit,
        _one_hot_transform,
        ["c"],
        _hand_one_hot_fit,
        _hand_one_hot,
    ),
    "ids": Workload(
        lambda: FeatureFusion(["u"], ids=["u"], min_frequency=2),
        lambda: ColumnTransformer(
            [
                (
                    "u",
                    OrdinalEncoder(
                        min_frequency=2,
                        handle_unknown="use_encoded_value",
                        unknown_value=-1,
                        dtype=np.float32,
                    ),
                    ["u"],
                )
            ]
        ),
        _ids_fit,
        _ids_transform,
        ["u"],
        _hand_ids_fit,
        _hand_ids,
        sklearn_matches=False,
    ),
    "target": Workload(
        lambda: FeatureFusion(["u"], target_encode=["u"], smoothing=SMOOTH, folds=FOLDS),
        lambda: ColumnTransformer(
            [("u", TargetEncoder(smooth=SMOOTH, cv=FOLDS, target_type="continuous"), ["u"])]
        ),
        _target_fit,
        _target_transform,
        ["u"],
        _hand_target_fit,
        _hand_target,
        polars_oof=_target_oof,
    ),
}


def run(n: int, repeats: int, chosen: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    table = make_data(n)
    frame = table.to_pandas()  # strings as object: scikit-learn's usual input
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    y = table.column("y").to_numpy()
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in chosen:
        w = WORKLOADS[name]
        X_arrow, X_pandas = table.select([*w.columns, "y"]), frame[w.columns]
        cb_fitted = w.colbridge().fit(X_arrow, y)
        sk_fitted = w.sklearn().fit(X_pandas, y)
        pl_fitted = w.polars_fit(df)
        ours = cb_fitted.transform(X_arrow)
        np.testing.assert_allclose(ours, w.polars_transform(df, pl_fitted), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(ours, w.hand_transform(table, pl_fitted), rtol=2e-5, atol=2e-5)
        hand_fitted = w.hand_fit(table)
        np.testing.assert_allclose(ours, w.hand_transform(table, hand_fitted), rtol=2e-5,
                                   atol=2e-5)  # fmt: skip
        if w.sklearn_matches:
            np.testing.assert_allclose(ours, sk_fitted.transform(X_pandas), rtol=2e-5, atol=2e-5)
        phases: dict[str, dict[str, Callable[[], object]]] = {
            "fit": {
                BASE: lambda w=w, X=X_arrow: w.colbridge().fit(X, y),
                SKLEARN: lambda w=w, X=X_pandas: w.sklearn().fit(X, y),
                POLARS: lambda w=w: w.polars_fit(df),
                HAND: lambda w=w: w.hand_fit(table),
            },
            "transform": {
                BASE: lambda f=cb_fitted, X=X_arrow: f.transform(X),
                SKLEARN: lambda f=sk_fitted, X=X_pandas: f.transform(X),
                POLARS: lambda w=w, f=pl_fitted: w.polars_transform(df, f),
                HAND: lambda w=w, f=pl_fitted: w.hand_transform(table, f),
            },
        }
        if w.polars_oof is not None:
            oof = w.colbridge().fit_transform(X_arrow, y)
            np.testing.assert_allclose(oof, w.polars_oof(df), rtol=2e-5, atol=2e-5)
            phases["fit_transform"] = {
                BASE: lambda w=w, X=X_arrow: w.colbridge().fit_transform(X, y),
                SKLEARN: lambda w=w, X=X_pandas: w.sklearn().fit_transform(X, y),
                POLARS: lambda w=w: w.polars_oof(df),  # type: ignore[misc]
            }
        out[name] = {}
        for phase, fns in phases.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[name][phase] = time_all(fns, repeats)
            times = out[name][phase]
            print(
                f"{n:,} {name} {phase}: "
                + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in times.items()),
                file=sys.stderr,
            )
    return out


def summary(times: dict[str, float]) -> dict[str, Any]:
    """Ratios of colbridge (> 1: colbridge faster) and whether the goals are met."""
    vs_sk = times[SKLEARN] / times[BASE]
    vs_pl = times[POLARS] / times[BASE]
    return {
        "colbridge_s": times[BASE],
        "vs_sklearn": vs_sk,
        "vs_polars": vs_pl,
        "goals_met": vs_sk >= 5.0 and vs_pl >= 1.5,
        # colbridge's speed as a fraction of the hand kernel's (transform phase)
        "of_hand": times[HAND] / times[BASE] if HAND in times else None,
    }


def markdown(runs: dict[int, Any], meta: dict[str, str], repeats: int) -> str:
    lines = ["# feature encoders benchmark", ""]
    lines += [f"- {k}: {v}" for k, v in meta.items()]
    lines += [
        "",
        "Goals: colbridge >= 5x scikit-learn and >= 1.5x hand-written polars. Times are "
        f"medians of {repeats} interleaved rounds; `÷ colbridge` = contender time ÷ colbridge "
        "time (> 1: colbridge faster); on the hand kernel rows (and `÷ hand kernel`) it is "
        "colbridge's speed as a fraction of the hand-written kernel's. Answers were checked "
        "before timing (ids: against polars only; scikit-learn's OrdinalEncoder numbers its "
        "ids in value order).",
    ]
    for n, res in runs.items():
        lines += ["", f"## {n:,} rows"]
        for name, phases in res.items():
            for phase, times in phases.items():
                lines += ["", f"### {name}: {phase}", ""]
                lines += ["| contender | time | ÷ colbridge |", "|---|---:|---:|"]
                for c, t in times.items():
                    lines.append(f"| {c} | {t * 1e3:.1f} ms | {t / times[BASE]:.2f}x |")
    lines += ["", "## Summary: speed ratios of colbridge, > 1: colbridge faster", ""]
    lines += [
        "| rows | workload | phase | colbridge | vs scikit-learn | vs polars | ÷ hand kernel "
        "| goals |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for n, res in runs.items():
        for name, phases in res.items():
            for phase, times in phases.items():
                s = summary(times)
                lines.append(
                    f"| {n:,} | {name} | {phase} | {s['colbridge_s'] * 1e3:.1f} ms | "
                    f"{s['vs_sklearn']:.2f} | {s['vs_polars']:.2f} | "
                    f"{'—' if s['of_hand'] is None else format(s['of_hand'], '.2f')} | "
                    f"{'met' if s['goals_met'] else 'missed'} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", "--size", default="1e6", help="comma-separated row counts")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help=f"subset of: {', '.join(WORKLOADS)}"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None, help="write medians and ratios here")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    chosen = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in chosen if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    runs = {n: run(n, args.repeats, chosen) for n in sizes}
    import sklearn

    meta = {
        "command": f"`{shlex.join(sys.orig_argv)}`",
        **machine(),
        "scikit-learn": sklearn.__version__,
        "data": "x1 N(3, 2), x2 U(-5, 5), x3 Exp(2) float64; c 30 string categories, u 100,000 "
        "string categories (Zipf-like); y float64; no nulls",
    }
    print(markdown(runs, meta, args.repeats))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            summaries = {
                str(n): {name: {ph: summary(t) for ph, t in phases.items()}
                         for name, phases in res.items()}
                for n, res in runs.items()
            }  # fmt: skip
            out = {"meta": meta, "runs": {str(k): v for k, v in runs.items()}}
            json.dump({**out, "summary": summaries}, f, indent=1)


if __name__ == "__main__":
    main()
