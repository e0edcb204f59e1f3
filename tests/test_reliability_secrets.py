"""A secret is redacted wherever it goes: one redaction (procrl/core/redaction.py) for the console,
errors, the plan of ``check``, reports, W&B's config and the command line W&B records, and
training_args.bin. Every test gives every form of secret (key names in camelCase, snake, kebab
and UPPER case, URL credentials, query tokens, nested settings, every ``--set`` spelling) and
greps everything written (the files under the output dirs and W&B's, stdout and stderr)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from procrl.core.redaction import REDACTED, is_secret_key, redact, redact_argv, redact_url
from procrl.evaluation.evaluate import run as ev
from tests.helpers.cli import cli, grep_secrets
from tests.helpers.launch import REPO, TINY_RECIPE, accelerate, procrl, run_command

# a custom reward whose settings hold secrets (and that prints them: the console must not show them)
REWARD_MODULE = """
def keyed(completions, authToken=None, settings=None, **kwargs):
    print(f"keyed reward: authToken {authToken}, settings {settings}")
    return [0.0 for _ in completions]
"""

SECRETS = {
    "camel": "CAMELSECRET_b2x9",
    "nested": "NESTEDSECRET_c3",
    "upper": "UPPERSECRET_u7",
    "kebab": "KEBABSECRET_k8",
    "hf": "HFSECRET_h5z",
    "password": "PASSWORDSECRET_p4",
    "query": "QUERYSECRET_q6",
    "flag": "FLAGSECRET_f1",
    "flow": "FLOWSECRET_w2",
}


def secret_settings() -> list[str]:
    """Every form of secret, as ``--set`` arguments of every spelling."""
    s = SECRETS
    reward = (
        f"rewards.keyed={{type: secret_reward:keyed, weight: 0.1, authToken: {s['camel']}, "
        f"settings: {{nested: {{accessToken: {s['nested']}}}, HF_TOKEN: {s['upper']}, hub-token: {s['kebab']}, "
        f"hfToken: {s['hf']}}}}}"
    )
    url = f"http://bob:{s['password']}@10.0.0.1:8000/v1?access_token={s['query']}"
    return ["--set", reward, f"--set=trainer.vllm_server_base_url={url}", f"--set=trainer.hub_token={s['flag']}"]


@pytest.fixture
def reward_module(tmp_path, monkeypatch):
    (tmp_path / "secret_reward.py").write_text(REWARD_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def leaked(text: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in text]


# --- the one function --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "authToken",
        "accessToken",
        "hfToken",
        "apiKey",
        "APIKey",
        "hub_token",
        "HUB_TOKEN",
        "hub-token",
        "x-api-key",
        "Authorization",
        "clientSecret",
        "basic_auth",
        "token",
        "openai_key",
        "wandb_key",
        "anthropicKey",
        "jwt",
        "session_jwt",
        "github_pat",
        "GITLAB_PAT",
    ],
)
def test_secret_keys_in_every_case_style(key):
    assert is_secret_key(key)
    assert redact({"judge": {"headers": [{key: "s3cr3t-value"}]}}) == {"judge": {"headers": [{key: REDACTED}]}}


@pytest.mark.parametrize(
    "key",
    [
        "max_tokens",
        "maxTokens",
        "pad_token",
        "eosToken",
        "tokenizer",
        "key",
        "api_key_env",
        "hfTokenEnv",
        "num_tokens",
        "author",
        "sort_key",
        "cache_key",
        "sort_keys",
        "pattern",
    ],
)
def test_look_alikes_keep_their_values(key):
    assert not is_secret_key(key)


def test_url_credentials_and_query_tokens():
    url = "https://alice:p@ss@host.org/data.jsonl?split=train&access_token=T1&hfToken=T2&sig=T3"
    assert (
        redact_url(url) == f"https://{REDACTED}@host.org/data.jsonl?split=train&access_token={REDACTED}"
        f"&hfToken={REDACTED}&sig={REDACTED}"
    )


def test_every_part_of_a_url_the_fragment_too():
    """OAuth's implicit grant puts the token in the fragment: ``#access_token=...&id_token=...``."""
    url = "https://app.example/cb?state=ok#access_token=FRAGSECRET_1&token_type=bearer&id_token=FRAGSECRET_2"
    assert (
        redact_url(url)
        == f"https://app.example/cb?state=ok#access_token={REDACTED}&token_type=bearer&id_token={REDACTED}"
    )


