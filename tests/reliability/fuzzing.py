"""Differential fuzzing: seeded random expression trees, random frames, a per-operation comparison.

A *tree* is a nested tuple (hashable, printable, replayable) that `build`
turns into a colbridge expression or the same polars expression. Trees come
from `random_tree`, a seeded generator over every operation the engine has
(`NUMERIC_OPS`, `BOOLEAN_OPS`); a *step* is one ``with_columns`` of a few
trees and maybe a filter, drawn once with its column types and then checked on
many frames, so the number of compiled kernels stays bounded (one per step and
null pattern) while the number of cases grows with the frames.

Seeds: the default run draws its steps from the fixed seeds `FIXED_SEEDS`
(the same every run, so a red build is reproducible and never depends on the
date). ``COLBRIDGE_FUZZ_DAILY=1`` adds one seed per calendar day
(`daily_seed`) to hunt for new cases, ``COLBRIDGE_FUZZ_SEED=<n>`` replays one;
a day whose seed found a bug joins `FIXED_SEEDS` with its fix.

Comparison (`check_step`): colbridge on polars, pyarrow and pandas input
against polars' lazy engine, exactly. Where they differ and the trees hold
operations whose last bits legitimately differ (libm functions, float
summation, division by a scalar, which polars turns into a multiplication),
each such operation is checked on its own with its own tolerance
(`colbridge.testing.asserts.TOLERANCES`), its colbridge value is put in
polars' tree in its place, and the rest must then match exactly: no error
spreads into a loose comparison of the whole tree. NaN, +inf and -inf must
match in kind.

Refusals: where colbridge raises and polars computes, the case must match one
entry of `KNOWN_GAPS` (error class, message and a check of the case's own
operations and types); anything else fails. Some frames also run through the
CUDA backend's kernel text compiled with g++ and run on the host, compared
with the CPU backend the same way.

Outcomes are counted in `STATS` (the reliability report reads them).
"""

from __future__ import annotations

import datetime
import math
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

import colbridge as cb
from colbridge.testing.asserts import (
    EXACT,
    FRAME_KINDS,
    LIBM_OPS,
    LIBM_ULPS,
    Tolerance,
    as_arrow,
    column_mismatch,
    std_bound,
    summation_bound,
    to_kind,
)
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from colbridge.testing.data import ENGINE_TYPES, FrameSpec, frame_specs, make_table

__all__ = [
    "FIGURES", "FIXED_SEEDS", "KNOWN_GAPS", "STATS", "Step", "Tree", "build", "check_against_cpu",
    "check_step",
    "daily_seed", "draw_step", "frame_specs", "make_table", "random_tree", "run_step", "seeds",
]  # fmt: skip

Tree = tuple[Any, ...]

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
#: numeric-valued operations (every one appears in the default run's steps)
NUMERIC_OPS: tuple[str, ...] = (
    *BINARY, *UNARY, *REDUCTIONS, "cast", "cast_strict", "when", "when2", "fill_null",
    "fill_nan", "coalesce", "clip", "round_decimals",
)  # fmt: skip
#: boolean-valued operations
BOOLEAN_OPS: tuple[str, ...] = (*COMPARE, *LOGIC, "~", *PREDICATES, "to_bool")
ALL_OPS: tuple[str, ...] = (*NUMERIC_OPS, *BOOLEAN_OPS, "filter")

#: the seeds of every default run (20261130 found the filter pushdown and overflow cases)
FIXED_SEEDS: tuple[int, ...] = (20240611, 20261130)


def daily_seed(today: datetime.date | None = None) -> int:
    """The seed of the day (``YYYYMMDD``), or ``$COLBRIDGE_FUZZ_SEED`` to replay one."""
    chosen = os.environ.get("COLBRIDGE_FUZZ_SEED")
    if chosen:
        return int(chosen)
    day = today if today is not None else datetime.date.today()
    return int(day.strftime("%Y%m%d"))


def seeds() -> tuple[int, ...]:
    """The seeds of this run: the fixed ones, then the day's when asked for (see above)."""
    if not (os.environ.get("COLBRIDGE_FUZZ_DAILY") or os.environ.get("COLBRIDGE_FUZZ_SEED")):
        return FIXED_SEEDS
    day = daily_seed()
    return (*FIXED_SEEDS, day) if day not in FIXED_SEEDS else FIXED_SEEDS


@dataclass
class FuzzStats:
    """Counters of one run (every test adds to the same instance)."""

    known: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    trees: int = 0
    cases: int = 0
    polars_cases: int = 0
    cuda_host_cases: int = 0
    polars_errors_matched: int = 0
    explained: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    mismatches: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    dtypes: Counter[str] = field(default_factory=Counter)
    ops: Counter[str] = field(default_factory=Counter)
    seeds: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "trees": self.trees,
            "cases": self.cases,
            "polars_cases": self.polars_cases,
            "cuda_host_cases": self.cuda_host_cases,
            "polars_errors_matched": self.polars_errors_matched,
            "explained": dict(self.explained),
            "refusals": dict(self.refusals),
            "known": dict(self.known),
            "mismatches": list(self.mismatches),
            "kinds": dict(self.kinds),
            "dtypes": dict(self.dtypes),
            "ops": dict(self.ops),
            "seeds": list(self.seeds),
        }


