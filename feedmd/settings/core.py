"""The pipeline's settings: every tunable as one flat, frozen dataclass.

The fields are declared by part, one module each (``windows``, ``headlines``, ``scrape``,
``delivery``, ``limits``, ``events``, ``bodies``), each field with its help text, its bounds
and the measurement behind its default (``fields.setting``); ``Settings`` inherits them all,
in that order, which is the order ``feedmd settings`` and the README list them in.
``values.coerce_setting`` converts and checks one raw value, naming the key and where it
came from when it is bad.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from feedmd.settings.bodies import BodySettings
from feedmd.settings.delivery import DeliverySettings
from feedmd.settings.events import EventSettings
from feedmd.settings.headlines import HeadlineSettings
from feedmd.settings.limits import LimitSettings
from feedmd.settings.scrape import ScrapeSettings
from feedmd.settings.windows import WindowSettings


# A dataclass collects its bases' fields from the last base to the first: listed in
# reverse, the parts keep the order windows, headlines, scrape, delivery, limits, events,
# bodies (the order of the single class they were split from).
@dataclass(frozen=True)
class Settings(
    BodySettings,
    EventSettings,
    LimitSettings,
    DeliverySettings,
    ScrapeSettings,
    HeadlineSettings,
    WindowSettings,
):
    """Every threshold and limit of the pipeline, with its default and where it comes from."""

    def describe(self) -> dict[str, Any]:
        """Return the settings as a plain dict (stored with every run for replay), with any
        password in the proxy URL masked: runs and `feedmd settings` must not leak it."""
        values = dataclasses.asdict(self)
        values["proxy"] = redact_password(values["proxy"])
        return values


SETTING_FIELDS: dict[str, dataclasses.Field[Any]] = {
    f.name: f for f in dataclasses.fields(Settings)
}


def redact_password(url: str) -> str:
    """``http://user:secret@proxy:3128`` -> ``http://user:***@proxy:3128``."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://[^:/@]*:)[^@/]*@", r"\1***@", url, flags=re.I)
