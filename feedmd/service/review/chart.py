"""The runs page's chart of kept vs dropped items per run, as inline SVG.

Drawn on the server from the run reports: no JavaScript library and no build step, it
prints, and it obeys the page's Content-Security-Policy (presentation attributes and
classes only, no ``style`` attributes). Each run is a pair of bars (kept, dropped as
duplicates) with a ``<title>`` that browsers show on hover and screen readers read; the
SVG as a whole is an image labelled with a one-line summary, and the runs table beside it
carries the same numbers for anyone who cannot see the picture.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 640
HEIGHT = 180
# Room for the axis labels: left for counts, bottom for run numbers.
LEFT, RIGHT, TOP, BOTTOM = 36, 8, 10, 26


@dataclass(frozen=True)
class Point:
    """One run of the chart."""

    run_id: int
    as_of: str
    kept: int
    dropped: int


def _nice_max(value: int) -> int:
    """The axis top: the smallest of 1, 2, 5 x 10^n at or above ``value`` (at least 1)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return max(1, step * factor)
        step *= 10


def kept_dropped_svg(points: Sequence[Point]) -> str:
    """SVG markup for ``points`` in the order given (oldest run first)."""
    total_kept = sum(p.kept for p in points)
    total_dropped = sum(p.dropped for p in points)
    summary = (
        f"Kept and dropped items over the last {len(points)} runs: "
        f"{total_kept} kept, {total_dropped} dropped as duplicates."
    )
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}"'
        ' role="img" aria-labelledby="chart-title" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="chart-title">{html.escape(summary)}</title>',
    ]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = _nice_max(max((max(p.kept, p.dropped) for p in points), default=0))
    for fraction in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - fraction)
        label = f"{top * fraction:g}"
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{label}</text>'
        )
    if points:
        slot = plot_w / len(points)
        bar = max(1.0, min(18.0, slot * 0.38))
        for index, point in enumerate(points):
            x = LEFT + slot * index + slot / 2
            for offset, value, kind in ((-bar, point.kept, "kept"), (0, point.dropped, "dropped")):
                h = plot_h * value / top
                parts.append(
                    f'<rect class="bar-{kind}" x="{x + offset:.1f}" y="{TOP + plot_h - h:.1f}"'
                    f' width="{bar:.1f}" height="{h:.1f}"><title>'
                    f"{html.escape(f'run {point.run_id} ({point.as_of}): {value} {kind}')}"
                    "</title></rect>"
                )
            if len(points) <= 20 or index % max(1, len(points) // 10) == 0:
                parts.append(
                    f'<text class="axis" x="{x:.1f}" y="{HEIGHT - 8}" text-anchor="middle">'
                    f"{point.run_id}</text>"
                )
    else:
        parts.append(
            f'<text class="axis" x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle">'
            "No runs yet</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
