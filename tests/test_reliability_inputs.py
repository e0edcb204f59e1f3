"""Hostile inputs: nothing hangs (gate cycles, prompts longer than
the model's context), one-line errors instead of tracebacks (deep YAML, stdin, a reward that
empties its inputs, dataset directories, TRL fields out of range, evaluate's and train-tagger's
flags), and no misleading result (duplicate YAML keys, check passing what cannot train, gold
answers without a number, 10-digit answers off by one)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from tests.helpers.cli import ONE_STEP, assert_one_line_error, cli, procrl_run, reward_module
from tests.helpers.launch import TINY_RECIPE

GOOD_ROWS = [
    {"question": "Ava has 3 apples and buys 4 more. How many does she have?", "answer": "3 + 4 = 7\n#### 7"},
    {"question": "Ben has 10 pens and gives away 6. How many are left?", "answer": "10 - 6 = 4\n#### 4"},
    {"question": "Cy reads 5 pages a day for 3 days. How many pages?", "answer": "5 * 3 = 15\n#### 15"},
    {"question": "Di has 8 eggs and uses 2. How many remain?", "answer": "8 - 2 = 6\n#### 6"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_recipe(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def no_model_loading(monkeypatch):
    """Fail the test if a policy model is loaded (its tokenizer and config may be)."""
    import transformers

    def forbidden(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", forbidden)


# --- hangs: gate cycles --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "gates, cycle",
    [
        ({"format": "trace", "trace": "format"}, "format -> trace -> format"),
        ({"accuracy": "format", "format": "trace", "trace": "accuracy"}, "accuracy -> format -> trace -> accuracy"),
    ],
    ids=["2-cycle", "3-cycle"],
)
def test_gate_cycles_are_refused_naming_the_cycle(tmp_path, capsys, gates, cycle):
    """Each component of a cycle waited for the other's score in _apply_gate: check, score and
    train hung forever without a word."""
    rewards = {"accuracy": {}, "format": {}, "trace": {"tagger": "cues"}}
    for name, on in gates.items():
        rewards[name]["gate"] = {"on": on}
    override = ["--set", f"rewards={json.dumps(rewards)}"]
    first = next(iter(gates))
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"question": "q", "completion": "1 + 1 = 2\n#### 2", "answer": "2"}])
    for argv in (
        ["check", TINY_RECIPE],
        ["score", "--recipe", TINY_RECIPE, "--input", rows, "--output", tmp_path / "o.jsonl"],
        ["train", TINY_RECIPE, "--output-dir", tmp_path / "run", *ONE_STEP],
    ):
        assert_one_line_error(cli(capsys, *argv, *override), f"rewards.{first}.gate.on", f"gate cycle {cycle}")
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "run").exists()

    from procrl.rewards import RewardMix, parse_rewards
    from procrl.rewards.spec import ComponentSpec, GateSettings

    specs = parse_rewards({"accuracy": {}, "format": {}})  # a mix built from specs directly is guarded too
    looped = [
        ComponentSpec(
            s.name,
            s.type,
            s.weight,
            GateSettings(on="format" if s.name == "accuracy" else "accuracy"),
            s.fallback,
            s.settings,
            s.target,
        )
        for s in specs
    ]
    with pytest.raises(ConfigError, match="gate cycle"):
        RewardMix(looped)


# --- hangs: prompts longer than the model takes --------------------------------------------------


def long_prompt_rows(tmp_path: Path) -> Path:
    rows = [dict(row) for row in GOOD_ROWS * 2]
    rows[5]["question"] = "Tom counts apples in the orchard. " * 400  # ~4,000 tokens of the tiny tokenizer
    return write_jsonl(tmp_path / "long.jsonl", rows)


def test_a_prompt_longer_than_the_context_is_refused_before_the_model_loads(tmp_path, capsys, no_model_loading):
    """A 6,002-token prompt trained silently against the tiny model's 2,048 positions."""
    data = ["--set", f"data.dataset={long_prompt_rows(tmp_path)}"]
    out = tmp_path / "run"
    words = (
        "data.dataset",
        "1 of 8 training prompts are longer than 2,040 tokens",
        "model context 2,048 - max_completion_length 8",
        "row 6",
        "data.long_prompts: skip",
    )
    trained = cli(capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP, *data)
    assert_one_line_error(trained, *words)
    assert not out.exists()
    checked = cli(capsys, "check", TINY_RECIPE, "--load-models", "--set", "trainer.max_completion_length=8", *data)
    assert_one_line_error(checked, *words)
    unmeasured = cli(capsys, "check", TINY_RECIPE, *data)  # without --load-models check says what it did not do
    assert (
        unmeasured.code == 0
        and "prompt lengths: not measured (needs the policy's tokenizer: --load-models)" in unmeasured.out
    )
    explicit = cli(
        capsys, "train", TINY_RECIPE, "--output-dir", out, *ONE_STEP, "--set", "trainer.max_prompt_length=2041"
    )
    assert_one_line_error(explicit, "trainer.max_prompt_length", "2,041 + max_completion_length 8", "2,048 positions")
    assert not out.exists()


