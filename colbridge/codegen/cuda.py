"""Code generation for CUDA: a fused plan segment → complete CUDA C source (the C dialect).

Stage: codegen. The semantics come from `colbridge.codegen.lower`, shared with
the CPU target; this module spells them in C and places them in the CUDA loop
skeleton, so the CPU backend is the reference every generated kernel is
checked against.

Kernel structure
----------------
Every kernel is an ``extern "C" __global__`` function with a grid-stride loop
that gives each thread ONE ROW per step, adjacent threads adjacent rows (loads
and stores coalesce). The loop runs over the rows rounded up to whole warps, so
all 32 lanes of a warp reach every warp primitive together; lanes past the end
(``in`` false) read row 0 and store nothing. Bit-packed outputs (bool values,
validity, the filter mask) are built with ``__ballot_sync``: lane 0 of each warp
writes the 32-bit word of its 32 rows, so no two threads write the same word.
The block size must therefore be a multiple of 32.

``elementwise(n, <inputs>, <scalars>, <literals>, <outputs>, err)`` and
``reduce(n, <inputs>, <scalars>, pf, pi, pu, err)`` take the arguments of the
CPU kernels in the same order (see `colbridge.codegen.numba_cpu`), with C
types: values as ``const T*`` already advanced to the column's offset, bool
values and validity bitmaps as ``const unsigned char*`` plus a ``long long``
bit offset, reduction results of an earlier pass as ``T`` (and ``bool`` where
they may be null); bit-packed outputs as ``unsigned int*`` (32-bit words: a
result buffer holds whole words). ``err`` is ``unsigned long long[N_ERR_KINDS]``:
each thread counts failures locally and adds them with one ``atomicAdd`` per kind.

Reductions write one partial row *per thread* (``pf[t*NF + k]``, ``pi[t*NI +
k]``, ``pu[t*NU + k]`` with ``t = blockIdx.x*blockDim.x + threadIdx.x``), in
the `AggSlot` layout, so the host combines them with the same
``finalize_reduction`` as the CPU's per-block partials. ``std``/``var`` take
their moments two-pass per warp (the 32 rows' mean by a butterfly of
``__shfl_xor_sync``, then their squared deviations), folded into lane 0's state
with the formula polars uses.

Only plain C arithmetic and a whitelist of CUDA math functions (which glibc
also provides under the same names) appear in the text, with NaN spelled
``nan("")`` and infinities built from their bit patterns, so the very same
text compiles with NVRTC for the GPU and with g++ (plus a header that stands in
for the CUDA built-ins, warps included) for testing without one. Kernels are
compiled with ``--fmad=false`` so + − × ÷ and sqrt round exactly as on the CPU.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from colbridge.codegen.dialect import MATH_FUNCTIONS as _C_MATH
from colbridge.codegen.dialect import Dialect
from colbridge.codegen.kernel import (
    GroupedSpec,
    InputSpec,
    KernelSource,
    OutputSpec,
    ScalarSpec,
    collect_grouped,
    collect_inputs,
    collect_scalars,
    kernel_tables,
    table_params,
)
from colbridge.codegen.lower import (
    NULL_SOURCE,
    Fold,
    Lowering,
    ReductionLowering,
    moment_combine,
    row_updates,
    start_grouped_reduce,
)
from colbridge.expr.nodes import Agg, Column, GroupAgg, Literal, Node, TableRef
from colbridge.plan.nullability import Nullability
from colbridge.types import DType

__all__ = [
    "COMPILE_OPTIONS",
    "MATH_FUNCTIONS",
    "CDialect",
    "CudaKernelSource",
    "ctype",
    "generate_elementwise",
    "generate_grouped_reduce",
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

#: Every math function a generated kernel may call (CUDA math API and glibc alike).
MATH_FUNCTIONS: frozenset[str] = frozenset(
    {f for name in _C_MATH for f in (name, name + "f")} | {"nan", "nanf"}
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
    rows_per_thread: int = 1
    #: grouped kernels: (partial array kind, column, initial value) of each table column
    table_starts: list[tuple[str, int, float | int]] = field(default_factory=list)

    def threads_for(self, rows: int) -> int:
        """How many threads a launch over ``rows`` rows needs (one loop step each)."""
        return (rows + self.rows_per_thread - 1) // self.rows_per_thread

    @property
    def bitmap_params(self) -> frozenset[str]:
        """Output parameters that are bitmaps of 32-bit words (bool values, validity, mask)."""
        names = set()
        for m, out in enumerate(self.outputs):
            if out.dtype.is_bool:
                names.add(f"o{m}")
            if out.nullable:
                names.add(f"ov{m}")
        return frozenset(names)

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


class CDialect(Dialect):
    """C as NVRTC and g++ both compile it: fixed-width types, wrapping through unsigned."""

    name = "cuda"
    true = "true"
    false = "false"

    def decl(self, name: str, dtype: DType, expr: str) -> str:
        return f"const {ctype(dtype)} {name} = {expr};"

    def var(self, name: str, dtype: DType, expr: str) -> str:
        return f"{ctype(dtype)} {name} = {expr};"

    def assign(self, name: str, expr: str) -> str:
        return f"{name} = {expr};"

    def const(self, value: bool | int | float | None, dtype: DType) -> str:
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

    def convert(self, expr: str, dtype: DType) -> str:
        return f"(({ctype(dtype)})({expr}))"

    def wrapping(self, sym: str, a: str, b: str, dtype: DType) -> str:
        # signed overflow is undefined in C: compute modulo 2**64, keep the low bits
        return (
            f"(({ctype(dtype)})((unsigned long long)({a}) {sym} (unsigned long long)({b})))"
        )

    def shift_right(self, a: str, bits: int, dtype: DType) -> str:
        return f"(({ctype(dtype)})(({a}) >> {bits}))"

    def negate_wrapping(self, a: str, dtype: DType) -> str:
        return f"(({ctype(dtype)})(0ULL - (unsigned long long)({a})))"

    def invert(self, a: str, dtype: DType) -> str:
        return f"(({ctype(dtype)})(~({a})))"

    def float_op(self, sym: str, a: str, b: str, dtype: DType) -> str:
        return f"(({ctype(dtype)})(({a}) {sym} ({b})))"

    def and_(self, *parts: str) -> str:
        return "(" + " && ".join(f"({p})" for p in parts) + ")"

    def or_(self, *parts: str) -> str:
        return "(" + " || ".join(f"({p})" for p in parts) + ")"

    def not_(self, a: str) -> str:
        return f"(!({a}))"

    def select(self, cond: str, a: str, b: str) -> str:
        return f"(({cond}) ? ({a}) : ({b}))"

    def math(self, func: str, dtype: DType, *args: str) -> str:
        name = func + "f" if dtype is DType.FLOAT32 else func
        return f"{name}({', '.join(args)})"

    def is_finite(self, a: str) -> str:
        return f"cb_isfinite({a})"

    def is_inf(self, a: str) -> str:
        return f"cb_isinf({a})"

    def floordiv(self, a: str, b: str, dtype: DType) -> str:
        return f"cb_floordiv<{ctype(dtype)}>({a}, {b})"

    def mod(self, a: str, b: str, dtype: DType) -> str:
        return f"cb_mod<{ctype(dtype)}>({a}, {b})"

    def ipow(self, a: str, b: str, dtype: DType) -> str:
        base = f"(unsigned long long)(long long)({a})" if dtype.is_signed \
            else f"(unsigned long long)({a})"  # fmt: skip
        return f"(({ctype(dtype)})cb_ipow({base}, (unsigned long long)({b})))"

    def if_block(self, cond: str, body: list[str]) -> list[str]:
        return [f"if ({cond}) {{", *("    " + line for line in body), "}"]

    def to_uint64(self, a: str) -> str:
        return f"((unsigned long long)({a}))"

    def popcount(self, a: str) -> str:
        return f"((long long)__popcll((unsigned long long)({a})))"

    def search(self, table: str, length: str, value: str) -> str:
        return f"cb_search({table}, {length}, (long long)({value}))"


DIALECT = CDialect()

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

__device__ __forceinline__ int cb_search(const long long* t, long long n, long long x) {{
    // the last position whose entry is <= x (t[0] is the smallest long long)
    long long lo = 0, hi = n;
    while (hi - lo > 1) {{
        const long long mid = (lo + hi) >> 1;
        if (t[mid] <= x) lo = mid; else hi = mid;
    }}
    return (int)lo;
}}

template <typename T> __device__ __forceinline__ T cb_warp_sum(T v) {{
    // a butterfly: every lane ends with the same total (each step adds a, b and b, a)
    for (int lane_mask = 16; lane_mask > 0; lane_mask >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
    return v;
}}

"""


