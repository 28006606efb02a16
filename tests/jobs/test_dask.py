from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import polars as pl
import pytest

import colbridge as cb

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from colbridge.dask import apply  # noqa: E402


@pytest.fixture(scope="module")
def client():
    import dask

    with dask.config.set(
        {"distributed.worker.daemon": False, "distributed.logging.distributed": "error"}
    ):
        # the scheduler's HTTP server on a free port: with a fixed one (8787, also what
        # `dashboard_address=None` gives) a second cluster, as another xdist worker starts
        # at the same time, warns that the port is taken, and the suite fails on warnings
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=50,
        )  # fmt: skip
        with distributed.Client(cluster) as c:
            yield c
        cluster.close()


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    n = 20_000
    a = rng.normal(size=n)
    a[rng.random(n) < 0.1] = np.nan
    pdf = pd.DataFrame({"a": a, "b": rng.integers(0, 9, n)})
    return pdf, dd.from_pandas(pdf, npartitions=4)


def _worker_lookups(client) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Kernel-cache lookups (hits + misses) colbridge made in each worker process so far."""

    def lookups() -> int:
        info = cb.cache_info()
        return int(info.hits + info.misses)

    return client.run(lookups)  # type: ignore[no-any-return]


def test_plan_with_reductions_equals_polars_and_runs_on_the_workers(client, frames) -> None:
    pdf, ddf = frames
    a, b = cb.col("a"), cb.col("b")
    plan = (
        cb.lazy(pdf.head(3))
        .with_columns(z=(b - b.mean()) / b.std(), m=b.max(), w=a * 2 + 1)
        .filter(b > 2)
        .with_columns(d=b - (b - b.mean()).abs().max())
    )
    before = _worker_lookups(client)
    got = apply(plan, ddf).compute()
    after = _worker_lookups(client)
    # colbridge's engine ran in the worker processes: their own kernel caches were used
    assert set(after) == set(before)
    assert sum(after[w] - before[w] for w in after) > 0, (before, after)
    # the oracle: polars on the whole frame (NaN as null, as colbridge reads NumPy floats)
    pa_, pb = pl.col("a"), pl.col("b")
    want = (
        pl.from_pandas(pdf, nan_to_null=True).lazy()
        .with_columns(z=(pb - pb.mean()) / pb.std(), m=pb.max(), w=pa_ * 2 + 1)
        .filter(pb > 2)
        .with_columns(d=pb - (pb - pb.mean()).abs().max())
        .collect()
    )  # fmt: skip
    assert list(got.columns) == want.columns
    assert len(got) == want.height
    assert got["b"].tolist() == want["b"].to_list()
    assert got["m"].tolist() == want["m"].to_list()
    # w is elementwise: exact; z and d use means and a std merged across partitions (Chan's
    # formula), which sums in another order than polars
    w_got = got["w"].to_numpy(dtype=float)
    w_want = want["w"].to_numpy().astype(float)
    assert np.array_equal(w_got, w_want, equal_nan=True)
    for name in ("z", "d"):
        np.testing.assert_allclose(got[name].to_numpy(dtype=float), want[name].to_numpy(),
                                   rtol=1e-12, atol=0)  # fmt: skip


def test_elementwise_plan_keeps_partitions_and_meta(client, frames) -> None:
    pdf, ddf = frames
    plan = cb.lazy(pdf.head(3)).with_columns(w=cb.col("a") * 2 + 1)
    out = apply(plan, ddf)
    assert out.npartitions == ddf.npartitions
    assert list(out._meta.columns) == ["a", "b", "w"]
    got = out.compute()
    want = pdf["a"].to_numpy() * 2 + 1  # NumPy: NaN stays NaN (colbridge: a null)
    assert np.array_equal(got["w"].to_numpy(dtype=float, na_value=np.nan), want, equal_nan=True)


# -- ordered operations with partition halos ---------------------------------------------
def _ordered_frame(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    a = rng.normal(size=n)
    a[rng.random(n) < 0.15] = np.nan
    return pd.DataFrame({"a": a, "b": rng.integers(-20, 20, n), "c": rng.random(n)})


def _bounded(m, q):  # type: ignore[no-untyped-def]
    a, b = m.col("a"), m.col("b")
    return q.with_columns(
        s=a.shift(3), sn=b.shift(-2, fill_value=0), d=a.diff(2), p=m.col("c").pct_change(1),
        r=a.rolling_mean(5, min_samples=2), rs=b.rolling_sum(4, center=True),
        rx=a.rolling_max(30), v=a.rolling_std(7), ff=a.fill_null(strategy="forward", limit=2),
        bf=a.fill_null(strategy="backward", limit=1),
    )  # fmt: skip


def _filtered_after(m, q):  # type: ignore[no-untyped-def]
    return q.with_columns(d=m.col("a").diff()).filter(m.col("d") > 0).select("b", "d")


def _reductions(m, q):  # type: ignore[no-untyped-def]
    a = m.col("a")
    return q.with_columns(z=a.shift(1) - a.mean(), t=(a - a.shift(1)).abs().max())


def _aggregated(m, q):  # type: ignore[no-untyped-def]
    a = m.col("a")
    return q.select(s=a.diff().abs().sum(), n=a.shift(5).count(), x=a.rolling_min(3).max())


ORDERED = {"bounded": _bounded, "filtered_after": _filtered_after, "reductions": _reductions,
           "aggregated": _aggregated}  # fmt: skip


def _assert_as_polars(got: pd.DataFrame, want: pl.DataFrame) -> None:
    got_pl = pl.from_pandas(got.reset_index(drop=True), nan_to_null=True)
    assert got_pl.columns == want.columns
    assert got_pl.height == want.height
    for name in want.columns:
        g, w = got_pl[name], want[name]
        assert g.null_count() == w.null_count(), name
        np.testing.assert_allclose(g.cast(pl.Float64).to_numpy(), w.cast(pl.Float64).to_numpy(),
                                   rtol=1e-12, atol=1e-12, err_msg=name)  # fmt: skip


@pytest.mark.parametrize("name", sorted(ORDERED))
@pytest.mark.parametrize("npartitions", [1, 4, 60])  # 60: partitions shorter than the halos
def test_ordered_operations_run_with_partition_halos(name: str, npartitions: int) -> None:
    pdf = _ordered_frame()
    steps = ORDERED[name]
    ddf = dd.from_pandas(pdf, npartitions=npartitions)
    got = apply(steps(cb, cb.lazy(pdf.head(1))), ddf).compute(scheduler="sync")
    want = steps(pl, pl.from_pandas(pdf, nan_to_null=True).lazy()).collect()
    _assert_as_polars(got, want)
    if name == "bounded":
        assert list(got.index) == list(pdf.index)  # each partition kept only its own rows


def test_ordered_halos_on_the_cluster_and_across_empty_partitions(client) -> None:
    pdf = _ordered_frame()
    ddf = dd.from_pandas(pdf, npartitions=8)
    ddf = ddf.map_partitions(lambda p: p[p.index >= 250])  # the first partitions now empty
    got = apply(_bounded(cb, cb.lazy(pdf.head(1))), ddf).compute()
    want = _bounded(pl, pl.from_pandas(pdf.iloc[250:], nan_to_null=True).lazy()).collect()
    _assert_as_polars(got, want)


def test_dask_aggregation_gives_one_row() -> None:
    pdf = _ordered_frame()
    ddf = dd.from_pandas(pdf, npartitions=5)
    got = apply(cb.lazy(pdf.head(1)).select(s=cb.col("b").sum()), ddf).compute(scheduler="sync")
    assert got["s"].tolist() == [int(pdf["b"].sum())]
    kept = cb.lazy(pdf.head(1)).filter(cb.col("b") > 0).select(s=cb.col("b").sum(), n=cb.len())
    got = apply(kept, ddf).compute(scheduler="sync")
    assert got["s"].tolist() == [int(pdf["b"][pdf["b"] > 0].sum())]
    assert got["n"].tolist() == [int((pdf["b"] > 0).sum())]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda a: a.cum_sum(), r"cum_sum.*read every row before .* not supported in a Dask plan"),
        (lambda a: a.ewm_mean(alpha=0.5), r"ewm_mean.*read every row before"),
        (lambda a: a.fill_null(strategy="forward"), r"forward_fill.*read every row before"),
        (lambda a: a.shift(1).over("b"), r"per key .* Repartition by the key first"),
    ],
)
def test_dask_refuses_what_halos_cannot_do(build, message) -> None:  # type: ignore[no-untyped-def]
    pdf = _ordered_frame()
    ddf = dd.from_pandas(pdf, npartitions=3)
    from colbridge.io import JobSpecError

    with pytest.raises(JobSpecError, match=message):
        apply(cb.lazy(pdf.head(1)).with_columns(x=build(cb.col("a"))), ddf)


def test_dask_refuses_ordered_operations_over_filtered_rows() -> None:
    from colbridge.io import JobSpecError

    pdf = _ordered_frame()
    ddf = dd.from_pandas(pdf, npartitions=3)
    plan = cb.lazy(pdf.head(1)).filter(cb.col("b") > 0).with_columns(s=cb.col("a").shift(1))
    with pytest.raises(JobSpecError, match=r"over filtered rows .* Filter after"):
        apply(plan, ddf)
    inside = cb.lazy(pdf.head(1)).select(s=cb.col("a").filter(cb.col("b") > 0).shift(1).sum())
    with pytest.raises(JobSpecError, match=r"over filtered rows"):
        apply(inside, ddf)


def _pieces(pdf: pd.DataFrame, sizes: list[int]):  # type: ignore[no-untyped-def]
    """``pdf`` as partitions of these sizes (empty ones too), in order."""
    from dask import delayed

    bounds = np.cumsum([0, *sizes])
    parts = [delayed(pdf.iloc[a:b]) for a, b in itertools.pairwise(bounds)]
    return dd.from_delayed(parts, meta=pdf.iloc[:0])


def _key_plans(m):  # type: ignore[no-untyped-def]
    x = m.col("x")
    return {
        "window key of a mean": lambda q: q.with_columns(r=m.col("v").sum().over(x > x.mean())),
        "window key of a window": lambda q: q.with_columns(r=m.len().over(x > x.mean().over("g"))),
        "group_by key of a mean": lambda q: q.group_by(hi=x > x.mean(), maintain_order=True)
        .agg(n=m.len(), s=m.col("v").sum()) if m is pl
        else q.group_by(hi=x > x.mean()).agg(n=m.len(), s=m.col("v").sum()),
    }


@pytest.mark.parametrize("name", sorted(_key_plans(pl)))
def test_keys_made_of_reductions_or_windows_read_all_rows(name: str) -> None:
    # each partition took its own rows' mean (or group means) for the key: a window summed
    # [9, 12, 9, ...] for [6, 6, 6, 15, ...], and a window inside a key never finished
    pdf = pd.DataFrame({"x": [1.0, 2, 3, 10, 11, 12, 2.5], "v": [1, 2, 3, 4, 5, 6, 7],
                        "g": [1, 1, 2, 2, 1, 2, 2]})  # fmt: skip
    ddf = _pieces(pdf, [3, 0, 3, 1])
    got = apply(_key_plans(cb)[name](cb.lazy(pdf.head(1))), ddf).compute(scheduler="sync")
    want = _key_plans(pl)[name](pl.from_pandas(pdf).lazy()).collect()
    _assert_as_polars(got, want)


@pytest.mark.parametrize("func", ["count", "len", "null_count", "product", "sum", "min"])
def test_a_reduction_of_one_value_is_that_value_once(func: str) -> None:
    # `lit(1).count()` was folded once per partition (4 for 4 partitions; the row count with
    # halos), per group once per partition holding the group
    pdf = pd.DataFrame({"x": [1.0, 2.0, None, 4.0, 5.0, 6.0], "g": [1, 2, 1, 2, 1, 1]})
    ddf = _pieces(pdf, [2, 0, 1, 3])

    def steps(m, q):  # type: ignore[no-untyped-def]
        one = getattr(m.lit(2), func)()
        return q.with_columns(s=m.col("x").shift(1)).select(r=one, t=m.col("s").sum())

    def grouped(m, q):  # type: ignore[no-untyped-def]
        one = getattr(m.lit(2), func)()
        kw = {"maintain_order": True} if m is pl else {}
        return q.group_by("g", **kw).agg(r=one)

    def window(m, q):  # type: ignore[no-untyped-def]
        return q.with_columns(r=getattr(m.lit(2), func)().over("g"))

    for build in (steps, grouped, window):
        got = apply(build(cb, cb.lazy(pdf.head(1))), ddf).compute(scheduler="sync")
        want = build(pl, pl.from_pandas(pdf, nan_to_null=True).lazy()).collect()
        _assert_as_polars(got, want)


def test_halos_over_categoricals_of_other_categories_per_partition() -> None:
    # files of categoricals carry categories of their own: the halo's concat made strings,
    # which failed Dask's check against the meta
    from dask import delayed
    from dask.dataframe.utils import clear_known_categories

    first = pd.DataFrame({"k": pd.Categorical(["a", "b", "a"]), "x": [1.0, 2, 3]})
    second = pd.DataFrame({"k": pd.Categorical(["c", "b"]), "x": [4.0, 5]}, index=[3, 4])
    ddf = dd.from_delayed([delayed(first), delayed(second)],
                          meta=clear_known_categories(first.iloc[:0]))  # fmt: skip
    whole = pl.DataFrame({"k": ["a", "b", "a", "c", "b"], "x": [1.0, 2, 3, 4, 5]})
    for build in (lambda m: m.col("k").shift(2), lambda m: m.col("k").forward_fill(2)):
        got = apply(cb.lazy(first).with_columns(y=build(cb)), ddf).compute(scheduler="sync")
        want = whole.with_columns(y=build(pl))
        assert got["y"].astype(object).where(got["y"].notna(), None).tolist() \
            == want["y"].to_list()  # fmt: skip


def test_a_frame_that_is_not_dask_is_refused_by_its_type() -> None:
    # a pandas frame failed inside with "'DataFrame' object has no attribute 'reduction'"
    pdf = pd.DataFrame({"x": [1.0, 2.0]})
    plan = cb.lazy(pdf).select(s=cb.col("x").sum())
    for frame in (pdf, pl.from_pandas(pdf)):
        with pytest.raises(TypeError, match=r"computes a Dask DataFrame, got .*cb.lazy\(frame\)"):
            apply(plan, frame)
        with pytest.raises(TypeError, match="computes a Dask DataFrame"):
            cb.dask.resolve(plan, frame)


#: plans with ordered operations (so partitions get halos) that name a missing column
MISSING = {
    "in a scan": lambda q: q.with_columns(x=cb.col("zz").shift(1)),
    "beside a scan": lambda q: q.with_columns(x=cb.col("a").diff(1) + cb.col("zz")),
    "in a reduction": lambda q: q.select(s=cb.col("a").shift(1).sum(), t=cb.col("zz").max()),
    "in a later select": lambda q: q.with_columns(x=cb.col("a").rolling_var(3))
    .select(cb.col("x"), cb.col("zz")),
    "in a filter": lambda q: q.with_columns(x=cb.col("a").shift(2)).filter(cb.col("zz") > 0),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(MISSING))
def test_errors_inside_a_halo_plan_name_only_the_frames_columns(name: str) -> None:
    # the partitions' halo marker is a column of colbridge's, never the user's: a missing
    # column's message lists what the frame (and the plan) has, as one compute's does
    import ast

    from colbridge.dask import HALO
    from colbridge.errors import ColumnNotFoundError

    pdf = _ordered_frame()
    ddf = dd.from_pandas(pdf, npartitions=3)
    plan = MISSING[name](cb.lazy(pdf.head(1)))
    with pytest.raises(ColumnNotFoundError) as on_dask:
        apply(plan, ddf).compute(scheduler="sync")
    message = str(on_dask.value)
    assert HALO not in message
    assert message.startswith("column `zz` not found; available columns: ")
    listed = ast.literal_eval(message.split("available columns: ")[1].split("\n")[0])
    # the frame's columns, and those the plan made before the step that failed
    assert listed[:len(pdf.columns)] == list(pdf.columns)
    assert set(listed) <= {*pdf.columns, "x"}


def test_type_errors_inside_a_halo_plan_name_only_the_frames_columns() -> None:
    from colbridge.dask import HALO
    from colbridge.errors import ColbridgeError

    pdf = _ordered_frame().assign(s=lambda f: f["b"].astype(str))
    ddf = dd.from_pandas(pdf, npartitions=3)
    for build in (lambda a, s: s.rolling_mean(3), lambda a, s: a.shift(1) + s):
        plan = cb.lazy(pdf.head(1)).with_columns(x=build(cb.col("a"), cb.col("s")))
        with pytest.raises(ColbridgeError) as on_dask:
            apply(plan, ddf).compute(scheduler="sync")
        assert HALO not in str(on_dask.value)
        assert "`s`" in str(on_dask.value) or 'col("s")' in str(on_dask.value)


@pytest.mark.parametrize(
    ("func", "build"),
    [
        ("n_unique", lambda q: q.group_by("b").agg(u=cb.col("a").n_unique())),
        ("median", lambda q: q.group_by("b").agg(m=cb.col("a").median())),
        ("median", lambda q: q.with_columns(m=cb.col("a").median().over("b"))),
        ("quantile", lambda q: q.group_by("b").agg(m=cb.col("a").quantile(0.3))),
        ("skew", lambda q: q.with_columns(m=cb.col("a").skew().over("b"))),
    ],
)
def test_dask_refuses_unmergeable_group_reductions_in_its_own_words(func, build) -> None:  # type: ignore[no-untyped-def]
    from colbridge.io import JobSpecError

    pdf = _ordered_frame()
    ddf = dd.from_pandas(pdf, npartitions=3)
    with pytest.raises(JobSpecError) as refused:
        apply(build(cb.lazy(pdf.head(1))), ddf)
    message = str(refused.value)
    with pytest.raises(JobSpecError) as resolving:
        cb.dask.resolve(build(cb.lazy(pdf.head(1))), ddf)
    assert str(resolving.value) == message
    assert f"`{func}` per group cannot be merged from the partitions of a Dask DataFrame" \
        in message  # fmt: skip
    assert "stream" not in message
    assert "`ddf.shuffle(key)`" in message
    assert "`cb.lazy(ddf.compute())`" in message
