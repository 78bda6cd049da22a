"""`feedmd explain ITEM`: the whole decision trail of one item, from the store.

Users of every feed reader ask why an item was dropped. The store keeps, for every entry
ever seen, the stage that decided, the rule, the score against its threshold, the item it
matched and the complete evidence (``items.evidence_json``). This module finds items (by
id, URL or a search string) and turns that record into a trail: each stage passed, the
deciding rule, both items side by side, the evidence rendered as bounded excerpts (seed
004: the complete evidence stays in the store; ``--json`` gives all of it), the window and
the scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from feedmd.fingerprints.urls import url_hash
from feedmd.ids import parse_id
from feedmd.store import Store

# How much of a list of evidence (shared tokens, blocked matches) the text shows.
EXCERPT_ITEMS = 8
EXCERPT_CHARS = 160


@dataclass(frozen=True)
class Trail:
    """An item's decision trail, ready to print or to dump as JSON."""

    item: dict[str, Any]
    matched: dict[str, Any] | None
    duplicates: list[dict[str, Any]]
    stages: list[dict[str, Any]]
    # the item's event decision (docs/events.md); None when no run placed it in an event
    event: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """Everything, evidence complete."""
        return {
            "item": self.item,
            "matched": self.matched,
            "duplicates": self.duplicates,
            "stages": self.stages,
            "event": self.event,
        }


def find_items(store: Store, query: str, limit: int = 20) -> list[int]:
    """Item ids for an item id, a URL (raw or any form that normalises alike), or a search
    string in titles and publishers, newest first."""
    text = query.strip()
    wanted = parse_id(text)  # not isdigit() alone: '²' and 20-digit numbers are not ids
    if wanted is not None and store.item_exists(wanted):
        return [wanted]
    if text.startswith(("http://", "https://")):
        return store.items_by_url(text, url_hash(text), limit)
    return store.items_by_text(text, limit)


def _brief(record: dict[str, Any]) -> dict[str, Any]:
    return {
        key: record.get(key)
        for key in (
            "id",
            "feed",
            "org",
            "title_raw",
            "publisher",
            "url_raw",
            "published_at",
            "decision",
            "stage",
            "rule",
            "score",
            "threshold",
        )
    }


def explain(store: Store, item_id: int) -> Trail | None:
    """The trail of one item, or None when no such item exists."""
    record = store.item_record(item_id)
    if record is None:
        return None
    matched_id = record.get("matched_item_id")
    matched = store.item_record(int(matched_id)) if matched_id else None
    duplicates = [
        _brief(dup) for dup_id in store.duplicate_ids(item_id) if (dup := store.item_record(dup_id))
    ]
    return Trail(
        item=record,
        matched=_brief(matched) if matched else None,
        duplicates=duplicates,
        stages=_stages(record),
        event=_event(store, item_id),
    )


def _event(store: Store, item_id: int) -> dict[str, Any] | None:
    """The item's event decision: the event (its canonical item's id), the item it joined,
    the cosine against the threshold, the model, a veto, a reviewer's split, and the
    event's kept members."""
    found = store.item_event(item_id)
    if found is None:
        return None
    members = store.event_member_ids(found.event_id)
    return {
        "event_id": found.event_id,
        "canonical": found.event_id == item_id,
        "joined_item_id": found.joined_item_id,
        "score": found.score,
        "threshold": found.threshold,
        "model": found.model,
        "veto": found.veto,
        "split_by": found.split_by,
        "split_from_event": found.split_from,
        "members": members,
    }


def _event_lines(event: dict[str, Any]) -> list[str]:
    """The event decision as text."""
    if event["joined_item_id"] is not None:
        how = (
            f"joined item {event['joined_item_id']} at cosine {event['score']:g} >= "
            f"threshold {event['threshold']:g}"
        )
    elif event["split_by"]:
        how = f"split from event {event['split_from_event']} by {event['split_by']}"
    elif event["veto"]:
        how = f"opened it: cosine {event['score']:g}, vetoed: {event['veto']}"
    elif event["score"]:
        how = f"opened it: nearest cosine {event['score']:g} < its threshold {event['threshold']:g}"
    else:
        how = f"opened it: nothing at or above threshold {event['threshold']:g}"
    return [
        f"  event {event['event_id']}: {how} (model {event['model']})",
        f"    kept items of the event ({len(event['members'])}): {excerpt(event['members'])}",
    ]