def test_long_prompts_can_be_skipped_and_the_count_is_shown_and_logged(tmp_path, capsys):
    out = tmp_path / "run"
    result = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        out,
        *ONE_STEP,
        "--set",
        f"data.dataset={long_prompt_rows(tmp_path)}",
        "--set",
        "data.long_prompts=skip",
    )
    assert result.code == 0, result.err[-3000:]
    assert "procrl: training prompts: 7, longest" in result.err
    assert "limit 2,040 tokens (model context 2,048 - max_completion_length 8); skipped 1 longer ones" in result.err
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    logged = [h for h in history if "loss" in h]
    assert logged and logged[0]["data/training_prompts_skipped"] == 1.0
    assert 50 < logged[0]["data/training_prompt_tokens_max"] < 500  # the short prompts, template included


# --- one-line errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["flow", "block", "set"])
def test_yaml_nested_5000_deep_is_a_one_line_error(tmp_path, capsys, style):
    recipe = tmp_path / "deep.yaml"
    argv = ["check", recipe]
    if style == "flow":
        recipe.write_text("recipe: procrl/v1\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    elif style == "block":
        recipe.write_text("recipe: procrl/v1\n" + "".join("  " * i + f"k{i}:\n" for i in range(5000)))
    else:
        recipe = Path(TINY_RECIPE)
        argv = ["check", recipe, "--set", "description=" + "[" * 5000]
    result = cli(capsys, *argv)
    line = assert_one_line_error(result, "nested more than 100 levels deep")
    assert len(line) < 300


def test_nesting_within_the_bound_still_loads():
    from procrl.core import yaml_core

    value, depth = yaml_core.load("[" * 99 + "]" * 99), 1
    while value:
        value, depth = value[0], depth + 1
    assert depth == 99
    assert yaml_core.load("a:\n" + "".join("  " * i + f"b{i}:\n" for i in range(1, 50)) + "  " * 50 + "1\n")["a"]["b1"]


def test_score_reads_standard_input_from_a_pipe(tmp_path):
    rows = "".join(
        json.dumps({"question": r["question"], "completion": r["answer"], "answer": r["answer"]}) + "\n"
        for r in GOOD_ROWS
    )
    for source in ("/dev/stdin", "-"):
        output = tmp_path / f"scored{len(source)}.jsonl"
        argv = ["score", "--recipe", TINY_RECIPE, "--input", source, "--output", output, "--quiet"]
        done = procrl_run(argv, tmp_path, timeout=300, input=rows)
        assert done.returncode == 0, done.stderr[-3000:]
        scored = [json.loads(line) for line in output.read_text().splitlines()]
        assert [row["rewards"]["accuracy"] for row in scored] == [1.0] * 4
    argv = ["score", "--recipe", TINY_RECIPE, "--input", "-", "--output", tmp_path / "bad.jsonl"]
    bad = procrl_run(argv, tmp_path, timeout=300, input=rows + '{"question": 1\n')
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr[-3000:]
    assert "procrl: error: <stdin>:5: not valid JSON" in bad.stderr
    assert not (tmp_path / "bad.jsonl").exists()


EMPTIES = (
    "def empties(prompts, completions, **kwargs):\n    completions.clear()\n"
    "    kwargs['answer'].clear()\n    return []\n"
)


def test_a_reward_that_empties_its_inputs_gets_the_fallback_in_score(tmp_path, capsys, monkeypatch):
    reward_module(tmp_path, monkeypatch, "hostile_rewards", EMPTIES)
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"question": r["question"], "completion": r["answer"], "answer": r["answer"]} for r in GOOD_ROWS[:2]],
    )
    output = tmp_path / "scored.jsonl"
    result = cli(
        capsys,
        "score",
        "--recipe",
        TINY_RECIPE,
        "--input",
        rows,
        "--output",
        output,
        "--batch-size",
        "2",
        "--set",
        "rewards.empties={type: 'hostile_rewards:empties', fallback: -1.0}",
    )
    assert result.code == 0, result.err[-3000:]
    scored = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["rewards"]["empties"] for row in scored] == [-1.0, -1.0]
    assert [row["rewards"]["accuracy"] for row in scored] == [1.0, 1.0]  # the other components saw every row
    assert "failures of empties: wrong_length" in result.out


