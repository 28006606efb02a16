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
from typing import Any

from colbridge.codegen.dialect import Dialect
from colbridge.codegen.kernel import (
    InputSpec,
    KernelSource,
    OutputSpec,
    collect_grouped,
    collect_inputs,
    collect_scalars,
    kernel_tables,
)
from colbridge.codegen.lower import (
    NULL_SOURCE,
    Fold,
    Lowering,
    ReductionLowering,
    Valid,
    moment_combine,
    start_grouped_reduce,
)
from colbridge.codegen.numba_cpu import _literal_args, _signature_args, bound_functions
from colbridge.codegen.numpy_libm import FUNCTIONS as LIBM_FUNCTIONS
from colbridge.expr.nodes import Agg, Column, GroupAgg, Literal, Node, TableRef
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = ["NumpyDialect", "generate_elementwise", "generate_grouped_reduce", "generate_reduce"]

_NUMPY_MATH = {
    "asin": "np.arcsin",
    "acos": "np.arccos",
    "atan": "np.arctan",
    "asinh": "np.arcsinh",
    "acosh": "np.arccosh",
    "atanh": "np.arctanh",
    "atan2": "np.arctan2",
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
        if func in LIBM_FUNCTIONS:  # IEEE 754 does not define them to the last bit
            # NumPy's own vectorised exp, log, tanh, pow... differ from the C library's in
            # the last bit on some rows (4 in 100 for exp); the compiled kernels and polars
            # call the C library's: so does this tier, row by row (`math`, and the C
            # library's float32 functions, expf..., for float32)
            if dtype is DType.FLOAT32:
                return f"_as(_SINGLE[{func!r}]({', '.join(args)}), np.float32)"
            name = f"_DOUBLE[{func!r}]"
        if dtype is DType.FLOAT32:
            # NumPy's own float32 loops (SIMD) miss by an ulp where the kernels' libm
            # functions (computed in double, then rounded) do not: double, then round
            args = tuple(f"_as({a}, np.float64)" for a in args)
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

    def popcount(self, a: str) -> str:
        return f"_as(np.bitwise_count(_as({a}, np.uint64)), np.int64)"

    def gather(self, array: str, index: str) -> str:
        return f"{array}[_as({index}, np.intp)]"

    def search(self, table: str, length: str, value: str) -> str:
        return f"(np.searchsorted({table}, {value}, side='right') - 1)"

    def call(self, function: str, dtype: DType, args: list[str], guard: str | None) -> str:
        # every row at once, through a compiled loop over the rows (`function_loops`): the
        # very function and conversions of the compiled kernels, called on guarded rows only
        return f"{function}(n, {guard or 'True'}, {', '.join(args)})"


DIALECT = NumpyDialect()


class _ArrayRows:
    """Whole-array access: a column is its values array, a validity its unpacked bools."""

    in_range: str | None = None

    def __init__(self) -> None:
        self.bits: dict[frozenset[str], str] = {}
        self.errors: set[int] = set()
        self.unpack: dict[str, str] = {}
        #: lagged inputs (`InputSpec.lag`): their signed lag, whether they have a bitmap and
        #: whether the rows shifted in are filled
        self.lags: dict[int, tuple[str, bool, bool]] = {}

    def column(self, k: int, spec: InputSpec, emit: Callable[[str], None]) -> str:
        if spec.lag:
            # the values ``lg{k}`` rows back or ahead (a gather; the rows a shift moves in
            # read row 0, or the fill ``fl{k}``)
            lag = f"{'-' if spec.lag < 0 else ''}int(lg{k})"
            self.lags[k] = (lag, spec.nullable, spec.fill)
            values = f"_unpack(x{k}, xo{k}, n)" if spec.dtype.is_bool else f"x{k}"
            fill = f"fl{k}" if spec.fill else "None"
            self.unpack[f"xl{k}"] = f"_lagged({values}, {lag}, n, {fill})"
            return f"xl{k}"
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
                lag = self.lags.get(int(k))
                if lag is None:
                    self.unpack[f"vv{k}"] = f"_unpack(v{k}, vo{k}, n)"
                else:
                    valid = f"_unpack(v{k}, vo{k}, n)" if lag[1] else "np.ones(n, np.bool_)"
                    self.unpack[f"vv{k}"] = f"_lagged_valid({valid}, {lag[0]}, n, {lag[2]})"
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
    gate: Node | None = None,
    tables: Sequence[TableRef] = (),
) -> KernelSource:
    """A NumPy function computing every output and the filter mask over whole arrays."""
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    rows = _ArrayRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars, params,
                  group_index, groups, tables=table_index)  # fmt: skip
    out_specs: list[OutputSpec] = []
    store: list[str] = []
    keep = None
    if mask is not None:
        keep = lw.filter_rows(mask, gate)
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
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False, is_mask=True))
        store.append(f"_pack(o{m}, {keep}, n)")
    args = _signature_args(inputs, scalars, groups, tables) + _literal_args(literals)
    for m, spec in enumerate(out_specs):
        args.append(f"o{m}")
        if spec.nullable:
            args.append(f"ov{m}")
    args.append("err")
    body = [f"{name} = {expr}" for name, expr in rows.unpack.items()]
    body += ["nerr = [0] * err.shape[0]", *lw.lines, *store]
    body += [f"err[{kind}, 0] = nerr[{kind}]" for kind in sorted(rows.errors)]
    source = _module("elementwise", args, body, plan_text, lw.functions)
    return KernelSource(
        functions=bound_functions(lw.functions),
        kind="elementwise",
        roots=tuple(roots),
        source=source,
        inputs=inputs,
        scalars=scalars,
        groups=groups,
        tables=tables,
        literal_args=[lit.dtype for lit in literals if lit.dtype is not None],
        outputs=out_specs,
        uses_err=bool(rows.errors),
        err_messages=lw.err_messages,
    )


