"""Date/time parts as features (``datetime=``, ``cyclical=``), against polars and NumPy.

Polars is the oracle of the parts (``dt.hour()``, ``dt.weekday()`` Monday 1 …, local
fields of a time-zoned datetime); NumPy's ``sin``/``cos`` of ``2π·v/period`` that of
the cyclical pairs.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from colbridge.cli import main
from colbridge.errors import JobSpecError, UnsupportedTypeError
from colbridge.io.fuse import (
    FeatureSpec,
    explain_fuse,
    fit_stats,
    iter_features,
    transform_batch,
)
from colbridge.ml import FeatureFusion

DATE_PARTS = ["month", "weekday", "day", "ordinal_day"]
TIME_PARTS = ["hour", "minute"]
ALL_PARTS = DATE_PARTS + TIME_PARTS
#: The parts each test column has.
PARTS = {"ts": ALL_PARTS, "tz": ALL_PARTS, "ns": ALL_PARTS, "d": DATE_PARTS, "t": TIME_PARTS}
DAY_US = 86_400_000_000
# 1906 .. 2096, before and after the epoch
LO_US, HI_US = -2_000_000_000 * 1_000_000, 4_000_000_000 * 1_000_000


def make_dates(n: int, seed: int = 0, null_rate: float = 0.1) -> pa.Table:
    """Instants as a naive, two zoned (one with a 30-minute DST) datetimes, a date, a time."""
    rng = np.random.default_rng(seed)
    us = rng.integers(LO_US, HI_US, n)
    mask = rng.random(n) < null_rate
    return pa.table(
        {
            "ts": pa.array(us, pa.timestamp("us"), mask=mask),
            "tz": pa.array(us, pa.timestamp("us", "America/New_York"), mask=mask),
            "ns": pa.array(us * 1000, pa.timestamp("ns", "Australia/Lord_Howe"), mask=mask),
            "d": pa.array((us // DAY_US).astype(np.int32), pa.date32(), mask=mask),
            "t": pa.array((us % DAY_US) * 1000, pa.time64("ns"), mask=mask),
            "x": rng.normal(size=n),
        }
    )


TABLE = make_dates(3_000, seed=1)


def polars_parts(column: pa.Array | pa.ChunkedArray, parts: list[str]) -> np.ndarray:
    """The parts as polars computes them; NaN where the value is null."""
    s = pl.Series(column)
    out = [getattr(s.dt, p)().cast(pl.Float64).fill_null(np.nan).to_numpy() for p in parts]
    return np.column_stack(out)


def cyclical_oracle(column: pa.Array | pa.ChunkedArray, parts: list[str]) -> np.ndarray:
    """``sin``, ``cos`` of ``2π·v/period`` per part, from polars' parts (NaN for null)."""
    s = pl.Series(column)
    out = []
    for p in parts:
        v = getattr(s.dt, p)().cast(pl.Float64).fill_null(np.nan).to_numpy()
        if p in ("month", "weekday", "day", "ordinal_day"):
            v = v - 1
        period: Any = {"month": 12, "weekday": 7, "hour": 24, "minute": 60}.get(p)
        if p == "day":
            period = s.dt.days_in_month().cast(pl.Float64).fill_null(np.nan).to_numpy()
        if p == "ordinal_day":
            period = 365 + s.dt.is_leap_year().cast(pl.Float64).fill_null(np.nan).to_numpy()
        angle = 2 * np.pi * v / period
        out += [np.sin(angle), np.cos(angle)]
    return np.column_stack(out)


