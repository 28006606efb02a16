"""Random multi-step plans against polars: how steps scope columns and rows.

The expression fuzzer (`tests/reliability/test_rel_differential_fuzz.py`) checks one
step's trees in depth; this one checks what sits between steps: `with_columns` that
overwrite or add columns, `select` that drops them (literals alone included),
filters before and after reductions and windows, groupings, and later steps that
read what earlier ones made, or what they left out. Plans are drawn by hypothesis
over small frames with nulls (and none, and no rows), built once with polars and
once with colbridge from the same description, and must agree: both raise, or
both give the same columns, types and values (groups compared in polars' order,
``maintain_order=True``). Inputs are polars, pyarrow and Arrow-backed pandas frames.

It runs on the NumPy tier, which compiles nothing, so hundreds of plan shapes take
seconds, and a few dozen plans on the compiled kernels, which compact a filter's rows
in their own way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.testing.asserts import Tolerance, as_polars, frame_mismatch, to_kind

#: how the drawn plans ended, so a test can tell the fuzzer draws both outcomes
OUTCOMES: Counter[str] = Counter()

# column kinds a plan tracks to draw expressions that type (and sometimes ones that don't)
NUM, BOOL, STR = "num", "bool", "str"


@dataclass(frozen=True)
class Expr:
    """An expression as data: ``op`` and its parts, built by `build` for either library."""

    op: str
    parts: tuple[Any, ...] = ()


def build(e: Expr, m: Any) -> Any:
    """The expression in module ``m`` (``polars`` or ``colbridge``)."""
    op, p = e.op, e.parts
    if op == "col":
        return m.col(p[0])
    if op == "lit":
        return m.lit(p[0])
    args = [build(x, m) if isinstance(x, Expr) else x for x in p]
    if op in ("+", "-", "*"):
        a, b = args
        return a + b if op == "+" else a - b if op == "-" else a * b
    if op in (">", "<=", "==", "!="):
        a, b = args
        return {">": a > b, "<=": a <= b, "==": a == b, "!=": a != b}[op]
    if op == "and":
        return args[0] & args[1]
    if op == "not":
        return ~args[0]
    if op in ("sum", "mean", "max", "min", "count", "first"):
        return getattr(args[0], op)()
    if op == "over":
        return args[0].over(args[1])
    if op == "shift":
        return args[0].shift(args[1])
    if op in ("cum_sum", "cum_max"):
        return getattr(args[0], op)()
    if op == "diff":
        return args[0].diff()
    if op == "is_not_null":
        return args[0].is_not_null()
    if op == "fill_null":
        return args[0].fill_null(args[1])
    if op == "abs":
        return args[0].abs()
    if op == "cast_f64":
        return args[0].cast(m.Float64 if m is pl else "float64")
    msg = f"unknown op {op}"
    raise AssertionError(msg)


@dataclass(frozen=True)
class Step:
    kind: str  # with_columns, select, filter, group_by
    items: tuple[tuple[str, Expr], ...] = ()
    keys: tuple[str, ...] = ()

    def apply(self, q: Any, m: Any) -> Any:
        items = {name: build(e, m) for name, e in self.items}
        if self.kind == "with_columns":
            return q.with_columns(**items)
        if self.kind == "select":
            return q.select(**items)
        if self.kind == "filter":
            return q.filter(items["pred"])
        return q.group_by(*self.keys, maintain_order=True).agg(**items)


def _numeric(draw: Any, cols: dict[str, str], depth: int, *, scalar_ok: bool = True) -> Expr:
    nums = [c for c, k in cols.items() if k == NUM]
    choice = draw(st.integers(0, 11 if depth > 0 else 2))
    if not nums or choice == 0:
        return Expr("lit", (draw(st.sampled_from([0, 1, 2, -3, 2.5])),))
    if choice in (1, 2):
        return Expr("col", (draw(st.sampled_from(nums)),))
    sub = _numeric(draw, cols, depth - 1)
    if choice in (3, 4):
        return Expr(draw(st.sampled_from(["+", "-", "*"])), (sub, _numeric(draw, cols, depth - 1)))
    if choice == 5 and scalar_ok:
        col = Expr("col", (draw(st.sampled_from(nums)),))
        return Expr(draw(st.sampled_from(["sum", "mean", "max", "min", "count"])), (col,))
    if choice == 6:
        keys = [c for c, k in cols.items() if k in (STR, BOOL)]
        if keys:
            col = Expr("col", (draw(st.sampled_from(nums)),))
            agg = Expr(draw(st.sampled_from(["sum", "max", "mean"])), (col,))
            return Expr("over", (agg, draw(st.sampled_from(keys))))
    if choice == 7:
        return Expr("fill_null", (sub, draw(st.sampled_from([0, 1]))))
    if choice == 8:
        return Expr("abs", (sub,))
    if choice in (10, 11):
        col = Expr("col", (draw(st.sampled_from(nums)),))
        ordered = draw(st.sampled_from(["shift", "cum_sum", "cum_max", "diff"]))
        e = Expr(ordered, (col, draw(st.sampled_from([1, -1, 2])))) if ordered == "shift" \
            else Expr(ordered, (col,))  # fmt: skip
        keys = [c for c, k in cols.items() if k in (STR, BOOL)]
        if keys and draw(st.booleans()):
            e = Expr("over", (e, draw(st.sampled_from(keys))))
        return e
    return Expr("cast_f64", (sub,))


def _boolean(draw: Any, cols: dict[str, str], depth: int) -> Expr:
    bools = [c for c, k in cols.items() if k == BOOL]
    choice = draw(st.integers(0, 4))
    if choice == 0 and bools:
        return Expr("col", (draw(st.sampled_from(bools)),))
    if choice == 1:
        return Expr("is_not_null", (Expr("col", (draw(st.sampled_from(sorted(cols))),)),))
    if choice == 2 and depth > 0:
        return Expr("and", (_boolean(draw, cols, depth - 1), _boolean(draw, cols, depth - 1)))
    if choice == 3 and depth > 0:
        return Expr("not", (_boolean(draw, cols, depth - 1),))
    op = draw(st.sampled_from([">", "<=", "==", "!="]))
    return Expr(op, (_numeric(draw, cols, depth), _numeric(draw, cols, 0)))


@st.composite
def plans(draw: Any) -> tuple[list[Step], dict[str, str]]:
    cols = {"a": NUM, "b": NUM, "c": BOOL, "k": STR}
    start = dict(cols)
    steps: list[Step] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["with_columns", "with_columns", "select", "filter",
                                     "group_by"]))  # fmt: skip
        # now and then a column that is not there (any more): both must raise
        gone = [c for c in start if c not in cols]
        if gone and draw(st.integers(0, 3)) == 0:
            ref = dict(cols)
            ref[draw(st.sampled_from(gone))] = start[draw(st.sampled_from(gone))]
        else:
            ref = cols
        if kind == "filter":
            steps.append(Step("filter", (("pred", _boolean(draw, ref, 2)),)))
            continue
        if kind == "group_by":
            keys = [c for c, k in cols.items() if k in (STR, BOOL)]
            nums = [c for c, k in ref.items() if k == NUM]
            if not keys or not nums:
                continue
            key = draw(st.sampled_from(keys))
            items = []
            for j in range(draw(st.integers(1, 2))):
                agg = draw(st.sampled_from(["sum", "mean", "max", "min", "count", "first"]))
                items.append((f"g{j}", Expr(agg, (Expr("col", (draw(st.sampled_from(nums)),)),))))
            steps.append(Step("group_by", tuple(items), (key,)))
            cols = {key: cols[key], **{name: NUM for name, _ in items}}
            continue
        if kind == "select":
            items = []
            literal_only = draw(st.integers(0, 5)) == 0
            if literal_only:
                items.append(("n", Expr("lit", (draw(st.sampled_from([3, 1.5])),))))
            else:
                kept = draw(st.lists(st.sampled_from(sorted(cols)), min_size=1, max_size=3,
                                     unique=True))  # fmt: skip
                items += [(c, Expr("col", (c,))) for c in kept]
                if draw(st.booleans()):
                    items.append((f"s{len(steps)}", _numeric(draw, ref, 2)))
            steps.append(Step("select", tuple(items)))
            cols = {name: (cols.get(name, NUM) if e.op == "col" else NUM) for name, e in items}
            continue
        items = []
        for j in range(draw(st.integers(1, 2))):
            nums = [c for c, k in cols.items() if k == NUM]
            overwrite = nums and draw(st.integers(0, 3)) == 0
            name = draw(st.sampled_from(nums)) if overwrite else f"w{len(steps)}_{j}"
            if draw(st.integers(0, 4)) == 0:
                items.append((name, _boolean(draw, ref, 1)))
            else:
                items.append((name, _numeric(draw, ref, 2)))
        steps.append(Step("with_columns", tuple(items)))
        for name, e in items:
            cols[name] = BOOL if e.op in (">", "<=", "==", "!=", "and", "not", "is_not_null") \
                else NUM  # fmt: skip
    return steps, cols


@st.composite
def frames(draw: Any) -> pa.Table:
    n = draw(st.sampled_from([0, 1, 3, 7, 20]))
    ints = st.one_of(st.none(), st.integers(-5, 5))
    floats = st.one_of(st.none(), st.floats(-4, 4, allow_nan=False, width=64))
    return pa.table({
        "a": pa.array(draw(st.lists(ints, min_size=n, max_size=n)), pa.int64()),
        "b": pa.array(draw(st.lists(floats, min_size=n, max_size=n)), pa.float64()),
        "c": pa.array(draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n,
                                    max_size=n)), pa.bool_()),
        "k": pa.array(draw(st.lists(st.sampled_from(["x", "y", None]), min_size=n,
                                    max_size=n)), pa.string()),
    })  # fmt: skip


#: sums and means may add in another order than polars': a few ulps of the result
CLOSE = Tolerance(rtol=1e-9, atol=1e-12)


def _raises_on_a_row(steps: list[Step]) -> bool:
    one = pl.DataFrame({"a": [1], "b": [1.5], "c": [True], "k": ["x"]})
    q: Any = one.lazy()
    for s in steps:
        q = s.apply(q, pl)
    try:
        q.collect()
    except pl.exceptions.PolarsError:
        return True
    return False


KINDS = st.sampled_from(["polars", "pyarrow", "pandas"])


@settings(max_examples=300, deadline=None)
@given(plan=plans(), table=frames(), kind=KINDS)
def test_random_plans_agree_with_polars(plan: tuple[list[Step], dict[str, str]],
                                        table: pa.Table, kind: str) -> None:  # fmt: skip
    _check(plan[0], table, kind, "numpy")


@settings(max_examples=40, deadline=None)
@given(plan=plans(), table=frames(), kind=KINDS)
def test_random_plans_agree_with_polars_compiled(plan: tuple[list[Step], dict[str, str]],
                                                 table: pa.Table, kind: str) -> None:  # fmt: skip
    # fewer: each new plan shape compiles; the compiled kernels compact a filter's
    # rows themselves, a path of their own (a polars string column once crashed it)
    _check(plan[0], table, kind, "compiled")


def _check(steps: list[Step], table: pa.Table, kind: str, tier: str) -> None:
    where = " -> ".join(f"{s.kind}{s.items}{s.keys or ''}" for s in steps)
    q_pl: Any = pl.from_arrow(table).lazy()  # type: ignore[union-attr]
    for s in steps:
        q_pl = s.apply(q_pl, pl)
    try:
        want: pl.DataFrame | None = q_pl.collect()
    except pl.exceptions.PolarsError:
        want = None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLBRIDGE_CPU_TIER", tier)
        # pandas: Arrow-backed columns (numpy ones would make the nullable ints floats)
        q_cb: Any = cb.lazy(to_kind(table, kind))
        for s in steps:
            q_cb = s.apply(q_cb, cb)
        if want is None:
            OUTCOMES["raises"] += 1
            with pytest.raises(cb.ColbridgeError):
                q_cb.compute(device="cpu")
            return
        try:
            got = q_cb.compute(device="cpu")
        except cb.ColbridgeError:
            # polars checks some types only once a row is there (`abs` of booleans), and
            # skips the steps a filter it finds always false cuts off: colbridge refuses
            # while planning, whatever the rows. Accepted where polars raises too on a
            # row that no filter drops.
            if not _raises_on_a_row([s for s in steps if s.kind != "filter"]):
                raise
            OUTCOMES["raises"] += 1
            return
    OUTCOMES["rows" if want.height else "no rows"] += 1
    OUTCOMES["grouped" if any(s.kind == "group_by" for s in steps) else "not grouped"] += 1
    problem = frame_mismatch(as_polars(got), want, CLOSE)
    assert problem is None, f"{kind} input, {where}: {problem}"


def test_the_plans_drawn_compute_rows_and_raise_too() -> None:
    # the fuzzer must not draw only plans polars refuses (or only empty results)
    OUTCOMES.clear()
    test_random_plans_agree_with_polars()
    total = sum(OUTCOMES[k] for k in ("raises", "rows", "no rows"))
    assert OUTCOMES["rows"] >= total // 3, OUTCOMES
    assert OUTCOMES["raises"] >= total // 100, OUTCOMES
    assert OUTCOMES["grouped"] >= total // 10, OUTCOMES