def _whole_array_fold(fold: Fold) -> str:
    acc, t = fold.acc.name, _np(fold.acc.dtype)
    if fold.op == "add":
        return f"{acc} = _as({acc} + np.sum(np.broadcast_to({fold.value}, (n,)), dtype={t}), {t})"
    if fold.op == "count":
        return f"{acc} = _as({acc} + np.count_nonzero(np.broadcast_to({fold.value}, (n,))), {t})"
    if fold.op == "or":
        return f"{acc} = {acc} | np.bitwise_or.reduce(np.broadcast_to({fold.value}, (n,)))"
    candidates = f"np.broadcast_to({fold.value}, (n,))"
    if fold.nan_empty:  # NaN never competes (fmin/fmax skip it); NaN only if nothing came
        pick = "np.fmin" if fold.op == "min" else "np.fmax"
        # `* 1.0` quiets a signaling NaN, which NumPy's fmin/fmax let win outside their
        # vector loops (NumPy 2.4: fmin.reduce([snan, 1.0]) is NaN)
        candidates = f"np.broadcast_to(({fold.value}) * 1.0, (n,))"
        if fold.when:
            candidates = f"np.where({fold.when}, ({fold.value}) * 1.0, np.nan)"
        return f"{acc} = _as({pick}.reduce(np.append({candidates}, {acc})), {t})"
    pick = "np.min" if fold.op == "min" else "np.max"
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
    tables: Sequence[TableRef] = (),
    literals: Sequence[Literal] = (),
) -> KernelSource:
    """A NumPy function computing one partial row of every reduction in ``aggs``."""
    roots: list[Node] = [a.arg for a in aggs]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    rows = _ArrayRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars, params,
                  group_index, groups, tables=table_index)  # fmt: skip
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
    args = [*_signature_args(inputs, scalars, groups, tables), *_literal_args(literals),
            "pf", "pi", "pu", "err"]
    source = _module("reduce", args, body, plan_text, lw.functions)
    return KernelSource(
        functions=bound_functions(lw.functions),
        kind="reduce",
        roots=tuple(aggs),
        source=source,
        inputs=inputs,
        scalars=scalars,
        groups=groups,
        tables=tables,
        slots=[st.slot for st in red.states],
        n_f=red.n_f,
        n_i=red.n_i,
        n_u=red.n_u,
        err_messages=lw.err_messages,
        uses_err=bool(rows.errors),
    )


