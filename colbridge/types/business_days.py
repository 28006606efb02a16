"""Types layer: business days (``dt.is_business_day``, ``dt.add_business_days``) in closed form.

polars counts business days as NumPy's ``busday`` functions do (its code is their
port): a week mask of the days that count (Monday first) and holidays, which count
only where they fall on a mask day. It steps day by day past holidays; a kernel has
no loop, so here each day has a *business index* instead:

    B(d) = (whole weeks) x (mask days per week) + (mask days before d in its week)
           - (holidays before d)

the number of business days before day ``d`` (from a fixed Monday). The business
day of index ``T`` is the mask's ``(T + j)``-th day, where ``j``, the holidays before
it, is how many holidays have ``W(h_i) - i <= T`` (``W``: the index without holidays,
``i``: the holidays before ``h_i``; these are non-decreasing, so ``j`` is one search).
Adding ``n`` business days to a business day ``d`` is then the day of index
``B(d) + n``; rolling ``d`` forward is the day of index ``B(d)``, backward that of
``B(d + 1) - 1``. The tables below are what the kernels search and gather
(`colbridge.runtime.tables`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

import numpy as np

from colbridge.errors import ComputeError, SchemaError

__all__ = ["DEFAULT_WEEK_MASK", "FIRST_MONDAY", "busday_table", "holiday_days", "week_mask"]

#: polars' default: Monday to Friday
DEFAULT_WEEK_MASK = (True, True, True, True, True, False, False)
#: the first Monday on or after 1970-01-01 (a Thursday), as a day count: weeks start there
FIRST_MONDAY = 4
_SMALLEST = -(2**63)  # a search table's first entry (`colbridge.expr.nodes.Search`)
_EPOCH = _dt.date(1970, 1, 1)


def week_mask(mask: Iterable[Any], what: str) -> tuple[bool, ...]:
    """``mask`` as seven booleans, Monday first; refused as polars refuses it.

    >>> week_mask([True] * 4 + [False] * 3, "is_business_day")
    (True, True, True, True, False, False, False)
    """
    days = tuple(mask)
    wrong = [m for m in days if not isinstance(m, (bool, np.bool_))]
    if wrong:  # polars takes booleans only: 1 or "yes" is refused, not read as True
        msg = (f"`dt.{what}`: week_mask holds booleans (True where the day counts), got "
               f"{wrong[0]!r} of type {type(wrong[0]).__name__}")  # fmt: skip
        raise SchemaError(msg)
    days = tuple(bool(m) for m in days)
    if len(days) != 7:
        msg = (f"`dt.{what}`: week_mask has {len(days)} entries; it needs 7, one per day "
               "from Monday to Sunday (True where the day counts)")  # fmt: skip
        raise SchemaError(msg)
    if not any(days):
        msg = f"`dt.{what}`: `week_mask` must have at least one business day"
        raise ComputeError(msg)
    return days


def holiday_days(holidays: Iterable[Any], mask: tuple[bool, ...], what: str) -> tuple[int, ...]:
    """The holidays as sorted day counts, each once, those on the mask's days only.

    Dates (a datetime counts as its date, as polars casts it); a polars Series of
    dates is read as such; a null is refused as polars refuses it.

    >>> holiday_days([_dt.date(2024, 1, 1), _dt.date(2024, 1, 6)], DEFAULT_WEEK_MASK, "x")
    (19723,)
    """
    days = set()
    for h in holidays:
        if h is None:
            msg = (f"`dt.{what}`: nulls found in holiday list values; leave them out of "
                   "`holidays`")  # fmt: skip
            raise ComputeError(msg)
        if isinstance(h, _dt.datetime):
            h = h.date()
        if not isinstance(h, _dt.date):
            msg = (f"`dt.{what}`: holidays are dates (datetime.date), got {h!r} of type "
                   f"{type(h).__name__}; a column of holidays is not supported")  # fmt: skip
            raise SchemaError(msg)
        day = (h - _EPOCH).days
        if mask[(day - FIRST_MONDAY) % 7]:
            days.add(day)
    return tuple(sorted(days))


def _index(day: int, mask: tuple[bool, ...]) -> int:
    """``W(day)``: the mask's days before ``day``, counted from `FIRST_MONDAY`."""
    weeks, weekday = divmod(day - FIRST_MONDAY, 7)
    return weeks * sum(mask) + sum(mask[:weekday])


def busday_table(mask: tuple[bool, ...], holidays: tuple[int, ...], which: str) -> list[int]:
    """One lookup table of the business-day arithmetic (see the module's text).

    ``mask``: 1 where a weekday (Monday 0) counts; ``before``: the mask's days before
    each weekday in its week; ``nth``: the weekday of the week's r-th mask day;
    ``holidays``: the holidays, after the smallest int64 (a search table);
    ``shifted``: each holiday's ``W(h_i) - i``, likewise.

    >>> busday_table(DEFAULT_WEEK_MASK, (), "nth")
    [0, 1, 2, 3, 4]
    """
    if which == "mask":
        return [int(m) for m in mask]
    if which == "before":
        return [sum(mask[:k]) for k in range(7)]
    if which == "nth":
        return [k for k in range(7) if mask[k]]
    if which == "holidays":
        return [_SMALLEST, *holidays]
    if which == "shifted":
        return [_SMALLEST, *(_index(h, mask) - i for i, h in enumerate(holidays))]
    msg = f"unknown business-day table {which!r}"  # pragma: no cover - typing names them
    raise ValueError(msg)