STATS = FuzzStats()

#: figures measured by the other reliability tests (RSS growth, parse timing, faults, ...)
FIGURES: dict[str, Any] = {}


# -- trees --------------------------------------------------------------------------------
_FLOAT_LITS = (0.5, -1.25, 3.0, 1e-3, math.inf, -0.0, 2.5, 127.5, 1e300, math.nan)
_CLIPS = ((-2, 3), (0, 100), (-1.5, 2.5), (-128, 127), (0, 255))


def _leaf(rng: np.random.Generator) -> Tree:
    r = rng.random()
    if r < 0.6:
        return ("col", str(rng.choice(NUMERIC_COLS)))
    if r < 0.8:
        return ("lit", int(rng.integers(-5, 6)))
    return ("lit", float(rng.choice(_FLOAT_LITS)))


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _numeric(rng: np.random.Generator, depth: int, op: str | None = None) -> Tree:
    if op is None:
        if depth <= 0 or rng.random() < 0.25:
            return _leaf(rng)
        op = _pick(rng, NUMERIC_OPS)

    def sub() -> Tree:
        return _numeric(rng, depth - 1)

    def cond() -> Tree:
        return _boolean(rng, depth - 1)

    if op in BINARY:
        return (op, sub(), sub())
    if op in UNARY:
        return (op, sub())
    if op in ("std", "var"):
        return (op, sub(), int(rng.integers(0, 3)))
    if op in REDUCTIONS:
        inner = (op, sub())
        if rng.random() < 0.5:  # a reduction inside an elementwise expression
            return (_pick(rng, ("+", "*", "-", "/")), sub(), inner)
        return inner
    if op in ("cast", "cast_strict"):
        return ("cast", sub(), _pick(rng, CAST_TARGETS[:-1]), op == "cast_strict")
    if op == "when":
        return ("when", cond(), sub(), sub())
    if op == "when2":
        return ("when2", cond(), sub(), cond(), sub(), sub())
    if op == "fill_null":
        return ("fill_null", sub(), int(rng.integers(-2, 3)))
    if op == "fill_nan":
        return ("fill_nan", sub(), _pick(rng, (0.0, -1.5)))
    if op == "coalesce":
        return ("coalesce", sub(), sub(), int(rng.integers(-3, 4)))
    if op == "clip":
        return ("clip", sub(), _pick(rng, _CLIPS))
    if op == "round_decimals":
        return ("round_decimals", sub(), _pick(rng, (0, 1, 2, 5, 15)),
                _pick(rng, ("half_to_even", "half_away_from_zero")))  # fmt: skip
    msg = f"not a numeric operation: {op!r}"
    raise ValueError(msg)


def _boolean(rng: np.random.Generator, depth: int, op: str | None = None) -> Tree:
    if op is None:
        if depth <= 0 or rng.random() < 0.25:
            return ("col", BOOL_COL) if rng.random() < 0.8 else ("lit", bool(rng.random() < 0.5))
        op = _pick(rng, BOOLEAN_OPS)
    num = _numeric(rng, depth - 1)
    if op in COMPARE:
        return (op, num, _numeric(rng, depth - 1))
    if op in LOGIC:
        return (op, _boolean(rng, depth - 1), _boolean(rng, depth - 1))
    if op == "~":
        return ("~", _boolean(rng, depth - 1))
    if op in PREDICATES:
        return (op, num)
    if op == "to_bool":
        return ("cast", num, "bool", False)
    msg = f"not a boolean operation: {op!r}"
    raise ValueError(msg)


def random_tree(rng: np.random.Generator, depth: int, op: str | None = None) -> Tree:
    """A random tree of at most ``depth`` operations on a path, rooted at ``op`` if given."""
    if op in BOOLEAN_OPS:
        return _boolean(rng, depth, op)
    return _numeric(rng, depth, op)


def random_boolean(rng: np.random.Generator, depth: int) -> Tree:
    """A random boolean tree (a filter)."""
    return _boolean(rng, depth, _pick(rng, BOOLEAN_OPS))


_BIN: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a**b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}  # fmt: skip


def build(tree: Tree, m: Any, swap: Callable[[Tree], Any] | None = None) -> Any:
    """The tree as an expression of module ``m`` (``colbridge`` or ``polars``).

    ``swap`` may return an expression standing in for a subtree (None: build it).
    """
    if swap is not None:
        stand_in = swap(tree)
        if stand_in is not None:
            return stand_in

    def sub(t: Tree) -> Any:
        return build(t, m, swap)

    kind = tree[0]
    if kind == "col":
        return m.col(tree[1])
    if kind == "lit":
        return m.lit(tree[1])
    if kind == "cast":
        target = _PL_TYPE[tree[2]] if m is pl else tree[2]
        return sub(tree[1]).cast(target, strict=tree[3])
    if kind == "when":
        return m.when(sub(tree[1])).then(sub(tree[2])).otherwise(sub(tree[3]))
    if kind == "when2":
        return (m.when(sub(tree[1])).then(sub(tree[2])).when(sub(tree[3])).then(sub(tree[4]))
                .otherwise(sub(tree[5])))  # fmt: skip
    if kind == "fill_null":
        return sub(tree[1]).fill_null(tree[2])
    if kind == "fill_nan":
        return sub(tree[1]).fill_nan(tree[2])
    if kind == "coalesce":
        return m.coalesce(sub(tree[1]), sub(tree[2]), m.lit(tree[3]))
    if kind == "clip":
        lo, hi = tree[2]
        return sub(tree[1]).clip(lo, hi)
    if kind == "round_decimals":
        return sub(tree[1]).round(tree[2], mode=tree[3])
    if kind in ("std", "var"):
        ddof = tree[2] if len(tree) > 2 else 1
        return getattr(sub(tree[1]), kind)(ddof=ddof)
    if kind in _BIN:
        return _BIN[kind](sub(tree[1]), sub(tree[2]))
    if kind == "neg":
        return -sub(tree[1])
    if kind == "~":
        return ~sub(tree[1])
    return getattr(sub(tree[1]), kind)()


