"""Markdown -> prose -> TLSH: prose-v7 (the line rule plus paragraph context, sub-headings,
link lines inside a sentence, short sentences, CJK word counts, table cells and rows,
furniture lines and junk pages), both sides of each threshold. Walls in every language are
in test_walls.py."""

from __future__ import annotations

import dataclasses
from typing import Any

from feedmd.settings import Settings
from feedmd.settings.bodies import PROSE_RULE_VERSION, prose_settings_version
from feedmd.stages.prose import junk_verdict, markdown_to_prose, prose_line

SETTINGS = Settings()
TWELVE = "one two three four five six seven eight nine ten eleven twelve"
PARA = (
    "The council said on Monday that the bridge over the river would close for repairs "
    "in the spring, and that a ferry would carry commuters across while the work went on."
)
PARA2 = (
    "Residents who spoke at the meeting asked how long the closure would last, and the "
    "engineer in charge said the repairs should take about four months if the weather held."
)


def with_extra(**extra: Any) -> Settings:
    """The default settings with some prose tunables changed."""
    return dataclasses.replace(SETTINGS, **extra)


def test_rule_version_is_v7() -> None:
    assert PROSE_RULE_VERSION == "prose-v7"


def test_line_needs_eight_words() -> None:
    eight = " ".join(TWELVE.split()[:8])
    assert prose_line(eight, SETTINGS) == eight
    assert prose_line(eight.rsplit(" ", 1)[0], SETTINGS) is None
    assert prose_line(eight, with_extra(prose_min_words=9)) is None


def test_headings_tables_and_link_lists_are_dropped() -> None:
    assert prose_line("# " + TWELVE, SETTINGS) is None
    assert prose_line("| " + TWELVE + " |", SETTINGS) is None
    links = " ".join(f"[word{i} more{i}](https://x/{i})" for i in range(7))
    assert prose_line("- " + links, SETTINGS) is None


def test_link_share_boundary() -> None:
    # 6 of 12 words in a link = 0.5: kept; 7 of 12 is mostly links: dropped
    half = "[one two three four five six](https://x) seven eight nine ten eleven twelve"
    more = "[one two three four five six seven](https://x) eight nine ten eleven twelve"
    assert prose_line(half, SETTINGS) == TWELVE
    assert prose_line(more, SETTINGS) is None


def test_list_items_emphasis_html_tags_and_escapes_become_plain_prose() -> None:
    assert prose_line("- **" + TWELVE + "**", SETTINGS) == TWELVE
    tagged = "one two <u>three four</u> five six seven eight nine ten eleven \\[twelve\\]"
    assert prose_line(tagged, SETTINGS) == TWELVE.replace("twelve", "[twelve]")


def test_text_in_escaped_angle_brackets_is_text_not_a_tag() -> None:
    # trafilatura writes a literal "<" as "\<": a title in angle brackets stays in the prose
    line = "It was part of the opening of \\<The Palace: Tale of Jang Noksu> at the festival"
    assert prose_line(line, SETTINGS) == (
        "It was part of the opening of <The Palace: Tale of Jang Noksu> at the festival"
    )
    # the same words as a real tag are markup and go
    tag = "It was part of the opening of <span class='title'>the play</span> at the festival"
    assert prose_line(tag, SETTINGS) == "It was part of the opening of the play at the festival"


def test_short_sentence_needs_four_words_and_sentence_punctuation() -> None:
    assert prose_line("Police used a ram.", SETTINGS) == "Police used a ram."
    assert prose_line("“We got her,” he said!", SETTINGS) == "“We got her,” he said!"
    assert prose_line("Webb emerged, naked.", SETTINGS) is None  # 3 words
    assert prose_line("Police used a ram", SETTINGS) is None  # no sentence end: a caption
    lower = with_extra(prose_short_min_words=3)
    assert prose_line("Webb emerged, naked.", lower) == "Webb emerged, naked."


def test_short_lines_between_paragraphs_are_kept() -> None:
    markdown = f"{PARA}\n\nWebb emerged, naked.\n\nAt first, no sign\n\n{PARA2}"
    assert markdown_to_prose(markdown, SETTINGS).text.splitlines() == [
        PARA,
        "Webb emerged, naked.",
        "At first, no sign",
        PARA2,
    ]


