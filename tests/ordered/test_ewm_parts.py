"""``ewm_mean``/``ewm_var`` of one long segment in parallel parts: the sequential recurrence's rows.

Each part but the first warms up from an empty state on the rows before it; a part
whose warmed state is not, bit for bit, the state its predecessor ends in is run
again (`colbridge.backends._scan_kernels.ewm_mean_split`). The oracle is the
sequential kernel, compared by the bits of every non-null row, and polars through
the public API.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.backends import _scan_kernels as kernels
from colbridge.backends import scans
from colbridge.backends.groups import thread_count


def _sequential(values: np.ndarray, valid: np.ndarray, alpha: float, adjust: bool,
                min_samples: int, ignore_nulls: bool) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    n = len(values)
    out, out_valid = np.empty(n, values.dtype), np.empty(n, np.bool_)
    kernels.ewm_mean(values, valid, None, np.array([[0, n, 0, n]]), values.dtype.type(alpha),
                     adjust, min_samples, ignore_nulls, out, out_valid)  # fmt: skip
    return out, out_valid


def _split(values: np.ndarray, valid: np.ndarray, parts: int, warm: int, alpha: float,
           adjust: bool, min_samples: int,
           ignore_nulls: bool) -> tuple[np.ndarray, np.ndarray, int]:  # fmt: skip
    n = len(values)
    out, out_valid = np.empty(n, values.dtype), np.empty(n, np.bool_)
    starts = np.linspace(0, n, parts + 1).astype(np.int64)
    again = kernels.ewm_mean_split(values, valid, starts, warm, values.dtype.type(alpha),
                                   adjust, min_samples, ignore_nulls, out,
                                   out_valid)  # fmt: skip
    return out, out_valid, again


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.int32 if values.dtype == np.float32 else np.int64)


@st.composite
def _columns(draw: st.DrawFn, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values (NaN, inf or -0.0 among them), their validity, and a segment's part starts."""
    n = draw(st.integers(0, rows))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    values = (rng.standard_normal(n) * 1e3 + draw(st.sampled_from([0.0, 200.0]))).astype(dtype)
    valid = rng.random(n) >= draw(st.sampled_from([0.0, 0.2, 0.97]))
    special = draw(st.sampled_from([None, np.nan, np.inf, -0.0]))
    if n and special is not None:
        values[rng.integers(0, n, 3)] = special
    parts = max(1, min(draw(st.integers(1, 6)), n))
    return values, valid, np.linspace(0, n, parts + 1).astype(np.int64)


#: what both kinds of parts vary the same way
_WARM = st.sampled_from([0, 3, 40, 400])
_ALPHA = st.sampled_from([0.05, 0.3, 0.9, 1.0])


@settings(max_examples=60, deadline=None)
@given(column=_columns(6000), warm=_WARM, alpha=_ALPHA, adjust=st.booleans(),
       ignore_nulls=st.booleans(), min_samples=st.sampled_from([0, 1, 7, 500]))
def test_parts_give_the_sequential_bits(column: tuple[np.ndarray, ...], warm: int, alpha: float,
                                        adjust: bool, ignore_nulls: bool,
                                        min_samples: int) -> None:  # fmt: skip
    values, valid, starts = column
    want, want_valid = _sequential(values, valid, alpha, adjust, min_samples, ignore_nulls)
    got, got_valid, _ = _split(values, valid, len(starts) - 1, warm, alpha, adjust,
                               min_samples, ignore_nulls)  # fmt: skip
    np.testing.assert_array_equal(got_valid, want_valid)
    np.testing.assert_array_equal(_bits(got)[want_valid], _bits(want)[want_valid])


def test_parts_meet_without_running_again() -> None:
    """Where the means forget fast, the warmed parts are kept: the work is parallel."""
    rng = np.random.default_rng(7)
    values = rng.standard_normal(200_000)
    valid = rng.random(200_000) >= 0.1
    warm = scans._ewm_warm_rows(0.1)
    got, _, again = _split(values, valid, 4, warm, 0.1, True, 0, False)
    want, want_valid = _sequential(values, valid, 0.1, True, 0, False)
    assert again == 0
    np.testing.assert_array_equal(_bits(got)[want_valid], _bits(want)[want_valid])


