"""`feedmd eval pages`: the prose rule measured against human-checked article bodies.

Pages come as ``PAGES_DIR/truth.jsonl`` (``{"id", "url", "body"}`` per line) and
``PAGES_DIR/html/<id>.html.gz`` (scrapinghub/article-extraction-benchmark layout). Each page
goes through the real extraction path (``scrape.extract_page``: trafilatura Markdown, then
``markdown_to_prose``) and the prose that stage 2 fingerprints is scored against the body.
A page without a digest predicts nothing: stage 2 cannot compare it.

The metric is the benchmark's own: ``\\w+`` tokens, multisets of word 4-gram shingles; per
page tp/fp/fn normalised to sum 1, precision averaged over pages with a prediction, recall
over pages with a body, F1 from the two averages. ``reference=True`` scores trafilatura's
own plain text instead, comments off as in the pipeline: P 0.948, R 0.978, F1 0.963 on the
111 development pages (the README's 0.939 / 0.978 / 0.958 is with trafilatura's default
``include_comments=True``). It is what a line filter over the same extraction can approach.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trafilatura

from feedmd.errors import EvalDataError
from feedmd.model.walls import walls_for
from feedmd.models import Page
from feedmd.settings import Settings
from feedmd.stages.scrape import EXTRACTOR, extract_page, walls_removed
from feedmd.tools.evaluation.headlines import read_jsonl

EVAL_ORG = "eval"
SHINGLE_WORDS = 4
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class LabelledPage:
    """One page: its id, URL, checked body and raw HTML bytes."""

    id: str
    url: str
    body: str
    html: bytes


@dataclass(frozen=True)
class PageScore:
    """Shingle counts of one page, normalised so that tp + fp + fn = 1 (or all 0)."""

    id: str
    tp: float
    fp: float
    fn: float

    @property
    def precision(self) -> float:
        if self.fp == self.fn == 0:
            return 1.0
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        if self.fp == self.fn == 0:
            return 1.0
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


def load_pages(pages_dir: str | Path) -> list[LabelledPage]:
    """Read truth.jsonl and each page's html/<id>.html.gz, sorted by id."""
    folder = Path(pages_dir)
    if not folder.is_dir():
        raise EvalDataError(f"{folder}: not a directory of pages (truth.jsonl, html/)")
    truth = folder / "truth.jsonl"
    if not truth.is_file():
        raise EvalDataError(f"{truth}: missing")
    pages: dict[str, LabelledPage] = {}
    for row in read_jsonl(truth, ("id", "url", "body")):
        page_id = str(row["id"])
        if not page_id or "/" in page_id or page_id.startswith("."):
            raise EvalDataError(f"{truth}: bad page id {page_id!r}")
        if page_id in pages:
            raise EvalDataError(f"{truth}: duplicate id {page_id!r}")
        if not isinstance(row["body"], str):
            raise EvalDataError(f"{truth}: page {page_id}: body is not a string")
        html_path = folder / "html" / f"{page_id}.html.gz"
        try:
            html = gzip.decompress(html_path.read_bytes())
        except FileNotFoundError:
            raise EvalDataError(f"{html_path}: missing (page {page_id} of {truth})") from None
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise EvalDataError(f"{html_path}: cannot read: {exc}") from None
        pages[page_id] = LabelledPage(page_id, str(row["url"]), row["body"], html)
    if not pages:
        raise EvalDataError(f"{truth}: no pages")
    return [pages[key] for key in sorted(pages)]


def shingles(text: str, size: int = SHINGLE_WORDS) -> Counter[tuple[str, ...]]:
    """The multiset of word ``size``-grams of a text (a shorter text is one shingle)."""
    tokens = _TOKEN.findall(text or "")
    if not tokens:
        return Counter()
    return Counter(tuple(tokens[i : i + size]) for i in range(max(1, len(tokens) - size + 1)))


def score_page(page_id: str, truth: str, predicted: str) -> PageScore:
    """Shared, extra and missed shingles of one page, normalised to sum 1."""
    want, got = shingles(truth), shingles(predicted)
    tp = sum((want & got).values())
    fp = sum((got - want).values())
    fn = sum((want - got).values())
    total = tp + fp + fn
    if total:
        return PageScore(page_id, tp / total, fp / total, fn / total)
    return PageScore(page_id, 0.0, 0.0, 0.0)


def summarise(scores: Sequence[PageScore]) -> dict[str, float | None]:
    """Precision averaged over pages with a prediction, recall over pages with a body,
    F1 from the two averages (the benchmark's ``metrics_from_tp_fp_fns``)."""
    predicted = [s.precision for s in scores if s.tp + s.fp > 0]
    expected = [s.recall for s in scores if s.tp + s.fn > 0]
    precision = sum(predicted) / len(predicted) if predicted else None
    recall = sum(expected) / len(expected) if expected else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {
        "precision": None if precision is None else round(precision, 4),
        "recall": None if recall is None else round(recall, 4),
        "f1": None if f1 is None else round(f1, 4),
    }


def page_prose(page: LabelledPage, settings: Settings) -> tuple[str, str | None]:
    """The prose stage 2 would fingerprint for a page ('' without a digest), and the
    reason there is no digest (consent walls told by meaning included, as a run does)."""
    base = Page(url_hash=page.id, url=page.url, org=EVAL_ORG, status="failed", extractor=EXTRACTOR)
    result = extract_page(base, page.html, settings)
    result = walls_removed([result], walls_for(settings), settings)[0]
    if result.error:
        return "", result.error
    if result.digest is None:
        return "", result.no_digest_reason or "no digest"
    return result.prose, None


def reference_text(page: LabelledPage) -> tuple[str, str | None]:
    """trafilatura's own plain text of a page, the reference extraction."""
    html = page.html.decode("utf-8", errors="replace")
    text = trafilatura.extract(html, output_format="txt", include_comments=False) or ""
    return text, None if text else "trafilatura found no text"


def evaluate_pages(
    pages_dir: str | Path,
    settings: Settings,
    *,
    reference: bool = False,
    per_page: bool = False,
) -> dict[str, Any]:
    """Run `feedmd eval pages` on a folder and return the report.

    ``reference`` scores trafilatura's plain text instead of feedmd's prose; ``per_page``
    adds each page's precision, recall, predicted characters and no-digest reason.
    """
    pages = load_pages(pages_dir)
    scores: list[PageScore] = []
    rows: list[dict[str, Any]] = []
    missing: list[str] = []
    for page in pages:
        text, reason = reference_text(page) if reference else page_prose(page, settings)
        score = score_page(page.id, page.body, text)
        scores.append(score)
        if reason is not None:
            missing.append(page.id)
        rows.append(
            {
                "id": page.id,
                "url": page.url,
                "precision": round(score.precision, 4) if score.tp + score.fp else None,
                "recall": round(score.recall, 4),
                "chars": len(text),
                "no_digest_reason": reason,
            }
        )
    report: dict[str, Any] = {
        "dir": str(pages_dir),
        "extraction": "trafilatura-txt" if reference else "prose",
        "pages": len(pages),
        **summarise(scores),
        "no_digest": len(missing),
        "no_digest_pages": missing,
    }
    if per_page:
        report["per_page"] = rows
    return report