def children(tree: Tree) -> list[tuple[int, Tree]]:
    """(position, subtree) of each child tree of a node."""
    if tree[0] in ("col", "lit"):
        return []
    return [(i, part) for i, part in enumerate(tree) if i > 0 and isinstance(part, tuple)
            and part and isinstance(part[0], str) and _is_node(part)]  # fmt: skip


def _is_node(part: tuple[Any, ...]) -> bool:
    head = part[0]
    return head in ("col", "lit", "cast", "~", "neg", *_BIN, *UNARY, *REDUCTIONS, *PREDICATES,
                    "when", "when2", "fill_null", "fill_nan", "coalesce", "clip",
                    "round_decimals")  # fmt: skip


def ops_of(tree: Tree) -> list[str]:
    """Operation names used in a tree (for coverage counts)."""
    out = [] if tree[0] in ("col", "lit") else [_op_name(tree)]
    for _, child in children(tree):
        out += ops_of(child)
    return out


def _op_name(tree: Tree) -> str:
    if tree[0] == "cast":
        return "to_bool" if tree[2] == "bool" else ("cast_strict" if tree[3] else "cast")
    return str(tree[0])


def _columns_in(tree: Tree, *, outside_reductions: bool = False) -> bool:
    if tree[0] == "col":
        return True
    if outside_reductions and tree[0] in REDUCTIONS:
        return False
    return any(_columns_in(c, outside_reductions=outside_reductions) for _, c in children(tree))


# -- steps --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One ``with_columns`` of several trees and maybe a filter, over columns of fixed types."""

    outputs: tuple[tuple[str, Tree], ...]
    keep: Tree | None
    types: tuple[tuple[str, pa.DataType], ...]
    seed: int

    def apply(self, m: Any, q: Any, swap: Callable[[Tree], Any] | None = None) -> Any:
        """The step on lazy frame ``q`` of module ``m``."""
        q = q.with_columns(**{name: build(t, m, swap) for name, t in self.outputs})
        return q.filter(build(self.keep, m, swap)) if self.keep is not None else q

    def type_map(self) -> dict[str, pa.DataType]:
        return dict(self.types)

    def __str__(self) -> str:
        trees = ", ".join(f"{n}={t!r}" for n, t in self.outputs)
        return f"Step(seed={self.seed}, {trees}, keep={self.keep!r}, types={dict(self.types)})"


def _column_types(rng: np.random.Generator) -> tuple[tuple[str, pa.DataType], ...]:
    """a and b: any engine dtype; c: bool; d: a float."""
    return (
        ("a", _pick(rng, ENGINE_TYPES)),
        ("b", _pick(rng, ENGINE_TYPES)),
        ("c", pa.bool_()),
        ("d", _pick(rng, (pa.float32(), pa.float64()))),
    )


def draw_step(seed: int, ops: Sequence[str], depth: int = 2,
              types: dict[str, pa.DataType] | None = None) -> Step:  # fmt: skip
    """A step whose outputs are trees rooted at each of ``ops`` (``filter``: a random filter).

    Column types are drawn too unless ``types`` (a, b, c, d) is given.
    """
    rng = np.random.default_rng(seed)
    outputs = []
    keep = None
    for i, op in enumerate(ops):
        if op == "filter":
            keep = random_boolean(rng, depth)
        else:
            outputs.append((f"z{i}", random_tree(rng, depth, op)))
    if not outputs:
        outputs.append(("z", random_tree(rng, depth)))
    if keep is None and rng.random() < 0.3:
        keep = random_boolean(rng, depth)
    drawn = _column_types(rng)
    return Step(tuple(outputs), keep, tuple(types.items()) if types else drawn, seed)


def coverage_steps(seed: int, per_step: int = 4, depth: int = 2) -> list[Step]:
    """Steps that together root a tree at every operation of `ALL_OPS`, shuffled by ``seed``."""
    rng = np.random.default_rng(seed)
    order = [ALL_OPS[i] for i in rng.permutation(len(ALL_OPS))]
    groups = [order[i : i + per_step] for i in range(0, len(order), per_step)]
    return [draw_step(_child_seed(seed, i), ops, depth) for i, ops in enumerate(groups)]


