"""Markdown -> prose -> TLSH: prose-v2 (seed 003's line rule plus paragraph context, short
sentences, CJK word counts, furniture lines and junk pages), both sides of each threshold."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from feedmd.settings import Settings
from feedmd.stages.prose import (
    PROSE_RULE_VERSION,
    junk_verdict,
    markdown_to_prose,
    prose_line,
    prose_settings_version,
)

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


def test_rule_version_is_v2() -> None:
    assert PROSE_RULE_VERSION == "prose-v2"


def test_line_needs_twelve_words() -> None:
    assert prose_line(TWELVE, SETTINGS) == TWELVE
    assert prose_line(TWELVE.rsplit(" ", 1)[0], SETTINGS) is None


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
    # paragraph by a heading, a table or a link list
    markdown = "\n\n".join(
        [
            "By Staff Writer",
            PARA,
            "## Most read",
            "Short line after a heading",
            PARA2,
            "[Related story one](https://x/1) [Related story two](https://x/2)",
            "Another short line",
            PARA,
            "Tags: bridge, council",
        ]
    )
    assert markdown_to_prose(markdown, SETTINGS).text.splitlines() == [PARA, PARA2, PARA]


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
    assert prose_line(twenty_four[:22], SETTINGS) is None  # 11 "words", no sentence end
    assert prose_line(twenty_four[:24], SETTINGS) == twenty_four[:24]  # 12
    per_char = with_extra(prose_cjk_chars_per_word=1.0)
    assert prose_line(twenty_four[:12], per_char) == twenty_four[:12]


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


# Wall texts modelled on common consent, bot-check, paywall and error pages, as trafilatura
# gives them in Markdown.
WALLS = {
    "consent wall": [
        "We value your privacy\n\nWe and our partners use cookies to store and/or access "
        "information on a device. We and our partners use data for personalised ads and "
        "content, ad and content measurement, audience insights and product development.\n\n"
        "By clicking “Accept all”, you consent to the use of cookies. You can manage your "
        "privacy choices at any time by clicking Cookie settings at the bottom of the page."
        "\n\nAccept all\n\nReject all\n\nManage preferences",
        "Wir verwenden Cookies und ähnliche Technologien, um Inhalte und Anzeigen zu "
        "personalisieren und die Zugriffe auf unsere Website zu analysieren.\n\nMit einem "
        "Klick auf „Alle akzeptieren“ erteilen Sie Ihre Einwilligung in die Verwendung von "
        "Cookies. Sie können sie jederzeit in den Datenschutzeinstellungen widerrufen.\n\n"
        "Alle akzeptieren\n\nCookie-Einstellungen",
        "Nous utilisons des cookies pour vous offrir la meilleure expérience sur notre site, "
        "mesurer l'audience et vous proposer des publicités personnalisées.\n\nEn cliquant "
        "sur « Accepter tout », vous donnez votre consentement à l'utilisation de ces "
        "cookies. Vous pouvez gérer vos choix dans les paramètres des cookies.\n\n"
        "Accepter tout\n\nContinuer sans accepter",
        "Utilizamos cookies propias y de terceros para mejorar nuestros servicios y mostrarle "
        "publicidad relacionada con sus preferencias.\n\nSi hace clic en «Aceptar todas», "
        "otorga su consentimiento para el uso de estas cookies. Puede cambiar la "
        "configuración de cookies en cualquier momento.\n\nAceptar todas\n\nRechazar",
    ],
    "anti-bot page": [
        "Just a moment...\n\nChecking if the site connection is secure\n\nwww.example.com "
        "needs to review the security of your connection before proceeding. Please enable "
        "JavaScript and cookies to continue.\n\nVerify you are human by completing the "
        "action below.\n\nRay ID: 8a1b2c3d4e5f6789\n\nPerformance & security by Cloudflare",
        "Sind Sie ein Roboter?\n\nWir haben ungewöhnliche Aktivität in Ihrem Netzwerk "
        "festgestellt. Bitte bestätigen Sie, dass Sie kein Roboter sind, indem Sie das "
        "Captcha unten lösen.",
        "Êtes-vous un robot ?\n\nNous avons détecté une activité inhabituelle provenant de "
        "votre ordinateur. Veuillez confirmer que vous n'êtes pas un robot en résolvant le "
        "captcha ci-dessous.",
        "¿Eres un robot?\n\nHemos detectado tráfico inusual desde tu red. Para continuar, "
        "confirma que no eres un robot completando el captcha.",
    ],
    "paywall": [
        "Subscribe to continue reading\n\nThis article is for subscribers only. Get unlimited "
        "digital access to award-winning journalism for just $1 a week. Subscribe now to "
        "keep reading, cancel anytime.\n\nAlready a subscriber? Log in to continue reading.",
        "Dieser Artikel ist nur für Abonnenten verfügbar. Jetzt abonnieren und alle "
        "Plus-Artikel lesen, den ersten Monat kostenlos.\n\nBereits Abonnent? Hier anmelden "
        "und weiterlesen mit Ihrem Konto.",
        "Cet article est réservé aux abonnés. Abonnez-vous pour lire la suite et profiter de "
        "tous nos contenus en illimité.\n\nDéjà abonné ? Connectez-vous pour continuer.",
        "Este contenido es exclusivo para suscriptores. Suscríbete para seguir leyendo y "
        "accede sin límites a todas nuestras noticias.\n\n¿Ya eres suscriptor? Inicia sesión.",
    ],
    "error page": [
        "404 error: page not found\n\nSorry, the page you are looking for does not exist. It "
        "may have been moved or removed, or the address may have been typed incorrectly.",
        "Fehler 404: Seite nicht gefunden\n\nDie angeforderte Seite existiert nicht oder "
        "wurde verschoben. Bitte überprüfen Sie die Adresse.",
        "Erreur 404 : page introuvable\n\nLa page que vous recherchez n'existe pas ou a été "
        "déplacée. Vérifiez l'adresse saisie.",
        "Error 404: página no encontrada\n\nLa página que buscas no existe o ha sido "
        "trasladada. Comprueba la dirección.",
    ],
}


@pytest.mark.parametrize(
    ("kind", "markdown"),
    [(kind, markdown) for kind, texts in WALLS.items() for markdown in texts],
)
def test_junk_pages_get_no_digest(kind: str, markdown: str) -> None:
    assert junk_verdict(markdown) == kind
    # long enough to get a digest as prose, were it not junk
    padded = "\n\n".join([markdown] * 3)
    prose = markdown_to_prose(padded, SETTINGS)
    assert prose.digest is None
    assert prose.no_digest_reason == f"junk page: {kind}"


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
