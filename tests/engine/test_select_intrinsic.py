"""`numba_intrinsics.select`: the kernels' select, typed and valued as numba's ``a if c else b``.

The generated CPU kernels write every select of two computed values with it
(`colbridge.codegen.numba_cpu.NumbaDialect.select`). It must give the type numba's
ternary gives (numba unifies the two sides: int64 with uint64 is float64) and the
same value, for every pair of the kernels' scalar types and conditions that are
booleans or integers (true when not zero).
"""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

from colbridge.codegen.numba_intrinsics import select

SCALARS = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float32, np.float64]  # fmt: skip


@numba.njit
def _intrinsic(c, a, b):  # type: ignore[no-untyped-def]
    return select(c, a, b)


@numba.njit
def _ternary(c, a, b):  # type: ignore[no-untyped-def]
    return a if c else b


def _values(kind: type) -> list[object]:
    if kind is np.bool_:
        return [np.bool_(True), np.bool_(False)]
    if np.issubdtype(kind, np.floating):
        return [kind(-1.5), kind(np.nan), kind(-0.0), kind(np.inf)]
    info = np.iinfo(kind)
    return [kind(info.min), kind(info.max), kind(0)]


@pytest.mark.parametrize(("left", "right"), list(itertools.combinations_with_replacement(
    SCALARS, 2)), ids=lambda k: k.__name__)  # fmt: skip
def test_select_types_and_values_as_the_ternary(left: type, right: type) -> None:
    for a, b in itertools.product(_values(left), _values(right)):
        for c in (True, False, np.uint64(2), np.uint64(0)):
            got, want = _intrinsic(c, a, b), _ternary(c, a, b)
            assert type(got) is type(want), (c, a, b)
            assert got == want or (got != got and want != want), (c, a, b, got, want)
            if isinstance(want, float) and want == 0:
                assert np.signbit(got) == np.signbit(want)  # -0.0 kept


def test_select_refuses_what_the_kernels_never_select() -> None:
    with pytest.raises(numba.core.errors.TypingError):
        _intrinsic(True, np.zeros(2), np.zeros(2))
