"""What a person reads in the digest and the Markdown bundle: a headline without the
outlet's name that feeds append to it, and a time in the reader's zone, in words.

Google News titles end in " - Publisher", and many feeds add " | Publisher": beside the
publisher's own name that is noise. The suffix goes only when it is the item's publisher
(case and spacing aside), so "Biden - The Interview" stays whole unless "The Interview"
published it.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, tzinfo
from zoneinfo import ZoneInfo

_SUFFIX = re.compile(r"\s+[-|–—:·]\s+([^-|–—:·]+?)\s*$")


def display_title(title: str, publisher: str) -> str:
    """``title`` without a trailing " - <publisher>" (or |, –, —, :, ·)."""
    match = _SUFFIX.search(title)
    if match and publisher and _folded(match.group(1)) == _folded(publisher):
        shortened = title[: match.start()].rstrip()
        return shortened or title
    return title


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def reader_zone(name: str) -> tzinfo | None:
    """The zone of the ``timezone`` setting (None: the machine's local zone)."""
    return ZoneInfo(name) if name else None


def local(moment: datetime, zone: tzinfo | None) -> datetime:
    """``moment`` (aware) in ``zone`` (None: the machine's local zone)."""
    return moment.astimezone(zone) if zone is not None else moment.astimezone()


def human_time(moment: datetime, zone: tzinfo | None) -> str:
    """'Mon 12 Oct 2026, 21:25 CEST': a time as a reader in ``zone`` says it."""
    when = local(moment, zone)
    return f"{when:%a} {when.day} {when:%b %Y, %H:%M} {when.tzname() or ''}".rstrip()


def human_day(moment: datetime, zone: tzinfo | None) -> str:
    """'Monday 12 October 2026': the day of ``moment`` in ``zone``."""
    when = local(moment, zone)
    return f"{when:%A} {when.day} {when:%B %Y}"


def midnight(day: date, zone: tzinfo | None) -> datetime:
    """The start of ``day`` in ``zone`` (None: the local zone, its offset of that day)."""
    start = datetime.combine(day, time(), tzinfo=zone)
    return start if zone is not None else start.astimezone()
