"""Stages: the deciders of a run, pure (plain data in, decisions out; no SQL, no network).

- ``stage1``  decides on feed metadata alone: repeats, URL hashes, headline clusters
- ``scrape``  which survivors need a page, and a page's reduction: trafilatura ->
              Markdown -> prose (``prose``) -> digest; walls (``walls``) get none
- ``stage2``  decides on bodies: TLSH digests and shingles against the window and batch
- ``retry``   when a failed page (or feed) is fetched again, and when to stop

The conductor (``feedmd.pipeline``) feeds them what the store and the sources return.

May import: ``feedmd.models``, ``feedmd.fingerprints``, ``feedmd.settings`` and the base
modules; not the store or another part (sources, events, delivery).
"""
