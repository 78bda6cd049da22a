"""The event settings: the switch, the threshold and the per-feed event_mode, from the file,
the environment and flags like every setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedmd.errors import ConfigError
from feedmd.settings.config import load_config

FEED = """
[[orgs]]
name = "newsroom"
[[orgs.feeds]]
name = "pope"
url = "https://news.google.com/rss/search?q=pope"
{extra}
"""


def config_file(tmp_path: Path, extra: str = "", top: str = "") -> Path:
    path = tmp_path / "feedmd.toml"
    path.write_text(top + FEED.format(extra=extra), encoding="utf-8")
    return path


def test_defaults_group_events_at_the_measured_threshold(tmp_path: Path) -> None:
    config = load_config(config_file(tmp_path), environ={})
    assert config.settings.events is True
    assert config.settings.event_threshold == 0.935
    assert config.settings.event_model_path == ""
    assert config.feeds[0].event_mode == "group"


def test_the_switch_from_file_environment_and_flag(tmp_path: Path) -> None:
    path = config_file(tmp_path, top="events = false\nevent_threshold = 0.94\n")
    assert load_config(path, environ={}).settings.events is False
    assert load_config(path, environ={}).settings.event_threshold == 0.94
    env = load_config(None, environ={"FEEDMD_EVENTS": "false"}).settings
    assert env.events is False
    assert load_config(path, environ={}, overrides={"events": True}).settings.events is True


def test_one_per_event_feed(tmp_path: Path) -> None:
    config = load_config(config_file(tmp_path, 'event_mode = "one-per-event"'), environ={})
    assert config.feeds[0].event_mode == "one-per-event"


def test_bad_event_mode_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"feeds\[0\]\.event_mode must be one of group"):
        load_config(config_file(tmp_path, 'event_mode = "first"'), environ={})


def test_threshold_out_of_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="event_threshold"):
        load_config(None, environ={"FEEDMD_EVENT_THRESHOLD": "1.5"})