def test_a_part_behind_a_nan_runs_again() -> None:
    """A NaN far before a part makes every later mean NaN, which no warm-up reaches."""
    values = np.ones(100_000)
    values[10] = np.nan
    valid = np.ones(100_000, dtype=np.bool_)
    got, _, again = _split(values, valid, 4, 100, 0.5, True, 0, False)
    assert again == 3
    assert np.isnan(got[10:]).all()


@settings(max_examples=40, deadline=None)
@given(column=_columns(5000), warm=_WARM, alpha=_ALPHA, adjust=st.booleans(),
       bias=st.booleans(), std=st.booleans(), ignore_nulls=st.booleans(),
       min_samples=st.sampled_from([0, 1, 9]))
def test_variance_parts_give_the_sequential_bits(column: tuple[np.ndarray, ...], warm: int,
                                                 alpha: float, adjust: bool, bias: bool,
                                                 std: bool, ignore_nulls: bool,
                                                 min_samples: int) -> None:  # fmt: skip
    values, valid, starts = column
    n, a = len(values), values.dtype.type(alpha)
    want, want_valid = np.empty(n, values.dtype), np.empty(n, np.bool_)
    kernels.ewm_var(values, valid, None, np.array([[0, n, 0, n]]), a, adjust, bias,
                    min_samples, ignore_nulls, std, want, want_valid)  # fmt: skip
    got, got_valid = np.empty(n, values.dtype), np.empty(n, np.bool_)
    kernels.ewm_var_split(values, valid, starts, warm, a, adjust, bias, min_samples,
                          ignore_nulls, std, got, got_valid)  # fmt: skip
    np.testing.assert_array_equal(got_valid, want_valid)
    np.testing.assert_array_equal(_bits(got)[want_valid], _bits(want)[want_valid])


@pytest.mark.parametrize(("function", "kernel", "options"), [
    ("ewm_mean", "ewm_mean_split", dict(alpha=0.2)),
    ("ewm_mean", "ewm_mean_split", dict(span=30, adjust=False)),
    ("ewm_mean", "ewm_mean_split", dict(com=5, ignore_nulls=True, min_samples=3)),
    ("ewm_std", "ewm_var_split", dict(alpha=0.1)),
    ("ewm_var", "ewm_var_split", dict(half_life=4, bias=True, min_samples=5)),
])  # fmt: skip
def test_long_frame_equals_polars_and_the_sequential_scan(
        function: str, kernel: str, options: dict[str, float],
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A frame long enough to run in parts: polars' result, the sequential scan's bits."""
    rng = np.random.default_rng(3)
    n = 4 * scans._EWM_SPLIT_ROWS + 17
    x = np.where(rng.random(n) < 0.15, None, rng.standard_normal(n) * 100 + 10)
    df = pl.DataFrame({"x": pl.Series(x.tolist(), dtype=pl.Float64)})
    calls = []
    split = getattr(kernels, kernel)
    monkeypatch.setattr(kernels, kernel, lambda *a: calls.append(1) or split(*a))
    got = df.gpu.select(y=getattr(cb.col("x"), function)(**options)).compute()
    assert calls == ([1] if thread_count() > 1 else [])  # in parts wherever there are threads
    want = df.select(y=getattr(pl.col("x"), function)(**options))
    assert got["y"].is_null().to_list() == want["y"].is_null().to_list()
    np.testing.assert_allclose(got["y"].to_numpy(), want["y"].to_numpy(), rtol=1e-12)
    monkeypatch.setattr(scans, "_EWM_SPLIT_ROWS", n + 1)  # one sequential segment
    one = df.gpu.select(y=getattr(cb.col("x"), function)(**options)).compute()
    assert got["y"].to_numpy().tobytes() == one["y"].to_numpy().tobytes()