def _frame(table: pa.Table, kind: str) -> Any:
    if kind == "polars":
        return pl.from_arrow(table)
    if kind == "pandas":
        return table.to_pandas()
    if kind == "sliced":  # offsets that are not multiples of 8 in the validity bitmaps
        return table.slice(5)
    if kind == "chunked":
        n = table.num_rows
        return pa.Table.from_batches(table.slice(0, n // 3).to_batches()
                                     + table.slice(n // 3).to_batches())  # fmt: skip
    return table


def _oracle_table(kind: str) -> pa.Table:
    return TABLE.slice(5) if kind == "sliced" else TABLE


KINDS = ["pyarrow", "polars", "pandas", "sliced", "chunked"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(PARTS))
def test_parts_match_polars(name: str, kind: str) -> None:
    parts = PARTS[name]
    ff = FeatureFusion([], datetime={name: parts}, dtype="float64")
    got = ff.fit_transform(_frame(TABLE, kind).select([name]) if kind != "pandas"
                           else _frame(TABLE.select([name]), kind))  # fmt: skip
    want = polars_parts(_oracle_table(kind)[name], parts)
    valid = ~np.isnan(want[:, 0])
    assert (~valid).any()
    assert valid.any()
    np.testing.assert_array_equal(got[valid], want[valid])
    assert list(ff.get_feature_names_out()) == [f"{name}_{p}" for p in parts]


@pytest.mark.parametrize("kind", ["pyarrow", "polars", "pandas"])
@pytest.mark.parametrize("name", list(PARTS))
def test_cyclical_pairs_match_numpy(name: str, kind: str) -> None:
    parts = PARTS[name]
    ff = FeatureFusion([name], datetime={name: parts}, cyclical=[name], dtype="float64")
    got = ff.fit_transform(_frame(TABLE.select([name]), kind))
    want = cyclical_oracle(TABLE[name], parts)
    valid = ~np.isnan(want[:, 0])
    np.testing.assert_allclose(got[valid], want[valid], rtol=0, atol=1e-12)
    names = list(ff.get_feature_names_out())
    assert names == [f"{name}_{p}_{f}" for p in parts for f in ("sin", "cos")]
    # a pair is a point on the unit circle, and distinct values of a part are distinct points
    np.testing.assert_allclose(got[valid, 0::2] ** 2 + got[valid, 1::2] ** 2, 1.0, atol=1e-12)


def test_float32_matrix() -> None:
    ff = FeatureFusion(["tz"], datetime={"tz": ["hour", "weekday"]}, cyclical=["tz"])
    got = ff.fit_transform(TABLE)
    assert got.dtype == np.float32
    want = cyclical_oracle(TABLE["tz"], ["hour", "weekday"])
    valid = ~np.isnan(want[:, 0])
    np.testing.assert_allclose(got[valid], want[valid].astype(np.float32), rtol=0, atol=1e-6)


def test_nulls_validity_fill_null_and_indicator() -> None:
    spec = FeatureSpec.from_dict(
        {
            "columns": {
                "ts": {"datetime": ["hour", "month"], "indicator": True},
                "tz": {"datetime": ["weekday"], "cyclical": True, "fill_null": -5.0},
            },
            "dtype": "float64",
            "validity": True,
        }
    )
    fb = transform_batch(TABLE, spec, fit_stats(TABLE, spec))
    assert fb.names == ["ts_hour", "ts_month", "ts_missing", "tz_weekday_sin", "tz_weekday_cos"]
    nulls = np.asarray(TABLE["ts"].is_null())
    assert fb.validity is not None
    # a null date gives null parts: invalid in the validity matrix
    assert not fb.validity[nulls, :2].any()
    assert fb.validity[~nulls, :2].all()
    np.testing.assert_array_equal(fb.features[:, 2], nulls.astype(float))
    # filled parts are valid and hold the fill value
    assert fb.validity[:, 2:].all()
    np.testing.assert_array_equal(fb.features[nulls, 3:], -5.0)
    want = cyclical_oracle(TABLE["tz"], ["weekday"])
    np.testing.assert_allclose(fb.features[~nulls, 3:], want[~nulls], atol=1e-12)


def test_parts_share_the_fused_kernel_with_numeric_columns() -> None:
    spec = FeatureSpec.from_dict(
        {
            "columns": {
                "x": {"scale": "zscore"},
                "ts": {"datetime": ["hour", "weekday"], "cyclical": True},
                "d": {"datetime": ["month"]},
            }
        }
    )
    text = explain_fuse(TABLE, spec)
    assert "1 pass(es) over the rows, 1 fused kernel(s)" in text
    computes = (
        "computes ['x', 'ts_hour_sin', 'ts_hour_cos', 'ts_weekday_sin', 'ts_weekday_cos', "
        "'d_month']"
    )
    assert computes in text
    # batch by batch, the same matrix as in one piece
    whole = np.concatenate([b.features for b in iter_features(TABLE, spec)])
    pieces = np.concatenate([b.features for b in iter_features(TABLE, spec, batch_rows=701)])
    np.testing.assert_array_equal(whole, pieces)


def test_empty_frame() -> None:
    ff = FeatureFusion(["x"], datetime={"ts": ["hour"], "d": ["month"]}, cyclical=["ts"])
    ff.fit(TABLE)
    got = ff.transform(TABLE.slice(0, 0))
    assert got.shape == (0, 4)
    assert list(ff.get_feature_names_out()) == ["x", "ts_hour_sin", "ts_hour_cos", "d_month"]


@pytest.mark.parametrize(
    ("typ", "canonical"),
    [
        (pa.date64(), pa.date32()),
        (pa.timestamp("s", "Europe/Paris"), pa.timestamp("ms", "Europe/Paris")),
        (pa.time32("ms"), pa.time64("ns")),
        (pa.time64("us"), pa.time64("ns")),
    ],
    ids=str,
)
def test_other_temporal_types_are_cast_once(typ: pa.DataType, canonical: pa.DataType) -> None:
    if pa.types.is_date(typ):
        column, parts = TABLE["d"].cast(typ), DATE_PARTS
    elif pa.types.is_timestamp(typ):
        column, parts = TABLE["ts"].cast(pa.timestamp("s"), safe=False).cast(typ), ALL_PARTS
    else:
        column, parts = TABLE["t"].cast(pa.time64("us")).cast(typ, safe=False), TIME_PARTS
    ff = FeatureFusion(["c"], datetime={"c": parts}, dtype="float64")
    got = ff.fit_transform(pa.table({"c": column}))
    want = polars_parts(column.cast(canonical), parts)
    valid = ~np.isnan(want[:, 0])
    np.testing.assert_array_equal(got[valid], want[valid])


def test_no_statistics_needed(tmp_path) -> None:
    spec = FeatureSpec.from_dict(
        {"columns": {"x": {"scale": "zscore"}, "ts": {"datetime": ["hour"], "cyclical": True}}}
    )
    stats = fit_stats(TABLE, spec)
    assert set(stats.columns) == {"x"}
    path = tmp_path / "s.json"
    stats.save(path)
    served = FeatureFusion(["x"], zscore=["x"], datetime={"ts": ["hour"]}, cyclical=["ts"],
                           stats=str(path)).fit(TABLE)  # fmt: skip
    fitted = FeatureFusion(["x"], zscore=["x"], datetime={"ts": ["hour"]}, cyclical=["ts"])
    np.testing.assert_array_equal(served.transform(TABLE), fitted.fit(TABLE).transform(TABLE))


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "parts", "match"),
    [
        ("d", ["month", "hour"], r"column `d` of type `date32\[day\]` has no `hour`: a Date has "
                                 r"no time of day; ask only for month, weekday, day, ordinal_day"),
        ("t", ["weekday"], r"column `t` of type `time64\[ns\]` has no `weekday`: a Time has no "
                           r"date; ask only for hour, minute"),
        ("x", ["hour"], r"column `x` of type `double` has no date parts; `datetime` needs a "
                        r"Date, Datetime or Time column"),
    ],
)  # fmt: skip
def test_parts_a_column_lacks_are_refused(column: str, parts: list[str], match: str) -> None:
    spec = FeatureSpec.from_dict({"columns": {column: {"datetime": parts}}})
    with pytest.raises(UnsupportedTypeError, match=match):
        fit_stats(TABLE, spec)
    with pytest.raises(UnsupportedTypeError, match=match):
        transform_batch(TABLE, spec, fit_stats(TABLE, FeatureSpec.from_dict({"columns": ["x"]})))
    with pytest.raises(UnsupportedTypeError, match=match):
        FeatureFusion([], datetime={column: parts}).fit(TABLE)


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"datetime": ["hours"]}, r"column `ts`: unknown date part 'hours'; choose from month, "
                                  r"weekday, day, ordinal_day, hour, minute"),
        ({"datetime": []}, r"`datetime` needs at least one part"),
        ({"datetime": ["hour", "hour"]}, r"a date part is asked twice"),
        ({"cyclical": True}, r"column `ts`: `cyclical` writes date parts as sin/cos pairs; give "
                             r"the parts with `datetime`"),
        ({"datetime": ["hour"], "scale": "zscore"}, r"cannot also be scaled"),
        ({"datetime": ["hour"], "one_hot": True}, r"two encodings \(one_hot, datetime\)"),
    ],
)  # fmt: skip
def test_spec_errors(cfg: dict, match: str) -> None:
    with pytest.raises(JobSpecError, match=match):
        FeatureSpec.from_dict({"columns": {"ts": cfg}})