class _CudaRows:
    """The CUDA skeleton's row access: thread row ``i``, read at ``r`` (row 0 past the end)."""

    in_range: str | None = "in"

    def __init__(self) -> None:
        self.bits: dict[frozenset[str], str] = {}
        self.errors: set[int] = set()
        #: lagged inputs (`InputSpec.lag`): whether they have a bitmap and whether the rows
        #: shifted in are filled
        self.lags: dict[int, tuple[bool, bool]] = {}

    def column(self, k: int, spec: InputSpec, emit: Callable[[str], None]) -> str:
        r = "r"
        if spec.lag:
            # the row ``lg{k}`` rows back (ahead where negative); where it does not exist,
            # row 0 (the value is null there), or the fill ``fl{k}`` (the row then unread)
            self.lags[k] = (spec.nullable, spec.fill)
            r = f"(r - lg{k})" if spec.fill else f"({_lag_exists(k)} ? r - lg{k} : 0LL)"
        if spec.dtype.is_bool:
            value = f"(((x{k}[({r} + xo{k}) >> 3] >> (({r} + xo{k}) & 7)) & 1) != 0)"
        else:
            value = f"x{k}[{r}]"
        return f"({_lag_exists(k)} ? {value} : fl{k})" if spec.fill else value

    def sources_bit(self, sources: frozenset[str], emit: Callable[[str], None]) -> str:
        name = self.bits.get(sources)
        if name is not None:
            return name
        name = f"vb{len(self.bits)}"
        self.bits[sources] = name
        parts = []
        for source in sorted(sources):
            if source == NULL_SOURCE:
                parts.append("false")
            elif source.startswith("sv"):
                parts.append(source)
            else:
                k = source[1:]
                lagged = int(k) in self.lags
                has_bitmap, filled = self.lags.get(int(k), (True, False))
                r = f"(r - lg{k})" if lagged else "r"
                bit = f"(((v{k}[({r} + vo{k}) >> 3] >> (({r} + vo{k}) & 7)) & 1) != 0)"
                if filled:  # a filled row shifted in is valid (a source has a bitmap)
                    parts.append(f"(!{_lag_exists(int(k))} || {bit})")
                    continue
                if lagged:
                    parts.append(_lag_exists(int(k)))
                if has_bitmap:
                    parts.append(bit)
        emit(f"const bool {name} = {' && '.join(parts)};")
        return name

    def count_error(self, kind: int, failed: str) -> str:
        self.errors.add(kind)
        return f"nerr{kind} += (in && {failed}) ? 1ULL : 0ULL;"


