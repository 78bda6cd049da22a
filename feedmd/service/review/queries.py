"""The review page's grouping of a run's items into clusters. The reads themselves (runs,
items by id) are the store's (``feedmd/store/audit.py``): plain data, no SQL here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from feedmd.store import ItemRow, RunRow

__all__ = ["Cluster", "ItemRow", "RunRow", "clusters"]


@dataclass
class Cluster:
    """A canonical item and the items merged into it (oldest first)."""

    canonical: ItemRow
    members: list[ItemRow] = field(default_factory=list)

    @property
    def rules(self) -> list[str]:
        """The rules that merged the members, each once, in order."""
        return list(dict.fromkeys(m.rule or "?" for m in self.members))


def clusters(items: Sequence[ItemRow], canonicals: Sequence[ItemRow]) -> list[Cluster]:
    """Group a run's items by the kept item they were merged into. A duplicate's canonical
    may come from an earlier run (``canonicals`` holds those); kept items of the run with
    nothing merged form clusters of one. Clusters with members come first, each group in
    the order the canonicals were published; failed items are not clustered (nothing was
    decided on them)."""
    by_id = {item.id: item for item in [*canonicals, *items]}
    groups: dict[int, Cluster] = {}
    for item in items:
        if item.decision == "kept":
            groups.setdefault(item.id, Cluster(item))
    for item in items:
        if item.decision == "duplicate" and item.matched_item_id in by_id:
            head = by_id[item.matched_item_id]
            groups.setdefault(head.id, Cluster(head)).members.append(item)
    return sorted(
        groups.values(), key=lambda c: (not c.members, c.canonical.published_at, c.canonical.id)
    )
