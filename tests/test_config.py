"""Config loading from real YAML files: every error names the key path, the reason, the line."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from amtuner.config import (
    Config,
    ConfigError,
    ControllerSettings,
    MetricsSettings,
    RecordSettings,
    RefreshSettings,
    RMSettings,
    SchedulerSettings,
    load_config,
    parse_config,
)
from amtuner.model import GLOBAL_TARGET

ROOT = Path(__file__).resolve().parents[1]

# The keys that scripts and docs rely on, exactly as the issue writes them.
ISSUE_KEYS = (
    'rm: {urls: ["http://127.0.0.1:8088"]}\n'
    "scheduler: {kind: auto, config_file: PATH, targets: [root.default]}   # targets [] = global\n"
    'refresh: {method: command, command: ["yarn", "rmadmin", "-refreshQueues"]}   # or rest\n'
    "controller: {policy: paper, t1: 1.0, t2: 0.5, t3: 0.8, step: 0.05, a_min: 0.05, "
    "a_max: 0.95, period_seconds: 30}\n"
    'metrics: {address: "127.0.0.1", port: 9108}\n'
    "dry_run: false\n"
)

MINIMAL = "scheduler: {config_file: /etc/hadoop/conf/fair-scheduler.xml}\n"


def write(tmp_path: Path, text: str, name: str = "amtuner.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    return info.value


def test_issue_keys_work_as_written(tmp_path: Path) -> None:
    scheduler_file = tmp_path / "fair-scheduler.xml"
    cfg = load_config(write(tmp_path, ISSUE_KEYS.replace("PATH", str(scheduler_file))))
    assert cfg.rm.urls == ("http://127.0.0.1:8088",)
    assert cfg.scheduler == SchedulerSettings("auto", scheduler_file, ("root.default",))
    assert cfg.refresh.method == "command"
    assert cfg.refresh.command == ("yarn", "rmadmin", "-refreshQueues")
    assert cfg.controller == ControllerSettings(
        policy="paper", t1=1.0, t2=0.5, t3=0.8, step=0.05, a_min=0.05, a_max=0.95,
        period_seconds=30.0,
    )  # fmt: skip
    assert isinstance(cfg.controller.period_seconds, float)
    assert cfg.metrics == MetricsSettings(enabled=True, address="127.0.0.1", port=9108)
    assert cfg.dry_run is False
    assert cfg.source == tmp_path / "amtuner.yaml"


def test_example_file_loads_and_equals_the_defaults_but_a_min() -> None:
    """a_min is the example's one departure: at the default 0.05 a cluster under 40 GB (the
    simulator's) cannot hold one AM, and `check` would fail the example there."""
    example = ROOT / "config.example.yaml"
    cfg = load_config(example)
    expected = Config(
        scheduler=SchedulerSettings(config_file=Path("/etc/hadoop/conf/capacity-scheduler.xml")),
        controller=ControllerSettings(a_min=0.1),
        source=example,
    )
    assert cfg == expected


def test_example_file_lists_every_key() -> None:
    """One line per setting: a key added to a dataclass but not documented fails here."""
    data = yaml.safe_load((ROOT / "config.example.yaml").read_text(encoding="utf-8"))
    top_fields = {f.name for f in dataclasses.fields(Config)} - {"source"}
    assert set(data) == top_fields
    for f in dataclasses.fields(Config):
        if dataclasses.is_dataclass(f.default_factory):  # type: ignore[misc,arg-type]
            section = f.default_factory  # type: ignore[misc]
            assert set(data[f.name]) == {g.name for g in dataclasses.fields(section)}, f.name


def test_empty_file_needs_only_the_scheduler_file(tmp_path: Path) -> None:
    err = error_of(tmp_path, "")
    assert str(err).endswith("scheduler.config_file: required key is missing")
    cfg = load_config(write(tmp_path, MINIMAL))
    assert cfg.rm == RMSettings()
    assert cfg.rm.urls == ("http://127.0.0.1:8088",)
    assert cfg.controller == ControllerSettings()
    assert cfg.refresh == RefreshSettings()


def test_empty_section_means_defaults(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, MINIMAL + "guard:\nmetrics:\n"))
    assert cfg.guard == Config().guard
    assert cfg.metrics == MetricsSettings()


