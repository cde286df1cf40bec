"""API key creation and checking.

A key is `cw_<prefix>_<secret>`: the prefix finds the row, the SHA-256 of the whole key is
compared with hmac.compare_digest (constant time), so neither the stored hash nor response
timing tells an attacker anything about the secret part.
"""

import hashlib
import hmac
import secrets

from django.utils import timezone

from .models import ApiKey

PREFIX_CHARS = 8


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def create_key(name: str) -> tuple[ApiKey, str]:
    """A new key row and the key itself (shown once; only its hash is stored)."""
    while True:
        prefix = secrets.token_hex(PREFIX_CHARS // 2)
        if not ApiKey.objects.filter(prefix=prefix).exists():
            break
    key = f"cw_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey.objects.create(name=name, prefix=prefix, key_hash=_digest(key))
    return row, key


def check_key(key: str) -> ApiKey | None:
    """The key's row if the key is valid and not revoked, else None."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != "cw" or len(parts[1]) != PREFIX_CHARS:
        return None
    row = ApiKey.objects.filter(prefix=parts[1]).first()
    if row is None:
        _digest(key)  # same work either way
        return None
    if not hmac.compare_digest(row.key_hash, _digest(key)) or row.revoked:
        return None
    ApiKey.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row
