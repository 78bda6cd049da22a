"""Extraction runs in worker threads but never two at a time: trafilatura / lxml crash
natively when extract() runs concurrently in threads (upstream reports; the issue-13
SIGABRT at 300k stored items was not reproduced, see benchmarks/README.md)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import FIXTURES

from feedmd.models import Page
from feedmd.settings import Settings
from feedmd.stages import scrape

BASE = Page(url_hash="h", url="http://pub.example/a", org="o", status="failed")


def test_extractions_from_many_threads_run_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pages = sorted((FIXTURES / "site").rglob("*.html"))[:24]
    bodies = [page.read_bytes() for page in pages]
    settings = Settings()
    expected = [scrape.extract_page(BASE, body, settings) for body in bodies]
    real = scrape.trafilatura.extract
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def observed(*args: object, **kwargs: object) -> object:
        """The real trafilatura.extract, counting how many run at once (the sleep gives
        the other threads every chance to enter)."""
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        try:
            time.sleep(0.005)
            return real(*args, **kwargs)
        finally:
            with lock:
                state["now"] -= 1

    monkeypatch.setattr(scrape.trafilatura, "extract", observed)
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda body: scrape.extract_page(BASE, body, settings), bodies))
    assert found == expected
    assert state["most"] == 1