def test_short_lines_outside_paragraph_context_are_dropped() -> None:
    # before the first paragraph (title, byline), after the last (tags), or cut off from a
    # paragraph by a link list or a heading no paragraph precedes
    markdown = "\n\n".join(
        [
            "By Staff Writer",
            PARA,
            "[Most read one](https://x/1) [Most read two](https://x/2)",
            "## More stories",
            "Short line after a heading",
            PARA2,
            "[Related story one](https://x/1) [Related story two](https://x/2)",
            "Another short line",
            PARA,
            "Tags: bridge, council",
        ]
    )
    assert markdown_to_prose(markdown, SETTINGS).text.splitlines() == [PARA, PARA2, PARA]


def test_a_sub_heading_between_paragraphs_is_kept() -> None:
    markdown = f"# Bridge to close\n\n{PARA}\n\n## What happens next\n\nIn short\n\n{PARA2}"
    assert markdown_to_prose(markdown, SETTINGS).text.splitlines() == [
        PARA,
        "What happens next",
        "In short",
        PARA2,
    ]
    # after the last paragraph it is not between two: dropped, like a trailing short line
    trailing = markdown_to_prose(f"{PARA}\n\n## Most read\n\nShort line", SETTINGS)
    assert trailing.text.splitlines() == [PARA]
    assert prose_line("# " + TWELVE, SETTINGS) is None  # never prose on its own
    linked = markdown_to_prose(
        f"{PARA}\n\n## [Council votes on the budget](https://x/1)\n\nIn short\n\n{PARA2}",
        SETTINGS,
    )
    assert linked.text.splitlines() == [PARA, PARA2]  # a linked heading: a rail, not the story
    hashtag = markdown_to_prose(f"{PARA}\n\n#bridge\n\n{PARA2}", SETTINGS)
    assert hashtag.text.splitlines() == [PARA, PARA2]  # not a heading: structure


def test_a_link_line_inside_a_sentence_is_text() -> None:
    # trafilatura puts an inline link on a line of its own (macrumors.com, snopes.com)
    will = "Apple analyst Ming-Chi Kuo has predicted that Apple will"
    link = "[move its notebook lineup to scissor keyboards](https://x/1)"
    rest = ", including all MacBook Pro and MacBook Air models."
    text = markdown_to_prose(f"{PARA}\n\n{will}\n\n{link}\n\n{rest}\n\n{PARA2}", SETTINGS).text
    assert text.splitlines() == [
        PARA,
        will,
        "move its notebook lineup to scissor keyboards",
        rest,
        PARA2,
    ]
    # the text before ends a sentence, but the text after goes on in lower case
    ended = "The keyboards have suffered from."
    after = "since their introduction in 2016, and repairs are free."
    text = markdown_to_prose(f"{PARA}\n\n{ended}\n{link}\n{after}\n\n{PARA2}", SETTINGS).text
    assert "move its notebook lineup to scissor keyboards" in text.splitlines()


def test_a_link_line_between_whole_sentences_still_breaks_context() -> None:
    headline = "[Council votes on the budget for the new bridge today](https://x/1)"
    # the text before ends a sentence and the text after starts one: a rail's headline
    text = markdown_to_prose(f"{PARA}\n\n{headline}\n\nIn short\n\n{PARA2}", SETTINGS).text
    assert text.splitlines() == [PARA, PARA2]
    # no text on one side (the end of the page, a list of links) is no sentence either
    will = "The council said on Tuesday that the new bridge will"
    end = markdown_to_prose(f"{PARA}\n\n{will}\n\n{headline}", SETTINGS).text
    assert end.splitlines() == [PARA, will]
    two = markdown_to_prose(
        f"{PARA}\n\n{will}\n\n{headline}\n\n{headline}\n\nclose in spring\n\n{PARA2}",
        SETTINGS,
    ).text
    assert two.splitlines() == [PARA, will, PARA2]


def test_wrapped_paragraph_comes_back_through_context() -> None:
    wrapped = (
        "Photos which were released online\nshow the actress, looking stunning in new\nphotos."
    )
    text = markdown_to_prose(f"{PARA}\n\n{wrapped}\n\n{PARA2}", SETTINGS).text
    assert text.splitlines() == [PARA, *wrapped.splitlines(), PARA2]


def test_consecutive_menu_lines_are_not_joined_into_prose() -> None:
    # trafilatura's baseline fallback puts a menu on consecutive lines: joined, 30 one-word
    # items would read as a 60-word paragraph and give the whole site one fingerprint
    menu = "\n".join(f"Section {i}" for i in range(30))
    prose = markdown_to_prose(f"{menu}\nBeta\nBy Staff Writer\nA short story.", SETTINGS)
    assert prose.text == ""
    assert prose.digest is None


def test_code_blocks_are_not_prose() -> None:
    markdown = f"{PARA}\n\n```\n{TWELVE}\n```\n\n{PARA2}"
    assert TWELVE not in markdown_to_prose(markdown, SETTINGS).text