def test_check_prints_no_credential_named_as_vendors_name_it(capsys, reward_module):
    """``procrl check`` prints the resolved recipe, and the reward prints its settings: settings
    named openai_key, wandb_key, jwt, github_pat and a URL with the token in its fragment are
    shown redacted."""
    values = {
        "openai_key": "sk-OPENAISECRET_1",
        "wandb_key": "WANDBSECRET_2",
        "jwt": "eyJJWTSECRET_3",
        "github_pat": "ghp_PATSECRET_4",
    }
    settings = ", ".join(f"{key}: {value}" for key, value in values.items())
    result = cli(
        capsys,
        "check",
        TINY_RECIPE,
        "--set",
        f"rewards.keyed={{type: secret_reward:keyed, weight: 0.1, settings: {{{settings}, "
        "url: 'https://h.example/cb#access_token=FRAGSECRET_5'}}",
    )
    shown = result.out + result.err
    assert result.code == 0 and "keyed reward:" in shown and "openai_key" in shown, shown[-3000:]
    assert [v for v in [*values.values(), "FRAGSECRET_5"] if v in shown] == []


def test_every_set_spelling_is_redacted_on_the_command_line():
    argv = [
        "procrl",
        "train",
        "r.yaml",
        "--set=trainer.hub_token=ARGSECRET_1",
        "--set",
        "trainer={max_steps: 1, hub_token: ARGSECRET_2}",
        "--set",
        "rewards.j.settings.authToken=ARGSECRET_3",
        "--set",
        "trainer.hub_token: ARGSECRET_4",
        "--hub-token",
        "ARGSECRET_5",
        "--hub_token=ARGSECRET_6",
        "--set",
        "x={a: {b: [{accessToken: ARGSECRET_7}]}}",
        "--set",
        "x.url=https://u:ARGSECRET_8@h/v1?key=ARGSECRET_9",
    ]
    shown = " ".join(redact_argv(argv))
    assert "ARGSECRET" not in shown, shown
    assert "trainer={max_steps: 1, hub_token: <redacted>}" in shown and "--set=trainer.hub_token=<redacted>" in shown


# --- every output path ---------------------------------------------------------------------------------


def test_check_prints_no_secret_in_any_form(capsys, reward_module):
    """The resolved recipe, the plan, the data checks and the reward's own print()."""
    url = f"https://alice:{SECRETS['password']}@example.com/data.jsonl?access_token={SECRETS['query']}"
    result = cli(
        capsys,
        "check",
        TINY_RECIPE,
        *secret_settings()[:2],
        "--set",
        f"data.dataset={url}",
        f"--set=trainer.hub_token={SECRETS['flag']}",
    )
    assert result.code == 0, result.err[-3000:]
    assert "keyed reward: authToken <redacted>" in result.out  # the reward ran and printed
    assert leaked(result.out + result.err) == []


def test_an_error_carries_no_secret_in_any_form(capsys, reward_module):
    result = cli(
        capsys, "check", TINY_RECIPE, *secret_settings(), "--set", f"rewards.keyed.authToken: {SECRETS['camel']}"
    )
    assert result.code == 2 and len(result.errors) == 1, result.err[-3000:]
    assert leaked(result.out + result.err) == []


def test_score_writes_and_prints_no_secret(tmp_path, capsys, reward_module):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "1+1?", "completion": "1+1=2 #### 2", "answer": "2"}) + "\n")
    result = cli(
        capsys,
        "score",
        "--recipe",
        TINY_RECIPE,
        *secret_settings(),
        "--input",
        rows,
        "--output",
        tmp_path / "scored.jsonl",
        "--quiet",
    )
    assert result.code == 0, result.err[-3000:]
    assert "keyed reward: authToken <redacted>" in result.out + result.err
    assert leaked(result.out + result.err) == [] and grep_secrets(tmp_path, list(SECRETS.values())) == []


def test_validate_and_eval_judge_reports_hold_no_secret(tmp_path, capsys, reward_module):
    data = REPO / "tests" / "data" / "validate" / "processbench_format.jsonl"
    recipe = [
        "--recipe",
        REPO / "recipes" / "gsm8k_trace.yaml",
        "--set",
        "rewards.trace.tagger=cues",
        "--set",
        "rewards.first_error.backend=arithmetic",
        *secret_settings(),
    ]
    result = cli(capsys, "validate", *recipe, "--data", data, "--output-dir", tmp_path / "validate", "--quiet")
    assert result.code == 0, result.err[-3000:]
    judged = cli(capsys, "eval-judge", *recipe, "--data", data, "--output-dir", tmp_path / "judge")
    assert judged.code == 0, judged.err[-3000:]
    assert json.loads((tmp_path / "validate" / "report.json").read_text())["overrides"]  # written, redacted
    assert leaked(result.out + result.err + judged.out + judged.err) == []
    assert grep_secrets(tmp_path, list(SECRETS.values())) == []


