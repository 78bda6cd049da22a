"""Which addresses feedmd may connect to: the classification behind the SSRF guard.

feedmd fetches URLs that come from feeds, that is from strangers. Without a guard a feed
entry pointing at ``http://169.254.169.254/latest/meta-data/`` (a cloud metadata service),
``http://127.0.0.1:6379/`` or a printer on the office network would be fetched with the
credentials and network position of the machine feedmd runs on. So every address feedmd
connects to, after DNS resolution, must be a public unicast address: loopback, private,
link-local, multicast, reserved, shared (carrier-grade NAT) and unspecified addresses are
refused, in IPv4 and IPv6, including IPv6 forms that carry an IPv4 address (IPv4-mapped
``::ffff:127.0.0.1``, IPv4-compatible ``::127.0.0.1``, 6to4 ``2002:7f00:1::``, NAT64
``64:ff9b::7f00:1``), which are judged by the IPv4 address they carry.

This module only classifies; ``stages/http.py`` applies it at connect time, to the address
actually connected to (no gap between check and connect for DNS rebinding to use).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from feedmd.errors import AddressRefused, FetchError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = frozenset({"http", "https"})
# RFC 6598 shared address space: neither private nor global to Python, and inside a
# carrier's network, so as inward as a private one.
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_LOCAL_NAMES = ("localhost", "localhost.")


def address_class(address: IPAddress | str) -> str | None:
    """Why ``address`` may not be connected to ("loopback address", ...), or None when it
    is a public unicast address."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            carried, form = embedded
            found = address_class(carried)
            return f"{found}, {form} {carried}" if found else None
        if ip in _NAT64_LOCAL:
            return "private address, local-use NAT64"
        if ip.is_site_local:
            return "site-local address"
    if ip.is_unspecified:
        return "unspecified address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address"
    if ip.is_multicast:
        return "multicast address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED:
        return "shared address (carrier-grade NAT)"
    if ip.is_reserved:
        return "reserved address"
    if ip.is_private:
        return "private address"
    if not ip.is_global:
        return "non-public address"
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 address stands for, with the name of the form."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _IPV4_TRANSLATED:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "IPv4-translated"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:  # not :: or ::1, classified as themselves
        return ipaddress.IPv4Address(int(ip)), "IPv4-compatible"
    return None


def refusal(address: str, host: str | None = None, role: str = "") -> AddressRefused:
    """The error for a refused address: it names the address, its class, and what named it."""
    found = address_class(address) or "non-public address"
    named = f" ({host})" if host and host != address else ""
    what = f" for the {role}" if role else ""
    return AddressRefused(
        f"refused to connect to {address} ({found}){named}{what};"
        " set allow_private_addresses to allow it"
    )


def check_address(address: str, host: str | None = None, role: str = "") -> None:
    """Raise AddressRefused unless ``address`` (an IP literal) is public."""
    if address_class(address) is not None:
        raise refusal(address, host, role)


def ip_literal(host: str) -> str | None:
    """``host`` as a normalised IP address string when it is an IP literal, else None."""
    text = host.strip("[]")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def check_url(url: str, max_chars: int | None = None, allow_private: bool = False) -> None:
    """Refuse a URL feedmd will not request, before any connection: a scheme other than
    http or https, a URL longer than ``max_chars``, and (unless ``allow_private``) a host
    that is a non-public IP literal or ``localhost``. Names are checked again after
    resolution, at connect time; with a proxy, the proxy resolves them, so this early
    check is the only one feedmd can make on the target."""
    if max_chars is not None and len(url) > max_chars:
        raise FetchError(f"URL of {len(url)} characters is over the limit of {max_chars}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise FetchError(f"refused URL scheme {scheme or '(none)'!r}: only http and https")
    if allow_private:
        return
    host = (parts.hostname or "").lower()
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        raise AddressRefused(
            f"refused to connect to {host} (loopback address);"
            " set allow_private_addresses to allow it"
        )
    literal = ip_literal(host)
    if literal is not None:
        check_address(literal)
