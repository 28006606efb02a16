"""Code generation for NumPy: a fused plan segment → a Python function of whole-array operations.

Stage: codegen. The third target of `colbridge.codegen.lower`: the same
per-row statements, spelled as NumPy operations over every row at once (a
select is ``np.where``, a math call a ufunc), so a plan can run without
compiling anything. The CPU backend uses it for small inputs whose kernel is
not compiled yet (a notebook's first ``compute()``); the answers are the
compiled kernels' (same lowering; differentially tested), except for the
summation order of float sums and std/var (whole-array pairwise sums instead
of per-block ones), within the documented tolerance.

The generated function has the numba kernels' calling convention
(`colbridge.codegen.numba_cpu`), so the backend binds it the same way; the
reduction function writes a single partial row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from colbridge.codegen.dialect import Dialect
from colbridge.codegen.kernel import (
    InputSpec,
    KernelSource,
    OutputSpec,
    collect_inputs,
    collect_scalars,
    collect_tables,
)
from colbridge.codegen.lower import (
    NULL_SOURCE,
    Fold,
    Lowering,
    ReductionLowering,
    Valid,
    moment_combine,
)
from colbridge.codegen.numba_cpu import _signature_args, table_args
from colbridge.expr.nodes import Agg, Literal, Node
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = ["NumpyDialect", "generate_elementwise", "generate_reduce"]

_NUMPY_MATH = {
    "asin": "np.arcsin",
    "acos": "np.arccos",
    "atan": "np.arctan",
    "fabs": "np.abs",
    "pow": "np.power",
}


def _np(dtype: DType) -> str:
    return "np.bool_" if dtype.is_bool else f"np.{dtype.value}"


class NumpyDialect(Dialect):
    """NumPy over whole arrays; every value is typed by an explicit ``astype``."""

    name = "numpy"
    true = "True"
    false = "False"

    def decl(self, name: str, dtype: DType, expr: str) -> str:
        return f"{name} = {expr}"

    def var(self, name: str, dtype: DType, expr: str) -> str:
        return f"{name} = {expr}"

    def assign(self, name: str, expr: str) -> str:
        return f"{name} = {expr}"

    def const(self, value: bool | int | float | None, dtype: DType) -> str:
        if dtype.is_bool:
            return "True" if value else "False"
        if value is None:
            return f"{_np(dtype)}(0)"
        if dtype.is_float:
            v = float(value)
            if v != v:
                return f"{_np(dtype)}(np.nan)"
            if v in (float("inf"), float("-inf")):
                return f"{_np(dtype)}({'-' if v < 0 else ''}np.inf)"
            return f"{_np(dtype)}({v!r})"
        return f"{_np(dtype)}({int(value)})"

    def convert(self, expr: str, dtype: DType) -> str:
        return f"_as({expr}, {_np(dtype)})"

    def wrapping(self, sym: str, a: str, b: str, dtype: DType) -> str:
        t = _np(dtype)
        return f"_as(_as({a}, {t}) {sym} _as({b}, {t}), {t})"

    def shift_right(self, a: str, bits: int, dtype: DType) -> str:
        return f"_as(_as({a}, {_np(dtype)}) >> {_np(dtype)}({bits}), {_np(dtype)})"

    def negate_wrapping(self, a: str, dtype: DType) -> str:
        return f"_as({_np(dtype)}(0) - _as({a}, {_np(dtype)}), {_np(dtype)})"

    def invert(self, a: str, dtype: DType) -> str:
        return f"_as(np.invert({a}), {_np(dtype)})"

    def float_op(self, sym: str, a: str, b: str, dtype: DType) -> str:
        return f"_as(({a}) {sym} ({b}), {_np(dtype)})"

    def and_(self, *parts: str) -> str:
        return "(" + " & ".join(f"({p})" for p in parts) + ")"

    def or_(self, *parts: str) -> str:
        return "(" + " | ".join(f"({p})" for p in parts) + ")"

    def not_(self, a: str) -> str:
        return f"np.logical_not({a})"

    def select(self, cond: str, a: str, b: str) -> str:
        return f"np.where({cond}, {a}, {b})"

    def math(self, func: str, dtype: DType, *args: str) -> str:
        name = _NUMPY_MATH.get(func, f"np.{func}")
        return f"_as({name}({', '.join(args)}), {_np(dtype)})"

    def is_finite(self, a: str) -> str:
        return f"np.isfinite({a})"

    def is_inf(self, a: str) -> str:
        return f"np.isinf({a})"

    def floordiv(self, a: str, b: str, dtype: DType) -> str:
        return f"_as(np.floor_divide({a}, {b}), {_np(dtype)})"  # rounds toward -inf

    def mod(self, a: str, b: str, dtype: DType) -> str:
        return f"_as(np.remainder({a}, {b}), {_np(dtype)})"  # the divisor's sign

    def ipow(self, a: str, b: str, dtype: DType) -> str:
        return f"_as(_ipow(_as(_as({a}, np.int64), np.uint64), _as({b}, np.uint64)), {_np(dtype)})"

    def if_block(self, cond: str, body: list[str]) -> list[str]:
        return [f"if {cond}:", *("    " + line for line in body)]

    def to_uint64(self, a: str) -> str:
        return f"_as({a}, np.uint64)"

    def gather(self, table: str, index: str) -> str:
        return f"{table}[_as({index}, np.intp)]"

    def search(self, table: str, length: str, value: str) -> str:
        return f"(np.searchsorted({table}, {value}, side='right') - 1)"


DIALECT = NumpyDialect()


class _ArrayRows:
    """Whole-array access: a column is its values array, a validity its unpacked bools."""

    in_range: str | None = None

    def __init__(self) -> None:
        self.bits: dict[frozenset[str], str] = {}
        self.errors: set[int] = set()
        self.unpack: dict[str, str] = {}

    def column(self, k: int, spec: InputSpec, emit: Callable[[str], None]) -> str:
        if spec.dtype.is_bool:
            self.unpack[f"xb{k}"] = f"_unpack(x{k}, xo{k}, n)"
            return f"xb{k}"
        return f"x{k}"

    def sources_bit(self, sources: frozenset[str], emit: Callable[[str], None]) -> str:
        name = self.bits.get(sources)
        if name is not None:
            return name
        name = f"vb{len(self.bits)}"
        self.bits[sources] = name
        parts = []
        for source in sorted(sources):
            if source == NULL_SOURCE:
                parts.append("False")
            elif source.startswith("sv"):
                parts.append(source)
            else:
                k = source[1:]
                self.unpack[f"vv{k}"] = f"_unpack(v{k}, vo{k}, n)"
                parts.append(f"vv{k}")
        emit(f"{name} = np.broadcast_to({' & '.join(parts)}, (n,))")
        return name

    def count_error(self, kind: int, failed: str) -> str:
        self.errors.add(kind)
        return f"nerr[{kind}] += np.count_nonzero(np.broadcast_to({failed}, (n,)))"


def _valid_expr(lw: Lowering, valid: Valid) -> str:
    rv = lw.row_valid(valid)
    return rv if rv is not None else "True"


def generate_elementwise(
    outputs: list[tuple[str, Node]],
    mask: Node | None,
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool = False,
    plan_text: str = "",
    literals: Sequence[Literal] = (),
) -> KernelSource:
    """A NumPy function computing every output and the filter mask over whole arrays."""
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    tables = collect_tables(roots, inside_agg=False)
    rows = _ArrayRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars, params,
                  {t: k for k, t in enumerate(tables)})  # fmt: skip
    out_specs: list[OutputSpec] = []
    store: list[str] = []
    keep = None
    if mask is not None:
        val = lw.value(mask)
        keep_row = lw.row_valid(val.valid)
        keep = lw.declare(DType.BOOL, DIALECT.and_(keep_row, val.expr)) if keep_row else val.expr
        lw.gate_failures(keep)
    for m, (name, node) in enumerate(outputs):
        val = lw.value(node)
        dtype = types[node]
        out_specs.append(OutputSpec(name, dtype, not val.valid.never_null))
        if dtype.is_bool:
            store.append(f"_pack(o{m}, {val.expr}, n)")
        else:
            store.append(f"o{m}[:] = {val.expr}")
        if not val.valid.never_null:
            store.append(f"_pack(ov{m}, {_valid_expr(lw, val.valid)}, n)")
    if keep is not None:
        m = len(out_specs)
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False))
        store.append(f"_pack(o{m}, {keep}, n)")
    args = _signature_args(inputs, scalars) + [f"p{k}" for k in range(len(literals))]
    args += table_args(tables)
    for m, spec in enumerate(out_specs):
        args.append(f"o{m}")
        if spec.nullable:
            args.append(f"ov{m}")
    args.append("err")
    body = [f"{name} = {expr}" for name, expr in rows.unpack.items()]
    body += ["nerr = [0] * err.shape[0]", *lw.lines, *store]
    body += [f"err[{kind}, 0] = nerr[{kind}]" for kind in sorted(rows.errors)]
    source = _module("elementwise", args, body, plan_text)
    return KernelSource(
        kind="elementwise",
        source=source,
        inputs=inputs,
        scalars=scalars,
        literal_args=[lit.dtype for lit in literals if lit.dtype is not None],
        outputs=out_specs,
        uses_err=bool(rows.errors),
        err_messages=lw.err_messages,
        tables=tables,
    )


def _whole_array_fold(fold: Fold) -> str:
    acc, t = fold.acc.name, _np(fold.acc.dtype)
    if fold.op == "add":
        return f"{acc} = _as({acc} + np.sum(np.broadcast_to({fold.value}, (n,)), dtype={t}), {t})"
    if fold.op == "or":
        return f"{acc} = {acc} | np.bitwise_or.reduce(np.broadcast_to({fold.value}, (n,)))"
    pick = "np.min" if fold.op == "min" else "np.max"
    candidates = f"np.broadcast_to({fold.value}, (n,))"
    if fold.when:
        candidates = f"np.where({fold.when}, {fold.value}, {acc})"
    return f"{acc} = _as({pick}(np.broadcast_to({candidates}, (n,)), initial={acc}), {t})"


def generate_reduce(
    aggs: list[Agg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool = False,
    plan_text: str = "",
) -> KernelSource:
    """A NumPy function computing one partial row of every reduction in ``aggs``."""
    roots: list[Node] = [a.arg for a in aggs]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    tables = collect_tables(roots, inside_agg=False)
    rows = _ArrayRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars,
                  tables={t: k for k, t in enumerate(tables)})  # fmt: skip
    red = ReductionLowering(lw)
    for agg in aggs:
        red.add(agg)
    d = DIALECT
    body = [d.var(acc.name, acc.dtype, acc.init) for st in red.states for acc in st.accumulators]
    body += ["nerr = [0] * err.shape[0]", *lw.lines]
    body += [_whole_array_fold(fold) for fold in red.folds]
    for q, st in enumerate(red.states):
        x, ok = st.moment_of, st.ok
        if x is None:
            continue
        # the whole input is one chunk: its mean, then the squared deviations from it
        weights = f"np.broadcast_to({ok if ok else 'True'}, (n,))"
        body += [
            f"wc{q} = np.int64(np.count_nonzero({weights}))",
            f"ws{q} = np.sum(np.where({weights}, {x}, 0.0), dtype=np.float64)",
            f"wm{q} = ws{q} / np.float64(max(wc{q}, 1))",
            f"wd{q} = np.sum(np.where({weights}, ({x} - wm{q}) * ({x} - wm{q}), 0.0),"
            " dtype=np.float64)",
        ]
        count, mean, m2 = (acc.name for acc in st.accumulators)
        body += moment_combine(d, count, mean, m2, f"wc{q}", f"wm{q}", f"wd{q}")
    body += [
        f"p{acc.kind}[0, {acc.column}] = {acc.name}"
        for st in red.states
        for acc in st.accumulators
    ]
    body += [f"err[{kind}, 0] = nerr[{kind}]" for kind in sorted(rows.errors)]
    body = [f"{name} = {expr}" for name, expr in rows.unpack.items()] + body
    args = [*_signature_args(inputs, scalars), *table_args(tables), "pf", "pi", "pu", "err"]
    source = _module("reduce", args, body, plan_text)
    return KernelSource(
        kind="reduce",
        source=source,
        inputs=inputs,
        scalars=scalars,
        slots=[st.slot for st in red.states],
        n_f=red.n_f,
        n_i=red.n_i,
        n_u=red.n_u,
        err_messages=lw.err_messages,
        uses_err=bool(rows.errors),
        tables=tables,
    )


def _module(name: str, args: list[str], body: list[str], plan_text: str) -> str:
    lines = [
        f"def {name}({', '.join(args)}):",
        "    n = int(n)",
        "    with np.errstate(all='ignore'):",
        *("        " + line for line in body),
    ]
    return _HEADER.format(plan=plan_text) + "\n".join(lines) + "\n"


_HEADER = '''"""Generated by colbridge from the plan below (NumPy, whole arrays); do not edit.

{plan}
"""
import numpy as np


def _as(x, t):
    # every value has its exact type (a 0-d array for a value shared by all rows)
    return np.asarray(x).astype(t, copy=False)


def _ipow(base, exp):
    # integer power modulo 2**64, elementwise; the caller truncates to the result type
    base, exp = np.broadcast_arrays(base, exp)
    result = np.ones(base.shape, dtype=np.uint64)
    base, exp = base.copy(), exp.copy()
    while np.any(exp):
        odd = (exp & np.uint64(1)) != 0
        result = np.where(odd, result * base, result)
        base = base * base
        exp = exp >> np.uint64(1)
    return result


def _unpack(bits, offset, n):
    # bit-packed bytes from bit `offset` as n booleans
    offset = int(offset)
    return np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].astype(bool)


def _pack(out, values, n):
    # n booleans into the 64-bit words of a bitmap
    packed = np.packbits(np.broadcast_to(values, (n,)), bitorder="little")
    out.view(np.uint8)[: packed.size] = packed

'''
