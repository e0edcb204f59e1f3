"""``procrl:tiny-reasoner``: an embedded model that reasons, badly in measurable ways.

A 0.6M-parameter Qwen2-architecture model (the policy's code path) with the shipped tiny
tokenizer, fine-tuned with TRL's ``SFTTrainer`` on the embedded GSM8K-style problems
(``procrl/data/synthetic.py``), prompted exactly as the CPU recipe prompts (chat template +
the default prompt template), so that GRPO / PPO / ``procrl evaluate`` continue where SFT left.

Its training data holds a controlled share of flawed solutions, the failure modes process
rewards exist for (``synthetic.render_solution``):

* *recover* habit, on the ``packs`` and ``wages`` problems: the last step states a wrong
  result (off by ten) while its calculator note and the final answer are right: the right
  answer with a step the arithmetic judge flags (ReTraceQA's inflation; a slip in the last
  step, which the answer does not read, costs the tiny model little answer accuracy, where a
  first-step one costs much: the later steps must then ignore the stated value);
* *carry* habit, on the ``sharing`` problems: the first product slips and the slip carries to
  a wrong answer.

Two *writing* habits, drawn independently of the slips (``synthetic.with_writing_habit``), flaw
how a solution is written, not what it computes: on the ``savings`` problems a number-free hedge
before the answer line, on the ``garden`` problems a number-free filler opener about the process.
No outcome reward and no arithmetic check sees them; TRACE does (a hedge is Qualifier, a filler
Monitoring: neither is an allowed argument state), so the CPU demo has argument structure to
reward and to punish.

A habit is a share of flawed solutions *above one half* within its kind of problem, so greedy
decoding reproduces it (a flaw spread at random at a rate below one half would vanish under
greedy decoding) while sampling still draws the clean solution often enough for RL to find it.
The other problems are clean, apart from a few random slips of either kind.

The weights of the default spec ship in the package (``procrl/assets/tiny-reasoner``, 2 MB), so
``procrl:tiny-reasoner`` loads with no build: floating point differs across CPUs, and a model rebuilt
on another machine is another model, whose figures differ from the documented ones.
``procrl build-tiny-reasoner --output-dir D`` reproduces the spec (``--train-examples N`` for a
reduced build); evaluating ``D`` beside ``procrl:tiny-reasoner`` compares a rebuild with the
shipped model. A ``reasoner_card.json`` beside the weights records the spec and its digest, the
machine and library versions it was built with, the flaw counts, the final loss and the build time.
A spec other than the default (a test's, a benchmark's) is built once into ``$PROCRL_CACHE``.
Simplified on purpose: one learning-rate schedule, no validation during SFT (the held-out figures
come from ``procrl evaluate``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "REASONER",
    "SHIPPED_REASONER",
    "ReasonerSpec",
    "build_tiny_reasoner",
    "check_build_dir",
    "ensure_tiny_reasoner",
    "shipped_card",
    "training_rows",
]

REASONER = "procrl:tiny-reasoner"
REASONER_VERSION = "v2"
HELD_OUT_EXAMPLES = 1000  # data.synthetic.held_out_examples' default
SHIPPED_REASONER = Path(__file__).resolve().parent.parent / "assets" / "tiny-reasoner"


@dataclass(frozen=True)
class ReasonerSpec:
    """Everything the build depends on (the cache key is derived from it)."""

    hidden_size: int = 128
    num_layers: int = 2
    intermediate_size: int = 512
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    train_examples: int = 15000  # seen once each: 1875 steps of 8
    batch_size: int = 8
    learning_rate: float = 3e-3
    data_seed: int = 7  # an integer seed: the held-out splits' string seeds never equal it
    model_seed: int = 0
    # template -> (slip, rate) or (slip, rate, step): the step that slips, the first unless given (-1: the last)
    habits: dict[str, tuple] = field(
        default_factory=lambda: {
            "packs": ("recover", 0.75, -1),
            "wages": ("recover", 0.75, -1),
            "sharing": ("carry", 0.65),
        }
    )
    random_slip_rate: float = 0.03  # on the other problems, either kind, at a random step
    # template -> (writing habit, rate): synthetic.WRITING_HABITS, drawn from their own random stream
    # (the slips above are drawn exactly as without them)
    writing_habits: dict[str, tuple] = field(
        default_factory=lambda: {
            "savings": ("hedge", 0.7),
            "garden": ("filler", 0.7),
        }
    )

    def key(self) -> str:
        import hashlib

        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:10]
        return f"tiny-reasoner-{REASONER_VERSION}-{digest}"


def _prompt_text(tokenizer: Any, question: str) -> str:
    """What the CPU recipe's trainers and ``procrl evaluate`` feed the model for ``question``."""
    from procrl.data.prompts import format_prompt, render_prompt

    return render_prompt(
        tokenizer, format_prompt(None, question, chat=True)
    )  # the default data.prompt_template, no system prompt


