"""Generated CUDA kernels compile with NVRTC for sm_90 (no GPU or driver needed), and look right.

The corpus is every kernel the CUDA test corpus produces: each expression
group of `cuda_corpus` under each null pattern, plus reductions, nested
reductions and a filter (about 50 distinct kernels).
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import colbridge as cb
from colbridge.backends.cuda import _cached_binary, compile_nvrtc, compile_nvrtc_with_ptx
from colbridge.codegen.cuda import MATH_FUNCTIONS, CudaKernelSource
from colbridge.codegen.numba_cpu import _signature_args
from colbridge.errors import KernelCompileError
from colbridge.testing.cuda_host import HostRuntime, compute_on_host
from tests.cuda.cuda_corpus import CB, GROUPS, NULL_PATTERNS, make_column

ARCH = "sm_90"


def _table(types: tuple[pa.DataType, ...], pattern: tuple[bool, ...]) -> pa.Table:
    rng = np.random.default_rng(11)
    cols = {
        name: make_column(rng, t, 23, nulls)
        for name, t, nulls in zip("abc", types, pattern, strict=True)
    }
    return pa.table(cols).slice(3, 20)


def _extra(m: Any, q: Any) -> list[Any]:
    a, b = m.col("a"), m.col("b")
    return [
        q.select(
            s=a.sum(),
            mean=a.mean(),
            mn=a.min(),
            mx=a.max(),
            sd=a.std(),
            n=a.count(),
            bs=b.sum(),
            bmin=b.min(),
            bmax=b.max(),
            nc=b.null_count(),
        ),
        q.with_columns(z=(a - a.mean()) / a.std()).filter(m.col("z") > 0),
        q.filter((a > 0) & (b < 5)),
    ]


class _Recorder(HostRuntime):
    """A host runtime that keeps every kernel it is asked to load (its own cache keys)."""

    def __init__(self) -> None:
        super().__init__()
        self.kernels: dict[str, CudaKernelSource] = {}

    def load(self, kernel: CudaKernelSource) -> Any:
        self.kernels.setdefault(kernel.digest, kernel)
        return super().load(kernel)


def _corpus() -> list[CudaKernelSource]:
    runtime = _Recorder()
    for group in GROUPS:
        for pattern in NULL_PATTERNS:
            table = _table(group.types, pattern)
            compute_on_host(cb.lazy(table).with_columns(**group.exprs(CB)), runtime)
    for pattern in NULL_PATTERNS:
        table = _table((pa.float64(), pa.int64(), pa.int64()), pattern)
        for lf in _extra(CB, cb.lazy(table)):
            compute_on_host(lf, runtime)
    return list(runtime.kernels.values())


@pytest.fixture(scope="module")
def corpus() -> list[CudaKernelSource]:
    kernels = _corpus()
    assert 30 <= len(kernels) <= 80, len(kernels)
    return kernels


def test_every_corpus_kernel_compiles_with_nvrtc_for_sm90(corpus: list[CudaKernelSource]) -> None:
    start = time.perf_counter()
    sizes = [len(compile_nvrtc_with_ptx(k.source, ARCH)[0]) for k in corpus]
    elapsed = time.perf_counter() - start
    assert all(size > 1000 for size in sizes)  # real cubins, not empty output
    print(f"\nNVRTC built {len(corpus)} kernels for {ARCH} in {elapsed:.1f} s (or the cache had)")


#: math functions CUDA computes exactly (correctly rounded): a kernel calling only these has
#: no reason to contain an fma; libm functions (exp, sin, pow, ...) come from libdevice,
#: whose implementations use fma on purpose (those results get a ULP tolerance)
_EXACT_MATH = {f + suffix for f in ("sqrt", "fabs", "floor", "ceil", "rint", "trunc", "fmin",
                                    "fmax", "copysign") for suffix in ("", "f")}  # fmt: skip


def test_ptx_of_every_kernel_without_libm_calls_has_no_fused_multiply_add(
    corpus: list[CudaKernelSource],
) -> None:
    checked, contracted = 0, []
    for kernel in corpus:
        code = "\n".join(line for line in kernel.source.splitlines()
                         if not line.lstrip().startswith("//"))  # fmt: skip
        if (set(_IDENT_CALL.findall(code)) & MATH_FUNCTIONS) - _EXACT_MATH:
            continue
        ptx = compile_nvrtc_with_ptx(kernel.source, ARCH)[1]  # the cubin's own PTX
        assert ".target sm_90" in ptx
        checked += 1
        if "fma.rn" in ptx:  # --fmad=false: no contraction into fused multiply-add
            contracted.append(kernel.source.splitlines()[1])
    assert checked >= 20, checked
    assert not contracted, f"kernels with fma: {contracted}"
    # the check can fail: NVRTC's default options do contract a * b + c
    fused = 'extern "C" __global__ void k(double* x) { x[0] = x[0] * x[1] + x[2]; }\n'
    assert "fma.rn" in _nvrtc_program_ptx(fused)
    assert "fma.rn" not in compile_nvrtc(fused, "compute_90").decode()


def _nvrtc_program_ptx(source: str) -> str:
    """PTX of ``source`` compiled by NVRTC with its default (contracting) options."""
    from cupy.cuda import nvrtc

    prog = nvrtc.createProgram(source, "k.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["--gpu-architecture=compute_90"])
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else str(ptx)
    finally:
        nvrtc.destroyProgram(prog)


_IDENT_CALL = re.compile(r"\b([A-Za-z_][A-Za-z_0-9]*)\s*\(")
_ALLOWED_CALLS = MATH_FUNCTIONS | {
    "cb_floordiv", "cb_mod", "cb_ipow", "cb_isfinite", "cb_isinf", "cb_warp_sum", "cb_search",
    "elementwise", "reduce", "__longlong_as_double", "__int_as_float", "atomicAdd",
    "__ballot_sync", "__shfl_xor_sync", "__popcll", "if", "while", "for", "return",
    "bool", "float", "double", "char", "short", "int", "long", "unsigned", "signed",
}  # fmt: skip


def test_kernels_use_only_whitelisted_calls(corpus: list[CudaKernelSource]) -> None:
    for kernel in corpus:
        code = "\n".join(line for line in kernel.source.splitlines()
                         if not line.lstrip().startswith("//"))  # fmt: skip
        called = set(_IDENT_CALL.findall(code))
        assert called <= _ALLOWED_CALLS, called - _ALLOWED_CALLS
        assert "NAN" not in code
        assert "INFINITY" not in code
        assert "__expf" not in code
        assert "__fdividef" not in code
        assert 'extern "C" __global__ void' in code


def test_grid_stride_loop_one_row_per_thread_whole_warps(corpus: list[CudaKernelSource]) -> None:
    for kernel in corpus:
        assert kernel.threads_for(1000) == 1000  # one row per thread
        src = kernel.source
        # the loop runs over whole warps, so every lane reaches each warp primitive
        assert "const long long rows = (n + 31) & ~31LL;" in src
        assert "i < rows; i += stride)" in src
        assert "const long long r = in ? i : 0;" in src
        for line in src.splitlines():
            stripped = line.strip()
            # bit-packed outputs: one 32-bit ballot word per warp, written by lane 0 only
            if "__ballot_sync" in stripped:
                assert stripped.startswith("const unsigned int w")
                assert "0xffffffffu, in && (" in stripped
            if "[i >> 5]" in stripped:
                assert stripped.startswith("if ((threadIdx.x & 31) == 0)")
            # values are stored for rows that exist only; inputs are read at `r`
            if stripped.startswith("if (in) o"):
                assert "[i] = " in stripped
            assert "[i]" not in stripped or stripped.startswith("if (in) o")


def test_argument_order_matches_the_cpu_kernels(corpus: list[CudaKernelSource]) -> None:
    for kernel in corpus:
        names = [name for _, name in kernel.params]
        cpu = _signature_args(kernel.inputs, kernel.scalars)
        assert names[: len(cpu)] == cpu
        if kernel.kind == "reduce":
            assert names[len(cpu) :] == ["pf", "pi", "pu", "err"]
        else:
            assert names[-1] == "err"


def test_compile_error_shows_numbered_source_and_the_log() -> None:
    bad = 'extern "C" __global__ void k(double* x) {\n    x[0] = undefined_name;\n}\n'
    with pytest.raises(KernelCompileError) as info:
        compile_nvrtc(bad, ARCH)
    text = str(info.value)
    assert "undefined_name" in text
    assert "   2      x[0] = undefined_name;" in text
    assert "--fmad=false" in text


def test_disk_cache_compiles_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                  corpus: list[CudaKernelSource]) -> None:  # fmt: skip
    monkeypatch.setenv("COLBRIDGE_CACHE_DIR", str(tmp_path))
    first = _cached_binary(corpus[1].source, ARCH)
    stamp = first.stat().st_mtime_ns
    again = _cached_binary(corpus[1].source, ARCH)
    assert again == first
    assert again.stat().st_mtime_ns == stamp
    assert first.parent == tmp_path / "cuda"
    assert first.name.endswith("_sm_90.cubin")
    other = _cached_binary(corpus[1].source, "compute_90")
    assert other != first
    assert other.suffix == ".ptx"
    # a cubin's PTX is kept beside it; one cached without it is built again, with it
    ptx = first.with_suffix(".ptx")
    assert compile_nvrtc_with_ptx(corpus[1].source, ARCH) == (first.read_bytes(), ptx.read_text())
    assert f".entry {corpus[1].name}(" in ptx.read_text()
    ptx.unlink()
    cubin, text = compile_nvrtc_with_ptx(corpus[1].source, ARCH)
    assert ptx.read_text() == text
    assert first.read_bytes() == cubin
    assert f".entry {corpus[1].name}(" in text


def test_cuda_kernels_take_literals_as_arguments() -> None:
    import polars as pl

    import colbridge as cb
    from colbridge.testing.cuda_host import HostRuntime, compute_on_host

    df = pl.DataFrame({"x": [1.0, None, 4.0], "i": pl.Series([1, 2, 3], dtype=pl.Int16)})

    def query(scale: float, offset: int):  # type: ignore[no-untyped-def]
        return df.gpu.with_columns(z=cb.col("x") * scale + offset, w=cb.col("i") * offset)

    def kernel(scale: float, offset: int) -> str:
        text = query(scale, offset).explain(source=True, target="cuda")
        return text[text.index("elementwise kernel source") :]

    assert kernel(2.5, 3) == kernel(-0.125, 40)  # one source, hence one compiled kernel
    assert "p0" in kernel(2.5, 3)
    for scale, offset in [(2.5, 3), (-0.125, 40)]:
        got = compute_on_host(query(scale, offset), HostRuntime())
        x, i = pl.col("x"), pl.col("i")
        assert got.equals(df.with_columns(z=x * scale + offset, w=i * offset))
