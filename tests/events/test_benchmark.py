"""The events benchmark runs as documented and its lookup agrees with the exact scan."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO


def test_events_benchmark_small() -> None:
    args = ["events", "--stored", "3000", "--queries", "5", "--encode", "10", "--lookups", "3"]
    args += ["--busy", "1", "--json"]  # one spinning process beside the encodings
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["identical"] is True
    assert figures["busy"] == 1
    assert figures["stored"] == 3000 and figures["stored_mb"] == round(3000 * 388 / 1e6, 1)
    assert figures["encode_per_s"] > 0 and figures["lookup_ms"] >= 0
    assert figures["store_read_ms"] > 0 and figures["store_lookup_ms"] > 0
    # both encoding modes are reported side by side, with their ratio
    one_pipeline = figures["encode_one_pipeline_per_s"]
    assert one_pipeline > 0
    assert abs(figures["pipelines_speedup"] - figures["encode_per_s"] / one_pipeline) < 0.02
