"""Settings: one home for every key of the YAML file, its type, its default and why.

`load_config(path)` turns YAML into these frozen dataclasses; every validation error names the key
path and the reason (``controller.t2: must be between 0 and 1, got 1.5``); unknown keys are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SchedulerKindSetting = Literal["auto", "capacity", "fair"]
RefreshMethod = Literal["command", "rest", "none"]
PolicyName = Literal["paper"]


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file, key path and reason."""


@dataclass(frozen=True, slots=True)
class RMSettings:
    urls: tuple[str, ...] = ("http://127.0.0.1:8088",)
    """Every RM of an HA pair; the active one is found through /ws/v1/cluster/info."""
    connect_timeout_seconds: float = 3.0
    read_timeout_seconds: float = 10.0
    verify: bool | str = True
    """TLS: True, or the path of the cluster's CA bundle."""
    insecure_skip_verify: bool = False
    client_cert: str | None = None
    client_key: str | None = None
    kerberos: bool = False
    """SPNEGO through the optional ``requests-gssapi`` (pip install 'amtuner[kerberos]')."""
    user_name: str | None = None
    """``?user.name=`` for RMs with simple (pseudo) authentication."""
    web_ui_fallback: bool = True


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    kind: SchedulerKindSetting = "auto"
    config_file: Path | None = None
    """fair-scheduler.xml or capacity-scheduler.xml; not needed with refresh.method rest."""
    targets: tuple[str, ...] = ()
    """Leaf queues to tune (``root.default``); empty = the scheduler-wide value."""


@dataclass(frozen=True, slots=True)
class RefreshSettings:
    method: RefreshMethod = "command"
    command: tuple[str, ...] = ("yarn", "rmadmin", "-refreshQueues")
    timeout_seconds: float = 20.0


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    policy: PolicyName = "paper"
    t1: float = 1.0
    t2: float = 0.5
    t3: float = 0.8
    step: float = 0.05
    a_min: float = 0.05
    a_max: float = 0.95
    period_seconds: float = 30.0
    unit_mb: int = 1024
    """The paper's Unit: one container's memory, for its estimate M_AMs = R x Unit x 2."""


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """What an operator expects around any automatic change (issue: daemon guard rails)."""

    max_change_per_cycle: float = 0.2
    """Largest |new A - old A| applied in one cycle; larger decisions are clipped."""
    hold_off_seconds: float = 60.0
    """No new change until the RM has reloaded the last one and this long has passed."""
    pause_file: Path | None = None
    """While this file exists amtuner keeps monitoring but writes nothing (also SIGUSR1/SIGUSR2)."""


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    enabled: bool = True
    address: str = "127.0.0.1"
    port: int = 9108


@dataclass(frozen=True, slots=True)
class Config:
    rm: RMSettings = field(default_factory=RMSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    refresh: RefreshSettings = field(default_factory=RefreshSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    guard: GuardSettings = field(default_factory=GuardSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    dry_run: bool = False
    backup_dir: Path = Path("/var/lib/amtuner/backups")
    keep_backups: int = 10
    state_file: Path = Path("/var/lib/amtuner/state.json")
    audit_log: Path | None = None
    """One line per applied change; None = the log only."""
    source: Path | None = None
    """The file this was loaded from (for messages); not a key."""


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config file; raises ConfigError naming the key and the reason."""
    raise NotImplementedError("config loading is being written")
