"""Tools around the pipeline: inspecting, replaying and measuring it.

- ``explain``         an item's whole decision trail, from the store
- ``replay``          stored items re-decided under other settings, without fetching
- ``dryrun``          a run on a copy of the store: what would be dropped
- ``demo``            the real pipeline on the bundled fixture news day
- ``fixture_server``  a real HTTP server on 127.0.0.1 serving a fixture day
- ``evaluation/``     ``feedmd eval`` and ``feedmd sweep`` on labelled data

May import: ``feedmd.pipeline`` and everything below it; not ``feedmd.service`` or
``feedmd.cli``.
"""