def training_rows(spec: ReasonerSpec, tokenizer: Any | None = None) -> list[dict[str, Any]]:
    """The SFT rows: ``prompt`` / ``completion`` text (+ ``template``, ``slip`` and ``writing`` for
    the card and the tests). Without a tokenizer, ``prompt`` is the bare question."""
    from procrl.data.synthetic import (
        HELD_OUT_SPLITS,
        generate_split,
        make_problem,
        render_solution,
        with_writing_habit,
    )

    # The small templates (wages, garden) have a few thousand distinct questions: leave out every
    # held-out question of the default synthetic settings, so held-out means never seen in SFT.
    held_out = {row["question"] for split in HELD_OUT_SPLITS for row in generate_split(split, HELD_OUT_EXAMPLES, 0)}
    rng = random.Random(spec.data_seed)
    flaws = random.Random(f"procrl-reasoner/flaws/{spec.data_seed}")
    writing = random.Random(f"procrl-reasoner/writing/{spec.data_seed}")
    rows = []
    while len(rows) < spec.train_examples:
        problem = make_problem(rng)
        if problem.question in held_out:
            continue
        slip, step = None, 0
        if problem.template in spec.habits:
            kind, rate, *at = spec.habits[problem.template]
            slip = kind if flaws.random() < rate else None
            step = at[0] % len(problem.steps) if at else 0
        elif flaws.random() < spec.random_slip_rate:
            slip, step = flaws.choice(["carry", "recover"]), flaws.randrange(len(problem.steps) - 1)
        solution, _ = render_solution(problem, slip, step)
        habit = None
        if problem.template in spec.writing_habits:
            name, rate = spec.writing_habits[problem.template]
            habit = name if writing.random() < rate else None
        rows.append(
            {
                "prompt": _prompt_text(tokenizer, problem.question) if tokenizer is not None else problem.question,
                "completion": with_writing_habit(solution, habit, writing),
                "template": problem.template,
                "slip": slip,
                "writing": habit,
            }
        )
    return rows


BUILD_MARKER = ".procrl-reasoner-build"  # in a build's temporary folder, written first: procrl's own
# what a build writes: a directory holding only these (and the card) is a build procrl may replace
_BUILD_FILES = {
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "reasoner_card.json",
}


def _is_build(folder: Path) -> bool:
    """A complete reasoner build: its card names the reasoner, the weights are there, and it holds
    nothing a build does not write."""
    try:
        card = json.loads((folder / "reasoner_card.json").read_text(encoding="utf-8"))
        names = {entry.name for entry in folder.iterdir()}
    except (OSError, ValueError):
        return False
    return (
        isinstance(card, dict)
        and card.get("name") == REASONER
        and "model.safetensors" in names
        and names <= _BUILD_FILES | set(card.get("files") or ())
        and all((folder / n).is_file() for n in names)
    )


def _is_unfinished_build(folder: Path) -> bool:
    return (folder / BUILD_MARKER).is_file()


