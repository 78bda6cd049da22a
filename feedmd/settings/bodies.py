"""The prose rule and stage 2's body rules.

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from feedmd.settings.fields import setting

# The prose rule's own version (feedmd/stages/prose.py): bump it with any change to what
# the rule keeps, and every stored digest is made again from its stored Markdown.
# v7: text in escaped angle brackets ("\<The Palace>", a title) is text, not an HTML tag;
# v6: a link line inside a sentence is read as text (not a break of paragraph context);
# v5: a sub-heading between paragraphs, a table row read as one line, lines of 8 words;
# v4: consent walls are also told by meaning (the wall_model settings); v3: table cells
# are read as text (v2: every table row was structure).
PROSE_RULE_VERSION = "prose-v7"


def _off_or_at_least_two(value: int) -> str | None:
    """1 would call every reprint a shared block (a body is always under one story)."""
    return "0 (off) or at least 2" if value == 1 else None


@dataclass(frozen=True)
class BodySettings:
    """The prose rule and stage 2's body rules."""

    prose_min_words: int = setting(
        8,
        "A Markdown line counts as prose only with at least this many words (shorter lines "
        "are captions, bylines and menu items; a table row counts its cells' words). On 111 "
        "labelled article pages, prose-v5, F1 12 / 10 / 8 / 6: 0.9578 / 0.9589 / 0.9642 / "
        "0.9647, precision 0.9834 / 0.9830 / 0.9835 / 0.9820; 8 is better than 12 on both "
        "halves of the pages (sorted by id: 0.9387 -> 0.9501, 0.9759 -> 0.9778).",
        minimum=1,
        maximum=10_000,
    )
    prose_max_link_share: float = setting(
        0.5,
        "A line whose words are more than this share link text is navigation, not prose "
        "(a line of prose is not mostly link text).",
        minimum=0,
        maximum=1,
    )
    prose_min_chars: int = setting(
        400,
        "Under this many characters of prose an item gets no digest and can only be "
        "matched by its headline (a 338-character Washington Post page held no story "
        "text).",
        minimum=0,
        maximum=10_000_000,
    )
    prose_short_min_words: int = setting(
        4,
        "A shorter line is still prose when it ends a sentence and has at least this many "
        "words (on 111 labelled article pages: +0.003 F1; 2 / 4 / 6 / 8 give F1 0.9511 / "
        "0.9508 / 0.9505 / 0.9499, so the value hardly matters).",
        minimum=1,
        maximum=10_000,
    )
    prose_cjk_chars_per_word: float = setting(
        2.0,
        "Han and kana are written without spaces: this many characters count as one word "
        "(about 1.5-2 characters a word in Chinese and Japanese; not tunable on the labelled "
        "pages).",
        minimum=0.5,
        maximum=100,
    )
    prose_boilerplate_max_words: int = setting(
        40,
        "A furniture line ('Follow us on', 'Sign up for our newsletter', 'All rights "
        "reserved') is dropped only when shorter than this: on 111 labelled article pages the "
        "19 such lines are all furniture, the longest 32 words; dropping them is +0.0056 "
        "precision.",
        minimum=0,
        maximum=1_000_000,
    )
    prose_junk_min_share: float = setting(
        0.5,
        "A page is junk (consent wall, anti-bot check, paywall, error page) when lines "
        "matching junk patterns make up this share of its characters; junk gets no digest so "
        "unrelated walls never match. 0.0 on 111 labelled article pages, 0.83-1.0 on the test "
        "walls.",
        minimum=0,
        maximum=1,
    )
    wall_model: bool = setting(
        True,
        "Also tell consent walls by what they say, in any language: the lines of a short "
        "page's prose are scored by the sentence model (a linear discriminant of their "
        "vectors, feedmd/model/walls.py). Of 173 real notices of two consent libraries it "
        "never learned from, in 16 languages, the phrases alone catch 28 and with it 173 "
        "(docs/accuracy.md). Off: phrases only, and the model is not loaded for it.",
    )
    wall_model_threshold: float = setting(
        2.0,
        "A line is consent-wall text when its discriminant score is at least this (0 is "
        "midway between the walls' and the news sentences' means). 2.0: 416 of 417 "
        "training notices and 173 of 173 unseen ones, 65 of 2,652 real article paragraphs "
        "(mostly site furniture: 'visit your account page', phone numbers); 3.0: 171 of "
        "173, 34 paragraphs.",
        minimum=-100,
        maximum=100,
    )
    wall_model_min_share: float = setting(
        0.8,
        "A short page is a consent wall when the lines read as wall text carry at least "
        "this share of its prose (a page reduced to its notice: ~1.0). 0.8: none of the 111 "
        "real article pages of eval/pages; 0.5 (prose_junk_min_share) took two short ones, "
        "mostly site text, at 0.53 and 0.65.",
        minimum=0,
        maximum=1,
    )
    wall_model_max_chars: int = setting(
        3000,
        "Only pages with at most this much prose are read for walls by meaning: a page "
        "reduced to its consent notice is short (the longest of the 226 whole banners of "
        "eval/walls is 659 characters).",
        minimum=0,
        maximum=1_000_000,
    )
    wall_model_max_lines: int = setting(
        12,
        "...and at most this many prose lines (a banner is a few).",
        minimum=0,
        maximum=1000,
    )
    host_furniture_check: bool = setting(
        True,
        "A body that stage 2 finds near-identical to an earlier body of the same host, under "
        "a headline sharing no content word with it, is that host's furniture (a wall or "
        "template the wall list missed), not a reprint: the item is kept and its body is not "
        "compared again in the run.",
    )
    shared_block_min_stories: int = setting(
        3,
        "A body that stage 2 finds near-identical to bodies under the headlines of at "
        "least this many unrelated stories (headlines sharing a content word count as one "
        "story), on any hosts, is a shared block (a consent platform's notice on many "
        "sites), not a reprint: the items of the run are kept and marked. 3, measured on "
        "the UCI News Aggregator headlines (docs/accuracy.md): one body under 3 unrelated "
        "headlines, 14% of the later items still dropped (5 headlines: 0.5%); one "
        "story's reprint on 3 hosts, 1.5% kept. 2 would keep every cross-host reprint "
        "under a headline sharing no word (15% of rewrites). 0: off.",
        minimum=0,
        maximum=1000,
        check=_off_or_at_least_two,
    )
    furniture_min_pages: int = setting(
        3,
        "A prose line printed on at least this many different pages of one host (stored or "
        "in this run) is the host's furniture (a standing disclaimer, a sign-off) and is left "
        "out of the prose, so two unrelated articles of that host do not share it. Two pages "
        "can share a line by chance (an update of a story); three is a pattern.",
        minimum=2,
        maximum=1_000_000,
    )
    tlsh_max_distance: int = setting(
        40,
        "TLSH distance at or below this is a reprint (NBC4/NBC6 copies 0, "
        "LA Times 29, NPR/WOSU 39; independent write-ups 52 and more).",
        minimum=0,
        maximum=2000,
    )

    shingle_containment_threshold: float = setting(
        0.5,
        "Share of the shorter prose's word 5-grams found in the longer at or above which "
        "two bodies are reprints (on 411 labelled page pairs built from real pages: 308 of "
        "309 reprints >= 0.5, "
        "different stories in the same furniture at most 0.299).",
        minimum=0,
        maximum=1,
    )
    similar_tlsh_distance: int = setting(
        100,
        "A body within this TLSH distance of an earlier one, but not a reprint, is kept and "
        "marked 'possible duplicate' (on 411 labelled page pairs: different stories >= 118).",
        minimum=0,
        maximum=2000,
    )
    similar_containment: float = setting(
        0.3,
        "Shingle containment at or above this, below the reprint threshold, marks a kept item "
        "'possible duplicate' (on 411 labelled page pairs: different stories at most 0.299).",
        minimum=0,
        maximum=1,
    )


def prose_settings_version(settings: BodySettings) -> str:
    """A short tag of the rule and the settings that shape prose and digests; a change
    makes stored digests stale (the store compares it with each body's)."""
    key = (
        f"{PROSE_RULE_VERSION}:{settings.prose_min_words}:"
        f"{settings.prose_max_link_share!r}:{settings.prose_min_chars}:"
        f"{settings.prose_short_min_words}:"
        f"{settings.prose_cjk_chars_per_word!r}:"
        f"{settings.prose_boilerplate_max_words}:"
        f"{settings.prose_junk_min_share!r}:{settings.wall_model}:"
        f"{settings.wall_model_threshold!r}:{settings.wall_model_min_share!r}:"
        f"{settings.wall_model_max_chars}:{settings.wall_model_max_lines}"
    )
    return hashlib.sha256(key.encode()).hexdigest()[:12]
