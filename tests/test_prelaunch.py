"""Launching a recipe the machine can't run: the pre-launch checks (procrl/launch/prelaunch.py) end it
before any rank starts, one line per problem naming the recipe key, exit status 2, from
``procrl train`` and from inside ``accelerate launch`` (the start-up hook); the Hub is asked
through huggingface_hub against a local stand-in (the real Hub is external), never when
HF_HUB_OFFLINE is set; ``procrl check --load-models`` fails naming the component; a rank that
fails later prints one procrl line before its traceback; the plan counts the reward models."""

from __future__ import annotations

import json
import sysconfig
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from procrl.launch import cli
from procrl.launch.prelaunch import PrelaunchError, check_before_launch, prelaunch_problems
from procrl.recipe import load_recipe
from procrl.recipe.findable import Hub
from tests.helpers.launch import REPO, TINY_RECIPE, accelerate, procrl, run_command

TRACE_RECIPE = REPO / "recipes" / "gsm8k_trace.yaml"


def _vllm_installed() -> bool:
    from trl.import_utils import is_vllm_available

    return is_vllm_available()


def _keys(problems) -> list[str]:
    return [p.key for p in problems]


# --- the flagship recipe on a machine without GPU, vLLM or Hub -----------------------------------


def _assert_one_line_per_problem(result, keys):
    assert result.returncode == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr and result.stdout.strip() == "", result.output
    assert all(line.startswith("procrl: error: ") for line in lines), result.output
    for key in keys:
        assert any(line.startswith(f"procrl: error: {key}: ") for line in lines), (key, result.output)
    assert lines[-1] == f"procrl: error: {len(lines) - 1} problems above; nothing was started"


EXPECTED = ["launch.config_file", "model.name_or_path", "data.dataset", "rewards.trace.tagger"]


def test_procrl_train_of_the_7b_recipe_here_ends_in_one_line_per_problem(tmp_path):
    result = run_command(
        [*procrl(), "train", TRACE_RECIPE, "--output-dir", tmp_path / "out"], tmp_path, HF_HUB_OFFLINE="1"
    )
    _assert_one_line_per_problem(result, EXPECTED + ([] if _vllm_installed() else ["trainer.use_vllm"]))
    assert not (tmp_path / "out").exists()


def test_accelerate_launch_of_the_7b_recipe_is_checked_in_the_accelerate_process(tmp_path):
    """The start-up hook runs the checks inside `accelerate launch` itself: no process is started,
    no accelerate traceback follows."""
    pth = Path(sysconfig.get_paths()["purelib"]) / "zzz-procrl-recipe-hook.pth"
    if "accelerate" not in pth.read_text():
        pytest.skip("this venv's start-up hook predates the accelerate check: rerun scripts/setup.sh")
    result = run_command(
        [*accelerate(), "launch", TRACE_RECIPE, "--output-dir", tmp_path / "out"], tmp_path, HF_HUB_OFFLINE="1"
    )
    _assert_one_line_per_problem(result, EXPECTED + ([] if _vllm_installed() else ["trainer.use_vllm"]))
    assert "were not passed to `accelerate launch`" not in result.stderr  # accelerate never got that far


# --- each check, one line each --------------------------------------------------------------------


def test_vllm_must_be_importable_when_used():
    recipe = load_recipe(TINY_RECIPE, ["trainer.use_vllm=true"])
    problems = prelaunch_problems(recipe, launching=False, gpus=1)
    if _vllm_installed():
        assert problems == []
    else:
        assert _keys(problems) == ["trainer.use_vllm"] and "pip install 'procrl[vllm]'" in problems[0].message
    if _vllm_installed():
        assert _keys(prelaunch_problems(recipe, launching=False, gpus=0)) == ["trainer.use_vllm"]


