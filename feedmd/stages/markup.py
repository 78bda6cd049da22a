"""Before trafilatura: a page's markup put the way its reader sees the article.

trafilatura reads the first element that looks like an article body and drops the
containers it takes for boilerplate. Two shapes of real pages lose their text that way:

1. **An article split into several body containers.** Some layouts close the body around
   every advertisement and open another container of the same class after it (Condé
   Nast's sites: each run of paragraphs in its own ``body__container article__body``).
   trafilatura keeps the first run and drops the rest of the story.
   ``join_split_article_bodies`` moves the later containers' content into the first, in
   document order, when two or more containers share one class string that names an
   article body (``article-body``, ``story__content``, ``entry-content``, ``post_text``,
   ``body__container``, ...) and sit in the same place of the layout (the same tags and
   classes above them: a related-posts rail that reuses the class is elsewhere), unless
   each is an item of its own (in an ``article``, ``li`` or ``a`` below their common
   ancestor: the cards of a teaser strip, the stories of a stacked page).
2. **Embedded posts.** Twitter's, Instagram's and TikTok's embed code is a blockquote
   (``twitter-tweet``, ``instagram-media``, ``tiktok-embed``) that sites wrap in
   containers named "social-media-embed", "article-widget" and the like, which trafilatura
   discards as share buttons: the quotations a story is built on go with them.
   ``embedded_posts_as_quotes`` puts each such post in place of the wrappers that hold
   nothing else (at most four, never a region of the page such as a sidebar, so a site's
   own promoted post stays where it was), as a plain blockquote, so it is read as the
   story's quotation.

Measured on the 111 pages of eval/pages (``feedmd eval pages``): F1 0.9672 -> 0.9720
(P 0.9844 -> 0.9842, R 0.9505 -> 0.9600); halves (sorted by id) 0.9555 -> 0.9629 and
0.9784 -> 0.9807. The joining changes one page (Wired: recall 0.448 -> 0.983, precision
1.0 -> 0.953) and one other by a hair (0.998 -> 0.994 recall); the posts change three
(NJ.com 0.70 -> 0.98, Sky 0.87 -> 0.99, SB Nation 0.70 -> 0.82) and no page loses.
A wider class rule (any class with "body", "content" or "text") was measured and left
out: F1 0.9639, it joins sidebars and rails. Cost: the page is parsed once, as trafilatura
would parse it, and the two passes add ~0.5 ms a page (the 111 pages' extraction 1.73 s ->
1.79 s, median of 3); both passes are linear in the page (each wrapper is read once, and
which elements hold words is found in one pass): 100,000 empty posts in one wrapper, a
4.7 MB page, take 0.33 s with the parse.
"""

from __future__ import annotations

import re

import trafilatura
from lxml.html import HtmlElement

# Bump with any change to what the pass does: it is part of a page's extractor name, so a
# stored page tells which markup rule made its Markdown (stored Markdown is not redone).
MARKUP_RULE_VERSION = "markup-v1"

# A class string naming an article's body: "article-body", "article__body", "articleBody",
# "story-content", "entry_content", "post-text", ... and Condé Nast's "body__container".
# Narrower than trafilatura's own list on purpose: a split body shares the exact class
# string, and "content" or "text" alone also name sidebars and rails (measured above).
_ARTICLE_BODY_CLASS = re.compile(
    r"(?:article|story|entry|post)[-_]{0,2}(?:body|content|text)|body__container", re.I
)
_CONTAINER_TAGS = ("div", "section", "article", "main")
# Elements that make each member an item of a list of its own (a card, a stacked story).
_ITEM_TAGS = frozenset({"article", "li", "a"})
# The blockquote classes of the embed code Twitter/X, Instagram and TikTok hand out.
_EMBEDDED_POST_CLASS = re.compile(r"\b(?:twitter-tweet|instagram-media|tiktok-embed)\b")
_WRAPPER_TAGS = frozenset({"div", "figure", "section", "span", "center"})
# A post climbs at most this many wrappers: the embeds on eval/pages sit under 1-3 (an
# unclassed div, "social-media-embed", Sky's three "sdc-article-tweet" levels); a cap keeps
# a site's own promoted post in a sidebar from taking the sidebar's place.
_MAX_WRAPPERS = 4
# Wrappers that are regions of the page, not of the post: never climbed.
_PAGE_REGION = re.compile(r"sidebar|footer|related|comment|\brail\b|\bnav", re.I)
_NOT_TEXT = frozenset({"script", "style", "noscript", "template"})


def prepared_tree(body: bytes | str) -> HtmlElement | None:
    """The page parsed as trafilatura parses it (``trafilatura.load_html``), with both
    passes applied; None when it cannot be read as HTML, where trafilatura would find no
    text either."""
    tree = trafilatura.load_html(body)
    if tree is None:
        return None
    embedded_posts_as_quotes(tree)
    join_split_article_bodies(tree)
    return tree