def _lag_exists(k: int) -> str:
    """Whether the row input ``k`` reads, ``lg{k}`` rows back from thread row ``r``, exists."""
    return f"(r - lg{k} >= 0LL && r - lg{k} < n)"


def _params(
    inputs: list[InputSpec],
    scalars: list[ScalarSpec],
    groups: Sequence[GroupedSpec] = (),
    tables: Sequence[TableRef] = (),
) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = [("long long", "n")]
    for k, spec in enumerate(inputs):
        if spec.dtype.is_bool:
            params += [("const unsigned char*", f"x{k}"), ("long long", f"xo{k}")]
        else:
            params.append((f"const {ctype(spec.dtype)}*", f"x{k}"))
        if spec.nullable:
            params += [("const unsigned char*", f"v{k}"), ("long long", f"vo{k}")]
        if spec.lag:
            params.append(("long long", f"lg{k}"))  # rows back; negative: ahead
        if spec.fill:
            params.append((ctype(spec.dtype), f"fl{k}"))  # the rows shifted in
    for j, s in enumerate(scalars):
        params.append((ctype(s.dtype), f"s{j}"))
        if s.nullable:
            params.append(("bool", f"sv{j}"))
    for j, g in enumerate(groups):
        params.append((f"const {ctype(g.dtype)}*", f"g{j}"))
        if g.nullable:
            params.append(("const bool*", f"gv{j}"))
    for name, table, role in table_params(tables):
        ctype_ = {"data": f"const {ctype(table.dtype)}*", "valid": "const unsigned char*",
                  "length": "long long"}[role]  # fmt: skip
        params.append((ctype_, name))
    return params


