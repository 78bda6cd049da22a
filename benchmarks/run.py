"""One entry point for feedmd's benchmarks: ``python benchmarks/run.py <name> [options]``.

Each benchmark is a module of this folder with ``add_arguments(parser)`` and
``main(args) -> exit status``; list it in ``BENCHMARKS`` to add a sub-command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType

# Run as a script, this folder is on sys.path but the repository (the package) is not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import events, scrape, stage1, stage2, window, workers

BENCHMARKS: dict[str, ModuleType] = {
    "events": events,
    "run": window,
    "scrape": scrape,
    "stage1": stage1,
    "stage2": stage2,
    "workers": workers,
}


def main(argv: list[str] | None = None) -> int:
    """Parse the sub-command and run that benchmark."""
    parser = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__)
    commands = parser.add_subparsers(dest="benchmark", required=True)
    for name, module in BENCHMARKS.items():
        summary = (module.__doc__ or name).strip().splitlines()[0]
        module.add_arguments(commands.add_parser(name, help=summary, description=module.__doc__))
    args = parser.parse_args(argv)
    return BENCHMARKS[args.benchmark].main(args)


if __name__ == "__main__":
    sys.exit(main())
