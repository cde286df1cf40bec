"""Reading settings from the environment: typed readers that fail loudly on a malformed
value (healthchecks' `envbool` idea): a typo in a limit must stop the process at start, not
crawl with a silently different policy."""

import os
from pathlib import Path

from common.netpolicy import parse_allowed

BASE_DIR = Path(__file__).resolve().parent.parent.parent


class SettingError(ValueError):
    pass


def envstr(name: str, default: str) -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise SettingError(f"{name}={raw!r} is not a boolean (use true/false)")


def _envnumber(name: str, default, minimum, cast, kind: str, maximum=None):
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = cast(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not {kind}") from None
    if value < minimum:
        raise SettingError(f"{name}={value} is below its minimum {minimum}")
    if maximum is not None and value > maximum:
        raise SettingError(f"{name}={value} is above its maximum {maximum}")
    return value


def envint(name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
    return _envnumber(name, default, minimum, int, "an integer", maximum)


def envfloat(name: str, default: float, minimum: float = 0.0) -> float:
    return _envnumber(name, default, minimum, float, "a number")


def envchoice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise SettingError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def envlist(name: str, default: str = "") -> list[str]:
    raw = os.environ.get(name, default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def envfloatlist(name: str, default: str) -> list[float]:
    values = []
    for item in envlist(name, default):
        try:
            values.append(float(item))
        except ValueError:
            raise SettingError(f"{name}: {item!r} is not a number") from None
        if values[-1] < 0:
            raise SettingError(f"{name}: {item!r} must be >= 0")
    return values


def envnetworks(name: str) -> list:
    """CIDR networks, each optionally with :port or :low-high (common.netpolicy)."""
    networks = []
    for item in envlist(name):
        try:
            networks.append(parse_allowed(item))
        except ValueError as exc:
            raise SettingError(f"{name}: {item!r} is not a CIDR network with an optional port: {exc}") from None
    return networks