# -- the command line --------------------------------------------------------------------------


def test_cli_flags_and_toml_spec_give_the_transformers_matrix(tmp_path, capsys) -> None:
    data = tmp_path / "in.parquet"
    pq.write_table(TABLE, data, row_group_size=1_000)
    out, toml_out = tmp_path / "f.parquet", tmp_path / "g.parquet"
    flags = ["--columns", "x,ts,d", "--zscore", "x", "--datetime", "ts=hour,weekday,minute",
             "--datetime", "d=month,ordinal_day", "--cyclical", "ts", "--validity"]  # fmt: skip
    assert main(["fuse", str(data), "-o", str(out), *flags, "-q"]) == 0
    ff = FeatureFusion(["x", "ts", "d"], zscore=["x"],
                       datetime={"ts": ["hour", "weekday", "minute"],
                                 "d": ["month", "ordinal_day"]},
                       cyclical=["ts"])  # fmt: skip
    table = pq.read_table(out)
    got = table.column("features").combine_chunks().to_numpy_ndarray()
    valid = table.column("validity").combine_chunks().to_numpy_ndarray().astype(bool)
    # the file holds 0 where a value is missing, beside its validity; the transformer NaN
    np.testing.assert_array_equal(np.where(valid, got, np.nan), ff.fit_transform(TABLE))
    assert (got[~valid] == 0).all()
    assert (~valid).any()
    names = json.loads(table.schema.metadata[b"colbridge.features"])
    assert names == list(ff.get_feature_names_out())
    valid = table.column("validity").combine_chunks().to_numpy_ndarray().astype(bool)
    np.testing.assert_array_equal(valid[:, 1], ~np.asarray(TABLE["ts"].is_null()))
    spec = tmp_path / "fuse.toml"
    spec.write_text(
        '[columns.x]\nscale = "zscore"\n'
        '[columns.ts]\ndatetime = ["hour", "weekday", "minute"]\ncyclical = true\n'
        '[columns.d]\ndatetime = ["month", "ordinal_day"]\n'
    )
    assert main(["fuse", str(data), "-o", str(toml_out), "--spec", str(spec), "-q"]) == 0
    again = pq.read_table(toml_out).column("features").combine_chunks().to_numpy_ndarray()
    np.testing.assert_array_equal(again, got)
    # a wrong part is a usage error naming the column, exit status 2
    capsys.readouterr()
    bad = ["fuse", str(data), "-o", str(tmp_path / "h.parquet"), "--datetime", "d=hour", "-q"]
    assert main(bad) == 2
    assert "column `d` of type `date32[day]` has no `hour`" in capsys.readouterr().err
    assert main(["fuse", str(data), "-o", str(tmp_path / "h.parquet"), "--datetime", "ts"]) == 2


