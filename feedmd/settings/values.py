"""Raw setting values into typed ones: a TOML value, an environment string or a flag's text
becomes the field's type, checked against its bounds and choices, with an error that names
the key and where the value came from. ``settings_from_record`` rebuilds the Settings a run
stored (replay)."""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from typing import Any

from feedmd.errors import ConfigError
from feedmd.settings.core import SETTING_FIELDS, Settings


def coerce_setting(name: str, raw: Any, origin: str) -> Any:
    """Convert and check one setting value; raise ConfigError naming the key and origin.

    ``raw`` may be a TOML value or a string (environment variable, CLI flag).
    """
    spec = SETTING_FIELDS.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, list(SETTING_FIELDS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{origin}: unknown setting {name!r}{hint}")
    kind = type(spec.default)
    value: Any
    try:
        if kind is bool:
            value = _to_bool(raw)
        elif kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(raw)
        elif kind is float:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
            if not math.isfinite(value):
                raise ValueError
        else:
            if not isinstance(raw, str):
                raise ValueError
            value = raw
    except (TypeError, ValueError):
        raise ConfigError(
            f"{origin}: setting {name!r} must be {kind.__name__}, got {raw!r}"
        ) from None
    meta = spec.metadata
    if meta["minimum"] is not None and value < meta["minimum"]:
        raise ConfigError(f"{origin}: setting {name!r} must be >= {meta['minimum']}, got {value!r}")
    if meta["maximum"] is not None and value > meta["maximum"]:
        raise ConfigError(f"{origin}: setting {name!r} must be <= {meta['maximum']}, got {value!r}")
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ConfigError(
            f"{origin}: setting {name!r} must be one of {', '.join(meta['choices'])}; got {value!r}"
        )
    if meta["check"] is not None and (problem := meta["check"](value)) is not None:
        raise ConfigError(f"{origin}: setting {name!r} must be {problem}; got {value!r}")
    return value


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(raw)


def settings_from_record(record: Mapping[str, Any], base: Settings | None = None) -> Settings:
    """Settings recorded with a run (``runs.settings_json``); keys this version does not
    know are ignored and missing ones take their defaults."""
    known = {k: v for k, v in record.items() if k in SETTING_FIELDS}
    return dataclasses.replace(base or Settings(), **known)