def _stages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The stages the item went through, each with its outcome."""
    evidence = record["evidence"]
    stage, decision = record["stage"], record["decision"]
    stages = [
        {
            "stage": "fetch",
            "outcome": f"found in feed {record['feed']}",
            "link_resolution": record["link_resolution"],
        }
    ]
    if stage == "stage1":
        stages.append(
            {
                "stage": "stage1",
                "outcome": decision,
                "rule": record["rule"],
                "score": record["score"],
                "threshold": record["threshold"],
            }
        )
        return stages
    stages.append(
        {
            "stage": "stage1",
            "outcome": "kept",
            "subject_gate_blocked": evidence.get("subject_gate_blocked", []),
        }
    )
    if stage == "scrape":
        stages.append({"stage": "scrape", "outcome": "failed", "error": record["error"]})
        return stages
    stages.append(
        {
            "stage": "scrape",
            "outcome": "page read",
            "prose_chars": record.get("prose_chars"),
            "no_digest_reason": record.get("no_digest_reason"),
        }
    )
    stages.append(
        {
            "stage": "stage2",
            "outcome": decision,
            "verdict": evidence.get("verdict"),
            "rule": record["rule"],
            "score": record["score"],
            "threshold": record["threshold"],
        }
    )
    return stages


def excerpt(value: Any) -> str:
    """A value shortened for display: lists to EXCERPT_ITEMS, text to EXCERPT_CHARS (seed
    004: the complete evidence stays in the store)."""
    if isinstance(value, list):
        shown = ", ".join(excerpt(v) for v in value[:EXCERPT_ITEMS])
        more = len(value) - EXCERPT_ITEMS
        return f"[{shown}{f', ... {more} more' if more > 0 else ''}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {excerpt(v)}" for k, v in value.items()) + "}"
    text = str(value)
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def render(trail: Trail) -> str:
    """The trail as text, evidence shown as bounded excerpts."""
    item = trail.item
    lines = [
        f"item {item['id']}: {item['title_raw']!r}",
        f"  {item['publisher'] or '?'} | {item['url_raw']} | published {item['published_at']}",
        f"  feed {item['feed']} (org {item['org']}), run {item['run_id']} as of "
        f"{item['run_as_of']}",
        f"  decision: {item['decision']} at {item['stage']}"
        + (f" by rule {item['rule']}" if item["rule"] else "")
        + (
            f", score {item['score']:g} against threshold {item['threshold']:g}"
            if item["score"] is not None and item["threshold"] is not None
            else ""
        ),
        f"  window {item['window_hours']:g} h, scope {item['scope']}",
    ]
    if item["error"]:
        lines.append(f"  error: {item['error']}")
    for stage in trail.stages:
        details = ", ".join(
            f"{k} {excerpt(v)}"
            for k, v in stage.items()
            if k not in ("stage", "outcome") and v not in (None, [], "")
        )
        lines.append(
            f"  - {stage['stage']}: {stage['outcome']}" + (f" ({details})" if details else "")
        )
    if trail.matched:
        other = trail.matched
        label = "possible duplicate of" if item["decision"] == "kept" else "matched"
        lines.append(f"  {label} item {other['id']}: {other['title_raw']!r}")
        lines.append(
            f"    {other['publisher'] or '?'} | {other['url_raw']} | published "
            f"{other['published_at']} | {other['decision']}"
        )
    evidence = {k: v for k, v in item["evidence"].items() if k not in ("window_hours", "scope")}
    if evidence:
        lines.append("  evidence:")
        lines += [f"    {key}: {excerpt(value)}" for key, value in evidence.items()]
    if trail.event is not None:
        lines += _event_lines(trail.event)
    if trail.duplicates:
        lines.append(f"  also published by ({len(trail.duplicates)}):")
        lines += [
            f"    item {d['id']}: {d['publisher'] or '?'}, {d['title_raw']!r} "
            f"({d['stage']} {d['rule']} {d['score']})"
            for d in trail.duplicates
        ]
    return "\n".join(lines)
