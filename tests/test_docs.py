"""The README documents every command and every setting, with the real defaults."""

from __future__ import annotations

import re

from click.testing import CliRunner
from conftest import REPO

from feedmd.cli import main
from feedmd.settings import SETTING_FIELDS

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_first_screen_shows_the_demo_and_the_test_commands() -> None:
    first_screen = "\n".join(README.splitlines()[:40])
    assert "feedmd demo" in first_screen
    assert "pip install -e '.[test]' && python -m pytest" in first_screen


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


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "python -m pytest\n" in ci
    assert "pip install --quiet -e '.[test]'" in ci