def test_a_reward_that_empties_its_completions_does_not_crash_training(tmp_path, capsys, monkeypatch):
    reward_module(tmp_path, monkeypatch, "hostile_train", EMPTIES)
    out = tmp_path / "run"
    result = cli(
        capsys,
        "train",
        TINY_RECIPE,
        "--output-dir",
        out,
        *ONE_STEP,
        "--set",
        "rewards.empties={type: 'hostile_train:empties', weight: 0.5}",
    )
    assert result.code == 0, result.err[-3000:]
    history = json.loads((out / "trainer_state.json").read_text())["log_history"]
    step = next(h for h in history if "loss" in h)
    assert step["rewards/empties/failures/wrong_length"] == 4.0
    assert "rewards/accuracy/mean" in step


def saved_dataset(path: Path, rows: list[dict], splits: bool = False) -> Path:
    import datasets

    if splits:
        datasets.DatasetDict(
            {"train": datasets.Dataset.from_list(rows), "test": datasets.Dataset.from_list(rows[:2])}
        ).save_to_disk(str(path))
    else:
        datasets.Dataset.from_list(rows).save_to_disk(str(path))
    return path


def test_a_dataset_saved_with_save_to_disk_is_loaded_and_its_rows_checked(tmp_path, capsys, no_model_loading):
    from procrl.data import load_examples
    from procrl.recipe import load_recipe

    for splits in (False, True):
        folder = saved_dataset(tmp_path / f"saved{splits}", GOOD_ROWS, splits)
        recipe = load_recipe(TINY_RECIPE, [f"data.dataset={folder}"])
        assert list(load_examples(recipe.data)["answer"]) == [r["answer"] for r in GOOD_ROWS]
        checked = cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={folder}")
        assert checked.code == 0 and "training rows: 4 checked" in checked.out, checked.err[-2000:]
    bad = saved_dataset(tmp_path / "bad", [*GOOD_ROWS[:2], {"question": "  ", "answer": "#### 1"}])
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(
            cli(capsys, *argv, "--set", f"data.dataset={bad}"),
            "data.dataset",
            f"{bad} row 3",
            "'question' must be a non-empty string",
        )
    assert not out.exists()
    single = saved_dataset(tmp_path / "single", GOOD_ROWS)  # no splits: evaluating on it would be the training data
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={single}", "--set", "trainer.eval_steps=1"),
        "data.eval_dataset",
    )


@pytest.mark.parametrize("case", ["empty", "unrelated_files"])
def test_a_directory_that_is_not_a_dataset_is_a_one_line_error(tmp_path, capsys, case):
    folder = tmp_path / "folder"
    folder.mkdir()
    if case == "unrelated_files":
        (folder / "notes.md").write_text("# notes\n")
        (folder / "script.py").write_text("print(1)\n")
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(
            cli(capsys, *argv, "--set", f"data.dataset={folder}"),
            "data.dataset",
            str(folder),
            "not a dataset",
            "save_to_disk",
        )
    assert not out.exists()


def test_a_folder_of_data_files_is_a_dataset_with_splits(tmp_path):
    from procrl.data import load_examples
    from procrl.recipe import load_recipe

    folder = tmp_path / "clone"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", GOOD_ROWS)
    write_jsonl(folder / "test.jsonl", GOOD_ROWS[:1])
    recipe = load_recipe(TINY_RECIPE, [f"data.dataset={folder}"])
    assert len(load_examples(recipe.data)) == 4 and len(load_examples(recipe.data, "test")) == 1


