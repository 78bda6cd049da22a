"""`feedmd eval headlines` and `feedmd eval pairs`: stage 1 measured on labelled data.

Headlines (``{"id", "title", "url", "publisher", "published", "story"}`` per line) are
replayed oldest first through the real stage 1 and the real store, in batches of
``batch_minutes`` as a poller would see them, in a temporary SQLite file. Each merge is a
duplicate and the kept item it points at; it is right when both carry the same story.
The story labels are event-level, so recall against them is only a diagnostic: merge
precision is the figure that matters.

Pairs (``{"id", "a", "b", "label"}``, label same / different / unsure) go through the same
stage 1, one pair at a time: a pair is "predicted same" when the second headline is
dropped as a duplicate of the first. Unsure pairs are left out.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from feedmd.errors import EvalDataError
from feedmd.fingerprints import cjk
from feedmd.fingerprints.subject_gate import CasingStats, gated_match
from feedmd.models import Entry
from feedmd.pipeline import decide_metadata
from feedmd.settings import Settings
from feedmd.settings.config import Config, FeedConfig
from feedmd.sources.links import resolve_offline
from feedmd.stages import retry, stage1
from feedmd.store import open_store
from feedmd.timeutil import parse_iso

EVAL_ORG = "eval"
EVAL_FEED = "eval"


@dataclass(frozen=True)
class LabelledHeadline:
    """One labelled headline row."""

    id: str
    title: str
    url: str
    publisher: str
    published: str
    story: str


def read_jsonl(path: str | Path, required: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Yield the objects of a JSON Lines file, checking the required keys of each line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalDataError(f"{path}: cannot read: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalDataError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise EvalDataError(f"{path}:{number}: not a JSON object")
        missing = [key for key in required if key not in row]
        if missing:
            raise EvalDataError(f"{path}:{number}: missing key(s) {', '.join(missing)}")
        yield row


def load_headlines(path: str | Path) -> list[LabelledHeadline]:
    """Read a labelled headline file."""
    keys = ("id", "title", "url", "publisher", "published", "story")
    rows = [LabelledHeadline(**{k: str(row[k]) for k in keys}) for row in read_jsonl(path, keys)]
    ids = Counter(row.id for row in rows)
    repeated = [key for key, count in ids.items() if count > 1]
    if repeated:
        raise EvalDataError(f"{path}: duplicate id {repeated[0]!r}")
    return rows


def _entry(row: LabelledHeadline) -> Entry:
    try:
        when = parse_iso(row.published)
    except ValueError:
        raise EvalDataError(f"row {row.id}: bad published time {row.published!r}") from None
    resolution = resolve_offline(row.url)
    return Entry(
        feed=EVAL_FEED,
        org=EVAL_ORG,
        entry_id=row.id,
        link=row.url,
        url=resolution.url,
        title=row.title,
        publisher=row.publisher,
        published=when,
        fetched=when,
        link_resolution=resolution.method,
    )


def replay_headlines(
    rows: Sequence[LabelledHeadline], settings: Settings, batch_minutes: float = 60.0
) -> dict[str, tuple[str, str | None, str | None, float | None]]:
    """Replay rows through stage 1 and a temporary store; return for each row id its
    (decision, rule, matched row id, score)."""
    entries = sorted((_entry(row) for row in rows), key=lambda e: (e.published, e.entry_id))
    config = Config(
        settings=settings,
        feeds=(FeedConfig(name=EVAL_FEED, url="https://eval.invalid/feed", org=EVAL_ORG),),
    )
    with tempfile.TemporaryDirectory(prefix="feedmd-eval-") as folder:
        store = open_store(Path(folder) / "eval.db")
        try:
            store.sync_feeds(config)
            for batch in _batches(entries, batch_minutes):
                now = batch[-1].published
                run_id = store.start_run(now, now, settings)
                # the pipeline's step 2; headlines alone: no pages, no stage 2
                _window, first = decide_metadata(store, batch, settings, now)
                store.persist(
                    run_id, [], first, {}, {}, settings, now, retry.feed_retry_after(settings)
                )
            outcomes = store.entry_outcomes()
        finally:
            store.close()
    return outcomes


def _batches(entries: Sequence[Entry], minutes: float) -> Iterator[list[Entry]]:
    if not entries:
        return
    width = timedelta(minutes=minutes)
    start = entries[0].published
    batch: list[Entry] = []
    for entry in entries:
        if entry.published >= start + width and batch:
            yield batch
            batch = []
            while entry.published >= start + width:
                start += width
        batch.append(entry)
    if batch:
        yield batch


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def score_headlines(
    rows: Sequence[LabelledHeadline],
    outcome: dict[str, tuple[str, str | None, str | None, float | None]],
) -> dict[str, Any]:
    """Merge precision, merges by rule, false merges, pairwise and B-cubed P/R/F1 against
    the story labels, and the largest cluster."""
    by_id = {row.id: row for row in rows}
    merges = [
        (row_id, matched, rule, score)
        for row_id, (decision, rule, matched, score) in outcome.items()
        if decision == "duplicate" and matched is not None
    ]
    right = [m for m in merges if by_id[m[0]].story == by_id[m[1]].story]
    false_merges = [
        {
            "id": a,
            "title": by_id[a].title,
            "story": by_id[a].story,
            "matched_id": b,
            "matched_title": by_id[b].title,
            "matched_story": by_id[b].story,
            "rule": rule,
            "score": score,
        }
        for a, b, rule, score in merges
        if by_id[a].story != by_id[b].story
    ]
    cluster_of = {row.id: row.id for row in rows}
    for a, b, _, _ in merges:
        cluster_of[a] = b
    clusters: defaultdict[str, list[str]] = defaultdict(list)
    for row_id, head in cluster_of.items():
        clusters[head].append(row_id)
    stories: defaultdict[str, list[str]] = defaultdict(list)
    for row in rows:
        stories[row.story].append(row.id)
    predicted_pairs = sum(len(m) * (len(m) - 1) // 2 for m in clusters.values())
    gold_pairs = sum(len(m) * (len(m) - 1) // 2 for m in stories.values())
    shared_pairs = 0
    for members in clusters.values():
        counts = Counter(by_id[m].story for m in members)
        shared_pairs += sum(n * (n - 1) // 2 for n in counts.values())
    pair_p = shared_pairs / predicted_pairs if predicted_pairs else 1.0
    pair_r = shared_pairs / gold_pairs if gold_pairs else 1.0
    b3_p = b3_r = 0.0
    for members in clusters.values():
        counts = Counter(by_id[m].story for m in members)
        for member in members:
            same = counts[by_id[member].story]
            b3_p += same / len(members)
            b3_r += same / len(stories[by_id[member].story])
    b3_p /= len(rows) or 1
    b3_r /= len(rows) or 1
    largest_head = max(clusters, key=lambda head: (len(clusters[head]), head), default=None)
    return {
        "items": len(rows),
        "merges": len(merges),
        "merge_precision": round(len(right) / len(merges), 4) if merges else None,
        "merges_by_rule": dict(sorted(Counter(m[2] or "" for m in merges).items())),
        "false_merges": false_merges,
        "pairwise": {
            "precision": round(pair_p, 4),
            "recall": round(pair_r, 4),
            "f1": round(_f1(pair_p, pair_r), 4),
        },
        "bcubed": {
            "precision": round(b3_p, 4),
            "recall": round(b3_r, 4),
            "f1": round(_f1(b3_p, b3_r), 4),
        },
        "largest_cluster": {
            "size": len(clusters[largest_head]) if largest_head else 0,
            "title": by_id[largest_head].title if largest_head else "",
        },
    }


def evaluate_headlines(
    path: str | Path, settings: Settings, batch_minutes: float = 60.0
) -> dict[str, Any]:
    """Run `feedmd eval headlines` on a file and return the report."""
    rows = load_headlines(path)
    report = score_headlines(rows, replay_headlines(rows, settings, batch_minutes))
    return {"file": str(path), **report}


def pair_matches(a: str, b: str, settings: Settings, casing: CasingStats) -> str | None:
    """The rule under which stage 1 would merge headline b into headline a, or None.

    Uses stage 1's own matchers: character 3-grams behind the lead-token gate when both
    are CJK, else seed 003's rules and the subject gate (casing learned from ``casing``)."""
    first, second = stage1.prepare(_pair_entry("a", a)), stage1.prepare(_pair_entry("b", b))
    if first.is_cjk != second.is_cjk:
        return None
    if first.is_cjk:
        stats = cjk.GramStats.build([first.grams, second.grams], settings.cjk_idf_prior_docs)
        found = cjk.match_cjk(
            second.grams, second.lead, first.grams, first.lead, stats, settings.cjk_threshold
        )
        return "cjk" if found else None
    match, _ = gated_match(
        b, second.tokens, second.headline, a, first.tokens, first.headline, settings, casing
    )
    return match.rule if match else None