def test_evaluate_report_holds_no_secret(tmp_path, capsys, monkeypatch, reward_module):
    monkeypatch.setattr(
        ev, "generate_completions", lambda source, prompts, *a, **k: (["#### 1"] * len(prompts), "transformers")
    )
    result = cli(
        capsys,
        "evaluate",
        "--recipe",
        TINY_RECIPE,
        "--set",
        "rewards.trace=false",
        *secret_settings(),
        "--model",
        "procrl:tiny-qwen2",
        "--limit",
        "2",
        "--output-dir",
        tmp_path / "rep",
    )
    assert result.code == 0, result.err[-3000:]
    assert "keyed reward: authToken <redacted>" in result.out and (tmp_path / "rep" / "report.json").is_file()
    assert leaked(result.out + result.err) == [] and grep_secrets(tmp_path, list(SECRETS.values())) == []


def test_training_with_wandb_writes_and_prints_no_secret_in_any_form(tmp_path):
    """One step with W&B offline: the run's files (training_args.bin of the top and the checkpoint,
    recipe.yaml, the lock's record), W&B's run file (config, the recorded command line, the
    console it copies: the reward prints its settings), stdout and stderr. The trainer section is
    given whole as a YAML mapping holding hub_token (--set 'trainer={..., hub_token: ...}')."""
    (tmp_path / "secret_reward.py").write_text(REWARD_MODULE)
    trainer = (
        "trainer={algorithm: grpo, learning_rate: 0.001, num_generations: 4, per_device_train_batch_size: 4, "
        "max_completion_length: 8, max_steps: 1, save_steps: 1, logging_steps: 1, bf16: false, beta: 0.0, "
        f"seed: 0, report_to: wandb, hub_token: {SECRETS['flow']}}}"
    )
    out = tmp_path / "run"
    done = run_command(
        [*procrl(), "train", TINY_RECIPE, "--output-dir", out, "--set", trainer, *secret_settings()],
        tmp_path,
        PYTHONPATH=f"{tmp_path}:{REPO}",
    )
    assert done.returncode == 0, done.output
    wandb_files = list(tmp_path.rglob("offline-run-*/run-*.wandb"))
    assert wandb_files and (out / "checkpoint-1" / "training_args.bin").is_file()
    assert b"keyed reward: authToken <redacted>" in wandb_files[0].read_bytes()  # its console copy
    assert b"--set=trainer.hub_token=<redacted>" in wandb_files[0].read_bytes()  # the command line it recorded
    assert grep_secrets(tmp_path, list(SECRETS.values())) == []
    assert leaked(done.stdout + done.stderr) == []
    import torch

    args = torch.load(out / "training_args.bin", weights_only=False)
    assert args.hub_token is None and args.max_steps == 1
    assert Path(out / ".procrl-folder.json").is_file()


def test_the_wandb_completions_table_is_redacted():
    """A completion that quotes a credential (a prompt can hold one) reaches W&B's completions
    table through the one redaction."""
    import wandb

    from procrl.observe.callback import DiagnosticsCallback

    callback = DiagnosticsCallback({"accuracy": "accuracy"})
    callback._window.rows.append({"completion": "fetch https://ann:hunter2secret@data.example/x first", "reward": 1.0})
    table = callback._wandb_payload(wandb, {}, plots=True, step=3)["train/diagnostics/completions"]
    cells = [str(cell) for row in table.data for cell in row]
    assert not any("hunter2secret" in cell for cell in cells) and any("data.example" in cell for cell in cells)


