"""String-to-string functions (`str.slice`, `head`, `tail`, `strip_*`, `pad_*`, `zfill`, `replace`).

Each is applied to the distinct strings of a column's dictionary
(`colbridge.types.string_maps`); the rows keep their codes. Compared with polars
(the oracle) on generated strings: empty, whitespace of every kind Unicode and
Rust name (and the separators Python's ``strip`` takes but Rust's does not),
combining marks, signs and digits, CJK, nulls; sliced and chunked columns; every
frame kind; offsets and counts around and past the strings' lengths; results
compared, grouped, moved by ordered operations and used as branches.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import colbridge as cb
from colbridge.testing.asserts import assert_same_as_polars
from colbridge.types.string_maps import STRING_MAPS, WHITESPACE, _arrow_map, apply_string_map

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALPHABET = WHITESPACE + "\x1c\x1d\x1e\x1f\u200b\u180e" + "aAbé\u0301+-0129日本語xyz*_"
TEXT = st.text(alphabet=ALPHABET, max_size=9)


@st.composite
def string_tables(draw: st.DrawFn) -> pa.Table:
    """A table of one string column ``s``: few or many distinct values, nulls, slices, chunks."""
    pool = draw(st.lists(TEXT, min_size=1, max_size=12))
    n = draw(st.sampled_from([0, 1, 5, 17, 40]))
    offset = draw(st.sampled_from([0, 3]))
    values = draw(st.lists(st.one_of(st.none(), st.sampled_from(pool)),
                           min_size=n + offset, max_size=n + offset))  # fmt: skip
    kind = draw(st.sampled_from([pa.string(), pa.large_string()]))
    table = pa.table({"s": pa.array(values, type=kind)}).slice(offset, n)
    if n > 2 and draw(st.booleans()):
        cut = draw(st.integers(1, n - 1))
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    return table


COUNT = st.integers(-12, 12)
LENGTH = st.integers(0, 12)
CHARS = st.one_of(st.none(), st.text(alphabet=" a\u0301é-0\t\u3000\x1c", max_size=3))


@SETTINGS
@given(table=string_tables(), offset=COUNT, length=st.one_of(st.none(), LENGTH), n=COUNT,
       width=LENGTH, chars=CHARS, fill=st.sampled_from([" ", "*", "é", "0"]))  # fmt: skip
def test_each_function_equals_polars(table: pa.Table, offset: int, length: int | None, n: int,
                                     width: int, chars: str | None, fill: str) -> None:  # fmt: skip
    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.with_columns(
            sliced=s.str.slice(offset, length), head=s.str.head(n), tail=s.str.tail(n),
            strip=s.str.strip_chars(chars), start=s.str.strip_chars_start(chars),
            end=s.str.strip_chars_end(chars), pre=s.str.strip_prefix(chars or "a"),
            suf=s.str.strip_suffix(chars or "a"), lpad=s.str.pad_start(width, fill),
            rpad=s.str.pad_end(width, fill), zeros=s.str.zfill(width),
            rep=s.str.replace(chars or "", fill, literal=True, n=max(n, 0)),
            rep_all=s.str.replace_all(chars or "a", fill + "$1", literal=True),
            plain=s.str.replace_all("é", "e"), dash=s.str.replace("-", ""),
            spaces=s.str.replace_all(" a", "#&~"),
            hex=s.str.encode("hex"), b64=s.str.encode("base64"),
            b64_len=s.str.encode("base64").str.len_bytes(), rev=s.str.reverse(),
        )

    assert_same_as_polars(table, steps)


@SETTINGS
@given(table=string_tables(), offset=COUNT, n=COUNT)
def test_results_compare_group_and_move_as_strings(table: pa.Table, offset: int, n: int) -> None:
    # equal results of different strings are one string: in comparisons, groups, joins
    # of dictionaries (`when`, `fill_null`) and the strings an ordered operation moves
    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        head = s.str.head(n)
        return q.with_columns(
            eq=head == "a", lt=s.str.slice(offset, 2) < "b",
            isin=s.str.strip_chars().is_in(["", "a", "é"]), nchars=head.str.len_chars(),
            upper=s.str.tail(n).str.to_uppercase(), chain=s.str.zfill(4).str.slice(offset),
            pick=m.when(s.str.len_bytes() > 2).then(head).otherwise(s.str.strip_chars("a")),
            filled=s.str.pad_end(3, "*").fill_null("none"), prev=head.shift(1),
            low=head.cum_min(), cnt=m.len().over(head),
        )

    assert_same_as_polars(table, steps)

    def grouped(m: Any, q: Any) -> Any:
        key = m.col("s").str.slice(offset, 1)
        return q.group_by(key.alias("k"), maintain_order=True).agg(n=m.len())

    assert_same_as_polars(table, grouped, kinds=("polars", "pyarrow"))


def test_the_string_language_reads_them() -> None:
    df = pl.DataFrame({"s": [" UA1 ", "AA22", None, "dl"]})
    text = "\n".join(f"{name} = {expr}" for name, expr in (
        ("a", "s.str.slice(1, 2)"), ("b", "s.str.strip_chars()"), ("c", "s.str.zfill(6)"),
        ("d", "s.str.pad_start(6, '-')"), ("e", "s.str.head(-1)"), ("f", "s.str.tail(2)"),
        ("g", "s.str.strip_chars_end(' 1')"), ("h", "s.str.strip_prefix('A')"),
        ("i", "s.str.replace_all('A', '')"),
    ))  # fmt: skip
    got = df.gpu.eval(text)  # the accessor's `eval` computes
    s = pl.col("s")
    want = df.with_columns(a=s.str.slice(1, 2), b=s.str.strip_chars(), c=s.str.zfill(6),
                           d=s.str.pad_start(6, "-"), e=s.str.head(-1), f=s.str.tail(2),
                           g=s.str.strip_chars_end(" 1"), h=s.str.strip_prefix("A"),
                           i=s.str.replace_all("A", ""))  # fmt: skip
    assert got.rows() == want.rows()


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [
        (lambda s: s.str.slice(0, -1), cb.SchemaError, r"`str.slice\(length=-1\)`: .* >= 0"),
        (lambda s: s.str.pad_start(3, "ab"), cb.SchemaError, "takes one character"),
        (lambda s: s.str.zfill(-2), cb.SchemaError, r"`str.zfill\(length=-2\)`: .* >= 0"),
        (lambda s: s.str.head(1.5), cb.SchemaError, "takes an integer, got 1.5"),
        (lambda s: s.str.strip_prefix(cb.col("t")), cb.SchemaError, "takes a string"),
        (lambda s: s.str.strip_chars(3), cb.SchemaError, "takes a string, got 3"),
        (lambda s: s.str.replace("a", "b", n=1.0), cb.SchemaError, "takes an integer, got 1.0"),
        (lambda s: s.str.encode("utf16"), cb.SchemaError, "'hex' or 'base64'"),
    ],
)
def test_bad_arguments_are_refused_when_written(build: Any, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        build(cb.col("s"))


def test_other_types_are_refused_naming_the_cast() -> None:
    df = pl.DataFrame({"c": pl.Series(["a", "b"], dtype=pl.Categorical), "x": [1, 2]})
    with pytest.raises(cb.SchemaError, match=r"cast it first with `\.cast\(pl\.String\)`"):
        df.gpu.with_columns(y=cb.col("c").str.slice(0, 1)).compute()
    with pytest.raises(cb.SchemaError, match="needs a String"):
        df.gpu.with_columns(y=cb.col("x").str.zfill(3)).compute()


def test_the_cuda_kernels_read_the_mapped_dictionary() -> None:
    # the dictionary is made on the host for every device; the CUDA kernels (run on the
    # host runtime, compiled by g++) gather by code
    from colbridge.testing.cuda_host import compute_on_host

    table = pa.table({"s": pa.array([" UA ", "UAL", None, "AA", "ua"]), "g": [1, 2, 1, 2, 1]})

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        return q.with_columns(k=s.str.strip_chars().str.head(2) == "UA",
                              t=s.str.slice(-2).str.pad_start(4, "*"),
                              u=s.str.zfill(5).shift(1).over("g"),
                              r=s.str.reverse().str.to_uppercase() == "LAU")  # fmt: skip

    q = steps(cb, cb.lazy(table))
    got = compute_on_host(q)
    want = steps(pl, pl.from_arrow(table).lazy()).collect()  # type: ignore[union-attr]
    assert pl.from_arrow(got).rows() == want.rows()  # type: ignore[union-attr]
    assert q.last_report is not None
    # the keyed shift of the zero-filled strings and the row pass both ran as CUDA kernels
    kernels = [k for k in q.last_report.stats.kernels if not k.startswith("group ids")]
    assert len(kernels) == 2
    assert kernels[0].startswith('scan [col("s").shift(1, None).over(col("g"))]')
    assert "generated CUDA scan on the device" in kernels[0]
    assert kernels[1].startswith("cuda elementwise[k, t, u, r] over 2 input(s)")


def test_two_functions_of_one_column_are_two_strings() -> None:
    # the same codes under two dictionaries: kept apart (they were once one node, and a
    # comparison of the two read one dictionary for both)
    df = pl.DataFrame({"s": ["Abc", "dEf", None, "ghI"], "g": [1, 2, 1, 2]})

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s")
        up, low = s.str.to_uppercase(), s.str.to_lowercase()
        return q.with_columns(
            same=up == low, pick=m.when(s.str.len_bytes() > 2).then(up).otherwise(low),
            cut=s.str.head(1) == s.str.slice(0, 2), first=low.cum_min(),
            last=s.str.tail(1).cum_max(reverse=True).over("g"), plain=s.cum_max(),
            upper=up.cum_max(), both=s.cum_min() == low.cum_min(),
        )

    assert_same_as_polars(df.to_arrow(), steps)


CASED = st.text(alphabet="aAzZ ßΣσςΟΔİıŉﬀǅé\u0301.", max_size=8)


@SETTINGS
@given(values=st.lists(st.one_of(st.none(), CASED), max_size=20), categorical=st.booleans())
def test_case_mappings_are_polars_full_mappings(values: list[str | None],
                                                categorical: bool) -> None:  # fmt: skip
    """``to_uppercase``/``to_lowercase`` map as polars (Rust): "ß" to "SS", a final sigma."""
    df = pl.DataFrame({"s": values}, schema={"s": pl.String})
    if categorical:
        df = df.with_columns(pl.col("s").cast(pl.Categorical))

    def steps(m: Any, q: Any) -> Any:
        s = m.col("s").cast(pl.String) if categorical else m.col("s")
        return q.select(up=s.str.to_uppercase(), low=s.str.to_lowercase(),
                        n=s.str.to_uppercase().str.len_chars())  # fmt: skip

    assert_frame_equal(steps(cb, df.gpu).compute(), steps(pl, df))
    assert steps(cb, pl.DataFrame({"s": ["Straße", "ΟΔΟΣ"]}).gpu).compute().rows() == [
        ("STRASSE", "straße", 7), ("ΟΔΟΣ", "οδος", 4)]  # fmt: skip


#: each map Arrow's kernels take, and a strategy of its parameters
ARROW_MAPS = {
    "strip_chars": st.tuples(CHARS),
    "strip_chars_start": st.tuples(CHARS),
    "strip_chars_end": st.tuples(CHARS),
    "pad_start": st.tuples(LENGTH, st.sampled_from([" ", "*", "é", "0", "日"])),
    "pad_end": st.tuples(LENGTH, st.sampled_from([" ", "*", "é", "0", "日"])),
    "zfill": st.tuples(LENGTH),
    "replace": st.tuples(TEXT, TEXT, st.integers(-1, 3)),
    "replace_all": st.tuples(TEXT, TEXT),
    "strip_prefix": st.tuples(TEXT),
    "strip_suffix": st.tuples(TEXT),
    "affix": st.tuples(TEXT, TEXT),
    "replace_values": st.integers(0, 4).flatmap(
        lambda k: st.tuples(st.tuples(*[TEXT] * k), st.tuples(*[TEXT] * k))),
    "to_titlecase": st.just(()),  # Arrow's of ASCII strings, Python's of the others
    "reverse": st.just(()),  # Arrow's of ASCII strings without "\r\n", Python's of the others
    "normalize": st.tuples(st.sampled_from(["NFC", "NFKC", "NFD", "NFKD"])),
}
ASCII_TEXT = st.text(alphabet=" \t'-.,+0129aAbBxyzZ_", max_size=9)


@SETTINGS
@given(name=st.sampled_from(sorted(ARROW_MAPS)), data=st.data(),
       values=st.lists(st.one_of(TEXT, ASCII_TEXT), max_size=30))  # fmt: skip
def test_arrow_maps_give_the_python_functions_answers(name: str, data: st.DataObject,
                                                      values: list[str]) -> None:  # fmt: skip
    """A map run by Arrow's kernels equals its Python function (`STRING_MAPS`), string by
    string, and Arrow runs it wherever ``_arrow_map`` says it can."""
    params = data.draw(ARROW_MAPS[name])
    fn = STRING_MAPS[name](*params)
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(values, kind)
        got = apply_string_map(name, params, array)
        assert got.type == kind
        assert got.to_pylist() == [fn(s) for s in values], (name, params)
    arrow = _arrow_map(name, params, pa.array(values, pa.large_string()))
    empty_pattern = name in ("replace", "replace_all") and not params[0]
    assert (arrow is None) == empty_pattern, (name, params)


def test_arrow_maps_at_their_edges() -> None:
    """Signs alone, widths below the strings, Rust's whitespace, repeated old values."""
    values = pa.array(["-", "+", "", "-12", "+x", "1-2", "\u3000a\x85", "\u200ba", "ab"],
                      pa.large_string())  # fmt: skip
    assert apply_string_map("zfill", (3,), values).to_pylist() == [
        "-00", "+00", "000", "-12", "+0x", "1-2", "\u3000a\x85", "0\u200ba", "0ab"]  # fmt: skip
    assert apply_string_map("zfill", (0,), values).to_pylist() == values.to_pylist()
    # U+200B is not White_Space (Rust keeps it); U+3000 and U+0085 are
    assert apply_string_map("strip_chars", (None,), values).to_pylist()[6:8] == ["a", "\u200ba"]
    replaced = apply_string_map("replace_values", (("ab", "", "ab"), ("1", "E", "2")), values)
    assert replaced.to_pylist()[2:] == ["E", "-12", "+x", "1-2", "\u3000a\x85", "\u200ba", "2"]
    assert apply_string_map("replace", ("-", "=", 1),
                            pa.array(["--a-", "a"], pa.large_string())).to_pylist() == [
        "=-a-", "a"]  # fmt: skip
    assert apply_string_map("replace", ("-", "=", 0),
                            pa.array(["--a-"], pa.large_string())).to_pylist() == ["--a-"]
    empty = pa.array([], pa.large_string())
    assert all(len(apply_string_map(n, p, empty)) == 0 for n, p in [
        ("zfill", (3,)), ("strip_prefix", ("a",)), ("affix", ("a", "b")), ("pad_end", (2, "x"))])


@SETTINGS
@given(values=st.lists(st.one_of(CASED, ASCII_TEXT, TEXT), max_size=30))
def test_case_mappings_of_ascii_in_arrow_and_the_others_in_python(values: list[str]) -> None:
    """Arrow maps the ASCII strings, Python each other one; together, Python's answers."""
    array = pa.array(values, pa.large_string())
    for name, fn in [("to_lowercase", str.lower), ("to_uppercase", str.upper),
                     ("to_titlecase", STRING_MAPS["to_titlecase"]())]:  # fmt: skip
        assert apply_string_map(name, (), array).to_pylist() == [fn(s) for s in values], name


def test_reverse_keeps_grapheme_clusters_as_polars() -> None:
    """Accents, emoji sequences, flags, Hangul, Indic conjuncts and "\r\n" stay whole."""
    texts = ["abc", "a\r\nb", "🇫🇷🇩🇪", "👨\u200d👩\u200d👧x", "e\u0301a", "각나",
             "\u0915\u094d\u0937a", None, ""]  # fmt: skip
    assert_same_as_polars(pa.table({"s": pa.array(texts, pa.string())}),
                          lambda m, q: q.select(m.col("s").str.reverse()))  # fmt: skip
