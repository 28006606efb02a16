"""Logical plan: the user's queued steps, as immutable data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from colbridge.expr.nodes import Node

__all__ = ["Step", "names_after"]


@dataclass(frozen=True, slots=True)
class Step:
    """One queued call: ``with_columns``, ``select``, ``filter`` or ``group_by``.

    ``items`` holds ``(output name, expression)`` pairs; a filter has one item
    whose name is empty. A ``group_by`` step (``group_by(*keys).agg(*items)``)
    has its named key expressions in ``keys``.
    """

    kind: str
    items: tuple[tuple[str, Node], ...]
    keys: tuple[tuple[str, Node], ...] = ()

    def describe(self) -> str:
        """One line for `explain()`."""
        if self.kind == "filter":
            return f"filter({self.items[0][1]!r})"
        if self.kind == "group_by":
            keys = ", ".join(f"{name}={node!r}" for name, node in self.keys)
            inner = ", ".join(f"{name}={node!r}" for name, node in self.items)
            return f"group_by({keys}).agg({inner})"
        inner = ", ".join(f"{name}={node!r}" for name, node in self.items)
        return f"{self.kind}({inner})"


def names_after(steps: Sequence[Step], input_names: Sequence[str]) -> list[str]:
    """The frame's column names after ``steps``, in order, from its input columns'."""
    names = list(input_names)
    for step in steps:
        if step.kind == "with_columns":
            there = set(names)
            names += [name for name, _ in step.items if name not in there]
        elif step.kind == "select":
            names = [name for name, _ in step.items]
        elif step.kind == "group_by":
            names = [*(name for name, _ in step.keys), *(name for name, _ in step.items)]
    return names
