"""Strings numbered across batches and fitted categories looked up on every core.

`StringNumbers` (the encoders' categories seen so far) against a dict numbering in
order of first appearance, over many batches that grow its table and buffers;
`CategoryIndex.codes` (the transform's lookup of fitted categories) against
pyarrow's ``index_in`` on every string layout, nulls among the rows and among the
categories, categories given twice, sliced arrays and row counts that take the
threaded path; and a forged key, equal to another's in everything but the bytes past
the sixteenth, that only the byte comparison tells apart.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.io import encoder_kernels
from colbridge.io.encoders import CategoryIndex, StringNumbers

#: texts that share heads: equal first 8 or 16 bytes, NUL padding, multi-byte text
_TEXTS = [
    "", "a", "a\0", "a\0\0\0\0\0\0\0", "abcdefgh", "abcdefghi", "abcdefgh" * 2,
    "abcdefgh" * 2 + "x", "abcdefgh" * 2 + "y", "abcdefgh" * 3 + "x", "é", "日本語テキスト",
    "k00001", "k00002", " ",
]  # fmt: skip

_text = st.one_of(st.sampled_from(_TEXTS), st.text(max_size=24))


@settings(max_examples=80, deadline=None)
@given(batches=st.lists(st.lists(_text, max_size=60), max_size=6), null_at=st.integers(-1, 5))
def test_numbers_follow_first_appearance_over_batches(
    batches: list[list[str]], null_at: int
) -> None:
    numbers = StringNumbers()
    seen: dict[str | None, int] = {}
    for b, batch in enumerate(batches):
        if b == null_at:
            assert numbers.add_null() == len(seen)
            seen[None] = len(seen)
        local = list(dict.fromkeys(batch))  # a batch's distinct values, as the encoders give
        got = numbers.find(pa.array(local, pa.string()))
        for value in local:
            seen.setdefault(value, len(seen))
        assert got.tolist() == [seen[v] for v in local]
    assert len(numbers) == len(seen)
    assert numbers.values().to_pylist() == list(seen)


def test_a_table_grown_many_times_finds_every_string() -> None:
    rng = np.random.default_rng(3)
    numbers = StringNumbers()
    words = [f"w{i}" + "-long-tail" * (i % 3) for i in range(40_000)]
    seen: dict[str, int] = {}
    for _ in range(8):
        picked = list(dict.fromkeys(words[i] for i in rng.integers(0, len(words), 9_000)))
        got = numbers.find(pa.array(picked, pa.large_string()))
        for w in picked:
            seen.setdefault(w, len(seen))
        np.testing.assert_array_equal(got, [seen[w] for w in picked])
    assert numbers.values().to_pylist() == list(seen)


def test_a_string_given_twice_in_one_call_gets_its_first_number() -> None:
    numbers = StringNumbers()
    got = numbers.find(pa.array(["x", "y" * 20, "x", "y" * 20, "z"]))
    assert got.tolist() == [0, 1, 0, 1, 4]
    assert numbers.find(pa.array(["z", "y" * 20, "x"])).tolist() == [4, 1, 0]


def _expected_codes(rows: pa.Array, categories: pa.Array) -> np.ndarray:
    plain = rows.dictionary_decode() if pa.types.is_dictionary(rows.type) else rows
    found = pc.index_in(plain.cast(pa.string()), value_set=categories.cast(pa.string()))
    out = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    nulls = ~np.asarray(plain.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    out[nulls] = -2
    if categories.null_count:  # null is a category of its own
        out[nulls] = int(np.flatnonzero(~np.asarray(categories.is_valid()))[0])
    return out


@settings(max_examples=60, deadline=None)
@given(
    categories=st.lists(_text, max_size=40),
    null_category=st.integers(-1, 40),
    rows=st.integers(0, 40_000),
    null_rows=st.sampled_from([0.0, 0.1]),
    layout=st.sampled_from(["string", "large_string", "string_view", "dictionary"]),
    start=st.integers(0, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_codes_match_index_in(
    categories: list[str],
    null_category: int,
    rows: int,
    null_rows: float,
    layout: str,
    start: int,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    cats: list[str | None] = list(categories)  # repeats kept: found at their first place
    if 0 <= null_category <= len(cats):
        cats.insert(null_category, None)
    pool = [*_TEXTS, *categories, "never-fitted", "never-fitted-and-longer-than-16"]
    values = [pool[i] for i in rng.integers(0, len(pool), rows + start)]
    array = pa.array(values, pa.string(), mask=rng.random(rows + start) < null_rows)
    if layout == "dictionary":
        array = array.dictionary_encode()
    else:
        array = array.cast(getattr(pa, layout)())
    array = array.slice(start)  # an offset into the buffers
    index = CategoryIndex(cats)
    fitted = pa.array(cats, pa.string())
    np.testing.assert_array_equal(index.codes(array), _expected_codes(array, fitted))
    # and again: the table built by the first lookup is kept
    np.testing.assert_array_equal(
        index.codes(pa.chunked_array([array])), _expected_codes(array, fitted)
    )


def test_keys_equal_but_in_their_bytes_past_sixteen_are_told_apart() -> None:
    # a hash collision cannot be made on purpose: a slot is forged with the key of
    # the string looked up (hash, first 16 bytes, length), but pointing at a known
    # string whose bytes differ past the sixteenth; only the byte comparison can
    # tell them apart
    known = pa.array(["0123456789abcdefXYZ"])
    wanted = pa.array(["0123456789abcdefxyz"])
    offsets = np.asarray(wanted.buffers()[1]).view(np.int32)[:2].astype(np.int64)
    data = np.frombuffer(wanted.buffers()[2], np.uint8)
    known_offsets = np.asarray(known.buffers()[1]).view(np.int32)[:2].astype(np.int64)
    known_data = np.frombuffer(known.buffers()[2], np.uint8)
    h, head, head2, meta = encoder_kernels._string_key(offsets, data, 0)
    slots = np.zeros(4 * 8, dtype=np.uint64)
    at = int(h & np.uint64(7)) * 4
    slots[at : at + 4] = [h, head, head2, meta | np.uint64(1)]  # number 0
    out = np.empty(1, dtype=np.int64)
    encoder_kernels._find_strings(offsets, data, np.zeros(0, np.bool_), known_offsets,
                                  known_data, slots, 1, out)  # fmt: skip
    assert out[0] == -1, "a string of the same key but other bytes is not known"
    # the same slot, pointing at the string itself, is found
    out_self = np.empty(1, dtype=np.int64)
    encoder_kernels._find_strings(offsets, data, np.zeros(0, np.bool_), offsets, data, slots,
                                  1, out_self)  # fmt: skip
    assert out_self[0] == 0


def test_codes_of_many_rows_on_every_core_match_index_in() -> None:
    rng = np.random.default_rng(11)
    words = np.array([f"c{i}" + "·tail" * (i % 4) for i in range(6_000)], dtype=object)
    cats = pa.array([*words[:5_000], None], pa.string())  # the last thousand never fitted
    rows = pa.array(words[rng.integers(0, 6_000, 200_001)], pa.string(),
                    mask=rng.random(200_001) < 0.05).slice(1)  # fmt: skip
    index = CategoryIndex(cats)
    for layout in (rows, rows.cast(pa.large_string()), rows.cast(pa.string_view())):
        np.testing.assert_array_equal(index.codes(layout), _expected_codes(rows, cats))


def test_a_null_given_to_find_is_refused() -> None:
    numbers = StringNumbers()
    with pytest.raises(ValueError, match="add_null"):
        numbers.find(pa.array(["a", None]))
    assert len(numbers) == 0