OUT_OF_RANGE = [
    ("trainer.max_completion_length=-1", "trainer.max_completion_length", "[1, inf)"),
    ("trainer.temperature=-1", "trainer.temperature", "(0, inf)"),
    ("trainer.top_p=5", "trainer.top_p", "(0, 1]"),
    ("trainer.beta=-1", "trainer.beta", "[0, inf)"),
    ("trainer.epsilon=-1", "trainer.epsilon", "(0, inf)"),
    ("model.lora.r=0", "model.lora.r", "[1, inf)"),
    ("trainer.save_total_limit=-1", "trainer.save_total_limit", "null keeps every one"),
    ("trainer.save_total_limit=0", "trainer.save_total_limit", "[1, inf)"),
    ("trainer.max_prompt_length=0", "trainer.max_prompt_length", ">= 1"),
]


@pytest.mark.parametrize("override, key, allowed", OUT_OF_RANGE, ids=[o[0] for o in OUT_OF_RANGE])
def test_values_out_of_range_are_refused_by_check_and_train(tmp_path, capsys, override, key, allowed):
    """max_completion_length: -1 and temperature: -1 passed check and failed after the model
    loaded; the others were accepted (save_total_limit 0 kept every checkpoint)."""
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(cli(capsys, *argv, "--set", override), key, allowed)
    assert not out.exists()


def test_all_weights_zero_is_refused(capsys):
    zero = [arg for name in ("accuracy", "format", "trace") for arg in ("--set", f"rewards.{name}.weight=0")]
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, *zero), "rewards", "every component has weight 0", "rewards.accuracy.weight"
    )
    negative = cli(
        capsys, "check", TINY_RECIPE, *zero[:-2], "--set", "rewards.trace.weight=-0.5"
    )  # a penalty alone is fine
    assert negative.code == 0, negative.err[-2000:]


# --- evaluate's and train-tagger's flags ----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model_dir() -> Path:
    from procrl.models.loading import ensure_tiny_model

    return ensure_tiny_model()


def evaluate_cases(tmp_path: Path, tiny: Path) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    a_file = tmp_path / "weights.txt"
    a_file.write_text("not a model\n")
    weightless = tmp_path / "weightless"
    weightless.mkdir()
    (weightless / "config.json").write_text((tiny / "config.json").read_text())
    run_dir = tmp_path / "run-output"
    (run_dir / "checkpoint-4").mkdir(parents=True)
    foreign = tmp_path / "no-tokenizer"  # its vocabulary is smaller than the recipe's tokenizer: not its tokenizer
    foreign.mkdir()
    config = json.loads((tiny / "config.json").read_text())
    (foreign / "config.json").write_text(json.dumps({**config, "vocab_size": 100}))
    (foreign / "model.safetensors").write_bytes((tiny / "model.safetensors").read_bytes())
    unwritable = Path("/sys/procrl-eval") if os.geteuid() == 0 else tmp_path / "locked" / "eval"
    if os.geteuid() != 0:
        unwritable.parent.mkdir()
        unwritable.parent.chmod(0o555)
    return {
        "model_is_a_file": (["--model", a_file], ("--model", str(a_file), "is a file")),
        "model_missing": (["--model", tmp_path / "missing"], ("--model", "not found")),
        "model_without_weights": (["--model", weightless], ("--model", "no weights")),
        "model_is_a_run_dir": (["--model", run_dir], ("--model", "no config.json", "checkpoint-4")),
        "checkpoint_without_tokenizer": (["--model", foreign], ("--model", "no tokenizer files", "100")),
        "batch_size_0": (["--batch-size", "0"], ("--batch-size", ">= 1")),
        "max_new_tokens_0": (["--max-new-tokens", "0"], ("--max-new-tokens", ">= 1")),
        "top_p_with_greedy": (["--top-p", "0.9"], ("--top-p 0.9", "greedy")),
        "output_dir_is_a_file": (["--output-dir", a_file], ("--output-dir", "is a file")),
        "output_dir_unwritable": (["--output-dir", unwritable], ("--output-dir", "not writable")),
    }


CASES = [
    "model_is_a_file",
    "model_missing",
    "model_without_weights",
    "model_is_a_run_dir",
    "checkpoint_without_tokenizer",
    "batch_size_0",
    "max_new_tokens_0",
    "top_p_with_greedy",
    "output_dir_is_a_file",
    "output_dir_unwritable",
]


