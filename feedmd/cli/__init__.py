"""The ``feedmd`` command line: one module per command group.

- ``main``      the ``feedmd`` group and the commands of a run: run, demo, explain,
                replay, settings, migrate (``python -m feedmd`` and the ``feedmd`` script)
- ``common``    what every command shares: -h, the config file, --set, --db
- ``feeds``     ``feedmd init`` and ``feedmd feeds``
- ``eval``      ``feedmd eval``, ``feedmd sweep``, ``feedmd fingerprint`` / ``compare``
- ``delivery``  ``feedmd export``, ``serve``, ``tokens``, ``deliveries``; ``retry``
- ``store``     ``feedmd store copy``
- ``worker``    ``feedmd worker``

``FeedmdError`` becomes a click error here, and only here.

May import: anything in feedmd.
"""
