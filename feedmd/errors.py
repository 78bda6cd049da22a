"""The feedmd error tree: every exception feedmd raises on purpose, in one place.

Every error feedmd raises on purpose derives from ``FeedmdError``; the CLI maps it to a
clean message and exit code at one place (``cli/main.py``), so bad input never shows a
traceback::

    FeedmdError
    ├── ConfigError          bad feedmd.toml, environment variable or flag (names the key)
    ├── StoreError           the database cannot be opened or migrated
    │   ├── MigrationError   a migration failed; nothing of it was applied
    │   └── RunLeaseHeld     another run holds the orgs (store/leases.py; exit code 4)
    ├── FetchError           a feed or page could not be fetched or parsed
    │   ├── ResponseTooLarge the body passed the size limit
    │   └── AddressRefused   an address feedmd does not connect to (sources/security.py)
    ├── OverrideError        a reviewer's override cannot apply (delivery/overrides.py)
    ├── EvalDataError        a labelled evaluation file is missing or bad (tools/evaluation/)
    └── EventModelMissing    the event model's package or weights are not installed
                             (model/encoder.py; says how to install it or turn events off)

Errors on one feed or one page are recorded on that feed or item and the run goes on;
only configuration and store errors stop a run.
"""

from __future__ import annotations


class FeedmdError(Exception):
    """Base of every error feedmd raises deliberately."""


class ConfigError(FeedmdError):
    """The configuration is invalid; the message names the key and where it came from."""


class StoreError(FeedmdError):
    """The SQLite store cannot be opened or is in an unusable state."""


class MigrationError(StoreError):
    """A migration failed and was rolled back."""


class RunLeaseHeld(StoreError):
    """Another live run holds the lease on one of this run's orgs (`feedmd run` exits 4).

    ``holder`` is the store's ``LeaseHolder`` row that was found (None when unknown)."""

    exit_code = 4

    def __init__(self, message: str, holder: object | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class FetchError(FeedmdError):
    """A feed or page could not be fetched or parsed."""


class ResponseTooLarge(FetchError):
    """A response body passed the configured size limit and was abandoned."""


class AddressRefused(FetchError):
    """A connection to a non-public address was refused (SSRF guard)."""


class OverrideError(FeedmdError):
    """An override that cannot apply (no such item, nothing to restore, another org...)."""


class EvalDataError(FeedmdError):
    """A labelled data file is missing, unreadable or has a bad line (named)."""


class EventModelMissing(FeedmdError):
    """The event model's package or weight file is not installed (the message says how to
    install it, or how to turn events off)."""
