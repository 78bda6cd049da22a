"""`feedmd fingerprint`, `feedmd compare` and `feedmd eval reprints`: what stage 2 sees in a
page, and how its two matchers do on labelled reprint pairs.

Pairs (``{"id", "a_html", "b_html", "label"}`` with paths relative to the pairs file, or
``a_text`` / ``b_text``; label ``reprint`` or ``different``) go through the real extraction
(trafilatura, prose, digest, shingles) and the real stage-2 judge: b is compared with a.
The report gives recall of reprints and the false merges for each matcher alone and for
both combined, and how many pairs had a page with no digest.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections import Counter
from pathlib import Path
from typing import Any

from feedmd.errors import EvalDataError, FetchError
from feedmd.fingerprints.shingles import containment, unpack
from feedmd.model.walls import walls_for
from feedmd.models import Match, Page
from feedmd.settings import Settings
from feedmd.sources.http import Fetcher
from feedmd.stages.prose import junk_verdict
from feedmd.stages.scrape import extract_page, fingerprint, walls_removed
from feedmd.stages.stage2 import BodyVerdict, _Scope, judge
from feedmd.tools.evaluation.headlines import read_jsonl

_BASE = Page(url_hash="", url="", org="", status="failed")


def load_page(source: str, settings: Settings) -> Page:
    """A page from a file path (HTML) or an http(s) URL, extracted and fingerprinted as a
    run would (consent walls told by meaning included)."""
    return walls_removed([_extracted_page(source, settings)], walls_for(settings), settings)[0]


def _extracted_page(source: str, settings: Settings) -> Page:
    base = dataclasses.replace(_BASE, url=source)
    if source.startswith(("http://", "https://")):

        async def fetch() -> Page:
            async with Fetcher(settings) as fetcher:
                response = await fetcher.get(source)
            if response.status >= 400:
                raise FetchError(f"{source}: HTTP {response.status}")
            return extract_page(
                dataclasses.replace(base, url=response.url), response.body, settings
            )

        return asyncio.run(fetch())
    path = Path(source)
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise EvalDataError(f"{source}: cannot read: {exc}") from None
    return extract_page(base, body, settings)


def describe_page(source: str, page: Page, settings: Settings) -> dict[str, Any]:
    """What feedmd sees in a page: prose length, digest or why there is none, junk verdict."""
    return {
        "source": source,
        "status": page.status,
        "error": page.error,
        "markdown_chars": len(page.markdown),
        "prose_chars": len(page.prose),
        "digest": page.digest,
        "no_digest_reason": page.no_digest_reason,
        "junk": junk_verdict(page.markdown, settings),
        "shingles": len(unpack(page.shingles)),
    }


def compare_pages(a: Page, b: Page, settings: Settings) -> dict[str, Any]:
    """Both matchers' scores for b against a, and stage 2's verdict."""
    if a.digest is None or b.digest is None:
        return {
            "verdict": "no digest",
            "tlsh_distance": None,
            "containment": None,
            "decided_by": None,
            "no_digest": [p.no_digest_reason for p in (a, b) if p.digest is None],
        }
    verdict = _judge_pair(a, b, settings)
    return {
        "verdict": verdict.tier,
        "decided_by": verdict.rule,
        "tlsh_distance": verdict.tlsh_distance,
        # the exact score, also when the candidate index offered no candidate
        "containment": round(float(containment(unpack(a.shingles), unpack(b.shingles))), 4),
    }


def _judge_pair(a: Page, b: Page, settings: Settings) -> BodyVerdict:
    scope = _Scope()
    scope.add(a.digest or "", a.shingles, Match(batch_key="a"))
    # the TLSH index only answers within similar_tlsh_distance: widen it so the distance
    # of any pair is reported
    wide = dataclasses.replace(
        settings, similar_tlsh_distance=max(settings.similar_tlsh_distance, 2000)
    )
    verdict = judge(b.digest or "", b.shingles, scope, wide)
    if (
        verdict.tier == "similar"
        and verdict.rule == "tlsh"
        and (verdict.tlsh_distance or 0) > settings.similar_tlsh_distance
    ):
        verdict = dataclasses.replace(verdict, tier="different", rule=None)
    return verdict


def _pair_page(row: dict[str, Any], side: str, folder: Path, settings: Settings) -> Page:
    if f"{side}_text" in row:
        return fingerprint(
            dataclasses.replace(_BASE, status="ok", markdown=str(row[f"{side}_text"])), settings
        )
    key = f"{side}_html"
    if key not in row:
        raise EvalDataError(f"pair {row.get('id')}: needs {side}_html or {side}_text")
    path = folder / str(row[key])
    try:
        markdown = _markdown(path)
    except OSError as exc:
        raise EvalDataError(f"pair {row.get('id')}: cannot read {path}: {exc}") from None
    if markdown is None:
        return dataclasses.replace(_BASE, url=str(path), error="extraction failed")
    return fingerprint(
        dataclasses.replace(_BASE, url=str(path), status="ok", markdown=markdown), settings
    )


@functools.lru_cache(maxsize=4096)
def _markdown_of(path: Path, size: int, mtime_ns: int) -> str | None:
    page = extract_page(dataclasses.replace(_BASE, url=str(path)), path.read_bytes(), Settings())
    return page.markdown if page.status == "ok" else None


def _markdown(path: Path) -> str | None:
    """trafilatura's Markdown of a file, extracted once per process: a sweep re-scores the
    same pages under many settings, and extraction is the slow part (extraction does not
    depend on any setting)."""
    stat = path.stat()
    return _markdown_of(path, stat.st_size, stat.st_mtime_ns)


def evaluate_reprints(path: str | Path, settings: Settings) -> dict[str, Any]:
    """Score stage 2 on labelled reprint pairs: per matcher and combined."""
    folder = Path(path).parent
    counts: Counter[str] = Counter()
    false_merges: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    no_digest = 0
    matchers = ("tlsh", "shingles", "combined")
    found = {name: 0 for name in matchers}
    predicted: list[str] = []
    wrong = {name: 0 for name in matchers}
    rows = list(read_jsonl(path, ("id", "label")))
    sides = [_pair_page(row, side, folder, settings) for row in rows for side in ("a", "b")]
    # consent walls told by meaning, as a run does: every side in one batched pass
    sides = walls_removed(sides, walls_for(settings), settings)
    for n, row in enumerate(rows):
        label = str(row["label"])
        if label not in ("reprint", "different"):
            raise EvalDataError(f"pair {row['id']}: label must be reprint or different")
        counts[label] += 1
        a, b = sides[2 * n], sides[2 * n + 1]
        if a.digest is None or b.digest is None:
            no_digest += 1
            if label == "reprint":
                missed.append({"id": row["id"], "reason": "no digest"})
            continue
        verdict = _judge_pair(a, b, settings)
        by = {
            "tlsh": verdict.tlsh_distance is not None
            and verdict.tlsh_distance <= settings.tlsh_max_distance,
            "shingles": verdict.containment is not None
            and verdict.containment >= settings.shingle_containment_threshold,
            "combined": verdict.tier == "reprint",
        }
        for name in matchers:
            if by[name]:
                if label == "reprint":
                    found[name] += 1
                else:
                    wrong[name] += 1
        if by["combined"]:
            predicted.append(str(row["id"]))
        if label == "different" and by["combined"]:
            false_merges.append(
                {
                    "id": row["id"],
                    "rule": verdict.rule,
                    "tlsh_distance": verdict.tlsh_distance,
                    "containment": verdict.containment,
                }
            )
        if label == "reprint" and not by["combined"]:
            missed.append(
                {
                    "id": row["id"],
                    "tlsh_distance": verdict.tlsh_distance,
                    "containment": verdict.containment,
                }
            )
    reprints = counts["reprint"]
    per_matcher = {
        name: {
            "reprints_found": found[name],
            "reprint_recall": round(found[name] / reprints, 4) if reprints else None,
            "false_merges": wrong[name],
            "precision": round(found[name] / (found[name] + wrong[name]), 4)
            if found[name] + wrong[name]
            else None,
        }
        for name in matchers
    }
    return {
        "file": str(path),
        "pairs": reprints + counts["different"],
        "reprints": reprints,
        "different": counts["different"],
        "reprint_recall": per_matcher["combined"]["reprint_recall"],
        "precision": per_matcher["combined"]["precision"],
        "false_merges": false_merges,
        "no_digest": no_digest,
        "by_matcher": per_matcher,
        "missed": missed,
        "predicted_reprints": predicted,
    }
