"""Runtime: one plan over data that comes in pieces (record batches, Dask partitions).

Stage: runtime, for the jobs layer. `compute_piece` runs a plan prepared once on one
piece; `fold_reductions` computes reductions over all pieces by folding each piece's
partial rows (`colbridge.runtime.execute.Partials`) and finishing them with the
functions an in-memory compute uses, so a streamed or partitioned run agrees with
one pass over all the data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from colbridge.backends.common import piece_of_job
from colbridge.backends.scans import ScanStreams
from colbridge.columns.frames import adapt_frame
from colbridge.expr.nodes import Agg, Node
from colbridge.plan.logical import Step
from colbridge.runtime.execute import (
    ComputeReport,
    Partials,
    PreparedPlan,
    execute,
    on_device,
    prepare,
    reduction_partials,
)

__all__ = ["compute_piece", "fold_reductions", "piece_partials"]


def compute_piece(plan: PreparedPlan, piece: Any, device: str = "auto",
                  fallback: str = "cpu", streams: ScanStreams | None = None,
                  reports: list[ComputeReport] | None = None,
                  total_rows: int | None = None) -> Any:  # fmt: skip
    """``plan`` over one piece (a frame of any kind): a frame of the piece's kind.

    ``streams``: the pieces are the batches of one pass over a stream, in order, and
    the plan's ordered operations go on from the piece before. ``reports`` receives
    the compute's report (device, kernels, copies). ``total_rows``: the rows of every
    piece of the job together, when known (it picks the CPU tier: `piece_of_job`).
    """
    adapter = adapt_frame(piece)
    if tuple(adapter.names) != plan.names:
        plan = prepare(plan.steps, adapter.names)

    def work(target: str, report: Any) -> Any:
        _before_attempt(streams, target, saved)
        with piece_of_job(total_rows):
            return execute(plan, adapter, report, target, streams=streams)

    saved: list[bool] = []
    result, report = on_device(work, device, fallback)
    if reports is not None:
        reports.append(report)
    return result


def _before_attempt(streams: ScanStreams | None, target: str, saved: list[bool]) -> None:
    """Keep a stream's scan state right for a piece that may run twice.

    A piece that fails on the GPU runs again on the CPU: that run starts from the
    state the piece before it left. The state is copied only before a GPU attempt
    (``saved`` records it), never on a CPU-only run, where it would cost a copy of
    every per-group table per batch for nothing.
    """
    if streams is None:
        return
    if saved:
        streams.rewind()
    elif target != "cpu":
        streams.checkpoint()
        saved.append(True)


def piece_partials(prefix: tuple[Step, ...], aggs: list[Agg], piece: Any,
                   device: str = "auto", fallback: str = "cpu",
                   streams: ScanStreams | None = None,
                   total_rows: int | None = None) -> Partials:  # fmt: skip
    """The partial rows of ``aggs`` over one piece, after the steps ``prefix``."""
    adapter = adapt_frame(piece)

    def work(target: str, report: Any) -> Partials:
        _before_attempt(streams, target, saved)
        with piece_of_job(total_rows):
            return reduction_partials(prefix, aggs, adapter, report, target, streams)

    saved: list[bool] = []
    partials, _ = on_device(work, device, fallback)
    return partials


def fold_reductions(
    prefix: tuple[Step, ...],
    aggs: list[Agg],
    pieces: Iterable[Any],
    empty: pa.Table,
    device: str = "auto",
    fallback: str = "cpu",
    total_rows: int | None = None,
    *,
    carried: bool = True,
) -> dict[Agg, Node]:
    """Values of ``aggs`` over all ``pieces`` (``empty``: a piece with no rows, same schema).

    The pieces come in order: ordered operations in ``prefix`` go on from piece to piece,
    unless not ``carried`` (pieces with halos: `colbridge.io.halos`). ``total_rows`` as in
    `compute_piece`.
    """
    total: Partials | None = None
    streams = ScanStreams() if carried else None
    for piece in pieces:
        part = piece_partials(prefix, aggs, piece, device, fallback, streams, total_rows)
        total = part if total is None else total.fold(part)
    if total is None:  # no pieces at all: reductions of empty columns
        total = piece_partials(prefix, aggs, empty, "cpu")
    return total.values()
