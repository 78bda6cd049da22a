"""OPML 2.0, the way feed readers move subscriptions: read the feed outlines of a file and
write the configured feeds, one folder per org. Pure: bytes in, bytes out."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from email.utils import format_datetime

from feedmd.errors import ConfigError
from feedmd.settings.config import Config
from feedmd.timeutil import utcnow

# A subscription list of thousands of feeds is well under 1 MB; past this it is not one.
MAX_OPML_BYTES = 5_000_000


def read_opml(data: bytes) -> list[tuple[str | None, str, str]]:
    """(category, title, xmlUrl) of every feed outline of an OPML document; the category
    is the text of the nearest enclosing outline that is not a feed. A DTD is refused."""
    if len(data) > MAX_OPML_BYTES:
        raise ConfigError(f"OPML file larger than {MAX_OPML_BYTES} bytes")
    if re.search(rb"<!\s*(DOCTYPE|ENTITY)", data, flags=re.IGNORECASE):
        raise ConfigError("OPML with a DTD or entities is refused (feed readers never write one)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ConfigError(f"not valid OPML (XML): {exc}") from None
    body = root.find("body")
    if root.tag != "opml" or body is None:
        raise ConfigError("not OPML: no <opml><body>")
    found: list[tuple[str | None, str, str]] = []

    def walk(element: ET.Element, category: str | None) -> None:
        for outline in element.findall("outline"):
            url = (outline.get("xmlUrl") or outline.get("xmlurl") or "").strip()
            text = (outline.get("title") or outline.get("text") or "").strip()
            if url:
                found.append((category, text, url))
            walk(outline, category if url else (text or category))

    walk(body, None)
    return found


def write_opml(config: Config) -> bytes:
    """The configured feeds as an OPML 2.0 document (UTF-8), one folder per org."""
    root = ET.Element("opml", version="2.0")
    head = ET.SubElement(root, "head")
    ET.SubElement(head, "title").text = "feedmd feeds"
    ET.SubElement(head, "dateCreated").text = format_datetime(utcnow(), usegmt=True)
    body = ET.SubElement(root, "body")
    for org in config.orgs:
        folder = ET.SubElement(body, "outline", text=org, title=org)
        for feed in config.feeds:
            if feed.org == org:
                label = feed.title or feed.name
                ET.SubElement(
                    folder, "outline", type="rss", text=label, title=label, xmlUrl=feed.url
                )
    ET.indent(root)
    data = b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")
    return data.replace(b"<?xml version='1.0' encoding='utf-8'?>\n", b"") + b"\n"
