"""Code generation for the CPU: one fused plan segment → numba kernel source text.

Calling convention of the generated kernels (the same for every plan, so the
runtime can bind arguments without knowing the expressions):

``elementwise(n, <inputs>, <scalars>, <outputs>, err)`` and
``reduce(n, <inputs>, <scalars>, pf, pi, pu)``, where

* an input column ``k`` is ``x{k}`` (values; bool columns: the bit-packed bytes)
  then, for bool columns, ``xo{k}`` (bit offset), then where the column has
  nulls ``v{k}`` (validity bytes) and ``vo{k}`` (its bit offset);
* a reduction result ``j`` from an earlier pass is ``s{j}`` and, where it may
  be null, ``sv{j}``;
* an output ``m`` is ``o{m}`` (values; bool outputs bit-packed) and, where it
  may be null, ``ov{m}``; the filter mask is a bool output;
* ``err`` counts failures (strict casts, negative integer exponents) per block;
* ``pf``, ``pi``, ``pu`` are per-block partial results of reductions
  (float64, int64, uint64; one row per block).

Rows are processed in blocks of `BLOCK` rows (a multiple of 8, so a block owns
whole bytes of every bit-packed output and threads never share a byte); with
``parallel=True`` the blocks are spread over threads with ``prange``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import singledispatchmethod

from colbridge.codegen.kernel import (
    ERR_NEGATIVE_EXPONENT,
    ERR_STRICT_CAST,
    N_ERR_KINDS,
    AggSlot,
    InputSpec,
    KernelSource,
    OutputSpec,
    ScalarSpec,
    collect_inputs,
    collect_scalars,
)
from colbridge.errors import UnsupportedOperationError
from colbridge.expr.nodes import (
    Agg,
    Binary,
    Cast,
    Clip,
    Coalesce,
    Column,
    FillNan,
    Literal,
    Node,
    Unary,
    When,
)
from colbridge.plan.nullability import Nullability
from colbridge.plan.typecheck import cast_can_fail
from colbridge.types import DType
from colbridge.types.promotion import int_range

__all__ = ["BLOCK", "generate_elementwise", "generate_reduce"]

BLOCK = 16384

_FLOAT_FUNCS = {
    "sqrt": "np.sqrt",
    "cbrt": "np.cbrt",
    "exp": "np.exp",
    "log": "np.log",
    "log10": "np.log10",
    "log1p": "np.log1p",
    "sin": "np.sin",
    "cos": "np.cos",
    "tan": "np.tan",
    "arcsin": "np.arcsin",
    "arccos": "np.arccos",
    "arctan": "np.arctan",
    "sinh": "np.sinh",
    "cosh": "np.cosh",
    "tanh": "np.tanh",
    "floor": "np.floor",
    "ceil": "np.ceil",
    "round": "np.rint",  # half to even, as polars rounds
}




def _np(dtype: DType) -> str:
    return f"np.{dtype.value}" if not dtype.is_bool else "np.bool_"


def _const(value: bool | int | float | None, dtype: DType) -> str:
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


class _Emitter:
    """Emits per-row statements for typed nodes, one temporary per distinct node (CSE)."""

    def __init__(
        self,
        types: dict[Node, DType],
        nulls: Nullability,
        inputs: dict[str, int],
        input_specs: list[InputSpec],
        scalars: dict[Agg, int],
        scalar_specs: list[ScalarSpec],
        indent: str,
        params: Mapping[Node, int] | None = None,
    ) -> None:
        self.types = types
        self.nulls = nulls
        self.inputs = inputs
        self.input_specs = input_specs
        self.scalars = scalars
        self.scalar_specs = scalar_specs
        self.params = params or {}
        self.indent = indent
        self.lines: list[str] = []
        self.memo: dict[Node, tuple[str, str | None]] = {}
        self.counter = 0
        self.err_messages: dict[int, str] = {}

    def fresh(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def value(self, node: Node) -> tuple[str, str | None]:
        """(value expression, validity expression or None when never null)."""
        hit = self.memo.get(node)
        if hit is None:
            hit = self.emit(node)
            self.memo[node] = hit
        return hit

    def valid_and(self, *parts: str | None) -> str | None:
        present = [p for p in parts if p is not None]
        if not present:
            return None
        if len(present) == 1:
            return present[0]
        name = self.fresh() + "v"
        self.line(f"{name} = " + " & ".join(f"({p})" for p in present))
        return name

    @singledispatchmethod
    def emit(self, node: Node) -> tuple[str, str | None]:
        msg = f"the CPU code generator does not support {type(node).__name__} nodes ({node!r})"
        raise UnsupportedOperationError(msg)

    @emit.register
    def _(self, node: Column) -> tuple[str, str | None]:
        k = self.inputs[node.name]
        spec = self.input_specs[k]
        t = self.fresh()
        if spec.dtype.is_bool:
            self.line(f"{t} = ((x{k}[(i + xo{k}) >> 3] >> ((i + xo{k}) & 7)) & 1) != 0")
        else:
            self.line(f"{t} = x{k}[i]")
        valid = None
        if spec.nullable:
            valid = t + "v"
            self.line(f"{valid} = ((v{k}[(i + vo{k}) >> 3] >> ((i + vo{k}) & 7)) & 1) != 0")
        if spec.nan_null:
            valid = t + "v"
            prior = f"{valid} & " if spec.nullable else ""
            self.line(f"{valid} = {prior}({t} == {t})")
        return t, valid

    @emit.register
    def _(self, node: Literal) -> tuple[str, str | None]:
        dtype = self.types[node]
        if node.value is None:
            return _const(None, dtype), "False"
        k = self.params.get(node)
        if k is not None:
            return f"p{k}", None  # a kernel argument: other values reuse the compiled kernel
        return _const(node.value, dtype), None

    @emit.register
    def _(self, node: Agg) -> tuple[str, str | None]:
        j = self.scalars[node]
        return f"s{j}", (f"sv{j}" if self.scalar_specs[j].nullable else None)

    @emit.register
    def _(self, node: Binary) -> tuple[str, str | None]:
        a, av = self.value(node.left)
        b, bv = self.value(node.right)
        op = node.op
        operand = self.types[node.left]
        result = self.types[node]
        t = self.fresh()
        if op in ("and", "or") and result.is_bool:
            return self._kleene(op, a, av, b, bv)
        valid = self.valid_and(av, bv)
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            right_type = self.types[node.right]
            if operand != right_type:  # int64 against uint64, compared exactly
                self.line(f"{t} = {_compare_mixed(op, a, b, operand.is_signed)}")
            else:
                self.line(f"{t} = {_compare(op, a, b, operand.is_float)}")
            return t, valid
        if op == "xor":
            self.line(f"{t} = {a} != {b}" if result.is_bool else f"{t} = {_np(result)}({a} ^ {b})")
            return t, valid
        if op in ("and", "or"):
            sym = "&" if op == "and" else "|"
            self.line(f"{t} = {_np(result)}({a} {sym} {b})")
            return t, valid
        if op in ("add", "sub", "mul"):
            sym = {"add": "+", "sub": "-", "mul": "*"}[op]
            self.line(f"{t} = {_np(result)}({a} {sym} {b})")
            return t, valid
        if op == "truediv":
            self.line(f"{t} = {_np(result)}({a} / {b})")
            return t, valid
        if op in ("floordiv", "mod"):
            if result.is_float:
                # polars: a // b = floor(a / b) and a % b = a - b * floor(a / b), each step
                # rounded to the result type (so x % inf is NaN, not x as in Python).
                T = _np(result)
                self.line(f"{t}q = {T}(np.floor({T}({a} / {b})))")
                expr = f"{t}q" if op == "floordiv" else f"{a} - {T}({b} * {t}q)"
                self.line(f"{t} = {T}({expr})")
                return t, valid
            return self._int_divmod(op, result, a, b, valid)
        if op == "pow":
            if result.is_float:
                self.line(f"{t} = {_np(result)}({a} ** {b})")
                return t, valid
            return self._int_pow(result, self.types[node.right], a, b, valid)
        msg = f"operator `{op}` has no CPU lowering"
        raise UnsupportedOperationError(msg)

    def _kleene(
        self, op: str, a: str, av: str | None, b: str, bv: str | None
    ) -> tuple[str, str | None]:
        t = self.fresh()
        if av is None and bv is None:
            self.line(f"{t} = {a} {'&' if op == 'and' else '|'} {b}")
            return t, None
        av_ = av or "True"
        bv_ = bv or "True"
        if op == "and":
            # false wins over null; null otherwise wins over true
            self.line(f"{t}f = (({av_}) & (not {a})) | (({bv_}) & (not {b}))")
            self.line(f"{t} = not {t}f")
            self.line(f"{t}v = {t}f | (({av_}) & ({bv_}))")
        else:
            self.line(f"{t} = (({av_}) & {a}) | (({bv_}) & {b})")
            self.line(f"{t}v = {t} | (({av_}) & ({bv_}))")
        return t, f"{t}v"

    def _int_divmod(
        self, op: str, result: DType, a: str, b: str, valid: str | None
    ) -> tuple[str, str | None]:
        t = self.fresh()
        zero = _const(0, result)
        self.line(f"if {b} == {zero}:")
        self.line(f"    {t} = {zero}")
        if result.is_signed:
            # MIN // -1 overflows the hardware divide: take the wrapped result directly.
            minus_one = _const(-1, result)
            self.line(f"elif {b} == {minus_one}:")
            wrapped = f"{_np(result)}({zero} - {a})" if op == "floordiv" else zero
            self.line(f"    {t} = {wrapped}")
        sym = "//" if op == "floordiv" else "%"
        self.line("else:")
        self.line(f"    {t} = {_np(result)}({a} {sym} {b})")
        return t, self.valid_and(valid, f"{b} != {zero}")

    def _int_pow(
        self, result: DType, exp_dtype: DType, a: str, b: str, valid: str | None
    ) -> tuple[str, str | None]:
        t = self.fresh()
        checks = []
        if exp_dtype.is_signed:
            checks.append(f"{b} >= {_const(0, exp_dtype)}")
        if exp_dtype.bits == 64:
            checks.append(f"{b} <= {_const(2**32 - 1, exp_dtype)}")
        ok = " & ".join(f"({c})" for c in checks) if checks else "True"
        self.line(f"{t}ok = {ok}")
        self.line(f"if {t}ok:")
        self.line(f"    {t} = {_np(result)}(_ipow(np.uint64(np.int64({a})), np.uint64({b})))")
        self.line("else:")
        self.line(f"    {t} = {_const(0, result)}")
        message = (
            "integer raised to a negative integer power (or one above 2**32-1); "
            "cast the base to float first, e.g. `x.cast('float64') ** y`"
        )
        self._count_error(ERR_NEGATIVE_EXPONENT, f"not {t}ok", valid, message)
        return t, valid

    def _count_error(self, kind: int, failed: str, valid: str | None, message: str) -> None:
        cond = f"({failed}) and ({valid})" if valid is not None else failed
        self.line(f"if {cond}:")
        self.line(f"    nerr[{kind}] += 1")
        self.err_messages[kind] = message

    @emit.register
    def _(self, node: Unary) -> tuple[str, str | None]:
        op = node.op
        a, av = self.value(node.arg)
        src = self.types[node.arg]
        result = self.types[node]
        t = self.fresh()
        if op == "is_null":
            self.line(f"{t} = not ({av})" if av is not None else f"{t} = False")
            return t, None
        if op == "is_not_null":
            self.line(f"{t} = ({av})" if av is not None else f"{t} = True")
            return t, None
        if op in ("is_nan", "is_not_nan", "is_finite", "is_infinite"):
            if src.is_float:
                expr = {
                    "is_nan": f"{a} != {a}",
                    "is_not_nan": f"{a} == {a}",
                    "is_finite": f"np.isfinite({a})",
                    "is_infinite": f"np.isinf({a})",
                }[op]
            else:
                expr = "False" if op in ("is_nan", "is_infinite") else "True"
            self.line(f"{t} = {expr}")
            return t, av
        if op == "not":
            self.line(f"{t} = not {a}" if result.is_bool else f"{t} = {_np(result)}(~{a})")
            return t, av
        if op == "neg":
            self.line(f"{t} = -{a}" if result.is_float else f"{t} = {_np(result)}(0 - {a})")
            return t, av
        if op == "abs":
            self.line(f"{t} = {_np(result)}(abs({a}))")
            return t, av
        if op == "sign":
            one, minus, zero = _const(1, result), _const(-1, result), _const(0, result)
            if result.is_float:
                self.line(f"{t} = {one} if {a} > {zero} else ({minus} if {a} < {zero} else {a})")
            elif result.is_signed:
                self.line(f"{t} = {one} if {a} > {zero} else ({minus} if {a} < {zero} else {zero})")
            else:
                self.line(f"{t} = {one} if {a} > {zero} else {zero}")
            return t, av
        func = _FLOAT_FUNCS.get(op)
        if func is not None:
            self.line(f"{t} = {_np(result)}({func}({a}))")
            return t, av
        msg = f"function `{op}` has no CPU lowering"
        raise UnsupportedOperationError(msg)

    @emit.register
    def _(self, node: Cast) -> tuple[str, str | None]:
        a, av = self.value(node.arg)
        src, dst = self.types[node.arg], node.dtype
        t = self.fresh()
        if dst.is_bool:
            self.line(f"{t} = {a} != {_const(0, src)}" if not src.is_bool else f"{t} = {a}")
            return t, av
        if src.is_bool:
            self.line(f"{t} = {_const(1, dst)} if {a} else {_const(0, dst)}")
            return t, av
        if not cast_can_fail(src, dst):
            self.line(f"{t} = {_np(dst)}({a})")
            return t, av
        ok = _fits(a, src, dst)
        self.line(f"{t}ok = {ok}")
        self.line(f"{t} = {_np(dst)}({a}) if {t}ok else {_const(0, dst)}")
        if node.strict:
            self._count_error(ERR_STRICT_CAST, f"not {t}ok", av,
                              f"strict cast to {dst} failed: some values do not fit; "
                              "use `.cast(..., strict=False)` to turn them into nulls")  # fmt: skip
            return t, av
        return t, self.valid_and(av, f"{t}ok")

    @emit.register
    def _(self, node: When) -> tuple[str, str | None]:
        c, cv = self.value(node.condition)
        a, av = self.value(node.then)
        b, bv = self.value(node.otherwise)
        t = self.fresh()
        cond = f"({cv}) & {c}" if cv is not None else c
        self.line(f"{t}c = {cond}")
        self.line(f"{t} = {a} if {t}c else {b}")
        if av is None and bv is None:
            return t, None
        self.line(f"{t}v = ({av or 'True'}) if {t}c else ({bv or 'True'})")
        return t, f"{t}v"

    @emit.register
    def _(self, node: Coalesce) -> tuple[str, str | None]:
        parts = [self.value(a) for a in node.args]
        t = self.fresh()
        expr, valid = parts[-1][0], parts[-1][1]
        for value, v in reversed(parts[:-1]):
            if v is None:
                expr, valid = value, None
                continue
            expr = f"({value} if {v} else {expr})"
            valid = None if valid is None else f"({v} | {valid})"
        self.line(f"{t} = {expr}")
        if valid is None:
            return t, None
        self.line(f"{t}v = {valid}")
        return t, f"{t}v"

    @emit.register
    def _(self, node: FillNan) -> tuple[str, str | None]:
        a, av = self.value(node.arg)
        b, bv = self.value(node.value)
        t = self.fresh()
        self.line(f"{t}n = {a} != {a}")
        self.line(f"{t} = {b} if {t}n else {a}")
        if bv is None:
            return t, av
        valid = f"({bv}) if {t}n else True"
        return t, self.valid_and(av, valid)

    @emit.register
    def _(self, node: Clip) -> tuple[str, str | None]:
        a, av = self.value(node.arg)
        dtype = self.types[node]
        t = self.fresh()
        self.line(f"{t} = {a}")
        if node.lower is not None:
            lo = _const(node.lower, dtype)
            self.line(f"{t} = {lo} if {t} < {lo} else {t}")
        if node.upper is not None:
            hi = _const(node.upper, dtype)
            self.line(f"{t} = {hi} if {t} > {hi} else {t}")
        return t, av


def _compare(op: str, a: str, b: str, is_float: bool) -> str:
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    if not is_float:
        return f"{a} {sym} {b}"
    # polars orders floats totally: NaN equals NaN and is larger than every number.
    return {
        "eq": f"({a} == {b}) | (({a} != {a}) & ({b} != {b}))",
        "ne": f"not (({a} == {b}) | (({a} != {a}) & ({b} != {b})))",
        "lt": f"({a} < {b}) | (({b} != {b}) & ({a} == {a}))",
        "le": f"({a} <= {b}) | ({b} != {b})",
        "gt": f"({a} > {b}) | (({a} != {a}) & ({b} == {b}))",
        "ge": f"({a} >= {b}) | ({a} != {a})",
    }[op]


def _compare_mixed(op: str, a: str, b: str, left_signed: bool) -> str:
    """Compare int64 with uint64 exactly: a negative int64 is below every uint64."""
    if not left_signed:  # put the signed operand on the left
        a, b = b, a
        op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
    ua = f"np.uint64({a})"
    return {
        "eq": f"({a} >= 0) & ({ua} == {b})",
        "ne": f"not (({a} >= 0) & ({ua} == {b}))",
        "lt": f"({a} < 0) | ({ua} < {b})",
        "le": f"({a} < 0) | ({ua} <= {b})",
        "gt": f"({a} >= 0) & ({ua} > {b})",
        "ge": f"({a} >= 0) & ({ua} >= {b})",
    }[op]


def _fits(a: str, src: DType, dst: DType) -> str:
    """A condition that is true where value ``a`` of ``src`` converts to ``dst`` exactly enough."""
    lo, hi = int_range(dst)
    if src.is_float:
        if dst.bits == 64:
            low = f"{a} >= {float(lo)!r}" if lo < 0 else f"{a} > -1.0"
            return f"({a} == {a}) & ({low}) & ({a} < {float(hi + 1)!r})"
        return f"({a} == {a}) & ({a} > {float(lo - 1)!r}) & ({a} < {float(hi + 1)!r})"
    slo, shi = int_range(src)
    checks = []
    if lo > slo:
        checks.append(f"{a} >= {_const(lo, src)}")
    if hi < shi:
        checks.append(f"{a} <= {_const(hi, src)}")
    return " & ".join(f"({c})" for c in checks) if checks else "True"


_HEADER = '''"""Generated by colbridge from the plan below; do not edit.

