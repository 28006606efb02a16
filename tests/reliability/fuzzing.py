"""Differential fuzzing helpers: random expression trees, random frames, a three-way comparison.

A *tree* is a nested tuple (hashable, printable, replayable) that `build`
turns into a colbridge expression or the same polars expression. A tree is
drawn once with its column types and then checked on many frames, so the
number of compiled kernels stays bounded (one per tree and null pattern)
while the number of cases grows with the frames.

Each frame is compared with polars (the oracle) on polars, pyarrow and pandas
inputs through `colbridge.testing.asserts.assert_same_as_polars`, which also
requires colbridge to raise a `colbridge.ColbridgeError` wherever polars
raises. Some frames also run through the CUDA backend's generated kernel text,
compiled with g++ and executed on the host (`compute_on_host`), and that
answer is compared with the CPU backend's.

Outcomes are counted in `STATS` (the reliability report reads them):
``cases`` (one frame kind checked against polars, or one CUDA-host check),
``mismatches`` (a wrong value, a missing error, or a non-colbridge exception)
and ``refusals`` (colbridge raised a clear error where polars computed an
answer, e.g. int64 + uint64, which polars widens to int128).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import FRAME_KINDS, assert_same_as_polars
from colbridge.testing.cuda_host import HostRuntime, compute_on_host

Tree = tuple[Any, ...]

#: every dtype the engine computes on
NUMERIC_TYPES: tuple[pa.DataType, ...] = (
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
    pa.float32(), pa.float64(),
)  # fmt: skip
_PL_TYPE = {
    "int8": pl.Int8, "int16": pl.Int16, "int32": pl.Int32, "int64": pl.Int64,
    "uint8": pl.UInt8, "uint16": pl.UInt16, "uint32": pl.UInt32, "uint64": pl.UInt64,
    "float32": pl.Float32, "float64": pl.Float64, "bool": pl.Boolean,
}  # fmt: skip
CAST_TARGETS = tuple(_PL_TYPE)

NUMERIC_COLS = ("a", "b", "d")
BOOL_COL = "c"

BINARY = ("+", "-", "*", "/", "//", "%", "**")
UNARY = (
    "abs", "neg", "sqrt", "cbrt", "exp", "log", "log10", "log1p", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "floor", "ceil", "round", "sign",
)  # fmt: skip
REDUCTIONS = ("sum", "mean", "min", "max", "std", "var", "count", "null_count")
COMPARE = ("<", "<=", "==", "!=", ">", ">=")
LOGIC = ("&", "|", "^")
PREDICATES = ("is_null", "is_not_null", "is_nan", "is_not_nan", "is_finite", "is_infinite")
#: operations whose float results may differ from polars in the last bits (libm vs Rust)
TRANSCENDENTAL = frozenset(
    {"exp", "log", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
     "cosh", "tanh", "cbrt", "**", "std", "var", "mean", "sum"}
)  # fmt: skip


@dataclass
class FuzzStats:
    """Counters of one run (every test adds to the same instance)."""

    trees: int = 0
    cases: int = 0
    polars_cases: int = 0
    cuda_host_cases: int = 0
    polars_errors_matched: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    known: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    dtypes: Counter[str] = field(default_factory=Counter)
    ops: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {
            "trees": self.trees,
            "cases": self.cases,
            "polars_cases": self.polars_cases,
            "cuda_host_cases": self.cuda_host_cases,
            "polars_errors_matched": self.polars_errors_matched,
            "refusals": dict(self.refusals),
            "mismatches": list(self.mismatches),
            "known": dict(self.known),
            "kinds": dict(self.kinds),
            "dtypes": dict(self.dtypes),
            "ops": dict(self.ops),
        }


STATS = FuzzStats()

#: figures measured by the other reliability tests (RSS growth, parse timing, faults, ...)
FIGURES: dict[str, Any] = {}


# -- trees --------------------------------------------------------------------------------
def _leaf() -> st.SearchStrategy[Tree]:
    return st.one_of(
        st.sampled_from([("col", c) for c in NUMERIC_COLS]),
        st.integers(-5, 5).map(lambda v: ("lit", v)),
        st.sampled_from([0.5, -1.25, 3.0, 1e-3, math.inf, -0.0]).map(lambda v: ("lit", v)),
    )


def numeric(depth: int) -> st.SearchStrategy[Tree]:
    """A numeric-valued tree of at most ``depth`` operations on any path."""
    if depth == 0:
        return _leaf()
    sub = numeric(depth - 1)
    cond = boolean(depth - 1)
    return st.one_of(
        _leaf(),
        st.tuples(st.sampled_from(BINARY), sub, sub),
        st.tuples(st.sampled_from(UNARY), sub),
        st.tuples(st.just("cast"), sub, st.sampled_from(CAST_TARGETS[:-1]), st.booleans()),
        st.tuples(st.just("when"), cond, sub, sub),
        st.tuples(st.just("when2"), cond, sub, cond, sub, sub),
        st.tuples(st.just("fill_null"), sub, st.integers(-2, 2)),
        st.tuples(st.just("fill_nan"), sub, st.sampled_from([0.0, -1.5])),
        st.tuples(st.just("coalesce"), sub, sub, st.integers(-3, 3)),
        st.tuples(st.just("clip"), sub, st.sampled_from([(-2, 3), (0, 100), (-1.5, 2.5)])),
        st.tuples(st.sampled_from(REDUCTIONS), sub),
        st.tuples(
            st.sampled_from(["+", "*", "-"]), sub, st.tuples(st.sampled_from(REDUCTIONS), sub)
        ),
    )


def boolean(depth: int) -> st.SearchStrategy[Tree]:
    """A boolean-valued tree."""
    leaf = st.one_of(st.just(("col", BOOL_COL)), st.sampled_from([("lit", True), ("lit", False)]))
    if depth == 0:
        return leaf
    num = numeric(depth - 1)
    sub = boolean(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(COMPARE), num, num),
        st.tuples(st.sampled_from(LOGIC), sub, sub),
        st.tuples(st.just("~"), sub),
        st.tuples(st.sampled_from(PREDICATES), num),
        st.tuples(st.just("cast"), num, st.just("bool"), st.just(False)),
    )


_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a**b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}  # fmt: skip


def build(tree: Tree, m: Any) -> Any:
    """The tree as an expression of module ``m`` (``colbridge`` or ``polars``)."""
    kind = tree[0]
    is_pl = m is pl
    if kind == "col":
        return m.col(tree[1])
    if kind == "lit":
        return m.lit(tree[1])
    if kind == "cast":
        inner = build(tree[1], m)
        target = _PL_TYPE[tree[2]] if is_pl else tree[2]
        return inner.cast(target, strict=tree[3])
    if kind == "when":
        return m.when(build(tree[1], m)).then(build(tree[2], m)).otherwise(build(tree[3], m))
    if kind == "when2":
        return (
            m.when(build(tree[1], m)).then(build(tree[2], m))
            .when(build(tree[3], m)).then(build(tree[4], m))
            .otherwise(build(tree[5], m))
        )  # fmt: skip
    if kind == "fill_null":
        return build(tree[1], m).fill_null(tree[2])
    if kind == "fill_nan":
        return build(tree[1], m).fill_nan(tree[2])
    if kind == "coalesce":
        return m.coalesce(build(tree[1], m), build(tree[2], m), m.lit(tree[3]))
    if kind == "clip":
        lo, hi = tree[2]
        return build(tree[1], m).clip(lo, hi)
    if kind in _BIN:
        return _BIN[kind](build(tree[1], m), build(tree[2], m))
    if kind == "neg":
        return -build(tree[1], m)
    if kind == "~":
        return ~build(tree[1], m)
    return getattr(build(tree[1], m), kind)()


def ops_of(tree: Tree) -> list[str]:
    """Operation names used in a tree (for coverage counts)."""
    out = [] if tree[0] in ("col", "lit") else [tree[0]]
    for part in tree[1:]:
        if isinstance(part, tuple) and part and isinstance(part[0], str) and part[0] in (
            *_BIN, *UNARY, *REDUCTIONS, *PREDICATES, "col", "lit", "cast", "when", "when2",
            "fill_null", "fill_nan", "coalesce", "clip", "~",
        ):  # fmt: skip
            out += ops_of(part)
    return out


# -- frames -------------------------------------------------------------------------------
def make_values(rng: np.random.Generator, arrow_type: pa.DataType, n: int) -> np.ndarray[Any, Any]:
    """Random values with the edge cases of the type (NaN, ±inf, ±0, extremes)."""
    if pa.types.is_boolean(arrow_type):
        return rng.integers(0, 2, size=n).astype(bool)
    dtype = np.dtype(arrow_type.to_pandas_dtype())
    if dtype.kind == "f":
        values = rng.normal(scale=20.0, size=n).astype(dtype)
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5], dtype=dtype)
        picks = rng.random(n) < 0.2
        values[picks] = rng.choice(specials, size=int(picks.sum()))
        return values
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, 1, 2, 3, 7] + ([-1, -2] if info.min < 0 else []),
                    dtype=dtype)  # fmt: skip
    small = rng.integers(max(int(info.min), -20), min(int(info.max), 20), size=n, endpoint=True,
                         dtype=dtype)  # fmt: skip
    wide = rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=dtype)
    which = rng.random(n)
    edge = rng.choice(pool, size=n)
    return np.where(which < 0.7, small, np.where(which < 0.85, wide, edge)).astype(dtype)


@dataclass(frozen=True)
class FrameSpec:
    """How one random frame is made (printed on failure to replay it)."""

    seed: int
    rows: int
    offset: int
    nulls: str  # "none" | "some" | "all"
    chunks: int


def frame_specs(max_rows: int = 40) -> st.SearchStrategy[FrameSpec]:
    """Row counts 0, 1, odd and not multiples of 8; offsets not multiples of 8; 1-3 chunks."""
    return st.builds(
        FrameSpec,
        seed=st.integers(0, 2**32 - 1),
        rows=st.sampled_from([0, 1, 2, 7, 9, 17, 33, max_rows]),
        offset=st.sampled_from([0, 0, 3, 5, 13]),
        nulls=st.sampled_from(["none", "some", "some", "all"]),
        chunks=st.sampled_from([1, 1, 2, 3]),
    )


def make_table(spec: FrameSpec, types: dict[str, pa.DataType]) -> pa.Table:
    """The frame: every column gets nulls in the same mode, so the null pattern is one of two."""
    rng = np.random.default_rng(spec.seed)
    total = spec.rows + spec.offset
    columns = {}
    for name, arrow_type in types.items():
        values = make_values(rng, arrow_type, total)
        if spec.nulls == "none" or spec.rows == 0:
            mask = None
        elif spec.nulls == "all":
            mask = np.ones(total, dtype=bool)
        else:
            mask = rng.random(total) < 0.3
            mask[spec.offset] = True  # at least one null in the visible rows
        columns[name] = pa.array(values, type=arrow_type, mask=mask)
    table = pa.table(columns).slice(spec.offset, spec.rows)
    if spec.chunks > 1 and spec.rows > spec.chunks:
        cuts = sorted(rng.choice(np.arange(1, spec.rows), size=spec.chunks - 1, replace=False))
        bounds = [0, *map(int, cuts), spec.rows]
        table = pa.concat_tables(
            [table.slice(lo, hi - lo) for lo, hi in itertools.pairwise(bounds)]
        )
    return table


@st.composite
def column_types(draw: st.DrawFn) -> dict[str, pa.DataType]:
    """Column types of one tree: a and b any engine dtype, d a float, c bool."""
    return {
        "a": draw(st.sampled_from(NUMERIC_TYPES)),
        "b": draw(st.sampled_from(NUMERIC_TYPES)),
        "c": pa.bool_(),
        "d": draw(st.sampled_from([pa.float32(), pa.float64()])),
    }


# -- checks -------------------------------------------------------------------------------
def tolerance(tree: Tree, types: dict[str, pa.DataType]) -> float:
    """Relative tolerance against polars: exact-ish for float64, looser with float32."""
    f32 = any(pa.types.is_float32(t) for t in types.values()) or "float32" in repr(tree)
    return 1e-5 if f32 else 1e-9


def _steps(tree: Tree, keep: Tree | None) -> Any:
    def steps(m: Any, q: Any) -> Any:
        q = q.with_columns(z=build(tree, m))
        return q.filter(build(keep, m)) if keep is not None else q

    return steps


def check_against_polars(
    tree: Tree,
    keep: Tree | None,
    table: pa.Table,
    spec: FrameSpec | str,
    *,
    rtol: float,
    kinds: Sequence[str] = FRAME_KINDS,
    allow_refusals: bool = True,
) -> None:
    """One frame on every input kind; records the outcome and raises on a mismatch.

    A colbridge error where polars computed (a refusal) is counted, not raised,
    unless ``allow_refusals`` is false.
    """
    steps = _steps(tree, keep)
    where = f"tree={tree!r} keep={keep!r} frame={spec!r} types={table.schema.types}"
    try:
        for kind in kinds:
            assert_same_as_polars(table, steps, kinds=(kind,), rtol=rtol)
            STATS.kinds[kind] += 1
            STATS.cases += 1
            STATS.polars_cases += 1
    except cb.ColbridgeError as exc:
        if not allow_refusals:
            STATS.mismatches.append(f"{where}\nrefused: {exc!r}")
            raise
        # colbridge refused (clear error) where polars computed; not a wrong value, but counted
        STATS.refusals[type(exc).__name__] += 1
        STATS.cases += 1
        if not str(exc).strip():
            STATS.mismatches.append(f"{type(exc).__name__} without a message: {where}")
            msg = f"{type(exc).__name__} without a message: {where}"
            raise AssertionError(msg) from exc
        return
    except AssertionError as exc:
        STATS.mismatches.append(f"{where}\n{str(exc)[:2000]}")
        raise
    except Exception as exc:  # a crash that is not a ColbridgeError
        STATS.mismatches.append(f"{where}\n{type(exc).__name__}: {exc}")
        msg = f"{where}: {type(exc).__name__}: {exc}"
        raise AssertionError(msg) from exc
    try:
        pl_ok = _steps(tree, keep)(pl, pl.from_arrow(table, rechunk=False).lazy()).collect()
        del pl_ok
    except pl.exceptions.PolarsError:
        STATS.polars_errors_matched += len(kinds)


def check_cuda_host(tree: Tree, keep: Tree | None, table: pa.Table, spec: FrameSpec) -> None:
    """The CUDA kernel text run on the host equals the CPU backend (or both raise)."""
    from polars.testing import assert_frame_equal

    steps = _steps(tree, keep)
    where = f"cuda-host tree={tree!r} keep={keep!r} frame={spec!r} types={table.schema.types}"
    try:
        cpu = steps(cb, cb.lazy(table)).compute(device="cpu")
    except cb.ColbridgeError as exc:
        try:
            compute_on_host(steps(cb, cb.lazy(table)), HostRuntime())
        except cb.ColbridgeError:
            STATS.cases += 1
            STATS.cuda_host_cases += 1
            return
        STATS.mismatches.append(f"{where}: cpu raised {exc!r}, cuda-host did not")
        msg = f"{where}: cpu raised {exc!r}, cuda-host did not"
        raise AssertionError(msg) from None
    try:
        got = compute_on_host(steps(cb, cb.lazy(table)), HostRuntime())
        # float results of math functions and float reductions may differ in the last
        # bits (docs/cuda.md, "Tolerances"); everything else must be bit-identical
        ztype = cpu.schema.field("z").type
        rtol = (1e-5 if pa.types.is_float32(ztype) else 1e-9) if pa.types.is_floating(
            ztype
        ) and any(op in TRANSCENDENTAL for op in ops_of(tree)) else None  # fmt: skip
        if rtol is None:
            assert_frame_equal(pl.from_arrow(got), pl.from_arrow(cpu), check_exact=True)
        else:
            assert_frame_equal(pl.from_arrow(got), pl.from_arrow(cpu), check_exact=False,
                               rel_tol=rtol, abs_tol=rtol)  # fmt: skip
    except Exception as exc:
        STATS.mismatches.append(f"{where}\n{str(exc)[:2000]}")
        msg = f"{where}\n{exc}"
        raise AssertionError(msg) from exc
    STATS.cases += 1
    STATS.cuda_host_cases += 1


def run_tree(
    tree: Tree,
    keep: Tree | None,
    types: dict[str, pa.DataType],
    specs: Sequence[FrameSpec],
    *,
    cuda_every: int = 0,
) -> None:
    """Check one tree on every frame (and every ``cuda_every``-th frame on the CUDA host path)."""
    STATS.trees += 1
    for op in ops_of(tree):
        STATS.ops[op] += 1
    for t in types.values():
        STATS.dtypes[str(t)] += 1
    rtol = tolerance(tree, types)
    for i, spec in enumerate(specs):
        table = make_table(spec, types)
        check_against_polars(tree, keep, table, spec, rtol=rtol)
        if cuda_every and i % cuda_every == 0:
            check_cuda_host(tree, keep, table, spec)
