"""Consent walls told by meaning: the real notices of four consent libraries (eval/walls/,
written by none of us) each read as a wall; real article pages do not; the discriminant
is the one its builder makes from the repository's data."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import (
    EVAL,
    FIXTURES,
    FeedItemSpec,
    Site,
    article_html,
    at,
    make_config,
    rss,
    story,
)

from feedmd.cli.main import main
from feedmd.model.encoder import E5Encoder
from feedmd.model.walls import ConsentWalls, load_discriminant, walls_for
from feedmd.models import Page
from feedmd.pipeline import run
from feedmd.settings import Settings
from feedmd.stages.prose import wall_verdict, walls_by_meaning
from feedmd.stages.scrape import extract_page, walls_removed
from feedmd.store import Store
from feedmd.tools.evaluation.walls import (
    TRAINING_PROJECTS,
    load_notices,
    notice_text,
)

SETTINGS = Settings()
NOTICES = load_notices(EVAL / "walls" / "notices.jsonl")
# Notices the shipped discriminant misses, with why; the last assertion of the test keeps
# the list honest (an entry the model now catches must go).
KNOWN_MISSES = {
    # a prompt to renew consent after a change, from a training library: score 1.9 < 2.0
    "klaro-it-consentNotice.changeDescription",
}
# The two walls that passed as reprints in the held-out check (issue 28), as quoted there.
QUOTED_WALLS = (
    "Wir setzen auf unserer Website Cookies und andere Technologien ein, um Ihnen den "
    "vollen Funktionsumfang unseres Angebotes anzubieten. Sie dienen zur Optimierung "
    "unserer Webseite und ermöglichen uns, Ihnen personalisierte Inhalte anzuzeigen.",
    "Um die Funktion unserer Website zu verbessern, sammeln wir technische anonymisierte "
    "Informationen über Sie. Mit der Nutzung unserer Website erklären Sie sich damit "
    "einverstanden. Bitte akzeptieren und schließen.",
)


@pytest.fixture(scope="module")
def walls() -> ConsentWalls:
    found = walls_for(SETTINGS)
    assert found is not None
    return found


@pytest.mark.parametrize("notice", NOTICES, ids=[str(n["id"]) for n in NOTICES])
def test_every_real_notice_reads_as_a_consent_wall(notice: dict, walls: ConsentWalls) -> None:
    verdict = wall_verdict([notice_text(str(notice["text"]))], SETTINGS, walls)
    if notice["id"] in KNOWN_MISSES:
        assert verdict is None, "caught now: remove it from KNOWN_MISSES"
    else:
        assert verdict == "consent wall"


def test_the_phrases_alone_miss_most_of_them() -> None:
    """Why the model: what the phrase lists catch of the libraries they never saw."""
    unseen = [n for n in NOTICES if n["project"] not in TRAINING_PROJECTS]
    caught = sum(wall_verdict([notice_text(str(n["text"]))], SETTINGS) is not None for n in unseen)
    assert len(unseen) == 173 and caught == 28  # 16%; with the model 173


def notice(notice_id: str) -> str:
    return next(notice_text(str(n["text"])) for n in NOTICES if n["id"] == notice_id)


def wall_page(wall: str) -> list[str]:
    """A page reduced to its consent notice, as the held-out ones were: the quoted text and
    the rest of a real German banner (two libraries the model never learned from)."""
    return [
        wall,
        notice("cookieman-de-group.marketing.desc"),
        notice("appnexus-cmp-de.js-summary.description"),
    ]


def run_two_articles_behind_one_wall(
    site: Site, store: Store, wall: str, **settings: object
) -> list[tuple[str, str | None]]:
    """Two different stories of two hosts whose pages are the same wall, one run."""
    first = site.put("http://eins.example/haushalt", article_html("Haushalt", wall_page(wall)))
    second = site.put("http://zwei.example/mosel", article_html("Mosel", wall_page(wall)))
    feed = site.put(
        "http://feeds.example/de.xml",
        rss(
            [
                FeedItemSpec("Stadtrat beschließt neuen Haushalt", first, at(8)),
                FeedItemSpec("Hochwasser an der Mosel: Pegel steigt weiter", second, at(9)),
            ]
        ),
    )
    run(store, make_config([("o", "de", feed)], site.start(), **settings), now=at(10))
    return [
        (row["decision"], row["no_digest_reason"])
        for row in store._db.query(
            "SELECT i.decision, b.no_digest_reason FROM items i"
            " LEFT JOIN bodies b ON b.id = i.body_id ORDER BY i.id"
        )
    ]


@pytest.mark.parametrize("wall", QUOTED_WALLS)
def test_two_articles_behind_the_quoted_german_walls_are_both_kept(
    wall: str, site: Site, store: Store
) -> None:
    rows = run_two_articles_behind_one_wall(site, store, wall)
    assert [decision for decision, _ in rows] == ["kept", "kept"]
    assert {reason for _, reason in rows} == {"junk page: consent wall"}


def test_without_the_model_the_second_article_was_a_reprint(site: Site, store: Store) -> None:
    """What the held-out check met: the wall fingerprinted, one story dropped for the other."""
    assert walls_for(dataclasses.replace(SETTINGS, wall_model=False)) is None
    rows = run_two_articles_behind_one_wall(site, store, QUOTED_WALLS[0], wall_model=False)
    assert [decision for decision, _ in rows] == ["kept", "duplicate"]


def test_a_threshold_above_the_walls_scores_lets_them_through(site: Site, store: Store) -> None:
    rows = run_two_articles_behind_one_wall(site, store, QUOTED_WALLS[0], wall_model_threshold=30.0)
    assert [decision for decision, _ in rows] == ["kept", "duplicate"]


def test_only_short_pages_are_read_for_walls(walls: ConsentWalls) -> None:
    lines = wall_page(QUOTED_WALLS[0])
    assert walls_by_meaning([lines], SETTINGS, walls) == [True]
    short = sum(len(line) for line in lines)
    capped = dataclasses.replace(SETTINGS, wall_model_max_chars=short - 1)
    assert walls_by_meaning([lines], capped, walls) == [False]
    few = dataclasses.replace(SETTINGS, wall_model_max_lines=len(lines) - 1)
    assert walls_by_meaning([lines], few, walls) == [False]


def test_a_page_is_a_wall_only_when_wall_lines_carry_the_share(walls: ConsentWalls) -> None:
    article = story("harbour", 1)[0]
    wall = QUOTED_WALLS[0]
    mixed = [wall, article]
    share = len(wall) / (len(wall) + len(article))
    above = dataclasses.replace(SETTINGS, wall_model_min_share=share - 0.01)
    below = dataclasses.replace(SETTINGS, wall_model_min_share=share + 0.01)
    assert walls_by_meaning([mixed], above, walls) == [True]
    assert walls_by_meaning([mixed], below, walls) == [False]


def test_articles_about_cookies_and_real_pages_stay_articles(walls: ConsentWalls) -> None:
    about = [
        *story("privacy", 3),
        "The regulator said that sites which say they use cookies must ask before storing "
        "them, and fined two publishers whose banners pre-ticked the consent boxes.",
        "Publishers told the court that readers accept all cookies in nine cases out of ten.",
    ]
    assert wall_verdict(about, SETTINGS, walls) is None
    truth = [json.loads(line) for line in (EVAL / "pages" / "truth.jsonl").read_text().splitlines()]
    for row in truth:
        html = gzip.decompress((EVAL / "pages" / "html" / f"{row['id']}.html.gz").read_bytes())
        base = Page(url_hash=row["id"], url=row["url"], org="o", status="failed")
        phrases = extract_page(base, html, SETTINGS)
        meaning = walls_removed([phrases], walls, SETTINGS)[0]
        assert (meaning.digest is None) == (phrases.digest is None), row["url"]


@pytest.mark.slow  # encodes the 1,728 training texts: ~30 s
def test_the_shipped_discriminant_is_the_one_the_builder_makes(tmp_path: Path) -> None:
    out = tmp_path / "walls.npz"
    args = ["eval", "build-walls", str(out), "--eval-dir", str(EVAL), "--fixtures", str(FIXTURES)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    rebuilt, shipped = load_discriminant(str(out)), load_discriminant()
    cosine = rebuilt.weights @ shipped.weights
    cosine /= np.linalg.norm(rebuilt.weights) * np.linalg.norm(shipped.weights)
    assert cosine > 0.9999 and abs(rebuilt.bias - shipped.bias) < 0.01 * abs(shipped.bias)


def test_eval_walls_reports_caught_and_missed_notices(tmp_path: Path) -> None:
    wall = next(n for n in NOTICES if n["id"] == "cookieman-de-introText")
    news = {**wall, "id": "news", "project": "none", "text": story("harbour", 1)[0]}
    path = tmp_path / "notices.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in (wall, news)))
    result = CliRunner().invoke(main, ["eval", "walls", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["notices"], report["caught"]) == (2, 1)
    assert [m["id"] for m in report["missed"]] == ["news"]
    off = CliRunner().invoke(main, ["eval", "walls", str(path), "--json", "--no-wall-model"])
    assert json.loads(off.output)["caught"] == 0  # the phrases know no cookieman text


def test_a_missing_model_leaves_the_phrases_to_decide(tmp_path: Path) -> None:
    walls = ConsentWalls(E5Encoder(str(tmp_path / "nowhere.bin")), 2.0)
    assert walls(["Wir setzen auf unserer Website Cookies ein."]) == [False]
    assert walls.missing
    assert walls(["another line"]) == [False]  # not tried again
