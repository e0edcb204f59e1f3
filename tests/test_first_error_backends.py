"""The first-error backends describe themselves: each one's settings hold exactly the options it
reads, an option of another backend is refused at recipe validation naming the backends that read
it, and ``--set rewards.<name>.backend=...`` switches a shipped recipe to any backend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.launch.cli import main
from procrl.recipe import load_recipe
from procrl.rewards import RewardBatch, parse_rewards
from procrl.rewards.first_error import FirstErrorReward
from procrl.rewards.judges.registry import BACKENDS, backend_settings, options_by_backend

REPO = Path(__file__).resolve().parent.parent

EVERY_BACKEND = {"backend", "penalty", "no_steps_score"}
LLM = {"model", "reference", "categories", "max_tokens", "temperature"}
IN_PROCESS = {"model", "batch_size", "dtype", "trust_remote_code"}
# what each backend reads, written out by hand (registry order: the order refusals name them in)
READS = {
    "openai": EVERY_BACKEND
    | LLM
    | {"base_url", "api_key_env", "concurrency", "timeout_s", "max_retries", "backoff_s", "cache_size"},
    "hf": EVERY_BACKEND | LLM | IN_PROCESS | {"gguf_file"},
    "prm": EVERY_BACKEND | IN_PROCESS | {"threshold", "step_separator"},
    "arithmetic": EVERY_BACKEND | {"unverified_score"},
    "reference": EVERY_BACKEND
    | {"unverified_score", "max_depth", "transformations", "off_path", "leap", "check_arithmetic", "rules_off"},
}
NEEDS = {"openai": {"model": "judge"}, "hf": {"model": "/nonexistent/judge"}, "prm": {"model": "/nonexistent/prm"}}
FOREIGN = [(backend, key) for backend in READS for key in sorted(set().union(*READS.values()) - READS[backend])]


def test_each_backend_accepts_exactly_the_options_it_reads():
    assert list(BACKENDS) == list(READS)
    assert {name: set(options) for name, options in options_by_backend().items()} == READS
    assert {name: len(options) for name, options in READS.items()} == {
        "openai": 15,
        "hf": 12,
        "prm": 9,
        "arithmetic": 4,
        "reference": 10,
    }
    assert len(set().union(*READS.values())) == 28


def test_a_reference_backend_with_an_openai_timeout_is_refused_in_one_line():
    with pytest.raises(ConfigError) as refused:
        parse_rewards({"judge": {"type": "first_error", "backend": "reference", "timeout_s": 5}})
    assert str(refused.value) == (
        "rewards.judge.timeout_s: backend 'reference' does not read timeout_s; only backend 'openai' does"
    )


@pytest.mark.parametrize(("backend", "key"), FOREIGN)
def test_every_option_of_another_backend_is_refused_naming_the_backends_that_read_it(backend, key):
    readers = [name for name, options in READS.items() if key in options]
    only = (
        f"only backend {readers[0]!r} does"
        if len(readers) == 1
        else f"only backends {', '.join(map(repr, readers))} do"
    )
    with pytest.raises(ConfigError) as refused:
        parse_rewards({"judge": {"type": "first_error", "backend": backend, **NEEDS.get(backend, {}), key: 5}})
    assert str(refused.value) == f"rewards.judge.{key}: backend {backend!r} does not read {key}; {only}"


def test_the_refusal_comes_at_check_before_any_model_loads(capsys):
    recipe = str(REPO / "recipes" / "gsm8k_judge.yaml")  # an openai judge on a server that is not running
    code = main(
        [
            "check",
            recipe,
            "--set",
            "rewards.first_error.backend=prm",
            "--set",
            "rewards.first_error.model=/nonexistent/prm",
            "--set",
            "rewards.first_error.max_tokens=64",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "procrl: error: rewards.first_error.max_tokens: backend 'prm' does not read max_tokens; "
        "only backends 'openai', 'hf' do"
    )


def _first_error_recipes() -> list[Path]:
    paths = sorted((REPO / "recipes").glob("*.yaml"))
    return [p for p in paths if any(s.type == "first_error" for s in load_recipe(p).rewards)]


@pytest.mark.parametrize("backend", list(READS))
def test_every_shipped_recipe_switches_to_every_backend_by_set(backend):
    recipes = _first_error_recipes()
    assert len(recipes) >= 6
    for path in recipes:
        names = [s.name for s in load_recipe(path).rewards if s.type == "first_error"]
        overrides = [
            f"rewards.{name}.{key}={value}"
            for name in names
            for key, value in {"backend": backend, **NEEDS.get(backend, {})}.items()
        ]
        if backend in ("arithmetic", "reference") and load_recipe(path).data.answer_kind not in (None, "number"):
            with pytest.raises(ConfigError, match="checks the calculations of numeric answers"):
                load_recipe(path, overrides)
            continue
        for spec in load_recipe(path, overrides).rewards:
            if spec.name in names:
                assert type(spec.settings) is backend_settings(backend)


def test_an_option_set_before_the_backend_is_kept_and_so_refused():
    recipe = REPO / "recipes" / "gsm8k_judge.yaml"
    switched = load_recipe(recipe, ["rewards.first_error.backend=reference"])
    assert switched.rewards[1].settings.penalty == "flat"  # the file's options that reference reads stay
    with pytest.raises(ConfigError, match=r"^rewards\.first_error\.timeout_s: backend 'reference' does not read"):
        load_recipe(recipe, ["rewards.first_error.timeout_s=5", "rewards.first_error.backend=reference"])


def _recording(settings):
    """``settings`` as an instance that records which of its fields are read."""
    reads: set[str] = set()
    names = [f.name for f in dataclasses.fields(settings)]

    class Recording(type(settings)):
        def __getattribute__(self, name):
            if name in names:
                reads.add(name)
            return object.__getattribute__(self, name)

    recording = Recording(**{name: getattr(settings, name) for name in names})
    reads.clear()
    return recording, reads


CASES = [
    "We have 3 + 4 = 7 apples.\nDoubled: 7 * 2 = 14.\n#### 14",  # worked
    "We have 3 + 4 = 8 apples.\nDoubled: 8 * 2 = 16.\n#### 16",  # one slip
    "#### 14",  # the answer alone
    "It is probably around fourteen or so.\nI think so.\n#### 14",  # hedging
]
GOLD = "Janet has 3 + 4 = <<3+4=7>>7 apples.\nDoubled: 7 * 2 = <<7*2=14>>14.\n#### 14"


@pytest.mark.parametrize("backend", list(READS))
def test_every_option_a_backend_accepts_is_read_when_it_scores(backend):
    extra = {"base_url": "http://127.0.0.1:9/v1", "max_retries": 0} if backend == "openai" else {}
    settings = parse_rewards({"judge": {"type": "first_error", "backend": backend, **NEEDS.get(backend, {}), **extra}})[
        0
    ].settings
    recording, reads = _recording(settings)
    component = FirstErrorReward(recording, name="judge")
    batch = RewardBatch.from_texts(CASES, ["Janet has 3 and 4 apples, then doubles them. How many?"] * 4, [GOLD] * 4)
    output = component.score(batch)
    assert len(output.scores) == len(CASES)
    assert reads == READS[backend]  # nothing accepted and left unread (0 such fields)


# -- a new backend is its module, one registry line and its settings class --------------------------------------------

NEW_BACKEND = '''
"""A model-free judge: the first step that repeats an earlier one word for word (padding) is the error."""

from dataclasses import dataclass
from typing import Literal

from procrl.core.config import field
from procrl.rewards.judges.protocol import Judge, Verdict
from procrl.rewards.judges.settings import ModelFreeSettings


@dataclass
class RepeatSettings(ModelFreeSettings):
    backend: Literal["repeat"] = field("repeat", help="The repeat judge.")


class RepeatJudge(Judge):
    Settings = RepeatSettings
    model_free = True
    answer_kinds = ("number",)
    note_detail = "repeated"

    @classmethod
    def from_settings(cls, settings, device="cpu"):
        return cls()

    def judge_sync(self, items):
        verdicts = []
        for item in items:
            seen = [step.strip() for step in item.steps]
            index = next((i for i, step in enumerate(seen) if step in seen[:i]), -1)
            note = seen[index] if index >= 0 else None
            verdicts.append(Verdict(index, note=note, checked_steps=len(item.steps)))
        return verdicts
'''


@pytest.fixture
def repeat_backend(tmp_path, monkeypatch):
    """The backend ``repeat`` added as a new backend is: a module, and its line in the registry."""
    (tmp_path / "repeat_judge_module.py").write_text(NEW_BACKEND)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(BACKENDS, "repeat", "repeat_judge_module:RepeatJudge")
    return "repeat"


def test_a_new_backend_needs_no_edit_outside_its_module_and_registry_line(repeat_backend):
    import sys
    from types import SimpleNamespace

    from procrl.evaluation.validate.report import validation_report
    from procrl.rewards.spec import check_answer_kind

    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from recipes_reference import first_error_tables
    finally:
        sys.path.remove(str(REPO / "scripts"))

    specs = parse_rewards({"judge": {"type": "first_error", "backend": "repeat"}})
    assert type(specs[0].settings).__name__ == "RepeatSettings"
    with pytest.raises(
        ConfigError, match=r"^rewards\.judge\.timeout_s: backend 'repeat' does not read timeout_s; only"
    ):
        parse_rewards({"judge": {"type": "first_error", "backend": "repeat", "timeout_s": 5}})
    component = FirstErrorReward(specs[0].settings, name="judge")
    texts = ["3 + 4 = 7.\n7 * 2 = 14.\n#### 14", "3 + 4 = 7.\n3 + 4 = 7.\n7 * 2 = 14.\n#### 14", "#### 14"]
    output = component.score(RewardBatch.from_texts(texts, ["q"] * 3, [GOLD] * 3))
    assert output.scores == [0.0, -1.0, -1.0]  # no repeat; a repeated step; the answer alone (no_steps_score)
    assert output.details[1]["index"] == 1 and output.details[1]["repeated"] == "3 + 4 = 7."
    assert output.details[2]["checked_steps"] == 0  # model-free: it says what it checked
    assert "unverified_fraction" in output.metrics and "no_reference_fraction" not in output.metrics
    assert (
        component.needs_model() is None
        and component.needs_network() is None
        and component.models(component.settings) == {}
    )
    with pytest.raises(
        ConfigError, match=r"^rewards\.judge\.backend: 'repeat' checks the calculations .* 'openai' or 'hf'"
    ):
        check_answer_kind("choice", specs)
    tables = first_error_tables()
    assert "| `repeat` | model-free, number answers | `unverified_score` |" in tables["rewards.first_error.backends"]
    assert "`repeat`" in tables["rewards.first_error"]

    mix = SimpleNamespace(components={"judge": component}, specs={"judge": specs[0]})  # what the report reads
    report = validation_report(mix, [], resamples=10)
    assert report["components"]["judge"]["backend"] == "repeat" and "threshold" not in report["components"]["judge"]


def _names_compared(source: str, names: set[str]) -> list[str]:
    """Lines of ``source`` listing two backend names together, or comparing something named like a backend
    or judge with one (a single ``"hf"`` is also a tagger format, ``"reference"`` a model role)."""
    import ast

    def literal_names(node) -> list[str]:
        if isinstance(node, ast.Constant) and node.value in names:
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
        return []

    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        text = lines[node.lineno - 1].strip() if hasattr(node, "lineno") else ""
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(literal_names(node)) >= 2:
            found.append(text)
        elif isinstance(node, ast.Compare) and any(literal_names(side) for side in [node.left, *node.comparators]):
            if "backend" in text or "judge" in text:
                found.append(text)
    return found


def test_no_code_outside_the_registry_compares_a_backends_name():
    names = set(BACKENDS)
    registry = REPO / "procrl" / "rewards" / "judges" / "registry.py"
    found = [
        f"{path.relative_to(REPO)}: {text}"
        for path in sorted([*(REPO / "procrl").rglob("*.py"), *(REPO / "scripts").rglob("*.py")])
        if path != registry
        for text in _names_compared(path.read_text(), names)
    ]
    assert found == []


def test_the_name_check_sees_the_comparisons_it_forbids():
    names = set(BACKENDS)
    assert _names_compared('if settings.backend == "prm":\n    pass', names) == ['if settings.backend == "prm":']
    assert _names_compared('MODEL_FREE = ("arithmetic", "reference")', names) == [
        'MODEL_FREE = ("arithmetic", "reference")'
    ]
    assert _names_compared('local = judge in ("hf", "prm")', names) == ['local = judge in ("hf", "prm")'] * 2
    assert _names_compared("if judge.model_free:\n    pass", names) == []
    assert _names_compared('if format == "hf":\n    pass', names) == []  # a tagger's format, not a backend


def test_each_shipped_backend_declares_what_it_is():
    from procrl.rewards.judges.registry import judge_class

    traits = ("model_free", "loads_model", "sends_requests", "needs_gold_solution", "reports_categories")
    declared = {
        name: {trait for trait in traits if getattr(judge_class(name), trait)}
        | ({"step_scores"} if judge_class(name).gives_step_scores else set())
        for name in BACKENDS
    }
    assert declared == {
        "openai": {"sends_requests", "reports_categories"},
        "hf": {"loads_model", "reports_categories"},
        "prm": {"loads_model", "step_scores"},
        "arithmetic": {"model_free"},
        "reference": {"model_free", "needs_gold_solution"},
    }
    kinds = {name: judge_class(name).answer_kinds for name in BACKENDS}
    assert kinds == {
        "openai": ("number", "choice", "yes_no"),
        "hf": ("number", "choice", "yes_no"),
        "prm": None,
        "arithmetic": ("number",),
        "reference": ("number",),
    }
