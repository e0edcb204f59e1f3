"""``procrl validate``: its metrics against hand-computed values, the corpus readers on fixture
rows (a real MR-GSM8K sample and hand-written rows in the other formats), label -> step mapping
by offsets, peers, bad input, and the command end to end with model-free components."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from procrl.core.config import ConfigError
from procrl.evaluation.corpora import RIGHT_FLAWED, SOUND, WRONG, read_solutions
from procrl.evaluation.validate.metrics import (
    auroc,
    bootstrap_auroc,
    boundary_agreement,
    map_label,
    processbench_metrics,
    roc_points,
    step_spans,
)
from procrl.evaluation.validate.peers import read_peer
from procrl.launch.cli import main

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "validate"
MR_GSM8K = DATA / "mr_gsm8k_sample.json"
PROCESSBENCH = DATA / "processbench_format.jsonl"
RECIPE = str(REPO / "recipes" / "gsm8k_trace.yaml")
# the arithmetic judge, as these tests were written for (the recipe's own is the reference judge,
# which gives no opinion on the hand-written rows' bare gold answers: tests/test_reference_judge.py)
CUES = ["--set", "rewards.trace.tagger=cues", "--set", "rewards.first_error.backend=arithmetic"]


# --- metrics -----------------------------------------------------------------------------------


def test_auroc_counts_ties_half():
    # pairs: 3>2, 3>1, 2=2 (half), 2>1, 2=2 (half), 2>1  -> 5 of 6
    assert auroc([3, 2, 2], [2, 1]) == pytest.approx(5 / 6)
    assert auroc([1, 1], [1]) == 0.5
    assert auroc([2, 3], [0, 1]) == 1.0 and auroc([0, 1], [2, 3]) == 0.0
    assert math.isnan(auroc([], [1.0])) and math.isnan(auroc([1.0], []))
    # discrete scores as the first-error reward gives them: 4 of 5 sound at 0, 1 of 4 flawed at 0
    assert auroc([0, 0, 0, 0, -1], [-1, -1, -1, 0]) == pytest.approx((4 * 3 + 4 * 0.5 + 1 * 1.5) / 20)


def test_roc_curve_area_is_the_auroc():
    positive, negative = [0.9, 0.7, 0.7, 0.2], [0.7, 0.3, 0.1]
    fpr, tpr = roc_points(positive, negative)
    assert (fpr[0], tpr[0]) == (0.0, 0.0) and (fpr[-1], tpr[-1]) == (1.0, 1.0)
    area = sum((fpr[i + 1] - fpr[i]) * (tpr[i + 1] + tpr[i]) / 2 for i in range(len(fpr) - 1))
    assert area == pytest.approx(auroc(positive, negative))
    assert auroc(positive, negative) == pytest.approx((3 + 2.5 + 2.5 + 1) / 12)


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    positive = [0.1 * i for i in range(20)]
    negative = [0.1 * i - 0.5 for i in range(20)]
    low, high = bootstrap_auroc(positive, negative, resamples=500, seed=3)
    assert (low, high) == bootstrap_auroc(positive, negative, resamples=500, seed=3)
    assert (low, high) != bootstrap_auroc(positive, negative, resamples=500, seed=4)
    assert low < auroc(positive, negative) < high and 0.0 <= low and high <= 1.0
    assert bootstrap_auroc([1.0, 2.0], [0.0], resamples=50) == (1.0, 1.0)  # separated in every resample
    assert all(math.isnan(v) for v in bootstrap_auroc([], [1.0]))


def test_processbench_metrics_hand_computed():
    labels = [-1, -1, 2, 0, 1]
    predictions = [-1, 0, 2, None, 1]
    metrics = processbench_metrics(labels, predictions)
    assert metrics["acc_err"] == pytest.approx(2 / 3)  # label 0 without a verdict is wrong
    assert metrics["acc_cor"] == 0.5
    assert metrics["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))  # = 4/7
    assert metrics["no_verdict"] == 1 and metrics["confusion"]["all_correct"]["false_alarm"] == 1
    assert math.isnan(processbench_metrics([0], [0])["f1"])  # one class: no F1


def test_localisation_breakdown_hand_computed():
    from procrl.evaluation.validate.metrics import localisation_breakdown

    labels = [-1, 2, 2, 3, 0, 1, 5, 4, 1]
    predictions = [0, 2, 1, 6, 1, -1, 0, None, 3]
    b = localisation_breakdown(labels, predictions)
    # flawed: 8 (the sound row is not counted); exact: label 2 -> 2; early: 2 -> 1 (by 1), 5 -> 0 (by 5);
    # late: 3 -> 6 (by 3), 0 -> 1 (by 1), 1 -> 3 (by 2); none: 1 -> -1; no verdict: 4 -> None
    assert b == {
        "n": 8,
        "exact": 1,
        "early": 2,
        "late": 3,
        "none": 1,
        "no_verdict": 1,
        "early_by": {"1": 1, "2": 0, "3+": 1},
        "late_by": {"1": 1, "2": 1, "3+": 1},
    }
    assert processbench_metrics(labels, predictions)["breakdown"] == b
    assert processbench_metrics(labels, predictions)["acc_err"] == pytest.approx(1 / 8)


def test_step_spans_and_label_mapping_by_offsets():
    text, spans = step_spans(["a b", " c", "d "], "\n", prefixes=["Step 1: ", "Step 2:", "Step 3: "])
    assert text == "Step 1: a b\nStep 2: c\nStep 3: d "
    assert [text[a:b] for a, b in spans] == ["Step 1: a b", "Step 2: c", "Step 3: d"]
    data = [(0, 5), (6, 10), (11, 15)]
    merged_then_split = [(0, 10), (11, 13), (13, 15)]  # procrl merged steps 0-1 and split step 2
    assert [map_label(k, data, merged_then_split) for k in (-1, 0, 1, 2)] == [-1, 0, 0, 1]
    assert map_label(None, data, merged_then_split) is None
    assert map_label(2, data, [(0, 5), (6, 10)]) is None  # the labelled step is not one of procrl's (answer line)
    with pytest.raises(ValueError):
        map_label(3, data, merged_then_split)
    agreement = boundary_agreement(data, merged_then_split, reasoning_end=15)
    assert agreement == {"data": 2, "procrl": 2, "matched": 1, "identical": False}
    assert boundary_agreement(data, data, reasoning_end=11)["data"] == 1  # a step in the answer line is not counted


# --- readers -----------------------------------------------------------------------------------


def test_mr_gsm8k_reader_on_the_real_sample():
    fmt, solutions = read_solutions(MR_GSM8K)
    assert fmt == "mr-gsm8k" and len(solutions) == 250
    rows = {r["uuid"]: r for r in json.loads(MR_GSM8K.read_text(encoding="utf-8"))}
    first = solutions[0]
    row = rows[first.id]
    assert first.id == "0056b847-5e9a-4ba9-b47b-b6dbcaa0be0e"
    assert first.label == row["model_output_solution_first_error_step"] - 1 == 2  # the data's step numbers are 1-based
    assert first.completion == "\n".join(row["model_output_steps"]) and len(first.data_spans) == 6
    assert first.answer_correct is False and first.gold == "7000" and first.kind == "original"
    assert first.klass == WRONG and not first.sound
    assert sum(s.klass == RIGHT_FLAWED for s in solutions) == 19  # flawed steps, right final answer
    # a reversed question whose answer field is "Let's think step by step.": the gold is what its solution states
    reversed_row = next(s for s in solutions if s.id == "0659df4d-86a9-4fda-b1f4-db7c474f46ae")
    assert rows[reversed_row.id]["ground_truth_answer"] == "Let's think step by step." and reversed_row.gold == "2"


def test_processbench_big_bench_mistake_reasoneval_and_procrl_readers():
    fmt, pb = read_solutions(PROCESSBENCH)
    assert fmt == "processbench" and len(pb) == 10
    assert [s.klass for s in pb].count(SOUND) == 5 and pb[7].klass == RIGHT_FLAWED
    assert pb[0].completion.split("\n\n")[0] == "She earns $12 \\times 3 = 36$ dollars a day."

    fmt, bbm = read_solutions(DATA / "big_bench_mistake_format.jsonl")
    assert fmt == "big-bench-mistake" and [s.label for s in bbm] == [-1, 1, -1, 3]
    assert bbm[0].completion.startswith("Thought 1: This equation") and "\nThought 4: Then" in bbm[0].completion
    assert [s.answer_correct for s in bbm] == [True, False, True, False] and bbm[1].gold == "21"

    fmt, re_rows = read_solutions(DATA / "reasoneval_perturbation_format.json")
    assert fmt == "reasoneval-perturbation"
    by_id = {s.id: s for s in re_rows}
    assert len(re_rows) == 7 and by_id["rid-0"].sound and by_id["rid-1"].sound  # one sound row per reference
    assert (by_id["0"].label, by_id["0"].answer_correct, by_id["0"].kind) == (2, True, "random number")
    assert by_id["1"].label == 1  # swap steps [1, 2]: the earlier one
    assert (by_id["2"].label, by_id["2"].answer_correct) == (0, False)  # another problem's solution, answer 47 not 72
    assert by_id["3"].label == 1  # repeat step after step 0: the copy
    assert (by_id["4"].label, by_id["4"].answer_correct) == (1, True)  # step 1 removed: step 1 lacks its premise

    fmt, ours = read_solutions(DATA / "procrl_format.jsonl")
    assert fmt == "procrl" and ours[0].data_spans is None
    assert [s.label for s in ours] == [-1, 0, -1, 1, None] and ours[4].klass == RIGHT_FLAWED


def test_several_files_of_one_format_and_duplicates(tmp_path):
    rows = json.loads(MR_GSM8K.read_text(encoding="utf-8"))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(rows[:5]))
    b.write_text(json.dumps(rows[3:8]))  # two solutions in both files (as across MR-GSM8K's graders)
    _, solutions = read_solutions([a, b])
    assert len(solutions) == 8
    changed = dict(rows[3], model_output_solution_first_error_step=1)
    b.write_text(json.dumps([changed]))
    with pytest.raises(ConfigError, match=r"b\.json:1: id .* also .*a\.json:4"):
        read_solutions([a, b])
    with pytest.raises(ConfigError, match="give files of one format"):
        read_solutions([a, PROCESSBENCH])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "holds no records"),
        (
            '{"problem": "p", "steps": ["a"], "label": -1}\n{"problem": "p", "steps": ["a", "b"], "label": 2}\n',
            r":2: 'label' must be -1 or a step index below 2, got 2",
        ),
        ('{"problem": "p", "steps": [], "label": -1}\n', r":1: 'steps' must be a non-empty list of strings"),
        (
            '{"problem": "p", "steps": ["a"], "label": -1}\n{"completion": "x", "first_error": -1}\n',
            r":2: not a processbench record",
        ),
        (
            '{"question": "q", "model_output_steps": ["a"], "model_output_solution_correctness": "wrong", '
            '"model_output_solution_first_error_step": 0}\n',
            r":1: .*a step number from 1 to 1",
        ),
        ('{"foo": 1}\n', r":1: cannot tell the format"),
        ('{"problem": "p", "steps": ["a"], "label": -1}\n{"problem": \n', r":2: not valid JSON"),
    ],
)
def test_bad_input_is_one_line_naming_file_and_record(tmp_path, capsys, content, message):
    data = tmp_path / "bad.jsonl"
    data.write_text(content)
    out = tmp_path / "out"
    assert main(["validate", "--recipe", RECIPE, *CUES, "--data", str(data), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"procrl: error: {data}") and "\n" not in err
    assert __import__("re").search(message, err), err
    assert not out.exists()  # nothing written


def test_a_json_array_names_the_record_and_its_line(tmp_path):
    data = tmp_path / "bad.json"
    data.write_text(
        '[\n{"problem": "p", "steps": ["a"], "label": -1},\n\n{"problem": "p", "steps": ["a"], "label": 5}\n]'
    )
    with pytest.raises(ConfigError, match=r"bad\.json:2 \(line 4\): 'label'"):
        read_solutions(data)


# --- peers -------------------------------------------------------------------------------------


def test_peer_scores_are_matched_by_id(tmp_path):
    from procrl.evaluation.validate.run import run_validation

    result = run_validation(
        RECIPE,
        ["rewards.trace.tagger=cues"],
        str(PROCESSBENCH),
        components=["accuracy"],
        peers=[("mine", [str(DATA / "peer_scores.jsonl")])],
        resamples=200,
    )
    peer = result.report["peers"]["mine"]
    assert peer["matched"] == 8 and peer["matched_fraction"] == 0.8 and peer["rows"] == 9  # one id is not in the data
    # solution score = min over steps; sound 0.8 0.7 0.6 0.9 vs flawed 0.3 0.2 0.7 0.2: 14.5 of 16 pairs
    assert peer["auroc"] == pytest.approx(14.5 / 16)
    local = peer["localisation"]  # first step below 0.5 on the data's steps
    assert (local["acc_cor"], local["acc_err"]) == (1.0, 0.75) and local["f1"] == pytest.approx(2 * 0.75 / 1.75)
    assert peer["step_count_mismatch"] == 0


def test_peer_formats_reasoneval_triples_rid_rows_and_errors(tmp_path):
    path = tmp_path / "peer.jsonl"
    path.write_text('{"id": 1, "scores": "[[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]]"}\n{"rid": 4, "scores": 0.25}\n')
    assert read_peer(str(path)) == {"1": [pytest.approx(0.9), pytest.approx(0.4)], "rid-4": 0.25}
    path.write_text('{"id": 1, "scores": [0.5]}\n{"id": 1, "scores": [0.4]}\n')
    with pytest.raises(ConfigError, match=r"peer\.jsonl:2: id 1 appears twice"):
        read_peer(str(path))
    path.write_text('{"id": 1, "scores": ["x"]}\n')
    with pytest.raises(ConfigError, match=r"peer\.jsonl:1: 'scores' must be"):
        read_peer(str(path))


def test_peer_step_count_mismatch_is_counted(tmp_path):
    from procrl.evaluation.validate.run import run_validation

    path = tmp_path / "peer.jsonl"
    path.write_text('{"id": "pb-sound-1", "scores": [0.9, 0.9]}\n{"id": "pb-flawed-1", "scores": [0.1, 0.9, 0.9]}\n')
    result = run_validation(
        RECIPE, [], str(PROCESSBENCH), components=["accuracy"], peers=[("p", [str(path)])], resamples=50
    )
    peer = result.report["peers"]["p"]
    assert peer["matched"] == 2 and peer["step_count_mismatch"] == 1 and peer["localisation"]["n"] == 1


# --- the command -------------------------------------------------------------------------------


def test_validate_end_to_end_on_the_real_mr_gsm8k_sample(tmp_path, capsys):
    out = tmp_path / "report"
    assert (
        main(["validate", "--recipe", RECIPE, *CUES, "--data", str(MR_GSM8K), "--output-dir", str(out), "--quiet"]) == 0
    )
    table = capsys.readouterr().out
    assert "AUROC sound/flawed" in table and "n/a (no sound)" in table and "acc_err" in table
    assert f"wrote {out / 'report.json'}" in table
    assert sorted(p.name for p in out.iterdir()) == [
        ".procrl-folder.json",
        "report.json",
        "report.md",
        "rows.jsonl",
        "validate.png",
    ]
    report = json.loads((out / "report.json").read_text())
    assert (
        report["format"] == "mr-gsm8k"
        and report["n"] == 250
        and report["classes"] == {"right_answer_flawed": 19, "wrong_answer": 231}
    )
    assert set(report["components"]) == {"accuracy", "format", "trace", "first_error"}
    assert report["components"]["first_error"]["auroc"] is None  # these files hold flawed solutions only
    local = report["components"]["first_error"]["localisation"]
    assert local["n_error"] == 250 and local["n_correct"] == 0 and 0.0 <= local["acc_err"] <= 1.0
    assert local["label_not_on_procrl_steps"] == 0
    # "Step k: ..." lines: procrl's steps are the data's but where a line ends with a colon ("We can
    # set up the equation:"), which is one step with the line it introduces; a label maps onto
    # the step holding its line
    assert report["segmentation"]["identical"] == 0.936
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert sum(r["procrl_label"] == r["label"] for r in rows) == 242
    assert all(r["procrl_label"] <= r["label"] for r in rows)
    agreement = report["components"]["accuracy"]["agreement"]
    assert agreement["scored"] == 250 and agreement["agree"] >= 240
    assert (out / "validate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| first_error |" in (out / "report.md").read_text()
    breakdown = local["breakdown"]
    assert breakdown["n"] == 250
    assert sum(breakdown[k] for k in ("exact", "early", "late", "none", "no_verdict")) == 250
    assert breakdown["exact"] == round(local["acc_err"] * 250)
    assert sum(breakdown["late_by"].values()) == breakdown["late"]

    def share(k: str) -> str:
        return f"{100 * breakdown[k] / 250:.0f}%"

    line = next(row for row in table.splitlines() if row.startswith("first_error") and row.split()[1] == "250")
    assert line.split()[2:6] == [share("exact"), share("early"), share("late"), share("none")]
    assert f"| first_error | 250 | {share('exact')} | {share('early')} (" in (out / "report.md").read_text()


def test_validate_on_both_classes_json_and_components(tmp_path, capsys):
    out = tmp_path / "pb"
    assert (
        main(
            [
                "validate",
                "--recipe",
                RECIPE,
                *CUES,
                "--data",
                str(PROCESSBENCH),
                "--output-dir",
                str(out),
                "--json",
                "--component",
                "accuracy",
                "--component",
                "first_error",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert set(report["components"]) == {"accuracy", "first_error"}
    assert report["classes"] == {"sound": 5, "right_answer_flawed": 1, "wrong_answer": 4}
    # accuracy: 5 sound at 1; flawed 0 0 0 1 0 -> (5*4 + 5*0.5) / 25
    assert report["components"]["accuracy"]["auroc"] == pytest.approx(0.9)
    assert report["components"]["accuracy"]["agreement"]["agree"] == 10
    low, high = report["components"]["accuracy"]["auroc_ci"]
    assert low <= 0.9 <= high
    # the total over the selected components: 1.0 * accuracy + 0.5 * first_error, per row
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    for row in rows:
        assert row["reward"] == pytest.approx(row["rewards"]["accuracy"] + 0.5 * row["rewards"]["first_error"])
    assert report["reward"]["auroc_right_answer"] is None  # fewer than 10 right-answer flawed solutions
    judge = report["components"]["first_error"]
    assert judge["by_class"]["sound"]["n"] == 5 and "unverified" in judge["by_class"]["sound"]
    assert judge["localisation"]["n_correct"] == 5 and judge["localisation"]["n_error"] == 5


def test_output_dir_follows_the_folder_rule(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["validate", "--recipe", RECIPE, *CUES, "--data", str(PROCESSBENCH), "--component", "accuracy", "--quiet"]
    assert main(args) == 0 and main(args) == 0  # the default dir, then the same one: its own report replaced
    first = tmp_path / "validate" / "gsm8k_trace--processbench_format"
    assert (first / "report.json").is_file() and sorted(p.name for p in first.parent.iterdir()) == [first.name]
    assert main([*args, "--output-dir", str(first)]) == 0
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "report.json").write_text('{"mine": true}')
    (foreign / "notes.txt").write_text("kept")
    capsys.readouterr()
    assert main([*args, "--output-dir", str(foreign)]) == 2
    assert "notes.txt, report.json, which procrl did not write" in capsys.readouterr().err
    assert (foreign / "report.json").read_text() == '{"mine": true}'
    assert main([*args, "--output-dir", str(foreign), "--overwrite"]) == 0  # named by --overwrite: written into
    assert (foreign / "notes.txt").read_text() == "kept" and json.loads((foreign / "report.json").read_text())[
        "n"
    ] == 10


def test_a_component_that_cannot_load_is_one_error(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["validate", "--recipe", RECIPE, "--data", str(PROCESSBENCH), "--output-dir", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("procrl: error: rewards.trace: failed to load or run hyyangkisti/TRACE-DeBERTa-v3-base")
    assert not out.exists()


def test_unknown_component_and_bad_options(capsys):
    assert main(["validate", "--recipe", RECIPE, *CUES, "--data", str(PROCESSBENCH), "--component", "acuracy"]) == 2
    assert "did you mean 'accuracy'" in capsys.readouterr().err
    assert main(["validate", "--recipe", RECIPE, *CUES, "--data", str(PROCESSBENCH), "--peer", "nofile"]) == 2
    assert "NAME=FILE" in capsys.readouterr().err
    assert main(["validate", "--recipe", RECIPE, *CUES, "--data", str(PROCESSBENCH), "--limit", "0"]) == 2


def test_eval_judge_is_validate_restricted_to_the_judge(tmp_path, capsys):
    assert main(["eval-judge", "--recipe", RECIPE, *CUES, "--data", str(MR_GSM8K), "--json"]) == 0
    judge = json.loads(capsys.readouterr().out)
    assert judge["backend"] == "arithmetic" and judge["component"] == "first_error"
    assert judge["n_error"] == 250 and judge["n_correct"] == 0
    out = tmp_path / "judge"
    assert (
        main(
            [
                "validate",
                "--recipe",
                RECIPE,
                *CUES,
                "--data",
                str(MR_GSM8K),
                "--component",
                "first_error",
                "--output-dir",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["components"]["first_error"]["localisation"]["acc_err"] == judge["acc_err"]


# appended to procrl/rewards/accuracy.py in the baseline commit: the accuracy reward inverted
INVERTED_ACCURACY = """

