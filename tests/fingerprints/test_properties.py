"""Hypothesis properties: URL and headline normalisation never raise, are idempotent, and
keep apart what identifies an article; the headline matcher is symmetric."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedmd import normalize_headline, normalize_url, url_hash
from feedmd.fingerprints.headlines import Headline, match_headlines
from feedmd.fingerprints.urls import TRACKING_PARAMETERS, is_tracking_parameter
from feedmd.settings import Settings

label = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
hosts = st.builds(
    lambda parts, tld: ".".join([*parts, tld]),
    st.lists(label, min_size=1, max_size=3),
    st.sampled_from(["com", "org", "co.uk", "de"]),
)
paths = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.~%", min_size=1, max_size=12),
    max_size=4,
)
param_names = st.one_of(
    label, st.sampled_from(sorted(TRACKING_PARAMETERS)), st.builds(lambda s: "utm_" + s, label)
)
params = st.lists(
    st.tuples(param_names, st.text(alphabet="abcdefghij0123456789", max_size=6)), max_size=5
)


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    www = draw(st.sampled_from(["", "www.", "WWW."]))
    host = draw(hosts)
    path = "/".join(draw(paths))
    query = "&".join(f"{k}={v}" for k, v in draw(params))
    slash = draw(st.sampled_from(["", "/"]))
    fragment = draw(st.sampled_from(["", "#comments", "#"]))
    return f"{scheme}://{www}{host}/{path}{slash}" + (f"?{query}" if query else "") + fragment


@given(st.text())
def test_url_normalisation_never_raises_on_any_text(text: str) -> None:
    assert isinstance(normalize_url(text), str)
    assert isinstance(url_hash(text), str)


@given(urls())
def test_url_normalisation_is_idempotent(url: str) -> None:
    once = normalize_url(url)
    assert once
    assert normalize_url(once) == once


@given(
    urls(),
    label,
    st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=6),
    st.text(alphabet="klmnopqrst", min_size=1, max_size=6),
)
def test_urls_differing_in_a_non_tracking_parameter_never_normalise_alike(
    url: str, name: str, value: str, other: str
) -> None:
    if is_tracking_parameter(name):
        return
    base = url.split("#", 1)[0]
    joiner = "&" if "?" in base else "?"
    assert normalize_url(f"{base}{joiner}{name}={value}") != normalize_url(
        f"{base}{joiner}{name}={other}"
    )
    assert normalize_url(f"{base}{joiner}{name}={value}") != normalize_url(base)


@given(st.text(max_size=300))
def test_headline_normalisation_never_raises_and_is_idempotent(title: str) -> None:
    tokens = normalize_headline(title)
    assert normalize_headline(" ".join(tokens)) == tokens


vocabulary = st.sampled_from(
    [
        "pope",
        "leo",
        "surgery",
        "lung",
        "growth",
        "vatican",
        "rome",
        "hospital",
        "doctors",
        "announce",
        "plan",
        "stocks",
        "fall",
        "rise",
    ]
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(vocabulary, max_size=9),
    st.lists(vocabulary, max_size=9),
    st.sampled_from([0.5, 0.6, 0.75]),
    st.integers(0, 6),
)
def test_headline_matcher_is_symmetric(
    a: list[str], b: list[str], jaccard: float, bits: int
) -> None:
    config = dataclasses.replace(Settings(), jaccard_threshold=jaccard, simhash_max_bits=bits)
    first, second = Headline.from_tokens(tuple(a)), Headline.from_tokens(tuple(b))
    forward = match_headlines(first, second, config)
    backward = match_headlines(second, first, config)
    assert (forward is None) == (backward is None)
    if forward is not None and backward is not None:
        assert (forward.rule, forward.score) == (backward.rule, backward.score)
