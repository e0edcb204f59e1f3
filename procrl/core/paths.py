"""Checks of the paths given on the command line of ``procrl evaluate`` and ``procrl
train-tagger`` (``--model``, ``--base``, ``--output-dir``), before anything loads or is written:
one-line ConfigErrors naming the option, instead of a traceback from ``from_pretrained`` after
the other inputs were read, or from the final write after the work was done.

A model is an embedded name (``procrl:...``), a Hub id, a GGUF file (loaded by procrl/models/loading.py)
or a local directory that holds ``config.json`` and weights (``*.safetensors`` / ``*.bin``, or
a PEFT adapter). Whether a Hub id exists is left to the loader (offline machines cannot tell);
a name that can only be a local path (absolute, ``./``, ``~``, more than one ``/``) and does
not exist is refused here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from procrl.core.config import ConfigError

__all__ = [
    "check_model_path",
    "check_output_dir_option",
    "has_tokenizer_files",
    "name_problem",
    "is_local_data_file",
    "writable_dir_problem",
]

WEIGHT_PATTERNS = (
    "*.safetensors",
    "pytorch_model*.bin",
    "model*.bin",
    "*.safetensors.index.json",
    "tf_model.h5",
    "flax_model.msgpack",
)
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_model.bin")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)


def is_local_data_file(dataset: str) -> bool:
    """Whether a recipe's ``data.dataset`` (or ``eval_dataset``) names a local JSON / JSON-lines file
    rather than a Hub dataset id or a saved dataset directory."""
    return Path(dataset).suffix.lower() in (".json", ".jsonl") or Path(dataset).is_file()


_NAME_MAX = 255  # bytes of one name in a path (Linux, macOS)
_PATH_MAX = 4096  # bytes of a whole path the kernel takes


def name_problem(path: str | os.PathLike) -> str | None:
    """Why procrl cannot write under ``path`` whatever the disk holds, or None: a name with bytes
    that are not UTF-8 (the files written into it, a model card naming its folder, the logs,
    all hold its name as text), a name over 255 bytes or a path over 4,096 (the kernel refuses them)."""
    text = os.fspath(path)
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as error:
        shown = text.encode("utf-8", "surrogateescape")[error.start : error.start + 1]
        return f"its name holds a byte that is not UTF-8 ({shown!r}); give a name in UTF-8"
    if len(encoded) > _PATH_MAX:
        return f"the path is {len(encoded):,} bytes long, more than the {_PATH_MAX:,} a path may have"
    longest = max((part for part in encoded.split(b"/")), key=len, default=b"")
    if len(longest) > _NAME_MAX:
        return f"one of its names is {len(longest):,} bytes long, more than the {_NAME_MAX} a name may have"
    return None


def writable_dir_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot become a writable directory, or None."""
    problem = name_problem(folder)
    if problem:
        return f"{folder}: {problem}"
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a directory"
    for parent in folder.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, so {folder} cannot be created"
            target = folder if folder.exists() else parent
            if not os.access(target, os.W_OK | os.X_OK):
                return f"{target} is not writable"
            return None
    return None


def _looks_like_a_path(name: str) -> bool:
    return (
        name.startswith(("/", "./", "../", "~"))
        or name.count("/") > 1
        or name.endswith("/")
        or os.sep != "/"
        and os.sep in name
    )


def has_tokenizer_files(directory: str | os.PathLike) -> bool:
    return any((Path(directory) / name).is_file() for name in TOKENIZER_FILES)


def check_model_path(option: str, name: str, *, allow_gguf: bool = True, what: str = "model") -> None:
    """Refuse what cannot be a model: a file (other than ``.gguf``), a missing local path, a
    directory without ``config.json`` or without weights."""
    if name.startswith("procrl:"):
        return  # embedded names are resolved (and refused when unknown) by procrl.models.loading
    path = Path(name).expanduser()
    if path.is_file():
        if allow_gguf and path.suffix.lower() == ".gguf":
            return
        others = ", a .gguf file or an embedded procrl: name" if allow_gguf else ""
        raise ConfigError(
            f"{option}: {name} is a file; give a {what} directory (config.json and weights) or a Hub id{others}"
        )
    if path.is_dir():
        if not (path / "config.json").is_file() and not (path / "adapter_config.json").is_file():
            checkpoints = sorted(p.name for p in path.glob("checkpoint-*") if p.is_dir())
            hint = f" (it holds {', '.join(checkpoints[-3:])}: give one of those)" if checkpoints else ""
            raise ConfigError(f"{option}: {name} is not a {what} directory: no config.json{hint}")
        weights = any(next(path.glob(pattern), None) is not None for pattern in WEIGHT_PATTERNS)
        adapter = (path / "adapter_config.json").is_file() and any((path / f).is_file() for f in ADAPTER_FILES)
        if not weights and not adapter:
            raise ConfigError(
                f"{option}: {name} has config.json but no weights (model.safetensors, pytorch_model.bin, "
                f"or a PEFT adapter); an interrupted save, or a config-only download?"
            )
        return
    if path.exists():
        raise ConfigError(f"{option}: {name} is neither a file nor a directory")
    if _looks_like_a_path(name):
        raise ConfigError(f"{option}: {name} not found")


def _probe(directory: Path) -> str | None:
    """Why a file cannot be created in the existing ``directory`` (root ignores file modes, so
    the kernel is asked: a temporary file is made and removed), or None."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".procrl-probe-"):
            return None
    except OSError as error:
        return f"{directory} is not writable ({error.strerror or error})"


def check_output_dir_option(option: str, directory: str | os.PathLike) -> None:
    """Refuse an output directory that is a file, lies under a file, or cannot be written;
    nothing is created here."""
    folder = Path(directory).expanduser()
    problem = name_problem(folder)
    if problem:
        raise ConfigError(f"{option}: {directory}: {problem}")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{option}: {directory} is a file, not a directory")
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            if not candidate.is_dir():
                raise ConfigError(f"{option}: {candidate} is a file, so {directory} cannot be created")
            problem = _probe(candidate)
            if problem:
                raise ConfigError(
                    f"{option}: {problem}"
                    if candidate == folder
                    else f"{option}: {directory} cannot be created: {problem}"
                )
            return