def test_error_names_file_line_key_and_reason(tmp_path: Path) -> None:
    err = error_of(tmp_path, MINIMAL + "controller:\n  t1: 1.0\n  t2: abc\n")
    assert str(err) == (
        f"{tmp_path / 'amtuner.yaml'}:4: controller.t2: "
        "must be a number greater than 0 and at most 1, got 'abc'"
    )
    assert [(p.path, p.line) for p in err.problems] == [("controller.t2", 4)]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    err = error_of(tmp_path, "controller: {t2: 2, step: -1}\nmetrics: {port: 70000}\n")
    paths = [p.path for p in err.problems]
    assert paths == [
        "controller.t2", "controller.step", "metrics.port", "scheduler.config_file",
    ]  # fmt: skip
    assert len(str(err).splitlines()) == 4


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        ("controler: {}", "controler", "unknown key; did you mean 'controller'?"),
        ("controller: {amin: 0.1}", "controller.amin", "unknown key; did you mean 'a_min'?"),
        ("controller: {period: 30}", "controller.period", "did you mean 'period_seconds'?"),
        ("rm: {url: ['http://a:1']}", "rm.url", "did you mean 'urls'?"),
        ("rm: {connect_timeout_s: 1}", "rm.connect_timeout_s", "'connect_timeout_seconds'?"),
        ("zzz: 1", "zzz", "unknown key (known: rm, scheduler,"),
    ],
)
def test_unknown_keys_are_errors_with_a_suggestion(
    tmp_path: Path, text: str, path: str, reason: str
) -> None:
    err = error_of(tmp_path, MINIMAL + text + "\n")
    assert [p.path for p in err.problems] == [path]
    assert reason in err.problems[0].reason


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        ("controller: {t1: true}", "controller.t1", "got true"),
        ("controller: {t2: '0.5'}", "controller.t2", "got the string '0.5'"),
        ("controller: {t2: 0}", "controller.t2", "greater than 0 and at most 1, got 0"),
        ("controller: {t3: .nan}", "controller.t3", "got nan"),
        ("controller: {a_max: 1.5}", "controller.a_max", "at most 1, got 1.5"),
        ("controller: {a_min: -0.1}", "controller.a_min", "at least 0 and less than 1"),
        ("controller: {a_min: 0.28859}", "controller.a_min", "at most 4 decimals"),
        ("controller: {a_max: 0.99999}", "controller.a_max", "at most 4 decimals"),
        ("controller: {a_min: 0.5, a_max: 0.5}", "controller.a_min", "less than a_max (0.5)"),
        ("controller: {a_min: 0.4, a_max: 0.5, step: 0.2}", "controller.step", "at most a_max"),
        ("controller: {t3: 1.0}", "controller.t3", "case 2 can never fire"),
        ("controller: {period_seconds: 0}", "controller.period_seconds", "greater than 0"),
        ("controller: {unit_mb: 512.0}", "controller.unit_mb", "to 1048576, got 512.0"),
        (
            "controller: {policy: zhang}",
            "controller.policy",
            "one of 'paper', 'adaptive', got 'zhang'",
        ),
        ("metrics: {port: true}", "metrics.port", "integer from 0 to 65535, got true"),
        ("metrics: {port: -1}", "metrics.port", "got -1"),
        ("metrics: {address: ''}", "metrics.address", "non-empty string"),
        ("dry_run: 'no'", "dry_run", "true or false, got 'no'"),
        ("dry_run: 0", "dry_run", "true or false, got 0"),
        ("keep_backups: -1", "keep_backups", "integer from 0 to 10000"),
        ("rm: {urls: []}", "rm.urls", "non-empty list"),
        ("rm: {urls: 'http://a:1'}", "rm.urls", "must be a list of RM URLs, got 'http://a:1'"),
        ("rm: {urls: ['rm1:8088']}", "rm.urls[0]", "http:// or https:// URL"),
        ("rm: {urls: ['http://a:1', 'ftp://b']}", "rm.urls[1]", "got 'ftp://b'"),
        ("rm: {urls: ['http://a:99999']}", "rm.urls[0]", "URL"),
        ("rm: {urls: ['http://a:1', 'http://a:1/']}", "rm.urls[1]", "duplicate 'http://a:1'"),
        ("rm: {read_timeout_seconds: 0}", "rm.read_timeout_seconds", "greater than 0"),
        ("rm: {verify: 1}", "rm.verify", "CA bundle, got 1"),
        ("rm: {client_key: k.pem}", "rm.client_key", "needs rm.client_cert"),
        ("rm: {verify: ca.pem, insecure_skip_verify: true}", "rm.insecure_skip_verify", "CA"),
        ("rm: {keytab: a.keytab}", "rm.keytab", "only with rm.kerberos: true"),
        ("rm: {principal: amtuner}", "rm.principal", "only with rm.kerberos: true"),
        ("rm: {kerberos: true, principal: ''}", "rm.principal", "non-empty string"),
        ("scheduler: {config_file: x, kind: yarn}", "scheduler.kind", "'auto', 'capacity'"),
        ("scheduler: {config_file: 3}", "scheduler.config_file", "file path, got 3"),
        ("scheduler: {config_file: x, targets: root.a}", "scheduler.targets", "list of queue"),
        ("scheduler: {config_file: x, targets: [root]}", "scheduler.targets[0]", "'root.default'"),
        ("scheduler: {config_file: x, targets: [default]}", "scheduler.targets[0]", "queue path"),
        ("scheduler: {config_file: x, targets: [root..a]}", "scheduler.targets[0]", "queue path"),
        ("scheduler: {config_file: x, targets: [root.a, 7]}", "scheduler.targets[1]", "got 7"),
        ("scheduler: {config_file: x, targets: [root.a, root.a]}", "scheduler.targets[1]", "dup"),
        ("scheduler: {config_file: x, targets: [root.a@]}", "scheduler.targets[0]", "@core"),
        ("scheduler: {config_file: x, targets: ['root.a@-x']}", "scheduler.targets[0]", "@core"),
        ("scheduler: {config_file: x, targets: ['root.a@b@c']}", "scheduler.targets[0]", "got"),
        ("refresh: {method: shell}", "refresh.method", "'command', 'rest', 'none'"),
        ("refresh: {method: null}", "refresh.method", "got null"),
        ("refresh: {command: 'yarn rmadmin -refreshQueues'}", "refresh.command", "list of"),
        ("refresh: {command: []}", "refresh.command", "non-empty list"),
        ("refresh: {command: [yarn, '']}", "refresh.command[1]", "non-empty string"),
        ("refresh: {timeout_seconds: -5}", "refresh.timeout_seconds", "got -5"),
        ("guard: {max_change_per_cycle: 0}", "guard.max_change_per_cycle", "greater than 0"),
        ("guard: {hold_off_seconds: -1}", "guard.hold_off_seconds", "at least 0"),
        ("guard: [1]", "guard", "this section must be a mapping of keys, got a list"),
        ("controller: {period_seconds: 1.0e+308}", "controller.period_seconds", "at most 86400"),
        ("rm: {connect_timeout_seconds: 1.0e+12}", "rm.connect_timeout_seconds", "at most 86400"),
        ("guard: {hold_off_seconds: 90000}", "guard.hold_off_seconds", "at most 86400"),
        ("mode: manual", "mode", "'auto', 'recommend', 'approve'"),
        ("proposal_ttl_seconds: 0", "proposal_ttl_seconds", "greater than 0"),
        ("record: {trace: ''}", "record.trace", "must be a file path, got ''"),
        ("record: {trace: 3}", "record.trace", "file path, got 3"),
        ("record: {interval_seconds: 0}", "record.interval_seconds", "greater than 0"),
        ("record: {interval_seconds: '60'}", "record.interval_seconds", "the string '60'"),
        ("record: {history_wait_seconds: -1}", "record.history_wait_seconds", "at least 0"),
        ("record: {limit: 0}", "record.limit", "integer from 1 to 1000000, got 0"),
        ("record: {limit: 10.5}", "record.limit", "got 10.5"),
        ("record: {max_bytes: 0}", "record.max_bytes", "an integer >= 1, got 0"),
        ("record: {trase: apps.jsonl}", "record.trase", "did you mean 'trace'?"),
    ],
)
def test_invalid_values_name_the_key_and_the_reason(
    tmp_path: Path, text: str, path: str, reason: str
) -> None:
    doc = text if text.startswith("scheduler:") else MINIMAL + text
    err = error_of(tmp_path, doc + "\n")
    assert [p.path for p in err.problems] == [path], str(err)
    assert reason in err.problems[0].reason
    assert f": {path}: " in str(err)


