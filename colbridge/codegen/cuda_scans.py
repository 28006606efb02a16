"""Code generation for CUDA scans: ordered operations (`Scan` nodes) as generated CUDA C.

Stage: codegen. The CUDA backend runs a segment's scan pass on the device with
these kernels where `device_scan_reason` allows it (not in streams); the CPU kernels
(`colbridge.backends._scan_kernels`) are the reference they are tested against.
Values arrive in the CPU kernels' compute types (``long long``, ``unsigned long
long``, ``float``, ``double``), validity as one byte per row (omitted when no row
is null), and results leave the same way.

Kernel families
---------------
*Running scans* (``cum_sum``, ``cum_prod``, ``cum_min``, ``cum_max``,
``cum_count``, forward and backward fills) are an associative state per row
(`_STATES`) combined in scan order, in three launches over chunks of
``chunk`` rows (one block per chunk, grid-stride over chunks):

1. ``scan_reduce``: each thread folds its own run of ``ceil(chunk / blockDim)``
   consecutive rows left to right; thread 0 folds the block's thread totals
   left to right into the chunk's carry (``tu``);
2. ``scan_carry``: one thread turns the chunk carries into each chunk's carry-in
   (an exclusive scan, left to right);
3. ``scan_fix``: each block folds its threads' runs again, thread 0 scans the
   thread totals from the chunk's carry-in, and each thread walks its run from
   its own prefix, writing every row.

So a float sum reaches row ``i`` as ``(((carry-in + t_0) + ... + t_k) + x_a) +
... + x_i``: the chunk totals and thread totals in order, then the rows of the
thread's run one by one. Integers wrap (the arithmetic is done unsigned), min
and max (NaN skipped unless every value so far is NaN) and fills (the last
non-null position, a max) are exact. Reversed scans walk positions from the end
(``row = n - 1 - p``).

``ewm_mean`` is two running scans of affine maps: ``ewm_weight`` scans each
row's weight update (``w -> (1 - alpha)*w + 1``, ``w -> 1`` without ``adjust``,
decay only at a null row) into a device buffer; then each non-null row's mean
update ``m -> (1 - r)*m + r*x``, ``r = new_wt / (w*(1 - alpha) + new_wt)`` with
``w`` the weight after the row before, composed in scan order and applied to 0.
Maps compose in another order than polars' recurrence rounds: results are
close, not bitwise (the runner keeps columns with NaN or infinities on the
host, where an infinite mean turns NaN at the next value as in polars).

*Row-wise scans* compute each row on its own thread (grid-stride over rows):
``shift`` reads row ``i - n``; each ``rolling_*`` window reads its rows directly,
the rows before a block's first row included (the halo comes from global
memory), so a row costs ``window`` reads: sums and means add the window afresh
with a Kahan compensation (NaN and infinities counted, as the CPU's sliding sum
does), variances sum it around its first value in float64 (as the CPU does; a
window whose spread nears overflow runs polars' own updates, as the CPU's), min
and max keep the latest of equal extremes (as polars and the CPU's queue).

With keys (``.over``) every kernel walks the rows sorted stably by group
(`generate_scan`'s ``keyed``): running scans are segmented, windows and shifts
stay inside their row's group.

The same text compiles with NVRTC and, for the tests, with g++ against
``colbridge/testing/cuda_host.h``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from colbridge.codegen.cuda import CudaKernelSource
from colbridge.expr.nodes import rolling_weights

__all__ = [
    "DEVICE_SCANS",
    "ScanProgram",
    "device_scan_reason",
    "generate_scan",
]

#: ordered functions (after typing's lowering) the CUDA backend runs on the device
DEVICE_SCANS = frozenset({
    "cum_sum", "cum_prod", "cum_min", "cum_max", "cum_count", "forward_fill", "backward_fill",
    "shift", "shift_in_range", "rolling_sum", "rolling_mean", "rolling_var", "rolling_std",
    "rolling_min", "rolling_max", "ewm_mean",
})  # fmt: skip

_RUNNING = ("cum_sum", "cum_prod", "cum_min", "cum_max", "cum_count", "forward_fill",
            "backward_fill", "ewm_weight", "ewm_mean")  # fmt: skip

_C_TYPES = {
    np.dtype(np.int64): "long long",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}

#: the widest block a running scan's shared arrays hold
MAX_BLOCK = 1024
#: bytes of one chunk's carry in device memory (the largest state: two 8-byte values, a
#: count and a group flag)
STATE_BYTES = 32


def device_scan_reason(func: str, streamed: bool = False) -> str | None:
    """Why ordered function ``func`` stays on the host under the CUDA backend (None: it does not).

    ``streamed``: it carries state across the batches of a stream.
    """
    if streamed:
        return "a stream carries its state from batch to batch on the host"
    if func not in DEVICE_SCANS:
        return f"`{func}` has no CUDA scan yet"
    return None


@dataclass(frozen=True)
class ScanProgram:
    """The CUDA text of one scan and its kernels, in launch order.

    ``running``: a three-launch running scan (reduce, carry, fix) over chunks of
    rows; otherwise one row-wise kernel. ``reads_values`` / ``nullable``: whether
    the kernels take the values ``x`` and the validity bytes ``xv``.
    """

    func: str
    source: str
    kernels: tuple[CudaKernelSource, ...]
    running: bool
    reads_values: bool
    nullable: bool
    out_ctype: str

    @property
    def digest(self) -> str:
        """SHA-256 of the source text."""
        return hashlib.sha256(self.source.encode()).hexdigest()


def _float(ct: str) -> bool:
    return ct in ("float", "double")


def _nan(ct: str) -> str:
    return 'nanf("")' if ct == "float" else 'nan("")'


def _inf(ct: str) -> str:
    return "__int_as_float(0x7f800000)" if ct == "float" else \
        "__longlong_as_double(0x7ff0000000000000LL)"  # fmt: skip


def _wrap(ct: str, a: str, op: str, b: str) -> str:
    """``a op b`` in ``ct``: integers through unsigned arithmetic (wrapping, never undefined)."""
    if ct == "long long":
        return f"(long long)((unsigned long long)({a}) {op} (unsigned long long)({b}))"
    return f"({a}) {op} ({b})"


def _state(func: str, options: tuple[Any, ...], ct: str) -> tuple[str, str, str, str, str]:
    """C pieces of a running scan's state: (fields, identity, lift, combine, emit).

    ``lift`` makes ``r`` the state of row ``row`` (at scan position ``p``);
    ``combine`` folds ``b`` into ``a`` (``a`` earlier in scan order); ``emit``
    writes row ``row`` from ``s``, the state of every position up to ``p``.
    """
    valid = "VALID(row)"
    if func in ("cum_sum", "cum_prod"):
        op, one = ("+", "0") if func == "cum_sum" else ("*", "1")
        return (
            f"{ct} v;", f"s.v = ({ct}){one};",
            f"r.v = {valid} ? x[row] : ({ct}){one};",
            f"a.v = {_wrap(ct, 'a.v', op, 'b.v')};",
            f"out[row] = s.v; ov[row] = {valid};",
        )  # fmt: skip
    if func in ("cum_min", "cum_max"):
        # of equal values the later one (-0.0 after 0.0), as polars
        better = "b.v <= a.v" if func == "cum_min" else "b.v >= a.v"
        return (
            f"{ct} v; int seen;", f"s.v = ({ct})0; s.seen = 0;",
            f"r.seen = {valid}; r.v = r.seen ? x[row] : ({ct})0;",
            # NaN is skipped unless every value so far is NaN (a monoid: min ignoring NaN)
            f"if (b.seen && (!a.seen || a.v != a.v || (b.v == b.v && {better}))) a = b;",
            f"out[row] = s.v; ov[row] = {valid};",
        )  # fmt: skip
    if func == "cum_count":
        return (
            "long long c;", "s.c = 0;", f"r.c = {valid} ? 1 : 0;", "a.c += b.c;",
            "out[row] = (unsigned int)s.c; ov[row] = 1;",
        )  # fmt: skip
    if func in ("ewm_weight", "ewm_mean"):
        return _ewm_state(func, options, ct)
    # fills: the last non-null scan position (-1: none yet); positions only grow
    return (
        "long long last;", "s.last = -1;", f"r.last = {valid} ? p : -1;",
        "if (b.last > a.last) a.last = b.last;",
        f"if ({valid}) {{ out[row] = x[row]; ov[row] = 1; }}\n"
        "        else if (s.last >= 0 && (limit < 0 || p - s.last <= limit)) {\n"
        "            out[row] = x[ROW(s.last)]; ov[row] = 1;\n"
        f"        }} else {{ out[row] = ({ct})0; ov[row] = 0; }}",
    )  # fmt: skip


def _literal(value: float, ct: str) -> str:
    """``value`` rounded to ``ct`` as the CPU rounds it (``compute.type(value)``), exactly."""
    if value != value or value in (float("inf"), float("-inf")):
        return _nan(ct) if value != value else ("-" if value < 0 else "") + _inf(ct)
    return f"(({ct}){float(value).hex()})"


def _ewm_state(func: str, options: tuple[Any, ...], ct: str) -> tuple[str, str, str, str, str]:
    """``ewm_mean`` as two running scans of affine maps (see `generate_scan`).

    ``ewm_weight``: each row's weight after it, ``w -> a*w + b`` per row (decay by
    ``1 - alpha``, then ``+ 1``, or ``= 1`` without ``adjust``), written to ``out``.
    ``ewm_mean``: ``m -> (1 - r)*m + r*x`` per non-null row, ``r = new_wt / (w*(1 -
    alpha) + new_wt)`` from the weight after the row before (``wt``), and the rows'
    non-null count; a map composed with the ones before it, applied to 0, is the mean.
    """
    alpha, adjust, min_samples, ignore_nulls = options
    a = _literal(alpha, ct)
    keep = f"(({ct})1 - {a})"
    new_wt = f"({ct})1" if adjust else a
    affine = "a.b = b.a * a.b + b.b; a.a = b.a * a.a;"  # `a` first, then `b`
    if func == "ewm_weight":
        on_valid = f"r.a = {keep if adjust else f'({ct})0'}; r.b = ({ct})1;"
        on_null = f"r.a = {f'({ct})1' if ignore_nulls else keep}; r.b = ({ct})0;"
        return (
            f"{ct} a; {ct} b;", f"s.a = ({ct})1; s.b = ({ct})0;",
            f"if (VALID(row)) {{ {on_valid} }} else {{ {on_null} }}",
            affine, "out[p] = s.b; ov[row] = 1;",  # by scan position: `ewm_mean` reads it
        )  # fmt: skip
    least = max(int(min_samples), 1)
    return (
        f"{ct} a; {ct} b; long long c;", f"s.a = ({ct})1; s.b = ({ct})0; s.c = 0;",
        f"if (VALID(row)) {{\n"
        f"        const {ct} decayed = (HEAD(p) ? ({ct})0 : wt[p - 1]) * {keep};\n"
        f"        const {ct} q = {new_wt} / (decayed + {new_wt});\n"
        f"        r.a = ({ct})1 - q; r.b = q * x[row]; r.c = 1;\n"
        f"    }} else {{ r.a = ({ct})1; r.b = ({ct})0; r.c = 0; }}",
        affine + " a.c += b.c;",
        f"out[row] = s.b; ov[row] = VALID(row) && s.c >= {least};",
    )  # fmt: skip


def _params(ct: str, reads_values: bool, nullable: bool) -> list[tuple[str, str]]:
    params = [("long long", "n")]
    if reads_values:
        params.append((f"const {ct}*", "x"))
    if nullable:
        params.append(("const unsigned char*", "xv"))
    return params


def _signature(name: str, params: list[tuple[str, str]]) -> str:
    text = ", ".join(f"{c} __restrict__ {p}" if c.endswith("*") else f"{c} {p}"
                     for c, p in params)  # fmt: skip
    return f'extern "C" __global__ void {name}({text})'


def _kernel(name: str, params: list[tuple[str, str]], source: str) -> CudaKernelSource:
    return CudaKernelSource(kind="scan", source=source, inputs=[], scalars=[], params=params,
                            name=name)  # fmt: skip


def generate_scan(func: str, options: tuple[Any, ...], compute: np.dtype[Any],
                  nullable: bool, keyed: bool = False) -> ScanProgram:  # fmt: skip
    """The CUDA scan of ``func`` (a `DEVICE_SCANS` name) computing in ``compute``.

    ``options`` are the scan's (as `colbridge.backends.scans.run_scan` takes them);
    those that shape the code (direction, which operation) are baked into the text,
    the others are kernel arguments. ``nullable``: some row of the input is null.
    ``keyed``: a scan per group (``.over``). The kernels then walk *positions* of the
    rows sorted stably by group (``order[p]`` is the row at position ``p``, ``gid[p]``
    its group): running scans restart at each group's first position (a segmented
    scan: a state that starts a group replaces the one before it), windows and
    shifts keep to positions of the row's own group, and every row is read and
    written at its own place, so nothing is gathered or scattered apart.
    """
    ct = _C_TYPES[np.dtype(compute)]
    reads_values = func not in ("cum_count", "shift_in_range", "ewm_weight")
    out_ct = "unsigned int" if func == "cum_count" else ct
    head = [
        f"// colbridge scan: {func} in {ct}" + (", per group" if keyed else ""),
        "#define VALID(r) " + ("(xv[(r)] != 0)" if nullable else "true"),
        # the row at sorted position k; whether positions i and k hold rows of one group
        "#define ORD(k) " + ("(order[(k)])" if keyed else "(k)"),
        "#define SAME(i, k) " + ("(gid[(i)] == gid[(k)])" if keyed else "true"),
    ]
    inputs = _params(ct, reads_values, nullable)
    if keyed:
        inputs += [("const long long*", "order"), ("const int*", "gid")]
    outputs = [(f"{out_ct}*", "out"), ("unsigned char*", "ov")]
    if func in _RUNNING:
        return _running(func, options, ct, out_ct, head, inputs, outputs, reads_values,
                        nullable, keyed)  # fmt: skip
    if func in ("shift", "shift_in_range"):
        params = [*inputs, *outputs, ("long long", "steps"), (ct, "fill"), ("int", "has_fill")]
        read = "out[row] = x[ORD(k)]; ov[row] = VALID(ORD(k));" if reads_values else \
            f"out[row] = ({ct})0; ov[row] = 1;"  # fmt: skip
        body = f"""{_signature("scan_shift", params)} {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        const long long k = i - steps;
        const long long row = ORD(i);
        if (k >= 0 && k < n && SAME(i, k)) {{
            {read}
        }} else {{
            out[row] = fill;
            ov[row] = has_fill != 0;
        }}
    }}
}}
"""
        source = "\n".join(head) + "\n\n" + body
        return ScanProgram(func, source, (_kernel("scan_shift", params, source),), False,
                           reads_values, nullable, out_ct)  # fmt: skip
    if rolling_weights(func, options) is not None:
        return _weighted(func, ct, head, inputs, outputs, nullable, keyed)
    return _rolling(func, ct, head, inputs, outputs, nullable, keyed)


def _running(func: str, options: tuple[Any, ...], ct: str, out_ct: str, head: list[str],
             inputs: list[tuple[str, str]], outputs: list[tuple[str, str]], reads_values: bool,
             nullable: bool, keyed: bool) -> ScanProgram:  # fmt: skip
    reverse = bool(options[0]) if func.startswith("cum_") else func == "backward_fill"
    fields, identity, lift, combine, emit = _state(func, options, ct)
    if keyed:  # segmented: a state that starts a group replaces everything before it
        fields += " int head;"
        identity += " s.head = 0;"
        lift += "\n    r.head = HEAD(p);"
        # (a combine may copy `b` whole: the flag of `a` is kept around it)
        combine = f"if (b.head) {{ a = b; }} else {{ const int h = a.head; {combine} a.head = h; }}"
    head += [
        # the sorted position of scan position p, and the row there
        "#define IDX(p) " + ("(n - 1 - (p))" if reverse else "(p)"),
        "#define ROW(p) ORD(IDX(p))",
        "#define HEAD(p) " + ("((p) == 0 || gid[IDX(p)] != gid[IDX((p) - 1)])" if keyed
                              else "((p) == 0)"),
        f"struct cb_state {{ {fields} }};",
        f"static_assert(sizeof(cb_state) <= {STATE_BYTES}, \"a chunk carry's room\");",
        "__device__ __forceinline__ void cb_identity(cb_state& s) { " + identity + " }",
        "__device__ __forceinline__ void cb_combine(cb_state& a, const cb_state& b) { "
        + combine + " }",
    ]
    if func == "ewm_mean":  # each row's weight, from the `ewm_weight` scan before it
        inputs = [*inputs, (f"const {ct}*", "wt")]
    lifted = [(c, p) for c, p in inputs if p != "n"]
    decls = "".join(f", {c} __restrict__ {p}" for c, p in lifted)
    head.append(
        f"__device__ __forceinline__ void cb_lift(cb_state& r, long long p, long long n{decls}) "
        f"{{\n    const long long row = ROW(p);\n    {lift}\n}}"
    )
    args = "p, n" + "".join(f", {p}" for _, p in lifted)
    # each thread's run of consecutive scan positions within chunk `c`
    run = """const long long per = (chunk + blockDim.x - 1) / blockDim.x;
        long long lo = c * chunk + (long long)threadIdx.x * per;
        long long end = c * chunk + chunk < n ? c * chunk + chunk : n;
        long long hi = lo + per < end ? lo + per : end;
        cb_state s;
        cb_identity(s);
        for (long long p = lo; p < hi; ++p) {
            cb_state r;
            cb_lift(r, ARGS);
            cb_combine(s, r);
        }""".replace("ARGS", args)
    chunks = "const long long chunks = (n + chunk - 1) / chunk;"
    reduce_params = [*inputs, ("unsigned long long*", "tu"), ("long long", "chunk")]
    fix_params = [*inputs, *outputs, ("const unsigned long long*", "tu"), ("long long", "chunk")]
    if func in ("forward_fill", "backward_fill"):
        fix_params.append(("long long", "limit"))
    carry_params = [("long long", "n"), ("unsigned long long*", "tu"), ("long long", "chunk")]
    body = f"""