{plan}
"""
import numpy as np
import numba
from numba import prange

BLOCK = {block}


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

'''


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


def generate_elementwise(
    outputs: list[tuple[str, Node]],
    mask: Node | None,
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    parallel: bool,
    vector_bits: bool | None = None,
    plan_text: str,
    literals: Sequence[Literal] = (),
) -> KernelSource:
    """Source of the fused elementwise kernel computing every output and the filter mask.

    ``vector_bits`` picks how bit-packed outputs are written: through a byte-per-row
    scratch array (vectorises; for inputs of a block or more) or through register
    accumulators (compiles faster; for small inputs). Default: as ``parallel``.
    ``literals`` are read from arguments ``p0, p1, ...`` instead of written in.
    """
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    param_index: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    em = _Emitter(types, nulls, input_index, inputs, scalar_index, scalars, " " * 12,
                  param_index)  # fmt: skip
    out_specs: list[OutputSpec] = []
    store: list[str] = []
    # Bit-packed outputs (bool values, validity, the filter mask) are first written one
    # byte per row into a block-local scratch array, so the row loop stays branch-free
    # and vectorisable, then packed eight rows to a byte after the loop.
    bit_outputs: list[str] = []
    for m, (name, node) in enumerate(outputs):
        value, valid = em.value(node)
        dtype = types[node]
        out_specs.append(OutputSpec(name, dtype, valid is not None))
        if dtype.is_bool:
            store.append(f"bits[{len(bit_outputs)}, i - start] = {value}")
            bit_outputs.append(f"o{m}")
        else:
            store.append(f"o{m}[i] = {value}")
        if valid is not None:
            store.append(f"bits[{len(bit_outputs)}, i - start] = {valid}")
            bit_outputs.append(f"ov{m}")
    if mask is not None:
        value, valid = em.value(mask)
        keep = f"({valid}) & {value}" if valid is not None else value
        m = len(out_specs)
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False))
        store.append(f"bits[{len(bit_outputs)}, i - start] = {keep}")
        bit_outputs.append(f"o{m}")
    args = _signature_args(inputs, scalars) + [f"p{k}" for k in range(len(literals))]
    for m, spec in enumerate(out_specs):
        args.append(f"o{m}")
        if spec.nullable:
            args.append(f"ov{m}")
    uses_err = bool(em.err_messages)
    args.append("err")
    inner: list[str] = []
    if parallel if vector_bits is None else vector_bits:
        _bits_via_scratch(inner, em.lines, store, bit_outputs)
    else:
        _bits_via_accumulators(inner, em.lines, store, bit_outputs)
    source = _block_kernel("elementwise", args, inner, parallel=parallel, uses_err=uses_err,
                           plan_text=plan_text)  # fmt: skip
    return KernelSource(
        kind="elementwise",
        source=source,
        inputs=inputs,
        scalars=scalars,
        literal_args=[lit.dtype for lit in literals if lit.dtype is not None],
        outputs=out_specs,
        uses_err=uses_err,
        err_messages=em.err_messages,
    )


def _block_kernel(
    name: str, args: list[str], inner: list[str], *, parallel: bool, uses_err: bool,
    plan_text: str,
) -> str:
    """A complete kernel module: ``inner`` lines run once per block of `BLOCK` rows.

    Blocks are spread over threads with ``prange`` when ``parallel``; per-block
    failure counts go to ``err`` when the kernel can fail.
    """
    options = "parallel=True, " if parallel else ""
    body = [
        f"@numba.njit({options}cache=True, nogil=True, error_model='numpy')",
        f"def {name}({', '.join(args)}):",
        "    nblocks = (n + BLOCK - 1) // BLOCK",
        f"    for blk in {'prange' if parallel else 'range'}(nblocks):",
        "        start = blk * BLOCK",
        "        stop = min(start + BLOCK, n)",
    ]
    if uses_err:
        body.append(f"        nerr = np.zeros({N_ERR_KINDS}, dtype=np.int64)")
    body += inner
    if uses_err:
        body.append(f"        for e in range({N_ERR_KINDS}):")
        body.append("            err[e, blk] = nerr[e]")
    return _HEADER.format(plan=plan_text, block=BLOCK) + "\n".join(body) + "\n"


def _bits_via_scratch(
    body: list[str], row_lines: list[str], store: list[str], bit_outputs: list[str]
) -> None:
    """Row loop for large inputs: bits go one byte per row to scratch, packed after the loop.

    The row loop stays branch-free and vectorises; costs more compile time.
    """
    if bit_outputs:
        body.append(f"        bits = np.zeros(({len(bit_outputs)}, BLOCK), dtype=np.uint8)")
    body.append("        for i in range(start, stop):")
    body.extend(row_lines)
    body.extend(" " * 12 + line for line in store)
    if bit_outputs:
        body += [
            "        base = start >> 3",
            "        for j in range((stop - start + 7) >> 3):",
            "            r = j * 8",
        ]
        for k, dest in enumerate(bit_outputs):
            packed = " | ".join(
                f"(bits[{k}, r + {q}] << {q})" if q else f"bits[{k}, r]" for q in range(8)
            )
            body.append(f"            {dest}[base + j] = np.uint8({packed})")


def _bits_via_accumulators(
    body: list[str], row_lines: list[str], store: list[str], bit_outputs: list[str]
) -> None:
    """Row loop for small inputs: bits are or-ed into a register, stored every 8th row.

    Compiles about twice as fast as the scratch form; the data is small anyway.
    """
    for k in range(len(bit_outputs)):
        body.append(f"        acc{k} = np.int64(0)")
    body.append("        for i in range(start, stop):")
    body.extend(row_lines)
    for line in store:
        if line.startswith("bits["):
            k = int(line[5 : line.index(",")])
            value = line.split(" = ", 1)[1]
            body.append(" " * 12 + f"acc{k} |= np.int64({value}) << (i & 7)")
        else:
            body.append(" " * 12 + line)
    if bit_outputs:
        body.append(" " * 12 + "if (i & 7) == 7 or i == stop - 1:")
        for k, dest in enumerate(bit_outputs):
            body.append(" " * 16 + f"{dest}[i >> 3] = np.uint8(acc{k})")
            body.append(" " * 16 + f"acc{k} = np.int64(0)")


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
    em = _Emitter(types, nulls, input_index, inputs, scalar_index, scalars, " " * 12)
    init: list[str] = []
    update: list[str] = []
    finish: list[str] = []
    slots: list[AggSlot] = []
    nf = ni = nu = 0
    for q, agg in enumerate(aggs):
        value, valid = em.value(agg.arg)
        arg_dtype = types[agg.arg]
        slot = AggSlot(agg, arg_dtype, types[agg])
        cnt = f"c{q}"
        init.append(f"{cnt} = np.int64(0)")
        slot.i["count"] = ni
        finish.append(f"pi[blk, {ni}] = {cnt}")
        ni += 1
        upd = [f"{cnt} += 1"]
        func = agg.func
        if func == "mean" and not arg_dtype.is_float and arg_dtype.bits == 64:
            # An exact integer mean: 64-bit values are summed as high and low 32-bit
            # halves (neither overflows an int64 within a block); the host adds them
            # as Python integers, so cancelling extremes lose nothing.
            arr, conv, one = ("pu", "np.uint64", "np.uint64") if arg_dtype.is_unsigned \
                else ("pi", "np.int64", "np.int64")  # fmt: skip
            roles = slot.u if arg_dtype.is_unsigned else slot.i
            base = nu if arg_dtype.is_unsigned else ni
            init += [f"hi{q} = {conv}(0)", f"lo{q} = {conv}(0)"]
            upd += [
                f"hi{q} += {conv}({value}) >> {one}(32)",
                f"lo{q} += {conv}({value}) & {one}(0xFFFFFFFF)",
            ]
            roles["sum_hi"], roles["sum_lo"] = base, base + 1
            finish += [f"{arr}[blk, {base}] = hi{q}", f"{arr}[blk, {base + 1}] = lo{q}"]
            if arg_dtype.is_unsigned:
                nu += 2
            else:
                ni += 2
        elif func in ("sum", "mean"):
            if arg_dtype.is_float:
                acc = f"sf{q}"
                init.append(f"{acc} = 0.0")
                upd.append(f"{acc} += np.float64({value})")
                slot.f["sum"] = nf
                finish.append(f"pf[blk, {nf}] = {acc}")
                nf += 1
            elif arg_dtype.is_unsigned:
                acc = f"su{q}"
                init.append(f"{acc} = np.uint64(0)")
                upd.append(f"{acc} += np.uint64({value})")
                slot.u["sum"] = nu
                finish.append(f"pu[blk, {nu}] = {acc}")
                nu += 1
            else:
                acc = f"si{q}"
                init.append(f"{acc} = np.int64(0)")
                upd.append(f"{acc} += np.int64({value})")
                slot.i["sum"] = ni
                finish.append(f"pi[blk, {ni}] = {acc}")
                ni += 1
        elif func in ("min", "max"):
            better = "<" if func == "min" else ">"
            if arg_dtype.is_float:
                acc = f"mf{q}"
                start = "np.inf" if func == "min" else "-np.inf"
                init += [f"{acc} = {start}", f"nn{q} = np.int64(0)", f"nan{q} = np.int64(0)"]
                upd += [
                    f"if {value} != {value}:",
                    f"    nan{q} = np.int64(1)",
                    "else:",
                    f"    nn{q} += 1",
                    f"    if {value} {better} {acc} or nn{q} == 1:",
                    f"        {acc} = np.float64({value})",
                ]
                slot.f["best"] = nf
                slot.i["non_nan"] = ni
                slot.i["any_nan"] = ni + 1
                finish += [
                    f"pf[blk, {nf}] = {acc}",
                    f"pi[blk, {ni}] = nn{q}",
                    f"pi[blk, {ni + 1}] = nan{q}",
                ]
                nf += 1
                ni += 2
            else:
                store_u = arg_dtype.is_unsigned
                arr, conv = ("pu", "np.uint64") if store_u else ("pi", "np.int64")
                acc = f"mi{q}"
                init.append(f"{acc} = {conv}(0)")
                upd += [f"if {cnt} == 1 or {conv}({value}) {better} {acc}:",
                        f"    {acc} = {conv}({value})"]  # fmt: skip
                if store_u:
                    slot.u["best"] = nu
                    finish.append(f"pu[blk, {nu}] = {acc}")
                    nu += 1
                else:
                    slot.i["best"] = ni
                    finish.append(f"pi[blk, {ni}] = {acc}")
                    ni += 1
                _ = arr
        elif func in ("std", "var"):
            mean, m2 = f"wm{q}", f"wq{q}"
            init += [f"{mean} = 0.0", f"{m2} = 0.0"]
            upd += [
                f"d{q} = np.float64({value}) - {mean}",
                f"{mean} += d{q} / {cnt}",
                f"{m2} += d{q} * (np.float64({value}) - {mean})",
            ]
            slot.f["mean"] = nf
            slot.f["m2"] = nf + 1
            finish += [f"pf[blk, {nf}] = {mean}", f"pf[blk, {nf + 1}] = {m2}"]
            nf += 2
        elif func in ("count", "null_count"):
            pass
        else:
            msg = f"reduction `{func}` has no CPU lowering"
            raise UnsupportedOperationError(msg)
        # `count` is first in `upd`; a null row updates nothing.
        if valid is not None:
            update.append(f"if {valid}:")
            update.extend("    " + u for u in upd)
        else:
            update.extend(upd)
        slots.append(slot)
    args = [*_signature_args(inputs, scalars), "pf", "pi", "pu", "err"]
    uses_err = bool(em.err_messages)
    inner = [" " * 8 + line for line in init]
    inner.append("        for i in range(start, stop):")
    inner.extend(em.lines)
    inner += [" " * 12 + line for line in update]
    inner += [" " * 8 + line for line in finish]
    source = _block_kernel("reduce", args, inner, parallel=parallel, uses_err=uses_err,
                           plan_text=plan_text)  # fmt: skip
    return KernelSource(
        kind="reduce",
        source=source,
        inputs=inputs,
        scalars=scalars,
        slots=slots,
        n_f=nf,
        n_i=ni,
        n_u=nu,
        err_messages=em.err_messages,
        uses_err=uses_err,
    )