def test_cjk_characters_count_as_half_words() -> None:
    twenty_four = "今日は市議会が橋の修理について長い議論を行い住民の質問に答え"  # 30 chars
    assert len(twenty_four) == 30
    assert prose_line(twenty_four, SETTINGS) == twenty_four  # 15 "words"
    assert prose_line(twenty_four[:14], SETTINGS) is None  # 7 "words", no sentence end
    assert prose_line(twenty_four[:16], SETTINGS) == twenty_four[:16]  # 8
    per_char = with_extra(prose_cjk_chars_per_word=1.0)
    assert prose_line(twenty_four[:8], per_char) == twenty_four[:8]
    assert prose_line(twenty_four[:7], per_char) is None


def test_furniture_lines_are_dropped_when_short() -> None:
    for line in (
        "Follow Newsbeat on Instagram, Facebook, Twitter and YouTube.",
        "Get the latest updates right in your inbox. Subscribe to our newsletters.",
        "Copyright 2026 Test Publisher. All rights reserved.",
        "Read more: Council approves the bridge budget after a long debate on Monday",
        "Like this story? Share it with a friend!",
        "Folgen Sie uns auf Twitter und Facebook, um keine Nachricht zu verpassen.",
        "Suivez-nous sur Facebook et Instagram pour ne rien manquer de l'actualité.",
        "Síguenos en Twitter y Facebook para no perderte ninguna noticia del día.",
    ):
        assert prose_line(line, SETTINGS) is None, line
    # a paragraph of 40 words or more that mentions a newsletter is prose
    long_one = " ".join([PARA, "Subscribe to the council newsletter for updates.", PARA2])
    assert prose_line(long_one, SETTINGS) == long_one
    assert prose_line(long_one, with_extra(prose_boilerplate_max_words=100)) is None


def test_short_prose_gets_no_digest_and_says_why() -> None:
    prose = markdown_to_prose("\n\n".join([TWELVE] * 6), SETTINGS)  # 6 * 62 + 5 = 377 chars
    assert prose.digest is None
    assert prose.no_digest_reason == "prose too short: 377 chars < 400"
    lower = dataclasses.replace(SETTINGS, prose_min_chars=377)
    at_bound = markdown_to_prose("\n\n".join([TWELVE] * 6), lower)
    assert at_bound.no_digest_reason is None and at_bound.digest is not None


def test_uniform_prose_gets_no_digest() -> None:
    prose = markdown_to_prose("\n\n".join([" ".join(["aaaa"] * 12)] * 20), SETTINGS)
    assert prose.digest is None
    assert prose.no_digest_reason == "no TLSH digest: prose too uniform"


def test_real_prose_gets_a_tlsh_digest() -> None:
    from conftest import story

    prose = markdown_to_prose("\n\n".join(story("digest")), SETTINGS)
    assert prose.digest is not None and prose.digest.startswith("T1")
    assert len(prose.digest) == 72


def test_settings_version_changes_with_prose_settings_only() -> None:
    base = prose_settings_version(SETTINGS)
    assert prose_settings_version(dataclasses.replace(SETTINGS, tlsh_max_distance=10)) == base
    assert prose_settings_version(dataclasses.replace(SETTINGS, prose_min_words=10)) != base
    assert prose_settings_version(with_extra()) == base
    for name, value in (
        ("prose_short_min_words", 5),
        ("prose_cjk_chars_per_word", 1.5),
        ("prose_boilerplate_max_words", 30),
        ("prose_junk_min_share", 0.6),
    ):
        assert prose_settings_version(with_extra(**{name: value})) != base, name


def test_junk_must_dominate_the_page() -> None:
    wall = "Subscribe to continue reading. Already a subscriber? Log in to continue reading."
    article = "\n\n".join([PARA, PARA2, PARA, wall])
    assert junk_verdict(article) is None
    assert markdown_to_prose(article, SETTINGS).digest is not None
    # half the characters is the boundary (prose_junk_min_share = 0.5)
    filler = "x" * len(wall)
    assert junk_verdict(f"{wall}\n{filler}") == "paywall"
    assert junk_verdict(f"{wall}\n{filler}x") is None
    assert junk_verdict(f"{wall}\n{filler}x", with_extra(prose_junk_min_share=0.4)) == "paywall"


def test_articles_about_cookies_and_errors_are_not_junk() -> None:
    from conftest import story

    text = "\n\n".join(
        [
            *story("privacy", 4),
            "The regulator said that sites which say they use cookies must ask first.",
            "A spokesman said the 404 error page was fixed within the hour.",
        ]
    )
    assert junk_verdict(text) is None
    assert junk_verdict("") is None