def _literal_params(literals: Sequence[Literal]) -> list[tuple[str, str]]:
    """Arguments ``p0, p1, ...``: the literals a kernel reads instead of having them written in."""
    return [(ctype(lit.dtype), f"p{k}") for k, lit in enumerate(literals)
            if lit.dtype is not None]  # fmt: skip


def _signature(name: str, params: list[tuple[str, str]]) -> str:
    def one(ct: str, nm: str) -> str:
        return f"{ct} __restrict__ {nm}" if ct.endswith("*") else f"{ct} {nm}"

    args = ",\n    ".join(one(ct, nm) for ct, nm in params)
    return f'extern "C" __global__ void {name}(\n    {args})'


_LOOP_HEAD = [
    "    // whole warps: every lane of a warp reaches each warp primitive together",
    "    const long long rows = (n + 31) & ~31LL;",
    "    const long long stride = (long long)blockDim.x * (long long)gridDim.x;",
    "    for (long long i = (long long)blockIdx.x * (long long)blockDim.x + threadIdx.x;",
    "         i < rows; i += stride) {",
    "        const bool in = i < n;",
    "        const long long r = in ? i : 0;  // lanes past the end read row 0, store nothing",
]


def _comment(plan_text: str) -> str:
    return "\n".join("// " + line for line in plan_text.splitlines()) or "//"


def _prelude(plan_text: str) -> str:
    return _PRELUDE.format(plan=_comment(plan_text), options=" ".join(COMPILE_OPTIONS))


def _err_lines(errors: set[int]) -> tuple[list[str], list[str]]:
    init = [f"    unsigned long long nerr{e} = 0ULL;" for e in sorted(errors)]
    flush = [f"    if (nerr{e}) atomicAdd(&err[{e}], nerr{e});" for e in sorted(errors)]
    return init, flush


