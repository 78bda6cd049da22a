"""A tokenizer-free token estimate and a cheap language guess, for the LLM bundle.

Tokens: no tokenizer with its vocabulary inside the package installs offline (tiktoken
downloads its vocabulary at run time; this machine and many pipelines' have no network),
so the estimate is the usual rule of thumb of BPE tokenizers: about 4 characters per
token for Latin, Cyrillic and similar text (whitespace included), and about one token per
CJK ideograph, kana or Hangul syllable (these tokenizers spend one or more tokens on each).
Rounded up per run of each kind. It is an estimate for budgeting context windows, not a
count: keep a margin (``--max-tokens`` below the model's window).

Language: a script decides where one script settles it (Hangul: ko, kana: ja, Han alone:
zh, Cyrillic: ru, Greek: el, Arabic: ar, Hebrew: he, Thai: th, Devanagari: hi); Latin text
is told apart by its commonest short words (en, de, fr, es, it, pt, nl); otherwise the
feed URL's ``hl=`` parameter (Google News feeds carry one); otherwise ``und``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from urllib.parse import parse_qs, urlsplit

CHARS_PER_TOKEN = 4

_CJK = re.compile(
    r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    r"\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]"
)

_SCRIPTS = (
    ("ko", re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")),
    ("ja", re.compile(r"[\u3040-\u30ff]")),
    ("zh", re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")),
    ("ru", re.compile(r"[\u0400-\u04ff]")),
    ("el", re.compile(r"[\u0370-\u03ff]")),
    ("ar", re.compile(r"[\u0600-\u06ff]")),
    ("he", re.compile(r"[\u0590-\u05ff]")),
    ("th", re.compile(r"[\u0e00-\u0e7f]")),
    ("hi", re.compile(r"[\u0900-\u097f]")),
)

_STOPWORDS = {
    "en": {"the", "and", "of", "to", "in", "is", "that", "for", "with", "was", "on", "said"},
    "de": {"der", "die", "und", "das", "ist", "nicht", "mit", "den", "von", "sich", "auf"},
    "fr": {"le", "la", "les", "et", "des", "est", "une", "dans", "pour", "que", "qui", "du"},
    "es": {"el", "los", "las", "y", "que", "del", "por", "una", "con", "para", "es", "se"},
    "it": {"il", "di", "che", "della", "per", "una", "sono", "gli", "nel", "con", "non"},
    "pt": {"o", "os", "que", "do", "da", "em", "um", "uma", "para", "com", "não", "dos"},
    "nl": {"de", "het", "een", "en", "van", "dat", "niet", "zijn", "op", "voor", "met"},
}
_WORD = re.compile(r"[^\W\d_]+")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ceil(other characters / 4) + one per CJK character."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / CHARS_PER_TOKEN)


def detect_language(text: str, feed_url: str = "") -> str:
    """A BCP 47 primary language tag for ``text`` (see the module's docstring), or 'und'."""
    sample = unicodedata.normalize("NFC", text[:4000])
    letters = sum(1 for ch in sample if ch.isalpha())
    if letters:
        for tag, script in _SCRIPTS:
            share = len(script.findall(sample)) / letters
            if tag == "zh" and share > 0.2 and not _SCRIPTS[1][1].search(sample):
                return tag
            if tag != "zh" and share > (0.05 if tag == "ja" else 0.2):
                return tag
        words = [w.lower() for w in _WORD.findall(sample)]
        if len(words) >= 5:
            scores = {tag: sum(1 for w in words if w in stop) for tag, stop in _STOPWORDS.items()}
            best = max(scores, key=lambda tag: scores[tag])
            if scores[best] >= 2 and list(scores.values()).count(scores[best]) == 1:
                return best
    return _hl(feed_url) or "und"


def _hl(feed_url: str) -> str:
    values = parse_qs(urlsplit(feed_url).query).get("hl")
    tag = values[0].split("-")[0].split("_")[0].lower() if values else ""
    return tag if tag.isalpha() and 2 <= len(tag) <= 3 else ""
