"""The README documents every command and every setting, with the real defaults."""

from __future__ import annotations

import re
import shlex

from click.testing import CliRunner
from conftest import REPO

from feedmd.cli.main import main
from feedmd.settings import SETTING_FIELDS

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_first_screen_shows_the_demo_and_the_test_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:40])
    assert "feedmd demo" in first_screen
    assert "\nscripts/test\n" in first_screen


def test_every_command_has_help_and_is_in_the_readme() -> None:
    runner = CliRunner()
    for name, command in main.commands.items():
        assert command.help, name
        assert f"`feedmd {name}" in README, name
        assert runner.invoke(main, [name, "--help"]).exit_code == 0


def test_every_setting_is_in_the_readme_with_its_real_default() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", README, flags=re.MULTILINE))
    for name, spec in SETTING_FIELDS.items():
        assert name in rows, name
        assert rows[name] == repr(spec.default), name


def test_ci_runs_the_readme_test_command_in_a_clone_with_nothing_beside_it() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert """grep -m1 -E '^(\\./)?scripts/test( |$)' README.md""" in ci
    assert 'bash -euo pipefail -c "$readme_test_command"' in ci
    assert "git clone" in ci and "mktemp -d" in ci
    readme_commands = [line for line in README.splitlines() if line.startswith("scripts/test")]
    assert readme_commands[0] == "scripts/test"


# Words that only mean something inside the project's history or outside the repository.
INTERNAL = re.compile(r"seed 00\d|uci-dev|sts-dev|shared/|\.\./shared|NOTES\.md", re.IGNORECASE)


# A relative path that climbs out of a doc's folder, and the team's reading folder by name.
RELATIVE_PATH = re.compile(r"(?:\.\./)+[\w.-][\w./-]*")
TEAM_FOLDER = re.compile(r"\bshared/")


def all_help_texts() -> dict[str, str]:
    """Every command's and subcommand's --help, by command path."""
    runner = CliRunner()
    texts: dict[str, str] = {}

    def walk(path: list[str], command: object) -> None:
        result = runner.invoke(main, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, path
        texts[" ".join(path) or "feedmd"] = result.output
        for name, sub in getattr(command, "commands", {}).items():
            walk([*path, name], sub)

    walk([], main)
    return texts


def test_help_texts_and_settings_speak_to_users() -> None:
    for path, text in all_help_texts().items():
        assert not INTERNAL.search(text), (path, INTERNAL.search(text))
    table = CliRunner().invoke(main, ["settings", "--markdown"]).output
    for row in table.splitlines():
        assert not INTERNAL.search(row), row


def test_the_readme_settings_table_is_the_generated_one() -> None:
    table = CliRunner().invoke(main, ["settings", "--markdown"]).output.strip()
    assert table in README


def test_docs_name_no_file_outside_the_repository() -> None:
    docs = [REPO / "README.md", REPO / "SECURITY.md", *(REPO / "docs").glob("*.md")]
    docs += [REPO / "benchmarks" / "README.md", *(REPO / "eval").glob("*.md")]
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        # every relative path that climbs a folder resolves inside the repository
        for climbing in RELATIVE_PATH.findall(text):
            target = (doc.parent / climbing).resolve()
            assert target.is_relative_to(REPO), (doc, climbing)
        # and the team's reading folder is never named
        assert not TEAM_FOLDER.search(text), doc


def test_the_outside_path_check_can_fail() -> None:
    text = "see ../../elsewhere/eval/README.md and ../docs/events.md"
    climbing = RELATIVE_PATH.findall(text)
    assert climbing == ["../../elsewhere/eval/README.md", "../docs/events.md"]
    doc = REPO / "benchmarks" / "README.md"
    inside = [(doc.parent / c).resolve().is_relative_to(REPO) for c in climbing]
    assert inside == [False, True]
    assert TEAM_FOLDER.search("data in " + "shared" + "/eval")


def test_the_deploy_guide_is_linked_and_its_commands_parse() -> None:
    assert "(docs/deploy.md)" in README
    deploy = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    for needle in ("*/5", "[Timer]", "OnUnitActiveSec", "ExecStart=", "reverse_proxy"):
        assert needle in deploy, needle
    assert "proxy_pass http://127.0.0.1:8000" in deploy and "ssl_certificate" in deploy
    commands = re.findall(
        r"venv/bin/feedmd ((?:init|run|serve|feeds|tokens|worker)[^'>\n&`]*)", deploy
    )
    assert len(commands) >= 5
    runner = CliRunner()
    for line in commands:
        args = shlex.split(line)
        result = runner.invoke(main, [*args, "--help"])
        assert result.exit_code == 0, (line, result.output)


def test_the_readme_documents_shell_completion() -> None:
    assert "_FEEDMD_COMPLETE=bash_source feedmd" in README
