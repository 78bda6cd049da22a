"""`feedmd eval make-reprints`: bodies moved between real layouts, labelled, reproducible,
and layouts that would leak their own story left out. The full development set and its
figures are checked by the accuracy gate (tests/test_accuracy.py)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import EVAL
from lxml import html as lxml_html

from feedmd.cli.main import main
from feedmd.tools.evaluation.headlines import EvalDataError
from feedmd.tools.evaluation.reprint_set import (
    DATELINES,
    SIGN_OFFS,
    build_reprint_set,
    can_host,
    paragraphs,
    transplant,
    wire_edits,
)


def sentence(story: str, n: int) -> str:
    """A paragraph of more than 40 characters, unique to its story and position."""
    return f"{story} paragraph {n} tells the readers what happened at the {story} scene today."


def body(story: str, count: int = 5) -> str:
    return "\n".join(sentence(story, n) for n in range(count))


def layout(site: str, story: str, count: int = 5, extra: str = "") -> str:
    """A page with navigation, an article block of <p>s and a footer naming the site."""
    ps = "".join(f"<p>{sentence(story, n)}</p>" for n in range(count))
    return (
        f"<html><head><title>{site}</title>{extra}</head><body>"
        f"<nav>{site} home | world | sport</nav><div class='article'>{ps}</div>"
        f"<footer>{story} footer, all rights reserved</footer></body></html>"
    )


def write_pages(folder: Path, pages: dict[str, tuple[str, str]]) -> Path:
    """PAGES_DIR layout: truth.jsonl and html/<id>.html.gz."""
    (folder / "html").mkdir(parents=True)
    with (folder / "truth.jsonl").open("w", encoding="utf-8") as truth:
        for page_id, (html, text) in pages.items():
            truth.write(json.dumps({"id": page_id, "url": f"https://{page_id}/", "body": text}))
            truth.write("\n")
            with gzip.open(folder / "html" / f"{page_id}.html.gz", "wt", encoding="utf-8") as f:
                f.write(html)
    return folder


def text_of(path: Path) -> str:
    return " ".join(lxml_html.fromstring(path.read_text("utf-8")).text_content().split())


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    stories = {
        "alpha": layout("Alpha Times", "alpha"),
        "bravo": layout("Bravo Post", "bravo"),
        "charlie": layout("Charlie Daily", "charlie"),
        "delta": layout("Delta News", "delta"),
        # a layout that carries its story again as JSON-LD: never used
        "echo": layout("Echo Wire", "echo", extra='<script>{"articleBody": "..."}</script>'),
        # one <p> of the body: no article block to swap
        "foxtrot": layout("Foxtrot", "foxtrot", count=1),
    }
    bodies = {name: body(name, 1 if name == "foxtrot" else 5) for name in stories}
    return write_pages(tmp_path / "pages", {n: (stories[n], bodies[n]) for n in stories})


def test_reprints_carry_the_body_in_another_layout_and_differents_the_reverse(
    pages: Path, tmp_path: Path
) -> None:
    made = build_reprint_set(pages, tmp_path / "out", seed=1, per_body=2)
    # echo's body is reprinted elsewhere, but its own layout never carries another story
    assert (made.pages, made.usable_pages) == (6, 5)
    assert made.counts() == {"reprint": 10, "different": 8}
    lines = (tmp_path / "out" / "pairs.jsonl").read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [row["id"] for row in rows] == [f"reprint-{k}" for k in range(18)]
    for row in rows:
        a_name, b_name = Path(row["a_html"]).stem, Path(row["b_html"]).stem
        assert a_name.endswith("-orig")
        a_story = a_name.removesuffix("-orig")
        moved, _, host = b_name.partition("-in-")
        b_text = text_of(tmp_path / "out" / row["b_html"])
        if row["label"] == "reprint":
            # A's story inside B's furniture; B's own story gone
            assert moved == a_story and host != a_story
            assert sentence(a_story, 1) in b_text
            assert sentence(host, 1) not in b_text
            assert f"{host} footer" in b_text.lower()
        else:
            # another story inside A's own furniture
            assert host == a_story and moved != a_story
            assert sentence(moved, 4) in b_text and sentence(a_story, 1) not in b_text
            assert f"{a_story} footer" in b_text.lower()
    used = {Path(row["b_html"]).stem.partition("-in-")[2] for row in rows}
    assert used == {"alpha", "bravo", "charlie", "delta"}  # echo and foxtrot never a layout


def test_the_same_seed_gives_the_same_files_and_another_seed_other_edits(
    pages: Path, tmp_path: Path
) -> None:
    def files(out: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    build_reprint_set(pages, tmp_path / "one", seed=3)
    build_reprint_set(pages, tmp_path / "two", seed=3)
    build_reprint_set(pages, tmp_path / "three", seed=4)
    assert files(tmp_path / "one") == files(tmp_path / "two")
    assert files(tmp_path / "one") != files(tmp_path / "three")


def test_wire_edits_are_a_dateline_a_trim_and_a_sign_off_at_most() -> None:
    lines = paragraphs(body("golf", 6))
    seen = set()
    for seed in range(200):
        edited = wire_edits(lines, random.Random(seed))
        signed = edited[-1] in SIGN_OFFS
        core = edited[:-1] if signed else edited
        assert core[0] == lines[0] or any(core[0] == d + lines[0] for d in DATELINES)
        assert core[1:] == lines[1 : len(core)]
        assert len(lines) - 2 <= len(core) <= len(lines)
        seen.add((core[0] != lines[0], len(core) < len(lines), signed))
    assert len(seen) == 8  # every combination of the three edits happens


def test_wire_edits_never_trim_a_short_story() -> None:
    lines = paragraphs(body("hotel", 4))
    for seed in range(50):
        edited = wire_edits(lines, random.Random(seed))
        assert len([line for line in edited if line not in SIGN_OFFS]) == 4


def test_a_layout_that_keeps_its_story_elsewhere_is_refused() -> None:
    twice = layout("India", "india").replace(
        "<footer>", f"<aside>{sentence('india', 2)} (continued)</aside><footer>"
    )
    assert transplant(twice, body("india"), ["new"]) is None
    assert transplant(layout("India", "india"), body("india"), ["new text"]) is not None


def test_a_layout_refused_with_any_paragraphs_cannot_host() -> None:
    good = layout("India", "india")
    twice = good.replace("<footer>", f"<aside>{sentence('india', 2)}</aside><footer>")
    json_ld = layout("Echo", "india", extra='<script>{"articleBody": "..."}</script>')
    assert can_host(good, body("india"))
    assert not can_host(twice, body("india"))
    assert not can_host(json_ld, body("india"))
    assert not can_host(layout("One", "india", count=1), body("india", 1))


def test_on_real_pages_a_layout_that_cannot_host_refuses_every_transplant() -> None:
    """The builder skips layouts ``can_host`` refuses: that must never skip a swap that
    ``transplant`` would have made (checked against every other real page's body)."""
    rows = [
        json.loads(line)
        for line in (EVAL / "pages" / "truth.jsonl").read_text("utf-8").splitlines()
    ]
    pages = {
        row["id"]: (
            gzip.decompress((EVAL / "pages" / "html" / f"{row['id']}.html.gz").read_bytes()).decode(
                "utf-8"
            ),
            row["body"],
        )
        for row in rows[:40]
    }
    verdicts = {page_id: can_host(html, text) for page_id, (html, text) in pages.items()}
    assert 0 < sum(verdicts.values()) < len(verdicts)  # both kinds among the real pages
    for page_id, (html, text) in pages.items():
        if not verdicts[page_id]:
            for other_id, (_, other_text) in list(pages.items())[:10]:
                if other_id != page_id:
                    assert transplant(html, text, paragraphs(other_text)) is None


def test_on_real_pages_the_bodies_land_inside_real_layouts(tmp_path: Path) -> None:
    lines = (EVAL / "pages" / "truth.jsonl").read_text("utf-8").splitlines()[:6]
    truth = [json.loads(line) for line in lines]
    folder = tmp_path / "real"
    (folder / "html").mkdir(parents=True)
    (folder / "truth.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in truth), encoding="utf-8"
    )
    for row in truth:
        name = f"{row['id']}.html.gz"
        (folder / "html" / name).write_bytes((EVAL / "pages" / "html" / name).read_bytes())
    made = build_reprint_set(folder, tmp_path / "out", seed=7, per_body=1)
    assert made.usable_pages >= 4 and made.counts()["reprint"] == made.usable_pages
    bodies = {row["id"][:12]: paragraphs(row["body"]) for row in truth}
    for pair in made.pairs:
        moved = Path(pair.b_html).stem.partition("-in-")[0]
        # the longest paragraph that a wire edit cannot trim (the last two may go)
        longest = max(bodies[moved][:-2], key=len)
        assert " ".join(longest.split()) in text_of(tmp_path / "out" / pair.b_html)


def test_the_command_reports_what_it_made_and_bad_data_is_a_clear_error(
    pages: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(
        main, ["eval", "make-reprints", str(pages), str(tmp_path / "out"), "--seed", "2"]
    )
    assert result.exit_code == 0, result.output
    assert "5 of 6 pages have a usable layout; 27 pairs: 15 reprint, 12 different" in (
        result.output
    )
    (pages / "html" / "alpha.html.gz").write_bytes(b"not gzip")
    with pytest.raises(EvalDataError, match=r"alpha\.html\.gz: cannot read"):
        build_reprint_set(pages, tmp_path / "again")
    broken = CliRunner().invoke(main, ["eval", "make-reprints", str(pages), str(tmp_path / "x")])
    assert broken.exit_code == 1 and "alpha.html.gz: cannot read" in broken.output
