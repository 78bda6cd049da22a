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


def test_every_deliberate_error_is_in_the_one_tree() -> None:
    from feedmd import errors

    tree = errors.__doc__ or ""
    for name, value in vars(errors).items():
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, errors.FeedmdError), name
            assert name in tree, f"{name} is missing from the tree drawn in errors.py"
