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
