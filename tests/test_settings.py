"""Settings: defaults < config file < environment < command line (gputui.settings), the messages
for a file that cannot be used, `gputui config`, and the settings reaching what they set: the
price of a GPU-hour, the health thresholds and the recording directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.clock import fake_clock_sampler

from gputui import cli
from gputui.commands.settings_from_args import settings_for
from gputui.engine.session import open_session
from gputui.settings import Settings, find_line, load_settings
from gputui.settings.init_file import default_file_text
from gputui.settings.keys import KEYMAP, KEYS

CONFIG = "gputui/config.toml"


@pytest.fixture
def config_home(tmp_path, monkeypatch) -> Path:
    """An XDG_CONFIG_HOME of this test's own; returns where its config file goes."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "xdg" / CONFIG
    path.parent.mkdir(parents=True)
    return path


def from_argv(argv: list[str]) -> Settings:
    parser = cli.build_parser()
    return settings_for(parser.parse_args(argv), parser)


# -- precedence ------------------------------------------------------------------------------------


def test_each_layer_wins_over_the_one_before(config_home, monkeypatch) -> None:
    file = str(config_home)
    assert from_argv([]) == Settings()
    assert from_argv([]).source("interval") == "default"

    config_home.write_text(
        'interval = 2\ngpu_hour_price = 1.5\ntheme = "nord"\nreadonly = true\n'
        "[health]\nxid_window_hours = 48\nexpect_gpus = 4\n"
    )
    s = from_argv([])
    assert (s.interval, s.gpu_hour_price, s.theme, s.readonly) == (2.0, 1.5, "nord", True)
    assert (s.health.xid_window_hours, s.health.expect_gpus) == (48.0, 4)
    assert {s.source(k) for k in ("interval", "gpu_hour_price", "theme", "health.expect_gpus")} == {
        file
    }
    assert s.source("record_dir") == "default"

    monkeypatch.setenv("GPUTUI_INTERVAL", "3")
    monkeypatch.setenv("GPUTUI_GPU_HOUR_PRICE", "2.25")
    monkeypatch.setenv("GPUTUI_THEME", "gruvbox")
    s = from_argv([])
    assert (s.interval, s.gpu_hour_price, s.theme) == (3.0, 2.25, "gruvbox")
    assert s.source("interval") == "env GPUTUI_INTERVAL" and s.source("readonly") == file

    s = from_argv(["--interval", "4", "--gpu-hour-price", "9", "--theme", "dracula"])
    assert (s.interval, s.gpu_hour_price, s.theme) == (4.0, 9.0, "dracula")
    assert s.source("theme") == "command line"
    assert s.health.xid_window_hours == 48.0  # the file's, where nothing later gives one
    s = from_argv(["check", "--xid-window", "6", "--expect-gpus", "8"])
    assert (s.health.xid_window_hours, s.health.expect_gpus) == (6.0, 8)
    assert s.source("health.expect_gpus") == "command line"


