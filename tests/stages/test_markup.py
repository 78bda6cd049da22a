"""Before trafilatura (feedmd/stages/markup.py): an article split into body containers is
read whole, an embedded post is read as the story's quotation; the real extraction on
both sides of each rule, and what each rule leaves alone."""

from __future__ import annotations

import trafilatura
from lxml.html import HtmlElement, fromstring, tostring

from feedmd.models import Page
from feedmd.settings import Settings
from feedmd.stages.markup import (
    MARKUP_RULE_VERSION,
    embedded_posts_as_quotes,
    join_split_article_bodies,
    prepared_tree,
)
from feedmd.stages.scrape import EXTRACTOR, extract_page

SETTINGS = Settings()
BASE = Page(url_hash="h", url="https://news.example/bridge", org="o", status="ok")
FIRST_RUN = [
    "The city council voted on Tuesday to close the old river bridge for four months of "
    "repairs, starting in March.",
    "Engineers found cracks in two of the bridge's supports during an inspection last "
    "autumn, the council said.",
    "A ferry will carry commuters across the river while the work goes on, and buses will "
    "run every ten minutes.",
    "Shop owners on both banks said they feared losing customers during the busiest months "
    "of the year.",
    "The mayor promised that the council would review the plan in June if the repairs fell "
    "behind schedule.",
    "Residents can comment on the ferry timetable at the town hall until the end of the "
    "month, officials said.",
]
LATER_RUNS = [
    "Later in the evening the council published the engineers' report, which lists eleven "
    "repairs in all.",
    "The most expensive of them, new bearings under the central span, will cost about two "
    "million pounds.",
    "A second inspection is planned for the autumn, after the bridge has reopened to cars "
    "and lorries.",
]
TWEET_TEXT = (
    "Four months without the bridge means an hour more on the road every day for our "
    "drivers, and nobody asked us"
)
KWARGS = {"output_format": "markdown", "include_comments": False, "include_links": True}


def paragraphs(texts: list[str]) -> str:
    return "".join(f"<p>{text}</p>" for text in texts)


def split_article(body_class: str = "body__container article__body") -> str:
    """A Condé Nast-like page: the story in three containers of one class, ads between."""
    ad = "<div class='ad ad--mid-content'><span>Advertisement</span></div>"
    runs = [FIRST_RUN, LATER_RUNS[:2], LATER_RUNS[2:]]
    containers = ad.join(
        f"<div class='grid'><div class='{body_class}'>{paragraphs(run)}</div></div>" for run in runs
    )
    return (
        "<html><head><title>Bridge to close</title></head><body><nav><a href='/'>Home</a>"
        f"</nav><main><h1>Bridge to close for repairs</h1>{containers}</main>"
        "<footer>Copyright 2026 Valley News</footer></body></html>"
    )


def tweet_in(wrapper_open: str, wrapper_close: str) -> str:
    return (
        f"{wrapper_open}<blockquote class='twitter-tweet' data-lang='en'><p lang='en'>"
        f"{TWEET_TEXT}</p>&mdash; Valley Haulage (@valleyhaulage) <a href="
        "'https://twitter.com/valleyhaulage/status/1'>November 18, 2026</a></blockquote>"
        "<script async src='https://platform.twitter.com/widgets.js'></script>"
        f"{wrapper_close}"
    )


def article_with(embed: str) -> str:
    share = (
        "<div class='social-share'><a href='https://facebook.com/x'>Share this story on "
        "Facebook with your friends and family today</a></div>"
    )
    return (
        "<html><head><title>Bridge</title></head><body><article><h1>Bridge to close</h1>"
        f"<div class='article-text'>{paragraphs(FIRST_RUN[:2])}{embed}"
        f"{paragraphs(FIRST_RUN[2:4])}{share}</div></article></body></html>"
    )


def tree_of(html: str) -> HtmlElement:
    tree = fromstring(html)
    assert isinstance(tree, HtmlElement)
    return tree


def test_the_extractor_name_carries_the_markup_rule() -> None:
    assert MARKUP_RULE_VERSION == "markup-v1"
    assert f"+{MARKUP_RULE_VERSION}/" in EXTRACTOR


