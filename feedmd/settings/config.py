"""Configuration: built-in defaults -> feedmd.toml -> FEEDMD_* environment -> CLI flags.

``Settings`` (``core.py`` and its parts) holds every tunable of the pipeline; ``Config``
adds the orgs, their feeds, webhooks and outputs, which only come from the file.

A bad key, type or value raises ``ConfigError`` naming the key and where it came from
(the file path, the environment variable or the flag), before any work starts. Every
number must be finite and has a minimum and a maximum: the maxima lie far past any sane
use, and are there so that a typo such as ``1e308`` or ``inf`` is refused at load instead
of overflowing a date computation runs later. The file must be UTF-8 (TOML says so).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feedmd.errors import ConfigError
from feedmd.settings.core import SETTING_FIELDS, Settings
from feedmd.settings.values import coerce_setting

ENV_PREFIX = "FEEDMD_"
FEED_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class FeedConfig:
    """One feed to poll: a unique name, a URL, how often to poll it, and whether its
    output is public (else it needs the org's bearer token)."""

    name: str
    url: str
    org: str
    poll_minutes: float = 15.0
    title: str = ""
    public: bool = False
    # "group": every kept item, each carrying its event; "one-per-event": only the first
    # item of each event (a digest or an LLM feed that wants one entry per event).
    event_mode: str = "group"


EVENT_MODES = ("group", "one-per-event")


@dataclass(frozen=True)
class WebhookConfig:
    """An endpoint that receives each new kept item of an org (or of one feed), signed
    with the secret in the environment variable ``secret_env`` (never in the file)."""

    url: str
    org: str
    feed: str = ""
    secret_env: str = "FEEDMD_WEBHOOK_SECRET"
    batch: bool = False  # one POST per run with all its new items, instead of one per item


@dataclass(frozen=True)
class OutputConfig:
    """Where `feedmd run` writes each feed's JSON Feed and Atom files (empty: nowhere)."""

    directory: str = ""
    base_url: str = "http://localhost:8000"


@dataclass(frozen=True)
class Config:
    """The whole configuration: settings, orgs with their feeds, outputs, database path."""

    settings: Settings = field(default_factory=Settings)
    feeds: tuple[FeedConfig, ...] = ()
    webhooks: tuple[WebhookConfig, ...] = ()
    output: OutputConfig = field(default_factory=OutputConfig)
    database: str = "feedmd.db"
    source: str = "<defaults>"

    @property
    def orgs(self) -> tuple[str, ...]:
        """Org names in first-seen order."""
        return tuple(dict.fromkeys(feed.org for feed in self.feeds))


def load_config(
    path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the Config: defaults, then the TOML file, then FEEDMD_* variables, then flags.

    ``overrides`` are setting values from CLI flags (already typed by click, or strings).
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    feeds: tuple[FeedConfig, ...] = ()
    webhooks: tuple[WebhookConfig, ...] = ()
    output = OutputConfig()
    database = "feedmd.db"
    source = "<defaults>"
    if path is not None:
        source = str(path)
        document = _read_toml(Path(path))
        values, feeds, webhooks, output, database = _parse_document(document, source)
    for key, raw in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX) :].lower()
        if name in SETTING_FIELDS:
            values[name] = coerce_setting(name, raw, f"environment variable {key}")
        elif name == "database":
            database = raw
    for name, raw in (overrides or {}).items():
        if raw is None:
            continue
        flag = "--" + name.replace("_", "-")
        values[name] = coerce_setting(name, raw, f"flag {flag}")
    settings = Settings(**values)
    for feed in feeds:
        if feed.poll_minutes > settings.max_poll_minutes:
            raise ConfigError(
                f"{source}: feed {feed.name!r}: poll_minutes must be <= max_poll_minutes"
                f" ({settings.max_poll_minutes:g}), got {feed.poll_minutes:g}"
            )
    return Config(
        settings=settings,
        feeds=feeds,
        webhooks=webhooks,
        output=output,
        database=database,
        source=source,
    )


