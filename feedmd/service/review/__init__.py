"""The review page of ``feedmd serve``: what the runs dropped and why, and one-click
corrections.

Pages (server-rendered with Jinja2, a small CSS file, no JavaScript, no build step):

- ``/review``: recent runs with the report's counts and time per stage, and a chart of
  kept vs dropped items per run (inline SVG drawn on the server, ``chart.py``);
- ``/review/runs/{id}``: the run's items grouped into clusters (a canonical item and the
  items merged into it, with stage, rule, score, threshold, publisher and time);
- ``/review/items/{id}``: an item's explain trail (``feedmd.tools.explain``), its evidence
  excerpts, window and scope, its overrides, and the "Not a duplicate" / "Merge" forms;
- ``/review/events/{id}``: an event's items, each with a "Not the same event" form
  (``events.py``);
- ``/review/search?q=``: items by URL, title or publisher (``explain.find_items``);
- ``/review/login`` and ``/review/logout``: the org token in an HttpOnly cookie.

Corrections are POST forms (``feedmd.delivery.overrides``), same-origin only; who may see and
change what is in ``auth.py``. Every page sends a strict Content-Security-Policy.

May import: what ``feedmd.service`` may (``feedmd.tools.explain`` for the trail,
``feedmd.delivery.overrides`` for the corrections).
"""

from __future__ import annotations

from starlette.routing import Route

from feedmd.service.review import events, views
from feedmd.service.review.views import ReviewContext

__all__ = ["ReviewContext", "routes"]


def routes(context: ReviewContext) -> list[Route]:
    """Every review route, bound to ``context``."""
    return [*views.routes(context), *events.routes(context)]