def test_an_article_split_into_body_containers_is_read_whole() -> None:
    html = split_article().encode()
    # trafilatura alone keeps the first container: the rest of the story is lost
    alone = trafilatura.extract(html, **KWARGS) or ""
    assert FIRST_RUN[0] in alone and not any(text in alone for text in LATER_RUNS)
    page = extract_page(BASE, html, SETTINGS)
    assert all(text in page.prose for text in FIRST_RUN + LATER_RUNS)
    # in the story's order, and the ads between the containers stay out
    assert page.prose.index(FIRST_RUN[-1]) < page.prose.index(LATER_RUNS[0])
    assert "Advertisement" not in page.markdown


def test_only_containers_of_one_class_that_names_an_article_body_are_joined() -> None:
    # two containers of a class that names no article body (a rail's widgets): apart
    rails = tree_of(split_article("grid-item rail-module"))
    assert join_split_article_bodies(rails) == 0
    # two body containers of different class strings are two things, not one story
    mixed = tree_of(
        "<html><body><div class='article-body'><p>one</p></div>"
        "<div class='article-body related'><p>two</p></div></body></html>"
    )
    assert join_split_article_bodies(mixed) == 0
    # a related-posts rail that reuses the body's class sits elsewhere: not the story
    rail = tree_of(
        f"<html><body><main><div class='post-content'>{paragraphs(FIRST_RUN)}</div></main>"
        "<aside class='related-posts'><article><div class='post-content'><p>Another story's "
        "teaser that a rail prints under every article</p></div></article></aside></body></html>"
    )
    assert join_split_article_bodies(rail) == 0
    # cards of a teaser strip, each in an article of its own: not one story's runs
    cards = tree_of(
        "<html><body><div class='strip'>"
        + "".join(
            f"<article class='card'><div class='entry-content'><p>{text}</p></div></article>"
            for text in LATER_RUNS
        )
        + f"</div><div class='story'><div class='entry-content'>{paragraphs(FIRST_RUN)}</div>"
        "</div></body></html>"
    )
    assert join_split_article_bodies(cards) == 0
    stacked = tree_of(
        "<html><body><ul class='stack'>"
        + "".join(f"<li><div class='article-body'><p>{text}</p></div></li>" for text in FIRST_RUN)
        + "</ul></body></html>"
    )
    assert join_split_article_bodies(stacked) == 0
    # one container: nothing to join
    single = tree_of(f"<html><body><div class='story-content'>{paragraphs(FIRST_RUN)}</div>")
    assert join_split_article_bodies(single) == 0
    # the same class string, spaced differently, is one class
    spaced = tree_of(split_article("body__container   article__body"))
    assert join_split_article_bodies(spaced) == 2


def test_joining_keeps_order_text_and_tails_and_never_copies_a_nested_container() -> None:
    tree = tree_of(
        "<html><body><div id='page'><div class='entry-content'>lead <p>one</p></div>"
        "between<div class='entry-content'>loose <p>two</p>"
        "<div class='entry-content'><p>nested</p></div></div>after</div></body></html>"
    )
    assert join_split_article_bodies(tree) == 1
    page = tree.get_element_by_id("page")
    assert [child.get("class") for child in page] == ["entry-content"]
    # the second container's loose text follows the first's last words on a line of its own
    assert page[0].text_content() == "lead one\nloose twonested"
    # the text between and after the containers stays in the page, in place
    assert page[0].tail == "between\nafter"
    assert tostring(tree).count(b"nested") == 1


def test_an_embedded_post_is_read_as_the_storys_quotation() -> None:
    html = article_with(tweet_in("<div class='social-media-embed'>", "</div>")).encode()
    alone = trafilatura.extract(html, **KWARGS) or ""
    assert TWEET_TEXT not in alone  # trafilatura drops the "social ... embed" wrapper
    page = extract_page(BASE, html, SETTINGS)
    assert TWEET_TEXT in page.prose
    assert page.prose.index(FIRST_RUN[1]) < page.prose.index(TWEET_TEXT)
    assert page.prose.index(TWEET_TEXT) < page.prose.index(FIRST_RUN[2])
    # share buttons are not a post: still left out
    assert "Share this story" not in page.markdown