def test_colocated_vllm_needs_a_gpu_unless_vllm_is_a_cpu_build(monkeypatch):
    import importlib

    import procrl.launch.prelaunch as prelaunch

    monkeypatch.setattr(importlib.import_module("trl.import_utils"), "is_vllm_available", lambda *a, **k: True)
    recipe = load_recipe(TINY_RECIPE, ["trainer.use_vllm=true", "trainer.vllm_mode=colocate"])
    for device_type, expected in (("cuda", ["trainer.use_vllm"]), (None, ["trainer.use_vllm"]), ("cpu", [])):
        monkeypatch.setattr(prelaunch, "vllm_device_type", lambda d=device_type: d)
        assert _keys(prelaunch_problems(recipe, launching=False, gpus=0)) == expected, device_type
        assert prelaunch_problems(recipe, launching=False, gpus=1) == []
    server = load_recipe(TINY_RECIPE, ["trainer.use_vllm=true", "trainer.vllm_mode=server"])
    monkeypatch.setattr(prelaunch, "vllm_device_type", lambda: "cuda")
    assert prelaunch_problems(server, launching=False, gpus=0) == []  # the engine runs elsewhere


def test_gpus_against_the_launch(tmp_path):
    tiny = load_recipe(TINY_RECIPE)
    # more processes than GPUs, from the command line or from the recipe
    problems = prelaunch_problems(tiny, ["--num_processes", "4"], gpus=2)
    assert _keys(problems) == ["--num_processes"] and "this machine has 2 GPU(s)" in problems[0].message
    eight = load_recipe(TINY_RECIPE, ["launch.num_processes=8"])
    assert _keys(prelaunch_problems(eight, [], gpus=4)) == ["launch.num_processes"]
    assert prelaunch_problems(eight, [], gpus=8) == []
    # two machines of 4 GPUs: 4 per machine is fine
    assert prelaunch_problems(eight, ["--num_machines", "2"], gpus=4) == []
    # no GPU: a GPU distributed type from the recipe's config file is refused ...
    zero3 = load_recipe(TINY_RECIPE, ["launch.config_file=launch/accelerate/zero3.yaml", "launch.num_processes=2"])
    problems = prelaunch_problems(zero3, [], gpus=0)
    assert _keys(problems) == ["launch.config_file"] and "DEEPSPEED" in problems[0].message
    # ... CPU ranks asked for on the command line run (what the CPU tests and the README do)
    assert (
        prelaunch_problems(zero3, ["--config_file", "launch/accelerate/zero2.yaml", "--num_processes", "2"], gpus=0)
        == []
    )
    assert prelaunch_problems(tiny, ["--multi_gpu", "--num_processes", "2"], gpus=0) == []
    # a launch section without a config file is plain DDP, gloo on CPU
    assert prelaunch_problems(load_recipe(TINY_RECIPE, ["launch.num_processes=2"]), [], gpus=0) == []
    # an accelerate config that says use_cpu
    cpu = tmp_path / "cpu.yaml"
    cpu.write_text("distributed_type: MULTI_GPU\nuse_cpu: true\nnum_processes: 2\n")
    assert prelaunch_problems(load_recipe(TINY_RECIPE, [f"launch.config_file={cpu}"]), [], gpus=0) == []


