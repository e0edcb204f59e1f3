"""``procrl validate``: does a reward mix tell sound reasoning from flawed, on labelled solutions?

Run before any RL step. Each labelled solution (:mod:`procrl.evaluation.corpora` reads the public corpora's
formats) is scored exactly as training scores a completion: its steps joined as the model wrote
them, segmented by procrl's shared segmentation, every component of the recipe's mix and the
weighted total computed by :func:`procrl.evaluation.score.score_batch` (the code of ``procrl score``,
with its fallback policy: every row its own group), so nothing here is a second scoring path.
The data's first-error label is moved onto procrl's steps by character offsets
(:func:`procrl.evaluation.validate.metrics.map_label`). Reported, per component and for the total:

* AUROC sound vs flawed (ties count half) with a seeded stratified bootstrap 95% interval, and
  among right-answer solutions (sound vs right answer but flawed: the case process rewards exist
  for) when each of the two has at least :data:`~procrl.evaluation.validate.report.MIN_CLASS` scored solutions;
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

Here: a run (:func:`run_validation`), its output folder and files. The jobs it calls, one a
module: scoring (:mod:`~procrl.evaluation.validate.scoring`), peer files
(:mod:`~procrl.evaluation.validate.peers`), report.json's numbers
(:mod:`~procrl.evaluation.validate.report`, on :mod:`~procrl.evaluation.validate.metrics`),
the table and report.md (:mod:`~procrl.evaluation.validate.text`), validate.png
(:mod:`~procrl.evaluation.validate.plot`); the command line: :mod:`procrl.launch.commands.validate`.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError, suggest
from procrl.core.folders import check_folder, claim_folder, write_file
from procrl.core.redaction import redact, redact_argv
from procrl.evaluation.corpora import read_solutions
from procrl.evaluation.score import _jsonable
from procrl.evaluation.validate.metrics import BOOTSTRAP_RESAMPLES
from procrl.evaluation.validate.peers import read_peer
from procrl.evaluation.validate.report import MIN_CLASS, peer_report, validation_report
from procrl.evaluation.validate.scoring import Scored, score_solutions
from procrl.evaluation.validate.text import report_markdown
from procrl.recipe import load_recipe
from procrl.rewards.mix import RewardMix
from procrl.rewards.protocol import RuntimeContext

__all__ = ["Validation", "choose_output_dir", "quiet_stdout", "run_validation", "select_specs", "write_outputs"]

REPORT_MARKER = "procrl_validate"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(text).stem).strip("-") or "run"


VALIDATE = "validate"  # the command named in the folder marker (procrl/core/folders.py)


def choose_output_dir(
    output_dir: str | None, recipe: str, data: str | list[str], overwrite: bool, command: str = VALIDATE
) -> Path:
    """The directory to write to (default ``validate/<recipe>--<data>``), checked before any work
    by procrl's folder rule (procrl/core/folders.py): new, empty, written by an earlier validate
    (its report is replaced) or named by ``--overwrite``; anything else is refused."""
    if output_dir is None:
        files = [data] if isinstance(data, str) else list(data)
        directory = Path("validate") / (
            f"{_slug(recipe)}--{_slug(files[0])}" + (f"-and-{len(files) - 1}-more" if len(files) > 1 else "")
        )
    else:
        directory = Path(output_dir)
    check_folder(directory, command, overwrite=overwrite)
    return directory


def _row_record(item: Scored, names: list[str]) -> dict[str, Any]:
    s = item.solution
    return {
        "id": s.id,
        "record": s.record,
        "class": item.klass,
        "kind": s.kind,
        "label": s.label,
        "completion": s.completion,
        "procrl_label": item.procrl_label,
        "answer_correct": s.answer_correct,
        "gold": s.gold,
        "data_steps": len(s.data_spans) if s.data_spans is not None else None,
        "procrl_steps": len(item.procrl_spans),
        "rewards": {n: item.rewards.get(n) for n in names},
        "reward": item.total,
        "verdicts": {
            n: {
                k: v
                for k, v in d.items()
                if k in ("index", "verdict", "checked_steps", "wrong_calculation", "step_probabilities", "predicted")
            }
            for n, d in item.diagnostics.items()
            if isinstance(d, dict)
        },
    }


def write_outputs(
    directory: Path, report: dict[str, Any], items: list[Scored], figure, command: str = VALIDATE
) -> list[str]:
    """Every file rendered first (secrets redacted: procrl/core/redaction.py), then written (each
    atomically): an error leaves nothing half-written."""

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


def select_specs(specs: list, names: list[str] | None) -> list:
    """The recipe's components restricted to ``names`` (plus the ones their gates read)."""
    if not names:
        return list(specs)
    known = [s.name for s in specs]
    for name in names:
        if name not in known:
            raise ConfigError(
                f"--component: no reward named {name!r} in the recipe{suggest(name, known)} (has: {', '.join(known)})"
            )
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


def run_validation(
    recipe_path: str,
    overrides: list[str],
    data: str | list[str],
    components: list[str] | None = None,
    limit: int | None = None,
    peers: list[tuple[str, list[str]]] | None = None,
    peer_threshold: float = 0.5,
    device: str | None = None,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
    batch_size: int = 64,
    progress: bool = False,
    specs_filter=None,
) -> Validation:
    """Read and check everything (recipe, data, peers) before scoring; score; compute the report."""

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
        # torch before spaCy (segmentation: spacy): the components load it anyway, and imported after spaCy (which then
        # hides it from thinc) DeepSpeed's accelerator probe would print to stdout
        import torch

        mix.bind(RuntimeContext(device=device or ("cuda" if torch.cuda.is_available() else "cpu")))
    items, failures = score_solutions(mix, solutions, batch_size=batch_size, progress=progress)
    peer_reports = {
        name: peer_report(items, scores, peer_threshold, seed, resamples) for name, scores in peer_scores.items()
    }
    report = {
        REPORT_MARKER: 1,
        "recipe": str(recipe_path),
        "overrides": redact_argv(list(overrides)),
        "data": data if isinstance(data, str) else ", ".join(map(str, data)),
        "format": fmt,
        **validation_report(mix, items, seed=seed, resamples=resamples, peers=peer_reports, failures=failures),
        "settings": {
            "seed": seed,
            "resamples": resamples,
            "min_class": MIN_CLASS,
            "peer_threshold": peer_threshold,
            "limit": limit,
            "components": [s.name for s in specs],
        },
    }
    return Validation(report, items, peer_scores)


def quiet_stdout(active: bool):
    """With ``--json``, whatever the libraries print while components load and score (DeepSpeed's
    accelerator probe writes to stdout) goes to stderr: stdout holds the JSON alone."""

    return contextlib.redirect_stdout(sys.stderr) if active else contextlib.nullcontext()
