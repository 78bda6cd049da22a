"""The words the vetoes read (feedmd/events/vetoes.py): which way a figure moved, and the
names of weekdays and months, in the languages feedmd calibrates events for.

A German newsroom writes its market wrap as "DAX schließt höher" one day and "DAX schließt
tiefer" the next; a French one "Le chômage en janvier" / "... en février". The sentence
model reads each pair as near twins, in every language, and so does a pair across languages
("Dow closes higher" / "DAX schließt tiefer"). The tables below give every form a headline
writes, matched as written (lowercased, never stemmed): a word with accents as listed, a
word written without any also as the unaccented form of a listed one ("fallt" is
"fällt"; "Fällen", "cases", is not "fallen"). (Matched through English stemming,
"surged", "declined" or "January" became "surg", "declin", "januari" and missed their
lists.)

Directions: English, German, Spanish, French, Polish and Turkish (the languages of
``event_thresholds_by_language``); verbs, adverbs and nouns that say which way a figure
moved. Left out on purpose: words that also say who won ("gains" stays, "wins" / "gewinnt"
/ "gana" / "kazandı" do not: "Bayern beat Dortmund" and "Dortmund lose to Bayern" are one
event, and Polish "traci" / "stracił", "loses", go with them), and words that are often
something else ("monte", which starts Monte Carlo; Turkish "çıktı", "went out"). German
separable verbs ("DAX legt zu" / "DAX gibt nach") are not read: their parts are common
words. An unaccented "Hoher" ("high") still reads as "höher".
Weekdays and months: the same languages and Italian, Dutch and Portuguese (months only:
its weekdays are "segunda-feira" ..., and "segunda" is also "second"). Left out, because
they are also common words or names in one of the languages (every language's words are
read in every headline): May in every language (English "may", "Mayo Clinic", Italian
"mai", "never", Polish "Maja"), March in French ("mars"), German short "mär" and
Portuguese ("março" is "marco" unaccented: Marco Rubio, Spanish "framework"), Turkish
"mart" (Wal-Mart), "kasım" (a first name) and "pazar" ("market"), Spanish "domingo"
(Santo Domingo), Polish "marca" (Spanish "brand", "scores"), and the short forms "jan",
"mar", "dez", "mon", "tue", "wed", "sat", "sun", "sept" (a first name, Spanish "sea",
Portuguese "ten", French "my", "kills", "seven", English "wed", "sat", "Sun"). Each name
maps to its day or month, so "Montag" and
"Monday" agree and "lundi" / "Friday" differ.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

from feedmd.fingerprints.headlines import strip_publisher_suffix

UP: Mapping[str, str] = {
    "en": "rise rises rising rose risen gain gains gained gaining up higher climb climbs "
    "climbed climbing jump jumps jumped jumping surge surges surged surging rally rallies "
    "rallied rallying soar soars soared soaring advance advances advanced advancing rebound "
    "rebounds rebounded rebounding increase increases increased upbeat",
    "de": "steigt steigen stieg stiegen gestiegen anstieg klettert klettern kletterte "
    "kletterten geklettert höher fester zulegen",
    "es": "sube suben subió subieron subida alza repunta repuntan repuntó avanza avanzan "
    "avanzó crece crecen creció aumenta aumentan aumentó",
    "fr": "hausse grimpe grimpent grimpé progresse progressent progressé augmente augmentent "
    "augmenté bondit bondissent rebondit rebondissent envole envolent",
    "pl": "rośnie rosną rósł rosła wzrośnie wzrósł wzrosła wzrosło wzrosły wzrost wzrosty wzrostu "
    "zyskuje zyskują zyskał zyskała zwyżka drożeje drożeją podrożał podrożała",
    "tr": "yükseldi yükseliyor yükseliş yükselişte yükselişle yükselişe arttı artıyor artış "
    "artışı artışla tırmandı",
}
DOWN: Mapping[str, str] = {
    "en": "fall falls falling fell fallen drop drops dropped dropping down lower decline "
    "declines declined declining slip slips slipped slipping slide slides slid sliding "
    "plunge plunges plunged plunging sink sinks sank sinking tumble tumbles tumbled tumbling "
    "retreat retreats retreated dip dips dipped dipping slump slumps slumped slumping "
    "decrease decreases decreased weaker",
    "de": "fällt fallen fiel fielen gefallen sinkt sinken sank sanken gesunken tiefer "
    "schwächer rutscht rutschen rutschte rutschten abgerutscht stürzt stürzen stürzte "
    "abgestürzt rückgang kursrutsch kurssturz",
    "es": "baja bajan bajó bajaron bajada cae caen cayó cayeron caída retrocede retroceden "
    "retrocedió desciende descienden descendió desploma desploman desplomó",
    "fr": "baisse baissent baissé recul recule reculent reculé chute chutent chuté plonge plongent "
    "plongé diminue diminuent diminué glisse glissent dégringole repli",
    "pl": "spada spadają spadł spadła spadło spadły spadnie spadek spadki spadku tanieje "
    "tanieją potaniał potaniała maleje maleją zmalał zniżka",
    "tr": "düştü düşüyor düşüş düşüşte düşüşle düşüşe geriledi geriliyor gerileme azaldı "
    "azalıyor çakıldı",
}

# Monday first, the days (and months below) separated by commas; every form a headline
# writes the name in (Polish "w środę", "w marcu"). "-": a name left out (see above).
WEEKDAYS: Mapping[str, str] = {
    "en": "monday, tuesday tues, wednesday, thursday thu thur thurs, friday fri, saturday, sunday",
    "de": "montag, dienstag, mittwoch, donnerstag, freitag, samstag sonnabend, sonntag",
    "es": "lunes, martes, miércoles, jueves, viernes, sábado, -",
    "fr": "lundi, mardi, mercredi, jeudi, vendredi, samedi, dimanche",
    "it": "lunedì, martedì, mercoledì, giovedì, venerdì, sabato, domenica",
    "nl": "maandag, dinsdag, woensdag, donderdag, vrijdag, zaterdag, zondag",
    "pl": "poniedziałek poniedziałku, wtorek wtorku, środa środę środy, czwartek czwartku, "
    "piątek piątku, sobota sobotę soboty, niedziela niedzielę niedzieli",
    "tr": "pazartesi, salı, çarşamba, perşembe, cuma, cumartesi, -",
}
MONTHS: Mapping[str, str] = {
    "en": "january, february feb, march, april apr, -, june jun, july jul, "
    "august aug, september sep, october oct, november nov, december dec",
    "de": "januar jänner, februar feber, märz, april, -, juni, juli, august, september, "
    "oktober okt, november, dezember",
    "es": "enero, febrero, marzo, abril, -, junio, julio, agosto, septiembre setiembre, "
    "octubre, noviembre, diciembre",
    "fr": "janvier, février, -, avril, -, juin, juillet, août, septembre, octobre, novembre, "
    "décembre",
    "it": "gennaio, febbraio, marzo, aprile, maggio, giugno, luglio, agosto, settembre, "
    "ottobre, novembre, dicembre",
    "nl": "januari, februari, maart, april, mei, juni, juli, augustus, september, oktober, "
    "november, december",
    "pl": "styczeń stycznia styczniu, luty lutego lutym, marzec marcu, "
    "kwiecień kwietnia kwietniu, maj maju, czerwiec czerwca czerwcu, lipiec lipca lipcu, "
    "sierpień sierpnia sierpniu, wrzesień września wrześniu, "
    "październik października październiku, listopad listopada listopadzie, "
    "grudzień grudnia grudniu",
    "pt": "janeiro, fevereiro, -, abril, maio, junho, julho, agosto, setembro, outubro, "
    "novembro, dezembro",
    "tr": "ocak, şubat, -, nisan, mayıs, haziran, temmuz, ağustos, eylül, ekim, -, aralık",
}
WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")

# Letters (with any combining marks) only: digits are the numbers veto's, and an apostrophe
# or a hyphen ends a word, so Turkish "Ekim'de" ("in October") reads "ekim".
_LETTERS = re.compile(r"(?:[^\W\d_]|[\u0300-\u036f])+")


def fold(word: str) -> str:
    """A word with its accents dropped: NFKD, combining marks dropped, casefolded, Turkish
    dotless "ı" and Polish "ł" read as "i" and "l" ("Fällt" -> "fallt"; "arttı" and its
    capitals "ARTTI" -> "artti"; "spadł" -> "spadl")."""
    decomposed = unicodedata.normalize("NFKD", word)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return bare.casefold().replace("ı", "i").replace("ł", "l")


def _as_written(word: str) -> str:
    """A word casefolded with its accents kept (NFC), Turkish "ı" and "İ" read as "i", as
    their capitals and lowercasing mix them: "ARTIŞ" and "artış" -> "artiş", "YÜKSELİŞ" ->
    "yükseliş"."""
    lowered = word.casefold().replace("i\u0307", "i").replace("ı", "i")
    return unicodedata.normalize("NFC", lowered)


def title_words(title: str) -> frozenset[str]:
    """The words of a headline that the tables can name, folded: a word written with
    accents only when a table has it with those accents ("Fällen", "cases", is not
    "fallen"), a word written without any as any form that folds to it (an unaccented
    "DAX fallt" is "fällt"). The ' - Publisher' suffix is left out (a "Sunday Times"
    suffix names no day)."""
    text = unicodedata.normalize("NFKC", strip_publisher_suffix(title))
    words = set()
    for word in _LETTERS.findall(text):
        written, folded = _as_written(word), fold(word)
        if written == folded or written in _WRITTEN:
            words.add(folded)
    return frozenset(words)


def _word_set(tables: Iterable[str]) -> frozenset[str]:
    return frozenset(fold(word) for table in tables for word in table.split())


def positions(table: str) -> list[list[str]]:
    """A weekday or month table's folded forms by position (Monday or January first)."""
    return [[fold(word) for word in forms.split() if word != "-"] for forms in table.split(",")]


def _indexed(tables: Iterable[str]) -> dict[str, int]:
    return {
        word: position
        for table in tables
        for position, forms in enumerate(positions(table))
        for word in forms
    }


_WRITTEN = frozenset(
    _as_written(word)
    for table in (*UP.values(), *DOWN.values(), *WEEKDAYS.values(), *MONTHS.values())
    for word in table.replace(",", " ").split()
)
UP_WORDS = _word_set(UP.values())
DOWN_WORDS = _word_set(DOWN.values())
WEEKDAY_OF = _indexed(WEEKDAYS.values())
MONTH_OF = _indexed(MONTHS.values())