// 1. each chunk's carry: its threads' runs folded left to right, then the runs' totals
{_signature("scan_reduce", reduce_params)} {{
    __shared__ cb_state part[{MAX_BLOCK}];
    {chunks}
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {{
        {run}
        part[threadIdx.x] = s;
        __syncthreads();
        if (threadIdx.x == 0) {{
            cb_state t = part[0];
            for (unsigned int k = 1; k < blockDim.x; ++k) cb_combine(t, part[k]);
            reinterpret_cast<cb_state*>(tu)[c] = t;
        }}
        __syncthreads();  // `part` is read before the next chunk writes it
    }}
}}

// 2. the chunk carries become carry-ins, left to right (one thread: chunks are few)
{_signature("scan_carry", carry_params)} {{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    {chunks}
    cb_state acc;
    cb_identity(acc);
    cb_state* carries = reinterpret_cast<cb_state*>(tu);
    for (long long c = 0; c < chunks; ++c) {{
        const cb_state t = carries[c];
        carries[c] = acc;
        cb_combine(acc, t);
    }}
}}

// 3. every row: the chunk's carry-in, the runs before the thread's, then its own rows
{_signature("scan_fix", fix_params)} {{
    __shared__ cb_state part[{MAX_BLOCK}];
    {chunks}
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {{
        {run}
        part[threadIdx.x] = s;
        __syncthreads();
        if (threadIdx.x == 0) {{
            cb_state acc = reinterpret_cast<const cb_state*>(tu)[c];
            for (unsigned int k = 0; k < blockDim.x; ++k) {{
                const cb_state t = part[k];
                part[k] = acc;
                cb_combine(acc, t);
            }}
        }}
        __syncthreads();
        s = part[threadIdx.x];
        for (long long p = lo; p < hi; ++p) {{
            cb_state r;
            cb_lift(r, {args});
            cb_combine(s, r);
            const long long row = ROW(p);
            {emit}
        }}
        __syncthreads();  // `part` is read before the next chunk writes it
    }}
}}
"""
    source = "\n".join(head) + "\n" + body
    kernels = (_kernel("scan_reduce", reduce_params, source),
               _kernel("scan_carry", carry_params, source),
               _kernel("scan_fix", fix_params, source))  # fmt: skip
    return ScanProgram(func, source, kernels, True, reads_values, nullable, out_ct)


def _rolling(func: str, ct: str, head: list[str], inputs: list[tuple[str, str]],
             outputs: list[tuple[str, str]], nullable: bool,
             keyed: bool) -> ScanProgram:  # fmt: skip
    params = [*inputs, *outputs, ("long long", "window"), ("long long", "min_samples"),
              ("long long", "offset")]  # fmt: skip
    if func in ("rolling_var", "rolling_std"):
        params.append(("long long", "ddof"))
    if func in ("rolling_sum", "rolling_mean"):
        # a mean sums in double, as the CPU kernel does; a sum in the values' type
        tt = "double" if func == "rolling_mean" else ct
        if _float(tt):
            add = f"""if (v - v == 0) {{  // finite: added with a Kahan compensation
                    const {tt} y = v - err;
                    const {tt} t = total + y;
                    err = (t - total) - y;
                    total = t;
                }} else {{  // NaN and infinities are counted, not added
                    ++nonfinite;
                    pinf += v > 0;
                    ninf += v < 0;
                }}"""
            value = (f"nonfinite == 0 ? total : nonfinite == pinf ? {_inf(tt)} : "
                     f"nonfinite == ninf ? -{_inf(tt)} : {_nan(tt)}")  # fmt: skip
        else:
            add = f"total = {_wrap(tt, 'total', '+', 'v')};"
            value = "total"
        if func == "rolling_mean":
            write = f"""{ct} o = ({ct})value;
        if (count > 0) o = ({ct})((double)o / (double)count);
        out[i] = o;
        ov[i] = count >= min_samples && count > 0;"""
        else:
            write = "out[i] = value;\n        ov[i] = count >= min_samples;"
        inner = f"""{tt} total = 0, err = 0;
        long long nonfinite = 0, pinf = 0, ninf = 0;
        for (long long k = start; k < end; ++k) {{
            if (VALID(k)) {{
                ++count;
                const {tt} v = ({tt})x[k];
                {add}
            }}
        }}
        const {tt} value = {value};
        {write}"""
    elif func in ("rolling_var", "rolling_std"):
        # the root of the variance in the output's type (a float's sqrt: float), as the CPU
        root = "var" if func != "rolling_std" else f"sqrt(({ct})var)" if _float(ct) \
            else "sqrt(var)"  # fmt: skip
        inner = f"""double shift = 0.0;
        long long first = end;
        for (long long k = start; k < end; ++k) {{
            if (VALID(k)) {{ shift = (double)x[k]; first = k; break; }}
        }}
        double s1 = 0.0, s2 = 0.0;
        for (long long k = first; k < end; ++k) {{
            const bool ok = VALID(k);
            const double v = ok ? (double)x[k] : 0.0;
            // v - v: NaN for NaN and infinities, so s2 is NaN exactly where the window
            // holds one (its variance NaN, as in polars)
            const double d = ok ? (v - shift) + (v - v) : 0.0;
            s1 += d;
            s2 += d * d;
            count += ok;
        }}
        double var = count - ddof > 0 ? (s2 - s1 * s1 / count) / (count - ddof) : 0.0;
        if (count - ddof > 0 && !(var * count < 6.696928794914171e+299) && s2 == s2) {{
            // finite values whose spread nears overflow (the bound is 2**996, the CPU's
            // `_SPREAD_LIMIT`): polars' Welford updates step for step (`_welford_var`),
            // as the result hangs on every step. polars' front stack: the rest of the
            // block of `window` positions last started where a non-null row left the
            // window with the front empty (`_front_end`)
            long long seg = start;  // the segment's (group's) first position
            while (seg > 0 && SAME(i, seg - 1)) --seg;
            long long block = -1;
            long long k = seg;
            for (;;) {{
                while (k < start && !VALID(k)) ++k;
                if (k >= start) break;
                block = k;
                k += window;
            }}
            const long long fe = block >= 0 && start < block + window
                ? (block + window < end ? block + window : end) : start;
            double fw = 0.0, fm = 0.0, fdp = 0.0, bw = 0.0, bm = 0.0, bdp = 0.0;
            // one value joins a (weight, mean, dp) state (`_welford_step`)
            auto join = [](double& w, double& m, double& dp, double v) {{
                if (!(v - v == 0.0)) v = 0.0;
                const double nw = w + 1.0, delta = v - m, nm = m + delta / nw;
                dp = dp + (v - nm) * delta;
                w = nw;
                m = nm;
            }};
            for (k = fe - 1; k >= start; --k)  // the front: from the block's end back
                if (VALID(k)) join(fw, fm, fdp, (double)x[k]);
            for (k = fe; k < end; ++k)  // the back, in order
                if (VALID(k)) join(bw, bm, bdp, (double)x[k]);
            if (fw != 0.0) {{  // the front joins the back
                const double nw = bw + fw, frac = fw / nw, delta = fm - bm;
                const double nm = bm + delta * frac;
                bdp = bdp + (fdp + fw * (fm - nm) * delta);
                bw = nw;
            }}
            var = bdp / (bw - ddof);
        }}
        if (var < 0.0) var = 0.0;
        out[i] = ({ct})({root});
        ov[i] = count >= min_samples && count - ddof > 0;"""
    else:  # min and max: the latest of equal extremes, as polars (and the CPU's queue)
        better = "v >= best" if func == "rolling_max" else "v <= best"
        nan = f"nans > 0 ? {_nan(ct)} : " if _float(ct) else ""
        inner = f"""{ct} best = 0;
        long long nans = 0;
        bool have = false;
        for (long long k = start; k < end; ++k) {{
            if (VALID(k)) {{
                ++count;
                const {ct} v = x[k];
                if (v != v) ++nans;
                else if (!have || {better}) {{ best = v; have = true; }}
            }}
        }}
        out[i] = {nan}(have ? best : ({ct})0);
        ov[i] = count >= min_samples && count > 0;"""
    return _row_wise(func, ct, head, params, inner, nullable, keyed)


def _weighted(func: str, ct: str, head: list[str], inputs: list[tuple[str, str]],
              outputs: list[tuple[str, str]], nullable: bool,
              keyed: bool) -> ScanProgram:  # fmt: skip
    """A weighted window (``rolling_*(weights=...)``): polars' arithmetic, in the values' type.

    The weights come as ``wts`` (in ``ct``; normalised by their sum for a variance); the
    row at position ``k`` weighs ``wts[k - (i - offset)]``, so a window cut by the
    frame's (or group's) edge keeps its rows' weights. Operations and their order are
    the CPU kernel's (`colbridge.backends._scan_kernels.rolling_weighted`), so with
    ``--fmad=false`` the bits are the same. No row is null (refused before the scan).
    """
    params = [*inputs, (f"const {ct}*", "wts"), *outputs, ("long long", "window"),
              ("long long", "min_samples"), ("long long", "offset")]  # fmt: skip
    first = "const long long w0 = start - (i - offset);"
    if func == "rolling_sum":  # Rust's float sum starts from -0.0
        inner = f"""{ct} acc = -({ct})0;
        for (long long k = start; k < end; ++k) acc = acc + x[k] * wts[k - (i - offset)];
        out[i] = acc;"""
    elif func in ("rolling_min", "rolling_max"):
        keep = "best < v" if func == "rolling_min" else "best > v"
        inner = f"""{first}
        {ct} best = end > start ? x[ORD(start)] * wts[w0] : ({ct})0;
        for (long long k = start + 1; k < end; ++k) {{
            const {ct} v = x[k] * wts[k - (i - offset)];
            if (!({keep} || best != best)) best = v;  // NaN wins; the later of equals
        }}
        out[i] = best;"""
    else:
        squares = "wssq = wssq + v * v * w;" if func != "rolling_mean" else ""
        if func == "rolling_mean":
            value = "mean"
        elif func == "rolling_var":
            value = "wssq / wtot - mean * mean"
        else:
            value = "sqrt(wssq / wtot - mean * mean)"
        inner = f"""{ct} wsum = 0, wtot = 0, wssq = 0;
        for (long long k = start; k < end; ++k) {{
            const {ct} v = x[k];
            const {ct} w = wts[k - (i - offset)];
            {squares}
            wsum = wsum + v * w;
            wtot = wtot + w;
        }}
        const {ct} mean = wtot == ({ct})0 ? ({ct})0 : wsum / wtot;
        out[i] = wtot == ({ct})0 ? ({ct})0 : ({ct})({value});"""
    inner += "\n        ov[i] = end - start >= min_samples;"
    return _row_wise(func, ct, head, params, inner, nullable, keyed)


def _row_wise(func: str, ct: str, head: list[str], params: list[tuple[str, str]], inner: str,
              nullable: bool, keyed: bool) -> ScanProgram:  # fmt: skip
    """The one kernel of a window scan: ``inner`` computes row ``i`` from ``[start, end)``."""
    # positions of the group only: its rows are contiguous, and the window holds row i
    clip = """while (start < i && !SAME(i, start)) ++start;
        while (end - 1 > i && !SAME(i, end - 1)) --end;
        """ if keyed else ""
    inner = inner.replace("VALID(k)", "VALID(ORD(k))").replace("x[k]", "x[ORD(k)]")
    inner = inner.replace("out[i]", "out[row]").replace("ov[i]", "ov[row]")
    body = f"""{_signature("scan_rolling", params)} {{
    // one row per thread: its window [i - offset, i - offset + window) read in full, the
    // rows before the block's first row (its halo) included
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        long long start = i - offset;
        long long end = window > 0 ? start + window : start;
        if (start < 0) start = 0;
        if (end > n) end = n;
        if (end < start) end = start;
        {clip}const long long row = ORD(i);
        long long count = 0;
        {inner}
    }}
}}
"""
    source = "\n".join(head) + "\n\n" + body
    return ScanProgram(func, source, (_kernel("scan_rolling", params, source),), False, True,
                       nullable, ct)  # fmt: skip
