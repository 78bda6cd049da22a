"""Who is looking at the review page, what they may see and change, and CSRF defence.

Credentials: the org token of ``feedmd tokens create``, presented either as
``Authorization: Bearer <token>`` (scripts, curl) or, for a person in a browser, through
the sign-in form, which stores it in an HttpOnly cookie. A browser cannot add an
Authorization header to a link or a plain HTML form, so a page that works without
JavaScript needs a cookie. The cookie holds the token itself and is checked exactly like
the header on every request (hashed and looked up among live tokens), so revoking the
token ends the session at once and there is no session table to keep; HttpOnly keeps it
from scripts, SameSite=Strict keeps other sites from sending it, Path=/review keeps it off
the feed URLs, and Secure is set when the page is served over HTTPS.

Reading: an org whose feeds are all public can be read by anyone; a private org's items
are visible only with one of its tokens. Writing (the corrections) always needs a token of
the item's org, public or not, and is recorded under the token's label: anyone may read a
public feed, but only its org may change what it says.

CSRF: every POST must come from this site: its Origin header (or, when a browser sends
none, its Referer) must be the server's own origin or the configured base URL's. Only a
POST carrying ``Authorization: Bearer <token>`` is exempt: a page on another site cannot
make a browser send that header (it would need a CORS preflight that feedmd never
grants). Any other Authorization header proves nothing: a browser attaches cached Basic
credentials (a reverse proxy's login, say) to a forged form on its own, and the cookie
would then be the credential, so such a POST gets the same-origin check like any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from feedmd.store import Store, hash_token

COOKIE = "feedmd_review_token"
COOKIE_PATH = "/review"
PUBLIC_WHO = "public"


@dataclass(frozen=True)
class Viewer:
    """The person (or script) behind a request: the org of the token presented, if any,
    and the orgs open to everyone."""

    public_orgs: frozenset[str]
    token_org: str | None = None
    token_label: str | None = None

    def can_see(self, org: str) -> bool:
        """True when the viewer may see the org's items (its runs, trails, search hits)."""
        return org in self.public_orgs or org == self.token_org

    def can_change(self, org: str) -> bool:
        """True when the viewer may correct the org's items: only with a token of the org,
        even when the org is public."""
        return self.token_org is not None and org == self.token_org

    def who(self, org: str) -> str:
        """The name an override on ``org`` is recorded under: the token's label (an
        anonymous viewer never gets this far: ``can_change``)."""
        if org == self.token_org and self.token_label is not None:
            return self.token_label
        return PUBLIC_WHO

    @property
    def sees_anything(self) -> bool:
        """False for an anonymous viewer of a store with no public org."""
        return bool(self.public_orgs) or self.token_org is not None


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None (no header, or
    another scheme such as Basic: those are not feedmd credentials)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


def presented_token(request: Request) -> str | None:
    """The bearer token of the Authorization header, else the sign-in cookie's."""
    token = bearer_token(request)
    if token is not None:
        return token
    cookie = request.cookies.get(COOKIE, "").strip()
    return cookie or None


def token_identity(store: Store, token: str) -> tuple[str, str] | None:
    """(org, label) of a live token, or None. Looked up by its SHA-256: a guess's hash
    shares nothing useful with a real one's, so the lookup's timing tells nothing. A token
    created without a label is named by its id."""
    return store.token_identity(hash_token(token))


def viewer_for(store: Store, token: str | None) -> Viewer:
    """The viewer presenting ``token`` (None: anonymous)."""
    public = frozenset(org for org, is_public in store.list_orgs().items() if is_public)
    identity = token_identity(store, token) if token else None
    if identity is None:
        return Viewer(public)
    return Viewer(public, identity[0], identity[1])


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def allowed_origins(request: Request, base_url: str | None) -> set[str]:
    """The server's own origin (as the request reached it) and the public base URL's."""
    host = request.headers.get("host", "")
    origins = {f"{request.url.scheme}://{host}".lower()}
    if base_url and (configured := _origin(base_url)):
        origins.add(configured)
    return origins


def same_origin(request: Request, base_url: str | None) -> bool:
    """True when a state-changing request may proceed (see the module docstring)."""
    if bearer_token(request) is not None:
        return True
    origins = allowed_origins(request, base_url)
    origin = request.headers.get("origin")
    if origin is not None:
        return origin.lower() in origins
    referer = request.headers.get("referer")
    return referer is not None and _origin(referer) in origins


def local_path(target: str | None, default: str, prefixes: Iterable[str] = ("/review",)) -> str:
    """``target`` when it is a path of the review pages, else ``default``: a redirect
    after a form never leads off the site ("//evil.example" and "https://..." are refused)."""
    if (
        target
        and target.startswith(tuple(prefixes))
        and not target.startswith("//")
        and "\\" not in target
        and not any(ch in target for ch in "\r\n")
    ):
        return target
    return default
