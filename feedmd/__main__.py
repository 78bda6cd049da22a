"""``python -m feedmd``: the same as the ``feedmd`` command."""

from feedmd.cli import main

main()
