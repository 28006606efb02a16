"""Code generation for the CPU: a fused plan segment → numba kernel source (the numba dialect).

Stage: codegen. The semantics come from `colbridge.codegen.lower`; this module
spells them in numba's Python subset and places them in the CPU loop skeleton.

Calling convention (the same for every plan, so the runtime binds arguments
without knowing the expressions):

``elementwise(n, <inputs>, <scalars>, <literals>, <outputs>, err)`` and
``reduce(n, <inputs>, <scalars>, pf, pi, pu, err)``, where

* an input column ``k`` is ``x{k}`` (values; bool columns: the bit-packed bytes)
  then, for bool columns, ``xo{k}`` (bit offset, uint64), then where the column
  has nulls ``v{k}`` (validity bytes) and ``vo{k}`` (its bit offset, uint64);
* a reduction result ``j`` from an earlier pass is ``s{j}`` and, where it may
  be null, ``sv{j}``; literals are ``p0, p1, ...``;
* a per-group result ``j`` of an earlier grouped pass is ``g{j}`` and, where it
  may be null, ``gv{j}``; a lookup table ``k`` then is ``lut{k}`` (values),
  ``lutv{k}`` (validity bytes, for tables whose entries may have no value) and
  ``lutn{k}`` (its length);
* an output ``m`` is ``o{m}`` (values; bool outputs as uint64 bitmap words) and,
  where it may be null, ``ov{m}`` (uint64 words); the filter mask is a bool output;
* ``err[kind, block]`` counts failures (strict casts, negative integer exponents);
* ``pf``, ``pi``, ``pu`` hold per-block partial results of reductions
  (float64, int64, uint64; one row per block, columns as `AggSlot` says).

Loop skeleton: blocks of `BLOCK` rows are spread over threads (``prange``); a
block walks its 64-row words; per word the input validity bitmaps are read as
64-bit words and ANDed, 64 rows per operation; then a flat row loop computes the
values branch-free. Row indices are unsigned (numba then drops the
negative-index wraparound test, and LLVM vectorises the loop); bit-packed
results are or-ed into a register per word and stored once.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbridge.codegen.dialect import Dialect
from colbridge.codegen.kernel import (
    N_HOST_ERR_KINDS,
    GroupedSpec,
    InputSpec,
    KernelSource,
    OutputSpec,
    ScalarSpec,
    calls_functions,
    collect_grouped,
    collect_inputs,
    collect_scalars,
    kernel_tables,
    table_params,
)
from colbridge.codegen.lower import (
    NULL_SOURCE,
    Accumulator,
    Fold,
    Lowering,
    ReductionLowering,
    Valid,
    merge_messages,
    moment_combine,
    row_updates,
    start_grouped_reduce,
    take_better,
)
from colbridge.expr.nodes import Agg, Column, GroupAgg, Literal, Node, TableRef, walk
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = [
    "BLOCK",
    "FilterKernels",
    "NumbaDialect",
    "generate_elementwise",
    "generate_filter",
    "generate_grouped_reduce",
    "generate_reduce",
]

#: Rows per block: the unit of work of one thread, and of one partial row of a reduction.
BLOCK = 16384

_NUMBA_MATH = {
    "asin": "np.arcsin",
    "acos": "np.arccos",
    "atan": "np.arctan",
    "asinh": "np.arcsinh",
    "acosh": "np.arccosh",
    "atanh": "np.arctanh",
    "atan2": "np.arctan2",
    "fabs": "np.abs",
    "rint": "np.rint",
    "erf": "math.erf",  # NumPy has none; numba calls the C library's, as polars' matches
    "erfc": "math.erfc",
}


def _np(dtype: DType) -> str:
    return "np.bool_" if dtype.is_bool else f"np.{dtype.value}"


class NumbaDialect(Dialect):
    """numba's Python subset, with NumPy scalar types for exact widths."""

    name = "cpu"
    true = "True"
    false = "False"

    def __init__(self, *, python_errors: bool = False) -> None:
        #: the kernel is compiled with numba's Python error model (it calls user functions,
        #: whose exceptions must be caught): float division is then spelled as a ufunc,
        #: which keeps IEEE results (x / 0.0 is inf) instead of raising
        self.python_errors = python_errors

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
        return f"{_np(dtype)}({expr})"

    def wrapping(self, sym: str, a: str, b: str, dtype: DType) -> str:
        # numba computes small integers in int64 (or uint64): the conversion wraps. Its
        # signed arithmetic carries LLVM's `nsw` flag (overflow is undefined, so LLVM may
        # assume `x * x >= 0`): int64 goes through uint64, which wraps by definition
        if dtype.is_signed and dtype.bits == 64 and sym in "+-*":
            return f"np.int64(U({a}) {sym} U({b}))"
        return f"{_np(dtype)}({a} {sym} {b})"

    def shift_right(self, a: str, bits: int, dtype: DType) -> str:
        return f"{_np(dtype)}({a} >> {_np(dtype)}({bits}))"

    def negate_wrapping(self, a: str, dtype: DType) -> str:
        if dtype.is_signed and dtype.bits == 64:  # -INT64_MIN overflows: see `wrapping`
            return f"np.int64(U(0) - U({a}))"
        return f"{_np(dtype)}(0 - {a})"

    def invert(self, a: str, dtype: DType) -> str:
        return f"{_np(dtype)}(~{a})"

    def float_op(self, sym: str, a: str, b: str, dtype: DType) -> str:
        if sym == "/" and self.python_errors:
            return f"{_np(dtype)}(np.true_divide({a}, {b}))"
        return f"{_np(dtype)}({a} {sym} {b})"

    def accumulate(self, acc: str, value: str, dtype: DType) -> str:
        if dtype is DType.FLOAT64:  # `_accumulate`: an add the loop vectoriser may reorder
            return f"_accumulate({acc}, {value})"
        return self.float_op("+", acc, value, dtype)

    def and_(self, *parts: str) -> str:
        return "(" + " & ".join(f"({p})" for p in parts) + ")"

    def or_(self, *parts: str) -> str:
        return "(" + " | ".join(f"({p})" for p in parts) + ")"

    def not_(self, a: str) -> str:
        return f"(not ({a}))"

    def call(self, function: str, dtype: DType, args: list[str], guard: str | None) -> str:
        made = f"{function}({', '.join(args)})"
        if guard is None:
            return made
        # a real branch (Python's conditional expression): nulls never reach the function
        return f"({made} if ({guard}) else ({self.const(0, dtype)}, True, True))"

    def select(self, cond: str, a: str, b: str) -> str:
        return f"_select({cond}, {a}, {b})"

    def math(self, func: str, dtype: DType, *args: str) -> str:
        if func == "pow":
            return f"{_np(dtype)}({args[0]} ** {args[1]})"
        name = _NUMBA_MATH.get(func, f"np.{func}")
        return f"{_np(dtype)}({name}({', '.join(args)}))"

    def is_finite(self, a: str) -> str:
        return f"np.isfinite({a})"

    def is_inf(self, a: str) -> str:
        return f"np.isinf({a})"

    def floordiv(self, a: str, b: str, dtype: DType) -> str:
        return f"{_np(dtype)}({a} // {b})"  # numba follows Python: rounds toward -inf

    def mod(self, a: str, b: str, dtype: DType) -> str:
        return f"{_np(dtype)}({a} % {b})"  # the sign of the divisor, as in Python

    def ipow(self, a: str, b: str, dtype: DType) -> str:
        return f"{_np(dtype)}(_ipow(np.uint64(np.int64({a})), np.uint64({b})))"

    def if_block(self, cond: str, body: list[str]) -> list[str]:
        return [f"if {cond}:", *("    " + line for line in body)]

    def to_uint64(self, a: str) -> str:
        return f"np.uint64({a})"

    def popcount(self, a: str) -> str:
        return f"_popcount({a})"  # LLVM's ctpop, emitted in place

    def gather(self, array: str, index: str) -> str:
        return f"{array}[U({index})]"  # unsigned: no negative-index wraparound test

    def search(self, table: str, length: str, value: str) -> str:
        return f"_search({table}, {value})"