def _child_seed(seed: int, i: int) -> int:
    return zlib.crc32(f"{seed}/{i}".encode())


# -- known gaps: where colbridge refuses and polars computes ----------------------------------
@dataclass(frozen=True)
class Case:
    """What a refusal check sees: the step, the frame, colbridge's error."""

    step: Step
    table: pa.Table
    error: Exception


@dataclass(frozen=True)
class KnownGap:
    """A documented refusal: colbridge raises a clear error where polars computes an answer.

    A refusal counts as this gap only when the error class and message match
    and ``applies`` finds the operation and types the gap is about in the case.
    """

    id: str
    what: str
    error: str
    message: str
    applies: Callable[[Case], bool]


def _polars_dtype(step: Step, table: pa.Table, tree: Tree) -> Any:
    frame = pl.from_arrow(table, rechunk=False).lazy()
    return frame.select(build(tree, pl)).collect_schema().dtypes()[0]


def _subtrees(tree: Tree) -> list[Tree]:
    out = [tree]
    for _, child in children(tree):
        out += _subtrees(child)
    return out


def _all_trees(step: Step) -> list[Tree]:
    trees = [t for _, t in step.outputs] + ([step.keep] if step.keep is not None else [])
    return [s for t in trees for s in _subtrees(t)]


def _needs_int128(case: Case) -> bool:
    # a node polars computes as Int128 (int64 with uint64, or a literal beyond int64)
    for sub in _all_trees(case.step):
        if sub[0] in ("col", "lit"):
            continue
        try:
            if _polars_dtype(case.step, case.table, sub) == pl.Int128:
                return True
        except pl.exceptions.PolarsError:
            continue
    return False


def _eager_polars_raises_too(case: Case) -> bool:
    # polars' lazy engine pushes the filter below with_columns, so a strict cast that fails
    # only on rows the filter drops does not raise there; row by row (eager) it does
    if case.step.keep is None:
        return False
    frame = pl.from_arrow(case.table, rechunk=False)
    try:
        case.step.apply(pl, frame)
    except pl.exceptions.InvalidOperationError:
        return True
    return False


def _polars_cast_of_the_values_raises(case: Case) -> bool:
    # polars folds a strict cast of an expression of literals into a saturating conversion
    # (`lit(inf).ceil().cast(Int64)` is 2**63 - 1); cast as a column, the same values raise
    frame = pl.from_arrow(case.table, rechunk=False)
    for sub in _all_trees(case.step):
        if sub[0] != "cast" or not sub[3]:
            continue
        try:
            values = frame.select(build(sub[1], pl).alias("v")).to_series()
        except pl.exceptions.PolarsError:
            continue
        try:
            values.cast(_PL_TYPE[sub[2]], strict=True)
        except pl.exceptions.InvalidOperationError:
            return True
    return False


def _polars_raises_once_there_is_a_row(case: Case) -> bool:
    # colbridge checks types before it reads data; polars checks some things (negating an
    # unsigned column, a clip bound outside the column's type) only on values, so it lets a
    # frame without values through and raises on a row of values
    row = {}
    for name, arrow_type in case.step.types:
        value: Any = True if pa.types.is_boolean(arrow_type) else 1
        row[name] = pa.array([value], type=arrow_type)
    unfiltered = Step(case.step.outputs, None, case.step.types, case.step.seed)
    try:
        unfiltered.apply(pl, pl.from_arrow(pa.table(row)).lazy()).collect()
    except pl.exceptions.PolarsError:
        return True
    return False


KNOWN_GAPS: tuple[KnownGap, ...] = (
    KnownGap(
        "int128",
        "int64 with uint64 (or a literal beyond int64) needs int128, which colbridge does not "
        "have; polars widens to Int128",
        "SchemaError", r"(int128|128-bit integer)", _needs_int128,
    ),
    KnownGap(
        "filter-pushdown",
        "a strict cast fails on rows a later filter drops: polars' lazy engine filters first "
        "and does not raise; colbridge computes every row (as polars' eager engine, which "
        "raises the same error)",
        "InvalidOperationError", r"strict cast to \w+ failed", _eager_polars_raises_too,
    ),
    KnownGap(
        "polars-folded-cast",
        "polars folds a strict cast of an expression of literals into a saturating conversion "
        "(`lit(inf).ceil().cast(Int64)` gives 2**63 - 1) and does not raise; polars' own strict "
        "cast of the same values as a column raises, as colbridge does",
        "InvalidOperationError", r"strict cast to \w+ failed", _polars_cast_of_the_values_raises,
    ),
    KnownGap(
        "values-only-check",
        "an operation polars rejects only when it meets values (negating an unsigned column, a "
        "`clip` bound outside the column's type) on a frame with no rows or only nulls: "
        "colbridge rejects it while typing, polars returns nulls (and raises on a row of values)",
        "SchemaError", r"(cannot negate unsigned|does not fit in the column's type)",
        _polars_raises_once_there_is_a_row,
    ),
)


def known_gap(case: Case) -> KnownGap | None:
    """The gap this refusal is, or None when it is not a documented one."""
    for gap in KNOWN_GAPS:
        if (type(case.error).__name__ == gap.error and re.search(gap.message, str(case.error))
                and gap.applies(case)):  # fmt: skip
            return gap
    return None