@pytest.mark.parametrize("case", CASES)
def test_evaluate_flags_are_one_line_errors_before_generation(tmp_path, capsys, tiny_model_dir, monkeypatch, case):
    import procrl.evaluation.evaluate.run

    def no_generation(*args, **kwargs):
        raise AssertionError("generation started")

    monkeypatch.setattr(procrl.evaluation.evaluate.run, "generate_completions", no_generation)
    argv, words = evaluate_cases(tmp_path, tiny_model_dir)[case]
    out = tmp_path / "eval"
    if "--output-dir" not in argv:
        argv = [*argv, "--output-dir", out]
    result = cli(capsys, "evaluate", "--recipe", TINY_RECIPE, "--limit", "2", *argv)
    assert_one_line_error(result, *words)
    assert not out.exists()


def test_evaluate_max_new_tokens_is_used_as_given(tmp_path, capsys, monkeypatch):
    import procrl.evaluation.evaluate.run

    seen = {}

    def fake_generation(model_path, prompts, tokenizer, recipe, max_new_tokens, *args, **kwargs):
        seen["max_new_tokens"] = max_new_tokens
        return ["#### 1"] * len(prompts), "transformers"

    monkeypatch.setattr(procrl.evaluation.evaluate.run, "generate_completions", fake_generation)
    result = cli(
        capsys,
        "evaluate",
        "--recipe",
        TINY_RECIPE,
        "--limit",
        "2",
        "--max-new-tokens",
        "3",
        "--output-dir",
        tmp_path / "eval",
    )
    assert result.code == 0, result.err[-2000:]
    assert seen["max_new_tokens"] == 3


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> tuple[Path, Path]:
    from procrl.trainers.tagger import write_tiny_encoder

    folder = tmp_path_factory.mktemp("tagger")
    write_tiny_encoder(folder / "encoder")
    data = folder / "labelled.jsonl"
    write_jsonl(
        data, [{"sentence": f"First we add {i} and 3.", "labels": ["Claim"] if i % 2 else []} for i in range(6)]
    )
    return data, folder / "encoder"


@pytest.mark.parametrize(
    "case", ["base_missing", "base_is_a_file", "output_dir_is_a_file", "learning_rate_negative", "max_length_0"]
)
def test_train_tagger_flags_are_one_line_errors_before_training(tmp_path, capsys, labelled, monkeypatch, case):
    import transformers

    data, encoder = labelled
    a_file = tmp_path / "occupied"
    a_file.write_text("mine\n")
    argv, words = {
        "base_missing": (["--base", tmp_path / "no-encoder"], ("--base", "not found")),
        "base_is_a_file": (["--base", a_file], ("--base", "is a file")),
        "output_dir_is_a_file": (["--output-dir", a_file], ("--output-dir", "is a file")),
        "learning_rate_negative": (["--learning-rate", "-1"], ("--learning-rate", "positive")),
        "max_length_0": (["--max-length", "0"], ("--max-length", ">= 1")),
    }[case]
    if "--base" not in argv:
        argv += ["--base", encoder]
    if "--output-dir" not in argv:
        argv += ["--output-dir", tmp_path / "tagger"]

    def no_training(*args, **kwargs):
        raise AssertionError("the encoder was loaded")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", no_training)
    result = cli(capsys, "train-tagger", "--data", data, "--epochs", "1", *argv)
    assert_one_line_error(result, *words)
    assert a_file.read_text() == "mine\n" and not (tmp_path / "tagger").exists()


# --- misleading results ---------------------------------------------------------------------------


def test_duplicate_yaml_keys_are_refused_naming_both_lines(tmp_path, capsys):
    recipe = write_recipe(
        tmp_path / "recipe.yaml",
        """\
        recipe: procrl/v1
        model: {name_or_path: procrl:tiny-qwen2}
        data: {dataset: synthetic}
        rewards:
          accuracy: {weight: 1.0}
          trace: {tagger: cues}
        trainer: {max_steps: 1}
        rewards:
          format: {weight: 0.2}
        """,
    )
    for command in ("check", "train"):
        assert_one_line_error(
            cli(capsys, command, recipe), str(recipe), "duplicate key 'rewards'", "first at line 4, again at line 8"
        )
    nested = write_recipe(
        tmp_path / "nested.yaml",
        """\
        recipe: procrl/v1
        model: {name_or_path: procrl:tiny-qwen2}
        rewards:
          accuracy: {weight: 1.0, weight: 0.0}
        """,
    )
    assert_one_line_error(cli(capsys, "check", nested), "duplicate key 'weight'", "first at line 4, again at line 4")
    assert_one_line_error(
        cli(capsys, "check", TINY_RECIPE, "--set", "rewards={accuracy: {}, accuracy: {weight: 2}}"),
        "--set",
        "duplicate key 'accuracy'",
    )

    from procrl.core import yaml_core

    # a key merged in with << may be overridden: that is YAML's merge, not a duplicate
    assert yaml_core.load("base: &b {x: 1, y: 2}\nmine:\n  <<: *b\n  x: 3\n")["mine"] == {"x": 3, "y": 2}