DIALECT = NumbaDialect()
#: the dialect of kernels that call compiled user functions
FUNCTION_DIALECT = NumbaDialect(python_errors=True)


def _dialect(roots: Sequence[Node]) -> NumbaDialect:
    return FUNCTION_DIALECT if calls_functions(roots) else DIALECT


def _functions(*lowerings: Lowering) -> dict[str, tuple[Any, DType, int, str]]:
    found: dict[str, tuple[Any, DType, int, str]] = {}
    for lw in lowerings:
        found.update(lw.functions)
    return found


def function_wrappers(functions: dict[str, tuple[Any, DType, int, str]]) -> list[str]:
    """Module-level wrappers of the compiled user functions a kernel calls.

    ``_call<token>_<dtype>_<arity>_<mode>`` calls the function's dispatcher ``_udf<token>``
    (a global the backend binds when it loads the module), converts the result to the
    planned dtype and returns (value, no exception, valid): numba cannot raise out of a
    parallel loop, so an exception is caught here and counted by the kernel. In mode
    ``validity`` the function returns (value, valid) itself.
    """
    lines: list[str] = []
    for name, (func, dtype, arity, mode) in sorted(functions.items()):
        params = ", ".join(f"a{k}" for k in range(arity))
        call = f"_udf{func.token}({params})"
        done = (f"        r = {call}", f"        return {_np(dtype)}(r[0]), True, bool(r[1])") \
            if mode == "validity" else (f"        return {_np(dtype)}({call}), True, True",)
        lines += [
            "@numba.njit(nogil=True)",
            f"def {name}({params}):",
            "    try:",
            *done,
            "    except Exception:  # counted per row, raised after the kernel",
            f"        return {DIALECT.const(0, dtype)}, False, False",
            "",
            "",
        ]
    return lines


def bound_functions(functions: dict[str, tuple[Any, DType, int, str]]) -> dict[str, Any]:
    """The globals a kernel module calling ``functions`` needs: ``_udf<token>`` dispatchers."""
    return {f"_udf{func.token}": func.dispatcher() for func, _, _, _ in functions.values()}


class _CpuRows:
    """The CPU skeleton's row access: row ``i`` (uint64) of word ``w``, ``q = i - base``.

    Several lanes of one row loop (reductions keep independent accumulators per lane)
    each get their own row and shift variables and temporaries' ``suffix``, and share
    the word registry and the failure counters.
    """

    in_range: str | None = None  # every row of the loop exists

    def __init__(self, row: str = "i", shift: str = "q", suffix: str = "",
                 shared: _CpuRows | None = None) -> None:  # fmt: skip
        self.row, self.shift, self.suffix = row, shift, suffix
        #: source sets read per row: (name of their word, the sources)
        self.word_sets: dict[frozenset[str], str] = shared.word_sets if shared else {}
        self.errors: set[int] = shared.errors if shared else set()
        #: lagged inputs (`InputSpec.lag`): their direction, whether they have a bitmap and
        #: whether the rows shifted in are filled
        self.lags: dict[int, tuple[int, bool, bool]] = shared.lags if shared else {}
        #: each lagged input's row statement, clamped to a row that exists (any row will
        #: do: the value is null there), and as the plain offset for rows known in range
        self.lag_rows: dict[str, str] = shared.lag_rows if shared else {}
        self._bits: set[str] = set()

    def column(self, k: int, spec: InputSpec, emit: Callable[[str], None]) -> str:
        i = self.row
        if spec.lag:
            self.lags[k] = (spec.lag, spec.nullable, spec.fill)
            row = f"li{k}{self.suffix}"
            clamped, plain = _lagged_row(i, k, spec.lag)
            self.lag_rows[f"{row} = {clamped}"] = f"{row} = {plain}"
            emit(f"{row} = {clamped}")
            if spec.fill:
                # the fill where the row read does not exist; only the loops at the ends
                # of the rows choose (in the plain loop every row read exists)
                value = f"lf{k}{self.suffix}"
                read = _read(k, spec, row)
                exists = f"{i} >= lg{k}" if spec.lag > 0 else f"{i} + lg{k} < U(n)"
                chosen = f"{value} = _select({exists}, {read}, fl{k})"
                self.lag_rows[chosen] = f"{value} = {read}"
                emit(chosen)
                return value
            i = row
        return _read(k, spec, i)

    def sources_bit(self, sources: frozenset[str], emit: Callable[[str], None]) -> str:
        word = self.word_sets.get(sources)
        if word is None:
            word = f"vw{len(self.word_sets)}"
            self.word_sets[sources] = word
        bit = f"b{word}{self.suffix}"
        if bit not in self._bits:
            self._bits.add(bit)
            emit(f"{bit} = ((({word}) >> {self.shift}) & U(1)) != U(0)")
        return bit

    def count_error(self, kind: int, failed: str) -> str:
        self.errors.add(kind)
        return f"nerr{kind} += np.int64({failed})"