def settings_layer(
    path: str | os.PathLike[str] | None, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Only the settings a TOML file and flags set (checked), to lay over another base
    (``feedmd replay`` lays them over the settings the stored runs used)."""
    values: dict[str, Any] = {}
    if path is not None:
        document = _read_toml(Path(path))
        values = {
            key: coerce_setting(key, raw, str(path))
            for key, raw in document.items()
            if key not in _TOP_LEVEL_KEYS
        }
    for name, raw in (overrides or {}).items():
        if raw is not None:
            values[name] = coerce_setting(name, raw, "flag --" + name.replace("_", "-"))
    return values


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8 (byte 0x{data[exc.start]:02x} on line {line});"
            " save the file as UTF-8"
        ) from None
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None


_TOP_LEVEL_KEYS = {"database", "orgs", "output"}
_ORG_KEYS = {"name", "feeds", "public", "webhooks"}
_FEED_KEYS = {"name", "url", "poll_minutes", "title", "public", "webhooks", "event_mode"}
_WEBHOOK_KEYS = {"url", "secret_env", "batch"}
_OUTPUT_KEYS = {"directory", "base_url"}


def _parse_document(
    document: dict[str, Any], source: str
) -> tuple[dict[str, Any], tuple[FeedConfig, ...], tuple[WebhookConfig, ...], OutputConfig, str]:
    values: dict[str, Any] = {}
    for key, raw in document.items():
        if key in _TOP_LEVEL_KEYS:
            continue
        values[key] = coerce_setting(key, raw, source)
    database = document.get("database", "feedmd.db")
    if not isinstance(database, str) or not database:
        raise ConfigError(f"{source}: 'database' must be a non-empty string")
    output = _parse_output(document.get("output", {}), source)
    feeds, webhooks = _parse_orgs(document.get("orgs", []), source)
    return values, feeds, webhooks, output, database


def _parse_output(raw: Any, source: str) -> OutputConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: [output] must be a table")
    _reject_unknown(raw, _OUTPUT_KEYS, f"{source}: [output]")
    for key in raw:
        if not isinstance(raw[key], str):
            raise ConfigError(f"{source}: output.{key} must be a string")
    return OutputConfig(**raw)


def _parse_orgs(raw: Any, source: str) -> tuple[tuple[FeedConfig, ...], tuple[WebhookConfig, ...]]:
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: 'orgs' must be an array of tables ([[orgs]])")
    feeds: list[FeedConfig] = []
    webhooks: list[WebhookConfig] = []
    seen_orgs: set[str] = set()
    seen_feeds: dict[str, str] = {}
    for index, org in enumerate(raw):
        where = f"{source}: orgs[{index}]"
        if not isinstance(org, dict):
            raise ConfigError(f"{where} must be a table")
        _reject_unknown(org, _ORG_KEYS, where)
        org_name = org.get("name")
        if not isinstance(org_name, str) or not FEED_NAME_PATTERN.match(org_name):
            raise ConfigError(
                f"{where}.name must be a short lowercase name "
                f"(letters, digits, - and _), got {org_name!r}"
            )
        if org_name in seen_orgs:
            raise ConfigError(f"{where}.name {org_name!r} is declared twice")
        seen_orgs.add(org_name)
        public = _boolean(org.get("public", False), f"{where}.public")
        webhooks += _parse_webhooks(org.get("webhooks", []), org_name, "", f"{where}.webhooks")
        org_feeds = org.get("feeds", [])
        if not isinstance(org_feeds, list):
            raise ConfigError(f"{where}.feeds must be an array of tables")
        for feed_index, raw_feed in enumerate(org_feeds):
            feed_where = f"{where}.feeds[{feed_index}]"
            feed = _parse_feed(raw_feed, org_name, feed_where, seen_feeds, public)
            feeds.append(feed)
            webhooks += _parse_webhooks(
                raw_feed.get("webhooks", []), org_name, feed.name, f"{feed_where}.webhooks"
            )
    return tuple(feeds), tuple(webhooks)


def _boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    return value


def _parse_webhooks(raw: Any, org: str, feed: str, where: str) -> list[WebhookConfig]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where} must be an array of tables")
    hooks = []
    for index, hook in enumerate(raw):
        place = f"{where}[{index}]"
        if not isinstance(hook, dict):
            raise ConfigError(f"{place} must be a table")
        _reject_unknown(hook, _WEBHOOK_KEYS, place)
        url = hook.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
            raise ConfigError(f"{place}.url must be an http(s) URL, got {url!r}")
        secret_env = hook.get("secret_env", "FEEDMD_WEBHOOK_SECRET")
        if not isinstance(secret_env, str) or not re.match(r"^[A-Z_][A-Z0-9_]*$", secret_env):
            raise ConfigError(
                f"{place}.secret_env must name an environment variable "
                f"(the secret itself never goes in the file), got {secret_env!r}"
            )
        batch = _boolean(hook.get("batch", False), f"{place}.batch")
        hooks.append(WebhookConfig(url=url, org=org, feed=feed, secret_env=secret_env, batch=batch))
    return hooks


def _parse_feed(
    raw: Any, org: str, where: str, seen: dict[str, str], org_public: bool = False
) -> FeedConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a table")
    _reject_unknown(raw, _FEED_KEYS, where)
    name = raw.get("name")
    if not isinstance(name, str) or not FEED_NAME_PATTERN.match(name):
        raise ConfigError(
            f"{where}.name must be a short lowercase name (letters, digits, - and _), got {name!r}"
        )
    if name in seen:
        owner = f"org {seen[name]!r}" if seen[name] != org else "another feed of this org"
        raise ConfigError(
            f"{where}.name {name!r} of org {org!r} is already used by {owner}; feed names "
            "are unique across all orgs because they name the output files and the stored feed"
        )
    seen[name] = org
    url = raw.get("url")
    if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
        raise ConfigError(f"{where}.url must be an http(s) URL, got {url!r}")
    poll = raw.get("poll_minutes", 15.0)
    if (
        isinstance(poll, bool)
        or not isinstance(poll, int | float)
        or not math.isfinite(poll)
        or poll <= 0
    ):
        raise ConfigError(f"{where}.poll_minutes must be a positive number, got {poll!r}")
    title = raw.get("title", "")
    if not isinstance(title, str):
        raise ConfigError(f"{where}.title must be a string")
    public = _boolean(raw.get("public", org_public), f"{where}.public")
    event_mode = raw.get("event_mode", "group")
    if event_mode not in EVENT_MODES:
        raise ConfigError(
            f"{where}.event_mode must be one of {', '.join(EVENT_MODES)}, got {event_mode!r}"
        )
    return FeedConfig(
        name=name,
        url=url,
        org=org,
        poll_minutes=float(poll),
        title=title,
        public=public,
        event_mode=event_mode,
    )


def _reject_unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
