"""Settings: every threshold and limit, and where each value comes from.

Owns the ``Settings`` dataclass (one flat, frozen set of fields, declared by part:
``windows``, ``headlines``, ``scrape``, ``delivery``, ``limits``, ``events`` and
``bodies``, assembled in ``core``), the coercion of raw values (``values``) and the
configuration file with its layers, defaults -> feedmd.toml -> FEEDMD_* -> command line
(``config``).

May import: ``feedmd.errors`` only. Everything else in feedmd may import this package.
"""

from feedmd.settings.core import SETTING_FIELDS, Settings, redact_password

__all__ = ["SETTING_FIELDS", "Settings", "redact_password"]
