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
* a lookup table ``k`` is ``g{k}`` (values), ``gv{k}`` (validity bytes, for tables
  whose entries may have no value) and ``gn{k}`` (its length); tables follow the
  literals (elementwise) or the scalars (reduce);
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

from collections.abc import Callable, Sequence

from colbridge.codegen.dialect import Dialect
from colbridge.codegen.kernel import (
    N_ERR_KINDS,
    InputSpec,
    KernelSource,
    OutputSpec,
    ScalarSpec,
    collect_inputs,
    collect_scalars,
    collect_tables,
)
from colbridge.codegen.lower import (
    NULL_SOURCE,
    Lowering,
    ReductionLowering,
    Valid,
    moment_combine,
    row_updates,
)
from colbridge.expr.nodes import Agg, Literal, Node, TableRef
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = ["BLOCK", "NumbaDialect", "generate_elementwise", "generate_reduce"]

#: Rows per block: the unit of work of one thread, and of one partial row of a reduction.
BLOCK = 16384

_NUMBA_MATH = {
    "asin": "np.arcsin",
    "acos": "np.arccos",
    "atan": "np.arctan",
    "fabs": "np.abs",
    "rint": "np.rint",
}


def _np(dtype: DType) -> str:
    return "np.bool_" if dtype.is_bool else f"np.{dtype.value}"


class NumbaDialect(Dialect):
    """numba's Python subset, with NumPy scalar types for exact widths."""

    name = "cpu"
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
        return f"{_np(dtype)}({expr})"

    def wrapping(self, sym: str, a: str, b: str, dtype: DType) -> str:
        # numba computes small integers in int64 (or uint64): the conversion wraps
        return f"{_np(dtype)}({a} {sym} {b})"

    def shift_right(self, a: str, bits: int, dtype: DType) -> str:
        return f"{_np(dtype)}({a} >> {_np(dtype)}({bits}))"

    def negate_wrapping(self, a: str, dtype: DType) -> str:
        return f"{_np(dtype)}(0 - {a})"

    def invert(self, a: str, dtype: DType) -> str:
        return f"{_np(dtype)}(~{a})"

    def float_op(self, sym: str, a: str, b: str, dtype: DType) -> str:
        return f"{_np(dtype)}({a} {sym} {b})"

    def and_(self, *parts: str) -> str:
        return "(" + " & ".join(f"({p})" for p in parts) + ")"

    def or_(self, *parts: str) -> str:
        return "(" + " | ".join(f"({p})" for p in parts) + ")"

    def not_(self, a: str) -> str:
        return f"(not ({a}))"

    def select(self, cond: str, a: str, b: str) -> str:
        return f"(({a}) if ({cond}) else ({b}))"

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

    def search(self, table: str, length: str, value: str) -> str:
        return f"_search({table}, {value})"


DIALECT = NumbaDialect()


class _CpuRows:
    """The CPU skeleton's row access: row ``i`` (uint64) of word ``w``, ``q = i - base``."""

    in_range: str | None = None  # every row of the loop exists

    def __init__(self) -> None:
        #: source sets read per row: (name of their word, the sources)
        self.word_sets: dict[frozenset[str], str] = {}
        self.errors: set[int] = set()

    def column(self, k: int, spec: InputSpec, emit: Callable[[str], None]) -> str:
        if spec.dtype.is_bool:
            return f"((x{k}[(i + xo{k}) >> U(3)] >> ((i + xo{k}) & U(7))) & U(1)) != U(0)"
        return f"x{k}[i]"

    def sources_bit(self, sources: frozenset[str], emit: Callable[[str], None]) -> str:
        word = self.word_sets.get(sources)
        if word is None:
            word = f"vw{len(self.word_sets)}"
            self.word_sets[sources] = word
        bit = f"b{word}"
        emit(f"{bit} = ((({word}) >> q) & U(1)) != U(0)")
        return bit

    def count_error(self, kind: int, failed: str) -> str:
        self.errors.add(kind)
        return f"nerr{kind} += np.int64({failed})"


def _source_word(source: str) -> str:
    """The expression of one validity source's 64-bit word at word ``w``."""
    if source == NULL_SOURCE:
        return "U(0)"
    if source.startswith("sv"):
        return f"svw{source[2:]}"  # all ones or all zeros, made once per call
    return f"sw{source[1:]}"


def _sources_word(sources: frozenset[str]) -> str:
    return " & ".join(_source_word(s) for s in sorted(sources)) or "U(0xFFFFFFFFFFFFFFFF)"


def table_args(tables: Sequence[TableRef]) -> list[str]:
    """Argument names of lookup tables: values, validity bytes where nullable, length."""
    args: list[str] = []
    for k, table in enumerate(tables):
        args += [f"g{k}", *([f"gv{k}"] if table.nullable else []), f"gn{k}"]
    return args


