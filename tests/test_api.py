"""The public API is small and deliberate: this test fails when it changes by accident."""

from __future__ import annotations

import feedmd


def test_public_api_is_exactly_this() -> None:
    assert feedmd.__all__ == sorted(feedmd.__all__)
    assert set(feedmd.__all__) == {
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
    }
    for name in feedmd.__all__:
        assert getattr(feedmd, name) is not None


def test_errors_form_one_tree() -> None:
    for error in (feedmd.ConfigError, feedmd.StoreError, feedmd.FetchError, feedmd.MigrationError):
        assert issubclass(error, feedmd.FeedmdError)