def _read(k: int, spec: InputSpec, i: str) -> str:
    """Input ``k``'s value at row ``i``: an element, or a bit of a boolean column."""
    if spec.dtype.is_bool:
        return f"((x{k}[({i} + xo{k}) >> U(3)] >> (({i} + xo{k}) & U(7))) & U(1)) != U(0)"
    return f"x{k}[{i}]"


def _lagged_row(i: str, k: int, direction: int) -> tuple[str, str]:
    """The row input ``k`` is read at, ``lg{k}`` rows back (``direction`` 1) or ahead (-1).

    Clamped into the column, and as the plain offset for rows known to be inside.
    """
    lag = f"lg{k}"
    if direction > 0:
        return f"{i} - {lag} if {i} >= {lag} else U(0)", f"{i} - {lag}"
    return f"{i} + {lag} if {i} + {lag} < U(n) else U(0)", f"{i} + {lag}"


_ALL = "U(0xFFFFFFFFFFFFFFFF)"


def _lagged_word(k: int, direction: int, has_bitmap: bool, fill: bool) -> str:
    """Word ``w`` of a lagged input's validity, as an expression.

    Its bitmap moved ``lg{k}`` rows back (``direction`` 1) or ahead (-1). The rows the
    shift moves in (before row ``lg{k}``, or from row ``n - lg{k}`` on) are null, or
    valid where they are filled (``fill``).
    """
    start = "(w << U(6))"
    lag = f"lg{k}"
    if direction > 0:
        moved = f"_word(v{k}, vo{k} - {lag}, w)" if has_bitmap else _ALL
        first = f"_word(v{k}, vo{k}, U(0))" if has_bitmap else _ALL
        # words before row `lag` + 64 hold the first rows, shifted up past the new rows
        edge = f" | ((U(1) << ({lag} - {start})) - U(1))" if fill else ""
        return (f"{moved} if {start} >= {lag} else (({first} << ({lag} - {start})){edge} "
                f"if {lag} - {start} < U(64) else {_ALL if fill else 'U(0)'})")  # fmt: skip
    ahead = lag
    moved = f"_word(v{k}, vo{k} + {ahead}, w)" if has_bitmap else _ALL
    end = f"(U(n) - {ahead} if U(n) > {ahead} else U(0))"  # rows from here are moved in
    below = (f"({_ALL} if {end} >= {start} + U(64) else (((U(1) << ({end} - {start})) - U(1)) "
             f"if {end} > {start} else U(0)))")  # fmt: skip
    return f"({moved}) | ~{below}" if fill else f"({moved}) & {below}"


def _source_word(source: str) -> str:
    """The expression of one validity source's 64-bit word at word ``w``."""
    if source == NULL_SOURCE:
        return "U(0)"
    if source.startswith("sv"):
        return f"svw{source[2:]}"  # all ones or all zeros, made once per call
    return f"sw{source[1:]}"


def _sources_word(sources: frozenset[str]) -> str:
    return " & ".join(_source_word(s) for s in sorted(sources)) or "U(0xFFFFFFFFFFFFFFFF)"


def _signature_args(
    inputs: list[InputSpec],
    scalars: list[ScalarSpec],
    groups: Sequence[GroupedSpec] = (),
    tables: Sequence[TableRef] = (),
) -> list[str]:
    args = ["n"]
    for k, spec in enumerate(inputs):
        args.append(f"x{k}")
        if spec.dtype.is_bool:
            args.append(f"xo{k}")
        if spec.nullable:
            args += [f"v{k}", f"vo{k}"]
        if spec.lag:
            args.append(f"lg{k}")  # the rows a lagged input is read back or ahead (uint64)
        if spec.fill:
            args.append(f"fl{k}")  # the value of the rows it moves in
    for j, s in enumerate(scalars):
        args.append(f"s{j}")
        if s.nullable:
            args.append(f"sv{j}")
    for j, g in enumerate(groups):
        args.append(f"g{j}")
        if g.nullable:
            args.append(f"gv{j}")
    args += [name for name, _, _ in table_params(tables)]
    return args


def _literal_args(literals: Sequence[Literal]) -> list[str]:
    return [f"p{k}" for k in range(len(literals))]


class _Skeleton:
    """Assembles one kernel: argument list, per-call set-up, block and word loops."""

    def __init__(self, rows: _CpuRows, lines: list[str]) -> None:
        self.rows = rows
        self.lines = lines

    def per_word_sources(self, extra: Sequence[frozenset[str]] = ()) -> list[str]:
        """Statements at the top of each word: the input words and the ANDed sets."""
        used: set[str] = set()
        for sources in [*self.rows.word_sets, *extra]:
            used |= sources
        out = []
        for source in sorted(used):
            if source.startswith("v"):
                k = source[1:]
                lag = self.rows.lags.get(int(k))
                if lag is not None:
                    out.append(f"sw{k} = {_lagged_word(int(k), *lag)}")
                else:
                    out.append(f"sw{k} = _word(v{k}, vo{k}, w)")
        out += [f"{word} = {_sources_word(s)}" for s, word in self.rows.word_sets.items()]
        return out

    @staticmethod
    def scalar_words(sources: set[str] | frozenset[str]) -> list[str]:
        return [f"svw{s[2:]} = U(0) - U(sv{s[2:]})" for s in sorted(sources) if s.startswith("sv")]


def _flat_loops(rows: _CpuRows, body: list[str]) -> list[str]:
    """The flat row loop over ``start:stop``; with lagged inputs, split in three.

    Rows whose lagged reads all fall inside the column read them at the plain offset (a
    contiguous load LLVM vectorises); the few rows at either end, where a read would fall
    before row 0 or past row ``n - 1``, read at the clamped row instead.
    """
    if not rows.lag_rows:
        return ["for i in range(start, stop):", *_indent(body, 1)]
    back = _largest([f"lg{k}" for k, (d, *_) in sorted(rows.lags.items()) if d > 0])
    ahead = _largest([f"lg{k}" for k, (d, *_) in sorted(rows.lags.items()) if d < 0])
    plain = [rows.lag_rows.get(line, line) for line in body]
    lo = "min(max(start, lag_back), stop)" if back else "start"
    hi = "max(min(stop, nu - lag_ahead if nu > lag_ahead else U(0)), lag_lo)" if ahead \
        else "stop"  # fmt: skip
    lines = [f"lag_back = {back}"] if back else []
    lines += [f"lag_ahead = {ahead}"] if ahead else []
    lines += [f"lag_lo = {lo}", f"lag_hi = {hi}"]
    if back:
        lines += ["for i in range(start, lag_lo):", *_indent(body, 1)]
    lines += ["for i in range(lag_lo, lag_hi):", *_indent(plain, 1)]
    if ahead:
        lines += ["for i in range(lag_hi, stop):", *_indent(body, 1)]
    return lines