def test_score_rows_carry_no_secret_in_a_rewards_error(tmp_path, capsys, monkeypatch):
    """A reward's exception quotes a secret of the recipe's settings and one of the row (a URL
    with credentials in the question): ``diagnostics.<name>.error`` of the written rows is
    redacted, as evaluate's and validate's reports are."""
    (tmp_path / "quoting_reward.py").write_text(
        "def quoting(completions, prompts=None, apiKey=None, **kwargs):\n"
        "    raise ValueError(f'cannot reach judge with {apiKey}; question was {prompts[0]}')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    rows = tmp_path / "rows.jsonl"
    question = "Fetch https://bob:ROWSECRET_r1@data.example/x. What is 1+1?"
    rows.write_text(json.dumps({"question": question, "completion": "1+1=2 #### 2", "answer": "2"}) + "\n")
    result = cli(
        capsys,
        "score",
        "--recipe",
        TINY_RECIPE,
        "--set",
        "rewards.quoting={type: 'quoting_reward:quoting', weight: 0.1, apiKey: RECIPESECRET_k1}",
        "--input",
        rows,
        "--output",
        tmp_path / "scored.jsonl",
        "--quiet",
    )
    assert result.code == 0, result.err[-3000:]
    written = json.loads((tmp_path / "scored.jsonl").read_text())
    error = written["diagnostics"]["quoting"]["error"]
    assert "cannot reach judge with <redacted>" in error, error
    assert [s for s in ("RECIPESECRET_k1", "ROWSECRET_r1") if s in (tmp_path / "scored.jsonl").read_text()] == []
    assert "RECIPESECRET_k1" not in result.out + result.err and "ROWSECRET_r1" not in result.out + result.err


def test_files_written_into_a_run_by_trl_follow_the_rules_of_the_run(tmp_path):
    """One step with W&B offline and TRL's completion logging. A reward plants ``README.md`` in the
    output dir as a link to a file outside it before the checkpoint is saved: TRL's model card
    (huggingface_hub's ``RepoCard.save``) replaces the link and never writes through it. The
    registered secret ``trainer.hub_token`` also occurs in the training questions: TRL's
    ``completions/*.parquet`` and W&B's completions table hold it redacted."""
    secret = "HUBSECRET_in_question_7q"
    outside = tmp_path / "elsewhere" / "notes.md"
    outside.parent.mkdir()
    outside.write_text("the user's notes")
    out = tmp_path / "run"
    (tmp_path / "planter.py").write_text(
        "import os\n\n"
        "def plant(completions, link=None, target=None, **kwargs):\n"
        "    if not os.path.lexists(link):\n"
        "        os.symlink(target, link)\n"
        "    return [0.0 for _ in completions]\n"
    )
    data = tmp_path / "data" / "train.jsonl"
    data.parent.mkdir()
    data.write_text(
        "".join(
            json.dumps({"question": f"The key {secret} opens {n} doors and {n} more. How many?", "answer": 2 * n})
            + "\n"
            for n in range(1, 9)
        )
    )
    done = run_command(
        [
            *procrl(),
            "train",
            TINY_RECIPE,
            "--output-dir",
            out,
            *[
                "--set",
                "trainer.max_steps=1",
                "--set",
                "trainer.save_steps=1",
                "--set",
                "trainer.max_completion_length=8",
            ],
            *["--set", "trainer.report_to=wandb", "--set", "trainer.log_completions=true"],
            *["--set", f"data.dataset={data}", f"--set=trainer.hub_token={secret}"],
            "--set",
            f"rewards.plant={{type: 'planter:plant', weight: 0.1, link: '{out / 'README.md'}', target: '{outside}'}}",
        ],
        tmp_path,
        PYTHONPATH=f"{tmp_path}:{REPO}",
    )
    assert done.returncode == 0, done.output
    assert outside.read_text() == "the user's notes"
    assert not (out / "README.md").is_symlink() and "model" in (out / "README.md").read_text().lower()
    parquets = list(out.rglob("completions_*.parquet"))
    assert parquets, sorted(p.name for p in out.rglob("*"))
    import pandas

    prompts = " ".join(str(value) for value in pandas.read_parquet(parquets[0])["prompt"])
    assert "<redacted> opens" in prompts and secret not in prompts
    runs = list(tmp_path.rglob("offline-run-*"))
    assert runs and list(runs[0].rglob("*.wandb"))
    assert grep_secrets(out, [secret]) == [] and [found for run in runs for found in grep_secrets(run, [secret])] == []
    assert secret not in done.stdout + done.stderr


def test_accelerate_launchs_own_error_line_carries_no_secret(tmp_path):
    """``accelerate launch RECIPE --set trainer.hub_token=X`` when its rank fails: accelerate's own
    CalledProcessError, printed by the launcher process, names the command line; its console is
    redacted as procrl's is. (The rank fails on a user's folder as its output dir.)"""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    secret = "ACCELSECRET_z9k"
    done = run_command(
        [
            *accelerate(),
            "launch",
            "--num_processes",
            "1",
            "--cpu",
            TINY_RECIPE,
            "--output-dir",
            mine,
            "--set",
            f"trainer.hub_token={secret}",
        ],
        tmp_path,
    )
    assert done.returncode != 0
    assert "CalledProcessError" in done.output and "trainer.hub_token=<redacted>" in done.output, done.output[-3000:]
    assert secret not in done.output
