"""Code generation for CUDA: one fused plan segment → complete CUDA C source text.

The lowering mirrors `colbridge.codegen.numba_cpu` node for node (same
semantics, same argument order, same per-block partials layout), so the CPU
backend is the reference every generated kernel is checked against.

Kernel structure
----------------
Every kernel is an ``extern "C" __global__`` function with a grid-stride loop
over *validity bytes*: one thread handles the 8 consecutive rows ``8*b ..
8*b+7`` of byte ``b`` at a time, so every bit-packed output byte (bool values,
validity) is written whole by exactly one thread and writes never race.

``elementwise(n, <inputs>, <scalars>, <outputs>, err)`` and
``reduce(n, <inputs>, <scalars>, pf, pi, pu, err)`` take the arguments of the
CPU kernels in the same order (see `colbridge.codegen.numba_cpu`), with C
types: values as ``const T*`` already advanced to the column's offset, bool
values and validity bitmaps as ``const unsigned char*`` plus a ``long long``
bit offset, reduction results of an earlier pass as ``T`` (and ``bool`` where
they may be null). ``err`` is ``unsigned long long[N_ERR_KINDS]``: each thread
counts failures locally and adds them with one ``atomicAdd`` per kind.

Reductions write one partial row *per thread* (``pf[t*NF + k]``, ``pi[t*NI +
k]``, ``pu[t*NU + k]`` with ``t = blockIdx.x*blockDim.x + threadIdx.x``), in
the CPU's `AggSlot` layout, so the host combines them with the CPU backend's
own ``finalize_reduction``.

Only plain C arithmetic and a whitelist of CUDA math functions (which glibc
also provides under the same names) appear in the text, with NaN spelled
``nan("")`` and infinities built from their bit patterns, so the very same
text compiles with NVRTC for the GPU and with g++ (plus a small header that
stands in for the CUDA built-ins) for testing without one. Kernels are
compiled with ``--fmad=false`` so + − × ÷ and sqrt round exactly as on the CPU.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

__all__ = [
    "COMPILE_OPTIONS",
    "MATH_FUNCTIONS",
    "CudaKernelSource",
    "ctype",
    "generate_elementwise",
    "generate_reduce",
]

#: NVRTC options every kernel is compiled with (plus ``--gpu-architecture``).
COMPILE_OPTIONS: tuple[str, ...] = ("--fmad=false", "-std=c++17")

_CTYPES: dict[DType, str] = {
    DType.BOOL: "bool",
    DType.INT8: "signed char",
    DType.INT16: "short",
    DType.INT32: "int",
    DType.INT64: "long long",
    DType.UINT8: "unsigned char",
    DType.UINT16: "unsigned short",
    DType.UINT32: "unsigned int",
    DType.UINT64: "unsigned long long",
    DType.FLOAT32: "float",
    DType.FLOAT64: "double",
}

# double-precision name; the float32 variant appends "f" (sqrtf, expf, ...)
_FLOAT_FUNCS = {
    "sqrt": "sqrt",
    "cbrt": "cbrt",
    "exp": "exp",
    "log": "log",
    "log10": "log10",
    "log1p": "log1p",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "floor": "floor",
    "ceil": "ceil",
    "round": "rint",  # half to even, as polars rounds
}

#: Every math function a generated kernel may call (CUDA math API and glibc alike).
MATH_FUNCTIONS: frozenset[str] = frozenset(
    {f for name in _FLOAT_FUNCS.values() for f in (name, name + "f")}
    | {"fabs", "fabsf", "pow", "powf", "nan", "nanf"}
)


def ctype(dtype: DType) -> str:
    """The C type of one value of ``dtype`` (bool columns are bit-packed bytes instead)."""
    return _CTYPES[dtype]


@dataclass
class CudaKernelSource(KernelSource):
    """Generated CUDA source of one kernel, its C parameter list and a stable key."""

    params: list[tuple[str, str]] = field(default_factory=list)  # (C type, name)
    name: str = ""
    #: rows one thread handles per step of its grid-stride loop
    rows_per_thread: int = 8

    def threads_for(self, rows: int) -> int:
        """How many threads a launch over ``rows`` rows needs (one loop step each)."""
        return (rows + self.rows_per_thread - 1) // self.rows_per_thread

    @property
    def digest(self) -> str:
        """SHA-256 of the source text: the on-disk cache key (with the architecture)."""
        return hashlib.sha256(self.source.encode()).hexdigest()


def _float_lit(value: float, dtype: DType) -> str:
    f32 = dtype is DType.FLOAT32
    if value != value:
        return 'nanf("")' if f32 else 'nan("")'
    if value in (float("inf"), float("-inf")):
        sign = "-" if value < 0 else ""
        bits = "__int_as_float(0x7f800000)" if f32 else "__longlong_as_double(0x7ff0000000000000LL)"
        return f"({sign}{bits})"
    text = value.hex()  # exact: no decimal rounding anywhere
    return f"((float){text})" if f32 else f"({text})"


def _c_const(value: bool | int | float | None, dtype: DType) -> str:
    """A C expression of type ``dtype`` with exactly ``value`` (0 for a null)."""
    if dtype.is_bool:
        return "true" if value else "false"
    if value is None:
        return f"(({ctype(dtype)})0)"
    if dtype.is_float:
        return _float_lit(float(value), dtype)
    v = int(value)
    if dtype.is_unsigned:
        return f"(({ctype(dtype)}){v}ULL)"
    if v == -(2**63):
        return "(-9223372036854775807LL - 1LL)"
    return f"(({ctype(dtype)}){v}LL)"


def _math(name: str, dtype: DType) -> str:
    return name + "f" if dtype is DType.FLOAT32 else name


_PRELUDE = r"""// Generated by colbridge from the plan below; do not edit.
{plan}
// Compile with NVRTC: {options}