def _signature_args(inputs: list[InputSpec], scalars: list[ScalarSpec]) -> list[str]:
    args = ["n"]
    for k, spec in enumerate(inputs):
        args.append(f"x{k}")
        if spec.dtype.is_bool:
            args.append(f"xo{k}")
        if spec.nullable:
            args += [f"v{k}", f"vo{k}"]
    for j, s in enumerate(scalars):
        args.append(f"s{j}")
        if s.nullable:
            args.append(f"sv{j}")
    return args


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
                out.append(f"sw{k} = _word(v{k}, vo{k}, w)")
        out += [f"{word} = {_sources_word(s)}" for s, word in self.rows.word_sets.items()]
        return out

    @staticmethod
    def scalar_words(sources: set[str]) -> list[str]:
        return [f"svw{s[2:]} = U(0) - U(sv{s[2:]})" for s in sorted(sources) if s.startswith("sv")]


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
) -> KernelSource:
    """Source of the fused elementwise kernel computing every output and the filter mask.

    ``literals`` are read from arguments ``p0, p1, ...`` instead of written in.
    """
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    params: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    tables = collect_tables(roots, inside_agg=False)
    rows = _CpuRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars, params,
                  {t: k for k, t in enumerate(tables)})  # fmt: skip
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
        # the filter first: failures of the outputs count only on the rows it keeps
        val = lw.value(mask)
        keep_row = lw.row_valid(val.valid)
        keep = lw.declare(DType.BOOL, DIALECT.and_(keep_row, val.expr)) if keep_row else val.expr
        lw.gate_failures(keep)
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
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False))
        after += mask_store
    args = _signature_args(inputs, scalars) + [f"p{k}" for k in range(len(literals))]
    args += table_args(tables)
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
        body += _indent(["for i in range(start, stop):"], 2)
        body += _indent([*lw.lines, *store], 3)
        if after:
            body += _indent([_WORD_LOOP.strip(), *_indent(per_word + after, 1)], 2)
    body += _indent(_block_tail(rows.errors), 2)
    source = _module("elementwise", args, body, parallel=parallel, plan_text=plan_text)
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


def generate_reduce(
    aggs: list[Agg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool,
    plan_text: str,
) -> KernelSource:
    """Source of one reduction pass computing per-block partials of every reduction in ``aggs``."""
    roots: list[Node] = [a.arg for a in aggs]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    tables = collect_tables(roots, inside_agg=False)
    rows = _CpuRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars,
                  tables={t: k for k, t in enumerate(tables)})  # fmt: skip
    red = ReductionLowering(lw)
    for agg in aggs:
        red.add(agg)
    d = DIALECT
    init = [d.var(acc.name, acc.dtype, acc.init) for st in red.states for acc in st.accumulators]
    # std and var: per 64-row word, a two-pass moment (the word's mean, then the squared
    # deviations from it, the second pass reading the word from L1), folded into the
    # block's state as polars folds its chunks
    word_init: list[str] = []
    pass1: list[str] = row_updates(DIALECT, red.folds)
    pass2: list[str] = []
    means: list[str] = []
    combine: list[str] = []
    for q, st in enumerate(red.states):
        x, ok = st.moment_of, st.ok
        if x is None:
            continue
        word_init += [f"wc{q} = np.int64(0)", f"ws{q} = 0.0", f"wd{q} = 0.0"]
        one = d.select(ok, "np.int64(1)", "np.int64(0)") if ok else "np.int64(1)"
        pass1 += [f"wc{q} += {one}", f"ws{q} += {d.select(ok, x, '0.0') if ok else x}"]
        square = f"({x} - wm{q}) * ({x} - wm{q})"
        pass2.append(f"wd{q} += {d.select(ok, square, '0.0') if ok else square}")
        means.append(f"wm{q} = ws{q} / np.float64(max(wc{q}, np.int64(1)))")
        count, mean, m2 = (acc.name for acc in st.accumulators)
        combine += moment_combine(d, count, mean, m2, f"wc{q}", f"wm{q}", f"wd{q}")
    finish = [
        f"p{acc.kind}[blk, {acc.column}] = {acc.name}"
        for st in red.states
        for acc in st.accumulators
    ]
    args = [*_signature_args(inputs, scalars), *table_args(tables), "pf", "pi", "pu", "err"]
    skeleton = _Skeleton(rows, lw.lines)
    all_sources = set().union(*rows.word_sets) if rows.word_sets else set()
    body = _indent(skeleton.scalar_words(all_sources), 1)
    head = _block_head(parallel, rows.errors)
    # the accumulators start once per block, before its words
    body += _indent(head[:5], 1) + _indent(init, 2) + _indent(head[5:], 1)
    body += _indent(skeleton.per_word_sources() + word_init, 3)
    body += _indent(["for i in range(base, end):"], 3)
    body += _indent(["q = i - base", *lw.lines, *pass1], 4)
    if means:
        # the second pass recomputes the arguments, counting no failure twice
        again = [line for k, line in enumerate(lw.lines) if k not in lw.error_lines]
        second = ["for i in range(base, end):", *_indent(["q = i - base", *again, *pass2], 1)]
        body += _indent(means + second + combine, 3)
    body += _indent(finish, 2)
    body += _indent(_block_tail(rows.errors), 2)
    source = _module("reduce", args, body, parallel=parallel, plan_text=plan_text)
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


def _module(name: str, args: list[str], body: list[str], *, parallel: bool, plan_text: str) -> str:
    options = "parallel=True, " if parallel else ""
    head = [
        f"@numba.njit({options}cache=True, nogil=True, error_model='numpy')",
        f"def {name}({', '.join(args)}):",
    ]
    return _HEADER.format(plan=plan_text, block=BLOCK, nerr=N_ERR_KINDS) + "\n".join(
        head + body
    ) + "\n"


_HEADER = '''"""Generated by colbridge from the plan below; do not edit.

{plan}
"""
import numpy as np
import numba
from numba import prange

BLOCK = {block}
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


@numba.njit(cache=True, nogil=True)
def _word(bits, offset, w):
    # 64 validity bits from bit `offset + 64 * w` of `bits` (zeros past its end)
    first = offset + (w << U(6))
    byte = first >> U(3)
    shift = first & U(7)
    size = U(bits.shape[0])
    word = U(0)
    for k in range(8):
        j = byte + U(k)
        if j < size:
            word |= U(bits[j]) << U(8 * k)
    if shift:
        word >>= shift
        j = byte + U(8)
        if j < size:
            word |= U(bits[j]) << (U(64) - shift)
    return word

'''