def _largest(names: list[str]) -> str:
    """The expression of the largest of ``names`` ('' for none)."""
    if len(names) == 1:
        return names[0]
    return f"max({', '.join(names)})" if names else ""


def _indent(lines: Sequence[str], depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def generate_elementwise(
    outputs: list[tuple[str, Node]],
    mask: Node | None,
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool,
    plan_text: str,
    literals: Sequence[Literal] = (),
    gate: Node | None = None,
    tables: Sequence[TableRef] = (),
) -> KernelSource:
    """Source of the fused elementwise kernel computing every output and the filter mask.

    ``literals`` are read from arguments ``p0, p1, ...`` instead of written in. A failing
    output counts only on the rows ``gate`` keeps (see `Lowering.open_gate`).
    """
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    rows = _CpuRows()
    lw = Lowering(_dialect(roots), rows, types, input_index, inputs, scalar_index, scalars,
                  params, group_index, groups, tables=table_index)  # fmt: skip
    out_specs: list[OutputSpec] = []
    store: list[str] = []  # per row
    bit_acc: list[str] = []  # accumulator names
    after: list[str] = []  # per word, after the row loop
    word_sources: list[frozenset[str]] = []

    def bits(expr: str) -> str:
        acc = f"a{len(bit_acc)}"
        bit_acc.append(acc)
        store.append(f"{acc} |= U({expr}) << q")
        return acc

    def validity_word(valid: Valid) -> str:
        word_sources.append(valid.sources)
        parts = [_sources_word(valid.sources)] if valid.sources else []
        if valid.row is not None:
            parts.append(bits(valid.row))
        return " & ".join(parts)

    mask_store: list[str] = []
    if mask is not None:
        # the filter first: failures of the outputs count only on the rows its gate keeps
        keep = lw.filter_rows(mask, gate)
        val = lw.value(mask)
        m = len(outputs)
        word = validity_word(Valid(val.valid.sources))
        value_bits = bits(keep if val.valid.row is not None else val.expr)
        mask_store.append(f"o{m}[w] = {value_bits} & {word}" if word else f"o{m}[w] = {value_bits}")
    for m, (name, node) in enumerate(outputs):
        val = lw.value(node)
        dtype = types[node]
        out_specs.append(OutputSpec(name, dtype, not val.valid.never_null))
        if dtype.is_bool:
            after.append(f"o{m}[w] = {bits(val.expr)}")
        else:
            store.append(f"o{m}[i] = {val.expr}")
        if not val.valid.never_null:
            after.append(f"ov{m}[w] = {validity_word(val.valid)}")
    if mask is not None:
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False, is_mask=True))
        after += mask_store
    args = _signature_args(inputs, scalars, groups, tables) + _literal_args(literals)
    for m, spec in enumerate(out_specs):
        args.append(f"o{m}")
        if spec.nullable:
            args.append(f"ov{m}")
    args.append("err")
    skeleton = _Skeleton(rows, lw.lines)
    all_sources = set().union(*word_sources, *rows.word_sets) if (word_sources or
                                                                 rows.word_sets) else set()
    body = _indent(skeleton.scalar_words(all_sources), 1)
    head = _block_head(parallel, rows.errors)
    per_word = skeleton.per_word_sources(word_sources)
    if bit_acc or rows.word_sets:
        # rows need bits: walk the block word by word, packing 64 rows per store
        body += _indent(head, 1)
        body += _indent([*per_word, *(f"{acc} = U(0)" for acc in bit_acc)], 3)
        body += _indent(["for i in range(base, end):"], 3)
        body += _indent(["q = i - base", *lw.lines, *store], 4)
        body += _indent(after, 3)
    else:
        # values alone: one flat loop over the block's rows (it vectorises best), then
        # the validity of the outputs, 64 rows per AND
        body += _indent(head[: head.index(_WORD_LOOP)], 1)
        body += _indent(_flat_loops(rows, [*lw.lines, *store]), 2)
        if after:
            body += _indent([_WORD_LOOP.strip(), *_indent(per_word + after, 1)], 2)
    body += _indent(_block_tail(rows.errors), 2)
    functions = _functions(lw)
    source = _module("elementwise", args, body, parallel=parallel, plan_text=plan_text,
                     functions=functions)  # fmt: skip
    return KernelSource(
        functions=bound_functions(functions),
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


@dataclass
class FilterKernels(KernelSource):
    """A filter compacted inside the pass: the module's ``count_kept``, ``compact`` and ``pack``.

    ``count_kept(<common>, mw, kept, err)`` writes the filter's bitmap words ``mw`` and the
    kept rows of each block; ``compact(<common>, mw, offsets, total, <outputs>, err)``
    computes ``outputs`` (expressions, then carried columns) on the kept rows only and
    writes them packed: a row goes to ``offsets[block] + (kept rows before it)``, a dropped
    row to a scratch slot ``total + block`` (stores stay unconditional). Bit-packed results
    (bool values ``o{m}``, validity ``ov{m}``) come as one byte per kept row;
    ``pack(bytes, words, total)`` turns them into bitmap words. ``<common>`` is the
    elementwise calling convention up to the literals.
    """

    carried: list[str] = field(default_factory=list)


def generate_filter(
    outputs: list[tuple[str, Node]],
    carried: Sequence[str],
    mask: Node,
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool,
    plan_text: str,
    literals: Sequence[Literal] = (),
    tables: Sequence[TableRef] = (),
) -> FilterKernels:
    """Kernels computing ``outputs`` and the ``carried`` columns on the rows ``mask`` keeps.

    ``types`` must hold a dtype for ``Column(name)`` of every carried column; ``nulls``
    says which of them have a validity bitmap.
    """
    columns = [Column(name) for name in carried]
    roots = [n for _, n in outputs] + columns + [mask]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    common = _signature_args(inputs, scalars, groups, tables) + _literal_args(literals)

    # pass 1: the filter alone; its failures count on every row (polars evaluates it there)
    rows1 = _CpuRows()
    lw1 = Lowering(_dialect(roots), rows1, types, input_index, inputs, scalar_index, scalars,
                   params, group_index, groups, tables=table_index)  # fmt: skip
    val = lw1.value(mask)
    valid = lw1.row_valid(val.valid)
    keep = lw1.declare(DType.BOOL, DIALECT.and_(valid, val.expr)) if valid else val.expr
    head = _block_head(parallel, rows1.errors)
    at = head.index(_WORD_LOOP)
    body1 = _indent(_Skeleton.scalar_words(set().union(*rows1.word_sets)), 1)
    body1 += _indent(head[:at], 1) + _indent(["kc = np.int64(0)"], 2) + _indent(head[at:], 1)
    body1 += _indent([*_Skeleton(rows1, lw1.lines).per_word_sources(), "acc = U(0)"], 3)
    body1 += _indent(["for i in range(base, end):"], 3)
    body1 += _indent(["q = i - base", *lw1.lines, f"acc |= U({keep}) << q"], 4)
    body1 += _indent(["mw[w] = acc", "kc += _popcount(acc)"], 3)
    body1 += _indent(["kept[blk] = kc", *_block_tail(rows1.errors)], 2)

    # pass 2: the outputs on kept rows, packed; failures count on kept rows only
    rows2 = _CpuRows()
    lw2 = Lowering(_dialect(roots), rows2, types, input_index, inputs, scalar_index, scalars,
                   params, group_index, groups, tables=table_index)  # fmt: skip
    lw2.counted_elsewhere = frozenset(walk(mask))
    lw2.gate_failures("keep")
    out_specs: list[OutputSpec] = []
    store: list[str] = []
    out_args: list[str] = []
    for m, (name, node) in enumerate([*outputs, *((c.name, c) for c in columns)]):
        v = lw2.value(node)
        dtype = types[node]
        # a kept row has every bitmap the filter reads valid: a value null only through
        # those bitmaps has no null left (`w > 1` keeps no row where `w`'s inputs are null)
        kept_valid = v.valid.row is None and v.valid.sources <= val.valid.sources
        nullable = not v.valid.never_null and not kept_valid
        out_specs.append(OutputSpec(name, dtype, nullable))
        expr = f"np.uint8({v.expr})" if dtype.is_bool else v.expr
        store.append(f"o{m}[d] = {expr}")
        out_args.append(f"o{m}")
        row_valid = lw2.row_valid(v.valid) if nullable else None
        if row_valid is not None:
            store.append(f"ov{m}[d] = np.uint8({row_valid})")
            out_args.append(f"ov{m}")
    head2 = _block_head(parallel, rows2.errors)
    body2 = _indent(_Skeleton.scalar_words(set().union(*rows2.word_sets)), 1)
    at_words = head2.index(_WORD_LOOP)
    body2 += _indent(head2[:at_words], 1)
    body2 += _indent(["pos = U(offsets[blk])", "trash = U(total) + U(blk)"], 2)
    body2 += _indent([head2[at_words], "        mword = mw[w]", "        if mword == U(0):",
                      "            continue  # no row of this word is kept",
                      *head2[at_words + 1 :]], 1)  # fmt: skip
    body2 += _indent(_Skeleton(rows2, lw2.lines).per_word_sources(), 3)
    body2 += _indent(["for i in range(base, end):"], 3)
    row = ["q = i - base", "keep = ((mword >> q) & U(1)) != U(0)", *lw2.lines,
           "d = pos if keep else trash", *store, "pos += U(keep)"]  # fmt: skip
    body2 += _indent(row, 4)
    body2 += _indent(_block_tail(rows2.errors), 2)

    pack = [
        "    nwords = (total + 63) // 64",
        f"    for w in {'prange' if parallel else 'range'}(nwords):",
        "        base = U(w) << U(6)",
        "        end = min(base + U(64), U(total))",
        "        acc = U(0)",
        "        for i in range(base, end):",
        "            acc |= U(bytes_[i]) << (i - base)",
        "        words[w] = acc",
    ]
    functions = _functions(lw1, lw2)
    code = "\n".join([
        *function_wrappers(functions),
        *_function("count_kept", [*common, "mw", "kept", "err"], body1, parallel=parallel,
                   functions=bool(functions)), "",
        *_function("compact", [*common, "mw", "offsets", "total", *out_args, "err"], body2,
                   functions=bool(functions),
                   parallel=parallel), "",
        *_function("pack", ["bytes_", "words", "total"], pack, parallel=parallel),
    ]) + "\n"  # fmt: skip
    text = _header(plan_text, code) + code
    errors = merge_messages(lw1.err_messages, lw2.err_messages)
    return FilterKernels(
        kind="filter",
        roots=tuple(roots),
        source=text,
        inputs=inputs,
        scalars=scalars,
        groups=groups,
        tables=tables,
        literal_args=[lit.dtype for lit in literals if lit.dtype is not None],
        outputs=out_specs,
        uses_err=bool(rows1.errors or rows2.errors),
        err_messages=errors,
        carried=list(carried),
        functions=bound_functions(functions),
    )


def _block_head(parallel: bool, errors: set[int]) -> list[str]:
    loop = "prange" if parallel else "range"
    lines = [
        "nu = U(n)",
        "nblocks = (n + BLOCK - 1) // BLOCK",
        f"for blk in {loop}(nblocks):",
        "    start = U(blk) * U(BLOCK)",
        "    stop = min(start + U(BLOCK), nu)",
    ]
    lines += [f"    nerr{kind} = np.int64(0)" for kind in sorted(errors)]
    lines += [
        _WORD_LOOP,
        "        base = w << U(6)",
        "        end = min(base + U(64), stop)",
    ]
    return lines


_WORD_LOOP = "    for w in range(start >> U(6), (stop + U(63)) >> U(6)):"


def _block_tail(errors: set[int]) -> list[str]:
    return [f"err[{kind}, blk] = nerr{kind}" for kind in sorted(errors)]


#: Where the int64 order keys of float64 values cannot reach (`_keyed`): a running max
#: of keys starts below them all, a running min above (numba_intrinsics.KEY_BELOW and
#: KEY_ABOVE; that module imports numba, which generating a kernel's source need not).
KEY_BELOW = -(2**63)
KEY_ABOVE = 2**63 - 1

#: Independent accumulators per reduction in a reduction kernel's word loops: the rows of
#: a word are taken LANES at a time, one per lane, so no single float add or min/max
#: chain serialises the loop (measured here: about 3x on a sum and a max with nulls).
LANES = 4


def _keyed(d: Dialect, fold: Fold) -> Fold:
    """A float min/max fold as a fold of int64 order keys (`numba_intrinsics.order_key`).

    The keys' running max/min vectorises, where the float's NaN-aware select chain does
    not (measured: a sum and a max over 10% nulls at 1e7 rows, 19.4 ms against 9.2 ms
    end to end, `benchmarks/fused_cpu.py`). A NaN, or a row that does not count, folds
    the empty key, which never wins; the block stores the float back (`_from_key`: NaN
    while no number came, as before), so the partials are the float fold's. ``-0.0``
    orders below ``0.0``.
    """
    if not fold.nan_empty:
        return fold
    empty = KEY_BELOW if fold.op == "max" else KEY_ABOVE
    counts = d.compare("==", fold.value, fold.value)  # not NaN
    if fold.when:
        counts = d.and_(fold.when, counts)
    key = d.select(counts, f"_key({fold.value})", d.const(empty, DType.INT64))
    acc = Accumulator(fold.acc.name, "key", fold.acc.column, d.const(empty, DType.INT64), empty)
    return Fold(fold.op, acc, key)


def generate_reduce(
    aggs: list[Agg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool,
    plan_text: str,
    tables: Sequence[TableRef] = (),
    literals: Sequence[Literal] = (),
) -> KernelSource:
    """Source of one reduction pass computing per-block partials of every reduction in ``aggs``.

    Each lane folds its rows into its own accumulators, which fold into the block's at the
    end of the block; counts and std/var moments are taken per 64-row word (`AggSlot`
    layout; partial rows per block). Where no row reads a validity bit and there is no
    moment, one lane walks the block's rows in one flat loop and counts them at its end.
    """
    roots: list[Node] = [a.arg for a in aggs]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    shared = _CpuRows()

    def lower_lane(k: int) -> tuple[Lowering, ReductionLowering]:
        rows = _CpuRows(f"i{k}", f"q{k}", f"_{k}", shared)
        lw = Lowering(_dialect(roots), rows, types, input_index, inputs, scalar_index, scalars,
                      params, suffix=f"_{k}", grouped=group_index, grouped_specs=groups,
                      tables=table_index)  # fmt: skip
        red = ReductionLowering(lw)
        for agg in aggs:
            red.add(agg)
        return lw, red

    lanes = [lower_lane(0)]
    # no row reads a validity bit (or a lagged row) and no moment takes a word's two
    # passes: one flat loop over the block's rows, one lane, whose adds and max/min of
    # keys the compiler vectorises itself (benchmarks/results/fused_cpu_flat_reductions_
    # intel*.md: `sum & max`, before and after); otherwise the rows go word by word,
    # LANES at a time
    flat = not (shared.word_sets or shared.lags
                or any(st.moment_of is not None for st in lanes[0][1].states))  # fmt: skip
    lanes += [] if flat else [lower_lane(k) for k in range(1, LANES)]
    d = lanes[0][0].d
    red0 = lanes[0][1]

    def block_name(acc_name: str) -> str:
        return acc_name.removesuffix("_0")

    # accumulators: the block's, then per word each lane's (those the rows fold into);
    # counts are not folded row by row: a word's rows are counted at once (`_popcount`)
    folds = [[_keyed(d, f) for f in red.folds if f.op != "count"] for _, red in lanes]
    keyed = {block_name(f.acc.name): f.acc.init for f in folds[0] if f.acc.kind == "key"}
    block_init = [
        d.var(name, DType.INT64, keyed[name]) if name in keyed
        else d.var(name, acc.dtype, acc.init)
        for st in red0.states for acc in st.accumulators for name in [block_name(acc.name)]
    ]  # fmt: skip
    # each lane's accumulators live for the whole block, merged into the block's once at
    # its end: set again for every word, they cost a merge per 64 rows and kept LLVM
    # from vectorising the row loop (3x slower on a sum and a max, measured)
    lane_init = [d.var(f.acc.name, f.acc.dtype, f.acc.init) for lane in folds for f in lane]
    word_init = [] if flat else ["rows = ~U(0) >> (U(64) - (end - base))  # the word's rows"]
    pass1: list[list[str]] = [row_updates(d, lane) for lane in folds]
    merge = []
    for fold in folds[0]:
        block, dtype = block_name(fold.acc.name), fold.acc.dtype
        for k in range(len(lanes)):
            other = fold.acc.name.removesuffix("_0") + f"_{k}"
            if fold.op == "add":
                expr = (d.float_op("+", block, other, dtype) if dtype.is_float
                        else d.wrapping("+", block, other, dtype))  # fmt: skip
            elif fold.op == "or":
                expr = d.wrapping("|", block, other, dtype)
            else:
                expr = d.select(take_better(d, fold, other, block, None), other, block)
            merge.append(d.assign(block, expr))

    def count_rows(values: list[str], bits: str) -> str:
        """How many of the word's rows make ``values`` (one per lane) true, once per word."""
        if all(v == d.true for v in values):
            return "np.int64(end - base)"
        word = re.fullmatch(r"b(vw\d+)_0", values[0])
        if word and all(v == f"b{word.group(1)}_{k}" for k, v in enumerate(values)):
            return f"_popcount({word.group(1)} & rows)"  # validity alone: its word
        # rows the data decides: a counter per lane (few integer chains: no register
        # spills; or-ing bits into one word measured 2x slower)
        for k, value in enumerate(values):
            word_init.append(f"{bits}_{k} = np.int64(0)")
            pass1[k].append(f"{bits}_{k} += np.int64({value})")
        return " + ".join(f"{bits}_{k}" for k in range(len(lanes)))

    counted = [
        (block_name(f.acc.name), count_rows([red.folds[j].value for _, red in lanes], f"cw{j}"))
        for j, f in enumerate(red0.folds) if f.op == "count"
    ]  # fmt: skip
    per_word = [f"{acc} += {count}" for acc, count in counted]
    # std and var: per word, a two-pass moment (the word's mean, then the squared
    # deviations from it, the second pass reading the word from L1), folded into the
    # block's state as polars folds its chunks
    pass2: list[list[str]] = [[] for _ in lanes]
    means: list[str] = []
    combine: list[str] = []
    for q, st in enumerate(red0.states):
        if st.moment_of is None:
            continue
        oks = [red.states[q].ok or d.true for _, red in lanes]
        means.append(f"wc{q} = {count_rows(oks, f'mc{q}')}")
        for lane, (_, red) in enumerate(lanes):
            x, ok = red.states[q].moment_of, red.states[q].ok
            assert x is not None
            word_init += [f"ws{q}_{lane} = 0.0", f"wd{q}_{lane} = 0.0"]
            value = d.select(ok, x, "0.0") if ok else x
            summed = d.accumulate(f"ws{q}_{lane}", value, DType.FLOAT64)
            pass1[lane].append(f"ws{q}_{lane} = {summed}")
            square = f"({x} - wm{q}) * ({x} - wm{q})"
            value = d.select(ok, square, "0.0") if ok else square
            summed = d.accumulate(f"wd{q}_{lane}", value, DType.FLOAT64)
            pass2[lane].append(f"wd{q}_{lane} = {summed}")
        total = " + ".join
        means += [f"ws{q} = {total(f'ws{q}_{k}' for k in range(LANES))}",
                  f"wm{q} = ws{q} / np.float64(max(wc{q}, np.int64(1)))"]  # fmt: skip
        count, mean, m2 = (block_name(acc.name) for acc in st.accumulators)
        combine.append(f"wd{q} = {total(f'wd{q}_{k}' for k in range(LANES))}")
        combine += moment_combine(d, count, mean, m2, f"wc{q}", f"wm{q}", f"wd{q}")
    finish = [
        f"p{acc.kind}[blk, {acc.column}] = "
        + (f"_from_key({name})" if name in keyed else name)
        for st in red0.states for acc in st.accumulators for name in [block_name(acc.name)]
    ]  # fmt: skip
    args = [*_signature_args(inputs, scalars, groups, tables), *_literal_args(literals),
            "pf", "pi", "pu", "err"]
    all_sources = set().union(*shared.word_sets) if shared.word_sets else set()
    body = _indent(_Skeleton.scalar_words(all_sources), 1)
    head = _block_head(parallel, shared.errors)
    at = head.index(_WORD_LOOP)

    def row_loops(bodies: list[list[str]]) -> list[str]:
        # whole groups of LANES rows, one per lane, then the word's last rows on lane 0
        group = ["full = base + ((end - base) & ~U(LANES - 1))",
                 "for g in range(base, full, U(LANES)):"]  # fmt: skip
        for lane, lines in enumerate(bodies):
            group += _indent([f"i{lane} = g + U({lane})", f"q{lane} = i{lane} - base", *lines], 1)
        tail = ["for i0 in range(full, end):", *_indent(["q0 = i0 - base", *bodies[0]], 1)]
        return group + tail

    if flat:
        # the block is the one "word" its rows are counted over
        body += _indent(head[:at], 1)
        body += _indent([*block_init, *lane_init, "base = start", "end = stop", *word_init], 2)
        body += _indent(["for i0 in range(base, end):",
                         *_indent([*lanes[0][0].lines, *pass1[0]], 1), *per_word], 2)  # fmt: skip
    else:
        # the block's accumulators start once per block, before its words
        body += _indent(head[:at], 1) + _indent(block_init + lane_init, 2)
        body += _indent(head[at:], 1)
        body += _indent(_Skeleton(shared, []).per_word_sources() + word_init, 3)
        body += _indent(row_loops([[*lw.lines, *pass1[k]] for k, (lw, _) in enumerate(lanes)]),
                        3)  # fmt: skip
        if means:
            # the second pass recomputes the arguments, counting no failure twice
            again = [_feeding([line for j, line in enumerate(lw.lines)
                               if j not in lw.error_lines], pass2[k]) + pass2[k]
                     for k, (lw, _) in enumerate(lanes)]  # fmt: skip
            body += _indent(means + row_loops(again) + combine, 3)
        body += _indent(per_word, 3)
    body += _indent(merge + finish, 2)
    body += _indent(_block_tail(shared.errors), 2)
    functions = _functions(*(lw for lw, _ in lanes))
    source = _module("reduce", args, body, parallel=parallel, plan_text=plan_text,
                     functions=functions)  # fmt: skip
    return KernelSource(
        functions=bound_functions(functions),
        kind="reduce",
        roots=tuple(aggs),
        source=source,
        inputs=inputs,
        scalars=scalars,
        groups=groups,
        tables=tables,
        slots=[st.slot for st in red0.states],
        n_f=red0.n_f,
        n_i=red0.n_i,
        n_u=red0.n_u,
        err_messages=lanes[0][0].err_messages,
        uses_err=bool(shared.errors),
    )


_ASSIGNED = re.compile(r"([A-Za-z_]\w*) = ")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _feeding(lines: list[str], uses: list[str]) -> list[str]:
    """The statements of ``lines`` that ``uses`` reads, directly or through others, in order.

    A reduction's second pass (std and var: squared deviations) needs only the moments'
    arguments; the rest of the row work (other reductions' columns, their validity bits)
    would be computed again for nothing, and numba's compile time grows with every
    statement. Only plain ``name = expr`` assignments are left out (a row's values have
    no side effects; failures are counted by the first pass only); anything else stays.
    """
    needed = set(_NAME.findall("\n".join(uses)))
    kept = []
    for line in reversed(lines):
        target = _ASSIGNED.match(line)
        if target is not None and "\n" not in line and target.group(1) not in needed:
            continue
        kept.append(line)
        needed.update(_NAME.findall(line))
    return kept[::-1]


def grouped_table_folds(folds: list[Fold], table: Callable[[Accumulator], str]) -> list[Fold]:
    """``folds`` applied to table cells (``table(acc)``) instead of scalar accumulators."""
    return [
        Fold(f.op, Accumulator(table(f.acc), f.acc.kind, f.acc.column, f.acc.init), f.value,
             f.when, f.nan_empty)
        for f in folds
    ]  # fmt: skip


def generate_grouped_reduce(
    aggs: list[GroupAgg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool,
    plan_text: str,
    tables: Sequence[TableRef] = (),
    literals: Sequence[Literal] = (),
) -> KernelSource:
    """Source of one grouped reduction pass: partial tables per chunk of rows, by group id.

    ``grouped(n, <inputs>, <scalars>, <grouped>, <tables>, <literals>, tf, ti, tu, err)``:
    the group ids
    are an input column (int32); ``tf``/``ti``/``tu`` are ``(chunks, groups, columns)``
    tables in the `AggSlot` layout. Each chunk (a multiple of 64 rows; one thread's
    work) starts its table at the accumulators' initial values and folds its rows
    into ``t[chunk, id[i], column]``, walking 64-row words so validity bitmaps are
    read a word at a time; the host merges the chunks
    (`colbridge.backends.common.finalize_grouped`). Every reduction of ``aggs`` has
    the same keys.
    """
    rows = _CpuRows()
    start = start_grouped_reduce(_dialect([a.arg for a in aggs]), rows, aggs, types, nulls,
                                 tables, literals)  # fmt: skip
    ids_name, lw = start.ids_name, start.lw
    inputs, scalars, groups, tables = start.inputs, start.scalars, start.groups, start.tables
    gid = "U(0)" if ids_name is None else f"U({lw.value(Column(ids_name)).expr})"
    red = ReductionLowering(lw)
    for agg in aggs:
        red.add(agg)
    d = lw.d
    folds = grouped_table_folds(red.folds, lambda acc: f"t{acc.kind}[c, g, {acc.column}]")
    init = [
        f"t{acc.kind}[c, gg, {acc.column}] = {acc.init}"
        for st in red.states
        for acc in st.accumulators
    ]
    args = [*_signature_args(inputs, scalars, groups, tables), *_literal_args(literals),
            "tf", "ti", "tu", "err"]
    skeleton = _Skeleton(rows, lw.lines)
    all_sources = set().union(*rows.word_sets) if rows.word_sets else set()
    loop = "prange" if parallel else "range"
    body = _indent(skeleton.scalar_words(all_sources), 1)
    body += _indent([
        "nu = U(n)",
        "nchunks = tf.shape[0]",
        "ngroups = tf.shape[1]",
        "# rows per chunk: whole 64-row words, so no word is shared by two chunks",
        "per = ((nu + U(nchunks) - U(1)) // U(nchunks) + U(63)) & ~U(63)",
        f"for c in {loop}(nchunks):",
        "    start = U(c) * per",
        "    stop = min(start + per, nu)",
        "    for gg in range(ngroups):",
        *_indent(init, 2),
        *(f"    nerr{kind} = np.int64(0)" for kind in sorted(rows.errors)),
        "    for w in range(start >> U(6), (stop + U(63)) >> U(6)):",
        "        base = w << U(6)",
        "        end = min(base + U(64), stop)",
    ], 1)  # fmt: skip
    body += _indent(skeleton.per_word_sources(), 3)
    body += _indent(["for i in range(base, end):"], 3)
    body += _indent(["q = i - base", *lw.lines, f"g = {gid}", *row_updates(d, folds)], 4)
    body += _indent([f"err[{kind}, c] = nerr{kind}" for kind in sorted(rows.errors)], 2)
    functions = _functions(lw)
    source = _module("grouped", args, body, parallel=parallel, plan_text=plan_text,
                     functions=functions)  # fmt: skip
    return KernelSource(
        functions=bound_functions(functions),
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


def _module(
    name: str,
    args: list[str],
    body: list[str],
    *,
    parallel: bool,
    plan_text: str,
    functions: dict[str, tuple[Any, DType, int, str]] | None = None,
) -> str:
    wrappers = function_wrappers(functions or {})
    kernel = _function(name, args, body, parallel=parallel, functions=bool(functions))
    code = "\n".join([*wrappers, *kernel]) + "\n"
    return _header(plan_text, code) + code


def _header(plan_text: str, code: str) -> str:
    # `math` (erf, erfc: NumPy has none) only where the code calls it, so that every
    # other kernel's text, and with it its disk-cache key, stays as it was
    return _HEADER.format(plan=plan_text, block=BLOCK, lanes=LANES, nerr=N_HOST_ERR_KINDS,
                          intrinsics=_intrinsics_digest(),
                          math="import math\n" if "math." in code else "")


@functools.cache
def _intrinsics_digest() -> str:
    """A digest of `numba_intrinsics`' text, written into every kernel's header.

    numba's disk cache knows a kernel by its own module only: with the digest in the
    kernel's text (hence in its cache key), a change of the intrinsics compiles anew.
    """
    text = Path(__file__).with_name("numba_intrinsics.py").read_bytes()
    return hashlib.sha256(text).hexdigest()[:16]


def _function(
    name: str, args: list[str], body: list[str], *, parallel: bool, functions: bool = False
) -> list[str]:
    options = "parallel=True, " if parallel else ""
    # A kernel calling user functions is not cached on disk: numba's cache would not see a
    # change of the function it calls. It uses the Python error model, under which the
    # wrappers can catch the functions' exceptions (see `function_wrappers`).
    cache, errors = ("False", "python") if functions else ("True", "numpy")
    return [
        f"@numba.njit({options}cache={cache}, nogil=True, error_model='{errors}')",
        f"def {name}({', '.join(args)}):",
        *body,
    ]


_HEADER = '''"""Generated by colbridge from the plan below; do not edit.

{plan}
"""
{math}import numpy as np
import numba
from numba import prange

# emitted into the kernels' LLVM IR (intrinsics {intrinsics}): 64 validity bits of a
# bitmap from a bit offset; the set bits of a word; a select of two computed values;
# a running sum's add, which LLVM may reorder (vectorised); a float's order key and back
from colbridge.codegen.numba_intrinsics import accumulate as _accumulate
from colbridge.codegen.numba_intrinsics import from_order_key as _from_key
from colbridge.codegen.numba_intrinsics import order_key as _key
from colbridge.codegen.numba_intrinsics import popcount as _popcount
from colbridge.codegen.numba_intrinsics import select as _select
from colbridge.codegen.numba_intrinsics import validity_word as _word

BLOCK = {block}
LANES = {lanes}
U = np.uint64


@numba.njit(cache=True, nogil=True)
def _ipow(base, exp):
    # integer power modulo 2**64; the caller truncates to the result type
    result = np.uint64(1)
    while exp:
        if exp & np.uint64(1):
            result = result * base
        base = base * base
        exp = exp >> np.uint64(1)
    return result


@numba.njit(cache=True, nogil=True)
def _search(table, x):
    # the last position whose entry is <= x (table[0] is the type's smallest value)
    lo = 0
    hi = table.shape[0]
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if table[mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


'''