def test_an_article_laid_out_in_a_table_cell_is_prose() -> None:
    # trafilatura's Markdown for an article inside <table><tr><td>...</td></tr></table>
    article = " ".join([PARA, PARA2, PARA])
    markdown = f"| [Home](/) [News](/news) | {article} |\n| Copyright 2004 Valley Gazette |  |"
    prose = markdown_to_prose(markdown, SETTINGS)
    assert prose.text == article
    assert prose.digest is not None
    # an escaped pipe is cell text; <br> inside a cell splits it into paragraphs
    split = markdown_to_prose(f"|  | {PARA}<br><br>{PARA2} \\| {PARA} |", SETTINGS)
    assert split.text.splitlines() == [PARA, f"{PARA2} | {PARA}"]


def test_a_table_of_short_cells_gives_no_prose_and_says_why() -> None:
    rows = ["| Date | Home | Away | Score |", "| --- | --- | --- | --- |"]
    rows += [f"| Oct {day} | Rovers | United | {day % 4}-1 |" for day in range(1, 30)]
    prose = markdown_to_prose("\n".join(rows), SETTINGS)
    assert prose.text == ""
    assert prose.digest is None
    assert prose.no_digest_reason == "prose too short: 0 chars < 400"


def test_rows_never_join_but_cells_of_one_row_do() -> None:
    short = "The mayor said so."  # a short sentence of four words: prose
    tiny = "Read on"  # short, not a sentence: kept only between prose
    same_row = markdown_to_prose(f"| {PARA} | {tiny} | {PARA2} |", SETTINGS)
    assert same_row.text.splitlines() == [PARA, tiny, PARA2]
    rows = markdown_to_prose(f"| {PARA} |\n| {tiny} |\n| {PARA2} |", SETTINGS)
    assert rows.text.splitlines() == [PARA, PARA2]
    assert markdown_to_prose(f"| {short} |", SETTINGS).text == short


def test_a_row_of_short_cells_is_read_as_one_line() -> None:
    # no cell is prose: the row reads as one line, prose at prose_min_words words
    row = "| Kyle Busch | Joe Gibbs Racing | Toyota | 5,040 points |"  # 9 words
    assert (
        markdown_to_prose(row, SETTINGS).text == "Kyle Busch Joe Gibbs Racing Toyota 5,040 points"
    )
    assert markdown_to_prose(row, with_extra(prose_min_words=10)).text == ""
    # a cell that is prose keeps the row's cells apart (a menu beside an article)
    menu = markdown_to_prose(f"| [Home](/) [News](/news) | {PARA} |", SETTINGS)
    assert menu.text == PARA


def test_an_article_in_an_html_table_through_the_real_extraction() -> None:
    from feedmd.models import Page
    from feedmd.stages.scrape import extract_page

    html = (
        "<html><head><title>Council approves road budget</title></head><body>"
        "<table width=760><tr><td width=150><a href='/'>Home</a><br><a href='/news'>News</a>"
        f"</td><td><h1>Council approves road budget</h1>{PARA}<br><br>{PARA2}<br><br>{PARA}"
        "</td></tr><tr><td colspan=2>Copyright 2004 Valley Gazette</td></tr></table>"
        "</body></html>"
    )
    base = Page(url_hash="h", url="https://gazette.example/a", org="o", status="ok")
    page = extract_page(base, html.encode(), SETTINGS)
    assert PARA in page.prose and PARA2 in page.prose
    assert page.digest is not None


def test_a_page_past_the_extraction_budget_is_cut_and_gets_no_digest_with_its_reason() -> None:
    from feedmd.models import Page
    from feedmd.stages.scrape import extract_page

    paragraphs = "".join(f"<p>{PARA} Number {i}.</p>" for i in range(40))
    html = f"<html><body><article>{paragraphs}</article></body></html>".encode()
    base = Page(url_hash="h", url="https://big.example/a", org="o", status="ok")
    whole = extract_page(base, html, SETTINGS)
    assert whole.digest is not None
    size = len(whole.markdown)
    within = extract_page(base, html, with_extra(max_markdown_chars=size))
    assert within.digest == whole.digest
    over = extract_page(base, html, with_extra(max_markdown_chars=size - 1))
    assert over.digest is None and over.prose == ""
    assert over.no_digest_reason == (
        f"over the extraction budget: {size} characters of Markdown > max_markdown_chars {size - 1}"
    )
    assert len(over.markdown) < size and whole.markdown.startswith(over.markdown)
