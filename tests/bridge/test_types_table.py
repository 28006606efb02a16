from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from colbridge.errors import UnsupportedTypeError
from colbridge.types import TYPE_TABLE, lookup_type, tensor_spec, type_table_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "types.md"


def test_docs_types_md_is_generated_from_the_table():
    assert DOCS.read_text(encoding="utf-8") == type_table_markdown()


@pytest.mark.parametrize(
    ("arrow_type", "numpy", "dlpack"),
    [
        (pa.int8(), "int8", (0, 8)),
        (pa.int16(), "int16", (0, 16)),
        (pa.int32(), "int32", (0, 32)),
        (pa.int64(), "int64", (0, 64)),
        (pa.uint8(), "uint8", (1, 8)),
        (pa.uint16(), "uint16", (1, 16)),
        (pa.uint32(), "uint32", (1, 32)),
        (pa.uint64(), "uint64", (1, 64)),
        (pa.float16(), "float16", (2, 16)),
        (pa.float32(), "float32", (2, 32)),
        (pa.float64(), "float64", (2, 64)),
        (pa.bool_(), "bool", (6, 8)),
        (pa.date32(), "int32", (0, 32)),
        (pa.date64(), "int64", (0, 64)),
        (pa.timestamp("s"), "int64", (0, 64)),
        (pa.duration("ns"), "int64", (0, 64)),
        (pa.time32("ms"), "int32", (0, 32)),
        (pa.dictionary(pa.int16(), pa.string()), "int16", (0, 16)),
        (pa.list_(pa.uint8(), 4), "uint8", (1, 8)),
        (pa.fixed_shape_tensor(pa.float32(), [2, 3]), "float32", (2, 32)),
    ],
    ids=str,
)
def test_tensorable_types(arrow_type, numpy, dlpack):
    spec = tensor_spec(arrow_type)
    assert spec.dtype == np.dtype(numpy)
    assert spec.dlpack == dlpack
    assert spec.entry.tensorable


@pytest.mark.parametrize(
    ("arrow_type", "unit", "tz", "inner"),
    [
        (pa.date32(), "D", None, ()),
        (pa.date64(), "ms", None, ()),
        (pa.timestamp("us", tz="Europe/Paris"), "us", "Europe/Paris", ()),
        (pa.duration("s"), "s", None, ()),
        (pa.list_(pa.list_(pa.int32(), 2), 3), None, None, (3, 2)),
        (pa.fixed_shape_tensor(pa.int64(), [4, 5, 6]), None, None, (4, 5, 6)),
    ],
    ids=str,
)
def test_metadata_of_parametrised_types(arrow_type, unit, tz, inner):
    spec = tensor_spec(arrow_type)
    assert (spec.unit, spec.tz, spec.inner_shape) == (unit, tz, inner)


@pytest.mark.parametrize(
    ("arrow_type", "remedy"),
    [
        (pa.null(), "cast to a numeric type"),
        (pa.string(), "dictionary_encode"),
        (pa.large_string(), "dictionary_encode"),
        (pa.string_view(), "dictionary_encode"),
        (pa.binary(), "decode the bytes"),
        (pa.large_binary(), "decode the bytes"),
        (pa.binary(4), "fixed_size_list<uint8>"),
        (pa.list_(pa.float64()), "list.to_array"),
        (pa.large_list(pa.float64()), "list_flatten"),
        (pa.list_(pa.string(), 2), "cast the values"),
        (pa.struct([("x", pa.int8())]), "arr.field"),
        (pa.map_(pa.string(), pa.int8()), "unnest"),
        (pa.decimal128(10, 2), r"arr.cast\(pa.float64\(\)\)"),
        (pa.month_day_nano_interval(), "months, days"),
        (pa.run_end_encoded(pa.int32(), pa.float64()), "run_end_decode"),
    ],
    ids=str,
)
def test_unsupported_types_name_column_type_and_remedy(arrow_type, remedy):
    assert not lookup_type(arrow_type).tensorable
    with pytest.raises(UnsupportedTypeError, match=rf"column `feat` has type `.*`.*{remedy}"):
        tensor_spec(arrow_type, "feat")


def test_every_row_is_reachable_and_documented():
    kinds = {e.kind for e in TYPE_TABLE}
    assert kinds == {
        "primitive",
        "bool",
        "temporal",
        "dictionary",
        "fixed_size_list",
        "fixed_shape_tensor",
        "unsupported",
    }
    for entry in TYPE_TABLE:
        assert entry.note
        assert entry.tensorable or entry.instead
        assert entry.cupy == entry.numpy


def test_specs_are_cached_per_type_but_keep_the_concrete_type():
    assert tensor_spec(pa.float64()) is tensor_spec(pa.float64())
    assert lookup_type(pa.int8()) is lookup_type(pa.int8())
    assert tensor_spec(pa.timestamp("ms", tz="UTC")).tz == "UTC"
    assert tensor_spec(pa.timestamp("ms")).tz is None
    named = pa.list_(pa.field("x", pa.float32()), 3)
    plain = pa.list_(pa.float32(), 3)
    assert named == plain  # Arrow compares list types without child names ...
    assert str(tensor_spec(named).arrow_type) == str(named)  # ... the spec keeps its own
    assert str(tensor_spec(plain).arrow_type) == str(plain)
    with pytest.raises(UnsupportedTypeError, match="column `s`"):
        tensor_spec(pa.string(), "s")
    with pytest.raises(UnsupportedTypeError, match="column `t`"):
        tensor_spec(pa.string(), "t")  # errors name the column each time