def _indent(lines: Sequence[str], depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def generate_elementwise(
    outputs: list[tuple[str, Node]],
    mask: Node | None,
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    plan_text: str = "",
    literals: Sequence[Literal] = (),
    gate: Node | None = None,
    parallel: bool = True,
    tables: Sequence[TableRef] = (),
) -> CudaKernelSource:
    """CUDA source of the fused elementwise kernel computing every output and the filter mask.

    ``literals`` are read from arguments ``p0, p1, ...`` instead of written in;
    ``parallel`` is accepted for symmetry with the CPU target (a GPU kernel always is).
    """
    roots = [n for _, n in outputs] + ([mask] if mask is not None else [])
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params_index: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    rows = _CudaRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars, params_index,
                  group_index, groups, tables=table_index)  # fmt: skip
    out_specs: list[OutputSpec] = []
    store: list[str] = []
    ballots = 0

    def ballot(expr: str, dest: str) -> None:
        nonlocal ballots
        word = f"w{ballots}"
        ballots += 1
        store.append(f"const unsigned int {word} = __ballot_sync(0xffffffffu, in && ({expr}));")
        store.append(f"if ((threadIdx.x & 31) == 0) {dest}[i >> 5] = {word};")

    mask_keep = None
    if mask is not None:
        # the filter first: failures of the outputs count only on the rows its gate keeps
        mask_keep = lw.filter_rows(mask, gate)
    for m, (name, node) in enumerate(outputs):
        val = lw.value(node)
        dtype = types[node]
        out_specs.append(OutputSpec(name, dtype, not val.valid.never_null))
        if dtype.is_bool:
            ballot(val.expr, f"o{m}")
        else:
            store.append(f"if (in) o{m}[i] = {val.expr};")
        row_valid = lw.row_valid(val.valid)
        if row_valid is not None:
            ballot(row_valid, f"ov{m}")
    if mask_keep is not None:
        m = len(out_specs)
        out_specs.append(OutputSpec("__mask__", DType.BOOL, False, is_mask=True))
        ballot(mask_keep, f"o{m}")
    params = _params(inputs, scalars, groups, tables) + _literal_params(literals)
    literal_types = [lit.dtype for lit in literals if lit.dtype is not None]
    for m, spec in enumerate(out_specs):
        data_type = "unsigned int*" if spec.dtype.is_bool else f"{ctype(spec.dtype)}*"
        params.append((data_type, f"o{m}"))
        if spec.nullable:
            params.append(("unsigned int*", f"ov{m}"))
    params.append(("unsigned long long*", "err"))
    err_init, err_flush = _err_lines(rows.errors)
    body = [_signature("elementwise", params), "{", *err_init, *_LOOP_HEAD]
    body += _indent([*lw.lines, *store], 2)
    body += ["    }", *err_flush, "}"]
    source = _prelude(plan_text) + "\n".join(body) + "\n"
    return CudaKernelSource(
        kind="elementwise",
        roots=tuple(roots),
        source=source,
        inputs=inputs,
        scalars=scalars,
        groups=groups,
        tables=tables,
        outputs=out_specs,
        uses_err=bool(rows.errors),
        err_messages=lw.err_messages,
        params=params,
        literal_args=literal_types,
        name="elementwise",
    )


def _row_updates(d: CDialect, folds: list[Fold]) -> list[str]:
    """`row_updates`, where of equal zeros a float min keeps ``-0.0`` and a max ``0.0``.

    The CPU's kernels order ``-0.0`` below ``0.0`` (their order keys); a plain ``<``
    kept whichever zero a thread met first. (``1 / x`` tells the zeros apart.)
    """
    out = row_updates(d, folds)
    for fold in folds:
        if fold.op in ("min", "max") and fold.acc.dtype.is_float:
            acc, v = fold.acc.name, f"({fold.value})"
            sign = "<" if fold.op == "min" else ">"
            tie = f"{v} == 0 && {acc} == 0 && 1 / {v} {sign} 0"
            if fold.when:
                tie = f"({fold.when}) && {tie}"
            out.append(d.assign(acc, f"({tie}) ? {v} : {acc}"))
    return out