def known_gaps_markdown() -> str:
    """`KNOWN_GAPS` as a Markdown table (docs/reliability.md)."""
    lines = ["| id | gap | error | message |", "| --- | --- | --- | --- |"]
    for gap in KNOWN_GAPS:
        message = gap.message.replace("|", "\\|")
        lines.append(f"| {gap.id} | {gap.what} | `{gap.error}` | `{message}` |")
    return "\n".join(lines)


# -- known bugs: wrong values, each with a strict xfail regression test ----------------------------
@dataclass(frozen=True)
class KnownBug:
    """A documented wrong value of one operation, pinned by a strict-xfail regression test.

    A per-operation difference counts as this bug only when ``applies`` sees
    the bug's own symptom (operation, data and the two values); the test named
    in ``test`` fails loudly once the bug is fixed, so the entry is removed.
    """

    id: str
    what: str
    test: str
    applies: Callable[[Tree, np.ndarray[Any, Any], pa.Array, pa.Array, str], bool]


KNOWN_BUGS: tuple[KnownBug, ...] = ()


KNOWN_TYPE_BUGS: tuple[tuple[str, str, str,
                             Callable[[Step, str, pa.DataType, pa.DataType], bool]], ...] = ()


KNOWN_MISSING_ERRORS: tuple[tuple[str, str, str, Callable[[Step, pa.Table], bool]], ...] = ()


def known_type_bug(step: Step, got: pa.Table, want: pa.Table) -> str | None:
    """The known typing bug every differing output type of ``got`` is, or None."""
    found = None
    for name in want.column_names:
        g, w = got.schema.field(name).type, want.schema.field(name).type
        if g == w:
            continue
        match = next((b[0] for b in KNOWN_TYPE_BUGS if b[3](step, name, g, w)), None)
        if match is None:
            return None
        found = match
    return found


def known_bug(tree: Tree, values: np.ndarray[Any, Any], got: pa.Array, want: pa.Array,
              where: str) -> KnownBug | None:  # fmt: skip
    """The known bug this per-operation difference is, or None."""
    for bug in KNOWN_BUGS:
        if bug.applies(tree, values, got, want, where):
            return bug
    return None


def known_bugs_markdown() -> str:
    """`KNOWN_BUGS` as a Markdown table (docs/reliability.md), or a line saying none is open."""
    if not (KNOWN_BUGS or KNOWN_TYPE_BUGS or KNOWN_MISSING_ERRORS):
        return (
            "None open. The strict comparison found six, each now fixed and kept as a "
            "regression test in `tests/reliability/test_rel_differential_fuzz.py`: `std`/`var` "
            "of values whose squares overflow was NaN (polars: +inf); the CUDA backend's "
            "`std`/`var` of values beyond ~1.3e154 was NaN (idle threads' empty partials took "
            "part in the merge); `std`/`var` of a single NaN or ±inf value was 0.0 (polars: "
            "NaN); `lit(2).log() * float32` was Float64 (polars: Float32); `int_column ** -5` "
            "computed nulls on a frame without values (polars refuses it while planning); "
            "`f32 / 1e300` made the planner emit NumPy's overflow warning."
        )
    lines = ["| id | wrong value | regression test (strict xfail) |", "| --- | --- | --- |"]
    lines += [f"| {b.id} | {b.what} | `{b.test}` |" for b in KNOWN_BUGS]
    lines += [f"| {bug_id} | {what} | `{test}` |" for bug_id, what, test, _ in KNOWN_TYPE_BUGS]
    lines += [f"| {bug_id} | {what} | `{test}` |"
              for bug_id, what, test, _ in KNOWN_MISSING_ERRORS]  # fmt: skip
    return "\n".join(lines)


# -- comparison, one operation at a time ---------------------------------------------------------
@dataclass(frozen=True)
class Special:
    """A node whose result may legitimately differ in the last bits, and why."""

    tree: Tree
    role: str  # "libm" | "summation" | "divisor"
    name: str


def _specials(step: Step, table: pa.Table) -> list[Special]:
    """The nodes to check on their own: libm results, float summations, scalar divisors."""
    found: dict[Tree, str] = {}
    frame = pl.from_arrow(table, rechunk=False).lazy()

    def dtype(t: Tree) -> Any:
        return frame.select(build(t, pl)).collect_schema().dtypes()[0]

    def visit(t: Tree) -> None:
        for _, child in children(t):
            visit(child)
        op = t[0]
        if op in LIBM_OPS and dtype(t).is_float():
            found.setdefault(t, "libm")
        elif op in ("sum", "mean", "std", "var") and dtype(t).is_float():
            found.setdefault(t, "summation")
        if op in ("/", "//", "%") and not _columns_in(t[2], outside_reductions=True) \
                and dtype(t).is_float():  # fmt: skip
            found.setdefault(t[2], "divisor")

    for _, tree in step.outputs:
        visit(tree)
    if step.keep is not None:
        visit(step.keep)
    return [Special(t, role, f"_s{i}") for i, (t, role) in enumerate(found.items())]


