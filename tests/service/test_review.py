"""The review page of `feedmd serve` over HTTP: runs, clusters, trails, search, the
"Not a duplicate" and "Merge" corrections, who may make them, and the CSRF defence.

The store is the demo's (the real pipeline on the fixture news day, built once per module
and copied per test), served by a real uvicorn on a free 127.0.0.1 port (test_serve.py's
``serving``) and read with httpx, as a browser would but without one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from conftest import DemoStores, copy_of, store_dump
from loopback import serving
from starlette.routing import Route
from stores import item_id

from feedmd.delivery import overrides
from feedmd.service.review import chart, passages, queries
from feedmd.service.review.views import SIGN_IN, SIGN_OUT
from feedmd.service.server import create_app
from feedmd.store import open_store
from feedmd.store.queue import EndpointSpec
from feedmd.timeutil import utcnow

pytestmark = pytest.mark.both_backends


@pytest.fixture(scope="module")
def demo_db(demo_stores: DemoStores) -> Path:
    """The demo's database (two runs of the fixture day), one copy for the module."""
    return demo_stores.copy()


@dataclass
class Site:
    """A served copy of the demo store."""

    http: httpx.Client
    db_path: Path | str
    out: Path

    @property
    def origin(self) -> dict[str, str]:
        return {"Origin": str(self.http.base_url).rstrip("/")}

    def post(
        self, path: str, data: dict[str, str], *, follow_redirects: bool = True
    ) -> httpx.Response:
        """A form sent from the review page itself (its Origin)."""
        return self.http.post(
            path, data=data, headers=self.origin, follow_redirects=follow_redirects
        )

    def sign_in(self, org: str = "newsroom", label: str = "reviewer") -> str:
        """Create a token of ``org`` and sign in with it through the form (the cookie); the
        corrections need one, even on the demo's public orgs."""
        db = open_store(self.db_path)
        try:
            token = db.create_token(org, label, utcnow())
        finally:
            db.close()
        assert token is not None
        signed = self.post("/review/login", {"token": token}, follow_redirects=False)
        assert signed.status_code == 303
        return token

    def query(self, sql: str, *params: object) -> list[tuple[object, ...]]:
        db = open_store(self.db_path)
        try:
            return db._conn.execute(sql, params).fetchall()
        finally:
            db.close()


@pytest.fixture
def site(
    demo_db: Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Site]:
    db_path = copy_of(request, backend, demo_db, tmp_path / "feedmd.db")
    db = open_store(db_path)  # applies 0008 if the demo store predates it
    db.add_endpoint(
        EndpointSpec("http://127.0.0.1:9/hook", "org", "newsroom", "HOOK_SECRET"), utcnow()
    )
    db.close()
    out = tmp_path / "out"
    output = overrides.FileOutput(str(out), "http://feeds.test", 100)
    with serving(create_app(db_path, output=output)) as http:
        yield Site(http, db_path, out)


def kept_in_feed(site: Site, feed: str) -> dict[int, dict[str, object]]:
    document = site.http.get(f"/feeds/{feed}.json").json()
    return {item["_feedmd"]["canonical_item_id"]: item for item in document["items"]}


# ---- pages ---------------------------------------------------------------------------------


def test_runs_page_shows_counts_timings_and_chart(site: Site) -> None:
    page = site.http.get("/review")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    html = page.text
    assert 'href="/review/runs/1"' in html and 'href="/review/runs/2"' in html
    assert "cjk 1, jaccard 2, url 1" in html and "tlsh 3" in html
    assert "scrape " in html and "deliver " in html
    assert '<svg class="chart"' in html and "38 kept, 8 dropped as duplicates" in html
    assert site.http.get("/review/review.css").headers["content-type"].startswith("text/css")
    assert '/review">Review</a>' in site.http.get("/").text


def test_run_page_groups_items_into_clusters(site: Site) -> None:
    site.sign_in()
    canonical = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    page = site.http.get("/review/runs/1")
    assert page.status_code == 200
    html = page.text
    cluster = html[html.index(f'id="cluster-{canonical}"') :]
    cluster = cluster[: cluster.index("</details>")]
    assert f"/review/items/{copy}/not-duplicate" in cluster
    assert "merged by jaccard" in cluster and "KXLT 7 News" in cluster
    assert "Failed (2)" in html
    # run 2's one duplicate points at a canonical stored by run 1
    assert "canonical from run 1" in site.http.get("/review/runs/2").text
    assert site.http.get("/review/runs/99").status_code == 404