def generate_reduce(
    aggs: list[Agg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    plan_text: str = "",
    parallel: bool = True,
    tables: Sequence[TableRef] = (),
    literals: Sequence[Literal] = (),
) -> CudaKernelSource:
    """CUDA source of one reduction pass writing per-thread partials of every reduction.

    ``literals`` are read from arguments ``p0, p1, ...`` (after the tables').
    """
    roots: list[Node] = [a.arg for a in aggs]
    inputs, input_index = collect_inputs(roots, types, nulls)
    scalars, scalar_index = collect_scalars(roots, types, nulls, skip_inside_agg=True)
    groups, group_index = collect_grouped(roots, types, nulls)
    tables = kernel_tables(roots, tables)
    table_index = {t: k for k, t in enumerate(tables)}
    params_index: dict[Node, int] = {lit: k for k, lit in enumerate(literals)}
    rows = _CudaRows()
    lw = Lowering(DIALECT, rows, types, input_index, inputs, scalar_index, scalars, params_index,
                  group_index, groups, tables=table_index)  # fmt: skip
    red = ReductionLowering(lw)
    for agg in aggs:
        red.add(agg)
    d = DIALECT
    f64 = DType.FLOAT64
    init = [d.var(acc.name, acc.dtype, acc.init) for st in red.states for acc in st.accumulators]
    moments: list[str] = []
    for q, st in enumerate(red.states):
        x, ok = st.moment_of, st.ok
        if x is None:
            continue
        count, mean, m2 = (acc.name for acc in st.accumulators)
        assert ok is not None  # on a GPU it holds `in` at least (padding lanes count nothing)
        moments += [
            f"const long long wc{q} = cb_warp_sum<long long>({d.select(ok, '1LL', '0LL')});",
            f"const double ws{q} = cb_warp_sum<double>({d.select(ok, x, '0.0')});",
            f"const double wm{q} = ws{q} / (double)(wc{q} > 0 ? wc{q} : 1LL);",
            f"const double wdev{q} = {d.float_op('-', x, f'wm{q}', f64)};",
            f"const double wd{q} = cb_warp_sum<double>("
            f"{d.select(ok, f'wdev{q} * wdev{q}', '0.0')});",
            "if ((threadIdx.x & 31) == 0) {",
            *_indent(moment_combine(d, count, mean, m2, f"wc{q}", f"wm{q}", f"wd{q}"), 1),
            "}",
        ]
    params = [
        *_params(inputs, scalars, groups, tables),
        *_literal_params(literals),
        ("double*", "pf"),
        ("long long*", "pi"),
        ("unsigned long long*", "pu"),
        ("unsigned long long*", "err"),
    ]
    widths = {"f": max(red.n_f, 1), "i": max(red.n_i, 1), "u": max(red.n_u, 1)}
    err_init, err_flush = _err_lines(rows.errors)
    body = [_signature("reduce", params), "{", *err_init]
    body += _indent(init, 1)
    body += _LOOP_HEAD
    body += _indent([*lw.lines, *_row_updates(d, red.folds), *moments], 2)
    body.append("    }")
    body.append("    // one partial row per thread, in the `AggSlot` layout")
    body.append("    const long long row = (long long)blockIdx.x * (long long)blockDim.x "
                "+ threadIdx.x;")  # fmt: skip
    for st in red.states:
        for acc in st.accumulators:
            body.append(f"    p{acc.kind}[row * {widths[acc.kind]} + {acc.column}] = {acc.name};")
    body += err_flush
    body.append("}")
    source = _prelude(plan_text) + "\n".join(body) + "\n"
    return CudaKernelSource(
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
        uses_err=bool(rows.errors),
        err_messages=lw.err_messages,
        params=params,
        name="reduce",
    )



_ATOMICS = r"""
// Atomic updates of the grouped partial tables (blocks, and the lanes of a warp, update
// the same cells at once); double min/max are compare-and-swap loops.
// a float min/max cell is NaN until a number arrives (as the CPU's accumulators)
__device__ __forceinline__ bool cb_better_min(double v, double best) {
    return best != best || v < best;
}
__device__ __forceinline__ bool cb_better_max(double v, double best) {
    return best != best || v > best;
}
__device__ __forceinline__ void cb_add_f(double* a, double v) { atomicAdd(a, v); }
__device__ __forceinline__ void cb_add_i(long long* a, long long v) {
    atomicAdd((unsigned long long*)a, (unsigned long long)v);
}
__device__ __forceinline__ void cb_add_u(unsigned long long* a, unsigned long long v) {
    atomicAdd(a, v);
}
__device__ __forceinline__ void cb_or_i(long long* a, long long v) {
    atomicOr((unsigned long long*)a, (unsigned long long)v);
}
__device__ __forceinline__ void cb_min_i(long long* a, long long v) { atomicMin(a, v); }
__device__ __forceinline__ void cb_max_i(long long* a, long long v) { atomicMax(a, v); }
__device__ __forceinline__ void cb_min_u(unsigned long long* a, unsigned long long v) {
    atomicMin(a, v);
}
__device__ __forceinline__ void cb_max_u(unsigned long long* a, unsigned long long v) {
    atomicMax(a, v);
}
__device__ __forceinline__ void cb_min_f(double* a, double v) {
    // a NaN value never replaces the cell
    unsigned long long* p = (unsigned long long*)a;
    unsigned long long old = atomicOr(p, 0ULL);  // an atomic read
    while (v == v && cb_better_min(v, __longlong_as_double((long long)old))) {
        const unsigned long long seen =
            atomicCAS(p, old, (unsigned long long)__double_as_longlong(v));
        if (seen == old) break;
        old = seen;
    }
}
__device__ __forceinline__ void cb_max_f(double* a, double v) {
    unsigned long long* p = (unsigned long long*)a;
    unsigned long long old = atomicOr(p, 0ULL);  // an atomic read
    while (v == v && cb_better_max(v, __longlong_as_double((long long)old))) {
        const unsigned long long seen =
            atomicCAS(p, old, (unsigned long long)__double_as_longlong(v));
        if (seen == old) break;
        old = seen;
    }
}

"""


def _atomic_fold(fold: Fold, cell: str) -> str:
    """The atomic update of table cell ``cell`` for one fold (rows past the end do nothing)."""
    kind = fold.acc.kind
    if fold.op == "count":
        return f"if (in && ({fold.value})) cb_add_{kind}(&{cell}, 1LL);"
    if fold.op in ("add", "or"):
        return f"if (in) cb_{fold.op}_{kind}(&{cell}, {fold.value});"
    when = f"in && ({fold.when})" if fold.when else "in"
    return f"if ({when}) cb_{fold.op}_{kind}(&{cell}, {fold.value});"


def generate_grouped_reduce(
    aggs: list[GroupAgg],
    types: dict[Node, DType],
    nulls: Nullability,
    *,
    plan_text: str = "",
    parallel: bool = True,
    tables: Sequence[TableRef] = (),
    literals: Sequence[Literal] = (),
) -> CudaKernelSource:
    """CUDA source of one grouped reduction pass: atomic updates of partial tables by group id.

    ``grouped(n, <inputs>, <scalars>, <grouped>, <tables>, <literals>, tf, ti, tu, err,
    ngroups, per_block)``: the group ids are an input column; the tables hold
    ``(chunks, groups, columns)`` in the `AggSlot` layout, made on the host at the
    accumulators' initial values. With ``per_block`` each block updates its own
    table (chunk ``blockIdx.x``: few groups, little contention), else all share
    chunk 0 (many groups). The host merges the chunks as the CPU's
    (`colbridge.backends.common.finalize_grouped`).
    """
    rows = _CudaRows()
    start = start_grouped_reduce(DIALECT, rows, aggs, types, nulls, tables, literals)
    ids_name, lw = start.ids_name, start.lw
    inputs, scalars, groups, tables = start.inputs, start.scalars, start.groups, start.tables
    gid = "0LL" if ids_name is None else f"(long long)({lw.value(Column(ids_name)).expr})"
    red = ReductionLowering(lw)
    for agg in aggs:
        red.add(agg)
    widths = {"f": max(red.n_f, 1), "i": max(red.n_i, 1), "u": max(red.n_u, 1)}
    updates = [f"const long long g = table + {gid};"]
    for fold in red.folds:
        kind = fold.acc.kind
        updates.append(_atomic_fold(fold, f"t{kind}[g * {widths[kind]} + {fold.acc.column}]"))
    params = [
        *_params(inputs, scalars, groups, tables),
        *_literal_params(literals),
        ("double*", "tf"),
        ("long long*", "ti"),
        ("unsigned long long*", "tu"),
        ("unsigned long long*", "err"),
        ("long long", "ngroups"),
        ("int", "per_block"),
    ]
    err_init, err_flush = _err_lines(rows.errors)
    body = [_signature("grouped", params), "{", *err_init]
    body.append("    // the first group row of this block's table")
    body.append("    const long long table = per_block ? (long long)blockIdx.x * ngroups : 0LL;")
    body += _LOOP_HEAD
    body += _indent([*lw.lines, *updates], 2)
    body.append("    }")
    body += err_flush
    body.append("}")
    source = _prelude(plan_text) + _ATOMICS + "\n".join(body) + "\n"
    starts = [(acc.kind, acc.column, acc.start) for st in red.states for acc in st.accumulators]
    return CudaKernelSource(
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
        uses_err=bool(rows.errors),
        err_messages=lw.err_messages,
        params=params,
        name="grouped",
        table_starts=starts,
    )
