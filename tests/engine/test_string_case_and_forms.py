"""String functions against polars: title case, normal forms, regex escapes, ``s + "x"``.

Each maps a dictionary's distinct strings (`colbridge.types.string_maps`). Generated
text mixes Latin, Greek and Cyrillic letters of every case, ``ß``, ``ǆ``, ligatures
(``ﬁ``), letters without case (``日``, ``א``: polars lowers the letter after them,
where Python's ``str.title`` starts a word), combining accents, digits, apostrophes,
regex metacharacters and whitespace; characters are drawn from blocks older than
Python's and Rust's Unicode tables both, so the two Unicode versions agree on them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colbridge as cb
from colbridge.errors import SchemaError
from colbridge.testing.asserts import assert_same_as_polars

_ALPHABET = (
    "abcXYZ ßǆǅǄﬁﬂŉİıΣσςΟΔΑάΐДжЖё0179'’-_.+*?()|[]{}^$#&~\\ \t\u0301\u0308\u00e9①Ⅻ日אͅª"
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.text(_ALPHABET, max_size=12)), max_size=12),
    form=st.sampled_from(["NFC", "NFKC", "NFD", "NFKD"]),
    categorical=st.booleans(),
)
def test_equal_polars(values: list[str | None], form: str, categorical: bool) -> None:
    column = pa.array(values, pa.string())
    if categorical:
        column = column.dictionary_encode()
    table = pa.table({"s": column})
    assert_same_as_polars(table, lambda m, q: q.select(
        t=m.col("s").str.to_titlecase(), n=m.col("s").str.normalize(form),
        e=m.col("s").str.escape_regex()), kinds=("polars", "pyarrow"))  # fmt: skip


def test_the_escaped_text_matches_itself_as_a_regex() -> None:
    # what `escape_regex` is for: the escaped text as a pattern finds the text literally
    text = "a.b*c+(d)|[e]{f}^$#&-~ \\ g?"
    table = pa.table({"s": [text, "axb"]})
    pattern = cb.lazy(table).select(p=cb.col("s").str.escape_regex()).compute()["p"][0].as_py()
    got = cb.lazy(table).select(hit=cb.col("s").str.contains(pattern)).compute()
    assert got["hit"].to_pylist() == [True, False]


def test_the_string_language() -> None:
    table = pa.table({"s": ["ab cD", "e\u0301", None]})
    got = cb.lazy(table).eval(
        "t = to_titlecase(s)\nn = s.str.normalize('NFC')\ne = s.str.escape_regex()"
    ).compute()
    assert got["t"].to_pylist() == ["Ab Cd", "E\u0301", None]
    assert got["n"].to_pylist() == ["ab cD", "\u00e9", None]
    assert got["e"].to_pylist() == ["ab cD", "e\u0301", None]


def test_an_unknown_form_is_refused_when_written() -> None:
    with pytest.raises(SchemaError, match=r"form 'NFX' is not a Unicode normal form.*'NFC'"):
        cb.col("s").str.normalize("NFX")


def test_the_cuda_code_path_gives_the_cpu_answers() -> None:
    from colbridge.testing.cuda_host import compute_on_host

    table = pa.table({"s": ["ab cD", "x.y", None, "ﬁ"], "g": [1, 1, 2, 2]})
    s: Any = cb.col("s")
    q = cb.lazy(table).select("g", t=s.str.to_titlecase(), n=s.str.normalize("NFKC"),
                              e=s.str.escape_regex(),
                              k=s.str.to_titlecase() == "Ab Cd",
                              j="<" + s + ">", m=(s + "!") == "x.y!")  # fmt: skip
    assert compute_on_host(q).equals(q.compute(device="cpu"))


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.text(_ALPHABET, max_size=6)), max_size=12),
    prefix=st.text(_ALPHABET, max_size=3),
    suffix=st.text(_ALPHABET, max_size=3),
    categorical=st.booleans(),
)
def test_a_text_constant_added_to_strings_joins_them(
    values: list[str | None], prefix: str, suffix: str, categorical: bool
) -> None:
    # polars' `+` of strings: a String (of a categorical too), null where the column is
    column = pa.array(values, pa.string())
    if categorical:
        column = column.dictionary_encode()
    table = pa.table({"s": column, "g": [i % 3 for i in range(len(values))]})
    assert_same_as_polars(table, lambda m, q: q.with_columns(
        a=m.col("s") + suffix, b=prefix + m.col("s"), c=m.lit(prefix) + m.col("s") + suffix,
        d=(m.col("s") + suffix) == "x", n=(prefix + m.col("s")).str.len_chars(),
        f=(m.col("s") + suffix).first().over("g")), kinds=("polars", "pyarrow"))  # fmt: skip
    assert_same_as_polars(table, lambda m, q: q.group_by("g", maintain_order=True).agg(
        k=(m.col("s") + suffix).max()), kinds=("polars",))  # fmt: skip


def test_two_string_columns_are_joined_as_concat_str() -> None:
    table = pa.table({"s": ["a", "b"], "t": ["x", None]})
    assert_same_as_polars(table, lambda m, q: q.select(j=m.col("s") + m.col("t")))
    got = cb.lazy(table).eval('u = s + "-"\nv = "<" + t').compute()
    assert got["u"].to_pylist() == ["a-", "b-"]
    assert got["v"].to_pylist() == ["<x", None]


def test_title_case_after_a_letter_without_case() -> None:
    # polars (Rust) starts a word after a character that is not alphabetic; Python's
    # `str.title` after one that is not cased: they differ after 日 or א, not after "9"
    texts = ["a日z", "aאbc", "x9y", "ΑΣ ΑΣ", "aİz", "éz", "ǆa ßb", None]
    assert_same_as_polars(pa.table({"s": pa.array(texts, pa.string())}),
                          lambda m, q: q.select(m.col("s").str.to_titlecase()))  # fmt: skip
