"""The intrinsics of the generated CPU kernels: `validity_word` and `popcount`.

`validity_word` against NumPy on random bitmaps of every length from 0 to 40 bytes,
at bit offsets from 0 to 100 (so words start mid-byte, in the last nine bytes, at the
end and past it), with the offset and word index given as signed and unsigned
integers; `popcount` against Python's `int.bit_count` on words of every integer type.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.codegen.numba_intrinsics import popcount, validity_word


@numba.njit(cache=False)
def _words_unsigned(bits, offset, count):  # type: ignore[no-untyped-def]
    out = np.empty(count, np.uint64)
    for w in range(count):
        out[w] = validity_word(bits, np.uint64(offset), np.uint64(w))
    return out


@numba.njit(cache=False)
def _words_signed(bits, offset, count):  # type: ignore[no-untyped-def]
    out = np.empty(count, np.uint64)
    for w in range(count):
        out[w] = validity_word(bits, np.int64(offset), w)
    return out


def _expected(bits: np.ndarray, offset: int, count: int) -> np.ndarray:
    """Bit ``offset + 64 w + k`` of the bitmap (least significant first) as bit k of word w."""
    flags = np.unpackbits(bits, bitorder="little")
    padded = np.zeros(offset + 64 * count, dtype=np.uint8)
    take = max(min(flags.size, padded.size), 0)
    padded[:take] = flags[:take]
    words = padded[offset:].reshape(count, 64).astype(np.uint64)
    return (words << np.arange(64, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


@settings(max_examples=300, deadline=None)
@given(size=st.integers(0, 40), offset=st.integers(0, 100), seed=st.integers(0, 2**32 - 1))
def test_words_match_numpy(size: int, offset: int, seed: int) -> None:
    bits = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)
    count = (size * 8 - offset) // 64 + 2 if size * 8 > offset else 1  # one past the end
    want = _expected(bits, offset, count)
    np.testing.assert_array_equal(_words_unsigned(bits, offset, count), want)
    np.testing.assert_array_equal(_words_signed(bits, offset, count), want)


def test_every_offset_of_a_full_bitmap() -> None:
    bits = np.full(24, 0xFF, dtype=np.uint8)
    bits[5] = 0b1011_0110
    bits[-1] = 0b1000_0001
    for offset in range(0, 24 * 8 + 1):
        count = max((24 * 8 - offset + 63) // 64, 1)
        want = _expected(bits, offset, count)
        np.testing.assert_array_equal(_words_unsigned(bits, offset, count), want, str(offset))


@numba.njit(cache=False)
def _counts(words):  # type: ignore[no-untyped-def]
    out = np.empty(words.size, np.int64)
    for i in range(words.size):
        out[i] = popcount(words[i])
    return out


@pytest.mark.parametrize("dtype", [np.uint64, np.int64, np.uint32, np.int8])
def test_popcount_counts_the_set_bits(dtype: type) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    words = np.concatenate([np.array([0, 1, info.max, info.min, -1 if info.min else 0], dtype),
                            rng.integers(info.min, info.max, 200, dtype=dtype, endpoint=True)])
    # a negative word counts as its 64-bit two's complement (it is read as uint64)
    want = [(int(w) % 2**64).bit_count() for w in words]
    assert _counts(words).tolist() == want
