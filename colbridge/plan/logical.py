"""Logical plan: the user's queued steps, as immutable data."""

from __future__ import annotations

from dataclasses import dataclass

from colbridge.expr.nodes import Node

__all__ = ["Step"]


@dataclass(frozen=True, slots=True)
class Step:
    """One queued call: ``with_columns``, ``select`` or ``filter``.

    ``items`` holds ``(output name, expression)`` pairs; a filter has one item
    whose name is empty.
    """

    kind: str
    items: tuple[tuple[str, Node], ...]

    def describe(self) -> str:
        """One line for `explain()`."""
        if self.kind == "filter":
            return f"filter({self.items[0][1]!r})"
        inner = ", ".join(f"{name}={node!r}" for name, node in self.items)
        return f"{self.kind}({inner})"
