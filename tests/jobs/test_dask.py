from __future__ import annotations

import numpy as np
import pandas as pd
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


def test_plan_with_reductions_equals_single_process_run(client, frames) -> None:
    pdf, ddf = frames
    a, b = cb.col("a"), cb.col("b")
    plan = (
        cb.lazy(pdf.head(3))
        .with_columns(z=(b - b.mean()) / b.std(), m=b.max(), w=a * 2 + 1)
        .filter(b > 2)
        .with_columns(d=b - (b - b.mean()).abs().max())
    )
    got = apply(plan, ddf).compute()
    want = cb.LazyFrame(pdf, plan.steps).compute()
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want)
    for name in ("z", "w", "d"):
        g, w = got[name].to_numpy(dtype=float), want[name].to_numpy(dtype=float)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13, equal_nan=True)
    assert (got["m"].to_numpy() == want["m"].to_numpy()).all()
    assert client.run(lambda: 1)  # the work ran on the two worker processes


def test_elementwise_plan_keeps_partitions_and_meta(client, frames) -> None:
    pdf, ddf = frames
    plan = cb.lazy(pdf.head(3)).with_columns(w=cb.col("a") * 2 + 1)
    out = apply(plan, ddf)
    assert out.npartitions == ddf.npartitions
    assert list(out._meta.columns) == ["a", "b", "w"]
    got = out.compute()
    np.testing.assert_allclose(got["w"].to_numpy(dtype=float), pdf["a"].to_numpy() * 2 + 1)