def join_split_article_bodies(tree: HtmlElement) -> int:
    """Move the content of later article-body containers of one class string into the
    first (see the module docstring); returns how many containers were joined."""
    groups: dict[tuple[tuple[str, str], ...], list[HtmlElement]] = {}
    for element in tree.iter(*_CONTAINER_TAGS):
        classes = element.get("class")
        if classes and _ARTICLE_BODY_CLASS.search(classes):
            groups.setdefault(_place(element), []).append(element)
    joined = 0
    for members in groups.values():
        # one place has one depth, so no member holds another
        if len(members) < 2 or _items_of_a_list(members):
            continue
        first, *later = members
        for container in later:
            _move_content(container, first)
            _remove_keeping_tail(container)
            joined += 1
    return joined


def _items_of_a_list(members: list[HtmlElement]) -> bool:
    """Whether each member is, or sits in, an item of its own below the members' common
    ancestor (an ``article``, ``li`` or ``a``): cards of a teaser strip, stories of a
    stacked page, never one story's runs."""
    level, between = list(members), []
    while len({id(node) for node in level}) > 1:
        level = [node.getparent() for node in level]
        if any(node is None for node in level):
            return True  # no common ancestor: nothing to say they are one story
        between.append(level[0])
    return any(node.tag in _ITEM_TAGS for node in (members[0], *between[:-1]))


def _place(element: HtmlElement) -> tuple[tuple[str, str], ...]:
    """An element's tag and class string and those of all its ancestors: the runs of one
    split body sit in the same place of the layout (Wired: each in its own "grid" div
    under one parent), while a related-posts rail that reuses the body's class sits
    elsewhere ("related-posts > article > post-content") and is not joined to it."""
    return tuple(
        (str(node.tag), " ".join((node.get("class") or "").split()))
        for node in (element, *element.iterancestors())
    )


def embedded_posts_as_quotes(tree: HtmlElement) -> int:
    """Put every embedded post (Twitter/X, Instagram, TikTok) in place of the wrappers
    that hold nothing but it, as a plain blockquote; returns how many posts were freed."""
    worded = _worded_elements(tree)
    examined: set[HtmlElement] = set()
    freed = 0
    for quote in list(tree.iter("blockquote")):
        if not _EMBEDDED_POST_CLASS.search(quote.get("class") or ""):
            continue
        outermost = quote
        for level, ancestor in enumerate(quote.iterancestors()):
            # a wrapper another post has climbed holds that post too: each is read once
            if level == _MAX_WRAPPERS or ancestor in examined:
                break
            examined.add(ancestor)
            if not _holds_only(ancestor, outermost, worded):
                break
            outermost = ancestor
        quote.attrib.clear()  # its class and data attributes are what discard lists match
        if outermost is not quote:
            parent = outermost.getparent()
            if parent is None:
                continue
            quote.tail = outermost.tail
            parent.replace(outermost, quote)
        freed += 1
    return freed


def _worded_elements(tree: HtmlElement) -> set[HtmlElement]:
    """The elements with a word anywhere inside them (script, style and comment text not
    counted), found in one pass: each text marks its element and the ancestors not yet
    marked, so the set costs what the page is long."""
    worded: set[HtmlElement] = set()

    def mark(element: HtmlElement | None) -> None:
        while element is not None and element not in worded:
            worded.add(element)
            element = element.getparent()

    for node in tree.iter():
        if isinstance(node.tag, str) and node.tag not in _NOT_TEXT and (node.text or "").strip():
            mark(node)
        if (node.tail or "").strip():
            mark(node.getparent())
    return worded


def _holds_only(wrapper: HtmlElement, inner: HtmlElement, worded: set[HtmlElement]) -> bool:
    """Whether ``wrapper`` is a post's wrapper: a plain container (not an ``aside``, not
    named as a sidebar, footer, rail or comments) with no words but ``inner``'s; its other
    children may be scripts, styles, comments or empty elements (the embed script)."""
    if wrapper.tag not in _WRAPPER_TAGS or (wrapper.text or "").strip():
        return False
    if _PAGE_REGION.search(f"{wrapper.get('class') or ''} {wrapper.get('id') or ''}"):
        return False
    for child in wrapper:
        if (child.tail or "").strip():
            return False
        if child is not inner and child in worded:
            return False
    return True


def _move_content(source: HtmlElement, target: HtmlElement) -> None:
    """Append ``source``'s text and children to ``target``, in order."""
    if source.text and source.text.strip():
        # a line break keeps the two containers' words apart ("end" + "start")
        if len(target):
            target[-1].tail = (target[-1].tail or "") + "\n" + source.text
        else:
            target.text = (target.text or "") + "\n" + source.text
    for child in list(source):
        target.append(child)  # lxml moves the child with its tail


def _remove_keeping_tail(element: HtmlElement) -> None:
    """Remove an element from its parent; the text after it stays where it was."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail and element.tail.strip():
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + "\n" + element.tail
        else:
            parent.text = (parent.text or "") + "\n" + element.tail
    parent.remove(element)
