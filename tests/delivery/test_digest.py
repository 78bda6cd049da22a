"""`feedmd export --format html|digest-markdown`: the newsletter digest on the demo store.

The demo store is built once for the module (tests/delivery/test_exports.py's fixtures) and copied
per test; expected stories are counted straight from the SQLite file.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from conftest import DemoStores
from stores import copy_db, export, item_id, query

from feedmd.delivery import overrides
from feedmd.store import open_store
from feedmd.timeutil import utcnow


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    # events off: these tests count one export entry per kept item
    # (tests/delivery/test_events_outputs.py has the one-entry-per-event exports)
    return demo_stores.copy(events=False)


@pytest.fixture
def db(demo_db: Path, tmp_path: Path) -> Path:
    return copy_db(demo_db, tmp_path / "feedmd.db")


STORY = re.compile(r'<tr class="story" id="story-(\d+)">')


def kept_between(db: Path, start: str, end: str) -> list[int]:
    return [
        int(row[0])  # type: ignore[call-overload]
        for row in query(
            db,
            "SELECT id FROM items WHERE decision = 'kept' AND published_at >= ?"
            " AND published_at < ? ORDER BY published_at DESC, id DESC",
            start,
            end,
        )
    ]


def story_ids(html: str) -> list[int]:
    return [int(x) for x in STORY.findall(html)]


def test_html_digest_of_a_day_has_one_story_per_kept_item_newest_first(db: Path) -> None:
    html, _ = export(db, "--format", "html", "--day", "2026-10-12")
    expected = kept_between(db, "2026-10-12T00:00:00Z", "2026-10-13T00:00:00Z")
    assert len(expected) == 38
    assert story_ids(html) == expected
    assert "Monday 12 October 2026 · 38 stories" in html
    # the default period is the newest day with kept items: the same digest
    default, _ = export(db, "--format", "html")
    assert story_ids(default) == expected
    # another day has none
    empty, _ = export(db, "--format", "html", "--day", "2026-10-11")
    assert story_ids(empty) == [] and "No new stories in this period." in empty


def test_html_digest_of_a_run(db: Path) -> None:
    first, _ = export(db, "--format", "html", "--run", "1")
    assert sorted(story_ids(first)) == sorted(
        int(r[0])  # type: ignore[call-overload]
        for r in query(db, "SELECT id FROM items WHERE decision = 'kept' AND run_id = 1")
    )
    second, _ = export(db, "--format", "html", "--run", "2")
    assert story_ids(second) == []


def story_block(html: str, story: int) -> str:
    start = html.index(f'id="story-{story}"')
    return html[start : html.index("</tr>", start)]


def test_stories_show_lead_link_and_also_covered_by(db: Path) -> None:
    html, _ = export(db, "--format", "html")
    pope = item_id(db, "Continental Press", "Pope Leo will have surgery")
    block = story_block(html, pope)
    copies = query(
        db,
        "SELECT url_raw FROM items WHERE matched_item_id = ? AND decision = 'duplicate'",
        pope,
    )
    assert len(copies) == 2
    assert "Also covered by:" in block
    for (url,) in copies:
        assert f'href="{url}"' in block
    assert ">Pilgrim Herald</a> <span" in block  # the similar-tier item, marked similar
    (url,) = query(db, "SELECT url_raw FROM items WHERE id = ?", pope)[0]
    assert f'href="{url}"' in block and "Read at Continental Press" in block
    lead = re.search(r'font-size:15px;line-height:1.5;">(.*?)</p>', block, re.DOTALL)
    assert lead and len(lead.group(1).split()) >= 8
    # the item it resembles points back at it, marked similar
    herald = story_block(html, item_id(db, "Pilgrim Herald", "Holy See confirms pontiff"))
    assert ">Continental Press</a> <span" in herald and "(similar)" in herald


def test_html_is_email_safe_and_escapes_what_it_shows(db: Path) -> None:
    pope = item_id(db, "Continental Press", "Pope Leo will have surgery")
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE items SET title_raw = '<script>alert(1)</script> Pope' WHERE id = ?", (pope,)
        )
    html, _ = export(db, "--format", "html")
    lowered = html.lower()
    for banned in ("<script", "<link", "<style", "<img", "<iframe", "javascript:", "onload="):
        assert banned not in lowered, banned
    assert "&lt;script&gt;alert(1)&lt;/script&gt; Pope" in html
    # every visible block carries its style inline
    for tag in re.findall(r"<(?:td|p|h1|h2|a)\b[^>]*>", html):
        assert 'style="' in tag, tag


def test_markdown_digest_and_a_user_template(db: Path, tmp_path: Path) -> None:
    text, _ = export(db, "--format", "digest-markdown", "--day", "2026-10-12")
    assert text.count("\n## [") == 38
    assert text.startswith("# newsroom\n\nMonday 12 October 2026 · 38 stories\n")
    assert "Also covered by: [KXLT 7 News](" in text
    template = tmp_path / "mine.txt"
    template.write_text(
        "{{ title }}: {{ stories|length }}\n"
        "{% for s in stories %}{{ s.publisher }}|{{ s.also_covered_by|length }}\n{% endfor %}"
    )
    out, _ = export(db, "--format", "html", "--template", str(template), "--run", "1")
    lines = out.splitlines()
    assert lines[0] == "newsroom: 38" and len(lines) == 39
    assert "Continental Press|3" in lines


def test_since_digest_after_a_review_correction(db: Path) -> None:
    _, position = export(db, "--format", "html")
    copy = item_id(db, "KXLT 7 News", "Pope Leo will have surgery")
    store = open_store(db)
    try:
        overrides.restore(store, copy, "tester", utcnow())
    finally:
        store.close()
    html, after = export(db, "--format", "html", "--since", position)
    assert story_ids(html) == [copy] and "1 story" in html
    again, _ = export(db, "--format", "html", "--since", after)
    assert story_ids(again) == []


def test_digest_options_do_not_mix(db: Path) -> None:
    from click.testing import CliRunner

    from feedmd.cli.main import main

    runner = CliRunner()
    for args in (
        ["--format", "html", "--run", "1", "--day", "2026-10-12"],
        ["--format", "jsonl", "--run", "1"],
        ["--format", "html", "--day", "12/10/2026"],
    ):
        result = runner.invoke(main, ["export", "--db", str(db), *args])
        assert result.exit_code == 2, (args, result.output)


def test_leads_are_plain_text_and_markdown_is_escaped(db: Path) -> None:
    from feedmd.delivery.exports.digest import markdown_text, markdown_url, plain_text

    assert plain_text("A **bold** [link](http://x) and\nmore `code`") == (
        "A bold link and more code"
    )
    assert markdown_text("[Live] *Pope* #1 a_b") == r"\[Live\] \*Pope\* \#1 a\_b"
    assert markdown_url("http://x.example/a (b)") == "http://x.example/a%20%28b%29"
    pope = item_id(db, "Continental Press", "Pope Leo will have surgery")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE items SET title_raw = '[Live] Pope *surgery*' WHERE id = ?", (pope,))
    text, _ = export(db, "--format", "digest-markdown")
    assert r"## [\[Live\] Pope \*surgery\*](http://" in text
    html, _ = export(db, "--format", "html")
    for lead in re.findall(r'font-size:15px;line-height:1.5;">(.*?)</p>', html, re.DOTALL):
        assert "](" not in lead and "**" not in lead


def test_the_day_and_times_are_the_readers(db: Path) -> None:
    # Tokyo is UTC+9: the UTC Monday's stories from 15:00 on are its Tuesday's
    tuesday, _ = export(db, "--format", "html", "--day", "2026-10-13", "--timezone", "Asia/Tokyo")
    monday, _ = export(db, "--format", "html", "--day", "2026-10-12", "--timezone", "Asia/Tokyo")
    assert story_ids(tuesday) == kept_between(db, "2026-10-12T15:00:00Z", "2026-10-13T15:00:00Z")
    assert story_ids(monday) == kept_between(db, "2026-10-11T15:00:00Z", "2026-10-12T15:00:00Z")
    assert story_ids(tuesday) and story_ids(monday)
    assert "Tuesday 13 October 2026 · " in tuesday
    newest, _ = export(db, "--format", "html", "--timezone", "Asia/Tokyo")
    assert story_ids(newest) == story_ids(tuesday)  # the newest day is the reader's too
    # a story's time in words, in the reader's zone: 19:25 UTC is 04:25 JST the next day
    first = story_block(tuesday, story_ids(tuesday)[0])
    assert "Tue 13 Oct 2026, 04:25 JST" in first
    markdown, _ = export(db, "--format", "digest-markdown", "--timezone", "UTC")
    assert "Mon 12 Oct 2026, 19:25 UTC" in markdown and "2026-10-12 19:25" not in markdown


def test_a_title_loses_the_name_of_its_own_publisher_only(db: Path) -> None:
    html, _ = export(db, "--format", "digest-markdown")
    assert "Papal audiences cancelled through end of October, Prefecture says](" in html
    assert "Prefecture says - Pilgrim Herald" not in html
    # the stored title keeps it: the feeds and the store are as published
    assert query(db, "SELECT COUNT(*) FROM items WHERE title_raw LIKE '% - Pilgrim Herald'")[0][0]