def test_clusters_put_every_duplicate_under_its_kept_item() -> None:
    def row(id_: int, decision: str, matched: int | None = None) -> queries.ItemRow:
        return queries.ItemRow(
            id_, 2, "f", "o", f"t{id_}", "p", "u", f"2026-10-12T0{id_}:00:00Z", "stage1",
            decision, "jaccard" if matched else None, None, None, matched,
        )  # fmt: skip

    earlier = row(1, "kept")
    items = [row(2, "kept"), row(3, "duplicate", 2), row(4, "duplicate", 1), row(5, "failed")]
    groups = queries.clusters(items, [earlier])
    assert [(c.canonical.id, [m.id for m in c.members]) for c in groups] == [
        (1, [4]),
        (2, [3]),
    ]


def test_item_page_shows_the_trail_evidence_window_and_scope(site: Site) -> None:
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    html = site.http.get(f"/review/items/{copy}").text
    assert "by rule <strong>jaccard</strong>" in html
    assert "score 1 against threshold 0.6" in html
    assert "48 h, scope org" in html
    assert "shared headline words" in html and "subject gate" in html
    assert ">Not a duplicate</button>" not in html  # reading is public, correcting is not
    assert "correcting them needs one of its tokens" in html
    site.sign_in()
    assert ">Not a duplicate</button>" in site.http.get(f"/review/items/{copy}").text
    assert site.http.get("/review/items/999999").status_code == 404


def test_clusters_are_open_and_a_canonical_shows_its_own_verdict(site: Site) -> None:
    pope = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    html = site.http.get("/review/runs/1").text
    assert html.count('<details class="cluster"') == html.count('" open>') >= 4
    cluster = html[html.index(f'id="cluster-{pope}" open>') :]
    cluster = cluster[: cluster.index("</details>")]
    row = cluster[cluster.index("<td>canonical</td>") :]
    row = row[: row.index("</tr>")]
    # its own verdict: kept, no rule or score that reads as a drop
    assert "<td>kept</td>" in row and '<td class="num">–</td>' in row
    assert "similar-tlsh" not in row.split('class="annotation"')[0].split("</a>")[-1]
    # the similarity apart, as a note
    note = row[row.index('class="annotation"') :]
    assert "possible duplicate of" in note and "similar-tlsh 95" in note and "kept" in note
    item = site.http.get(f"/review/items/{pope}").text
    assert '<span class="decision kept">kept</span>' in item
    assert "<dt>Note</dt>" in item and "marked at threshold 100" in item


def test_a_stage_2_merge_shows_both_bodies_and_evidence_in_words(site: Site) -> None:
    reprint = item_id(site.db_path, "ByteLedger", "Amazon eyes Decart")
    canonical = item_id(site.db_path, "Continental Press", "Amazon in talks to acquire")
    html = site.http.get(f"/review/items/{reprint}").text
    bodies = html[html.index('<div class="pair bodies"') :]
    bodies = bodies[: bodies.index("</section>")]
    mine, theirs = bodies.split(f"<h4>Item {canonical} ")
    assert "<h4>This item" in mine and "<mark>" in mine and "<mark>" in theirs
    assert "Amazon.com is in advanced talks to acquire Decart" in mine
    assert "% of this body" in html
    evidence = html[html.index('<dl class="facts evidence">') :]
    evidence = evidence[: evidence.index("</dl>")]
    assert f'<dd><a href="/review/items/{canonical}">item {canonical}</a></dd>' in evidence
    assert "<dd>an earlier item of the same run</dd>" in evidence
    assert "reprint: the same body, so dropped" in evidence
    assert "item_id" not in evidence and "{" not in evidence and "where" not in evidence
    # a stage-1 merge has no scraped copy: no bodies section
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    assert '<div class="pair bodies"' not in site.http.get(f"/review/items/{copy}").text


def test_shared_passages_are_marked_on_both_sides() -> None:
    common = "the harbour council approved a new ferry terminal budget on tuesday night"
    first = f"An opening line of its own. {common}. A closing remark nobody else made."
    second = f"A different start entirely here. {common}, officials said."
    mine, theirs = passages.side_by_side(first, second)
    marked = [text.strip() for text, shared in mine.segments if shared]
    assert marked == [common + "."]
    assert [t.strip() for t, s in theirs.segments if s] == [common + ","]
    assert "".join(t for t, _ in mine.segments) == first
    assert 0 < mine.shared_share < 1 and not mine.cut_before and not mine.cut_after
    none, _ = passages.side_by_side("one two three four five six", "seven eight nine ten")
    assert none.shared_words == 0 and none.segments == (("one two three four five six", False),)


