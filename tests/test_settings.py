"""Settings helpers fail loudly on malformed values instead of crawling with a guess."""

import pytest

from crawlerweb.settings import SettingError, envbool, envfloat, envint, envnetworks


def test_it_reads_typed_values(monkeypatch):
    monkeypatch.setenv("X_INT", "7")
    monkeypatch.setenv("X_FLOAT", "0.25")
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_NETS", "127.0.0.0/8, ::1/128")
    assert (envint("X_INT", 1), envfloat("X_FLOAT", 1.0), envbool("X_BOOL", False)) == (7, 0.25, True)
    assert [str(n) for n in envnetworks("X_NETS")] == ["127.0.0.0/8", "::1/128"]
    assert (envint("X_UNSET", 3), envfloat("X_UNSET", 0.5), envnetworks("X_UNSET")) == (3, 0.5, [])


@pytest.mark.parametrize("read, value", [
    (lambda: envint("X_BAD", 1), "seven"),
    (lambda: envint("X_BAD", 1), "-1"),
    (lambda: envint("X_BAD", 1, maximum=9), "10"),
    (lambda: envfloat("X_BAD", 1.0), "fast"),
    (lambda: envfloat("X_BAD", 1.0), "-0.5"),
    (lambda: envbool("X_BAD", False), "maybe"),
    (lambda: envnetworks("X_BAD"), "127.0.0.1/99"),
])
def test_it_refuses_malformed_values(monkeypatch, read, value):
    monkeypatch.setenv("X_BAD", value)
    with pytest.raises(SettingError, match="X_BAD"):
        read()


# --- secure by default (crawlerweb/settings/base.py: secret_key, CRAWLER_HTTPS) -------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STRONG = "k" * 30 + "q7Z-x_29vLm3Pw8RtY5sU1oN6aBcD"


def manage(*args, env):
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
            "DATABASE_URL": "sqlite:///:memory:"}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base | env, text=True,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("key", ["CHANGE-ME-long-random", "dev-only-insecure-key-set-SECRET_KEY-in-production",
                                 "short-key", "django-insecure-" + "x1y2z3" * 10, "ab" * 40])
def test_a_known_or_weak_secret_key_stops_the_process_unless_debug(key, tmp_path):
    refused = manage("check", env={"SECRET_KEY": key})
    assert refused.returncode != 0
    assert "SettingError: SECRET_KEY is a known or weak key" in refused.stderr.splitlines()[-1]
    assert manage("check", env={"SECRET_KEY": key, "DEBUG": "true"}).returncode == 0


def test_without_a_secret_key_each_installation_makes_its_own_once(tmp_path):
    key_file = tmp_path / "state" / "secret_key"
    env = {"CRAWLER_SECRET_KEY_FILE": str(key_file)}
    read_key = ["shell", "-v", "0", "-c", "from django.conf import settings; print(settings.SECRET_KEY)"]
    first, second = manage(*read_key, env=env), manage(*read_key, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and len(first.stdout.strip()) >= 60  # made once, kept
    assert first.stdout.strip() == key_file.read_text().strip() and key_file.stat().st_mode & 0o777 == 0o600
    other = manage(*read_key, env={"CRAWLER_SECRET_KEY_FILE": str(tmp_path / "other")})
    assert other.stdout != first.stdout  # never the same key as another installation
    key_file.write_text("weak\n")
    assert "holds a weak key" in manage("check", env=env).stderr


def test_check_deploy_is_clean_with_the_documented_production_settings():
    documented = {}
    for line in (ROOT / "docs" / "deploy" / "env.example").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            documented[name] = value
    assert documented["CRAWLER_HTTPS"] == "true"
    documented |= {"SECRET_KEY": STRONG, "DATABASE_URL": "sqlite:///:memory:"}  # the placeholder is refused
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=documented)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    # Without HTTPS the same check warns: the settings are what makes it clean.
    assert manage("check", "--deploy", "--fail-level", "WARNING",
                  env=documented | {"CRAWLER_HTTPS": "false"}).returncode != 0
