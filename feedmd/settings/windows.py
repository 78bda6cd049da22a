"""Windows and scope: how far back entries and the dedup window reach, and what a
new item is compared with.

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

from dataclasses import dataclass

from feedmd.settings.fields import setting


@dataclass(frozen=True)
class WindowSettings:
    """The windows of a run and the scope of its comparisons."""

    history_window_hours: float = setting(
        48.0,
        "Entries published longer ago than this are skipped at fetch and counted. "
        "Old entries are dropped before any dedup work is spent on them.",
        minimum=1,
        maximum=8760,
    )
    dedup_window_hours: float = setting(
        48.0,
        "How far back stage 1 and stage 2 look for the same story (48 h: a news "
        "cycle and its follow-ups). An old story that resurfaces after this is treated as new.",
        minimum=0,
        maximum=8760,
    )
    dedup_scope: str = setting(
        "feed",
        "'feed' compares an item with its own feed's history; 'org' with every feed "
        "of the organisation (feed: each query is cleaned on its own).",
        choices=("feed", "org"),
    )
