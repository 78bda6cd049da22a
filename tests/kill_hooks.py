"""Hooks that test driver processes install on the Store class from their environment:
``DIE=before|after:name:n`` kills the process with SIGKILL at the n-th call of
``Store.<name>`` (before it runs, or once it returned), to hit the narrow windows a random
kill rarely finds; ``PAUSE=name:path`` holds the first call of ``Store.<name>`` until the
file at ``path`` exists (a run that keeps its lease as long as a test needs), and marks that
it got there with the file ``path.paused``."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def install(store_class: type, environ: Mapping[str, str] = os.environ) -> None:
    """Patch ``store_class`` as DIE and PAUSE in ``environ`` ask (neither: nothing)."""
    die = environ.get("DIE", "")
    if die:
        where, name, nth = die.split(":")
        real = getattr(store_class, name)
        calls = [0]

        def dying(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            if where == "before" and calls[0] == int(nth):
                os.kill(os.getpid(), signal.SIGKILL)
            result = real(*args, **kwargs)
            if where == "after" and calls[0] == int(nth):
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        setattr(store_class, name, dying)
    pause = environ.get("PAUSE", "")
    if pause:
        name, release = pause.split(":", 1)
        held = getattr(store_class, name)

        def paused(*args: Any, **kwargs: Any) -> Any:
            if not os.path.exists(release):
                Path(f"{release}.paused").touch()  # the test may now act on the paused run
            ends = time.monotonic() + 300
            while not os.path.exists(release) and time.monotonic() < ends:
                time.sleep(0.02)
            return held(*args, **kwargs)

        setattr(store_class, name, paused)
