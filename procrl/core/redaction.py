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
* Secret values seen once are redacted everywhere after: the recipe loader registers the values
  of secret keys (:func:`register_secrets`; the judges register keys read from the environment)
  and :func:`redact_text` replaces them in any text. Every :class:`~procrl.core.config.ConfigError`
  message goes through it (``trainer.hub_token: expected a string, got list ['<redacted>']``,
  ``data.dataset: file not found: https://<redacted>@host/...``), and so does procrl's own
  command line once parsed (:func:`redact_argv`: W&B records ``sys.argv`` in its run files; the
  lock file and the ``launching`` line show it).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["REDACTED", "SecretText", "is_secret_key", "redact", "redact_argv", "redact_text", "redact_url", "hide_secrets", "register_secret",
           "register_secrets"]

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


# --- secret values, wherever they turn up -------------------------------------------------------

_SECRETS: set[str] = set()
_SHORTEST = 4  # shorter values are no secrets worth the name, and would blank out ordinary words
_SHORTEST_ANYWHERE = 8  # shorter secrets are replaced only where they stand alone (not inside words)


def register_secret(value: Any) -> None:
    """Remember a secret value so that :func:`redact_text` replaces it from now on (in this process)."""
    text = value if isinstance(value, str) else None if value is None or isinstance(value, bool) else str(value)
    text = (text or "").strip()
    if len(text) >= _SHORTEST and text != REDACTED:
        _SECRETS.add(text)


def register_secrets(tree: Any) -> None:
    """Register every value under a secret key of a config tree (all the leaves below it)."""
    if isinstance(tree, dict):
        for key, item in tree.items():
            if is_secret_key(key):
                _register_leaves(item)
            else:
                register_secrets(item)
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            register_secrets(item)


def _register_leaves(value: Any) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _register_leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _register_leaves(item)
    else:
        register_secret(value)


def redact_text(text: str) -> str:
    """``text`` with URL credentials and every registered secret value replaced."""
    text = redact_url(str(text))
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret not in text:
            continue
        if len(secret) >= _SHORTEST_ANYWHERE:
            text = text.replace(secret, REDACTED)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(secret)}(?![A-Za-z0-9_])", REDACTED, text)
    return text


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with secrets replaced: ``KEY=VALUE`` where KEY (its last dotted part, as in
    ``--set trainer.hub_token=...``) names a secret, URL credentials, registered secret values."""
    redacted = []
    for arg in argv:
        arg = str(arg)
        separator = "=" if "=" in arg else ":"  # KEY: VALUE is a mistyped --set, and as secret
        key, found, value = arg.partition(separator)
        if found and value.strip() and is_secret_key(key.strip().lstrip("-").split(".")[-1]):
            register_secret(value.strip())
            arg = f"{key}{separator}{' ' if value.startswith(' ') else ''}{REDACTED}"
        redacted.append(redact_text(arg))
    return redacted


class SecretText(str):
    """A string holding a secret (``trainer.hub_token``, a URL with credentials) that works as
    the string in this process (TRL and transformers push to the Hub with it, vLLM's client
    connects with it) but never leaves it: pickled (transformers' ``training_args.bin``, in every
    checkpoint and beside the final model) it becomes ``shown`` (None for a secret value, the
    redacted URL for a URL), through builtins only, so loading the file needs no procrl; copies
    keep the secret; ``repr`` shows ``shown``."""

    def __new__(cls, value: str, shown: str | None = None):
        text = super().__new__(cls, value)
        text._shown = shown
        return text

    def __reduce_ex__(self, protocol):
        return (type(None), ()) if self._shown is None else (str, (self._shown,))

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return repr(REDACTED if self._shown is None else self._shown)


def hide_secrets(settings: Any, key: Any = None) -> Any:
    """``settings`` (a config tree) with the string values of secret keys, and strings holding
    URL credentials, as :class:`SecretText` (secret values registered too)."""
    if isinstance(settings, dict):
        return {name: hide_secrets(value, name) for name, value in settings.items()}
    if isinstance(settings, (list, tuple)):
        return type(settings)(hide_secrets(value) for value in settings)
    if not isinstance(settings, str) or isinstance(settings, SecretText):
        return settings
    if key is not None and is_secret_key(key):
        register_secret(settings)
        return SecretText(settings)
    shown = redact_url(settings)
    return settings if shown == settings else SecretText(settings, shown)
