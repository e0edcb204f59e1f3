"""Secrets out of everything procrl prints, writes or logs (``procrl check``, ``recipe.yaml``,
the W&B run config, judge warnings).

* A value whose key names a credential is replaced by ``<redacted>``: keys whose words (split
  at ``_``, ``-``, ``.``) include password, passwd, secret, credential(s), or end in a token /
  key word that is one (``hf_token``, ``access_token``, ``api_key``, ``private_key``). Keys
  that only look similar keep their value: ``max_tokens``, ``pad_token``, ``tokenizer``,
  ``key``, and ``*_env`` (the *name* of the environment variable holding a secret).
* Credentials inside URLs are replaced wherever a string holds one: the user-info part
  (``https://user:key@host/v1`` -> ``https://<redacted>@host/v1``) and secret-looking query
  parameters (``?api_key=...``).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "is_secret_key", "redact", "redact_url"]

REDACTED = "<redacted>"
_ALWAYS = {"password", "passwd", "pwd", "secret", "secrets", "credential", "credentials", "apikey", "passphrase"}
_KEY_OWNERS = {"api", "access", "private", "secret", "auth", "license", "subscription", "signing", "encryption"}
# tokenizer settings: "pad_token", "eos_token", ... are vocabulary entries, not credentials
_VOCABULARY_TOKENS = {"pad", "eos", "bos", "unk", "sep", "cls", "mask", "start", "end", "special", "image", "audio",
                      "video", "think", "answer", "step", "additional"}
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/?#@\s]+)@")
_QUERY_SECRET = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|auth|password|secret|sig|signature)=)[^&#\s]+"
)


def is_secret_key(key: Any) -> bool:
    """Whether a config key names a credential (see the module docstring)."""
    lowered = str(key).lower()
    if lowered.endswith(("_env", "_env_var")):
        return False
    words = [w for w in re.split(r"[^a-z0-9]+", lowered) if w]
    if not words:
        return False
    if _ALWAYS.intersection(words) or "api_key" in lowered:
        return True
    last, previous = words[-1], words[-2] if len(words) > 1 else ""
    if last == "token":
        return previous not in _VOCABULARY_TOKENS
    if last == "key":
        return previous in _KEY_OWNERS
    return False


def redact_url(text: str) -> str:
    """``text`` with credentials inside URLs replaced."""
    if "://" not in text and "=" not in text:
        return text
    return _QUERY_SECRET.sub(rf"\1{REDACTED}", _USERINFO.sub(rf"\1{REDACTED}@", text))


def redact(value: Any) -> Any:
    """Copy of a config tree with secrets replaced (names of env vars are kept)."""
    if isinstance(value, dict):
        return {
            key: REDACTED if is_secret_key(key) and item is not None else redact(item) for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_url(value)
    return value
