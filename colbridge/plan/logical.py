"""Logical plan: the user's queued steps, as immutable data."""

from __future__ import annotations

from dataclasses import dataclass

from colbridge.expr.nodes import Node

__all__ = ["Step"]


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
