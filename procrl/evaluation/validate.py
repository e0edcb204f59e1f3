"""``procrl validate``: does a reward mix tell sound reasoning from flawed, on labelled solutions?

Run before any RL step. Each labelled solution (:mod:`procrl.evaluation.corpora` reads the public corpora's
formats) is scored exactly as training scores a completion: its steps joined as the model wrote
them, segmented by procrl's shared segmentation, every component of the recipe's mix and the
weighted total computed by :func:`procrl.evaluation.score.score_batch` (the code of ``procrl score``,
with its fallback policy: every row its own group), so nothing here is a second scoring path.
The data's first-error label is moved onto procrl's steps by character offsets
(:func:`procrl.evaluation.validate_metrics.map_label`). Reported, per component and for the total:

* AUROC sound vs flawed (ties count half) with a seeded stratified bootstrap 95% interval, and
  among right-answer solutions (sound vs right answer but flawed: the case process rewards exist
  for) when each of the two has at least :data:`MIN_CLASS` scored solutions;
* per class (sound / right answer but flawed / wrong answer / flawed, answer unlabelled): mean,
  the no-opinion share (the component gave None or failed), the fallback share (rows whose total
  took the fallback policy instead: with ``group_mean`` and one row per group that is "left out
  of the total", so it equals the no-opinion share), for first-error components the no-steps
  share and, for the model-free judges, the share with nothing checked (``unverified``);
* first-error components: ProcessBench's acc_err / acc_cor / F1 of the judge's verdicts on
  procrl's steps (sound rows: acc_cor; rows with a mapped first error: acc_err; no steps or a
  judge failure is no verdict, wrong in both; a chain the arithmetic judge found nothing to
  check in is its verdict -1, "no error found", while the reward penalises it: the AUROC and
  the unverified share show that side), the share of flawed solutions in which any error is
  found, and for a ``prm`` judge the threshold sweep; plus how far the data's step boundaries
  and procrl's agree;
* accuracy components: agreement with the labelled final-answer correctness;
* peers (``--peer NAME=FILE``): published per-sample scores ``{"id", "scores"}`` matched by row
  id (e.g. ReasonEval's ``eval_results/mr-gsm8k/*``): solution score = the minimum over steps of
  a per-step list (a list of class probabilities per step, ReasonEval's own validity head, counts
  as the sum of all but the first class, as its ``codes/mr-gsm8k_eval.py`` does), a scalar as
  is; localisation on the data's own steps: the first step below ``--peer-threshold`` (0.5).

Writes ``report.json``, ``report.md``, ``rows.jsonl`` (per solution: class, labels, scores,
verdicts) and ``validate.png`` (score distributions per class, ROC curves) to the output dir,
all computed before anything is written; prints a short table. ``procrl eval-judge`` is this
command restricted to one first-error judge (:mod:`procrl.evaluation.judge_eval`).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from procrl.core.config import ConfigError, suggest
from procrl.core.folders import check_folder, claim_folder, write_file
from procrl.core.redaction import redact, redact_argv
from procrl.core.numeric import mean as _mean
from procrl.evaluation.corpora import CLASSES, FLAWED_UNLABELLED, RIGHT_FLAWED, SOUND, WRONG, Solution, read_solutions
from procrl.evaluation.validate_metrics import (
    BOOTSTRAP_RESAMPLES,
    auroc,
    bootstrap_auroc,
    boundary_agreement,
    first_below,
    map_label,
    processbench_metrics,
    roc_points,
    sweep_thresholds,
)

__all__ = ["MIN_CLASS", "Scored", "add_validate_command", "read_peer", "run_validation", "validation_report"]

MIN_CLASS = 10  # fewest scored solutions per class for the right-answer AUROC
REPORT_MARKER = "procrl_validate"
OUTPUT_FILES = ("report.json", "report.md", "rows.jsonl", "validate.png")
TOTAL = "reward"  # the weighted total's name in the report (as in procrl score's rows)
CLASS_LABELS = {SOUND: "sound", RIGHT_FLAWED: "right answer but flawed", WRONG: "wrong answer",
                FLAWED_UNLABELLED: "flawed, answer unlabelled"}
# judge statuses that are a verdict or a defined score for "nothing to judge", not a failure
_JUDGED = ("ok", "unverified", "no_steps")


@dataclass
class Scored:
    """One solution as procrl scored it."""

    solution: Solution
    rewards: dict[str, float | None]
    total: float | None
    procrl_spans: list[tuple[int, int]]
    reasoning_end: int
    diagnostics: dict[str, Any]
    fallbacks: dict[str, Any]
    procrl_label: int | None = None  # the data's label on procrl's steps

    @property
    def klass(self) -> str:
        return self.solution.klass


# --- scoring -----------------------------------------------------------------------------------


def _chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _load_failures(mix, outputs_failures: dict[str, dict[str, int]], n: int) -> None:
    """A component with a model or a judge endpoint that failed on the first solution did not
    load or cannot reach its judge: measuring it would report its fallback. One clear error
    instead (a model-free component's failures are counted and reported, as in training)."""
    from procrl.core.redaction import redact_url

    for name, kinds in outputs_failures.items():
        component = mix.components[name]
        what, where = component.needs_model(), component.needs_network()
        if what is None and where is None:
            continue
        total_failed = sum(kinds.get(k, 0) for k in ("exception", "judge_error", "connection_error", "http_error"))
        if n and total_failed >= n:
            cause = f"failed to load or run {what}" if what else f"every request to {redact_url(where)} failed"
            raise ConfigError(f"rewards.{name}: {cause} ({', '.join(f'{k} {v}' for k, v in kinds.items() if v)}); "
                              f"fix it, or leave it out with --component / --set rewards.{name}=false")


def _reasoning_end(solution: Solution) -> int:
    """Where the solution's reasoning ends, its answer block read under its answer kind."""
    from procrl.core.text import reasoning_end

    if not solution.answer_kind or solution.answer_kind == "number":
        return reasoning_end(solution.completion)
    from procrl.core.choices import answer_block_start, answer_spec

    spec = answer_spec(solution.answer_kind, list(solution.choices or []) or None, solution.gold)
    start = answer_block_start(solution.completion, spec)
    return len(solution.completion[: len(solution.completion) if start is None else start].rstrip())


def score_solutions(mix, solutions: list[Solution], batch_size: int = 64,
                    progress: bool = False) -> tuple[list[Scored], dict[str, dict[str, int]]]:
    """Every solution through :func:`procrl.evaluation.score.score_batch` (``procrl score``'s code); the
    scored solutions and each component's failure counts."""
    from tqdm.auto import tqdm

    from procrl.evaluation.score import score_batch

    scored: list[Scored] = []
    counts: dict[str, dict[str, int]] = {name: {} for name in mix.names}
    first = True
    with tqdm(total=len(solutions), desc="validating", unit="solution", disable=not progress, file=sys.stderr) as bar:
        # the first solution alone: a component that cannot load is found after one attempt (a
        # failing batch would be retried row by row, each retry loading again)
        for chunk in [solutions[:1], *_chunks(solutions[1:], batch_size)]:
            if not chunk:
                continue
            rows = [{"question": s.question, "completion": s.completion, "answer": s.reference,
                     **({"answer_kind": s.answer_kind, "choices": list(s.choices) if s.choices else None}
                        if s.answer_kind else {})} for s in chunk]
            out, _, failures = score_batch(mix, [s.record for s in chunk], rows)
            if first:
                _load_failures(mix, failures, len(chunk))
                first = False
            for name, kinds in failures.items():
                for kind, count in kinds.items():
                    counts[name][kind] = counts[name].get(kind, 0) + count
            for solution, row in zip(chunk, out):
                spans = [(step["start"], step["end"]) for step in row["steps"]]
                item = Scored(solution, dict(row["rewards"]), row["reward"], spans, _reasoning_end(solution),
                              row.get("diagnostics") or {}, row.get("fallbacks") or {})
                if solution.data_spans is None:  # procrl format: the label is on procrl's steps already
                    label = solution.label
                    item.procrl_label = label if label is None or label < len(spans) else None
                else:
                    item.procrl_label = map_label(solution.label, solution.data_spans, spans)
                scored.append(item)
            bar.update(len(chunk))
    return scored, counts


# --- peers -------------------------------------------------------------------------------------


def _peer_step_score(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return float(sum(value[1:]))  # class probabilities [invalid, neutral, positive]: validity = the rest
    return None


def read_peer(paths: str | list[str]) -> dict[str, float | list[float]]:
    """id -> a scalar or a per-step list, from JSON lines / a JSON array of ``{"id", "scores"}``
    (``scores`` may also be a JSON string of them, as some published files hold; ``{"rid", ...}``
    rows are ReasonEval's scores of its reference solutions, validate's ``rid-N`` rows); several
    files are one peer's scores of different rows."""
    from procrl.core.jsonl import iter_records

    scores: dict[str, float | list[float]] = {}
    for path in [paths] if isinstance(paths, str) else paths:
        _read_peer_file(path, scores, iter_records)
    return scores


def _read_peer_file(path: str, scores: dict, iter_records) -> None:
    before = len(scores)
    for number, (line, value) in enumerate(iter_records(path, "--peer"), 1):
        where = f"{path}:{number}" + (f" (line {line})" if line != number else "")
        if isinstance(value, dict) and "id" not in value and "rid" in value:
            value = {**value, "id": f"rid-{value['rid']}"}  # ReasonEval's scores of its reference solutions
        if not isinstance(value, dict) or "id" not in value or "scores" not in value:
            raise ConfigError(f"{where}: expected an object with 'id' and 'scores'")
        if str(value["id"]) in scores:
            raise ConfigError(f"{where}: id {value['id']!r} appears twice")
        raw = value["scores"]
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raise ConfigError(f"{where}: 'scores' is a string that is not JSON") from None
        if isinstance(raw, list):
            steps = [_peer_step_score(v) for v in raw]
            if not steps or any(v is None for v in steps):
                raise ConfigError(f"{where}: 'scores' must be a number, or a non-empty list of numbers (or of class "
                                  "probability lists) per step")
            scores[str(value["id"])] = steps
        else:
            single = _peer_step_score(raw)
            if single is None:
                raise ConfigError(f"{where}: 'scores' must be a number or a list per step, got {raw!r}")
            scores[str(value["id"])] = single
    if len(scores) == before:
        raise ConfigError(f"--peer: {path} holds no rows")


def parse_peer_options(values: list[str]) -> list[tuple[str, list[str]]]:
    """``NAME=FILE`` options as (name, files): a name given again adds a file to that peer."""
    peers: dict[str, list[str]] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--peer: expected NAME=FILE, got {value!r}")
        peers.setdefault(name, []).append(path)
    return list(peers.items())


# --- metrics -----------------------------------------------------------------------------------


def _share(count: int, n: int) -> float | None:
    return count / n if n else None


def _no_opinion(item: Scored, name: str) -> bool:
    if item.rewards.get(name) is None:
        return True
    detail = item.diagnostics.get(name)
    if isinstance(detail, dict):
        if detail.get("error") is not None or detail.get("failure") is not None:
            return True
        status = detail.get("verdict")
        if status is not None and status not in _JUDGED:
            return True
    return False


def _separation(pairs: list[tuple[str, float]], seed: int, resamples: int) -> dict[str, Any]:
    """AUROC sound vs flawed (and among right answers) of (class, score) pairs."""
    sound = [v for k, v in pairs if k == SOUND]
    flawed = [v for k, v in pairs if k != SOUND]
    right_flawed = [v for k, v in pairs if k == RIGHT_FLAWED]
    out: dict[str, Any] = {"n_sound": len(sound), "n_flawed": len(flawed), "n_right_flawed": len(right_flawed)}
    out["auroc"] = auroc(sound, flawed) if sound and flawed else None
    out["auroc_ci"] = list(bootstrap_auroc(sound, flawed, resamples, seed)) if sound and flawed else None
    enough = len(sound) >= MIN_CLASS and len(right_flawed) >= MIN_CLASS
    out["auroc_right_answer"] = auroc(sound, right_flawed) if enough else None
    out["auroc_right_answer_ci"] = list(bootstrap_auroc(sound, right_flawed, resamples, seed)) if enough else None
    return out


def _component_stats(items: list[Scored], name: str, score_of, first_error: bool, arithmetic: bool,
                     seed: int, resamples: int) -> dict[str, Any]:
    pairs = [(i.klass, score_of(i)) for i in items if score_of(i) is not None]
    stats = _separation(pairs, seed, resamples)
    stats["scored"] = len(pairs)
    by_class: dict[str, dict[str, Any]] = {}
    for klass in CLASSES:
        members = [i for i in items if i.klass == klass]
        if not members:
            continue
        values = [score_of(i) for i in members if score_of(i) is not None]
        entry: dict[str, Any] = {"n": len(members), "mean": _mean(values)}
        if name != TOTAL:
            entry["none"] = _share(sum(_no_opinion(i, name) for i in members), len(members))
            entry["fallback"] = _share(sum(name in i.fallbacks or (_no_opinion(i, name) and i.rewards.get(name) is not None)
                                           for i in members), len(members))
        else:
            entry["none"] = _share(sum(i.total is None for i in members), len(members))
        if first_error:
            verdicts = [(i.diagnostics.get(name) or {}).get("verdict") for i in members]
            entry["no_steps"] = _share(sum(v == "no_steps" for v in verdicts), len(members))
            if arithmetic:
                entry["unverified"] = _share(sum(v == "unverified" for v in verdicts), len(members))
        by_class[klass] = entry
    stats["by_class"] = by_class
    kinds = sorted({i.solution.kind for i in items if i.solution.kind and not i.solution.sound})
    if kinds and stats["n_sound"]:
        sound = [v for k, v in pairs if k == SOUND]
        stats["by_kind"] = {}
        for kind in kinds:
            flawed = [score_of(i) for i in items if i.solution.kind == kind and not i.solution.sound and score_of(i) is not None]
            stats["by_kind"][kind] = {"n": len(flawed), "auroc": auroc(sound, flawed) if flawed else None}
    return stats


def _prediction(item: Scored, name: str) -> int | None:
    """The judge's first error on procrl's steps: its index; -1 for a chain the arithmetic judge
    found nothing to check in (its own verdict: no error found; the reward still gives it
    ``unverified_score``); None for no verdict (a failure, or no steps to judge)."""
    detail = item.diagnostics.get(name) or {}
    if detail.get("verdict") == "unverified":
        return -1
    index = detail.get("index")
    return index if detail.get("verdict") == "ok" and isinstance(index, int) else None


def localisation(items: list[Scored], name: str, prm: bool) -> dict[str, Any]:
    """ProcessBench metrics of a first-error component on procrl's steps (see the module doc)."""
    labels, predictions, used = [], [], []
    unmapped = ambiguous = 0
    for item in items:
        if item.solution.sound:
            label = -1
        elif item.solution.label is not None and item.solution.label >= 0:
            if item.procrl_label is None:
                unmapped += 1
                continue
            label = item.procrl_label
        else:
            ambiguous += item.solution.label == -1  # labelled error-free steps, wrong final answer
            continue
        labels.append(label)
        predictions.append(_prediction(item, name))
        used.append(item)
    metrics = processbench_metrics(labels, predictions)
    flawed = [i for i in items if not i.solution.sound]
    found = [_prediction(i, name) for i in flawed]
    metrics["error_found"] = _share(sum(p is not None and p >= 0 for p in found), len(flawed))
    metrics["false_alarm"] = metrics["confusion"]["all_correct"]["false_alarm"]
    metrics["label_not_on_procrl_steps"] = unmapped
    metrics["label_error_free_answer_wrong"] = ambiguous
    if prm:
        probabilities = [(i.diagnostics.get(name) or {}).get("step_probabilities") for i in used]
        metrics["threshold_sweep"] = sweep_thresholds(labels, probabilities)
    return metrics


def segmentation_agreement(items: list[Scored]) -> dict[str, Any] | None:
    """The data's step boundaries against procrl's (solutions that come with steps)."""
    with_steps = [i for i in items if i.solution.data_spans is not None]
    if not with_steps:
        return None
    data = procrl = matched = identical = 0
    for item in with_steps:
        result = boundary_agreement(item.solution.data_spans, item.procrl_spans, item.reasoning_end)
        data += result["data"]
        procrl += result["procrl"]
        matched += result["matched"]
        identical += bool(result["identical"])
    return {
        "n": len(with_steps),
        "mean_data_steps": _mean([len(i.solution.data_spans) for i in with_steps]),
        "mean_procrl_steps": _mean([len(i.procrl_spans) for i in with_steps]),
        "boundary_recall": _share(matched, data),
        "boundary_precision": _share(matched, procrl),
        "identical": _share(identical, len(with_steps)),
    }


def error_categories(items: list[Scored], name: str) -> dict[str, dict[str, int]] | None:
    """Errors the judge found per ReTraceQA category, per class of solution (``none``: found
    without a category); None when the judge named no category."""
    from procrl.rewards.judges.prompt import CATEGORIES

    found = [(i.klass, (i.diagnostics.get(name) or {}).get("category")) for i in items
             if isinstance((i.diagnostics.get(name) or {}).get("index"), int) and i.diagnostics[name]["index"] >= 0]
    if not any(category for _, category in found):
        return None
    out = {}
    for klass in CLASSES:
        named = [category for k, category in found if k == klass]
        if named:
            out[klass] = {**{c: named.count(c) for c in CATEGORIES}, "none": sum(c not in CATEGORIES for c in named)}
    return out


def accuracy_agreement(items: list[Scored], name: str) -> dict[str, Any]:
    labelled = [i for i in items if i.solution.answer_correct is not None]
    scored = [i for i in labelled if i.rewards.get(name) is not None]
    agree = [i for i in scored if (i.rewards[name] >= 0.5) == i.solution.answer_correct]
    disagree = [i for i in scored if (i.rewards[name] >= 0.5) != i.solution.answer_correct]
    kinds = sorted({i.solution.kind for i in scored if i.solution.kind})
    by_kind = {kind: {"scored": sum(1 for i in scored if i.solution.kind == kind),
                      "agree": sum(1 for i in agree if i.solution.kind == kind)} for kind in kinds}
    return {
        "by_kind": by_kind,
        "labelled": len(labelled),
        "scored": len(scored),
        "no_score": len(labelled) - len(scored),
        "agree": len(agree),
        "agreement": _share(len(agree), len(scored)),
        "disagreements": [{"id": i.solution.id, "labelled_correct": i.solution.answer_correct,
                           "predicted": (i.diagnostics.get(name) or {}).get("predicted"),
                           "gold": i.solution.gold} for i in disagree[:10]],
    }


def peer_report(items: list[Scored], scores: dict[str, float | list[float]], threshold: float, seed: int,
                resamples: int) -> dict[str, Any]:
    matched = [(i, scores[i.solution.id]) for i in items if i.solution.id in scores]
    solution_scores = {id(i): (min(s) if isinstance(s, list) else s) for i, s in matched}
    out: dict[str, Any] = {
        "rows": len(scores),
        "matched": len(matched),
        "matched_fraction": _share(len(matched), len(items)),
        "per_step": any(isinstance(s, list) for _, s in matched),
    }
    pairs = [(i.klass, solution_scores[id(i)]) for i, _ in matched]
    out.update(_separation(pairs, seed, resamples))
    out["by_class"] = {k: {"n": sum(1 for c, _ in pairs if c == k), "mean": _mean([v for c, v in pairs if c == k])}
                       for k in CLASSES if any(c == k for c, _ in pairs)}
    if out["per_step"]:
        labels, predictions = [], []
        mismatch = 0
        for item, steps in matched:
            count = len(item.solution.data_spans) if item.solution.data_spans is not None else len(item.procrl_spans)
            if not isinstance(steps, list) or len(steps) != count:
                mismatch += 1
                continue
            label = item.solution.label if item.solution.data_spans is not None else item.procrl_label
            if item.solution.sound:
                label = -1
            elif label is None or label < 0:
                continue
            labels.append(label)
            predictions.append(first_below(steps, threshold))
        out["step_count_mismatch"] = mismatch
        out["threshold"] = threshold
        out["localisation"] = processbench_metrics(labels, predictions) if labels else None
    return out


def validation_report(mix, items: list[Scored], *, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES,
                      peers: dict[str, dict[str, Any]] | None = None,
                      failures: dict[str, dict[str, int]] | None = None) -> dict[str, Any]:
    """The numbers of report.json (everything but the run's description)."""
    from procrl.rewards.first_error import FirstErrorReward

    components: dict[str, Any] = {}
    for name, spec in mix.specs.items():
        component = mix.components[name]
        is_judge = isinstance(component, FirstErrorReward)
        backend = component.settings.backend if is_judge else None
        entry: dict[str, Any] = {"type": spec.type, "weight": spec.weight, "fallback": spec.fallback}
        counted = dict((failures or {}).get(name, {}))
        if is_judge:
            from procrl.rewards.judges import FAILURE_KINDS

            counted = {**dict.fromkeys(FAILURE_KINDS, 0), **counted}
        entry["failures"] = counted
        if is_judge:
            entry["backend"] = backend
            entry["model"] = getattr(component.settings, "model", None)  # None: a model-free backend
            if backend == "prm":
                entry["threshold"] = component.settings.threshold
        entry.update(_component_stats(items, name, lambda i, n=name: i.rewards.get(n), is_judge, backend in ("arithmetic", "reference"),
                                      seed, resamples))
        if is_judge:
            entry["localisation"] = localisation(items, name, backend == "prm")
            categories = error_categories(items, name)
            if categories is not None:
                entry["categories"] = categories
        if spec.type == "accuracy":
            entry["agreement"] = accuracy_agreement(items, name)
        components[name] = entry
    total = {"type": "weighted total", "weight": None}
    total.update(_component_stats(items, TOTAL, lambda i: i.total, False, False, seed, resamples))
    counts = {k: sum(1 for i in items if i.klass == k) for k in CLASSES}
    return {
        "n": len(items),
        "classes": {k: v for k, v in counts.items() if v},
        "components": components,
        TOTAL: total,
        "segmentation": segmentation_agreement(items),
        "peers": peers or {},
    }


# --- text output -------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.0f}%"


def _auroc_cell(stats: dict[str, Any], key: str = "auroc") -> str:
    value = stats.get(key)
    if value is None:
        if not stats.get("n_sound"):
            return "n/a (no sound)"
        if key == "auroc_right_answer":
            return f"n/a (<{MIN_CLASS})"
        return "n/a (no flawed)"
    low, high = stats.get(f"{key}_ci") or (None, None)
    return f"{value:.3f} [{_fmt(low, 2)}, {_fmt(high, 2)}]"


def _rows_of(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [*report["components"].items(), ("weighted total", report[TOTAL])]


def _localisation_rows(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, ProcessBench metrics) of every first-error component and every per-step peer."""
    rows = [(name, stats["localisation"]) for name, stats in report["components"].items() if stats.get("localisation")]
    rows += [(f"{name} (peer)", peer["localisation"]) for name, peer in report["peers"].items() if peer.get("localisation")]
    return [(name, local) for name, local in rows if (local.get("breakdown") or {}).get("n")]


def _by(distances: dict[str, int]) -> str:
    return "/".join(str(distances[k]) for k in ("1", "2", "3+"))


def localisation_table(report: dict[str, Any]) -> list[str]:
    """Where the verdicts on flawed rows fall, one line per judge and peer (terminal)."""
    rows = _localisation_rows(report)
    if not rows:
        return []
    lines = ["", f"{'first error on flawed':<22}{'n':>6}{'exact':>7}{'early':>7}{'late':>7}{'none':>7}{'no verdict':>11}"
             f"   {'early by 1/2/3+':<16}{'late by 1/2/3+':<16}"]
    for name, local in rows:
        b = local["breakdown"]
        lines.append(f"{name[:21]:<22}{b['n']:>6}" + "".join(f"{_pct(b[k] / b['n']):>7}" for k in ("exact", "early", "late", "none"))
                     + f"{_pct(b['no_verdict'] / b['n']):>11}   {_by(b['early_by']):<16}{_by(b['late_by']):<16}")
    return lines


def format_table(report: dict[str, Any]) -> str:
    """The terminal summary: one line per component, then what the numbers rest on."""
    classes = report["classes"]
    present = [k for k in CLASSES if k in classes]
    data = str(report.get("data"))
    files = data.split(", ")
    data = data if len(files) == 1 else f"{files[0]} and {len(files) - 1} more files"
    head = (f"procrl validate: {report.get('recipe')} on {data} ({report.get('format')}, "
            f"{report['n']} solutions: " + ", ".join(f"{classes[k]} {CLASS_LABELS[k]}" for k in present) + ")")
    short = {SOUND: "sound", RIGHT_FLAWED: "right-fl", WRONG: "wrong", FLAWED_UNLABELLED: "flawed?"}
    columns = [f"{'component':<22}", f"{'AUROC sound/flawed':<22}", f"{'AUROC right-answer':<22}"]
    columns += [f"{short[k]:>9}" for k in present] + [f"{'none':>6}", f"{'acc_err':>8}", f"{'acc_cor':>8}", f"{'F1':>6}"]
    over_classes = " " * 66 + ("mean per class" if len(present) > 1 else "mean").rjust(9 * len(present)).rstrip()
    lines = [head, "", over_classes, "".join(columns)]
    for name, stats in _rows_of(report):
        by_class = stats["by_class"]
        none = sum((by_class[k].get("none") or 0) * by_class[k]["n"] for k in by_class) / max(report["n"], 1)
        local = stats.get("localisation") or {}
        cells = [f"{name[:21]:<22}", f"{_auroc_cell(stats):<22}", f"{_auroc_cell(stats, 'auroc_right_answer'):<22}"]
        cells += [f"{_fmt(by_class.get(k, {}).get('mean')):>9}" for k in present]
        cells += [f"{_pct(none):>6}", f"{_pct(local.get('acc_err')) if local else '':>8}",
                  f"{_pct(local.get('acc_cor')) if local else '':>8}", f"{_pct(local.get('f1')) if local else '':>6}"]
        lines.append("".join(cells))
    notes = []
    for name, stats in report["components"].items():
        by_class = stats["by_class"]
        if "localisation" in stats:
            local = stats["localisation"]
            parts = []
            if any("unverified" in c for c in by_class.values()):
                parts.append("no checkable computation: " + ", ".join(
                    f"{short[k]} {_pct(by_class[k]['unverified'])}" for k in present if k in by_class))
            flawed = sum(by_class[k]["n"] for k in by_class if k != SOUND)
            if flawed:
                parts.append(f"finds an error in {_pct(local['error_found'])} of {flawed} flawed")
            if local["n_correct"]:
                parts.append(f"false alarm on {local['false_alarm']} of {local['n_correct']} sound")
            if local["label_not_on_procrl_steps"]:
                parts.append(f"{local['label_not_on_procrl_steps']} labels fall outside procrl's steps")
            best = (local.get("threshold_sweep") or {}).get("best")
            if best:
                parts.append(f"F1-best threshold {best['threshold']:.2f} (F1 {_pct(best['f1'])})")
            notes.append(f"{name}: " + "; ".join(parts))
        if "agreement" in stats and stats["agreement"]["labelled"]:
            a = stats["agreement"]
            kinds = a.get("by_kind") or {}
            notes.append(f"{name}: agrees with the labelled answer correctness on {a['agree']}/{a['scored']}"
                         + (" (" + ", ".join(f"{k} {v['agree']}/{v['scored']}" for k, v in kinds.items()) + ")"
                            if len(kinds) > 1 else "")
                         + (f"; {a['no_score']} without a gold answer" if a["no_score"] else ""))
    seg = report.get("segmentation")
    if seg:
        notes.append(f"segmentation: {_fmt(seg['mean_data_steps'], 1)} data steps vs {_fmt(seg['mean_procrl_steps'], 1)} "
                     f"procrl steps per solution; {_pct(seg['boundary_recall'])} of the data's step starts are procrl's, "
                     f"{_pct(seg['boundary_precision'])} of procrl's are the data's; identical in {_pct(seg['identical'])}")
    if notes:
        lines += [""] + notes
    lines += localisation_table(report)
    if report["peers"]:
        lines += ["", f"{'peer (same rows)':<22}{'matched':>9}  {'AUROC sound/flawed':<22}{'AUROC right-answer':<22}"
                  f"{'acc_err':>8}{'acc_cor':>8}{'F1':>6}"]
        for name, peer in report["peers"].items():
            local = peer.get("localisation") or {}
            lines.append(f"{name[:21]:<22}{_pct(peer['matched_fraction']):>9}  {_auroc_cell(peer):<22}"
                         f"{_auroc_cell(peer, 'auroc_right_answer'):<22}{_pct(local.get('acc_err')) if local else '-':>8}"
                         f"{_pct(local.get('acc_cor')) if local else '-':>8}{_pct(local.get('f1')) if local else '-':>6}")
    return "\n".join(lines)


def report_markdown(report: dict[str, Any]) -> str:
    classes = report["classes"]
    present = [k for k in CLASSES if k in classes]
    lines = [f"# procrl validate: {report.get('recipe')} on {report.get('data')}", "",
             f"Format {report.get('format')}, {report['n']} solutions: "
             + ", ".join(f"{classes[k]} {CLASS_LABELS[k]}" for k in present) + ".", ""]
    if report.get("overrides"):
        lines += ["Overrides: " + ", ".join(f"`{o}`" for o in report["overrides"]), ""]
    lines += ["| component | AUROC sound vs flawed [95% CI] | AUROC among right answers | "
              + " | ".join(f"mean {CLASS_LABELS[k]}" for k in present) + " | no opinion | acc_err | acc_cor | F1 |",
              "|---|---|---|" + "---|" * len(present) + "---|---|---|---|"]
    for name, stats in _rows_of(report):
        local = stats.get("localisation") or {}
        by_class = stats["by_class"]
        none = sum((by_class[k].get("none") or 0) * by_class[k]["n"] for k in by_class) / max(report["n"], 1)
        lines.append(f"| {name} | {_auroc_cell(stats)} | {_auroc_cell(stats, 'auroc_right_answer')} | "
                     + " | ".join(_fmt(by_class.get(k, {}).get("mean")) for k in present)
                     + f" | {_pct(none)} | {_pct(local.get('acc_err')) if local else ''} | "
                     f"{_pct(local.get('acc_cor')) if local else ''} | {_pct(local.get('f1')) if local else ''} |")
    lines += ["", f"AUROC: ties count half; interval: {report['settings']['resamples']} stratified bootstrap resamples, "
              f"seed {report['settings']['seed']}; among right answers: sound vs right answer but flawed, when each has "
              f">= {MIN_CLASS} scored solutions.", ""]
    lines += ["## Per class", "", "| component | class | n | mean | no opinion | fallback | no steps | unverified |",
              "|---|---|---|---|---|---|---|---|"]
    for name, stats in _rows_of(report):
        for klass, c in stats["by_class"].items():
            lines.append(f"| {name} | {CLASS_LABELS[klass]} | {c['n']} | {_fmt(c['mean'])} | {_pct(c.get('none'))} | "
                         f"{_pct(c.get('fallback')) if 'fallback' in c else ''} | {_pct(c['no_steps']) if 'no_steps' in c else ''} | "
                         f"{_pct(c['unverified']) if 'unverified' in c else ''} |")
    kinds = [(n, s["by_kind"]) for n, s in _rows_of(report) if s.get("by_kind")]
    if kinds:
        names = list(kinds[0][1])
        lines += ["", "## AUROC sound vs each kind of flaw", "", "| component | " + " | ".join(names) + " |",
                  "|---|" + "---|" * len(names)]
        lines += [f"| {n} | " + " | ".join(f"{_fmt(k[x]['auroc'])} (n={k[x]['n']})" for x in names) + " |" for n, k in kinds]
    judges = [(n, s) for n, s in report["components"].items() if "localisation" in s]
    if judges:
        lines += ["", "## First-error localisation on procrl's steps", "",
                  "| component | n sound | n flawed (label on procrl's steps) | acc_err | acc_cor | F1 | error found in flawed | "
                  "false alarms | labels outside procrl's steps |", "|---|---|---|---|---|---|---|---|---|"]
        for name, stats in judges:
            l = stats["localisation"]
            lines.append(f"| {name} | {l['n_correct']} | {l['n_error']} | {_pct(l['acc_err'])} | {_pct(l['acc_cor'])} | "
                         f"{_pct(l['f1'])} | {_pct(l['error_found'])} | {l['false_alarm']} | {l['label_not_on_procrl_steps']} |")
    breakdown = _localisation_rows(report)
    if breakdown:
        lines += ["", "## Where the first error is put on flawed rows", "",
                  "| judge | flawed | exact | early (by 1 / 2 / 3+) | late (by 1 / 2 / 3+) | none | no verdict | acc_err | acc_cor | F1 |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for name, local in breakdown:
            b = local["breakdown"]
            share = {k: _pct(b[k] / b["n"]) for k in ("exact", "early", "late", "none", "no_verdict")}
            lines.append(f"| {name} | {b['n']} | {share['exact']} | {share['early']} ({_by(b['early_by']).replace('/', ' / ')}) | "
                         f"{share['late']} ({_by(b['late_by']).replace('/', ' / ')}) | {share['none']} | {share['no_verdict']} | "
                         f"{_pct(local['acc_err'])} | {_pct(local['acc_cor'])} | {_pct(local['f1'])} |")
        lines += ["", "Exact: the labelled first wrong step; early / late: another step before / after it (counts by "
                  "distance in steps); none: no error found; a peer's steps are the data's own."]
    seg = report.get("segmentation")
    if seg:
        lines += ["", "## Step boundaries: the data's against procrl's", "",
                  f"- mean steps per solution: data {_fmt(seg['mean_data_steps'], 2)}, procrl {_fmt(seg['mean_procrl_steps'], 2)}",
                  f"- data step starts that start a procrl step: {_pct(seg['boundary_recall'])}; procrl step starts that "
                  f"start a data step: {_pct(seg['boundary_precision'])} (within procrl's reasoning: the answer line is no step)",
                  f"- identical boundaries: {_pct(seg['identical'])} of {seg['n']} solutions"]
    for name, stats in report["components"].items():
        a = stats.get("agreement")
        if a and a["labelled"]:
            lines += ["", f"## {name}: agreement with the labelled final-answer correctness", "",
                      f"{a['agree']} of {a['scored']} agree ({_pct(a['agreement'])}); {a['no_score']} labelled rows without a gold answer."
                      + ("" if len(a.get("by_kind") or {}) < 2 else " By kind: " + ", ".join(
                          f"{k} {v['agree']}/{v['scored']}" for k, v in a["by_kind"].items()) + "."), ""]
            for d in a["disagreements"]:
                lines.append(f"- `{d['id']}`: labelled {'right' if d['labelled_correct'] else 'wrong'}, predicted "
                             f"{d['predicted']!r}, gold {d['gold']!r}")
    if report["peers"]:
        lines += ["", "## Peers on the same rows", "",
                  "| peer | matched | AUROC sound vs flawed | AUROC among right answers | acc_err | acc_cor | F1 | step-count mismatches |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, p in report["peers"].items():
            l = p.get("localisation") or {}
            lines.append(f"| {name} | {p['matched']} ({_pct(p['matched_fraction'])}) | {_auroc_cell(p)} | "
                         f"{_auroc_cell(p, 'auroc_right_answer')} | {_pct(l.get('acc_err')) if l else '-'} | "
                         f"{_pct(l.get('acc_cor')) if l else '-'} | {_pct(l.get('f1')) if l else '-'} | "
                         f"{p.get('step_count_mismatch', '-')} |")
        lines += ["", f"Peer solution score: the minimum over steps; localisation: the first step below "
                  f"{report['settings']['peer_threshold']} on the data's own steps."]
    lines += ["", "![score distributions and ROC curves](validate.png)", ""]
    return "\n".join(lines)


# --- the plot ----------------------------------------------------------------------------------

_COLOURS = {SOUND: "#27ae60", RIGHT_FLAWED: "#e67e22", WRONG: "#c0392b", FLAWED_UNLABELLED: "#8e44ad"}


def plot_validation(items: list[Scored], report: dict[str, Any], peer_scores: dict[str, dict[str, Any]]):
    """Per component (and the total, and each peer): the score distribution of each class (share
    of the class per value: bars for a few discrete values, outlines of a 20-bin histogram
    otherwise), and below it the ROC curve sound vs flawed (dashed: among right answers)."""
    import textwrap

    from matplotlib.patches import Patch

    from procrl.observe.plots import new_figure
    from procrl.observe.stats import score_range

    panels: list[tuple[str, str | None, list[tuple[str, float]]]] = []
    for name, stats in report["components"].items():
        panels.append((name, stats["type"], [(i.klass, i.rewards[name]) for i in items if i.rewards.get(name) is not None]))
    panels.append(("weighted total", None, [(i.klass, i.total) for i in items if i.total is not None]))
    for name, scores in peer_scores.items():
        values = [(i.klass, scores[i.solution.id]) for i in items if i.solution.id in scores]
        panels.append((f"peer: {name}", None, [(k, min(v) if isinstance(v, list) else v) for k, v in values]))
    columns = min(len(panels), 4)
    blocks = math.ceil(len(panels) / columns)
    with_roc = bool(report["classes"].get(SOUND)) and len(report["classes"]) > 1  # else no curve to draw
    per_block = 2 if with_roc else 1
    figure = new_figure(3.5 * columns, (6.0 if with_roc else 3.0) * blocks + 0.9)
    axes = figure.subplots(per_block * blocks, columns, squeeze=False)
    for index in range(blocks * columns):
        top = axes[per_block * (index // columns)][index % columns]
        bottom = axes[per_block * (index // columns) + 1][index % columns] if with_roc else None
        if index >= len(panels):
            top.set_axis_off()
            if bottom is not None:
                bottom.set_axis_off()
            continue
        name, type_name, pairs = panels[index]
        present = [k for k in CLASSES if any(c == k for c, _ in pairs)]
        sound_count = sum(1 for c, _ in pairs if c == SOUND)
        top.set_title("\n".join(textwrap.wrap(name, 30)) + f"\nn = {len(pairs)} ({sound_count} sound)", fontsize=9)
        values = [v for _, v in pairs]
        if not values:
            top.set_axis_off()
            top.text(0.5, 0.5, "no scores", ha="center", va="center", transform=top.transAxes)
        else:
            low, high = score_range(type_name, values)
            distinct = sorted(set(values))
            if len(distinct) <= 4 and all(float(v).is_integer() for v in distinct):  # 0/1, -1/0: bars side by side
                width = 0.8 / max(len(present), 1)
                for j, klass in enumerate(present):
                    members = [v for c, v in pairs if c == klass]
                    heights = [sum(1 for v in members if v == d) / len(members) for d in distinct]
                    positions = [x + (j - (len(present) - 1) / 2) * width for x in range(len(distinct))]
                    top.bar(positions, heights, width=width, color=_COLOURS[klass])
                top.set_xticks(range(len(distinct)), [f"{d:.3g}" for d in distinct])
                top.set_xlim(-0.6, len(distinct) - 0.4)
            else:
                bins = [low + (high - low) * b / 20 for b in range(21)] if high > low else 10
                for klass in present:
                    members = [v for c, v in pairs if c == klass]
                    weights = [1 / len(members)] * len(members)
                    top.hist(members, bins=bins, weights=weights, histtype="stepfilled", alpha=0.18, color=_COLOURS[klass])
                    top.hist(members, bins=bins, weights=weights, histtype="step", linewidth=1.6, color=_COLOURS[klass])
            top.set_ylim(0, 1.05)
            top.set_xlabel("score")
            if index % columns == 0:
                top.set_ylabel("share of the class")
        if bottom is None:
            continue
        sound = [v for c, v in pairs if c == SOUND]
        flawed = [v for c, v in pairs if c != SOUND]
        right = [v for c, v in pairs if c == RIGHT_FLAWED]
        bottom.plot([0, 1], [0, 1], color="#bbbbbb", linewidth=1, linestyle=":")
        if sound and flawed:
            fpr, tpr = roc_points(sound, flawed)
            bottom.plot(fpr, tpr, color="#2c3e50", linewidth=1.8, label=f"sound vs flawed: {auroc(sound, flawed):.3f}")
            if len(sound) >= MIN_CLASS and len(right) >= MIN_CLASS:
                fpr, tpr = roc_points(sound, right)
                bottom.plot(fpr, tpr, color=_COLOURS[RIGHT_FLAWED], linewidth=1.4, linestyle="--",
                            label=f"among right answers: {auroc(sound, right):.3f}")
            bottom.legend(fontsize=7, loc="lower right", title="AUROC", title_fontsize=7)
        else:
            bottom.text(0.5, 0.5, "no ROC curve:\n" + ("no sound solutions" if not sound else "no flawed solutions"),
                        ha="center", va="center", fontsize=9, transform=bottom.transAxes)
        bottom.set_xlim(0, 1)
        bottom.set_ylim(0, 1.02)
        bottom.set_aspect("equal")
        bottom.set_xlabel("flawed passed (FPR)")
        if index % columns == 0:
            bottom.set_ylabel("sound passed (TPR)")
    classes = [k for k in CLASSES if k in report["classes"]]
    figure.legend(handles=[Patch(color=_COLOURS[k], label=CLASS_LABELS[k]) for k in classes], loc="outside lower center",
                  ncols=len(classes), fontsize=9, frameon=False)
    data = ", ".join(Path(part).name for part in str(report.get("data")).split(", "))
    what = ("score per class (top), ROC sound vs flawed (bottom)" if with_roc else
            "score per class (one class of sound/flawed only: no ROC curves)")
    figure.suptitle(f"{Path(str(report.get('recipe'))).name} on {textwrap.shorten(data, 90)}: {what}", fontsize=11)
    return figure


# --- files -------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(text).stem).strip("-") or "run"


VALIDATE = "validate"  # the command named in the folder marker (procrl/core/folders.py)


def choose_output_dir(output_dir: str | None, recipe: str, data: str | list[str], overwrite: bool,
                      command: str = VALIDATE) -> Path:
    """The directory to write to (default ``validate/<recipe>--<data>``), checked before any work
    by procrl's folder rule (procrl/core/folders.py): new, empty, written by an earlier validate
    (its report is replaced) or named by ``--overwrite``; anything else is refused."""
    if output_dir is None:
        files = [data] if isinstance(data, str) else list(data)
        directory = Path("validate") / (f"{_slug(recipe)}--{_slug(files[0])}"
                                        + (f"-and-{len(files) - 1}-more" if len(files) > 1 else ""))
    else:
        directory = Path(output_dir)
    check_folder(directory, command, overwrite=overwrite)
    return directory


def _row_record(item: Scored, names: list[str]) -> dict[str, Any]:
    s = item.solution
    return {
        "id": s.id, "record": s.record, "class": item.klass, "kind": s.kind, "label": s.label,
        "completion": s.completion,
        "procrl_label": item.procrl_label, "answer_correct": s.answer_correct, "gold": s.gold,
        "data_steps": len(s.data_spans) if s.data_spans is not None else None, "procrl_steps": len(item.procrl_spans),
        "rewards": {n: item.rewards.get(n) for n in names}, "reward": item.total,
        "verdicts": {n: {k: v for k, v in d.items() if k in ("index", "verdict", "checked_steps", "wrong_calculation",
                                                            "step_probabilities", "predicted")}
                     for n, d in item.diagnostics.items() if isinstance(d, dict)},
    }


def write_outputs(directory: Path, report: dict[str, Any], items: list[Scored], figure,
                  command: str = VALIDATE) -> list[str]:
    """Every file rendered first (secrets redacted: procrl/core/redaction.py), then written (each
    atomically): an error leaves nothing half-written."""
    import io

    from procrl.evaluation.score import _jsonable

    names = list(report["components"])
    report = redact(report)
    rows = "".join(json.dumps(_jsonable(redact(_row_record(i, names)))) + "\n" for i in items)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight", dpi=110)
    files = {
        "report.json": (json.dumps(_jsonable(report), indent=2) + "\n").encode(),
        "report.md": report_markdown(report).encode(),
        "rows.jsonl": rows.encode(),
        "validate.png": buffer.getvalue(),
    }
    try:
        claim_folder(directory, command)
        for name, data in files.items():
            write_file(directory, name, data)  # each complete or absent
    except OSError as error:
        raise ConfigError(f"--output-dir: cannot write in {directory} ({error.strerror or error})") from None
    return list(files)


# --- the command -------------------------------------------------------------------------------


def select_specs(specs: list, names: list[str] | None, first_error_only: bool = False) -> list:
    """The recipe's components restricted to ``names`` (plus the ones their gates read)."""
    if not names:
        return list(specs)
    known = [s.name for s in specs]
    for name in names:
        if name not in known:
            raise ConfigError(f"--component: no reward named {name!r} in the recipe{suggest(name, known)} (has: {', '.join(known)})")
    wanted = set(names)
    changed = True
    while changed:  # a gate needs the component it reads
        changed = False
        for spec in specs:
            if spec.name in wanted and spec.gate is not None and spec.gate.on not in wanted:
                wanted.add(spec.gate.on)
                changed = True
    return [s for s in specs if s.name in wanted]


@dataclass
class Validation:
    """A finished run: the report, the scored solutions, the peers' scores."""

    report: dict[str, Any]
    items: list[Scored]
    peer_scores: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_validation(recipe_path: str, overrides: list[str], data: str | list[str], components: list[str] | None = None,
                   limit: int | None = None, peers: list[tuple[str, list[str]]] | None = None, peer_threshold: float = 0.5,
                   device: str | None = None, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES,
                   batch_size: int = 64, progress: bool = False, specs_filter=None) -> Validation:
    """Read and check everything (recipe, data, peers) before scoring; score; compute the report."""
    from procrl.recipe import load_recipe
    from procrl.rewards.mix import RewardMix
    from procrl.rewards.protocol import RuntimeContext

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit: must be at least 1, got {limit}")
    if not 0.0 <= peer_threshold <= 1.0 and peers:
        raise ConfigError(f"--peer-threshold: must be in [0, 1], got {peer_threshold}")
    recipe = load_recipe(recipe_path, overrides, scoring=True)  # rewards only: no policy, no trainer
    specs = specs_filter(recipe.rewards) if specs_filter else select_specs(recipe.rewards, components)
    fmt, solutions = read_solutions(data, limit)
    peer_scores = {name: read_peer(path) for name, path in (peers or [])}
    mix = RewardMix(specs)
    if any(c.needs_model() for c in mix.components.values()):
        # torch before spaCy: the components load it anyway, and imported after spaCy (which then
        # hides it from thinc) DeepSpeed's accelerator probe would print to stdout
        import torch

        mix.bind(RuntimeContext(device=device or ("cuda" if torch.cuda.is_available() else "cpu")))
    items, failures = score_solutions(mix, solutions, batch_size=batch_size, progress=progress)
    peer_reports = {name: peer_report(items, scores, peer_threshold, seed, resamples) for name, scores in peer_scores.items()}
    report = {REPORT_MARKER: 1, "recipe": str(recipe_path), "overrides": redact_argv(list(overrides)), "data": data if isinstance(data, str) else ", ".join(map(str, data)), "format": fmt,
              **validation_report(mix, items, seed=seed, resamples=resamples, peers=peer_reports, failures=failures),
              "settings": {"seed": seed, "resamples": resamples, "min_class": MIN_CLASS, "peer_threshold": peer_threshold,
                           "limit": limit, "components": [s.name for s in specs]}}
    return Validation(report, items, peer_scores)


def quiet_stdout(active: bool):
    """With ``--json``, whatever the libraries print while components load and score (DeepSpeed's
    accelerator probe writes to stdout) goes to stderr: stdout holds the JSON alone."""
    import contextlib

    return contextlib.redirect_stdout(sys.stderr) if active else contextlib.nullcontext()


def _cmd_validate(args) -> int:
    peers = parse_peer_options(args.peer)
    directory = choose_output_dir(args.output_dir, args.recipe, args.data, args.overwrite)  # refused before any work
    with quiet_stdout(args.json):
        result = run_validation(args.recipe, args.overrides, args.data, components=args.component or None,
                                limit=args.limit, peers=peers, peer_threshold=args.peer_threshold, device=args.device,
                                seed=args.seed, progress=not (args.json or args.quiet))
    figure = plot_validation(result.items, result.report, result.peer_scores)
    result.report["output_dir"] = str(directory)
    files = write_outputs(directory, result.report, result.items, figure)
    if args.json:
        from procrl.evaluation.score import _jsonable

        print(json.dumps(_jsonable(result.report)))
    else:
        print(format_table(result.report))
        print(f"\nwrote {', '.join(str(directory / f) for f in files)}")
    return 0


def add_validate_command(commands) -> None:
    """Register ``procrl validate`` on the CLI's subparsers."""
    p = commands.add_parser(
        "validate", help="Score labelled solutions (sound and flawed) with a recipe's reward mix and report how well each "
                         "component tells them apart (AUROC, localisation, per class).",
        epilog="Formats (auto-detected): ProcessBench JSON/JSONL (problem, steps, label, final_answer_correct), MR-GSM8K "
               "rows (its eval_results/gpt4-grading/*.json as they are), BIG-Bench-Mistake rows (*.jsonl), ReasonEval "
               "dataset/perturbation.json, procrl JSONL (question, completion, answer, first_error).")
    p.add_argument("--recipe", required=True, help="Path to a recipe YAML file (its rewards: section is used).")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="Override a recipe key (dotted path; value parsed as YAML). Repeatable.")
    p.add_argument("--data", required=True, action="append", metavar="FILE",
                   help="Labelled solutions (see the formats below); repeatable for files of one format (a solution "
                        "two files share, by id, counts once).")
    p.add_argument("--component", action="append", default=[], metavar="NAME",
                   help="Score only this component (repeatable; also scored: the components their gates read; the "
                        "total is then over these). Default: every one.")
    p.add_argument("--limit", type=int, default=None, help="Only the first N solutions.")
    p.add_argument("--output-dir", default=None,
                   help="Where report.json, report.md, rows.jsonl and validate.png go (default: validate/<recipe>--<data>; "
                        "an earlier validate's report there is replaced).")
    p.add_argument("--overwrite", action="store_true",
                   help="Write into an --output-dir that procrl did not write (its other files are kept).")
    p.add_argument("--peer", action="append", default=[], metavar="NAME=FILE",
                   help="Published per-sample scores ({id, scores} per line) to report on the same rows. Repeatable; "
                        "the same NAME again adds a file to that peer.")
    p.add_argument("--peer-threshold", type=float, default=0.5,
                   help="A peer's first error: the first step whose score is below this (default 0.5).")
    p.add_argument("--device", default=None, help="Device of components with models (default: cuda when available).")
    p.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap intervals.")
    p.add_argument("--json", action="store_true", help="Print report.json instead of the table.")
    p.add_argument("--quiet", action="store_true", help="No progress bar.")
    p.set_defaults(handler=_cmd_validate)