def test_search_by_url_title_and_publisher(site: Site) -> None:
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    (url,) = site.query("SELECT url_raw FROM items WHERE id = ?", copy)[0]
    for query in ("KXLT", "lung nodule", str(url)):
        html = site.http.get("/review/search", params={"q": query}).text
        assert f'href="/review/items/{copy}"' in html, query
    assert "No item you may see" in site.http.get("/review/search?q=zzzqqq").text


# ---- corrections ---------------------------------------------------------------------------


def test_not_a_duplicate_restores_the_item_everywhere(site: Site) -> None:
    site.sign_in()
    canonical = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    assert copy not in kept_in_feed(site, "pope-leo")

    answer = site.post(
        f"/review/items/{copy}/not-duplicate", {"next": "/review/runs/1"}, follow_redirects=False
    )
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/review/runs/1?notice=restored")
    assert "is back in its feed" in site.http.get(answer.headers["location"]).text

    feed = kept_in_feed(site, "pope-leo")
    assert copy in feed
    also = [d["publisher"] for d in feed[canonical]["_feedmd"]["also_published_by"]]
    assert "KXLT 7 News" not in also
    written = json.loads((site.out / "pope-leo.json").read_text())
    assert copy in [item["_feedmd"]["canonical_item_id"] for item in written["items"]]
    assert site.query("SELECT decision, rule, matched_item_id FROM items WHERE id = ?", copy) == [
        ("kept", "override", None)
    ]
    ((kind, who, previous),) = site.query(
        "SELECT kind, created_by, previous_json FROM overrides WHERE item_id = ?", copy
    )
    assert (kind, who) == ("not_duplicate", "reviewer")
    assert json.loads(str(previous))["rule"] == "jaccard"
    assert site.query(
        "SELECT status FROM deliveries WHERE item_id = ? AND endpoint_id IS NOT NULL", copy
    ) == [("pending",)]

    db = open_store(site.db_path)
    pairs = overrides.never_merge_pairs(db)
    db.close()
    (feed_a, entry_a), (feed_b, entry_b) = (
        site.query(
            "SELECT f.name, i.entry_id FROM items i JOIN feeds f ON f.id = i.feed_id"
            " WHERE i.id = ?",
            id_,
        )[0]
        for id_ in (copy, canonical)
    )
    key_copy = overrides.entry_key(str(feed_a), str(entry_a))
    key_canonical = overrides.entry_key(str(feed_b), str(entry_b))
    assert pairs == {(key_copy, key_canonical), (key_canonical, key_copy)}

    trail = site.http.get(f"/review/items/{copy}").text
    assert "Overrides" in trail and "is not a duplicate of item" in trail and "reviewer" in trail
    again = site.post(f"/review/items/{copy}/not-duplicate", {})
    assert again.status_code == 409


def test_merge_marks_a_missed_duplicate(site: Site) -> None:
    site.sign_in()
    canonical = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    missed = item_id(site.db_path, "Metro News", "What we know about the Pope")
    form = site.http.get(f"/review/items/{missed}", params={"q": "lung nodule"}).text
    assert f'value="{canonical}"' in form and "Merge into the selected item" in form

    # choosing a duplicate merges into its kept item: duplicates never point at duplicates
    answer = site.post(
        f"/review/items/{missed}/merge", {"canonical": str(copy)}, follow_redirects=False
    )
    assert answer.status_code == 303 and "notice=merged" in answer.headers["location"]
    assert site.query("SELECT decision, rule, matched_item_id FROM items WHERE id = ?", missed) == [
        ("duplicate", "override", canonical)
    ]
    feed = kept_in_feed(site, "pope-leo")
    assert missed not in feed
    also = [d["publisher"] for d in feed[canonical]["_feedmd"]["also_published_by"]]
    assert "Metro News" in also

    db = open_store(site.db_path)
    merges = overrides.forced_merges(db)
    db.close()
    assert len(merges) == 1
    ((missed_key, canonical_key),) = merges.items()
    assert missed_key.startswith("pope-leo\x1f") and canonical_key.startswith("pope-leo\x1f")


