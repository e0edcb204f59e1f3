"""Sentence segmentation with no compiled stack: procrl's own ``rules`` splitter is the default on
every machine, spaCy is an option a recipe asks for, and a splitter that cannot run stops a command
in one line instead of scoring every completion as having no steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from procrl.core import text
from procrl.core.config import ConfigError
from tests.helpers.cli import assert_one_line_error, cli

REPO = Path(__file__).resolve().parent.parent
CPU_RECIPE = REPO / "recipes" / "gsm8k_tiny_cpu.yaml"


@pytest.fixture(autouse=True)
def _rules_after():
    yield
    text.use_sentence_splitter("rules")


def _sentences(completion: str) -> list[str]:
    return [s.text for s in text.segment(completion).sentences]


# --- the rules splitter on how models write, hand-checked --------------------------------------------


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # plain prose, and a decimal, money and an abbreviation that do not end a sentence
        (
            "He buys 2.5 kg for $3.50. That is 7 dollars, e.g. a lot.",
            ["He buys 2.5 kg for $3.50.", "That is 7 dollars, e.g. a lot."],
        ),
        # a variable or LaTeX before the period ends the sentence (spaCy kept these together)
        ("Let the price be x. Then 2x = 10.", ["Let the price be x.", "Then 2x = 10."]),
        ("So $a=2$. Then $b=3$.", ["So $a=2$.", "Then $b=3$."]),
        # closing marks stay with their sentence; the next starts at its bracket or emphasis
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("The total is **12.** Next we add 3.", ["The total is **12.**", "Next we add 3."]),
        ("That is 5 apples. (See the first step.)", ["That is 5 apples.", "(See the first step.)"]),
        # an ellipsis continues; ! and ? end; a lower-case continuation is merged back
        ("Hmm... Let me check! Is it 4? yes it is.", ["Hmm... Let me check!", "Is it 4? yes it is."]),
        # a period glued between a lower- and an upper-case letter, and times of day
        (
            "We add them.Then we halve it at 11 a.m. - 2 hours.",
            ["We add them.", "Then we halve it at 11 a.m. - 2 hours."],
        ),
        # a sentence of marks only ("\\]") belongs to the one before it
        ("So 4 + 4 = 8. \\]", ["So 4 + 4 = 8. \\]"]),
        # CJK stops end a sentence with no space after them
        ("答案是5。所以是5。", ["答案是5。", "所以是5。"]),
    ],
)
def test_rules_splitter_on_hand_written_text(completion, expected):
    assert _sentences(completion) == expected


def test_rules_is_the_default_whatever_is_installed():
    assert text.sentence_splitter() == "rules"
    from procrl.recipe import load_recipe

    assert load_recipe(str(CPU_RECIPE), scoring=True).segmentation == "rules"
    assert text.sentence_splitter() == "rules"


@pytest.mark.parametrize(
    "run", ["!" * 200_000 + "x", ")" * 200_000 + ".", "." * 200_000 + "A", "a." * 100_000, "? " * 100_000]
)
def test_rules_splitter_reads_long_runs_of_marks_as_one_sentence(run):
    """Runs that would make a backtracking pattern quadratic (each alternative starts only at the
    first mark of a run; timings: benchmarks/hostile_text_bench.py) are read whole, as one sentence."""
    segmentation = text.segment(run + "\n#### 1")
    assert not segmentation.too_long
    assert [(s.start, s.end) for s in segmentation.sentences] == [(0, len(run.rstrip()))]


def test_spacy_and_rules_agree_on_gsm8k_gold_steps():
    """On GSM8K's gold solutions the two splitters give the same steps (sentences differ only where
    spaCy kept a sentence ending in a variable or an abbreviation together)."""
    pytest.importorskip("spacy", reason="the spacy extra is not installed")
    gsm8k = REPO.parent / "shared" / "data" / "gsm8k" / "test.jsonl"
    if not gsm8k.exists():
        pytest.skip("GSM8K is not in ../shared/data")
    completions = [json.loads(line)["answer"] for line in gsm8k.read_text().splitlines()[:300]]
    text.use_sentence_splitter("spacy")
    with_spacy = [[(s.start, s.end) for s in text.segment(c).steps] for c in completions]
    text.use_sentence_splitter("rules")
    with_rules = [[(s.start, s.end) for s in text.segment(c).steps] for c in completions]
    assert with_rules == with_spacy


# --- a splitter that cannot run is an error ------------------------------------------------------------


def _no_spacy_env(tmp_path: Path) -> dict[str, str]:
    """An environment where ``import spacy`` fails, as where it is absent or its compiled stack is
    broken: a package named spacy that raises ImportError comes first on the path."""
    shim = tmp_path / "no_spacy" / "spacy"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('spacy is blocked for this test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim.parent), str(REPO)]), "OMP_NUM_THREADS": "1"}
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _rows(tmp_path: Path) -> Path:
    """Real model solutions (MR-GSM8K's sample) and hand-written ones, as `procrl score` reads them."""
    rows = []
    sample = json.loads((REPO / "tests" / "data" / "validate" / "mr_gsm8k_sample.json").read_text())
    for record in sample[:6]:
        steps = record["model_output_steps"]
        completion = "\n".join(steps) if isinstance(steps, list) else str(steps)
        rows.append(
            {"question": record["question"], "completion": completion, "answer": str(record["ground_truth_answer"])}
        )
    rows.append(
        {"question": "3 bags of 4 apples?", "completion": "Each bag has 4. So 3 x 4 = 12.\n#### 12", "answer": "12"}
    )
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score(env, rows: Path, output: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "procrl", "score", "--recipe", str(CPU_RECIPE), "--input", str(rows)]
    return subprocess.run(
        [*command, "--output", str(output), "--quiet", *extra], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_score_without_spacy_gives_the_same_scores(tmp_path):
    env = _no_spacy_env(tmp_path)
    blocked = subprocess.run([sys.executable, "-c", "import spacy"], env=env, capture_output=True, text=True)
    assert blocked.returncode != 0 and "blocked" in blocked.stderr
    imported = subprocess.run([sys.executable, "-c", "import procrl, procrl.rewards.mix"], env=env, capture_output=True)
    assert imported.returncode == 0, imported.stderr
    rows = _rows(tmp_path)
    without = _score(env, rows, tmp_path / "without.jsonl")
    assert without.returncode == 0, without.stderr[-2000:]
    plain_env = {**env, "PYTHONPATH": str(REPO)}
    with_spacy_installed = _score(plain_env, rows, tmp_path / "with.jsonl")
    assert with_spacy_installed.returncode == 0, with_spacy_installed.stderr[-2000:]
    scored = [json.loads(line) for line in (tmp_path / "without.jsonl").read_text().splitlines()]
    assert scored == [json.loads(line) for line in (tmp_path / "with.jsonl").read_text().splitlines()]
    # real steps were read: no row scored as having none
    assert all(row["steps"] for row in scored)
    assert all(row["rewards"]["trace"] > 0.5 for row in scored), [row["rewards"] for row in scored]


def test_score_with_spacy_asked_for_and_absent_stops_in_one_line(tmp_path):
    env = _no_spacy_env(tmp_path)
    output = tmp_path / "out.jsonl"
    result = _score(env, _rows(tmp_path), output, "--set", "segmentation=spacy", "--set", "rewards.trace.tagger=cues")
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("procrl: error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "segmentation" in errors[0] and "spacy" in errors[0] and "procrl[spacy]" in errors[0]
    assert not output.exists()


def test_a_broken_splitter_stops_score_before_anything_is_written(tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the splitter is broken")

    monkeypatch.setattr(text, "_rule_sentences_in_line", broken)
    output = tmp_path / "out.jsonl"
    result = cli(
        capsys,
        "score",
        "--recipe",
        CPU_RECIPE,
        "--set",
        "rewards.trace.tagger=cues",
        "--input",
        _rows(tmp_path),
        "--output",
        output,
        "--quiet",
    )
    line = assert_one_line_error(result, "segmentation", "rules", "the splitter is broken")
    assert not output.exists(), line


def test_a_splitter_that_finds_nothing_is_refused(monkeypatch):
    monkeypatch.setattr(text, "_rule_sentences_in_line", lambda text_, start, end: [])
    with pytest.raises(ConfigError, match="found .* steps and 0 sentences"):
        text.check_segmentation()
    from procrl.rewards.mix import RewardMix
    from procrl.rewards.spec import parse_rewards

    with pytest.raises(ConfigError, match="segmentation"):
        RewardMix(parse_rewards({"accuracy": {"type": "accuracy"}}, "rewards"))


def test_unknown_splitter_is_a_recipe_error():
    from procrl.recipe import parse_recipe

    raw = {"recipe": "procrl/v1", "rewards": {"accuracy": {"type": "accuracy"}}, "segmentation": "spacey"}
    with pytest.raises(ConfigError, match=r"segmentation: expected one of \['rules', 'spacy'\], got 'spacey'.*spacy"):
        parse_recipe(raw, scoring=True)
    assert text.sentence_splitter() == "rules"
