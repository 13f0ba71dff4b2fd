"""HS256 JSON Web Tokens for the test broker's token authentication, with the standard library.

Pulsar's `AuthenticationProviderToken` (upstream `pulsar-broker-common`) validates a token signed with
the symmetric `tokenSecretKey` (`data:;base64,<key>`) and takes the role from its `sub` claim; jjwt
0.13 wants a key of at least 256 bits for HS256.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_secret() -> bytes:
    """A fresh 256-bit HS256 key."""
    return secrets.token_bytes(32)


def secret_setting(secret: bytes) -> str:
    """The broker's `tokenSecretKey` value for `secret`."""
    return "data:;base64," + base64.b64encode(secret).decode("ascii")


def token(secret: bytes, subject: str) -> str:
    """A token for role `subject`, without expiry, signed with `secret`."""
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps({"sub": subject}, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = _b64url(hmac.new(secret, signing_input, hashlib.sha256).digest())
    return f"{header}.{payload}.{signature}"
