"""Sources: getting bytes from the web, safely.

- ``http``      one httpx client: polite limits, bounded bodies, retries of the transport
- ``security``  which addresses may be connected to (the SSRF guard behind ``http``)
- ``fetch``     due feeds -> entries (conditional GET, feedparser, old entries skipped)
- ``links``     redirect links resolved offline (Google News, Google Alerts)
- ``resolve``   new-format Google News links resolved over HTTP
- ``pages``     the survivors' article pages, fetched (conditionally when a copy is
                known) and handed to a reducer the caller gives (``stages.scrape``)
- ``opml``      feed readers' subscription lists in and out

May import: ``feedmd.store`` (its package interface), ``feedmd.models``,
``feedmd.fingerprints``, ``feedmd.settings`` and the base modules (errors, timeutil,
ids, resources); not another part (stages, events, delivery).
"""