def test_the_newest_override_of_a_pair_wins(site: Site) -> None:
    site.sign_in()
    canonical = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    assert site.post(f"/review/items/{copy}/not-duplicate", {}).status_code == 200
    assert site.post(f"/review/items/{copy}/merge", {"canonical": str(canonical)}).is_success
    db = open_store(site.db_path)
    try:
        assert overrides.never_merge_pairs(db) == set()
        assert len(overrides.forced_merges(db)) == 1
    finally:
        db.close()


def test_retry_makes_a_failed_item_due_like_feedmd_retry(site: Site) -> None:
    ((failed,),) = site.query("SELECT id FROM items WHERE decision = 'failed' ORDER BY id LIMIT 1")
    site.query(
        "UPDATE item_retries SET next_attempt_at = NULL, given_up = 'test' WHERE item_id = ?",
        failed,
    )
    anonymous = site.http.get(f"/review/items/{failed}").text
    assert ">Retry</button>" not in anonymous and "needs one of org newsroom" in anonymous
    site.sign_in()
    html = site.http.get(f"/review/items/{failed}").text
    assert f'action="/review/items/{failed}/retry"' in html and ">Retry</button>" in html
    answer = site.post(f"/review/items/{failed}/retry", {}, follow_redirects=False)
    assert answer.status_code == 303 and "notice=retry" in answer.headers["location"]
    assert "the next run fetches its page again" in site.http.get(answer.headers["location"]).text
    ((next_attempt, given_up),) = site.query(
        "SELECT next_attempt_at, given_up FROM item_retries WHERE item_id = ?", failed
    )
    assert next_attempt is not None and given_up is None
    kept = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    assert site.post(f"/review/items/{kept}/retry", {}).status_code == 409
    assert site.post("/review/items/999999/retry", {}).status_code == 404
    evil = site.http.post(
        f"/review/items/{failed}/retry", headers={"Origin": "http://evil.example"}
    )
    assert evil.status_code == 403


def test_bad_corrections_are_refused(site: Site) -> None:
    site.sign_in()
    kept = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    assert site.post(f"/review/items/{kept}/not-duplicate", {}).status_code == 409
    assert site.post(f"/review/items/{kept}/merge", {}).status_code == 400
    assert site.post(f"/review/items/{kept}/merge", {"canonical": str(kept)}).status_code == 409
    assert site.post("/review/items/999999/not-duplicate", {}).status_code == 404
    assert site.query("SELECT COUNT(*) FROM overrides") == [(0,)]


