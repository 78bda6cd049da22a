"""The long-running service: ``feedmd serve`` and ``feedmd worker``.

- ``server``     the feeds, exports and review page over HTTP (Starlette on uvicorn)
- ``scheduler``  each feed at its own poll interval, one run per org at a time
- ``worker``     one of many processes sharing a store through claims
- ``review/``    the review page: what the runs dropped and why, one-click corrections

May import: ``feedmd.tools`` (the review page shows ``explain``'s trail),
``feedmd.pipeline`` and everything below it; not ``feedmd.cli``.
"""
