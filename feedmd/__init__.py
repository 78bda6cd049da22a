"""feedmd: noisy news feeds in, clean de-duplicated full-text feeds out.

The public API is small on purpose; everything else may change between versions.
"""

from feedmd.errors import ConfigError, FeedmdError, FetchError, MigrationError, StoreError
from feedmd.fingerprints.headlines import normalize_headline
from feedmd.fingerprints.urls import normalize_url, url_hash
from feedmd.pipeline import run
from feedmd.report import RunReport
from feedmd.settings import Settings
from feedmd.settings.config import Config, load_config
from feedmd.store import Store, open_store

__version__ = "0.1.0"

__all__ = [
    "Config",
    "ConfigError",
    "FeedmdError",
    "FetchError",
    "MigrationError",
    "RunReport",
    "Settings",
    "Store",
    "StoreError",
    "__version__",
    "load_config",
    "normalize_headline",
    "normalize_url",
    "open_store",
    "run",
    "url_hash",
]