def test_cross_site_forms_are_refused(site: Site) -> None:
    site.sign_in()
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    path = f"/review/items/{copy}/not-duplicate"
    evil = site.http.post(path, data={}, headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403
    assert site.http.post(path, data={}).status_code == 403  # neither Origin nor Referer
    assert site.http.post(path, content=b"{}", headers=site.origin).status_code == 400
    assert site.query("SELECT decision FROM items WHERE id = ?", copy) == [("duplicate",)]
    referer = {"Referer": f"{site.origin['Origin']}/review/items/{copy}"}
    answer = site.http.post(
        path, data={"next": "//evil.example/x"}, headers=referer, follow_redirects=True
    )
    assert answer.status_code == 200
    assert answer.url.path == f"/review/items/{copy}"  # never redirected off the site


def test_a_private_org_needs_its_token(site: Site) -> None:
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    db = open_store(site.db_path)
    db.set_public({name: False for name in ("pope-leo", "markets", "metro")})
    token = db.create_token("newsroom", "alice", utcnow())
    stale = db.create_token("newsroom", "bob", utcnow())
    db.close()
    assert token and stale

    assert site.http.get("/review", follow_redirects=False).headers["location"] == "/review/login"
    assert site.http.get(f"/review/items/{copy}").status_code == 401
    run = site.http.get("/review/runs/1")  # issue 14: its counts were shown to anyone
    assert run.status_code == 401 and "new items" not in run.text
    with_token = site.http.get("/review/runs/1", headers={"Authorization": f"Bearer {token}"})
    assert with_token.status_code == 200 and "new items" in with_token.text
    assert site.post(f"/review/items/{copy}/not-duplicate", {}).status_code == 401
    assert (
        site.http.post(
            "/review/login", data={"token": "fmd_wrong"}, headers=site.origin
        ).status_code
        == 401
    )

    # a script: the Authorization header (no Origin needed: browsers never attach one)
    bearer = site.http.post(
        f"/review/items/{copy}/not-duplicate",
        headers={"Authorization": f"Bearer {token}"},
        data={},
        follow_redirects=False,
    )
    assert bearer.status_code == 303
    assert site.query("SELECT created_by FROM overrides") == [("alice",)]

    # a person: the sign-in form sets an HttpOnly, SameSite=Strict cookie for /review only
    signed = site.post("/review/login", {"token": stale, "next": "/review"}, follow_redirects=False)
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/review" in cookie
    assert "Signed in to <strong>newsroom</strong> as bob" in site.http.get("/review").text
    db = open_store(site.db_path)
    (stale_id,) = [row[0] for row in db.list_tokens() if row[2] == "bob"]
    db.revoke_token(stale_id, utcnow())
    db.close()
    assert site.http.get(f"/review/items/{copy}").status_code == 401  # revoked: signed out
    out = site.post("/review/logout", {}, follow_redirects=False)
    assert out.status_code == 303 and 'feedmd_review_token=""' in out.headers["set-cookie"]


def test_a_basic_authorization_header_does_not_skip_the_origin_check(site: Site) -> None:
    """Issue 14: any Authorization header skipped the same-origin check, and with a Basic
    one (a browser attaches cached Basic credentials to a forged form by itself) the
    credential was then the sign-in cookie: a foreign page could apply corrections."""
    site.sign_in()
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    path = f"/review/items/{copy}/not-duplicate"
    basic = {"Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()}
    forged = site.http.post(path, data={}, headers={**basic, "Origin": "http://evil.example"})
    assert forged.status_code == 403
    assert site.http.post(path, data={}, headers=basic).status_code == 403  # no Origin
    odd = {"Authorization": "Token abc", "Origin": "http://evil.example"}
    assert site.http.post(path, data={}, headers=odd).status_code == 403
    assert site.query("SELECT COUNT(*) FROM overrides") == [(0,)]
    # the review page itself behind a Basic-auth proxy still works (same origin, cookie)
    same = site.http.post(path, data={}, headers={**basic, **site.origin}, follow_redirects=False)
    assert same.status_code == 303
    assert site.query("SELECT created_by FROM overrides") == [("reviewer",)]


def test_corrections_on_a_public_org_need_a_token_of_it(site: Site) -> None:
    """Issue 14: on a public org anyone could apply corrections. Reading stays public."""
    copy = item_id(site.db_path, "KXLT 7 News", "Pope Leo will have surgery")
    path = f"/review/items/{copy}/not-duplicate"
    assert site.http.get(f"/review/items/{copy}").status_code == 200  # public: readable
    anonymous = site.post(path, {}, follow_redirects=False)
    assert anonymous.status_code == 401
    assert "need one of its tokens" in anonymous.text
    merge = site.post(f"/review/items/{copy}/merge", {"canonical": "1"}, follow_redirects=False)
    assert merge.status_code == 401
    wrong = site.http.post(
        path, data={}, headers={"Authorization": "Bearer fmd_not_a_token"}, follow_redirects=False
    )
    assert wrong.status_code == 401
    db = open_store(site.db_path)
    with db._conn:
        db._conn.execute("INSERT INTO orgs (name, created_at) VALUES ('elsewhere', '2026-10-12')")
    other = db.create_token("elsewhere", "mallory", utcnow())
    db.close()
    foreign = site.http.post(
        path, data={}, headers={"Authorization": f"Bearer {other}"}, follow_redirects=False
    )
    assert foreign.status_code == 403 and "Your token is for org elsewhere" in foreign.text
    assert site.query("SELECT COUNT(*) FROM overrides") == [(0,)]
    token = site.sign_in()
    answer = site.http.post(
        path, data={}, headers={"Authorization": f"Bearer {token}"}, follow_redirects=False
    )
    assert answer.status_code == 303
    assert site.query("SELECT created_by FROM overrides") == [("reviewer",)]


HUGE = "9" * 20  # past SQLite's 64-bit integers: the driver raised OverflowError (500)


def test_out_of_range_ids_are_answered_400_or_404_never_500(site: Site) -> None:
    site.sign_in()
    kept = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    for path in (f"/review/runs/{HUGE}", f"/review/items/{HUGE}", f"/review/runs/{2**63}"):
        assert site.http.get(path).status_code == 404, path
    for query in (HUGE, "²", "-1", str(2**63 - 1)):
        assert site.http.get("/review/search", params={"q": query}).status_code == 200, query
    assert site.post(f"/review/items/{HUGE}/not-duplicate", {}).status_code == 404
    assert site.post(f"/review/items/{HUGE}/merge", {"canonical": "1"}).status_code == 404
    for canonical in (HUGE, "²"):
        answer = site.post(f"/review/items/{kept}/merge", {"canonical": canonical})
        assert answer.status_code == 400, canonical
    assert site.http.get("/review?notice=merged&item=" + HUGE).status_code == 200
    assert site.query("SELECT COUNT(*) FROM overrides") == [(0,)]


def post_routes(app: object) -> list[str]:
    """The path of every POST route of ``app``, read from its router."""
    return sorted(
        route.path
        for route in app.routes
        if isinstance(route, Route) and "POST" in (route.methods or ())
    )


def test_every_post_route_needs_a_token_of_the_items_own_org(site: Site) -> None:
    """Issue 30: "Retry" on a public org's failed item answered 303 to anyone, and to a
    token of another org. Every state-changing route, taken from the router so that a new
    one cannot be left out: no token 401, another org's token 403 (404 on a private org:
    its items are not even shown), a huge id 404, and nothing changes; the org's own token
    gets through to the correction."""
    paths = post_routes(create_app(site.db_path))
    changing = [path for path in paths if path not in (SIGN_IN, SIGN_OUT)]
    assert {SIGN_IN, SIGN_OUT} <= set(paths)
    assert {path.rsplit("/", 1)[1] for path in changing} >= {
        "retry",
        "not-duplicate",
        "merge",
        "not-same-event",
    }
    assert all(path.startswith("/review/items/{item_id:int}/") for path in changing)
    ((failed,),) = site.query("SELECT id FROM items WHERE decision = 'failed' ORDER BY id LIMIT 1")
    site.query(
        "UPDATE item_retries SET next_attempt_at = NULL, given_up = 'test' WHERE item_id = ?",
        failed,
    )
    kept = item_id(site.db_path, "Continental Press", "Pope Leo will have surgery")
    db = open_store(site.db_path)
    with db._conn:
        db._conn.execute("INSERT INTO orgs (name, created_at) VALUES ('elsewhere', '2026-10-12')")
    other = db.create_token("elsewhere", "mallory", utcnow())
    own = db.create_token("newsroom", "reviewer", utcnow())
    before = store_dump(db)
    db.close()
    form = {"canonical": str(kept)}

    def bearer(token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else site.origin

    def send(template: str, item: object, token: str | None) -> httpx.Response:
        path = template.replace("{item_id:int}", str(item))
        return site.http.post(path, data=form, headers=bearer(token), follow_redirects=False)

    for template in changing:
        assert send(template, failed, None).status_code == 401, template
        assert send(template, failed, other).status_code == 403, template
        assert send(template, HUGE, own).status_code == 404, template
        assert send(template, 2**63, own).status_code == 404, template
    db = open_store(site.db_path)
    assert store_dump(db) == before
    db.set_public({name: False for name in ("pope-leo", "markets", "metro")})
    before = store_dump(db)
    db.close()
    for template in changing:
        assert send(template, failed, None).status_code == 401, template
        assert send(template, failed, other).status_code == 404, template
    db = open_store(site.db_path)
    assert store_dump(db) == before
    db.close()
    for template in changing:  # the org's own token reaches the correction itself
        assert send(template, failed, own).status_code in (303, 400, 409), template
    ((next_attempt, given_up),) = site.query(
        "SELECT next_attempt_at, given_up FROM item_retries WHERE item_id = ?", failed
    )
    assert next_attempt is not None and given_up is None


# ---- the chart -----------------------------------------------------------------------------


def test_chart_is_labelled_svg_with_one_bar_pair_per_run() -> None:
    points = [chart.Point(1, "2026-10-12T20:00:00Z", 38, 7), chart.Point(2, "<b>", 0, 1)]
    svg = chart.kept_dropped_svg(points)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'role="img"' in svg and "38 kept, 8 dropped" in svg
    assert svg.count('class="bar-kept"') == 2 and svg.count('class="bar-dropped"') == 2
    assert "<b>" not in svg and "&lt;b&gt;" in svg
    assert "style=" not in svg  # the page's CSP allows no inline styles
    assert "No runs yet" in chart.kept_dropped_svg([])
    assert [chart._nice_max(v) for v in (0, 1, 3, 38, 120)] == [1, 1, 5, 50, 200]
