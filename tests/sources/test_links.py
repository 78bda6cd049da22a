"""Google News and Google Alerts links resolved offline."""

from __future__ import annotations

from feedmd.sources.links import decode_google_news_id, encode_google_news_id, resolve_offline

# A real-format old Google News id (CBMi...) for an https publisher URL.
PUBLISHER = "https://www.reuters.com/world/europe/pope-leo-surgery-2026-10-12/"


def test_google_news_link_decodes_offline() -> None:
    article_id = encode_google_news_id(PUBLISHER)
    assert article_id.startswith("CBMi")
    link = f"https://news.google.com/rss/articles/{article_id}?oc=5"
    resolution = resolve_offline(link)
    assert resolution.url == PUBLISHER
    assert resolution.method == "google-news-offline"


def test_long_urls_use_multi_byte_varints() -> None:
    url = "https://example.com/" + "a" * 300
    assert decode_google_news_id(encode_google_news_id(url)) == url


def test_new_format_google_news_link_stays_unresolved() -> None:
    link = "https://news.google.com/rss/articles/CBMiAU_yqLNotDecodableOffline?oc=5"
    assert resolve_offline(link).method == "unresolved"
    assert decode_google_news_id("!!!") is None


def test_google_alerts_link_is_unwrapped() -> None:
    link = (
        "https://www.google.com/url?rct=j&sa=t&url=https://example.com/story%3Fid%3D7"
        "&ct=ga&cd=CAIyGg&usg=AOvVaw"
    )
    resolution = resolve_offline(link)
    assert resolution.url == "https://example.com/story?id=7"
    assert resolution.method == "google-alerts"


def test_ordinary_links_are_direct() -> None:
    assert resolve_offline("https://example.com/a").method == "direct"