def test_record_is_off_unless_a_trace_is_named(tmp_path: Path) -> None:
    """The daemon records only where ``record.trace`` names a file, relative to the config's
    directory as every path; its other keys default to `amtuner record`'s options."""
    assert load_config(write(tmp_path, MINIMAL + "record:\n")).record == RecordSettings()
    assert RecordSettings().trace is None
    text = MINIMAL + "record: {trace: traces/apps.jsonl, interval_seconds: 5, limit: 50}\n"
    cfg = load_config(write(tmp_path, text))
    assert cfg.record == RecordSettings(
        trace=tmp_path / "traces" / "apps.jsonl", interval_seconds=5.0, limit=50
    )
    assert isinstance(cfg.record.interval_seconds, float)


def test_rest_refresh_is_refused_for_the_fair_scheduler(tmp_path: Path) -> None:
    err = error_of(tmp_path, "scheduler: {kind: fair, config_file: f.xml}\nrefresh: {method: rest}")
    assert err.problems[0].path == "refresh.method"
    assert "only for the CapacityScheduler" in err.problems[0].reason
    cfg = load_config(write(tmp_path, "scheduler: {kind: capacity, config_file: c.xml}\n"
                                      "refresh: {method: rest}\n"))  # fmt: skip
    assert cfg.refresh.method == "rest"


