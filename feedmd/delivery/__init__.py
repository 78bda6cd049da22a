"""Delivery: what readers, newsletters and LLM pipelines receive, and its corrections.

- ``render``      kept items as JSON Feed 1.1 and Atom 1.0 documents
- ``deliver``     a run's step 6: each touched feed's files, then its webhooks
- ``webhooks``    signed webhooks, delivered at least once (``webhook_transport``: one
                  deadline for a whole POST)
- ``overrides``   reviewers' overrides ("not a duplicate", "merge", "not the same event")
                  and the files they rewrite; ``corrections`` sends them to webhooks
- ``exports/``    the LLM bundle (JSON Lines, Markdown) and the newsletter digest

May import: ``feedmd.store`` (its package interface), ``feedmd.models``,
``feedmd.fingerprints``, ``feedmd.settings`` and the base modules; not another part
(sources, stages, events).
"""
