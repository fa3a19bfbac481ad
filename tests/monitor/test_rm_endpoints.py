"""Where an ``rm.urls`` entry serves REST and the web UI, as the config reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from amtuner.config import ConfigError, RMEndpoint, parse_config

KNOX = "https://knox.example.com:8443/gateway/default"


@pytest.mark.parametrize(
    ("url", "rest", "web"),
    [
        ("http://rm1:8088", "http://rm1:8088/ws/v1", "http://rm1:8088"),
        ("http://rm1:8088/", "http://rm1:8088/ws/v1", "http://rm1:8088"),
        ("https://proxy/yarn", "https://proxy/yarn/ws/v1", "https://proxy/yarn"),
        ("http://rm1:8088/ws/v1", "http://rm1:8088/ws/v1", "http://rm1:8088"),
        ("http://rm1:8088/ws/v1/", "http://rm1:8088/ws/v1", "http://rm1:8088"),
        (f"{KNOX}/resourcemanager/v1", f"{KNOX}/resourcemanager/v1", None),
    ],
)
def test_endpoint_of_a_url(url: str, rest: str, web: str | None) -> None:
    assert RMEndpoint.of(url) == RMEndpoint(url.rstrip("/"), rest, web)


def config(rm: str, refresh: str = "command") -> str:
    return (
        f"scheduler: {{config_file: /etc/hadoop/conf/capacity-scheduler.xml}}\n"
        f"refresh: {{method: {refresh}}}\nrm: {rm}\n"
    )


def test_knox_form_is_accepted(tmp_path: Path) -> None:
    doc = yaml.safe_load(
        config(f"{{urls: ['{KNOX}/resourcemanager/v1'], web_ui_urls: ['{KNOX}/yarn/']}}")
    )
    cfg = parse_config(doc, base_dir=tmp_path)
    assert cfg.rm.urls == (f"{KNOX}/resourcemanager/v1",)
    assert cfg.rm.web_ui_urls == (f"{KNOX}/yarn",)
    plain = parse_config(yaml.safe_load(config("{urls: ['http://rm1:8088']}")), base_dir=tmp_path)
    assert plain.rm.urls == ("http://rm1:8088",) and plain.rm.web_ui_urls == ()


def test_rest_refresh_needs_the_rms_own_url(tmp_path: Path) -> None:
    """The scheduler-conf PUT still appends /ws/v1/... to the RM's URL: a REST base is refused
    there with the reason, not turned into a wrong URL."""
    doc = yaml.safe_load(
        config(f"{{urls: ['http://rm1:8088', '{KNOX}/resourcemanager/v1']}}", "rest")
    )
    with pytest.raises(ConfigError) as err:
        parse_config(doc, base_dir=tmp_path)
    assert [p.path for p in err.value.problems] == ["rm.urls[1]"]
    assert "names a REST base" in err.value.problems[0].reason


def test_web_ui_urls_must_be_urls(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(yaml.safe_load(config("{web_ui_urls: ['knox/yarn']}")), base_dir=tmp_path)
    assert [p.path for p in err.value.problems] == ["rm.web_ui_urls[0]"]