def test_light_is_a_light_theme_and_excludes_theme(config_home, capsys) -> None:
    config_home.write_text('theme = "nord"\n')
    assert from_argv(["--light"]).theme == "textual-light"
    with pytest.raises(SystemExit):
        from_argv(["--light", "--theme", "nord"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_config_file_named_elsewhere(tmp_path, config_home, monkeypatch, capsys) -> None:
    config_home.write_text("interval = 2\n")
    other = tmp_path / "other.toml"
    other.write_text("interval = 5\n")
    monkeypatch.setenv("GPUTUI_CONFIG", str(other))
    assert from_argv([]).interval == 5.0
    third = tmp_path / "third.toml"
    third.write_text("interval = 7\n")
    assert from_argv(["--config", str(third)]).interval == 7.0
    # a file named on purpose that is not there is said, and the defaults apply
    s = from_argv(["--config", str(tmp_path / "missing.toml")])
    assert s.interval == 1.0
    assert (
        "missing.toml (from --config) does not exist; using the defaults" in capsys.readouterr().err
    )


# -- a file that cannot be used -------------------------------------------------------------------


def test_a_syntax_error_is_one_line_naming_the_line_and_the_defaults_apply(
    config_home, capsys
) -> None:
    config_home.write_text("interval = 2\n\ngpu_hour_price 3\n")
    assert cli.main(["--demo", "snapshot", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["usage"]["gpu_hour_price"] is None  # nothing in the file is used
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"gputui: {config_home}, line 3: not TOML (")
    assert "`gpu_hour_price 3`" in lines[0] and "whole file is ignored" in lines[0]


def test_an_unknown_key_is_named_with_its_line_and_the_rest_applies(config_home, capsys) -> None:
    config_home.write_text("interval = 2\n# comment\nintervall = 3\n\n[health]\nignor = []\n")
    s = from_argv([])
    assert s.interval == 2.0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"gputui: {config_home}, line 3: unknown key intervall (did you mean interval?); ignored",
        f"gputui: {config_home}, line 6: unknown key health.ignor (did you mean health.ignore?); "
        "ignored",
    ]


def test_a_wrong_type_falls_back_to_the_default_for_that_key_only(config_home, capsys) -> None:
    config_home.write_text(
        'gpu_hour_price = 2\n[health]\nxid_window_hours = "a day"\nignore = ["ecc", 3]\n'
        'idle_memory_minutes = 30\n[keymap]\nquit = 5\n"no.such" = "x"\nhelth = "y"\n'
    )
    assert cli.main(["--demo", "snapshot", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["usage"]["gpu_hour_price"] == 2.0
    s = from_argv([])
    assert s.health.xid_window_hours == 24.0 and s.health.ignore == frozenset()
    assert s.health.idle_memory_minutes == 30.0 and s.keymap == ()
    lines = err.strip().splitlines()
    assert lines == [
        f'gputui: {config_home}, line 3: health.xid_window_hours = "a day": expected a number '
        "from 0 to 8784; using the default (24.0)",
        f'gputui: {config_home}, line 4: health.ignore = ["ecc", 3]: expected a list of rule ids '
        "(see `gputui check --list-rules`); using the default ([])",
        f'gputui: {config_home}, line 7: keymap.quit: expected keys as a string, e.g. "ctrl+q"; '
        "ignored",
        f"gputui: {config_home}, line 8: unknown key keymap.no.such; ignored",
        f"gputui: {config_home}, line 9: unknown key keymap.helth (did you mean keymap.health?); "
        "ignored",
    ]


def test_a_wrong_value_under_a_later_layer_is_ignored_not_defaulted(config_home, capsys) -> None:
    config_home.write_text("interval = 0\n")
    assert from_argv(["--interval", "2"]).interval == 2.0
    assert capsys.readouterr().err.strip() == (
        f"gputui: {config_home}, line 1: interval = 0: expected a number from 0.1 to 3600; ignored"
    )


def test_unknown_rules_are_named(config_home, capsys) -> None:
    config_home.write_text('[health]\nignore = ["ecc_uncorrected", "no_such_rule"]\n')
    assert from_argv([]).health.ignore == frozenset()
    assert "line 2: health.ignore" in capsys.readouterr().err
    config_home.write_text('[health]\nignore = ["ecc_uncorrected", "other_processes"]\n')
    assert from_argv([]).health.ignore == {"ecc_uncorrected", "other_processes"}


def test_a_bad_environment_variable_is_a_usage_error_where_it_is_used(
    config_home, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("GPUTUI_INTERVAL", "fast")
    with pytest.raises(SystemExit) as exc:
        cli.main(["--demo", "record", "x.jsonl"])
    assert exc.value.code == 2
    assert "GPUTUI_INTERVAL: 'fast' is not a number from 0.1 to 3600" in capsys.readouterr().err
    assert cli.main(["--demo", "snapshot", "--json"]) == 0  # snapshot does not use it
    assert capsys.readouterr().err == ""
    assert cli.main(["config"]) == 0
    assert "GPUTUI_INTERVAL: 'fast' is not a number" in capsys.readouterr().err
    # the command line overrides it: nothing to complain about
    assert from_argv(["--interval", "2"]).interval == 2.0
    assert capsys.readouterr().err == ""


def test_find_line_reads_tables_dotted_and_quoted_keys() -> None:
    text = (
        'interval = 1\n[health]\n  ignore = []\n[keymap]\n"replay.play" = "p"\n'
        'gpu . 3 = "f3"\n[other] # c\nhealth.ignore = 1\n'
    )
    assert find_line(text, "interval") == 1
    assert find_line(text, "health.ignore") == 3
    assert find_line(text, "keymap.replay.play") == 5
    assert find_line(text, "keymap.gpu.3") == 6
    assert find_line(text, "other.health.ignore") == 8
    assert find_line(text, "theme") is None


# -- gputui config ---------------------------------------------------------------------------------


def test_config_prints_every_setting_and_where_it_came_from(config_home, monkeypatch, capsys):
    config_home.write_text('interval = 2\n[keymap]\nquit = "x"\n')
    monkeypatch.setenv("GPUTUI_GPU_HOUR_PRICE", "1.25")
    assert cli.main(["--theme", "nord", "config"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[3:]}
    assert out.startswith(f"Config file: {config_home}\n")
    assert rows["interval"] == ["2.0", str(config_home)]
    assert rows["gpu_hour_price"] == ["1.25", "env", "GPUTUI_GPU_HOUR_PRICE"]
    assert rows["theme"] == ['"nord"', "command", "line"]
    assert rows["readonly"] == ["false", "default"]
    assert rows["health.ignore"] == ["[]", "default"]
    assert rows["keymap.quit"] == ['"x"', str(config_home)]
    assert set(rows) >= {key.name for key in KEYS}

    assert cli.main(["config", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config_file"] == str(config_home) and data["config_file_found"] is True
    assert data["settings"]["interval"] == {"value": 2.0, "source": str(config_home)}
    assert data["settings"]["gpu_hour_price"]["source"] == "env GPUTUI_GPU_HOUR_PRICE"
    assert data["settings"]["health.expect_gpus"] == {"value": None, "source": "default"}
    assert data["settings"]["keymap"] == {"value": {"quit": "x"}, "source": str(config_home)}


def test_config_init_writes_a_file_that_loads_to_the_defaults(config_home, capsys) -> None:
    assert cli.main(["config", "--init"]) == 0
    assert capsys.readouterr().out.strip() == str(config_home)
    text = config_home.read_text()
    assert text == default_file_text() and "# gpu_hour_price = 2.50" in text
    loaded = load_settings()
    assert loaded == Settings() and loaded.problems == ()
    assert loaded.source("interval") == str(config_home)  # read from the file, not defaulted
    # every setting and every keymap id is in it, the ones without a value as comments
    for key in KEYS:
        assert key.name.rpartition(".")[2] + " = " in text
    assert '# quit = "q"' in text and '# "replay.play" = "space"' in text
    # uncommenting the keymap lines as they are still loads (quoted dotted ids)
    uncommented = text.replace("# quit = ", "quit = ").replace('# "health.ack"', '"health.ack"')
    config_home.write_text(uncommented)
    assert load_settings().keymap_dict == {"quit": "q", "health.ack": "a"}

    config_home.write_text("interval = 2\n")
    assert cli.main(["config", "--init"]) == 2
    assert "exists (use --force to overwrite it)" in capsys.readouterr().err
    assert config_home.read_text() == "interval = 2\n"
    assert cli.main(["config", "--init", "--force"]) == 0
    assert config_home.read_text() == default_file_text()


def test_config_init_where_config_points(tmp_path, capsys) -> None:
    target = tmp_path / "sub" / "mine.toml"
    assert cli.main(["config", "--init", "--config", str(target)]) == 0
    assert capsys.readouterr() == (f"{target}\n", "")
    assert target.read_text() == default_file_text()


# -- what the settings set -----------------------------------------------------------------------


def test_the_price_flows_from_the_config_file_into_the_idle_cost(config_home, capsys) -> None:
    config_home.write_text("gpu_hour_price = 2.5\n")
    assert cli.main(["--demo", "snapshot", "--json"]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage["gpu_hour_price"] == 2.5 and usage["idle_gpus"] >= 1
    assert usage["idle_cost_per_hour"] == 2.5 * usage["idle_gpus"]
    # nothing was left behind for samplers made later: the price went with that session only
    sampler = fake_clock_sampler("dgx-h100", polls=2)
    assert sampler.latest is not None and sampler.latest.usage is not None
    assert sampler.latest.usage.gpu_hour_price is None
    assert sampler.latest.usage.idle_cost_per_hour is None


def test_the_health_settings_reach_the_rules(config_home, capsys) -> None:
    """The demo node runs other users' processes (``other_processes``, info): the file's
    ``health.ignore`` leaves them out of ``snapshot`` and ``check`` alike; the thresholds reach
    the monitor of a session."""
    assert cli.main(["--demo", "snapshot", "--json"]) == 0
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "other_processes" in rules
    config_home.write_text(
        '[health]\nignore = ["other_processes"]\nidle_memory_minutes = 3\nxid_window_hours = 0\n'
    )
    assert cli.main(["--demo", "snapshot", "--json"]) == 0
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "other_processes" not in rules
    cli.main(["check", "--demo", "--json"])
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "other_processes" not in rules
    with open_session("sim", settings=from_argv([])) as session:
        config = session.sampler.health.config  # type: ignore[union-attr]
    assert config.idle_memory_minutes == 3.0 and config.xid_window_hours is None
    assert config.ignore == {"other_processes"}


def test_record_puts_a_bare_name_in_the_record_dir(tmp_path, config_home, capsys) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    config_home.write_text(f"record_dir = {json.dumps(str(runs))}\n")
    quick = ["--demo", "--interval", "0.1", "--duration", "0.3"]
    assert cli.main(["record", "node.jsonl", *quick]) == 0
    assert (runs / "node.jsonl").is_file()
    assert f"to {runs / 'node.jsonl'}" in capsys.readouterr().out
    # a path with a directory is taken as given
    here = tmp_path / "here.jsonl"
    assert cli.main(["record", str(here), *quick]) == 0 and here.is_file()
    # no name: the dashboard's kind of name, in the directory
    assert cli.main(["record", *quick]) == 0
    named = [p.name for p in runs.iterdir() if p.name != "node.jsonl"]
    assert len(named) == 1 and named[0].startswith("gputui-") and named[0].endswith(".jsonl.gz")


def test_the_readme_lists_every_setting_and_keymap_id() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Configuration") :]
    section = section[: section.index("\n### ", 1)]
    for key in KEYS:
        assert f"`{key.name.rpartition('.')[2]}`" in section, key.name
    for binding in KEYMAP:
        if binding.rpartition(".")[2].isdigit():  # gpu.0 to gpu.9
            binding = binding.rpartition(".")[0] + ".0"
        assert f"`{binding}`" in section, binding
