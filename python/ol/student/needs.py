"""A module's needs as the student's verbs speak of them: which are not
finished yet, and where a run takes each from (ol.core.deps)."""

from __future__ import annotations

from ol.core import deps
from ol.core.catalog import Module
from ol.core.command import Context
from ol.core.state import PASSING


def unfinished_needs(ctx: Context, module: Module) -> list[tuple[Module, str]]:
    """The needs (transitively) whose course tests have not passed."""
    unfinished = []
    for need in ctx.catalog.needs_closure(module):
        status = ctx.store.status(need)
        if not status.at_least(PASSING):
            unfinished.append((need, status.state))
    return unfinished


def deps_phrase(ctx: Context, module: Module, policy: str) -> str:
    """", with L0.1 from the reference and your own L7.3": where the needs come from (ol.core.deps)."""
    closure = [m.id for m in ctx.catalog.needs_closure(module)]
    referenced = served_by_reference(ctx, module, policy)
    given = [m for m in closure if m in referenced]
    yours = [m for m in closure if m not in referenced]
    parts = ([f"{', '.join(given)} from the reference"] if given else []) + (
        [f"your own {', '.join(yours)}"] if yours else [])
    return f", with {' and '.join(parts)}" if parts else ""


def served_by_reference(ctx: Context, module: Module, policy: str) -> set[str]:
    """The ids of the module's needs that the reference serves under `policy`."""
    return deps.from_reference(ctx.root, ctx.catalog.needs_closure(module), policy)