def _pair_entry(key: str, title: str) -> Entry:
    when = parse_iso("2026-01-01T00:00:00Z")
    return Entry(
        feed=EVAL_FEED,
        org=EVAL_ORG,
        entry_id=key,
        link=f"https://{key}.invalid/",
        url=f"https://{key}.invalid/",
        title=title,
        publisher="",
        published=when,
        fetched=when,
    )


def evaluate_pairs(path: str | Path, settings: Settings) -> dict[str, Any]:
    """Run `feedmd eval pairs` on a file: the headline matcher on labelled pairs. The
    subject gate learns how words are capitalised from all the file's headlines, as it
    learns it from the window in a real run."""
    rows = [
        row
        for row in read_jsonl(path, ("id", "a", "b", "label"))
        if row["label"] in ("same", "different")
    ]
    casing = CasingStats.build(str(t) for row in rows for t in (row["a"], row["b"]))
    counts: Counter[str] = Counter()
    errors: list[dict[str, Any]] = []
    same: list[str] = []
    for row in rows:
        rule = pair_matches(str(row["a"]), str(row["b"]), settings, casing)
        predicted, actual = rule is not None, row["label"] == "same"
        if predicted:
            same.append(str(row["id"]))
        kind = {(True, True): "tp", (True, False): "fp", (False, True): "fn", (False, False): "tn"}[
            (predicted, actual)
        ]
        counts[kind] += 1
        if kind in ("fp", "fn"):
            errors.append(
                {"id": row["id"], "kind": kind, "a": row["a"], "b": row["b"], "rule": rule}
            )
    tp, fp, fn, tn = (counts[k] for k in ("tp", "fp", "fn", "tn"))
    return {
        "file": str(path),
        "pairs": tp + fp + fn + tn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "errors": errors,
        "predicted_same": same,
    }
