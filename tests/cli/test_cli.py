"""The command line as a new user meets it: -h everywhere, short per-command help, --set
KEY=VALUE for any setting with "did you mean", on/off flags, the config file found by
default, `feedmd init`, --json and clear empty lines on the listing commands."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from feedmd.cli.main import main
from feedmd.settings.config import load_config


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run the commands in an empty folder, with no FEEDMD_* variable set."""
    for key in list(os.environ):
        if key.startswith("FEEDMD_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def invoke(*args: str, env: dict[str, str] | None = None) -> click.testing.Result:
    return CliRunner().invoke(main, list(args), env=env, prog_name="feedmd")


def all_commands() -> Iterator[tuple[list[str], click.Command]]:
    def walk(group: click.Group, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        for name, command in group.commands.items():
            yield [*path, name], command
            if isinstance(command, click.Group):
                yield from walk(command, [*path, name])

    yield from walk(main, [])


def test_dash_h_works_everywhere(here: Path) -> None:
    assert invoke("-h").exit_code == 0
    for path, _command in all_commands():
        result = invoke(*path, "-h")
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: feedmd " + " ".join(path) in result.output


def test_each_command_shows_only_the_settings_it_uses(here: Path) -> None:
    run_help = invoke("run", "--help").output
    assert len(run_help.splitlines()) < 120, len(run_help.splitlines())
    assert "--set KEY=VALUE" in run_help and "--proxy" in run_help
    assert "--jaccard-threshold" not in run_help and "--prose-min-words" not in run_help
    compare_help = invoke("compare", "--help").output
    assert "--tlsh-max-distance" in compare_help and "--dedup-scope" not in compare_help
    assert len(compare_help.splitlines()) < 100
    for path in (["eval", "pages"], ["eval", "headlines"], ["settings"], ["sweep"]):
        assert len(invoke(*path, "--help").output.splitlines()) < 100, path
    # --allow-private-addresses alone is a flag, and has its --no- form
    assert "--allow-private-addresses / --no-allow-private-addresses" in run_help


def test_run_help_lists_every_exit_code(here: Path) -> None:
    text = invoke("run", "--help").output
    for code in ("0  everything worked", "1  a configuration", "2  a usage", "3  the run", "4  "):
        assert code in text, code


def test_db_is_described_one_way_everywhere(here: Path) -> None:
    texts = set()
    for path, command in all_commands():
        for param in command.params:
            if isinstance(param, click.Option) and "--db" in param.opts:
                texts.add(param.help)
                assert param.help and "config" in param.help, path
    assert len(texts) == 1, texts


def test_set_reaches_any_setting_and_names_unknown_ones(here: Path) -> None:
    result = invoke("settings", "--json", "--set", "jaccard_threshold=0.7", "--set", "proxy=")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["jaccard_threshold"] == 0.7
    dashed = invoke("settings", "--json", "--set", "simhash-max-bits=1")
    assert json.loads(dashed.output)["simhash_max_bits"] == 1
    flag = invoke("settings", "--json", "--set", "allow_private_addresses=yes")
    assert json.loads(flag.output)["allow_private_addresses"] is True

    typo = invoke("settings", "--set", "jacard_threshold=0.7")
    assert typo.exit_code == 2
    assert "unknown setting 'jacard_threshold'; did you mean 'jaccard_threshold'?" in typo.output
    malformed = invoke("run", "--set", "jaccard_threshold")
    assert malformed.exit_code == 2 and "expected KEY=VALUE" in malformed.output
    # the command line wins over the environment
    env = {"FEEDMD_JACCARD_THRESHOLD": "0.5"}
    layered = invoke("settings", "--json", "--set", "jaccard_threshold=0.8", env=env)
    assert json.loads(layered.output)["jaccard_threshold"] == 0.8


def test_a_flag_wins_over_set(here: Path, tmp_path: Path) -> None:
    result = invoke(
        "compare", "a", "b", "--set", "similar_containment=0.2", "--similar-containment", "2"
    )
    assert "flag --similar-containment" in result.output  # the flag's value is the one used


def test_boolean_settings_are_on_off_flags(here: Path) -> None:
    on = invoke("eval", "pairs", "missing.jsonl", "--subject-gate")
    off = invoke("eval", "pairs", "missing.jsonl", "--no-subject-gate")
    # both parse (the file is missing: click says so, not "needs a value")
    assert on.exit_code == off.exit_code == 2
    assert "does not exist" in on.output and "requires an argument" not in on.output


def test_the_config_file_is_found_by_default(here: Path) -> None:
    (here / "feedmd.toml").write_text(
        '# mine\ndatabase = "other.db"\njacard_threshold = 0.7\n', encoding="utf-8"
    )
    typo = invoke("settings")
    assert typo.exit_code == 1
    assert "feedmd.toml: unknown setting 'jacard_threshold'; did you mean" in typo.output

    (here / "feedmd.toml").write_text('database = "other.db"\njaccard_threshold = 0.7\n')
    assert json.loads(invoke("settings", "--json").output)["jaccard_threshold"] == 0.7
    # explain, tokens, deliveries, migrate all use the config's database
    assert "other.db: no such database" in invoke("explain", "pope").output
    assert "other.db: no such database" in invoke("tokens", "list").output
    assert "other.db: no such database" in invoke("deliveries").output
    listed = json.loads(invoke("migrate", "--list", "--json").output)
    assert listed["database"] == "other.db"
    # run beside it: the file is read, and says what to do next
    empty = invoke("run")
    assert empty.exit_code == 1 and "feedmd.toml: no feeds configured" in empty.output
    assert "feedmd feeds add" in empty.output

    # FEEDMD_CONFIG names another file; --config wins over both
    elsewhere = here / "conf" / "prod.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text("jaccard_threshold = 0.9\n")
    env = {"FEEDMD_CONFIG": str(elsewhere)}
    assert json.loads(invoke("settings", "--json", env=env).output)["jaccard_threshold"] == 0.9
    explicit = invoke("settings", "--json", "--config", "feedmd.toml", env=env)
    assert json.loads(explicit.output)["jaccard_threshold"] == 0.7


def test_without_a_config_run_says_how_to_start(here: Path) -> None:
    result = invoke("run")
    assert result.exit_code == 1 and "feedmd init" in result.output


def test_init_writes_a_commented_starter_that_loads(here: Path) -> None:
    result = invoke("init")
    assert result.exit_code == 0, result.output
    text = (here / "feedmd.toml").read_text()
    assert text.count("\n# ") > 10 and "[[orgs]]" in text and "[output]" in text
    config = load_config(here / "feedmd.toml", environ={})
    assert config.database == "feedmd.db" and config.output.directory == "public"
    assert tomllib.loads(text)["orgs"] == [{"name": "news"}]
    (here / "feedmd.toml").write_text("# mine\n")
    again = invoke("init")
    assert again.exit_code == 1 and "exists" in again.output and "--force" in again.output
    assert (here / "feedmd.toml").read_text() == "# mine\n"
    assert invoke("init", "--force").exit_code == 0
    assert "[[orgs]]" in (here / "feedmd.toml").read_text()
    other = invoke("init", "sub/feedmd.toml")
    assert other.exit_code == 0 and (here / "sub" / "feedmd.toml").exists()


def test_empty_listings_say_so_and_have_json(here: Path) -> None:
    assert invoke("migrate").exit_code == 0  # creates feedmd.db
    tokens = invoke("tokens", "list")
    assert tokens.exit_code == 0 and tokens.output.startswith("no tokens")
    assert json.loads(invoke("tokens", "list", "--json").output) == []
    delivered = invoke("deliveries")
    assert delivered.exit_code == 0
    assert "no webhook endpoints" in delivered.output and "no deliveries" in delivered.output
    assert "no failed deliveries" in invoke("deliveries", "--status", "failed").output
    migrations = json.loads(invoke("migrate", "--list", "--json").output)["migrations"]
    assert migrations and all(m["state"] == "applied" and m["applied_at"] for m in migrations)
    assert invoke("migrate", "--json").exit_code == 2


def test_tokens_list_json_shows_tokens_never_secrets(here: Path) -> None:
    (here / "feedmd.toml").write_text(
        '[[orgs]]\nname = "o"\n[[orgs.feeds]]\nname = "a"\nurl = "http://a.example/rss"\n'
    )
    token = invoke("tokens", "create", "--org", "o", "--label", "me").output.strip()
    rows = json.loads(invoke("tokens", "list", "--json").output)
    assert [(r["id"], r["org"], r["label"], r["revoked_at"]) for r in rows] == [
        (1, "o", "me", None)
    ]
    assert token not in json.dumps(rows)


def test_shell_completion_works_as_documented(here: Path) -> None:
    result = CliRunner().invoke(
        main, [], prog_name="feedmd", env={"_FEEDMD_COMPLETE": "bash_source"}
    )
    assert result.exit_code == 0 and "_feedmd_completion" in result.output
