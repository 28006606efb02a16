"""Concurrency: 8 threads of mixed ``compute``/``compute_async`` on shared frames and one cache.

Results equal a serial run, each distinct kernel is compiled exactly once
(``colbridge.cache_info().compiles``), and everything finishes under a
watchdog (no deadlock).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

import colbridge as cb
from tests.reliability.fuzzing import FIGURES

WATCHDOG_S = 120


def _frames() -> dict[str, Any]:
    table = pa.table({"a": [1.0, None, 3.5, -2.0, 9.0] * 4, "b": list(range(20)),
                      "c": [True, False, None, True] * 5})  # fmt: skip
    return {"pyarrow": table, "polars": pl.from_arrow(table),
            "pandas": table.to_pandas(types_mapper=__import__("pandas").ArrowDtype)}  # fmt: skip


def _plans(salt: float) -> list[Any]:
    a, b, c = cb.col("a"), cb.col("b"), cb.col("c")
    return [
        lambda q: q.with_columns(z=a * b + salt),
        lambda q: q.with_columns(z=(a - a.mean()) / (b.std() + salt)),
        lambda q: q.with_columns(z=cb.when(c).then(a).otherwise(b * salt)).filter(b > 3),
        lambda q: q.with_columns(z=(b // 3) % 4 + salt, w=a.fill_null(salt).sqrt()),
    ]


def _as_rows(result: Any) -> str:
    """The rows as text (NaN compares equal to NaN this way), types included."""
    if isinstance(result, pl.DataFrame):
        result = result.to_arrow()
    elif not isinstance(result, pa.Table):
        result = pa.Table.from_pandas(result, preserve_index=False)
    return f"{result.schema}\n{result.to_pylist()!r}"


def _hammer(threads: int, calls: int) -> tuple[int, int, float]:
    cb.clear_cache()
    frames = _frames()
    plans = _plans(0.0) + _plans(1.5)
    work = [(kind, i) for kind in frames for i in range(len(plans))]
    # the serial answers (and the distinct kernels) first, in a fresh cache
    serial = {(k, i): _as_rows(plans[i](cb.lazy(frames[k])).compute(device="cpu"))
              for k, i in work}  # fmt: skip
    distinct = cb.cache_info().compiles
    cb.clear_cache()
    errors: list[str] = []
    done = threading.Event()

    def worker(seed: int) -> int:
        n = 0
        for j in range(calls):
            kind, i = work[(seed * 7 + j) % len(work)]
            q = plans[i](cb.lazy(frames[kind]))
            got = q.compute(device="cpu") if j % 2 else q.compute_async(device="cpu").result(60)
            if _as_rows(got) != serial[(kind, i)]:
                errors.append(f"thread {seed} call {j}: {kind} plan {i} differs")
            n += 1
        return n

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(worker, s) for s in range(threads)]
        total = sum(f.result(timeout=WATCHDOG_S) for f in futures)
    done.set()
    seconds = time.perf_counter() - start
    assert not errors, errors[:5]
    info = cb.cache_info()
    assert info.compiles == distinct, f"{info.compiles} compiles for {distinct} distinct kernels"
    return total, distinct, seconds


def test_eight_threads_by_1000_calls_match_serial_and_compile_once() -> None:
    total, distinct, seconds = _hammer(8, 1000)
    assert total == 8000
    FIGURES["concurrency_calls"] = total
    FIGURES["concurrency_distinct_kernels"] = distinct
    FIGURES["concurrency_seconds"] = round(seconds, 2)


@pytest.mark.slow
def test_sixteen_threads_by_5000_calls() -> None:
    total, _, _ = _hammer(16, 5000)
    assert total == 80_000