def _grouped_fold(fold: Fold) -> str:
    """One fold over every row at once, into table column ``acc`` by group id ``gid``."""
    acc, t = fold.acc.name, _np(fold.acc.dtype)
    values = f"_as(np.broadcast_to({fold.value}, (n,)), {t})"
    if fold.op == "add" and fold.acc.dtype.is_float:
        # bincount sums each group's rows in row order, as one chunk of a compiled kernel
        return f"{acc} += np.bincount(gid, weights={values}, minlength=ngroups)"
    if fold.op == "count":  # the rows where the boolean value holds, per group
        holds = f"np.broadcast_to({fold.value}, (n,))"
        return f"{acc} += np.bincount(gid[{holds}], minlength=ngroups).astype({t})"
    if fold.op in ("add", "or"):
        ufunc = "np.add" if fold.op == "add" else "np.bitwise_or"
        return f"{ufunc}.at({acc}, gid, {values})"
    if fold.nan_empty:  # NaN never competes (fmin/fmax skip it); NaN only if nothing came
        ufunc = "np.fmin" if fold.op == "min" else "np.fmax"
        values = f"_as(np.broadcast_to(({fold.value}) * 1.0, (n,)), {t})"  # quiet NaN (above)
    else:
        ufunc = "np.minimum" if fold.op == "min" else "np.maximum"
    if fold.when is None:
        return f"{ufunc}.at({acc}, gid, {values})"
    return (f"sel = np.broadcast_to({fold.when}, (n,)); "
            f"{ufunc}.at({acc}, gid[sel], {values}[sel])")  # fmt: skip