template <typename T> __device__ __forceinline__ T cb_floordiv(T a, T b) {{
    // b is neither 0 nor -1 here: Python/polars floor division
    T q = (T)(a / b);
    T r = (T)(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) q = (T)(q - 1);
    return q;
}}

template <typename T> __device__ __forceinline__ T cb_mod(T a, T b) {{
    // b is neither 0 nor -1 here: the remainder takes the divisor's sign
    T r = (T)(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
    return r;
}}

__device__ __forceinline__ unsigned long long cb_ipow(unsigned long long base,
                                                      unsigned long long e) {{
    // integer power modulo 2**64; the caller truncates to the result type
    unsigned long long result = 1ULL;
    while (e) {{
        if (e & 1ULL) result = result * base;
        base = base * base;
        e = e >> 1;
    }}
    return result;
}}

template <typename T> __device__ __forceinline__ bool cb_isfinite(T a) {{
    return (a - a) == (a - a);
}}

template <typename T> __device__ __forceinline__ bool cb_isinf(T a) {{
    return (a == a) && !((a - a) == (a - a));
}}

"""


class _Emitter:
    """Emits per-row C statements for typed nodes, one temporary per distinct node (CSE)."""

    def __init__(
        self,
        types: dict[Node, DType],
        inputs: dict[str, int],
        input_specs: list[InputSpec],
        scalars: dict[Agg, int],
        scalar_specs: list[ScalarSpec],
        indent: str,
        literal_args: Mapping[Node, int] | None = None,
    ) -> None:
        self.types = types
        self.inputs = inputs
        self.input_specs = input_specs
        self.scalars = scalars
        self.scalar_specs = scalar_specs
        self.literal_args = literal_args or {}
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
        self.line(f"const bool {name} = " + " && ".join(f"({p})" for p in present) + ";")
        return name

    @singledispatchmethod
    def emit(self, node: Node) -> tuple[str, str | None]:
        msg = f"the CUDA code generator does not support {type(node).__name__} nodes ({node!r})"
        raise UnsupportedOperationError(msg)

    @emit.register
    def _(self, node: Column) -> tuple[str, str | None]:
        k = self.inputs[node.name]
        spec = self.input_specs[k]
        t = self.fresh()
        if spec.dtype.is_bool:
            self.line(f"const bool {t} = ((x{k}[(i + xo{k}) >> 3] >> ((i + xo{k}) & 7)) & 1) != 0;")
        else:
            self.line(f"const {ctype(spec.dtype)} {t} = x{k}[i];")
        valid = None
        if spec.nullable:
            valid = t + "v"
            self.line(
                f"const bool {valid} = ((v{k}[(i + vo{k}) >> 3] >> ((i + vo{k}) & 7)) & 1) != 0;"
            )
        if spec.nan_null:  # NaN means null in this column (pandas NumPy-backed floats)
            bitmap = f"{valid} && " if valid is not None else ""
            valid = t + "vn"
            self.line(f"const bool {valid} = {bitmap}({t} == {t});")
        return t, valid

    @emit.register
    def _(self, node: Literal) -> tuple[str, str | None]:
        dtype = self.types[node]
        if node.value is None:
            return _c_const(None, dtype), "false"
        k = self.literal_args.get(node)
        if k is not None:
            return f"p{k}", None  # a kernel argument: other values reuse the compiled kernel
        return _c_const(node.value, dtype), None

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
        ct = ctype(result)
        t = self.fresh()
        if op in ("and", "or") and result.is_bool:
            return self._kleene(op, a, av, b, bv)
        valid = self.valid_and(av, bv)
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            if operand != self.types[node.right]:  # int64 against uint64, compared exactly
                self.line(f"const bool {t} = {_compare_mixed(op, a, b, operand.is_signed)};")
            else:
                self.line(f"const bool {t} = {_compare(op, a, b, operand.is_float)};")
            return t, valid
        if op == "xor":
            expr = f"{a} != {b}" if result.is_bool else f"({ct})({a} ^ {b})"
            self.line(f"const {ct} {t} = {expr};")
            return t, valid
        if op in ("and", "or"):
            sym = "&" if op == "and" else "|"
            self.line(f"const {ct} {t} = ({ct})({a} {sym} {b});")
            return t, valid
        if op in ("add", "sub", "mul"):
            sym = {"add": "+", "sub": "-", "mul": "*"}[op]
            if result.is_float:
                self.line(f"const {ct} {t} = {a} {sym} {b};")
            else:  # wrapping: compute modulo 2**64, keep the low bits
                self.line(
                    f"const {ct} {t} = ({ct})((unsigned long long){a} {sym} "
                    f"(unsigned long long){b});"
                )
            return t, valid
        if op == "truediv":
            self.line(f"const {ct} {t} = {a} / {b};")
            return t, valid
        if op in ("floordiv", "mod"):
            if result.is_float:
                # polars: a // b = floor(a / b) and a % b = a - b * floor(a / b), each step
                # rounded to the result type (so x % inf is NaN, not x as in Python).
                self.line(f"const {ct} {t}q = {_math('floor', result)}({a} / {b});")
                expr = f"{t}q" if op == "floordiv" else f"{a} - ({b} * {t}q)"
                self.line(f"const {ct} {t} = {expr};")
                return t, valid
            return self._int_divmod(op, result, a, b, valid)
        if op == "pow":
            if result.is_float:
                self.line(f"const {ct} {t} = {_math('pow', result)}({a}, {b});")
                return t, valid
            return self._int_pow(result, self.types[node.right], a, b, valid)
        msg = f"operator `{op}` has no CUDA lowering"
        raise UnsupportedOperationError(msg)

    def _kleene(
        self, op: str, a: str, av: str | None, b: str, bv: str | None
    ) -> tuple[str, str | None]:
        t = self.fresh()
        if av is None and bv is None:
            sym = "&&" if op == "and" else "||"
            self.line(f"const bool {t} = {a} {sym} {b};")
            return t, None
        av_ = av or "true"
        bv_ = bv or "true"
        if op == "and":
            # false wins over null; null otherwise wins over true
            self.line(f"const bool {t}f = (({av_}) && !{a}) || (({bv_}) && !{b});")
            self.line(f"const bool {t} = !{t}f;")
            self.line(f"const bool {t}v = {t}f || (({av_}) && ({bv_}));")
        else:
            self.line(f"const bool {t} = (({av_}) && {a}) || (({bv_}) && {b});")
            self.line(f"const bool {t}v = {t} || (({av_}) && ({bv_}));")
        return t, f"{t}v"

    def _int_divmod(
        self, op: str, result: DType, a: str, b: str, valid: str | None
    ) -> tuple[str, str | None]:
        t = self.fresh()
        ct = ctype(result)
        zero = _c_const(0, result)
        self.line(f"{ct} {t};")
        self.line(f"if ({b} == {zero}) {{")
        self.line(f"    {t} = {zero};")
        if result.is_signed:
            # MIN // -1 overflows the hardware divide: take the wrapped result directly.
            self.line(f"}} else if ({b} == {_c_const(-1, result)}) {{")
            if op == "floordiv":
                self.line(f"    {t} = ({ct})(0ULL - (unsigned long long){a});")
            else:
                self.line(f"    {t} = {zero};")
        func = "cb_floordiv" if op == "floordiv" else "cb_mod"
        self.line("} else {")
        self.line(f"    {t} = {func}<{ct}>({a}, {b});")
        self.line("}")
        return t, self.valid_and(valid, f"{b} != {zero}")

    def _int_pow(
        self, result: DType, exp_dtype: DType, a: str, b: str, valid: str | None
    ) -> tuple[str, str | None]:
        t = self.fresh()
        ct = ctype(result)
        checks = []
        if exp_dtype.is_signed:
            checks.append(f"{b} >= {_c_const(0, exp_dtype)}")
        if exp_dtype.bits == 64:
            checks.append(f"{b} <= {_c_const(2**32 - 1, exp_dtype)}")
        ok = " && ".join(f"({c})" for c in checks) if checks else "true"
        base = f"(unsigned long long)(long long){a}" if result.is_signed else \
            f"(unsigned long long){a}"  # fmt: skip
        self.line(f"const bool {t}ok = {ok};")
        self.line(f"const {ct} {t} = {t}ok ? ({ct})cb_ipow({base}, "
                  f"(unsigned long long){b}) : {_c_const(0, result)};")  # fmt: skip
        self._count_error(ERR_NEGATIVE_EXPONENT, f"!{t}ok", valid,
                          "integer raised to a negative integer power (or one above "
                          "2**32-1); cast the base to float first, e.g. "
                          "`x.cast('float64') ** y`")  # fmt: skip
        return t, valid

    def _count_error(self, kind: int, failed: str, valid: str | None, message: str) -> None:
        cond = f"({failed}) && ({valid})" if valid is not None else failed
        self.line(f"if ({cond}) nerr{kind} += 1;")
        self.err_messages[kind] = message

    @emit.register
    def _(self, node: Unary) -> tuple[str, str | None]:
        op = node.op
        a, av = self.value(node.arg)
        src = self.types[node.arg]
        result = self.types[node]
        ct = ctype(result)
        t = self.fresh()
        if op == "is_null":
            self.line(f"const bool {t} = " + (f"!({av});" if av is not None else "false;"))
            return t, None
        if op == "is_not_null":
            self.line(f"const bool {t} = " + (f"({av});" if av is not None else "true;"))
            return t, None
        if op in ("is_nan", "is_not_nan", "is_finite", "is_infinite"):
            if src.is_float:
                expr = {
                    "is_nan": f"{a} != {a}",
                    "is_not_nan": f"{a} == {a}",
                    "is_finite": f"cb_isfinite({a})",
                    "is_infinite": f"cb_isinf({a})",
                }[op]
            else:
                expr = "false" if op in ("is_nan", "is_infinite") else "true"
            self.line(f"const bool {t} = {expr};")
            return t, av
        if op == "not":
            self.line(f"const {ct} {t} = " + (f"!{a};" if result.is_bool else f"({ct})(~{a});"))
            return t, av
        if op == "neg":
            if result.is_float:
                self.line(f"const {ct} {t} = -{a};")
            else:
                self.line(f"const {ct} {t} = ({ct})(0ULL - (unsigned long long){a});")
            return t, av
        if op == "abs":
            if result.is_float:
                self.line(f"const {ct} {t} = {_math('fabs', result)}({a});")
            elif result.is_signed:
                self.line(f"const {ct} {t} = ({ct})({a} < 0 ? 0ULL - (unsigned long long){a} "
                          f": (unsigned long long){a});")  # fmt: skip
            else:
                self.line(f"const {ct} {t} = {a};")
            return t, av
        if op == "sign":
            one, minus, zero = _c_const(1, result), _c_const(-1, result), _c_const(0, result)
            if result.is_float:
                expr = f"{a} > {zero} ? {one} : ({a} < {zero} ? {minus} : {a})"
            elif result.is_signed:
                expr = f"{a} > {zero} ? {one} : ({a} < {zero} ? {minus} : {zero})"
            else:
                expr = f"{a} > {zero} ? {one} : {zero}"
            self.line(f"const {ct} {t} = {expr};")
            return t, av
        func = _FLOAT_FUNCS.get(op)
        if func is not None:
            self.line(f"const {ct} {t} = {_math(func, result)}({a});")
            return t, av
        msg = f"function `{op}` has no CUDA lowering"
        raise UnsupportedOperationError(msg)

    @emit.register
    def _(self, node: Cast) -> tuple[str, str | None]:
        a, av = self.value(node.arg)
        src, dst = self.types[node.arg], node.dtype
        ct = ctype(dst)
        t = self.fresh()
        if dst.is_bool:
            self.line(f"const bool {t} = " + (f"{a};" if src.is_bool else
                                              f"{a} != {_c_const(0, src)};"))  # fmt: skip
            return t, av
        if src.is_bool:
            self.line(f"const {ct} {t} = {a} ? {_c_const(1, dst)} : {_c_const(0, dst)};")
            return t, av
        if not cast_can_fail(src, dst):
            self.line(f"const {ct} {t} = ({ct}){a};")
            return t, av
        self.line(f"const bool {t}ok = {_fits(a, src, dst)};")
        self.line(f"const {ct} {t} = {t}ok ? ({ct}){a} : {_c_const(0, dst)};")
        if node.strict:
            self._count_error(ERR_STRICT_CAST, f"!{t}ok", av,
                              f"strict cast to {dst} failed: some values do not fit; "
                              "use `.cast(..., strict=False)` to turn them into nulls")  # fmt: skip
            return t, av
        return t, self.valid_and(av, f"{t}ok")

    @emit.register
    def _(self, node: When) -> tuple[str, str | None]:
        c, cv = self.value(node.condition)
        a, av = self.value(node.then)
        b, bv = self.value(node.otherwise)
        ct = ctype(self.types[node])
        t = self.fresh()
        cond = f"({cv}) && {c}" if cv is not None else c
        self.line(f"const bool {t}c = {cond};")
        self.line(f"const {ct} {t} = {t}c ? {a} : {b};")
        if av is None and bv is None:
            return t, None
        self.line(f"const bool {t}v = {t}c ? ({av or 'true'}) : ({bv or 'true'});")
        return t, f"{t}v"

    @emit.register
    def _(self, node: Coalesce) -> tuple[str, str | None]:
        parts = [self.value(a) for a in node.args]
        ct = ctype(self.types[node])
        t = self.fresh()
        expr, valid = parts[-1][0], parts[-1][1]
        for value, v in reversed(parts[:-1]):
            if v is None:
                expr, valid = value, None
                continue
            expr = f"({v} ? {value} : {expr})"
            valid = None if valid is None else f"({v} || {valid})"
        self.line(f"const {ct} {t} = {expr};")
        if valid is None:
            return t, None
        self.line(f"const bool {t}v = {valid};")
        return t, f"{t}v"

    @emit.register
    def _(self, node: FillNan) -> tuple[str, str | None]:
        a, av = self.value(node.arg)
        b, bv = self.value(node.value)
        ct = ctype(self.types[node])
        t = self.fresh()
        self.line(f"const bool {t}n = {a} != {a};")
        self.line(f"const {ct} {t} = {t}n ? {b} : {a};")
        if bv is None:
            return t, av
        return t, self.valid_and(av, f"{t}n ? ({bv}) : true")

    @emit.register
    def _(self, node: Clip) -> tuple[str, str | None]:
        a, av = self.value(node.arg)
        dtype = self.types[node]
        t = self.fresh()
        self.line(f"{ctype(dtype)} {t} = {a};")
        if node.lower is not None:
            lo = _c_const(node.lower, dtype)
            self.line(f"{t} = {t} < {lo} ? {lo} : {t};")
        if node.upper is not None:
            hi = _c_const(node.upper, dtype)
            self.line(f"{t} = {t} > {hi} ? {hi} : {t};")
        return t, av


def _compare(op: str, a: str, b: str, is_float: bool) -> str:
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
    if not is_float:
        return f"{a} {sym} {b}"
    # polars orders floats totally: NaN equals NaN and is larger than every number.
    return {
        "eq": f"({a} == {b}) || ({a} != {a} && {b} != {b})",
        "ne": f"!(({a} == {b}) || ({a} != {a} && {b} != {b}))",
        "lt": f"({a} < {b}) || ({b} != {b} && {a} == {a})",
        "le": f"({a} <= {b}) || ({b} != {b})",
        "gt": f"({a} > {b}) || ({a} != {a} && {b} == {b})",
        "ge": f"({a} >= {b}) || ({a} != {a})",
    }[op]


def _compare_mixed(op: str, a: str, b: str, left_signed: bool) -> str:
    """Compare int64 with uint64 exactly: a negative int64 is below every uint64."""
    if not left_signed:  # put the signed operand on the left
        a, b = b, a
        op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
    ua = f"(unsigned long long){a}"
    return {
        "eq": f"({a} >= 0) && ({ua} == {b})",
        "ne": f"!(({a} >= 0) && ({ua} == {b}))",
        "lt": f"({a} < 0) || ({ua} < {b})",
        "le": f"({a} < 0) || ({ua} <= {b})",
        "gt": f"({a} >= 0) && ({ua} > {b})",
        "ge": f"({a} >= 0) && ({ua} >= {b})",
    }[op]


def _fits(a: str, src: DType, dst: DType) -> str:
    """A C condition that is true where value ``a`` of ``src`` converts to ``dst``."""
    lo, hi = int_range(dst)
    if src.is_float:
        # compared in double, as the CPU kernel does (float32 widens exactly)
        if dst.bits == 64:
            low = f"{a} >= {float(lo).hex()}" if lo < 0 else f"{a} > -0x1p+0"
            return f"({a} == {a}) && {low} && {a} < {float(hi + 1).hex()}"
        return (f"({a} == {a}) && {a} > {float(lo - 1).hex()} "
                f"&& {a} < {float(hi + 1).hex()}")  # fmt: skip
    slo, shi = int_range(src)
    checks = []
    if lo > slo:
        checks.append(f"{a} >= {_c_const(lo, src)}")
    if hi < shi:
        checks.append(f"{a} <= {_c_const(hi, src)}")
    return " && ".join(f"({c})" for c in checks) if checks else "true"


def _params(inputs: list[InputSpec], scalars: list[ScalarSpec]) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = [("long long", "n")]
    for k, spec in enumerate(inputs):
        if spec.dtype.is_bool:
            params += [("const unsigned char*", f"x{k}"), ("long long", f"xo{k}")]
        else:
            params.append((f"const {ctype(spec.dtype)}*", f"x{k}"))
        if spec.nullable:
            params += [("const unsigned char*", f"v{k}"), ("long long", f"vo{k}")]
    for j, s in enumerate(scalars):
        params.append((ctype(s.dtype), f"s{j}"))
        if s.nullable:
            params.append(("bool", f"sv{j}"))
    return params


def _signature(name: str, params: list[tuple[str, str]]) -> str:
    def one(ct: str, nm: str) -> str:
        return f"{ct} __restrict__ {nm}" if ct.endswith("*") else f"{ct} {nm}"

    args = ",\n    ".join(one(ct, nm) for ct, nm in params)
    return f'extern "C" __global__ void {name}(\n    {args})'


_LOOP_HEAD = [
    "    const long long nbytes = (n + 7) >> 3;",
    "    const long long stride = (long long)blockDim.x * (long long)gridDim.x;",
    "    for (long long byte = (long long)blockIdx.x * (long long)blockDim.x + threadIdx.x;",
    "         byte < nbytes; byte += stride) {",
    "        const long long start = byte << 3;",
    "        const long long stop = (start + 8 < n) ? start + 8 : n;",
]


def _comment(plan_text: str) -> str:
    return "\n".join("// " + line for line in plan_text.splitlines()) or "//"


def _prelude(plan_text: str) -> str:
    return _PRELUDE.format(plan=_comment(plan_text), options=" ".join(COMPILE_OPTIONS))


def _err_lines(uses_err: bool, indent: str) -> tuple[list[str], list[str]]:
    if not uses_err:
        return [], []
    init = [f"{indent}unsigned long long nerr{e} = 0ULL;" for e in range(N_ERR_KINDS)]
    flush = [f"{indent}if (nerr{e}) atomicAdd(&err[{e}], nerr{e});" for e in range(N_ERR_KINDS)]
    return init, flush


def generate_elementwise(
    outputs: list[tuple[str, Node]],
    mask: Node | None,
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    plan_text: str = "",
    literals: Sequence[Literal] = (),
) -> CudaKernelSource:
    """CUDA source of the fused elementwise kernel computing every output and the filter mask.

    ``literals`` are read from arguments ``p0, p1, ...`` instead of written in.
    """
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    literal_index: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    em = _Emitter(types, input_index, inputs, scalar_index, scalars, " " * 12, literal_index)
    out_specs: list[OutputSpec] = []
    store: list[str] = []
    bit_outputs: list[tuple[str, str]] = []  # (accumulator, destination array)
    for m, (name, node) in enumerate(outputs):
        value, valid = em.value(node)
        dtype = types[node]
        out_specs.append(OutputSpec(name, dtype, valid is not None))
        if dtype.is_bool:
            store.append(f"acc{m} |= ((unsigned int)({value})) << (i & 7);")
            bit_outputs.append((f"acc{m}", f"o{m}"))
        else:
            store.append(f"o{m}[i] = {value};")
        if valid is not None:
            store.append(f"accv{m} |= ((unsigned int)({valid})) << (i & 7);")
            bit_outputs.append((f"accv{m}", f"ov{m}"))
    if mask is not None:
        value, valid = em.value(mask)
        keep = f"({valid}) && {value}" if valid is not None else value
        m = len(out_specs)
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False))
        store.append(f"acc{m} |= ((unsigned int)({keep})) << (i & 7);")
        bit_outputs.append((f"acc{m}", f"o{m}"))
    params = _params(inputs, scalars)
    literal_types = [lit.dtype for lit in literals if lit.dtype is not None]
    params += [(ctype(t), f"p{k}") for k, t in enumerate(literal_types)]
    for m, spec in enumerate(out_specs):
        data_type = "unsigned char*" if spec.dtype.is_bool else f"{ctype(spec.dtype)}*"
        params.append((data_type, f"o{m}"))
        if spec.nullable:
            params.append(("unsigned char*", f"ov{m}"))
    params.append(("unsigned long long*", "err"))
    uses_err = bool(em.err_messages)
    err_init, err_flush = _err_lines(uses_err, "    ")
    body = [_signature("elementwise", params), "{", *err_init, *_LOOP_HEAD]
    body += [f"        unsigned int {acc} = 0u;" for acc, _ in bit_outputs]
    body.append("        for (long long i = start; i < stop; ++i) {")
    body.extend(em.lines)
    body += [" " * 12 + s for s in store]
    body.append("        }")
    body += [f"        {dest}[byte] = (unsigned char){acc};" for acc, dest in bit_outputs]
    body.append("    }")
    body += err_flush
    body.append("}")
    source = _prelude(plan_text) + "\n".join(body) + "\n"
    return CudaKernelSource(
        kind="elementwise",
        source=source,
        inputs=inputs,
        scalars=scalars,
        outputs=out_specs,
        uses_err=uses_err,
        err_messages=em.err_messages,
        params=params,
        literal_args=literal_types,
        name="elementwise",
    )


def generate_reduce(
    aggs: list[Agg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    plan_text: str = "",
) -> CudaKernelSource:
    """CUDA source of one reduction pass writing per-thread partials of every reduction."""
    roots: list[Node] = [a.arg for a in aggs]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    em = _Emitter(types, input_index, inputs, scalar_index, scalars, " " * 12)
    init: list[str] = []
    update: list[str] = []
    finish: list[tuple[str, int, str]] = []  # (array, column, value)
    slots: list[AggSlot] = []
    nf = ni = nu = 0
    for q, agg in enumerate(aggs):
        value, valid = em.value(agg.arg)
        arg_dtype = types[agg.arg]
        slot = AggSlot(agg, arg_dtype, types[agg])
        cnt = f"c{q}"
        init.append(f"long long {cnt} = 0;")
        slot.i["count"] = ni
        finish.append(("pi", ni, cnt))
        ni += 1
        upd = [f"{cnt} += 1;"]
        func = agg.func
        if func == "mean" and not arg_dtype.is_float and arg_dtype.bits == 64:
            # Exact integer mean, as on the CPU: high and low 32-bit halves summed apart.
            unsigned = arg_dtype.is_unsigned
            ctype_ = "unsigned long long" if unsigned else "long long"
            arr = "pu" if unsigned else "pi"
            roles = slot.u if unsigned else slot.i
            base = nu if unsigned else ni
            init += [f"{ctype_} hi{q} = 0;", f"{ctype_} lo{q} = 0;"]
            upd += [
                f"hi{q} += (({ctype_}){value}) >> 32;",
                f"lo{q} += (({ctype_}){value}) & 0xFFFFFFFFLL;",
            ]
            roles["sum_hi"], roles["sum_lo"] = base, base + 1
            finish += [(arr, base, f"hi{q}"), (arr, base + 1, f"lo{q}")]
            if unsigned:
                nu += 2
            else:
                ni += 2
        elif func in ("sum", "mean"):
            if arg_dtype.is_float:
                acc = f"sf{q}"
                init.append(f"double {acc} = 0.0;")
                upd.append(f"{acc} += (double){value};")
                slot.f["sum"] = nf
                finish.append(("pf", nf, acc))
                nf += 1
            elif arg_dtype.is_unsigned:
                acc = f"su{q}"
                init.append(f"unsigned long long {acc} = 0ULL;")
                upd.append(f"{acc} += (unsigned long long){value};")
                slot.u["sum"] = nu
                finish.append(("pu", nu, acc))
                nu += 1
            else:
                acc = f"si{q}"
                init.append(f"unsigned long long {acc} = 0ULL;  // int64 sum, wrapping")
                upd.append(f"{acc} += (unsigned long long)(long long){value};")
                slot.i["sum"] = ni
                finish.append(("pi", ni, f"(long long){acc}"))
                ni += 1
        elif func in ("min", "max"):
            better = "<" if func == "min" else ">"
            if arg_dtype.is_float:
                acc = f"mf{q}"
                inf = "__longlong_as_double(0x7ff0000000000000LL)"
                start = inf if func == "min" else f"-{inf}"
                init += [f"double {acc} = {start};", f"long long nn{q} = 0;",
                         f"long long nan{q} = 0;"]  # fmt: skip
                upd += [
                    f"if ({value} != {value}) {{",
                    f"    nan{q} = 1;",
                    "} else {",
                    f"    nn{q} += 1;",
                    f"    if ((double){value} {better} {acc} || nn{q} == 1)",
                    f"        {acc} = (double){value};",
                    "}",
                ]
                slot.f["best"] = nf
                slot.i["non_nan"] = ni
                slot.i["any_nan"] = ni + 1
                finish += [("pf", nf, acc), ("pi", ni, f"nn{q}"), ("pi", ni + 1, f"nan{q}")]
                nf += 1
                ni += 2
            else:
                conv = "unsigned long long" if arg_dtype.is_unsigned else "long long"
                acc = f"mi{q}"
                init.append(f"{conv} {acc} = 0;")
                upd.append(f"if ({cnt} == 1 || ({conv}){value} {better} {acc}) "
                           f"{acc} = ({conv}){value};")  # fmt: skip
                if arg_dtype.is_unsigned:
                    slot.u["best"] = nu
                    finish.append(("pu", nu, acc))
                    nu += 1
                else:
                    slot.i["best"] = ni
                    finish.append(("pi", ni, acc))
                    ni += 1
        elif func in ("std", "var"):
            mean, m2 = f"wm{q}", f"wq{q}"
            init += [f"double {mean} = 0.0;", f"double {m2} = 0.0;"]
            upd += [
                f"const double d{q} = (double){value} - {mean};",
                f"{mean} += d{q} / (double){cnt};",
                f"{m2} += d{q} * ((double){value} - {mean});",
            ]
            slot.f["mean"] = nf
            slot.f["m2"] = nf + 1
            finish += [("pf", nf, mean), ("pf", nf + 1, m2)]
            nf += 2
        elif func in ("count", "null_count"):
            pass
        else:
            msg = f"reduction `{func}` has no CUDA lowering"
            raise UnsupportedOperationError(msg)
        # `count` is first in `upd`; a null row updates nothing.
        if valid is not None:
            update.append(f"if ({valid}) {{")
            update.extend("    " + u for u in upd)
            update.append("}")
        else:
            update.extend(upd)
        slots.append(slot)
    params = [
        *_params(inputs, scalars),
        ("double*", "pf"),
        ("long long*", "pi"),
        ("unsigned long long*", "pu"),
        ("unsigned long long*", "err"),
    ]
    widths = {"pf": max(nf, 1), "pi": max(ni, 1), "pu": max(nu, 1)}
    uses_err = bool(em.err_messages)
    err_init, err_flush = _err_lines(uses_err, "    ")
    body = [_signature("reduce", params), "{", *err_init]
    body += ["    " + s for s in init]
    body += _LOOP_HEAD
    body.append("        for (long long i = start; i < stop; ++i) {")
    body.extend(em.lines)
    body += [" " * 12 + s for s in update]
    body += ["        }", "    }"]
    body.append("    // one partial row per thread, in the CPU's per-block layout")
    body.append("    const long long row = (long long)blockIdx.x * (long long)blockDim.x "
                "+ threadIdx.x;")  # fmt: skip
    body += [f"    {arr}[row * {widths[arr]} + {col}] = {val};" for arr, col, val in finish]
    body += err_flush
    body.append("}")
    source = _prelude(plan_text) + "\n".join(body) + "\n"
    return CudaKernelSource(
        kind="reduce",
        source=source,
        inputs=inputs,
        scalars=scalars,
        slots=slots,
        n_f=nf,
        n_i=ni,
        n_u=nu,
        uses_err=uses_err,
        err_messages=em.err_messages,
        params=params,
        name="reduce",
    )
