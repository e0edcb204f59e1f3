"""``procrl evaluate --wandb``: the report's scalars, plots and a completions table logged to a W&B run of job
type ``evaluate``, secrets redacted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from procrl.core.redaction import redact
from procrl.evaluation.evaluate.report import ACCURACY_KEYS
from procrl.observe import stats as diag
from procrl.observe.wandb import wandb_dir
from procrl.rewards.protocol import RewardBatch

# Imported where used: wandb (an optional extra, needed with --wandb only).
__all__ = ["log_to_wandb", "scalar_metrics"]


def scalar_metrics(report: dict[str, Any]) -> dict[str, float]:
    """Every accuracy of the report and its standard error, flat (``answer_accuracy``,
    ``answer_accuracy_stderr``, ``pass@4``, ...), None values left out."""
    flat = {key: report.get(key) for name in ACCURACY_KEYS for key in (name, f"{name}_stderr")}
    flat.update(report.get("sampled", {}))
    return {k: float(v) for k, v in flat.items() if v is not None}


def log_to_wandb(report, outputs, types, directory: Path, recipe, completions, questions) -> None:
    import wandb

    with wandb_dir(str(directory)):  # W&B's files under the report's directory, as a training run's under output_dir
        run = wandb.init(
            project=recipe.logging.wandb_project or "procrl",
            entity=recipe.logging.wandb_entity,
            job_type="evaluate",
            config=redact(
                {
                    "model": report["model"],
                    "split": report["split"],
                    "n": report["n"],
                    "generation": report["generation"],
                }
            ),
        )
    scalars = {f"eval/{k}": v for k, v in scalar_metrics(report).items()}
    scalars.update(
        {f"eval/rewards/{k}/mean": c["mean"] for k, c in report["components"].items() if c["mean"] is not None}
    )
    images = {f"eval/{Path(p).stem}": wandb.Image(str(directory / p)) for p in report["plots"]}
    table = wandb.Table(columns=["question", "completion", "steps", "first_error", *[f"reward/{k}" for k in outputs]])
    batch = RewardBatch.from_texts(completions, questions)
    for row in diag.step_rows(batch, outputs, types):
        table.add_data(
            redact(row["question"]),
            redact(row["completion"]),
            redact(row["steps"]),
            str(row["first_error"]),
            *[row[f"reward/{k}"] for k in outputs],
        )
    run.log({**scalars, **images, "eval/completions": table})
    run.summary.update(scalars)
    run.finish()