def test_models_and_data_must_be_findable(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    recipe = load_recipe(
        TINY_RECIPE,
        [
            f"model.name_or_path={tmp_path / 'no-model'}",
            f"data.dataset={tmp_path / 'missing.jsonl'}",
            "rewards.trace.tagger=someone/missing-tagger",
            "rewards.nli={type: receval_correctness, nli_model: someone/missing-nli}",
            "rewards.judge={type: first_error, backend: prm, model: someone/missing-prm}",
            "rewards.served={type: first_error, backend: openai, model: judge}",  # a server, not a download
        ],
    )
    problems = prelaunch_problems(recipe, launching=False)
    assert _keys(problems) == [
        "model.name_or_path",
        "data.dataset",
        "rewards.trace.tagger",
        "rewards.nli.nli_model",
        "rewards.judge.model",
    ]
    assert problems[0].message == f"{tmp_path / 'no-model'}: no such file or directory"
    assert problems[1].message == f"file not found: {tmp_path / 'missing.jsonl'}"
    assert (
        "HF_HUB_OFFLINE is set" in problems[2].message and "hf download someone/missing-tagger" in problems[2].message
    )
    with pytest.raises(PrelaunchError) as error:
        check_before_launch(recipe, launching=False)
    lines = str(error.value).split("\nprocrl: error: ")
    assert len(lines) == 6 and lines[-1] == "5 problems above; nothing was started"
    # what exists is found: a local model directory, a local data file, procrl's embedded model
    data = tmp_path / "rows.jsonl"
    data.write_text('{"question": "q", "answer": "1"}\n')
    (tmp_path / "model").mkdir()
    assert (
        prelaunch_problems(
            load_recipe(TINY_RECIPE, [f"data.dataset={data}", f"model.tokenizer={tmp_path / 'model'}"]), launching=False
        )
        == []
    )


def test_offline_never_asks_the_hub(monkeypatch):
    from huggingface_hub import HfApi

    def forbidden(*args, **kwargs):
        raise AssertionError("a request was sent although HF_HUB_OFFLINE is set")

    monkeypatch.setattr(HfApi, "repo_info", forbidden)
    monkeypatch.setattr(HfApi, "auth_check", forbidden)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    problems = prelaunch_problems(load_recipe(TRACE_RECIPE), launching=False, gpus=8)
    assert "model.name_or_path" in _keys(problems)


class _HubDouble(BaseHTTPRequestHandler):
    """The Hub's answers for repo_info / auth_check (the real Hub is an external service)."""

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split("?")[0]
        for kind in ("models", "datasets"):
            prefix = f"/api/{kind}/"
            if path.startswith(prefix):
                repo = path[len(prefix) :]
                break
        else:
            return self._send(404, {"error": "not found"}, "RepoNotFound")
        if repo in ("org/present", "org/gated"):
            return self._send(200, {"id": repo, "sha": "0" * 40, "gated": "manual" if repo == "org/gated" else False})
        if repo == "org/gated/auth-check":
            return self._send(403, {"error": "Access to this repository is restricted"}, "GatedRepo")
        if repo.startswith("org/present/revision/"):
            return self._send(404, {"error": "Invalid rev id"}, "RevisionNotFound")
        return self._send(404, {"error": "Repository not found"}, "RepoNotFound")

    def _send(self, status, body, error_code=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if error_code:
            self.send_header("X-Error-Code", error_code)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub_double(monkeypatch):
    from huggingface_hub import constants

    server = ThreadingHTTPServer(("127.0.0.1", 0), _HubDouble)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    yield
    server.shutdown()
    server.server_close()


def test_online_the_hub_is_asked_through_huggingface_hub(hub_double, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: every id goes to the Hub
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    recipe = load_recipe(
        TINY_RECIPE,
        [
            "model.name_or_path=org/present",
            "model.revision=v9",
            "data.dataset=org/present",
            "rewards.trace.tagger=org/gated",
            "rewards.nli={type: receval_correctness, nli_model: org/typo}",
        ],
    )
    problems = {p.key: p.message for p in prelaunch_problems(recipe, launching=False)}
    assert problems["model.name_or_path"] == "revision 'v9' of 'org/present' not found on the Hugging Face Hub"
    assert "data.dataset" not in problems  # found
    assert problems["rewards.trace.tagger"].startswith("model 'org/gated' is gated on the Hugging Face Hub")
    assert problems["rewards.nli.nli_model"].startswith("model 'org/typo' not found on the Hugging Face Hub")


def test_unreachable_hub_is_one_line_per_id_and_asked_once(monkeypatch, tmp_path):
    from huggingface_hub import HfApi, constants

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    calls = []
    real = HfApi.repo_info
    monkeypatch.setattr(HfApi, "repo_info", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    hub = Hub()
    assert "the Hub is unreachable" in hub.problem("org/a", "model", None)
    assert "the Hub is unreachable" in hub.problem("org/b", "dataset", None)
    assert len(calls) == 1  # no second timeout


# --- check --load-models, a rank failing after the start, the plan ------------------------------


def test_check_load_models_exits_non_zero_naming_the_component(tmp_path, capsys):
    code = cli.main(
        [
            "check",
            str(TINY_RECIPE),
            "--load-models",
            "--set",
            f"rewards.trace.tagger={tmp_path / 'no-tagger'}",
            "--set",
            f"rewards.judge={{type: first_error, backend: hf, model: {tmp_path / 'no-judge'}}}",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2
    errors = [line for line in captured.err.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 2, captured.err
    assert errors[0].startswith(f"procrl: error: rewards.trace: failed to load or run {tmp_path / 'no-tagger'} (")
    assert errors[1].startswith(f"procrl: error: rewards.judge: failed to load or run {tmp_path / 'no-judge'} (")
    # without --load-models those components are not loaded, and check passes
    assert cli.main(["check", str(TINY_RECIPE), "--set", f"rewards.trace.tagger={tmp_path / 'no-tagger'}"]) == 0


def test_a_rank_failing_after_the_start_prints_one_procrl_line_first(tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()  # exists, so the pre-launch checks pass; loading it fails inside the run
    result = run_command(
        [*procrl(), "train", TINY_RECIPE, "--output-dir", tmp_path / "out", "--set", f"model.name_or_path={empty}"],
        tmp_path,
    )
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("procrl: error: "))
    assert lines[first].startswith("procrl: error: training failed: ") and "(traceback below)" in lines[first], (
        result.output
    )
    assert "Traceback (most recent call last):" in lines[first + 1 :], result.output


@pytest.mark.slow
def test_two_ranks_failing_after_the_start_each_print_one_procrl_line(tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    result = run_command(
        [
            *accelerate(),
            "launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            TINY_RECIPE,
            "--output-dir",
            tmp_path / "out",
            "--set",
            f"model.name_or_path={empty}",
        ],
        tmp_path,
    )
    assert result.returncode != 0
    for rank in (0, 1):
        assert f"procrl: error: rank {rank} failed: " in result.stderr, result.output


def test_plan_counts_reward_models_from_their_safetensors(tmp_path):
    from transformers import AutoModelForSequenceClassification

    from procrl.recipe.memory import reward_model_memory
    from procrl.recipe.plan import plan
    from procrl.rewards.scorers.nli import write_tiny_nli_model

    directory = write_tiny_nli_model(str(tmp_path / "nli"))
    parameters = AutoModelForSequenceClassification.from_pretrained(directory).num_parameters()
    recipe = load_recipe(
        TINY_RECIPE, [f"rewards.nli={{type: receval_correctness, nli_model: {directory}, dtype: bfloat16}}"]
    )
    size, text = reward_model_memory(recipe)["nli"]
    assert size == parameters * 2 and f"{parameters:,}" in text and "bfloat16" in text and "whole on every rank" in text
    values = plan(recipe)
    listed = (
        values["memory_per_gpu"]["reward_models"]
        if isinstance(values["memory_per_gpu"], dict)
        else (values["reward_models_per_gpu"])
    )
    assert listed["nli"] == text


def test_accelerate_launch_of_a_plain_script_imports_no_procrl(tmp_path):
    """The hook looks at accelerate's .yaml arguments (here a data file, no recipe marker) and
    imports nothing of procrl, in the accelerate process or the script's."""
    pth = Path(sysconfig.get_paths()["purelib"]) / "zzz-procrl-recipe-hook.pth"
    if "accelerate" not in pth.read_text():
        pytest.skip("this venv's start-up hook predates the accelerate check: rerun scripts/setup.sh")
    script = tmp_path / "script.py"
    script.write_text("import sys\nprint('ran', sys.argv[1])\n")
    data = tmp_path / "data.yaml"
    data.write_text("x: 1\n")
    result = run_command(
        [*accelerate(), "launch", "--cpu", "--num_processes", "1", script, data], tmp_path, PYTHONPROFILEIMPORTTIME="1"
    )
    assert result.returncode == 0 and f"ran {data}" in result.stdout, result.output
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "procrl_recipe_hook" in modules and "accelerate" in modules  # the hook looked, in accelerate's process
    assert not {m for m in modules if m == "procrl" or m.startswith("procrl.")}
