"""Configuration layering (defaults -> file -> environment -> flags) and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedmd.errors import ConfigError
from feedmd.settings import SETTING_FIELDS, Settings
from feedmd.settings.config import load_config
from feedmd.store import open_store

FEEDS = """
[[orgs]]
name = "newsroom"
[[orgs.feeds]]
name = "pope"
url = "https://news.google.com/rss/search?q=pope"
poll_minutes = 30
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "feedmd.toml"
    path.write_text(text)
    return path


def test_defaults_come_from_the_settings_dataclass() -> None:
    config = load_config(None, environ={})
    assert config.settings == Settings()
    assert config.settings.jaccard_threshold == 0.6
    assert config.settings.tlsh_max_distance == 40
    assert config.settings.dedup_window_hours == 48
    assert config.settings.dedup_scope == "feed"


def test_every_setting_documents_where_its_value_comes_from() -> None:
    for name, spec in SETTING_FIELDS.items():
        assert len(spec.metadata["doc"]) > 30, name


def test_file_then_environment_then_flags_each_override_the_previous(tmp_path: Path) -> None:
    path = write(
        tmp_path, "jaccard_threshold = 0.7\ntlsh_max_distance = 30\ndedup_scope = 'org'\n" + FEEDS
    )
    from_file = load_config(path, environ={})
    assert from_file.settings.jaccard_threshold == 0.7
    assert from_file.settings.dedup_scope == "org"
    environ = {"FEEDMD_JACCARD_THRESHOLD": "0.8", "FEEDMD_DATABASE": str(tmp_path / "x.db")}
    from_env = load_config(path, environ=environ)
    assert from_env.settings.jaccard_threshold == 0.8
    assert from_env.settings.tlsh_max_distance == 30
    assert from_env.database == str(tmp_path / "x.db")
    from_flag = load_config(
        path, environ=environ, overrides={"jaccard_threshold": 0.9, "tlsh_max_distance": None}
    )
    assert from_flag.settings.jaccard_threshold == 0.9
    assert from_flag.settings.tlsh_max_distance == 30


def test_feeds_and_orgs_are_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FEEDS), environ={})
    assert [(f.org, f.name, f.poll_minutes) for f in config.feeds] == [("newsroom", "pope", 30.0)]
    assert config.orgs == ("newsroom",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("jacard_threshold = 0.7\n", "unknown setting 'jacard_threshold'"),
        ("jaccard_threshold = 'high'\n", "setting 'jaccard_threshold' must be float"),
        ("jaccard_threshold = 1.5\n", "setting 'jaccard_threshold' must be <= 1"),
        ("tlsh_max_distance = 40.5\n", "setting 'tlsh_max_distance' must be int"),
        ("tlsh_max_distance = true\n", "setting 'tlsh_max_distance' must be int"),
        ("dedup_scope = 'world'\n", "setting 'dedup_scope' must be one of feed, org"),
        ("dedup_window_hours = -1\n", "setting 'dedup_window_hours' must be >= 0"),
        ("[[orgs]]\nname = 'n'\ncolour = 'red'\n", "orgs[0]: unknown key 'colour'"),
        (
            "[[orgs]]\nname = 'n'\n[[orgs.feeds]]\nname = 'a'\nurl = 'ftp://x'\n",
            "orgs[0].feeds[0].url must be an http(s) URL",
        ),
        (
            "[[orgs]]\nname = 'n'\n[[orgs.feeds]]\nname = 'a'\nurl = 'http://x'\n"
            "[[orgs.feeds]]\nname = 'a'\nurl = 'http://y'\n",
            "name 'a' of org 'n' is already used by another feed of this org",
        ),
        (
            "[[orgs]]\nname = 'n'\n[[orgs.feeds]]\nname = 'a'\nurl = 'http://x'\n"
            "poll_minutes = 0\n",
            "poll_minutes must be a positive number",
        ),
        ("[[orgs]]\nname = 'Bad Name'\n", "orgs[0].name must be a short lowercase name"),
        ("[output]\ndirectory = 3\n", "output.directory must be a string"),
        ("jaccard_threshold = \n", "not valid TOML"),
        (
            "event_thresholds_by_language = 'fr=0.95, de=high'\n",
            "'de=high': 'high' is not a number",
        ),
        ("event_thresholds_by_language = 'fr 0.95'\n", "'fr' is not LANGUAGE=COSINE"),
        ("event_thresholds_by_language = 'de-de=0.9'\n", "keyed by the language alone"),
        ("event_thresholds_by_language = 'fr=1.2'\n", "a cosine threshold is between 0 and 1"),
    ],
)
def test_bad_config_names_the_key_and_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_bad_environment_variable_is_named() -> None:
    with pytest.raises(ConfigError, match="environment variable FEEDMD_TLSH_MAX_DISTANCE"):
        load_config(None, environ={"FEEDMD_TLSH_MAX_DISTANCE": "far"})


def test_bad_flag_is_named() -> None:
    with pytest.raises(
        ConfigError, match="flag --simhash-max-bits: setting 'simhash_max_bits' must be <= 64"
    ):
        load_config(None, environ={}, overrides={"simhash_max_bits": 65})


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml", environ={})


