"""`feedmd eval walls`: consent walls told apart, measured on real notices; and the build of
the discriminant the sentence model tells them with (``feedmd/model/walls.py``).

The notices (eval/walls/notices.jsonl) are the texts four consent libraries ship, in 38
languages. Two libraries (``TRAINING_PROJECTS``) teach the discriminant; the others are
only ever measured, so a figure on them says how a wall nobody here saw is met.

A notice is judged as the page it stands for: its lines as a page's prose, decided by the
page reduction's own rule (``stages.prose.junk_verdict`` with the phrases, then the
meaning of each line); caught when the page gets a wall verdict.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from feedmd.errors import EvalDataError
from feedmd.model.encoder import Encoder
from feedmd.model.walls import ConsentWalls, Discriminant
from feedmd.settings import Settings
from feedmd.stages.prose import wall_verdict
from feedmd.tools.evaluation.headlines import read_jsonl

TRAINING_PROJECTS = ("klaro", "tarteaucitron")
# Ridge added to the pooled covariance: 384 dimensions from ~1,700 vectors need it to be
# invertible and stable; 1e-3 and 1e-2 give the same held-out figures (docs/accuracy.md).
RIDGE = 1e-3
_TAG = re.compile(r"<[^>]+>")
_PLACEHOLDER = re.compile(r"\{[^}]*\}|%\d*\$?[sd]")


def notice_text(raw: str) -> str:
    """A library's notice as a reader sees it: tags, ``{placeholders}`` and ``%s`` out."""
    return " ".join(_PLACEHOLDER.sub("", _TAG.sub(" ", raw)).split())


def load_notices(path: str | Path) -> list[dict[str, Any]]:
    """The notices of a file (``id``, ``lang``, ``project``, ``text``)."""
    return list(read_jsonl(path, ("id", "lang", "project", "text")))


def news_texts(eval_dir: Path, fixtures: Path) -> list[str]:
    """News text that is not a wall: the news sentences of ``eval_dir/news-sentences`` (seven
    languages) and the fixture news day's paragraphs."""
    texts = [
        str(row["text"])
        for path in sorted((eval_dir / "news-sentences").glob("*.jsonl"))
        for row in read_jsonl(path, ("text",))
    ]
    spec = importlib.util.spec_from_file_location("newsday", fixtures / "newsday.py")
    if spec is None or spec.loader is None:
        raise EvalDataError(f"no fixture news day at {fixtures}")
    newsday = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(newsday)
    texts += [paragraph for body in newsday.BODIES.values() for paragraph in body]
    return [t for t in texts if t.strip()]


def build_discriminant(
    walls: Sequence[str], news: Sequence[str], encoder: Encoder, ridge: float = RIDGE
) -> Discriminant:
    """Fisher's linear discriminant between the vectors of ``walls`` and of ``news``."""
    wall_vectors = encoder.encode(list(walls)).astype(np.float64)
    news_vectors = encoder.encode(list(news)).astype(np.float64)
    mean_wall, mean_news = wall_vectors.mean(axis=0), news_vectors.mean(axis=0)
    spread = np.cov(wall_vectors.T) + np.cov(news_vectors.T)
    spread += ridge * np.eye(spread.shape[0])
    weights = np.linalg.solve(spread, mean_wall - mean_news)
    return Discriminant(weights, float(-weights @ (mean_wall + mean_news) / 2))


def training_discriminant(eval_dir: Path, fixtures: Path, encoder: Encoder) -> Discriminant:
    """The discriminant as shipped: ``TRAINING_PROJECTS``' notices against ``news_texts``."""
    notices = load_notices(eval_dir / "walls" / "notices.jsonl")
    walls = [notice_text(str(n["text"])) for n in notices if n["project"] in TRAINING_PROJECTS]
    return build_discriminant([w for w in walls if w], news_texts(eval_dir, fixtures), encoder)


def _rate(hits: Iterable[bool]) -> dict[str, Any]:
    counted = Counter(hits)
    total = counted[True] + counted[False]
    return {"notices": total, "caught": counted[True], "share": round(counted[True] / total, 4)}


def evaluate_walls(
    path: str | Path, settings: Settings, encoder: Encoder | None = None
) -> dict[str, Any]:
    """Each notice as a page reduced to it: caught or not, overall, for the notices the
    discriminant never saw, by project and by language; the missed ones listed."""
    notices = load_notices(path)
    if encoder is None:
        from feedmd.model.encoder import E5Encoder

        encoder = E5Encoder(settings.event_model_path)
    walls = ConsentWalls(encoder, settings.wall_model_threshold)
    caught: list[tuple[dict[str, Any], bool]] = []
    for notice in notices:
        lines = [notice_text(str(notice["text"]))]
        verdict = wall_verdict(lines, settings, walls if settings.wall_model else None)
        caught.append((notice, verdict is not None))
    by_project: dict[str, list[bool]] = {}
    by_language: dict[str, list[bool]] = {}
    for notice, hit in caught:
        by_project.setdefault(str(notice["project"]), []).append(hit)
        by_language.setdefault(str(notice["lang"]), []).append(hit)
    unseen = [hit for notice, hit in caught if notice["project"] not in TRAINING_PROJECTS]
    return {
        "file": str(path),
        **_rate(hit for _, hit in caught),
        "unseen_projects": _rate(unseen),
        "by_project": {name: _rate(hits) for name, hits in sorted(by_project.items())},
        "by_language": {name: _rate(hits) for name, hits in sorted(by_language.items())},
        "missed": [
            {"id": n["id"], "lang": n["lang"], "text": notice_text(str(n["text"]))[:200]}
            for n, hit in caught
            if not hit
        ],
    }


def write_discriminant(discriminant: Discriminant, path: Path) -> None:
    """Store a discriminant as ``np.savez`` (weights, bias)."""
    np.savez(path, weights=discriminant.weights, bias=np.float64(discriminant.bias))
