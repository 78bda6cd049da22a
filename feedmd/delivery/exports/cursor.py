"""The ``--since`` cursor of incremental exports.

Every time an item becomes visible as kept (its run stores it kept, or a reviewer restores
it) the store logs it with a seq that only grows (table ``visibility``, migration 0010). A
cursor is that seq plus the scope it was read for (``org:NAME`` or ``feed:NAME``), encoded
as an opaque URL-safe string (``fmc1.`` and base64url), so a pipeline stores and sends it
back without parsing it. A cursor of one scope is refused for another: it would be
correct (the seq is global) but is almost certainly a pipeline's mix-up.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

PREFIX = "fmc1."


class CursorError(ValueError):
    """A cursor that is not one of ours, or belongs to another scope."""


@dataclass(frozen=True)
class Cursor:
    """A position in the visibility log of one scope: every seq up to ``seq`` was seen."""

    scope: str
    seq: int

    def encode(self) -> str:
        raw = f"{self.scope}\n{self.seq}".encode()
        return PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def scope_of(*, org: str | None = None, feed: str | None = None) -> str:
    """The scope string of an export of ``feed`` (if given) or ``org``."""
    return f"feed:{feed}" if feed is not None else f"org:{org}"


def decode(text: str, scope: str) -> Cursor:
    """The cursor ``text`` encodes; CursorError when it is malformed or for another scope."""
    text = text.strip()
    if not text.startswith(PREFIX):
        raise CursorError(f"not a feedmd cursor: {text[:40]!r}")
    body = text[len(PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
        found_scope, _, seq_text = raw.rpartition("\n")
        seq = int(seq_text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise CursorError(f"not a feedmd cursor: {text[:40]!r}") from None
    if seq < 0 or not found_scope:
        raise CursorError(f"not a feedmd cursor: {text[:40]!r}")
    if found_scope != scope:
        raise CursorError(f"this cursor is for {found_scope}, not {scope}")
    return Cursor(found_scope, seq)
