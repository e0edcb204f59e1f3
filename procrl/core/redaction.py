"""Secrets out of everything procrl prints, writes or logs: one redaction, :func:`redact` (a
tree or a string; strings through :func:`redact_text`), on every output path: the console
(:func:`redacted_console` at procrl's entry points), errors, the plan of ``procrl check``,
reports, ``recipe.yaml``, the W&B config and the command line W&B records
(:func:`redact_argv`), ``training_args.bin`` (:class:`SecretText`).

* A value whose key names a credential is replaced by ``<redacted>``: keys whose words (split
  at ``_``, ``-``, ``.`` and camelCase: ``authToken``, ``APIKey``) include password, passwd,
  secret, credential(s), authorization, or end in a token / key word that is one (``hf_token``,
  ``accessToken``, ``api_key``, ``private_key``, ``basic_auth``, a vendor's ``openai_key`` /
  ``wandb_key``: any ``<word>_key`` but the plain ones, ``sort_key``, ``cache_key``, ...), end in
  ``pat`` (``github_pat``) or hold ``jwt``. Keys that only look similar
  keep their value: ``max_tokens``, ``pad_token``, ``eosToken``, ``tokenizer``, ``key``, and
  ``*_env`` (the *name* of the environment variable holding a secret).
* Credentials inside URLs are replaced wherever a string holds one: the user-info part
  (``https://user:key@host/v1`` -> ``https://<redacted>@host/v1``) and query parameters named as
  secrets (``?access_token=...``, ``&key=...``), also in the fragment (``#access_token=...``).
* Secret values seen once are redacted everywhere after: the recipe loader and
  :func:`redact_argv` register the values of secret keys (:func:`register_secrets`, every
  ``--set`` spelling; the judges register keys read from the environment) and
  :func:`redact_text` replaces them in any text. Every :class:`~procrl.core.config.ConfigError`
  message goes through it (``trainer.hub_token: expected a string, got list ['<redacted>']``,
  ``data.dataset: file not found: https://<redacted>@host/...``).
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = [
    "REDACTED",
    "RedactedStream",
    "SecretText",
    "hide_secrets",
    "is_secret_key",
    "redact",
    "redact_argv",
    "redact_text",
    "redact_url",
    "redacted_console",
    "register_secret",
    "register_secrets",
]

REDACTED = "<redacted>"
_ALWAYS = {
    "password",
    "passwd",
    "pwd",
    "secret",
    "secrets",
    "credential",
    "credentials",
    "apikey",
    "passphrase",
    "authorization",
    "bearer",
    "cookie",
    "jwt",
}
# the last word of a ``<what>_key`` that names no credential: any other ``<word>_key`` (``openai_key``,
# ``wandb_key``, ``judge_key``) is taken for one, since a vendor's name cannot be listed in advance
_PLAIN_KEYS = {
    "sort",
    "cache",
    "name",
    "spec",
    "batch",
    "answer",
    "group",
    "primary",
    "foreign",
    "column",
    "dict",
    "hash",
    "partition",
    "label",
    "text",
    "input",
    "output",
    "metric",
    "lookup",
    "row",
    "field",
    "map",
    "seed",
    "random",
    "rng",
    "index",
    "id",
    "unique",
    "join",
    "reward",
    "score",
    "prompt",
    "completion",
    "question",
    "gold",
    "message",
    "content",
    "role",
    "config",
    "state",
    "result",
    "json",
    "order",
    "shard",
    "bucket",
    "routing",
    "hot",
    "dataset",
    "data",
    "split",
    "processes",
    "observed",
    "known",
    "warned",
    "missing",
    "ignore",
    "public",
}
_KEY_OWNERS = {"api", "access", "private", "secret", "auth", "license", "subscription", "signing", "encryption"}
# tokenizer settings: "pad_token", "eos_token", ... are vocabulary entries, not credentials
_VOCABULARY_TOKENS = {
    "pad",
    "eos",
    "bos",
    "unk",
    "sep",
    "cls",
    "mask",
    "start",
    "end",
    "special",
    "image",
    "audio",
    "video",
    "think",
    "answer",
    "step",
    "additional",
}
# the user-info part of a URL, up to its last "@" before the path (a password may hold "@"); a
# scheme starts only where a run of scheme characters starts, so that a long run ("a.a.a...") is
# tried once, not once per character (linear time on any text)
_USERINFO = re.compile(r"(?i)(?<![a-z0-9+.\-])([a-z][a-z0-9+.\-]*://)([^/?#\s'\"]+)@")
# a parameter of a URL's query or of its fragment (``#access_token=...``, OAuth's implicit grant);
# a name stops at the next separator, so each character is read once (linear time on ";;;;...")
_QUERY_PARAMETER = re.compile(r"([?&;#])([^=&#;?\s'\"]+)=([^&#\s'\"]+)")
_QUERY_SECRETS = {"key", "sig", "signature", "auth", "code", "x-amz-signature", "x-amz-credential", "x-goog-signature"}
# camelCase and PascalCase word boundaries: authToken -> auth_Token, APIKey -> API_Key
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def is_secret_key(key: Any) -> bool:
    """Whether a config key names a credential (see the module docstring)."""
    words = [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", str(key)).lower()) if w]
    if not words or words[-1] == "env" or words[-2:] == ["env", "var"]:
        return False  # the name of the environment variable holding a secret, not the secret
    if _ALWAYS.intersection(words):
        return True
    last, previous = words[-1], words[-2] if len(words) > 1 else ""
    if last in ("token", "tokens") and len(words) == 1:
        return last == "token"
    if last == "token":
        return previous not in _VOCABULARY_TOKENS
    if last == "key":
        return previous in _KEY_OWNERS or bool(previous) and previous not in _PLAIN_KEYS
    if last == "pat":  # a personal access token: github_pat, gitlab_pat
        return True
    return last == "auth" or "api_key" in "_".join(words)


def _query_parameter(match: re.Match) -> str:
    name = match.group(2)
    if is_secret_key(name) or name.lower() in _QUERY_SECRETS:
        return f"{match.group(1)}{name}={REDACTED}"
    return match.group(0)


def redact_url(text: str) -> str:
    """``text`` with credentials inside URLs replaced: the user-info part and query parameters
    named as secrets (``?access_token=``, ``&hfToken=``, ``?key=``, ``&sig=``)."""
    if "://" not in text and "=" not in text:
        return text
    return _QUERY_PARAMETER.sub(_query_parameter, _USERINFO.sub(rf"\1{REDACTED}@", text))


def redact(value: Any) -> Any:
    """The one redaction of procrl: a copy of ``value`` with secrets replaced. A config tree (or
    a report) loses the values of secret keys (names of env vars are kept) at any depth; every
    string, wherever it sits, goes through :func:`redact_text` (URL credentials, registered
    secret values)."""
    if isinstance(value, dict):
        return {
            key: REDACTED if is_secret_key(key) and item is not None else redact(item) for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
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
    if not _SECRETS:
        return text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret not in text:
            continue
        if len(secret) >= _SHORTEST_ANYWHERE:
            text = text.replace(secret, REDACTED)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(secret)}(?![A-Za-z0-9_])", REDACTED, text)
    return text


def _flow_value(text: str) -> Any:
    """A ``--set`` value as the recipe loader reads it (YAML), or None when it is no mapping or list."""
    if not text.lstrip().startswith(("{", "[")) or len(text) > 100_000:
        return None
    try:
        from procrl.core import yaml_core

        value = yaml_core.load(text)
    except Exception:  # noqa: BLE001 - not YAML: redacted as text
        return None
    return value if isinstance(value, (dict, list)) else None


def _redact_assignment(arg: str) -> str:
    """``KEY=VALUE`` (or the mistyped ``KEY: VALUE``) with VALUE replaced when a dotted part of KEY
    names a secret; a VALUE that is a YAML mapping or list has its secret keys' values registered."""
    separator = "=" if "=" in arg else ":"
    key, found, value = arg.partition(separator)
    if not found or not value.strip() or " " in key.strip():
        return arg
    if any(is_secret_key(part) for part in key.strip().lstrip("-").split(".")):
        register_secret(value.strip())
        return f"{key}{separator}{' ' if value.startswith(' ') else ''}{REDACTED}"
    tree = _flow_value(value)
    if tree is not None:
        register_secrets(tree)
    return arg


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with secrets replaced, in every spelling of an override: ``--set
    trainer.hub_token=X``, ``--set=trainer.hub_token=X``, ``--hub-token=X``, ``--set
    'trainer={hub_token: X}'`` (a dotted part of the key names a secret, or a nested key of a YAML
    value does), URL credentials, registered secret values. The values found are registered, so
    every later output redacts them too."""
    redacted = []
    for arg in map(str, argv):
        if arg.startswith("-") and "=" in arg:  # --option=VALUE: the option's own value, then VALUE as an override
            option, _, value = arg.partition("=")
            if is_secret_key(option.lstrip("-")) and value.strip():
                register_secret(value.strip())
                arg = f"{option}={REDACTED}"
            else:
                arg = f"{option}={_redact_assignment(value)}"
        else:
            arg = _redact_assignment(arg)
        redacted.append(arg)
    # a secret option's value in the next argument: --hub_token X
    for index, arg in enumerate(redacted[:-1]):
        secret_option = arg.startswith("--") and "=" not in arg and is_secret_key(arg.lstrip("-"))
        if secret_option and redacted[index + 1] != REDACTED:
            register_secret(redacted[index + 1])
            redacted[index + 1] = REDACTED
    return [redact_text(arg) for arg in redacted]


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


# --- the console ---------------------------------------------------------------------------------


class RedactedStream:
    """``sys.stdout`` / ``sys.stderr`` with every text written through :func:`redact_text` (the
    rest of the stream's interface passes through). Code that patches ``stream.write`` to copy what
    is printed (W&B's console capture) gets the redacted text too: the function it sets is called
    with it."""

    def __init__(self, stream):
        object.__setattr__(self, "_stream", stream)
        object.__setattr__(self, "_patched", None)

    def _write(self, text):
        return self._stream.write(redact_text(text) if isinstance(text, str) else text)

    def _through_patch(self, text):
        return self._patched(redact_text(text) if isinstance(text, str) else text)

    @property
    def write(self):
        return self._write if self._patched is None else self._through_patch

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value) -> None:
        if name == "write":  # stream.write = f: f is called with the redacted text
            object.__setattr__(self, "_patched", value)
        else:
            setattr(self._stream, name, value)


def _redacting_excepthook(kind, error, trace) -> None:
    import traceback

    sys.stderr.write(redact_text("".join(traceback.format_exception(kind, error, trace))))


class redacted_console:
    """``with redacted_console(): ...`` (procrl's entry points): stdout and stderr redact what is
    written to them, a traceback that ends the process too; the streams are restored after."""

    def __enter__(self) -> redacted_console:
        self.saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = (
            stream if isinstance(stream, RedactedStream) else RedactedStream(stream) for stream in self.saved
        )
        if sys.excepthook is sys.__excepthook__:
            sys.excepthook = _redacting_excepthook
        return self

    def __exit__(self, *exc) -> None:
        sys.stdout, sys.stderr = self.saved