def _divisions(step: Step, table: pa.Table, specials: list[Special]) -> dict[Tree, Any]:
    """Float divisions by a scalar (a special node) -> their result dtype (the divisor's type)."""
    special = {s.tree for s in specials}
    frame = pl.from_arrow(table, rechunk=False).lazy()
    out: dict[Tree, Any] = {}
    for t in _all_trees(step):
        if t[0] in ("/", "//", "%") and t[2] in special \
                and not _columns_in(t[2], outside_reductions=True):  # fmt: skip
            dt = frame.select(build(t, pl)).collect_schema().dtypes()[0]
            if dt.is_float():
                out[t] = dt
    return out


def _swapper(specials: list[Special], divisions: dict[Tree, Any], *, skip: Tree | None = None
             ) -> Callable[[Tree], Any]:  # fmt: skip
    """Polars stand-ins: a special node is its colbridge column; a division by a scalar
    divides by that scalar in the result type: ``/`` as a multiplication by its
    reciprocal (what polars computes from four rows on, and colbridge always; polars'
    lazy engine divides frames of two or three rows truly), ``//`` and ``%`` by a column
    of it."""
    names = {s.tree: s.name for s in specials}

    def swap(t: Tree) -> Any:
        if t is skip or t == skip:
            return None
        if t in divisions:
            dt = divisions[t]
            left = build(t[1], pl, swap).cast(dt)
            right = pl.col(f"{names[t[2]]}_as_{dt}")
            if t[0] == "/":
                return left * (pl.lit(1, dtype=dt) / right.first())
            return _BIN[t[0]](left, right)
        if t in names:
            # a scalar-valued node (a reduction, or literals only) is one value, as polars
            # computes it: a full column would change what a reduction over it sees
            scalar = not _columns_in(t, outside_reductions=True)
            return pl.col(names[t]).first() if scalar else pl.col(names[t])
        return None

    return swap


def _cb_swapper(specials: list[Special], *, skip: Tree) -> Callable[[Tree], Any]:
    """colbridge stand-ins: a special node other than ``skip`` is its column of values."""
    names = {s.tree: s.name for s in specials}

    def swap(t: Tree) -> Any:
        if t == skip or t not in names:
            return None
        if t[0] == "lit":
            # a literal divisor stays a literal: its value is exact, and a Float64 column
            # in its place would widen `float32 % lit` to Float64 (a literal takes the
            # other operand's type)
            return None
        scalar = not _columns_in(t, outside_reductions=True)
        return cb.col(names[t]).first() if scalar else cb.col(names[t])

    return swap


_SUMS = ("sum", "mean", "std", "var")


def _child_values(special: Special, frame: pl.DataFrame, swap: Callable[[Tree], Any]
                  ) -> np.ndarray[Any, Any]:  # fmt: skip
    """The valid inputs of a reduction node, as float64 (empty for other nodes)."""
    if special.tree[0] not in _SUMS:
        return np.empty(0)
    child = build(special.tree[1], pl, swap).cast(pl.Float64)
    return frame.select(child.alias("v")).to_series().drop_nulls().to_numpy()


def _tolerance(special: Special, values: np.ndarray[Any, Any], got: pa.Array, want: pa.Array
               ) -> Tolerance:  # fmt: skip
    bits = 32 if pa.types.is_float32(want.type) else 64
    op = special.tree[0]
    if special.role == "libm":
        return Tolerance(ulps=LIBM_ULPS[bits])
    if op not in _SUMS or not pa.types.is_floating(want.type):
        return EXACT
    ddof = special.tree[2] if op in ("std", "var") and len(special.tree) > 2 else 1
    bound = summation_bound("var" if op == "std" else op, values, bits, ddof)
    if op == "std":
        g, w = _first_valid(got), _first_valid(want)
        bound = std_bound(bound, g, w) if g is not None and w is not None else bound
    return Tolerance(atol=bound)


def _check_node(special: Special, frame: pl.DataFrame, swap: Callable[[Tree], Any],
                got: pa.Array | pa.ChunkedArray, want: pa.Array | pa.ChunkedArray, where: str
                ) -> str | None:  # fmt: skip
    """One special node against its reference, with its own tolerance (or a known bug)."""
    got, want = _combined(got), _combined(want)
    if len(want) == 1 and len(got) > 1:
        got = got.slice(0, 1)  # a scalar, broadcast by with_columns
    values = _child_values(special, frame, swap)
    problem = column_mismatch(got, want, _tolerance(special, values, got, want))
    if problem is None:
        STATS.explained[special.role] += 1
        return None
    bug = known_bug(special.tree, values, got, want, where)
    if bug is not None:
        STATS.known[bug.id] += 1
        return None
    return f"{special.role} node {special.tree!r}: {problem}"


def _first_valid(array: pa.Array) -> float | None:
    for v in array.to_pylist():
        if v is not None and math.isfinite(v):
            return float(v)
    return None


