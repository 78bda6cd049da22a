"""Two bodies side by side with the passages they share marked, so a reviewer judges a
stage-2 merge ("reprint") or a "possible duplicate" in seconds.

A passage is shared when its words are covered by a word 5-gram found in both bodies (the
unit stage 2's shingle containment counts). Each side shows a window of its text around its
first shared passage; the template marks shared words with ``<mark>``. Pure functions:
text in, segments out (the template escapes them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from feedmd.delivery.render import plain_text, render_html

SHINGLE_WORDS = 5
WINDOW_WORDS = 220
LEAD_WORDS = 25
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Excerpt:
    """A window of one body: (text, shared) segments, and how much of the body is shared."""

    segments: tuple[tuple[str, bool], ...]
    words: int
    shared_words: int
    cut_before: bool
    cut_after: bool

    @property
    def shared_share(self) -> float:
        """The share of this body's words inside shared passages (0..1)."""
        return self.shared_words / self.words if self.words else 0.0


def _text(markdown: str) -> str:
    return plain_text(render_html(markdown))


def _key(word: str) -> str:
    return re.sub(r"\W+", "", word.lower())


def _covered(words: list[str], shared: set[tuple[str, ...]]) -> list[bool]:
    keys = [_key(w) for w in words]
    marked = [False] * len(words)
    for start in range(len(words) - SHINGLE_WORDS + 1):
        if tuple(keys[start : start + SHINGLE_WORDS]) in shared:
            for index in range(start, start + SHINGLE_WORDS):
                marked[index] = True
    return marked


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    keys = [_key(w) for w in words]
    return {
        tuple(keys[i : i + SHINGLE_WORDS])
        for i in range(len(keys) - SHINGLE_WORDS + 1)
        if all(keys[i : i + SHINGLE_WORDS])
    }


def _excerpt(words: list[str], marked: list[bool]) -> Excerpt:
    first = next((i for i, m in enumerate(marked) if m), 0)
    start = max(0, first - LEAD_WORDS)
    end = min(len(words), start + WINDOW_WORDS)
    segments: list[tuple[str, bool]] = []
    for index in range(start, end):
        text, shared = words[index], marked[index]
        if segments and segments[-1][1] == shared:
            segments[-1] = (f"{segments[-1][0]} {text}", shared)
        elif segments:
            # the space between two segments goes with the earlier one, outside <mark>
            previous, was_shared = segments[-1]
            if was_shared:
                segments.append((" " + text, shared))
            else:
                segments[-1] = (previous + " ", was_shared)
                segments.append((text, shared))
        else:
            segments.append((text, shared))
    return Excerpt(tuple(segments), len(words), sum(marked), start > 0, end < len(words))


def side_by_side(first: str, second: str) -> tuple[Excerpt, Excerpt]:
    """Excerpts of two bodies (Markdown) with the passages they share marked."""
    words_a = _WORD.findall(_text(first))
    words_b = _WORD.findall(_text(second))
    shared = _shingles(words_a) & _shingles(words_b)
    return (
        _excerpt(words_a, _covered(words_a, shared)),
        _excerpt(words_b, _covered(words_b, shared)),
    )