def test_no_refresh_is_refused_for_the_capacity_scheduler(tmp_path: Path) -> None:
    """A CapacityScheduler never reloads its file by itself: 'none' would change nothing."""
    err = error_of(
        tmp_path, "scheduler: {kind: capacity, config_file: c.xml}\nrefresh: {method: none}"
    )
    assert [p.path for p in err.problems] == ["refresh.method"], str(err)
    assert "never reloads" in err.problems[0].reason
    # With kind auto the scheduler is known only once the RM answers (check and the cycle).
    cfg = load_config(write(tmp_path, "scheduler: {config_file: c.xml}\nrefresh: {method: none}"))
    assert (cfg.scheduler.kind, cfg.refresh.method) == ("auto", "none")


def test_paths_expand_home_and_resolve_against_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    conf_dir = tmp_path / "etc"
    conf_dir.mkdir()
    monkeypatch.chdir(tmp_path)  # not the config's directory: must not matter
    text = (
        "scheduler: {config_file: conf/fair-scheduler.xml}\n"
        "rm: {verify: ../ca.pem, client_cert: ~/cert.pem}\n"
        "guard: {pause_file: ~/pause}\n"
        "backup_dir: backups\nstate_file: /abs/state.json\naudit_log: logs/audit.log\n"
    )
    cfg = load_config(Path("etc") / write(conf_dir, text).name)
    assert cfg.scheduler.config_file == conf_dir / "conf" / "fair-scheduler.xml"
    assert cfg.rm.verify == str(conf_dir / ".." / "ca.pem")
    assert cfg.rm.client_cert == str(tmp_path / "home" / "cert.pem")
    assert cfg.guard.pause_file == tmp_path / "home" / "pause"
    assert cfg.backup_dir == conf_dir / "backups"
    assert cfg.state_file == Path("/abs/state.json")
    assert cfg.audit_log == conf_dir / "logs" / "audit.log"
    assert cfg.source == conf_dir / "amtuner.yaml"


def test_urls_lose_their_trailing_slash_and_keep_order(tmp_path: Path) -> None:
    cfg = load_config(
        write(tmp_path, MINIMAL + "rm: {urls: ['https://rm2:8090/', 'http://rm1:8088']}\n")
    )
    assert cfg.rm.urls == ("https://rm2:8090", "http://rm1:8088")


def test_targets_may_be_empty_or_nested_queues(tmp_path: Path) -> None:
    cfg = load_config(
        write(
            tmp_path,
            "scheduler: {config_file: x, kind: capacity, "
            "targets: [root.a.b, root.c-d_e, root.c-d_e@CORE_1]}\n",
        )
    )
    assert cfg.scheduler.targets == ("root.a.b", "root.c-d_e", "root.c-d_e@CORE_1")
    assert load_config(write(tmp_path, MINIMAL + "# c\n")).scheduler.targets == ()