def test_check_refuses_a_reward_that_fails_on_every_sample(tmp_path, capsys, monkeypatch):
    reward_module(
        tmp_path,
        monkeypatch,
        "always_fails",
        "def fails(prompts, completions, **kwargs):\n    raise ValueError('vocabulary missing')\n",
    )
    result = cli(capsys, "check", TINY_RECIPE, "--load-models", "--set", "rewards.custom={type: 'always_fails:fails'}")
    assert_one_line_error(result, "rewards.custom", "failed on every sample", "ValueError: vocabulary missing")


def test_check_probe_judge_refuses_a_judge_that_answers_401(capsys):
    from procrl.testing.openai_server import Reply, ScriptedOpenAIServer

    with ScriptedOpenAIServer(
        lambda prompt, attempt: Reply(status=401, body=b'{"error": "invalid api key"}')
    ) as server:
        judge = f"rewards.first_error={{backend: openai, model: judge, base_url: '{server.base_url}'}}"
        result = cli(capsys, "check", TINY_RECIPE, "--set", judge, "--probe-judge")
        assert_one_line_error(
            result, "rewards.first_error", "failed on every sample", "HTTP 401 Unauthorized", server.base_url
        )
        assert len(server.requests) == 2  # not retried


def test_check_refuses_a_missing_launch_config_file_as_train_does(tmp_path, capsys):
    override = ["--set", "launch.config_file=no/such/accelerate.yaml"]
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(cli(capsys, *argv, *override), "launch.config_file", "not found")
    assert not out.exists()


def test_gold_answers_without_a_number_are_refused_and_some_are_warned_about(tmp_path, capsys):
    words = [dict(row, answer="seven") for row in GOOD_ROWS]
    data = write_jsonl(tmp_path / "words.jsonl", words)
    out = tmp_path / "run"
    for argv in (["check", TINY_RECIPE], ["train", TINY_RECIPE, "--output-dir", out, *ONE_STEP]):
        assert_one_line_error(
            cli(capsys, *argv, "--set", f"data.dataset={data}"),
            "data.answer_column",
            "no gold answer",
            "row 1: 'seven'",
            "rewards.accuracy",
        )
    assert not out.exists()
    process_only = cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={data}", "--set", "rewards.accuracy=false")
    assert process_only.code == 0, process_only.err[-2000:]  # nothing reads the gold answers
    some = write_jsonl(tmp_path / "some.jsonl", [*GOOD_ROWS[:3], dict(GOOD_ROWS[3], answer="six")])
    warned = cli(capsys, "check", TINY_RECIPE, "--set", f"data.dataset={some}")
    assert warned.code == 0, warned.err[-2000:]
    assert "warning: 1 of 4 gold answers of the training data hold no number (first: row 4: 'six')" in warned.out


def test_ten_digit_answers_off_by_one_do_not_match():
    from procrl.core.answers import answers_match
    from procrl.observe.eval_metrics import SampleOutcome, summarize
    from procrl.rewards import RewardBatch
    from procrl.rewards.accuracy import AccuracyReward

    assert not answers_match(1234567891.0, 1234567890.0)
    assert answers_match(1234567890.0, 1234567890.0) and answers_match(72.0, 72)
    assert answers_match(0.1 + 0.2, 0.3) and answers_match(2.0000004, 2.0) and not answers_match(2.00001, 2.0)
    batch = RewardBatch.from_texts(["#### 1234567891", "#### 1,234,567,890"], golds=["#### 1234567890"] * 2)
    assert AccuracyReward().score(batch).scores == [0.0, 1.0]
    outcomes = [SampleOutcome(problem=0, correct=False, verdict=None, answer=1234567891.0) for _ in range(2)]
    assert summarize(outcomes, judged=False, golds=[1234567890.0])["maj@2"] == 0.0
