"""Hypothesis: invariants of one-hot blocks and ids on arbitrary categorical columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.io.encoders import NULL_ID, RARE_ID
from colbridge.io.fuse import FeatureSpec, fit_stats, transform_batch

values = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "é", ""])),
                  max_size=60)  # fmt: skip
options = st.fixed_dictionaries(
    {
        "min_frequency": st.one_of(st.none(), st.integers(1, 6),
                                   st.floats(0.01, 0.99, allow_nan=False)),
        "max_categories": st.one_of(st.none(), st.integers(1, 5)),
    }
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(train=values, test=values, opts=options, dictionary=st.booleans())
def test_one_hot_invariants(train: list, test: list, opts: dict, dictionary: bool) -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"c": {"one_hot": True, "handle_unknown": "infrequent_if_exist", **opts}}}
    )
    tr = pa.array(train, type=pa.string())
    te = pa.array(test, type=pa.string())
    stats = fit_stats(pa.table({"c": tr.dictionary_encode() if dictionary else tr}), spec)
    fb = transform_batch(pa.table({"c": te}), spec, stats)
    m = fb.features
    # a null is a category of its own, named <null> and sorted last
    seen = {"<null>" if v is None else v for v in train}
    # at most one 1 per row; exactly one when an infrequent column exists
    assert set(np.unique(m)) <= {0.0, 1.0}
    assert (m.sum(axis=1) <= 1).all()
    if opts["max_categories"] is not None:
        assert m.shape[1] <= opts["max_categories"]
    infrequent = fb.names and fb.names[-1] == "c=<infrequent>"
    for row, v in zip(m, test, strict=True):
        name = "<null>" if v is None else v
        if infrequent or f"c={name}" in fb.names:
            assert row.sum() == 1
        else:
            assert row.sum() == 0
    # the frequent columns are sorted (null last), and each names a category seen in training
    frequent = [n[2:] for n in fb.names if n != "c=<infrequent>"]
    values = [v for v in frequent if v != "<null>"]
    assert frequent == sorted(values) + (["<null>"] if "<null>" in frequent else [])
    assert set(frequent) <= seen


@settings(max_examples=60, deadline=None)
@given(train=values, test=values, opts=options)
def test_ids_invariants(train: list, test: list, opts: dict) -> None:
    spec = FeatureSpec.from_dict({"columns": {"c": {"ids": True, **opts}}, "dtype": "int64"})
    stats = fit_stats(pa.table({"c": pa.array(train, type=pa.string())}), spec)
    ids = transform_batch(pa.table({"c": pa.array(test, type=pa.string())}), spec, stats)
    got = ids.features[:, 0]
    counts = {v: train.count(v) for v in set(train) if v is not None}
    for v, i in zip(test, got, strict=True):
        if v is None:
            assert i == NULL_ID
        elif v not in counts:
            assert i == RARE_ID
    # ids of the vocabulary are 2, 3, ... in order of falling count
    known = {v: int(i) for v, i in zip(test, got, strict=True) if i >= 2}
    by_id = sorted(known, key=known.get)  # type: ignore[arg-type]
    assert [counts[v] for v in by_id] == sorted((counts[v] for v in by_id), reverse=True)
    if opts["max_categories"] is not None:
        assert all(i < 2 + opts["max_categories"] for i in got)
    # the same value always gets the same id
    assert len({(v, int(i)) for v, i in zip(test, got, strict=True)}) == len(set(test))