def test_the_global_value_may_be_a_target_beside_leaves(tmp_path: Path) -> None:
    """'' is the scheduler-wide value: tuned beside leaves that set their own, it still covers
    the queues that set none (what `amtuner check` advises)."""
    cfg = load_config(
        write(tmp_path, "scheduler: {config_file: x, kind: fair, targets: ['', root.a]}\n")
    )
    assert cfg.scheduler.targets == (GLOBAL_TARGET, "root.a")


def test_integers_are_accepted_as_numbers_and_converted(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, MINIMAL + "controller: {t1: 1, a_min: 0}\n"))
    assert cfg.controller.t1 == 1.0
    assert isinstance(cfg.controller.t1, float)
    assert cfg.controller.a_min == 0.0


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=rf"^{missing}: cannot read the config file: No such"):
        load_config(missing)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(tmp_path)


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, MINIMAL + "controller:\n  t1: 1.0\n t2: [0.5\n")
    assert str(err).startswith(f"{tmp_path / 'amtuner.yaml'}:4:")
    assert "YAML syntax error" in str(err)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(MINIMAL.encode() + b"# caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(path)


def test_duplicate_keys_are_errors(tmp_path: Path) -> None:
    """PyYAML keeps the last of two equal keys; an operator editing the first would be ignored."""
    err = error_of(tmp_path, MINIMAL + "controller:\n  t2: 0.5\n  t2: 0.6\n")
    assert [(p.path, p.reason, p.line) for p in err.problems] == [
        ("controller.t2", "duplicate key", 4)
    ]


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    err = error_of(tmp_path, "- a\n- b\n")
    assert "the top level must be a mapping of keys, got a list" in str(err)


def test_missing_key_points_at_its_section_line(tmp_path: Path) -> None:
    err = error_of(tmp_path, "# header\nscheduler:\n  kind: fair\n")
    assert [(p.path, p.line) for p in err.problems] == [("scheduler.config_file", 2)]


def test_parse_config_uses_base_dir_and_source() -> None:
    cfg = parse_config({"scheduler": {"config_file": "fs.xml"}}, base_dir=Path("/srv/x"))
    assert cfg.scheduler.config_file == Path("/srv/x/fs.xml")
    assert cfg.source is None
    cfg = parse_config({"scheduler": {"config_file": "fs.xml"}})
    assert cfg.scheduler.config_file == Path(os.getcwd()) / "fs.xml"
    with pytest.raises(ConfigError, match=r"^<mine>: controller\.a_max: .*got 2$"):
        parse_config({"scheduler": {"config_file": "x"}, "controller": {"a_max": 2}}, "<mine>")


def test_config_is_frozen_and_dry_run_can_be_overridden() -> None:
    cfg = parse_config({"scheduler": {"config_file": "/x"}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.dry_run = True  # type: ignore[misc]
    assert cfg.with_dry_run(True).dry_run is True
    assert cfg.with_dry_run(True).with_dry_run(False) == cfg


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_rest_alone_needs_no_scheduler_file(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "scheduler: {kind: capacity}\nrefresh: {method: rest}\n"))
    assert cfg.scheduler.config_file is None and cfg.refresh.method == "rest"
    err = error_of(tmp_path, "refresh: {method: none}\n")
    assert str(err).endswith("scheduler.config_file: required key is missing")


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    """Nine lines of anchors stand for 10^9 list items; walking them would take hours."""
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    exc = error_of(tmp_path, "\n".join(lines) + "\n")
    assert "100,000 keys and items once YAML aliases are expanded" in str(exc)


def test_yaml_aliases_of_a_real_config_still_work(tmp_path: Path) -> None:
    cfg = load_config(
        write(
            tmp_path,
            "rm: {urls: &rms [http://rm1:8088, http://rm2:8088]}\n"
            "scheduler: {kind: fair, config_file: /etc/hadoop/fair-scheduler.xml}\n"
            "refresh: {method: none}\n",
        )
    )
    assert cfg.rm.urls == ("http://rm1:8088", "http://rm2:8088")


def test_a_quoted_number_is_named_as_a_string(tmp_path: Path) -> None:
    exc = error_of(
        tmp_path,
        'controller: {t2: "0.5"}\nscheduler: {config_file: /etc/hadoop/fair-scheduler.xml}\n',
    )
    assert "controller.t2" in str(exc)
    assert "got the string '0.5' (a number in quotes is text in YAML" in str(exc)