# -- a property against polars -----------------------------------------------------------------

ZONES = [None, "UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe"]


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.integers(LO_US, HI_US)), max_size=40),
    zone=st.sampled_from(ZONES),
)
def test_parts_of_any_instants_are_polars(values: list[int | None], zone: str | None) -> None:
    column = pa.array(values, pa.timestamp("us", zone))
    spec = FeatureSpec.from_dict(
        {
            "columns": {
                "ts": {"datetime": ALL_PARTS},
                "ts2": {"datetime": ALL_PARTS, "cyclical": True},
            },
            "dtype": "float64",
            "validity": True,
        }
    )
    fb = transform_batch(pa.table({"ts": column, "ts2": column}), spec, fit_stats(
        pa.table({"ts": column, "ts2": column}), spec))  # fmt: skip
    k = len(ALL_PARTS)
    want = polars_parts(column, ALL_PARTS)
    valid = np.array([v is not None for v in values], dtype=bool)
    assert fb.validity is not None
    np.testing.assert_array_equal(fb.validity, np.repeat(valid[:, None], 3 * k, axis=1))
    np.testing.assert_array_equal(fb.features[valid, :k], want[valid])
    cyc = cyclical_oracle(column, ALL_PARTS)
    np.testing.assert_allclose(fb.features[valid, k:], cyc[valid], rtol=0, atol=1e-12)


def test_loader_serves_date_parts() -> None:
    from colbridge.io import loader

    batches = loader(TABLE.select(["x", "ts"]), columns=["x"], datetime={"ts": ["hour"]},
                     cyclical=["ts"], batch_size=1_000, shuffle=False, output="numpy",
                     prefetch=0)  # fmt: skip
    got = np.concatenate([b["features"] for b in batches])
    ff = FeatureFusion(["x"], datetime={"ts": ["hour"]}, cyclical=["ts"])
    want = ff.fit_transform(TABLE)  # NaN where missing; a loader's batch holds 0 there
    assert np.isnan(want).any()
    np.testing.assert_array_equal(got, np.where(np.isnan(want), 0, want))
    assert got.shape == (TABLE.num_rows, 3)
