"""What readers see: titles without their own outlet's suffix, times in their zone."""

from __future__ import annotations

from datetime import UTC, date, datetime

from feedmd.delivery.reading import display_title, human_day, human_time, midnight, reader_zone


def test_only_the_items_own_publisher_is_cut_from_a_title() -> None:
    assert display_title("Pope to have surgery - Reuters", "Reuters") == "Pope to have surgery"
    assert display_title("Pope to have surgery | The  Times", "the times") == "Pope to have surgery"
    assert display_title("Pope to have surgery – BBC News", "BBC News") == "Pope to have surgery"
    # someone else's name, or no publisher known: the title stays whole
    assert display_title("Biden - The Interview", "Reuters") == "Biden - The Interview"
    assert display_title("Pope to have surgery - Reuters", "") == "Pope to have surgery - Reuters"
    # a suffix in the middle is the headline's own
    assert display_title("Reuters - the long read", "Reuters") == "Reuters - the long read"


def test_times_and_days_in_the_readers_zone() -> None:
    moment = datetime(2026, 10, 12, 19, 25, tzinfo=UTC)
    assert human_time(moment, reader_zone("Europe/Berlin")) == "Mon 12 Oct 2026, 21:25 CEST"
    assert human_time(moment, reader_zone("America/New_York")) == "Mon 12 Oct 2026, 15:25 EDT"
    assert human_day(moment, reader_zone("Asia/Tokyo")) == "Tuesday 13 October 2026"
    # the tests' local zone is UTC (conftest): empty means local
    assert human_time(moment, reader_zone("")) == "Mon 12 Oct 2026, 19:25 UTC"


def test_a_day_runs_from_midnight_to_midnight_across_a_clock_change() -> None:
    berlin = reader_zone("Europe/Berlin")
    start, end = midnight(date(2026, 10, 25), berlin), midnight(date(2026, 10, 26), berlin)
    assert start.astimezone(UTC) == datetime(2026, 10, 24, 22, tzinfo=UTC)  # CEST
    assert end.astimezone(UTC) == datetime(2026, 10, 25, 23, tzinfo=UTC)  # CET: 25 hours
    assert midnight(date(2026, 10, 25), None).astimezone(UTC) == datetime(2026, 10, 25, tzinfo=UTC)