import dataclasses as _dataclasses

_score = AccuracyReward.score


def _inverted(self, batch):
    output = _score(self, batch)
    return _dataclasses.replace(output, scores=[None if s is None else 1.0 - s for s in output.scores])


AccuracyReward.score = _inverted
"""


def test_real_text_bench_runs_this_checkout_and_a_baseline(tmp_path):
    """The benchmark end to end on a stand-in for the MR-GSM8K checkout (the fixture's rows in its
    six files), in a copy of this checkout whose parent commit inverts the accuracy reward: the
    baseline arm runs that commit's code (every labelled answer flips from agreeing to disagreeing),
    the other components score the same in both arms."""
    import shutil
    import subprocess
    import sys

    def git(directory, *args):
        subprocess.run(["git", "-C", str(directory), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True)

    rows = json.loads(MR_GSM8K.read_text(encoding="utf-8"))[:60]
    repo = tmp_path / "mirror" / "dvlab-research+MR-GSM8K" / "repo"
    folder = repo / "eval_results" / "gpt4-grading"
    folder.mkdir(parents=True)
    for i, model in enumerate(("Claude", "GPT3_5", "llama2_70b", "mammoth_70B", "metamath_70B", "wizardmath_70B")):
        (folder / f"{model}_eval_results.json").write_text(json.dumps(rows[i * 10 : (i + 1) * 10]))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "rows")

    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "procrl", checkout / "procrl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "procrl_recipe_hook.py", checkout / "procrl_recipe_hook.py")
    (checkout / "benchmarks").mkdir()
    shutil.copy2(REPO / "benchmarks" / "real_text_bench.py", checkout / "benchmarks" / "real_text_bench.py")
    accuracy = checkout / "procrl" / "rewards" / "accuracy.py"
    real = accuracy.read_text()
    accuracy.write_text(real + INVERTED_ACCURACY)
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "commit", "-qm", "baseline: the accuracy reward inverted")
    accuracy.write_text(real)
    git(checkout, "commit", "-qam", "this checkout")

    result = subprocess.run(
        [
            sys.executable,
            str(checkout / "benchmarks" / "real_text_bench.py"),
            "--corpus",
            "MR-GSM8K",
            "--mirror",
            str(tmp_path / "mirror"),
            "--recipe",
            RECIPE,
            "--baseline",
            "HEAD~1",
            "--resamples",
            "50",
            "--json",
            str(tmp_path / "bench.json"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "MR-GSM8K: 60 solutions" in result.stdout and "each cell: now | @HEAD~1" in result.stdout
    reports = json.loads((tmp_path / "bench.json").read_text())["MR-GSM8K"]
    now, base = reports["now"], reports["@HEAD~1"]
    assert now["n"] == base["n"] == 60
    agree_now, agree_base = now["components"]["accuracy"]["agreement"], base["components"]["accuracy"]["agreement"]
    assert agree_now["labelled"] and agree_now["scored"] == agree_base["scored"] > 0
    assert agree_base["agree"] == agree_now["scored"] - agree_now["agree"]
    assert (
        now["components"]["first_error"]["localisation"]["acc_err"]
        == base["components"]["first_error"]["localisation"]["acc_err"]
    )
