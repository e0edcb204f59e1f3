"""The numbers of ``procrl validate``'s report.json, from the scored solutions
(:class:`procrl.evaluation.validate.scoring.Scored`): per component and for the weighted total, the
separation of sound from flawed, the per-class shares, the first-error localisation, the
agreement of accuracy components and the peers on the same rows (the module doc of
:mod:`procrl.evaluation.validate.run` says what each is)."""

from __future__ import annotations

from typing import Any

from procrl.core.numeric import mean as _mean
from procrl.evaluation.corpora import CLASSES, RIGHT_FLAWED, SOUND
from procrl.evaluation.validate.metrics import (
    BOOTSTRAP_RESAMPLES,
    auroc,
    bootstrap_auroc,
    boundary_agreement,
    first_below,
    processbench_metrics,
    sweep_thresholds,
)
from procrl.evaluation.validate.scoring import Scored
from procrl.rewards.first_error import FirstErrorReward
from procrl.rewards.judges import FAILURE_KINDS
from procrl.rewards.judges.prompt import CATEGORIES

__all__ = ["MIN_CLASS", "TOTAL", "localisation", "peer_report", "validation_report"]

MIN_CLASS = 10  # fewest scored solutions per class for the right-answer AUROC
TOTAL = "reward"  # the weighted total's name in the report (as in procrl score's rows)
# judge statuses that are a verdict or a defined score for "nothing to judge", not a failure
_JUDGED = ("ok", "unverified", "no_steps")


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


def _component_stats(
    items: list[Scored], name: str, score_of, first_error: bool, model_free: bool, seed: int, resamples: int
) -> dict[str, Any]:
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
            entry["fallback"] = _share(
                sum(name in i.fallbacks or (_no_opinion(i, name) and i.rewards.get(name) is not None) for i in members),
                len(members),
            )
        else:
            entry["none"] = _share(sum(i.total is None for i in members), len(members))
        if first_error:
            verdicts = [(i.diagnostics.get(name) or {}).get("verdict") for i in members]
            entry["no_steps"] = _share(sum(v == "no_steps" for v in verdicts), len(members))
            if model_free:  # only a model-free judge reports a chain it checked nothing in
                entry["unverified"] = _share(sum(v == "unverified" for v in verdicts), len(members))
        by_class[klass] = entry
    stats["by_class"] = by_class
    kinds = sorted({i.solution.kind for i in items if i.solution.kind and not i.solution.sound})
    if kinds and stats["n_sound"]:
        sound = [v for k, v in pairs if k == SOUND]
        stats["by_kind"] = {}
        for kind in kinds:
            flawed = [
                score_of(i)
                for i in items
                if i.solution.kind == kind and not i.solution.sound and score_of(i) is not None
            ]
            stats["by_kind"][kind] = {"n": len(flawed), "auroc": auroc(sound, flawed) if flawed else None}
    return stats


def _prediction(item: Scored, name: str) -> int | None:
    """The judge's first error on procrl's steps: its index; -1 for a chain a model-free judge
    found nothing to check in (its own verdict: no error found; the reward still gives it
    ``unverified_score``); None for no verdict (a failure, or no steps to judge)."""
    detail = item.diagnostics.get(name) or {}
    if detail.get("verdict") == "unverified":
        return -1
    index = detail.get("index")
    return index if detail.get("verdict") == "ok" and isinstance(index, int) else None


def localisation(items: list[Scored], name: str, step_scores: bool) -> dict[str, Any]:
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
    if step_scores:  # a judge giving a probability per step: its threshold swept
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

    found = [
        (i.klass, (i.diagnostics.get(name) or {}).get("category"))
        for i in items
        if isinstance((i.diagnostics.get(name) or {}).get("index"), int) and i.diagnostics[name]["index"] >= 0
    ]
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
    by_kind = {
        kind: {
            "scored": sum(1 for i in scored if i.solution.kind == kind),
            "agree": sum(1 for i in agree if i.solution.kind == kind),
        }
        for kind in kinds
    }
    return {
        "by_kind": by_kind,
        "labelled": len(labelled),
        "scored": len(scored),
        "no_score": len(labelled) - len(scored),
        "agree": len(agree),
        "agreement": _share(len(agree), len(scored)),
        "disagreements": [
            {
                "id": i.solution.id,
                "labelled_correct": i.solution.answer_correct,
                "predicted": (i.diagnostics.get(name) or {}).get("predicted"),
                "gold": i.solution.gold,
            }
            for i in disagree[:10]
        ],
    }


def peer_report(
    items: list[Scored], scores: dict[str, float | list[float]], threshold: float, seed: int, resamples: int
) -> dict[str, Any]:
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
    out["by_class"] = {
        k: {"n": sum(1 for c, _ in pairs if c == k), "mean": _mean([v for c, v in pairs if c == k])}
        for k in CLASSES
        if any(c == k for c, _ in pairs)
    }
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


def validation_report(
    mix,
    items: list[Scored],
    *,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
    peers: dict[str, dict[str, Any]] | None = None,
    failures: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """The numbers of report.json (everything but the run's description)."""

    components: dict[str, Any] = {}
    for name, spec in mix.specs.items():
        component = mix.components[name]
        is_judge = isinstance(component, FirstErrorReward)
        judge = component.judge_type if is_judge else None  # what the backend declares it is
        entry: dict[str, Any] = {"type": spec.type, "weight": spec.weight, "fallback": spec.fallback}
        counted = dict((failures or {}).get(name, {}))
        if is_judge:
            counted = {**dict.fromkeys(FAILURE_KINDS, 0), **counted}
        entry["failures"] = counted
        if is_judge:
            entry["backend"] = component.settings.backend
            entry["model"] = getattr(component.settings, "model", None)  # None: a model-free backend
            if judge.gives_step_scores:
                entry["threshold"] = component.settings.threshold
        entry.update(
            _component_stats(
                items,
                name,
                lambda i, n=name: i.rewards.get(n),
                is_judge,
                is_judge and judge.model_free,
                seed,
                resamples,
            )
        )
        if is_judge:
            entry["localisation"] = localisation(items, name, judge.gives_step_scores)
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
