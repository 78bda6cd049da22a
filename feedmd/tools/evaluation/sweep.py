"""`feedmd sweep`: the evaluations over a grid of settings, with exactly what changes.

For each point of the grid (every combination of the values given), the chosen
evaluations run under the current settings with that point laid over them, and the report
lists the figures and exactly which merges / pairs were added or removed relative to the
current settings (seed 004's sensitivity records; seed 000's sweep that took 100 items to
84 / 83 / 81 / 77). The reprint pairs' extraction is cached within the process, so a point
costs the matching, not trafilatura.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from feedmd.errors import ConfigError
from feedmd.settings import Settings
from feedmd.settings.values import coerce_setting
from feedmd.tools.evaluation.headlines import (
    evaluate_pairs,
    load_headlines,
    replay_headlines,
    score_headlines,
)
from feedmd.tools.evaluation.pages import evaluate_pages
from feedmd.tools.evaluation.reprints import evaluate_reprints


def parse_grid(specs: Sequence[str]) -> dict[str, list[Any]]:
    """``["jaccard_threshold=0.5,0.6", ...]`` -> {"jaccard_threshold": [0.5, 0.6]}, each
    value checked like a flag."""
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not values.strip():
            raise ConfigError(f"--grid {spec!r}: expected NAME=V1,V2,...")
        grid[name] = [
            coerce_setting(name, v.strip(), f"--grid {name}")
            for v in values.split(",")
            if v.strip()
        ]
    return grid


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in a stable order."""
    names = list(grid)
    return [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(grid[n] for n in names))
    ]


@dataclasses.dataclass(frozen=True)
class Sources:
    """Which labelled data to evaluate on (any may be absent)."""

    headlines: Path | None = None
    pairs: Path | None = None
    pages: Path | None = None
    reprints: Path | None = None


def _evaluate(sources: Sources, settings: Settings, events: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if events:
        result.update(_evaluate_events(sources, settings))
    if sources.headlines:
        rows = load_headlines(sources.headlines)
        outcome = replay_headlines(rows, settings)
        report = score_headlines(rows, outcome)
        titles = {row.id: row.title for row in rows}
        merges = {(a, m) for a, (d, _, m, _) in outcome.items() if d == "duplicate" and m}
        result["headlines"] = {
            "figures": {k: report[k] for k in ("merges", "merge_precision", "pairwise", "bcubed")},
            "_set": {f"{a} -> {m}": f"{titles[a]!r} -> {titles[m]!r}" for a, m in merges},
        }
    if sources.pairs:
        report = evaluate_pairs(sources.pairs, settings)
        result["pairs"] = {
            "figures": {k: report[k] for k in ("tp", "fp", "fn", "tn", "precision", "recall")},
            "_set": {pid: pid for pid in report["predicted_same"]},
        }
    if sources.pages:
        report = evaluate_pages(sources.pages, settings)
        result["pages"] = {
            "figures": {k: report[k] for k in ("precision", "recall", "f1", "no_digest")},
            "_set": {},
        }
    if sources.reprints:
        report = evaluate_reprints(sources.reprints, settings)
        result["reprints"] = {
            "figures": {
                "reprint_recall": report["reprint_recall"],
                "precision": report["precision"],
                "false_merges": len(report["false_merges"]),
                "no_digest": report["no_digest"],
            },
            "_set": {pid: pid for pid in report["predicted_reprints"]},
        }
    return result


def _evaluate_events(sources: Sources, settings: Settings) -> dict[str, Any]:
    """The event model on the same labelled files (its vectors are cached per process, so
    each point costs the grouping, not the encoding)."""
    from feedmd.tools.evaluation.events import evaluate_event_pairs, evaluate_events

    result: dict[str, Any] = {}
    if sources.headlines:
        report = evaluate_events(sources.headlines, settings)
        result["events"] = {
            "figures": {k: report[k] for k in ("merges", "merge_precision", "pairwise", "vetoed")},
            "_set": {
                f"{m['id']} -> {m['matched_id']}": f"{m['title']!r} -> {m['matched_title']!r}"
                for m in report["false_merges"]
            },
        }
    if sources.pairs:
        report = evaluate_event_pairs(sources.pairs, settings)
        result["event_pairs"] = {
            "figures": {k: report[k] for k in ("tp", "fp", "fn", "tn", "precision", "recall")},
            "_set": {pid: pid for pid in report["predicted_same"]},
        }
    return result


def sweep(sources: Sources, base: Settings, grid: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """Evaluate the base settings and every grid point; report figures and the exact
    additions and removals of each point against the base. A grid over an ``event_*``
    setting also runs the event model on the headlines and pairs (``events`` and
    ``event_pairs`` in the report; for events, the false merges added and removed)."""
    events = any(name.startswith("event") for name in grid)
    baseline = _evaluate(sources, base, events)
    rows = []
    for point in points(grid):
        outcome = _evaluate(sources, dataclasses.replace(base, **point), events)
        row: dict[str, Any] = {"settings": point}
        for name, data in outcome.items():
            before, after = baseline[name]["_set"], data["_set"]
            row[name] = {
                **data["figures"],
                "added": [after[k] for k in sorted(set(after) - set(before))],
                "removed": [before[k] for k in sorted(set(before) - set(after))],
            }
        rows.append(row)
    return {
        "base": {name: data["figures"] for name, data in baseline.items()},
        "grid": {name: list(values) for name, values in grid.items()},
        "points": rows,
    }


def plot(report: Mapping[str, Any], path: str | Path) -> None:
    """Draw precision and recall against the first grid setting (matplotlib, the optional
    ``plot`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'feedmd[plot]'") from None
    name = next(iter(report["grid"]))
    xs = [row["settings"][name] for row in report["points"]]
    figure, axis = plt.subplots(figsize=(7, 4))
    for source in ("headlines", "pairs", "pages", "reprints"):
        if source not in report["base"]:
            continue
        for metric, key in (
            ("precision", "merge_precision" if source == "headlines" else "precision"),
            ("recall", "reprint_recall" if source == "reprints" else "recall"),
        ):
            ys = [row[source].get(key) for row in report["points"]]
            if any(y is not None for y in ys):
                axis.plot(xs, ys, marker="o", label=f"{source} {metric}")
    axis.set_xlabel(name)
    axis.set_ylabel("score")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
