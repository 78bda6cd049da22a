"""Walls in twelve languages: a realistic consent wall, anti-bot check, paywall and error page
for each of en, de, fr, es, it, pt, nl, pl, ru, ja, ko and zh, written for this project in
the wording such pages use, as trafilatura gives them in Markdown. Each must be recognised
(no digest, its kind named), and an article that mentions the same words must not be."""

from __future__ import annotations

import re

import pytest

from feedmd.settings import Settings
from feedmd.stages.prose import junk_verdict, markdown_to_prose
from feedmd.stages.walls import LANGUAGES, WALL_PHRASES, wall_kind

SETTINGS = Settings()

WALLS: dict[str, dict[str, str]] = {
    "en": {
        "consent wall": (
            "We value your privacy\n\nWe and our partners store and/or access information on a "
            "device, such as cookies, and process personal data, such as unique identifiers and "
            "standard information sent by a device.\n\nBy clicking “Accept all”, you consent to "
            "the use of cookies. You can manage your privacy choices at any time.\n\n"
            "Accept all\n\nReject all\n\nManage preferences"
        ),
        "anti-bot page": (
            "Just a moment...\n\nChecking if the site connection is secure\n\nwww.example.com "
            "needs to review the security of your connection before proceeding. Please enable "
            "JavaScript and cookies to continue.\n\nVerify you are human by completing the "
            "action below.\n\nRay ID: 8a1b2c3d4e5f6789\n\nPerformance & security by Cloudflare"
        ),
        "paywall": (
            "Subscribe to continue reading\n\nThis article is for subscribers only. Get "
            "unlimited digital access to award-winning journalism for just $1 a week. "
            "Subscribe now to keep reading, cancel anytime.\n\nAlready a subscriber? Log in to "
            "continue reading."
        ),
        "error page": (
            "404 error: page not found\n\nSorry, the page you are looking for does not exist. "
            "It may have been moved or removed, or the address may have been typed incorrectly."
        ),
    },
    "de": {
        "consent wall": (
            "Wir und unsere Partner speichern und/oder greifen auf Informationen auf einem Gerät "
            "zu, beispielsweise auf Cookies, und verarbeiten personenbezogene Daten, z. B. "
            "eindeutige Kennungen und standardmäßige Informationen.\n\nMit einem Klick auf "
            "„Alle akzeptieren“ erteilen Sie Ihre Einwilligung in die Verwendung von Cookies. "
            "Sie können sie jederzeit in den Datenschutzeinstellungen widerrufen.\n\n"
            "Alle akzeptieren\n\nCookie-Einstellungen"
        ),
        "anti-bot page": (
            "Sind Sie ein Roboter?\n\nWir haben ungewöhnliche Aktivität in Ihrem Netzwerk "
            "festgestellt. Bitte bestätigen Sie, dass Sie kein Roboter sind, indem Sie das "
            "Captcha unten lösen."
        ),
        "paywall": (
            "Dieser Artikel ist nur für Abonnenten verfügbar. Jetzt abonnieren und alle "
            "Plus-Artikel lesen, den ersten Monat kostenlos.\n\nBereits Abonnent? Hier anmelden "
            "und weiterlesen mit Ihrem Konto."
        ),
        "error page": (
            "Fehler 404: Seite nicht gefunden\n\nDie angeforderte Seite existiert nicht oder "
            "wurde verschoben. Bitte überprüfen Sie die Adresse."
        ),
    },
    "fr": {
        "consent wall": (
            "Nous et nos partenaires stockons et/ou accédons à des informations sur un appareil, "
            "telles que les cookies, et traitons des données personnelles.\n\nEn cliquant sur « "
            "Accepter tout », vous donnez votre consentement à l'utilisation de ces cookies. "
            "Vous pouvez gérer vos choix dans les paramètres des cookies.\n\nAccepter tout\n\n"
            "Continuer sans accepter"
        ),
        "anti-bot page": (
            "Êtes-vous un robot ?\n\nNous avons détecté une activité inhabituelle provenant de "
            "votre ordinateur. Veuillez confirmer que vous n'êtes pas un robot en résolvant le "
            "captcha ci-dessous."
        ),
        "paywall": (
            "Cet article est réservé aux abonnés. Abonnez-vous pour lire la suite et profiter "
            "de tous nos contenus en illimité.\n\nDéjà abonné ? Connectez-vous pour continuer."
        ),
        "error page": (
            "Erreur 404 : page introuvable\n\nLa page que vous recherchez n'existe pas ou a été "
            "déplacée. Vérifiez l'adresse saisie."
        ),
    },
    "es": {
        "consent wall": (
            "Utilizamos cookies propias y de terceros para mejorar nuestros servicios y mostrarle "
            "publicidad relacionada con sus preferencias.\n\nSi hace clic en «Aceptar todas», "
            "otorga su consentimiento para el uso de estas cookies. Puede cambiar la "
            "configuración de cookies en cualquier momento.\n\nAceptar todas\n\nRechazar"
        ),
        "anti-bot page": (
            "¿Eres un robot?\n\nHemos detectado tráfico inusual desde tu red. Para continuar, "
            "confirma que no eres un robot completando el captcha."
        ),
        "paywall": (
            "Este contenido es exclusivo para suscriptores. Suscríbete para seguir leyendo y "
            "accede sin límites a todas nuestras noticias.\n\n¿Ya eres suscriptor? Inicia sesión."
        ),
        "error page": (
            "Error 404: página no encontrada\n\nLa página que buscas no existe o ha sido "
            "trasladada. Comprueba la dirección."
        ),
    },
    "it": {
        "consent wall": (
            "Noi e i nostri partner archiviamo e/o accediamo a informazioni su un dispositivo, "
            "come i cookie, e trattiamo dati personali, come gli identificativi univoci.\n\n"
            "Cliccando su «Accetta tutti» dai il tuo consenso all'uso dei cookie. Puoi "
            "modificare le tue scelte nelle impostazioni dei cookie.\n\nAccetta tutti\n\n"
            "Rifiuta tutti\n\nGestisci le preferenze"
        ),
        "anti-bot page": (
            "Sei un robot?\n\nAbbiamo rilevato un traffico insolito proveniente dalla tua rete. "
            "Per continuare, conferma di non essere un robot: seleziona la casella «Non sono un "
            "robot»."
        ),
        "paywall": (
            "Questo articolo è riservato agli abbonati. Abbonati per continuare a leggere e "
            "accedere a tutti i contenuti del sito.\n\nSei già abbonato? Accedi per continuare "
            "a leggere."
        ),
        "error page": (
            "Errore 404: pagina non trovata\n\nLa pagina che stai cercando non esiste o è stata "
            "spostata. Controlla l'indirizzo e riprova."
        ),
    },
    "pt": {
        "consent wall": (
            "Nós e os nossos parceiros armazenamos e/ou acedemos a informações num dispositivo, "
            "tais como cookies, e processamos dados pessoais.\n\nAo clicar em «Aceitar todos», "
            "dá o seu consentimento à utilização de cookies. Pode gerir as preferências nas "
            "definições de cookies.\n\nAceitar todos\n\nRejeitar todos"
        ),
        "anti-bot page": (
            "Você é um robô?\n\nDetetámos tráfego invulgar a partir da sua rede. Para continuar, "
            "confirme que não é um robô marcando a caixa «Não sou um robô»."
        ),
        "paywall": (
            "Este artigo é exclusivo para assinantes. Assine já e tenha acesso ilimitado a todo "
            "o conteúdo.\n\nJá é assinante? Entre na sua conta para continuar a ler."
        ),
        "error page": (
            "Erro 404: página não encontrada\n\nA página que procura não existe ou foi movida. "
            "Verifique o endereço e tente novamente."
        ),
    },
    "nl": {
        "consent wall": (
            "Wij en onze partners slaan informatie op een apparaat op en/of openen deze, zoals "
            "cookies, en verwerken persoonsgegevens.\n\nDoor op ‘Alles accepteren’ te klikken "
            "geeft u uw toestemming voor het gebruik van cookies. U kunt uw keuze wijzigen via "
            "de cookie-instellingen.\n\nAlles accepteren\n\nVoorkeuren beheren"
        ),
        "anti-bot page": (
            "Bent u een robot?\n\nWe hebben ongebruikelijk verkeer vanaf uw netwerk gedetecteerd. "
            "Bevestig dat u geen robot bent om verder te gaan."
        ),
        "paywall": (
            "Dit artikel is alleen voor abonnees. Word abonnee en lees onbeperkt al onze "
            "artikelen.\n\nAl abonnee? Log in om verder te lezen."
        ),
        "error page": (
            "Fout 404: pagina niet gevonden\n\nDe pagina die u zoekt bestaat niet (meer) of is "
            "verplaatst. Controleer het adres."
        ),
    },
    "pl": {
        "consent wall": (
            "Dbamy o Twoją prywatność\n\nMy i nasi partnerzy przechowujemy informacje na "
            "urządzeniu i/lub uzyskujemy do nich dostęp, takie jak pliki cookie, oraz "
            "przetwarzamy dane osobowe.\n\nKlikając „Akceptuję wszystkie”, wyrażasz zgodę na "
            "używanie plików cookie. Możesz to zmienić w ustawieniach plików cookie.\n\n"
            "Akceptuję wszystkie\n\nUstawienia"
        ),
        "anti-bot page": (
            "Czy jesteś robotem?\n\nWykryliśmy nietypowy ruch z Twojej sieci. Zaznacz pole „Nie "
            "jestem robotem”, aby kontynuować."
        ),
        "paywall": (
            "Ten artykuł jest dostępny tylko dla prenumeratorów. Wykup dostęp, aby czytać bez "
            "ograniczeń.\n\nMasz już prenumeratę? Zaloguj się, aby czytać dalej."
        ),
        "error page": (
            "Błąd 404: nie znaleziono strony\n\nStrona, której szukasz, nie istnieje lub została "
            "przeniesiona. Sprawdź adres."
        ),
    },
    "ru": {
        "consent wall": (
            "Мы используем файлы cookie, чтобы сайт работал лучше и показывал вам подходящую "
            "рекламу.\n\nПродолжая пользоваться сайтом, вы даёте согласие на обработку "
            "персональных данных и использование файлов cookie.\n\nПринять все\n\n"
            "Настройки файлов cookie"
        ),
        "anti-bot page": (
            "Вы не робот?\n\nНам поступают необычные запросы с вашего IP-адреса. Мы обнаружили "
            "необычный трафик из вашей сети. Подтвердите, что вы не робот, чтобы продолжить."
        ),
        "paywall": (
            "Этот материал доступен только по подписке. Оформите подписку, чтобы читать все "
            "статьи без ограничений.\n\nУже есть подписка? Войдите в аккаунт."
        ),
        "error page": (
            "Ошибка 404: страница не найдена\n\nЗапрашиваемая страница не существует или была "
            "удалена. Проверьте адрес."
        ),
    },
    "ja": {
        "consent wall": (
            "当サイトではCookieを使用しています。\n\n当サイトは、お客様の利便性向上と広告配信の"
            "ためにCookieを利用しています。「すべて受け入れる」をクリックすると、Cookieの使用に"
            "同意したものとみなされます。\n\nすべて受け入れる\n\nCookie設定"
        ),
        "anti-bot page": (
            "ロボットではありませんか？\n\nお使いのネットワークから通常と異なるトラフィックが"
            "検出されました。続行するには、ロボットではありませんにチェックを入れてください。"
        ),
        "paywall": (
            "この記事は有料会員限定です。\n\n続きを読むには、有料会員登録またはログインが必要"
            "です。有料会員の方はログインして続きをお読みください。"
        ),
        "error page": (
            "ページが見つかりません\n\nお探しのページは、移動または削除された可能性があります。"
            "URLをご確認ください。"
        ),
    },
    "ko": {
        "consent wall": (
            "이 웹사이트는 쿠키를 사용합니다.\n\n당사는 서비스 개선과 맞춤형 광고를 위해 쿠키를 "
            "이용합니다. '모두 수락'을 누르면 쿠키 사용에 동의하게 됩니다. 쿠키 설정에서 언제든지 "
            "변경할 수 있습니다.\n\n모두 수락\n\n쿠키 설정"
        ),
        "anti-bot page": (
            "로봇이 아닙니다\n\n사용자의 네트워크에서 비정상적인 트래픽이 감지되었습니다. "
            "계속하려면 사람인지 확인해 주세요."
        ),
        "paywall": (
            "이 기사는 유료 회원 전용입니다.\n\n구독하고 전체 기사를 읽어보세요. 이미 구독 "
            "중이시라면 로그인 후 이용해 주세요."
        ),
        "error page": (
            "페이지를 찾을 수 없습니다\n\n요청하신 페이지가 삭제되었거나 주소가 변경되었습니다. "
            "주소를 다시 확인해 주세요."
        ),
    },
    "zh": {
        "consent wall": (
            "本网站使用cookie\n\n我们使用cookie来改善您的浏览体验并提供个性化广告。点击“接受"
            "所有”即表示您同意我们使用cookie。您可以随时在cookie设置中更改您的选择。\n\n接受所有"
            "\n\ncookie设置"
        ),
        "anti-bot page": (
            "请完成人机验证\n\n我们检测到来自您网络的异常流量。请确认您不是机器人后继续访问。"
        ),
        "paywall": (
            "本文为付费会员专享内容。\n\n订阅后继续阅读全文。已是订阅用户？请登录后继续阅读。"
        ),
        "error page": (
            "404 页面不存在\n\n抱歉，您访问的页面不存在或已被删除，请检查网址是否正确。"
        ),
    },
}