def test_a_post_takes_the_place_of_every_wrapper_that_holds_nothing_else() -> None:
    nested = "<div class='sdc-article-widget'><div class='inner'><div class='content'>"
    tree = tree_of(article_with(tweet_in(nested, "</div></div></div>")))
    assert embedded_posts_as_quotes(tree) == 1
    quote = next(tree.iter("blockquote"))
    assert quote.attrib == {}
    assert quote.getparent().get("class") == "article-text"
    assert not any("widget" in (e.get("class") or "") for e in tree.iter())
    # the embed script stays behind with the wrapper; the post's own words are all there
    assert TWEET_TEXT in quote.text_content()
    assert not list(tree.iter("script"))


def test_a_wrapper_with_words_of_its_own_is_kept() -> None:
    # words in a child, in the wrapper's own text, or after a child: each keeps the wrapper
    for opening, closing in (
        ("<div class='embed-box'><p class='caption'>The haulier's complaint</p>", "</div>"),
        ("<div class='embed-box'>The haulier's complaint", "</div>"),
        ("<div class='embed-box'><span></span>The haulier's complaint", "</div>"),
        ("<div class='embed-box'>", "<span>Quoted by the desk</span></div>"),
    ):
        tree = tree_of(article_with(tweet_in(opening, closing)))
        assert embedded_posts_as_quotes(tree) == 1
        quote = next(tree.iter("blockquote"))
        assert quote.getparent().get("class") == "embed-box"  # the box and its words stay
        assert "complaint" in tostring(tree).decode() or "desk" in tostring(tree).decode()
        assert quote.attrib == {}


def test_scripts_styles_comments_and_empty_elements_beside_a_post_are_no_words() -> None:
    beside = (
        "<div class='embed'><style>.x { color: red }</style><!-- embed -->"
        "<script>window.twttr = 1;</script><span class='icon'></span>",
        "</div>",
    )
    tree = tree_of(article_with(tweet_in(*beside)))
    assert embedded_posts_as_quotes(tree) == 1
    assert next(tree.iter("blockquote")).getparent().get("class") == "article-text"


def test_every_platforms_embed_code_is_a_post_and_the_text_after_a_wrapper_stays() -> None:
    for platform in ("twitter-tweet", "instagram-media", "tiktok-embed"):
        tree = tree_of(
            "<html><body><div class='article-text'><p>Before the post.</p>"
            f"<div class='social-embed'><blockquote class='{platform}'><p>The post</p>"
            "</blockquote></div>After the post.</div></body></html>"
        )
        assert embedded_posts_as_quotes(tree) == 1, platform
        quote = next(tree.iter("blockquote"))
        assert quote.getparent().get("class") == "article-text"
        assert quote.tail == "After the post."


def test_a_post_never_takes_the_place_of_a_page_region_or_more_than_four_wrappers() -> None:
    # a site's own promoted post in its sidebar stays in the sidebar
    sidebar = tree_of(
        f"<html><body><main>{paragraphs(FIRST_RUN)}</main><div class='sidebar'>"
        "<div class='widget'><blockquote class='twitter-tweet'><p>Follow us</p></blockquote>"
        "</div></div></body></html>"
    )
    assert embedded_posts_as_quotes(sidebar) == 1
    assert next(sidebar.iter("blockquote")).getparent().get("class") == "sidebar"
    deep = tree_of(
        "<html><body><div id='top'>" + "<div>" * 6 + "<blockquote class='twitter-tweet'>"
        "<p>The post</p></blockquote>" + "</div>" * 6 + "</div></body></html>"
    )
    assert embedded_posts_as_quotes(deep) == 1
    depth = sum(1 for _ in next(deep.iter("blockquote")).iterancestors())
    assert depth == 2 + 3  # html, body, #top, and the 2 of 6 divs above the 4 it climbed


def test_a_blockquote_that_is_no_embedded_post_is_left_alone() -> None:
    tree = tree_of(
        article_with("<div class='pullquote-embed'><blockquote class='pull'>x</blockquote></div>")
    )
    assert embedded_posts_as_quotes(tree) == 0
    assert next(tree.iter("blockquote")).get("class") == "pull"


def test_a_body_that_is_no_html_gives_no_text_and_no_error() -> None:
    for body in (b"", b"<p>x</p>", b"plain words here"):
        assert prepared_tree(body) is None
        assert trafilatura.extract(body) is None  # what trafilatura alone makes of it
    page = extract_page(BASE, b"plain words here", SETTINGS)
    assert page.error is None and page.digest is None and page.markdown == ""
    odd = extract_page(BASE, b"\x00\x01 not html", SETTINGS)
    assert odd.error is None and odd.digest is None