def generate_grouped_reduce(
    aggs: list[GroupAgg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool = False,
    plan_text: str = "",
    tables: Sequence[TableRef] = (),
    literals: Sequence[Literal] = (),
) -> KernelSource:
    """A NumPy function computing one partial table (one chunk) of every grouped reduction.

    The compiled kernel's calling convention (`colbridge.codegen.numba_cpu`); folds
    are ``np.bincount`` (float sums) and ``np.add.at``/``np.minimum.at``-style updates.
    """
    rows = _ArrayRows()
    start = start_grouped_reduce(DIALECT, rows, aggs, types, nulls, tables, literals)
    ids_name, lw = start.ids_name, start.lw
    inputs, scalars, groups, tables = start.inputs, start.scalars, start.groups, start.tables
    gid = (
        "np.zeros(n, dtype=np.intp)" if ids_name is None
        else f"_as({lw.value(Column(ids_name)).expr}, np.intp)"
    )  # fmt: skip
    red = ReductionLowering(lw)
    for agg in aggs:
        red.add(agg)
    table = {
        acc.name: f"t{acc.kind}[0, :, {acc.column}]" for st in red.states for acc in st.accumulators
    }
    body = ["ngroups = tf.shape[1]", "nerr = [0] * err.shape[0]"]
    body += [f"{table[acc.name]} = {acc.init}" for st in red.states for acc in st.accumulators]
    body += lw.lines
    body.append(f"gid = {gid}")
    for fold in red.folds:
        target = fold.acc
        renamed = Fold(fold.op, type(target)(table[target.name], target.kind, target.column,
                                             target.init), fold.value, fold.when,
                       fold.nan_empty)  # fmt: skip
        body.append(_grouped_fold(renamed))
    body += [f"err[{kind}, 0] = nerr[{kind}]" for kind in sorted(rows.errors)]
    body = [f"{name} = {expr}" for name, expr in rows.unpack.items()] + body
    args = [*_signature_args(inputs, scalars, groups, tables), *_literal_args(literals),
            "tf", "ti", "tu", "err"]
    source = _module("grouped", args, body, plan_text, lw.functions)
    return KernelSource(
        functions=bound_functions(lw.functions),
        kind="grouped",
        roots=tuple(aggs),
        source=source,
        inputs=inputs,
        scalars=scalars,
        groups=groups,
        tables=tables,
        slots=[st.slot for st in red.states],
        n_f=red.n_f,
        n_i=red.n_i,
        n_u=red.n_u,
        err_messages=lw.err_messages,
        uses_err=bool(rows.errors),
    )


def function_loops(functions: dict[str, tuple[Any, DType, int, str]]) -> list[str]:
    """Whole-array callers of the compiled user functions a NumPy function calls.

    ``_call<token>_<dtype>_<arity>_<mode>(n, guard, *args)`` returns (values, no
    exception, valid) as arrays: a small numba loop calls the function's dispatcher
    ``_udf<token>`` (bound when the module is loaded) on the rows where ``guard`` holds,
    with the conversion and exception handling of the compiled kernels' wrappers.
    """
    lines = ["import numba", "", ""] if functions else []
    for name, (func, dtype, arity, mode) in sorted(functions.items()):
        params = ", ".join(f"a{k}" for k in range(arity))
        items = ", ".join(f"a{k}[i]" for k in range(arity))
        spread = ", ".join(f"np.broadcast_to(a{k}, (n,))" for k in range(arity))
        lines += [
            "@numba.njit(nogil=True)",
            f"def {name}_rows(n, guard, out, ok, valid, {params}):",
            "    for i in range(n):",
            "        if guard[i]:",
            "            try:",
            *((f"                r = _udf{func.token}({items})",
               f"                out[i] = {_np(dtype)}(r[0])",
               "                valid[i] = bool(r[1])") if mode == "validity"
              else (f"                out[i] = {_np(dtype)}(_udf{func.token}({items}))",)),
            "            except Exception:  # counted per row, raised after the kernel",
            "                ok[i] = False",
            "",
            "",
            f"def {name}(n, guard, {params}):",
            f"    out = np.zeros(n, dtype={_np(dtype)})",
            "    ok = np.ones(n, dtype=np.bool_)",
            "    valid = np.ones(n, dtype=np.bool_)",
            f"    {name}_rows(n, np.broadcast_to(guard, (n,)), out, ok, valid, {spread})",
            "    return out, ok, valid",
            "",
            "",
        ]
    return lines


def _module(
    name: str,
    args: list[str],
    body: list[str],
    plan_text: str,
    functions: dict[str, tuple[Any, DType, int, str]] | None = None,
) -> str:
    lines = [
        *function_loops(functions or {}),
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

from colbridge.codegen.numpy_libm import DOUBLE as _DOUBLE, SINGLE as _SINGLE


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


def _lagged(values, lag, n, fill):
    # row i holds row i - lag; rows a shift moves in hold `fill`, or row 0 (their value is
    # null) where it is None
    rows = np.arange(n, dtype=np.int64) - lag
    inside = (rows >= 0) & (rows < n)
    moved = values[np.where(inside, rows, 0)]
    return moved if fill is None else np.where(inside, moved, fill).astype(values.dtype)


def _lagged_valid(valid, lag, n, filled):
    # the validity of row i - lag; where that row does not exist, whether it is filled
    rows = np.arange(n, dtype=np.int64) - lag
    inside = (rows >= 0) & (rows < n)
    return valid[np.where(inside, rows, 0)] & inside | (~inside if filled else False)


def _pack(out, values, n):
    # n booleans into the 64-bit words of a bitmap
    packed = np.packbits(np.broadcast_to(values, (n,)), bitorder="little")
    out.view(np.uint8)[: packed.size] = packed

'''