# News articles that mention cookies, robots, subscriptions or errors in passing: their
# first sentence quotes their own language's wall words, the rest is reporting.
ARTICLES: dict[str, str] = {
    "en": (
        "The regulator fined the publisher after finding that its site said we use cookies "
        "without asking first. Officials said the investigation took two years and covered "
        "more than forty news sites across the country, most of which have since changed.\n\n"
        "The company said it would appeal the decision and that readers had not been harmed."
    ),
    "de": (
        "Die Datenschutzbehörde verhängte ein Bußgeld, weil die Website mit dem Satz „Wir "
        "verwenden Cookies“ keine echte Wahl ließ. Die Prüfung dauerte zwei Jahre und umfasste "
        "mehr als vierzig Nachrichtenseiten im ganzen Land.\n\nDas Unternehmen kündigte an, "
        "gegen die Entscheidung vorzugehen, und betonte, den Lesern sei kein Schaden entstanden."
    ),
    "fr": (
        "La CNIL a infligé une amende à l'éditeur, dont le bandeau « nous utilisons des "
        "cookies » ne laissait pas de véritable choix. L'enquête a duré deux ans et a porté sur "
        "plus de quarante sites d'information.\n\nL'entreprise a annoncé qu'elle ferait appel "
        "de la décision et assuré que ses lecteurs n'avaient subi aucun préjudice."
    ),
    "es": (
        "La agencia multó al editor porque su aviso de «utilizamos cookies» no ofrecía una "
        "elección real. La investigación duró dos años y abarcó más de cuarenta sitios de "
        "noticias de todo el país.\n\nLa empresa anunció que recurrirá la decisión y aseguró "
        "que sus lectores no sufrieron ningún perjuicio."
    ),
    "it": (
        "Il Garante ha multato l'editore perché il banner «utilizziamo i cookie» non offriva "
        "una vera scelta. L'indagine è durata due anni e ha riguardato oltre quaranta siti di "
        "informazione in tutto il paese.\n\nLa società ha annunciato ricorso contro la decisione "
        "e ha assicurato che i lettori non hanno subito alcun danno."
    ),
    "pt": (
        "A autoridade multou o editor porque o aviso «utilizamos cookies» não oferecia uma "
        "escolha real. A investigação durou dois anos e abrangeu mais de quarenta sites de "
        "notícias de todo o país.\n\nA empresa anunciou que vai recorrer da decisão e garantiu "
        "que os leitores não sofreram qualquer prejuízo."
    ),
    "nl": (
        "De toezichthouder beboette de uitgever omdat de melding ‘wij gebruiken cookies’ geen "
        "echte keuze bood. Het onderzoek duurde twee jaar en besloeg meer dan veertig "
        "nieuwssites in het hele land.\n\nHet bedrijf kondigde aan in beroep te gaan en zei dat "
        "lezers geen schade hebben geleden."
    ),
    "pl": (
        "Urząd nałożył karę na wydawcę, ponieważ komunikat „używamy plików cookie” nie dawał "
        "realnego wyboru. Postępowanie trwało dwa lata i objęło ponad czterdzieści serwisów "
        "informacyjnych w całym kraju.\n\nFirma zapowiedziała odwołanie od decyzji i zapewniła, "
        "że czytelnicy nie ponieśli żadnej szkody."
    ),
    "ru": (
        "Регулятор оштрафовал издателя за то, что надпись «мы используем файлы cookie» не "
        "оставляла читателям выбора. Проверка длилась два года и охватила более сорока "
        "новостных сайтов по всей стране.\n\nКомпания заявила, что обжалует решение, и "
        "подчеркнула, что читатели не пострадали."
    ),
    "ja": (
        "個人情報保護委員会は、サイト上で「Cookieを使用しています」と表示するだけで選択肢を示さ"
        "なかったとして、出版社に改善を求めた。調査は二年にわたり、全国の四十を超えるニュース"
        "サイトが対象となった。\n\n同社は判断を不服として争う方針を示し、読者への実害はなかった"
        "と説明した。関係者によると、同様の指摘は他の大手メディアにも及ぶ見通しだという。"
    ),
    "ko": (
        "개인정보보호위원회는 웹사이트가 '쿠키를 사용합니다'라는 안내만 띄우고 선택권을 주지 "
        "않았다며 언론사에 과징금을 부과했다. 조사는 2년 동안 진행됐으며 전국 40여 개 뉴스 "
        "사이트가 대상이었다.\n\n해당 회사는 결정에 불복해 소송을 내겠다고 밝혔으며 독자들이 "
        "입은 피해는 없다고 설명했다. 업계에서는 비슷한 조치가 이어질 것으로 보고 있다."
    ),
    "zh": (
        "监管机构对这家出版商处以罚款，原因是其网站仅提示“我们使用cookie”，却没有给读者真正的"
        "选择。调查历时两年，涉及全国四十多家新闻网站。\n\n该公司表示将对决定提出申诉，并称读者"
        "没有因此受到任何损失。业内人士认为，类似的整改要求还将扩大到其他大型媒体平台。"
    ),
}