def explain_difference(step: Step, table: pa.Table) -> str | None:
    """Re-check a step that differs from polars one special operation at a time.

    Returns None when every special operation is within its own tolerance and
    the rest matches exactly with colbridge's values put in polars' trees, or
    the first difference found.
    """
    if table.num_rows == 0:
        return "differs from polars on an empty frame"
    specials = _specials(step, table)
    if not specials:
        return "differs from polars and has no operation with a tolerance"
    outputs = {s.name: build(s.tree, cb) for s in specials}
    try:
        mine = cb.lazy(table).with_columns(**outputs).compute(device="cpu")
    except cb.ColbridgeError as exc:
        # a failure (a strict cast, a bad exponent) on rows the step's filter drops,
        # which the step itself never computes (polars pushes the filter below it):
        # re-check on the kept rows alone
        if step.keep is None:
            return f"the operations alone raise: {exc}"
        kept = pl.from_arrow(table, rechunk=False).filter(build(step.keep, pl)).to_arrow()
        if kept.num_rows == table.num_rows:
            return f"the operations alone raise: {exc}"
        return explain_difference(step, kept)
    divisions = _divisions(step, table, specials)
    extra = {}
    for s in specials:
        extra[s.name] = mine.column(s.name)
        for t, dt in divisions.items():
            if t[2] == s.tree:
                col = pl.from_arrow(mine.column(s.name)).cast(dt)
                extra[f"{s.name}_as_{dt}"] = col.to_arrow()
    frame = pl.from_arrow(table, rechunk=False)
    frame = frame.with_columns(**{k: pl.from_arrow(v) for k, v in extra.items()})
    for s in specials:
        swap = _swapper(specials, divisions, skip=s.tree)
        want = frame.select(build(s.tree, pl, swap).alias("x")).to_arrow().column("x")
        problem = _check_node(s, frame, swap, mine.column(s.name), want, "polars")
        if problem is not None:
            return problem
    swap = _swapper(specials, divisions)
    expected = step.apply(pl, frame.lazy(), swap).select(
        [name for name, _ in step.outputs]).collect()  # fmt: skip
    got_all = step.apply(cb, cb.lazy(table)).compute(device="cpu")
    for name, _ in step.outputs:
        problem = column_mismatch(got_all.column(name), expected.to_arrow().column(name))
        if problem is not None:
            return f"with colbridge's values of {[s.tree for s in specials]} in polars' tree, " \
                   f"`{name}`: {problem}"  # fmt: skip
    return None


