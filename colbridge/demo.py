"""The demo (``make demo``): a column becomes a tensor with no copy, then a fused df.gpu pipeline.

Runs on the CPU default; prints addresses as evidence, not claims.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import polars as pl

import colbridge as cb


def main(rows: int = 2_000_000) -> None:
    """Run the demo on ``rows`` generated rows."""
    rng = np.random.default_rng(42)
    price = rng.gamma(2.0, 20.0, rows)
    qty = rng.integers(1, 50, rows)
    discount = np.where(rng.random(rows) < 0.1, np.nan, rng.random(rows) * 0.3)
    df = pl.DataFrame({"price": price, "qty": qty, "discount": discount}).with_columns(
        pl.col("discount").fill_nan(None)
    )

    print(f"== 1. a polars column as a tensor, zero-copy ({rows:,} rows)")
    column = df["price"]
    view = cb.as_tensor(column)
    arrow_address = column.to_arrow().buffers()[1].address
    print(f"   Arrow buffer address : {arrow_address:#x}")
    print(f"   tensor data pointer  : {view.__array_interface__['data'][0]:#x}")
    print(f"   same memory          : {view.__array_interface__['data'][0] == arrow_address}")
    as_numpy = np.from_dlpack(view)
    print(f"   via DLPack in NumPy  : {as_numpy.ctypes.data == arrow_address}, "
          f"read-only: {not as_numpy.flags.writeable}")  # fmt: skip
    nullable = cb.as_tensor(df["discount"])
    validity = nullable.validity
    assert validity is not None  # the column has nulls, so it has a bitmap
    print(f"   a column with nulls  : {nullable.null_count:,} nulls, validity bitmap kept "
          f"zero-copy at bit offset {validity.offset}")  # fmt: skip

    print("\n== 2. df.gpu: queue lazy expressions, nothing runs until compute()")
    net = cb.col("price") * cb.col("qty") * (1 - cb.col("discount").fill_null(0))
    q = (
        df.gpu.with_columns(net=net)  # type: ignore[attr-defined]  # registered by colbridge
        .with_columns(z=(cb.col("net") - cb.col("net").mean()) / cb.col("net").std())
        .filter(cb.col("z") > -1)
    )
    print(q.explain())

    t0 = time.perf_counter()
    out = q.compute()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = q.compute()
    again = time.perf_counter() - t0
    print(f"\n   first compute (compiles): {first * 1e3:.0f} ms; again (cached kernels): "
          f"{again * 1e3:.1f} ms; {out.height:,} rows kept")  # fmt: skip
    print(out.head(3))

    expected = (
        df.with_columns(net=pl.col("price") * pl.col("qty") * (1 - pl.col("discount").fill_null(0)))
        .with_columns(z=(pl.col("net") - pl.col("net").mean()) / pl.col("net").std())
        .filter(pl.col("z") > -1)
    )
    same = out.height == expected.height and np.allclose(
        out["z"].to_numpy(), expected["z"].to_numpy(), rtol=1e-12
    )
    print(f"   same answer as polars: {same}")
    new_col = out["net"].to_arrow().buffers()[1].address
    print(f"   results are new Arrow columns (net at {new_col:#x}); inputs untouched")

    print("\n== 3. the same on pandas, from a string expression")
    pdf = df.head(5).to_pandas()
    print(pdf.gpu.eval("gross = price * qty; cheap = price < 20"))

    print("\n== 4. many columns → one float32 feature matrix")
    X = cb.to_tensor(out, ["price", "qty", "z"], dtype="float32", nulls=0.0)
    print(f"   shape {X.shape}, dtype {X.dtype}; DLPack device {X.__dlpack_device__()}")
    print(f"\nkernel cache: {cb.cache_info()}")
    _ = pd  # the pandas frame above comes from polars' to_pandas


if __name__ == "__main__":
    main()
