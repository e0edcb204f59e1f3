"""A run of ``procrl audit``: the recipe's mix loaded as ``procrl score`` loads it (custom rewards,
judges behind a server: the same client, rate limits and fallbacks as training), the problems read,
the search, the report written into the output folder by procrl's folder rule."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procrl.core.config import ConfigError
from procrl.core.folders import check_folder, claim_folder, write_file
from procrl.core.redaction import redact

__all__ = ["AUDIT", "Audit", "audit_recipe", "check_output_dir", "default_output_dir", "write_outputs"]

AUDIT = "audit"  # the command named in the folder marker (procrl/core/folders.py)
DEFAULT_BUDGET = 8000  # scored texts: a model-free mix's audit fits in 2 minutes on a shared CPU (docs/audit.md)


@dataclass
class Audit:
    """A finished audit: report.json's content and the exit status it gives (0 clean, 1 gamed)."""

    report: dict[str, Any]

    @property
    def exit_status(self) -> int:
        return 1 if self.report["gamed"] else 0


def default_output_dir(recipe: str) -> Path:
    return Path("audit") / Path(recipe).stem


def audit_recipe(
    recipe_path: str,
    overrides: list[str] | None = None,
    *,
    tolerance: float = 0.0,
    budget: int = DEFAULT_BUDGET,
    minutes: float | None = None,
    problems: str | None = None,
    num_problems: int = 32,
    beam: int = 8,
    max_depth: int = 3,
    exploits: list[str] | None = None,
    batch_size: int = 64,
    progress: bool = True,
) -> Audit:
    """Search how the recipe's mix can be gamed (:func:`procrl.evaluation.audit.search.run_search`)
    and build the report; writes nothing (:func:`write_outputs` does)."""
    import math

    from procrl.evaluation.audit.report import build_report
    from procrl.evaluation.audit.search import load_problems, run_search
    from procrl.recipe import load_recipe
    from procrl.rewards.mix import RewardMix

    if not math.isfinite(tolerance) or tolerance < 0:
        raise ConfigError(f"--tolerance: must be a finite number >= 0, got {tolerance!r}")
    if minutes is not None and (not math.isfinite(minutes) or minutes <= 0):
        raise ConfigError(f"--minutes: must be a positive number, got {minutes!r}")
    overrides = list(overrides or [])
    recipe = load_recipe(recipe_path, overrides, scoring=True)  # rewards only: no model/trainer needed
    from procrl.data.qa import declared_answer_kind

    kind = declared_answer_kind(recipe.data)
    if kind not in (None, "number"):
        raise ConfigError(
            f"{recipe_path}: the audit builds its texts from math word problems with numeric answers; "
            f"this recipe's answers are {kind} (data.answer_kind)"
        )
    rows = load_problems(problems, num_problems)
    mix = RewardMix(recipe.rewards)
    search = run_search(
        mix,
        rows,
        budget=budget,
        minutes=minutes,
        beam=beam,
        max_depth=max_depth,
        batch_size=batch_size,
        exploits=exploits,
        progress=progress,
    )
    return Audit(build_report(search, tolerance, recipe_path, overrides))


def write_outputs(directory: Path, audit: Audit) -> list[str]:
    """report.json, report.md and audit.png, each rendered first (secrets redacted) and written
    atomically: an error leaves nothing half-written."""
    from procrl.evaluation.audit.report import plot_report, report_markdown
    from procrl.evaluation.score import _jsonable
    from procrl.observe.plots import figure_png

    report = redact(audit.report)
    files = {
        "report.json": (json.dumps(_jsonable(report), indent=2) + "\n").encode(),
        "report.md": report_markdown(report).encode(),
        "audit.png": figure_png(plot_report(report)),
    }
    try:
        claim_folder(directory, AUDIT)
        for name, data in files.items():
            write_file(directory, name, data)
    except OSError as error:
        raise ConfigError(f"--output-dir: cannot write in {directory} ({error.strerror or error})") from None
    return list(files)


def check_output_dir(directory: Path, overwrite: bool) -> None:
    """Before any work: the folder may be written by procrl's folder rule."""
    check_folder(directory, AUDIT, overwrite=overwrite)


def audit_before_training(recipe_path: str, overrides: list[str], settings: Any = None) -> int:
    """Training's gate: when the recipe's ``audit.before_training`` is on, audit its mix
    (``audit.tolerance``, ``audit.budget``; report in ``audit/<recipe name>``) and return 1 when
    something gamed is beyond the tolerance (training is not started); 0 otherwise, at once when
    the recipe does not ask. ``settings``: the recipe's ``audit`` section when the caller has
    loaded it (the recipe is then not read again)."""
    import sys

    from procrl.evaluation.audit.report import summary_lines
    from procrl.recipe import load_recipe

    if settings is None:
        try:
            settings = load_recipe(recipe_path, overrides).audit
        except ConfigError:
            return 0  # a bad recipe is training's to refuse, in its own order of checks and words
    if not settings.before_training:
        return 0
    directory = default_output_dir(recipe_path)
    check_output_dir(directory, overwrite=False)
    print(f"procrl: auditing the reward mix before training (audit.before_training; report in {directory})", flush=True)
    audit = audit_recipe(recipe_path, overrides, tolerance=settings.tolerance, budget=settings.budget)
    write_outputs(directory, audit)
    for line in summary_lines(audit.report):
        print(f"  {line}")
    if audit.exit_status:
        print(
            f"procrl: error: training not started: the reward mix can be gamed beyond audit.tolerance "
            f"({settings.tolerance:g}); see {directory / 'report.md'}, or set audit.before_training=false",
            file=sys.stderr,
            flush=True,
        )
    return audit.exit_status


def run_audit(
    recipe: str, overrides: list[str], output_dir: str | None, overwrite: bool, progress: bool, **search: Any
) -> int:
    """``procrl audit``: the output folder checked before any work, the audit (``search``: the
    arguments of :func:`audit_recipe`; ``budget`` None is :data:`DEFAULT_BUDGET`), its files written
    and its summary printed; returns the exit status (1: something gamed beyond the tolerance)."""
    import sys

    from procrl.evaluation.audit.report import summary_lines

    directory = Path(output_dir) if output_dir else default_output_dir(recipe)
    check_output_dir(directory, overwrite)  # before any work
    search["budget"] = search.get("budget") or DEFAULT_BUDGET
    audit = audit_recipe(recipe, overrides, progress=progress, **search)
    files = write_outputs(directory, audit)
    for line in summary_lines(audit.report):
        print(line)
    print(f"wrote {', '.join(files)} to {directory}")
    sys.stdout.flush()
    return audit.exit_status