def _combined(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks else pa.array([], array.type)
    return array


def _frames_differ(got: pa.Table, want: pa.Table) -> str | None:
    if got.column_names != want.column_names:
        return f"columns {got.column_names} != {want.column_names}"
    for name in want.column_names:
        problem = column_mismatch(got.column(name), want.column(name))
        if problem is not None:
            return f"`{name}`: {problem}"
    return None


def check_step(step: Step, table: pa.Table, spec: FrameSpec | str,
               kinds: Sequence[str] = FRAME_KINDS) -> None:  # fmt: skip
    """One frame on every input kind against polars; raises on a mismatch or unknown refusal."""
    where = f"{step} frame={spec!r}"
    int128 = False  # polars made an Int128 column, which pyarrow cannot hold
    try:
        collected = step.apply(pl, pl.from_arrow(table, rechunk=False).lazy()).collect()
        polars_error: Exception | None = None
        int128 = any(dtype == pl.Int128 for dtype in collected.schema.values())
        expected: pa.Table | None = None if int128 else collected.to_arrow()
    except pl.exceptions.PolarsError as exc:
        expected, polars_error = None, exc
    first: pa.Table | None = None
    for kind in kinds:
        frame = to_kind(table, kind)
        try:
            got = as_arrow(step.apply(cb, cb.lazy(frame)).compute(device="cpu"))
        except cb.ColbridgeError as exc:
            if polars_error is not None:
                STATS.polars_errors_matched += 1
                STATS.cases += 1
                continue
            if not str(exc).strip():
                _fail(where, f"{type(exc).__name__} without a message")
            gap = known_gap(Case(step, table, exc))
            if gap is None:
                _fail(where, f"colbridge refused where polars computed, and no known gap "
                             f"matches: {type(exc).__name__}: {exc}")  # fmt: skip
            STATS.refusals[gap.id] += 1
            STATS.cases += 1
            continue
        except Exception as exc:  # a crash that is not a ColbridgeError
            _fail(where, f"{kind} input: {type(exc).__name__}: {exc}")
        if int128:
            _fail(where, f"{kind} input: colbridge computed what polars types Int128, a type "
                         "it does not support (the int128 gap)")  # fmt: skip
        if polars_error is not None:
            missing = next((b[0] for b in KNOWN_MISSING_ERRORS if b[3](step, table)), None)
            if missing is None:
                _fail(where, f"polars raised {polars_error!r} but colbridge did not ({kind} "
                             "input)")  # fmt: skip
            STATS.known[missing] += 1
            STATS.cases += 1
            continue
        assert expected is not None
        if first is None:
            problem = _frames_differ(got, expected)
            if problem is not None and got.column_names == expected.column_names and [
                f.type for f in got.schema
            ] != [f.type for f in expected.schema]:  # fmt: skip
                # a type is never a matter of tolerance: a known typing bug, or a failure
                bug = known_type_bug(step, got, expected)
                if bug is None:
                    _fail(where, f"{kind} input: {problem}")
                STATS.known[bug] += 1
                return
            if problem is not None:
                explained = explain_difference(step, table)
                if explained is not None:
                    _fail(where, f"{kind} input: {problem}\n  re-checked op by op: {explained}")
            first = got
        else:
            # every input kind must give the very same answer
            problem = _frames_differ(got, first)
            if problem is not None:
                _fail(where, f"{kind} input differs from {kinds[0]} input: {problem}")
        STATS.kinds[kind] += 1
        STATS.cases += 1
        STATS.polars_cases += 1


def _fail(where: str, problem: str) -> None:
    STATS.mismatches.append(f"{where}\n{problem[:2000]}")
    msg = f"{where}\n{problem}"
    raise AssertionError(msg)


def check_cuda_host(step: Step, table: pa.Table, spec: FrameSpec) -> None:
    """The CUDA kernel text run on the host equals the CPU backend (or both raise)."""
    check_against_cpu(step, table, spec, lambda lf: compute_on_host(lf, HostRuntime()),
                      "cuda-host")  # fmt: skip
    STATS.cuda_host_cases += 1


def check_against_cpu(step: Step, table: pa.Table, spec: FrameSpec | str,
                      compute: Callable[[Any], pa.Table], label: str) -> None:  # fmt: skip
    """``compute`` (another way to run a lazy frame) equals the CPU backend, or both raise.

    Compared exactly, except operations whose last bits legitimately differ, each checked
    on its own with its tolerance, as against polars.
    """
    where = f"{label} {step} frame={spec!r}"
    try:
        cpu = step.apply(cb, cb.lazy(table)).compute(device="cpu")
    except cb.ColbridgeError as exc:
        try:
            compute(step.apply(cb, cb.lazy(table)))
        except cb.ColbridgeError:
            STATS.cases += 1
            return
        _fail(where, f"cpu raised {exc!r}, {label} did not")
    got = compute(step.apply(cb, cb.lazy(table)))
    problem = _frames_differ(got, cpu)
    if problem is not None:
        specials = _specials(step, table)
        if not specials:
            _fail(where, problem)
        # the same split as against polars, with the CPU backend as the reference: each
        # special node is computed by the CPU backend from the other's values of the
        # special nodes inside it, so a difference is checked where it arises
        outputs = {s.name: build(s.tree, cb) for s in specials}
        other = compute(cb.lazy(table).with_columns(**outputs))
        inner = table
        for s in specials:
            inner = inner.append_column(s.name, _combined(other.column(s.name)))
        frame = pl.from_arrow(inner, rechunk=False)
        for s in specials:
            swap = _cb_swapper(specials, skip=s.tree)
            ref = cb.lazy(inner).select(x=build(s.tree, cb, swap)).compute(device="cpu")
            node_problem = _check_node(s, frame, _swapper(specials, {}, skip=s.tree),
                                       other.column(s.name), ref.column("x"), label)  # fmt: skip
            if node_problem is not None:
                _fail(where, node_problem)
        # the rest must match exactly once the special values are the same: the CPU
        # backend's trees with the other values in place of the special nodes
        names = {s.tree: s.name for s in specials}

        def stand_in(t: Tree) -> Any:
            # one value stays one value (a column divided by it is polars' multiplication
            # by its reciprocal, a column by a column a true division)
            if t not in names:
                return None
            one = not _columns_in(t, outside_reductions=True)
            return cb.col(names[t]).first() if one else cb.col(names[t])

        again = step.apply(cb, cb.lazy(other), stand_in)
        problem = _frames_differ(got, again.compute(device="cpu").select(got.column_names))
        if problem is not None:
            _fail(where, problem)
    STATS.cases += 1


def run_step(step: Step, specs: Sequence[FrameSpec], *, cuda_every: int = 0,
             kinds: Sequence[str] = FRAME_KINDS) -> None:  # fmt: skip
    """Check one step on every frame (and every ``cuda_every``-th frame on the CUDA host)."""
    STATS.steps += 1
    STATS.trees += len(step.outputs) + (step.keep is not None)
    for _, tree in step.outputs:
        for op in ops_of(tree):
            STATS.ops[op] += 1
    if step.keep is not None:
        STATS.ops["filter"] += 1
        for op in ops_of(step.keep):
            STATS.ops[op] += 1
    for _, t in step.types:
        STATS.dtypes[str(t)] += 1
    for i, spec in enumerate(specs):
        table = make_table(spec, step.type_map())
        check_step(step, table, spec, kinds)
        if cuda_every and i % cuda_every == 0:
            check_cuda_host(step, table, spec)


def random_specs(seed: int, count: int, max_rows: int = 40) -> list[FrameSpec]:
    """``count`` frame specs drawn from ``seed`` (rows, offsets, nulls, chunks as `frame_specs`)."""
    rng = np.random.default_rng(seed)
    rows = [0, 1, 2, 7, 9, 17, 33, max_rows]
    return [
        FrameSpec(
            seed=int(rng.integers(0, 2**32)),
            rows=_pick(rng, rows),
            offset=_pick(rng, (0, 0, 3, 5, 13)),
            nulls=_pick(rng, ("none", "some", "some", "all")),
            chunks=_pick(rng, (1, 1, 2, 3)),
        )
        for _ in range(count)
    ]