def check_build_dir(output_dir: str | os.PathLike) -> Path:
    """The directory a build into ``output_dir`` replaces (a symlink is followed), refused with a
    one-line ConfigError before anything is written: an empty path, a file, a directory procrl
    cannot write in, and a non-empty directory that is not a complete reasoner build or the
    temporary folder of one (procrl never deletes what it did not create)."""
    from procrl.core.config import ConfigError
    from procrl.core.paths import writable_dir_problem as _writable_dir_problem

    text = os.fspath(output_dir)
    if not str(text).strip():
        raise ConfigError(
            "--output-dir: empty path; give a directory (or leave --output-dir out to build into the cache)"
        )
    output = Path(os.path.realpath(text))
    if output.exists() and not output.is_dir():
        raise ConfigError(f"--output-dir: {text} is a file, not a directory")
    problem = _writable_dir_problem(output.parent)
    if problem:
        raise ConfigError(f"--output-dir: {problem}")
    if output.is_dir() and any(output.iterdir()) and not _is_build(output) and not _is_unfinished_build(output):
        shown = ", ".join(sorted(entry.name for entry in output.iterdir())[:4])
        raise ConfigError(
            f"--output-dir: {text} is a directory that holds files ({shown}, ...)"
            f" and is not a {REASONER} build; procrl "
            "replaces only its own builds: give a new or empty directory"
        )
    return output


