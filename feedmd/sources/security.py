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

This module only classifies; ``sources/http.py`` applies it at connect time, to the address
actually connected to (no gap between check and connect for DNS rebinding to use).

With a proxy, feedmd never connects to the target: the proxy does, after its own
``getaddrinfo``, which (like ``inet_aton`` and browsers) reads ``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``127.1`` and ``0`` as IPv4 addresses. So ``check_url``
reads every such numeric host form the same way (``numeric_host``) and judges the address
it stands for; a host that ends in a number but is no valid address (``1.2.3.4.5``,
``256.1.1.1``) is refused outright, since resolvers disagree on what it means.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote, urlsplit

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


class InvalidNumericHost(FetchError):
    """A host that looks like an address (it ends in a number) but is none."""


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _ipv4_part(part: str) -> int | None:
    """One part of an IPv4 host as ``inet_aton`` reads it: ``0x`` hex, ``0`` octal, else
    decimal; None when it is not a number in that base."""
    if part[:2].lower() == "0x":
        digits = part[2:]
        if not all(ch in _HEX_DIGITS for ch in digits):
            return None
        return int(digits, 16) if digits else 0
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8) if all(ch in "01234567" for ch in part) else None
    return int(part) if part.isascii() and part.isdigit() else None


def _ends_in_number(labels: list[str]) -> bool:
    """The WHATWG URL rule: a host whose last label is a number is an IPv4 address or
    invalid, never a name."""
    last = labels[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2].lower() == "0x" and all(ch in _HEX_DIGITS for ch in last[2:])


def numeric_host(host: str) -> IPAddress | None:
    """The address a numeric host form stands for, read as resolvers and browsers read it,
    or None when ``host`` is a name.

    IPv4: one to four parts, each decimal, ``0x`` hex or ``0``-led octal, the last filling
    the remaining bytes (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``0``,
    ``127.0.0.1.``); IPv6 in brackets or bare, with or without a zone. Raises
    InvalidNumericHost for a host that ends in a number but is no valid address."""
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.replace("%25", "%", 1))
        except ValueError:
            raise InvalidNumericHost(f"refused host {host!r}: not a valid IPv6 address") from None
    labels = text.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()  # a trailing dot: the same address
    if not labels or labels == [""] or not _ends_in_number(labels):
        return None
    parts = [_ipv4_part(label) if label else None for label in labels]
    numbers = [n for n in parts if n is not None]
    if len(labels) > 4 or len(numbers) != len(parts):
        raise InvalidNumericHost(f"refused host {host!r}: not a valid IPv4 address")
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise InvalidNumericHost(f"refused host {host!r}: IPv4 address out of range")
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def check_url(url: str, max_chars: int | None = None, allow_private: bool = False) -> None:
    """Refuse a URL feedmd will not request, before any connection: a scheme other than
    http or https, a URL longer than ``max_chars``, and (unless ``allow_private``) a host
    that is ``localhost``, a numeric form of a non-public address (``numeric_host``), or
    ends in a number without being an address. Names are checked again after
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
    host = unquote(parts.hostname or "").lower()  # a proxy may decode %31%32%37 to 127
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        raise AddressRefused(
            f"refused to connect to {host} (loopback address);"
            " set allow_private_addresses to allow it"
        )
    address = numeric_host(host)
    if address is not None:
        check_address(str(address), host)
