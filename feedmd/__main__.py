"""``python -m feedmd``: the same as the ``feedmd`` command."""

from feedmd.cli.main import main

main()
