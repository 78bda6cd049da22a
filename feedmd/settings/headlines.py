"""Stage 1's headline rules (the two-stage design's; docs/accuracy.md).

One part of ``Settings`` (``core.py`` assembles the parts into one flat, frozen dataclass).
"""

from __future__ import annotations

from dataclasses import dataclass

from feedmd.settings.fields import setting


@dataclass(frozen=True)
class HeadlineSettings:
    """Stage 1's headline rules (the two-stage design's; docs/accuracy.md)."""

    headline_min_tokens: int = setting(
        4,
        "A normalised headline with fewer tokens never clusters: 'Live updates' is too "
        "generic to merge with anything.",
        minimum=1,
        maximum=50,
    )
    jaccard_threshold: float = setting(
        0.6,
        "Token Jaccard at or above this means the same story (a Reuters/AP rewrite of one "
        "event scores 0.31, templated MarketBeat pairs 0.71; on 3,819 labelled news headlines "
        "0.5 finds 1,164 merges at precision 0.962 against 815 at 0.957, but precision on "
        "1,439 labelled headline pairs falls from 0.96 to 0.91).",
        minimum=0,
        maximum=1,
    )
    containment_threshold: float = setting(
        0.85,
        "Shared tokens over the smaller headline at or above this means the same story "
        "(0.85 catches 'AP: headline' against 'headline').",
        minimum=0,
        maximum=1,
    )
    containment_min_tokens: int = setting(
        5,
        "Containment only applies when the smaller headline has at least this many "
        "tokens, so a short headline is not 'contained' in every long one.",
        minimum=1,
        maximum=50,
    )
    simhash_max_bits: int = setting(
        3,
        "64-bit token simhashes differing in at most this many bits mean the same story "
        "(3: the near-duplicate setting of Manku et al. 2007).",
        minimum=0,
        maximum=64,
    )

    subject_gate: bool = setting(
        True,
        "Block headline matches between templated headlines with different short name-like "
        "subjects ('QuantumScape' / 'B2Gold ... Earnings Date and Estimates'). On 3,819 labelled "
        "news headlines it vetoes 2 of 817 merges; on 1,439 labelled headline pairs it removes 3 "
        "of 12 false positives and no true positive.",
    )
    recurring_title_check: bool = setting(
        True,
        "An identical headline from the same publisher under another URL (a series title, "
        "'Morning briefing', an instruction line scraped as a title) is confirmed on the body "
        "at stage 2 instead of being dropped on the title alone; when a body cannot be "
        "compared the title decides as before. On 3,819 labelled news headlines this adds 7 "
        "pages to scrape (0.18% of entries).",
    )
    subject_max_tokens: int = setting(
        3,
        "Longest differing lead run the subject gate treats as a subject; longer differing "
        "openings are real rewrites, not a template with another subject.",
        minimum=1,
        maximum=10,
    )
    cjk_threshold: float = setting(
        0.30,
        "IDF-weighted 3-gram Jaccard at or above this means the same story for Korean, "
        "Japanese and Chinese headlines with the same lead token (swept 0.45 / 0.40 / "
        "0.35 / 0.30 on 100 live Korean search results, 84 / 83 / 81 / 77 items left, every "
        "0.30 group checked by hand; low only because the lead-token gate carries precision).",
        minimum=0,
        maximum=1,
    )
    cjk_idf_prior_docs: int = setting(
        10,
        "Virtual documents added to the CJK IDF corpus (window history plus batch), so a "
        "small corpus gives near-uniform weights instead of the unstable weights of an IDF "
        "over one batch.",
        minimum=0,
        maximum=1_000_000,
    )