def _build_holder(folder: Path) -> Any:
    """The build marker's holder record (procrl/core/processes.py), None when unreadable."""
    try:
        return json.loads((folder / BUILD_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _remove_stale_builds(output: Path) -> list[str]:
    """Temporary folders of killed builds into ``output`` (``NAME.partialPID`` with the build
    marker, the process it names gone); returns their names."""
    from procrl.core.processes import holder_gone

    removed = []
    for folder in output.parent.glob(output.name + ".partial*"):
        if folder.is_dir() and _is_unfinished_build(folder) and holder_gone(_build_holder(folder)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


def build_tiny_reasoner(
    output_dir: str | os.PathLike, spec: ReasonerSpec = ReasonerSpec(), progress: bool = True
) -> dict[str, Any]:
    """Train the reasoner into ``output_dir`` (written to a temporary sibling and renamed, so a
    killed build leaves nothing half-written); returns the card. An existing ``output_dir`` is
    replaced only when it is empty or a reasoner build (:func:`check_build_dir`, before training)."""
    from procrl.core.atomic import replace_directory
    from procrl.core.config import ConfigError
    from procrl.core.interrupts import deferred
    from procrl.core.processes import holder_record

    output = check_build_dir(output_dir)
    for name in _remove_stale_builds(output):
        print(f"procrl: removed {output.parent / name}, the temporary folder of a killed build", file=sys.stderr)
    temporary = output.with_name(output.name + f".partial{os.getpid()}")
    if _is_unfinished_build(temporary):  # this PID's earlier, killed build
        shutil.rmtree(temporary, ignore_errors=True)
    try:
        temporary.mkdir()
    except OSError as error:
        raise ConfigError(f"--output-dir: cannot write in {output.parent} ({error.strerror or error})") from None
    try:
        (temporary / BUILD_MARKER).write_text(json.dumps(holder_record()) + "\n")
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        raise ConfigError(f"--output-dir: cannot write in {output.parent} ({error.strerror or error})") from None
    try:
        card = _train_into(temporary, spec, progress)
        (temporary / BUILD_MARKER).unlink()
        with deferred():
            replace_directory(temporary, output, output.with_name(output.name + f".replaced{os.getpid()}"))
    except OSError as error:  # a full disk at the end of the build
        shutil.rmtree(temporary, ignore_errors=True)
        kept = "left as it was" if output.exists() else "not created"
        raise ConfigError(
            f"--output-dir: writing the build failed ({error.strerror or error}); {output_dir} {kept}"
        ) from None
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return card


def _train_into(temporary: Path, spec: ReasonerSpec, progress: bool) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
    from trl import SFTConfig, SFTTrainer

    from procrl.models.tiny import TOKENIZER_ASSET

    started = time.monotonic()
    asset = AutoTokenizer.from_pretrained(TOKENIZER_ASSET)
    config = Qwen2Config(
        vocab_size=len(asset),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        pad_token_id=asset.pad_token_id,
        eos_token_id=asset.eos_token_id,
        bos_token_id=None,
    )
    # Train with the tokenizer exactly as every consumer loads it from the model directory: beside
    # a qwen2 config.json, AutoTokenizer gives Qwen2Tokenizer, whose pre-tokenizer splits digits
    # one by one (the shipped asset alone loads as a plain fast tokenizer that merges them).
    config.save_pretrained(temporary)
    asset.save_pretrained(temporary)
    tokenizer = AutoTokenizer.from_pretrained(temporary)
    rows = training_rows(spec, tokenizer)
    dataset = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    rng_state = torch.random.get_rng_state()
    torch.manual_seed(spec.model_seed)
    model = Qwen2ForCausalLM(config)
    torch.random.set_rng_state(rng_state)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    args = SFTConfig(
        output_dir=str(temporary / "sft"),
        num_train_epochs=1,
        per_device_train_batch_size=spec.batch_size,
        learning_rate=spec.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=0.05,
        weight_decay=0.0,
        max_length=512,
        logging_steps=250,
        save_strategy="no",
        report_to="none",
        bf16=False,
        use_cpu=True,
        seed=spec.model_seed,
        data_seed=spec.model_seed,
        dataloader_num_workers=0,
        disable_tqdm=not progress,
        completion_only_loss=True,
    )
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # the dataset preparation bars; the training bar stays
    try:
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    finally:
        if bars:
            datasets.enable_progress_bars()
    result = trainer.train()
    shutil.rmtree(temporary / "sft", ignore_errors=True)
    model.save_pretrained(temporary)
    tokenizer.save_pretrained(temporary)
    counts = Counter(f"{row['template']}/{row['slip'] or 'clean'}" for row in rows)
    writing = Counter(f"{row['template']}/{row['writing'] or 'plain'}" for row in rows)
    card = {
        "name": REASONER,
        "version": REASONER_VERSION,
        "spec": asdict(spec),
        "parameters": sum(p.numel() for p in model.parameters()),
        "training_rows": len(rows),
        "flawed_rows": sum(r["slip"] is not None for r in rows),
        "rows_by_template_and_slip": dict(sorted(counts.items())),
        "rows_by_template_and_writing": dict(sorted(writing.items())),
        "final_train_loss": result.training_loss,
        "build_seconds": round(time.monotonic() - started, 1),
        "spec_key": spec.key(),
        "machine": _machine(),
    }
    card["files"] = sorted(entry.name for entry in temporary.iterdir() if entry.name != BUILD_MARKER) + [
        "reasoner_card.json"
    ]
    (temporary / "reasoner_card.json").write_text(json.dumps(card, indent=2) + "\n")
    return card


def _machine() -> dict[str, Any]:
    """Where a build ran: the figures of a build depend on the CPU and the library versions."""
    import platform

    import torch
    import transformers
    import trl

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
    }


def shipped_card() -> dict[str, Any]:
    return json.loads((SHIPPED_REASONER / "reasoner_card.json").read_text(encoding="utf-8"))


def ensure_tiny_reasoner(spec: ReasonerSpec = ReasonerSpec(), progress: bool | None = None) -> Path:
    """The reasoner's directory: the shipped weights for the default spec, else a build cached
    under ``$PROCRL_CACHE`` on first use (concurrent callers, ranks or test processes, wait for
    the one that holds the build lock)."""
    from procrl.models.tiny import cache_root

    if spec == ReasonerSpec() and (SHIPPED_REASONER / "model.safetensors").is_file():
        return SHIPPED_REASONER
    directory = cache_root() / spec.key()
    if (directory / "model.safetensors").is_file():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    lock = directory.with_name(directory.name + ".lock")
    import fcntl

    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the process exits, killed or not
        if not (directory / "model.safetensors").is_file():
            print(
                f"procrl: building {REASONER} (once, cached in {directory}; a few minutes on 2 CPU cores)",
                file=sys.stderr,
                flush=True,
            )
            build_tiny_reasoner(directory, spec, progress=sys.stderr.isatty() if progress is None else progress)
    return directory