CASES = [(lang, kind, text) for lang, walls in WALLS.items() for kind, text in walls.items()]


def test_every_language_has_every_kind_of_wall_and_phrases() -> None:
    assert tuple(WALLS) == LANGUAGES and tuple(ARTICLES) == LANGUAGES
    for language, walls in WALLS.items():
        assert set(walls) == set(WALL_PHRASES), language
    for kind, phrases in WALL_PHRASES.items():
        assert set(phrases) == set(LANGUAGES), kind


@pytest.mark.parametrize(("language", "kind", "markdown"), CASES)
def test_walls_are_recognised_and_get_no_digest(language: str, kind: str, markdown: str) -> None:
    assert junk_verdict(markdown) == kind, language
    # long enough to get a digest as prose, were it not a wall
    prose = markdown_to_prose("\n\n".join([markdown] * 4), SETTINGS)
    assert prose.digest is None
    assert prose.no_digest_reason == f"junk page: {kind}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_article_that_mentions_the_wall_words_is_not_a_wall(language: str) -> None:
    # the first sentence as its own paragraph, as a lead often is
    article = re.sub(r"([.。]) ?", r"\1\n\n", ARTICLES[language], count=1)
    assert any(wall_kind(line) for line in article.splitlines()), "the test must mention them"
    assert junk_verdict(article) is None
    assert markdown_to_prose("\n\n".join([article] * 4), SETTINGS).digest is not None


def test_two_german_cookie_notices_of_one_host_do_not_fingerprint_alike() -> None:
    """The held-out miss: two notices of one host under two stories matched at TLSH 0."""
    notice = WALLS["de"]["consent wall"]
    one = markdown_to_prose(f"# Regierung plant neue Steuer\n\n{notice}", SETTINGS)
    two = markdown_to_prose(f"# Bahnstreik am Montag\n\n{notice}\n\n{notice}", SETTINGS)
    assert one.digest is None and two.digest is None
    assert one.no_digest_reason == two.no_digest_reason == "junk page: consent wall"