def feed_with(poll: str) -> str:
    feed = "[[orgs]]\nname = 'n'\n[[orgs.feeds]]\nname = 'a'\nurl = 'http://x'\n"
    return f"{feed}poll_minutes = {poll}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (feed_with("nan"), "orgs[0].feeds[0].poll_minutes must be a positive number, got nan"),
        (feed_with("inf"), "orgs[0].feeds[0].poll_minutes must be a positive number, got inf"),
        (feed_with("-inf"), "poll_minutes must be a positive number"),
        (feed_with("1e308"), "feed 'a': poll_minutes must be <= max_poll_minutes (43200)"),
        ("run_lease_seconds = 1e308\n", "setting 'run_lease_seconds' must be <= 86400"),
        ("run_lease_seconds = inf\n", "setting 'run_lease_seconds' must be float, got inf"),
        ("run_lease_wait_seconds = nan\n", "setting 'run_lease_wait_seconds' must be float"),
        ("webhook_timeout_seconds = 1e9\n", "setting 'webhook_timeout_seconds' must be <= 300"),
        ("max_pages_per_run = 1e300\n", "setting 'max_pages_per_run' must be <= 10000000"),
        ("max_redirects = inf\n", "setting 'max_redirects' must be int, got inf"),
    ],
)
def test_non_finite_and_huge_numbers_are_refused_at_load(
    tmp_path: Path, text: str, message: str
) -> None:
    """nan, inf and 1e308 used to pass and overflow a date computation later (issue 14)."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_huge_numbers_from_the_environment_and_flags_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"FEEDMD_RUN_LEASE_SECONDS: .* must be float, got 'inf'"):
        load_config(None, environ={"FEEDMD_RUN_LEASE_SECONDS": "inf"})
    with pytest.raises(ConfigError, match=r"FEEDMD_MAX_POLL_MINUTES: .* must be <= 525600"):
        load_config(None, environ={"FEEDMD_MAX_POLL_MINUTES": "1e308"})
    with pytest.raises(ConfigError, match=r"flag --run-lease-seconds: .* must be <= 86400"):
        load_config(None, environ={}, overrides={"run_lease_seconds": 1e308})


def test_every_number_setting_has_a_finite_range_its_default_is_in() -> None:
    for name, spec in SETTING_FIELDS.items():
        if type(spec.default) in (int, float):
            low, high = spec.metadata["minimum"], spec.metadata["maximum"]
            assert low is not None and high is not None, name
            assert low <= spec.default <= high, name


def test_a_config_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "feedmd.toml"
    path.write_bytes(FEEDS.encode() + "# caf\xe9 in Latin-1\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"not UTF-8 \(byte 0xe9 on line 8\)") as caught:
        load_config(path, environ={})
    assert str(path) in str(caught.value)


def test_one_feed_name_in_two_orgs_of_one_file_names_both_orgs(tmp_path: Path) -> None:
    text = FEEDS + "[[orgs]]\nname = 'other'\n[[orgs.feeds]]\nname = 'pope'\nurl = 'http://y'\n"
    with pytest.raises(
        ConfigError, match="'pope' of org 'other' is already used by org 'newsroom'"
    ):
        load_config(write(tmp_path, text), environ={})


def test_one_feed_name_in_two_orgs_of_two_files_on_one_store_is_refused(tmp_path: Path) -> None:
    """Two configs on one store used to move the feed between orgs, so runs of both orgs
    (each holding only its own org's lease) worked on it: UNIQUE constraint failed."""
    first = load_config(write(tmp_path, FEEDS), environ={})
    second_path = tmp_path / "second.toml"
    second_path.write_text(FEEDS.replace('"newsroom"', '"sports"'))
    second = load_config(second_path, environ={})
    store = open_store(tmp_path / "feedmd.db")
    try:
        store.sync_feeds(first)
        with pytest.raises(ConfigError) as caught:
            store.sync_feeds(second)
        message = str(caught.value)
        assert "feed 'pope' is declared in org 'sports'" in message
        assert "the store has it in org 'newsroom'" in message
        assert str(second_path) in message
        assert store.feed_org("pope") == "newsroom"
        store.sync_feeds(first)  # the owner's config still works
    finally:
        store.close()


def test_a_setting_with_a_check_names_what_it_wants() -> None:
    from feedmd.settings.values import coerce_setting

    assert coerce_setting("timezone", "Europe/Berlin", "FEEDMD_TIMEZONE") == "Europe/Berlin"
    assert coerce_setting("timezone", "", "feedmd.toml") == ""
    for bad in ("Mars/Olympus", "../../etc/passwd", "Europe/"):
        with pytest.raises(ConfigError, match="IANA time zone name"):
            coerce_setting("timezone", bad, "FEEDMD_TIMEZONE")


def test_language_thresholds_are_read_from_every_layer(tmp_path: Path) -> None:
    """Per-language event thresholds: file, environment and flag, pair keys in either
    order."""
    from feedmd.settings.events import language_thresholds

    path = write(tmp_path, "event_thresholds_by_language = 'fr=0.95 es-en=0.9'\n")
    from_file = load_config(path, environ={}).settings
    assert language_thresholds(from_file.event_thresholds_by_language) == {
        "fr": 0.95,
        "en-es": 0.9,
    }
    from_env = load_config(
        path, environ={"FEEDMD_EVENT_THRESHOLDS_BY_LANGUAGE": "pl=0.94,de-en=0.91"}
    ).settings
    assert language_thresholds(from_env.event_thresholds_by_language) == {
        "pl": 0.94,
        "de-en": 0.91,
    }
    off = load_config(path, environ={}, overrides={"event_thresholds_by_language": ""}).settings
    assert language_thresholds(off.event_thresholds_by_language) == {}
