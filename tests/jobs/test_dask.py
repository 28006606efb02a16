from __future__ import annotations

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
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
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
