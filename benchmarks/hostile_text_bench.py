"""Scoring time of hostile completions: 1 KB, 16 KB, 256 KB and 1 MB (KiB/MiB) of parentheses,
``2 x 2 x ...`` chains, one long line of words, text without spaces, one line of LaTeX with units
and currency, and an answer line repeated to the end (a chat model at its token limit), scored by the CPU
recipe's reward mix plus the arithmetic first-error verifier and the reference judge (segmentation,
accuracy, format, TRACE with the cue tagger, first_error, reference) exactly as training scores a
batch, against a GSM8K-style gold solution; then the reference judge alone on a 1 MB gold solution
(it reads a gold to its first ``MAX_READ_CHARS`` characters and judges at most ``MAX_QUANTITIES``
quantities of a completion: bounded work whatever the size).

Linear growth shows as a constant time per MB; the last column is the growth from 16 KB to
the size against the size ratio (1.0: linear). A completion over the cap (1 MiB characters) is
``too_long``: it is not scored and costs next to nothing (last row). The naive baseline, in the
same run: spaCy on the raw line, as segmentation did before (its tokenizer strips affixes one at
a time, quadratic in the length of a token); run in a subprocess with a time limit.

    python benchmarks/hostile_text_bench.py [--sizes-kb 1 16 256 1024] [--naive-kb 1 4 16] [--naive-timeout 30]

Timings are wall-clock on whatever else the machine is doing: compare rows of one run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

KINDS = {
    "parentheses": lambda n: "(" * (n // 2) + ")" * (n - n // 2),
    "x chain": lambda n: ("2 x " * (n // 4 + 1))[: n - 4] + "= 4",
    "one long line": lambda n: ("Each box holds 12 apples and 3 boxes hold 36 apples so she has " * (n // 60 + 1))[:n],
    "no spaces": lambda n: ("3*4=12;(5+7)=12,$9.50x2=19" * (n // 26 + 1))[:n],
    # real notation: LaTeX with units and currency on one line, and an answer line repeated to the end
    "latex units": lambda n: (
        "\\[ 3 \\text{ boxes} \\times \\$2/\\text{box} = \\frac{12}{2} = \\$6 \\] " * (n // 60 + 1)
    )[:n],
    "#### repeats": lambda n: (
        "Each box holds 12 apples, so 3 boxes hold 3 * 12 = 36.\n" + ("#### 36\n" * (n // 8 + 1))[: n - 60]
    ),
}
COMPONENTS = {
    "accuracy": {"weight": 1.0},
    "format": {"weight": 0.2, "partial": True},
    "trace": {"weight": 0.2, "tagger": "cues"},
    "first_error": {"weight": 0.5, "backend": "arithmetic"},
    "reference": {"type": "first_error", "weight": 0.5, "backend": "reference"},
}
GOLD = "Each box holds 12 apples, so 3 boxes hold 3 * 12 = <<3*12=36>>36 apples.\n#### 36"
NAIVE = """
import sys, time, spacy
nlp = spacy.blank("en"); nlp.add_pipe("sentencizer")
text = open(sys.argv[1]).read()
start = time.perf_counter(); nlp(text); print(time.perf_counter() - start)
"""


def build_mix():
    from procrl.rewards import RewardMix, parse_rewards

    return RewardMix(parse_rewards(COMPONENTS))


def score_once(mix, text: str) -> tuple[float, dict[str, float], bool]:
    """Seconds to score one completion (a fresh batch: segmentation included), per component."""
    from procrl.rewards import RewardBatch

    batch = RewardBatch.from_texts([text], questions=["How many apples?"], golds=[GOLD])
    started = time.perf_counter()
    segmentations = batch.segmentations
    segmented = time.perf_counter() - started
    outputs = mix.score_all(batch)
    total = time.perf_counter() - started
    parts = {"segment": segmented, **{name: out.seconds for name, out in outputs.items()}}
    return total, parts, segmentations[0].too_long


def naive_spacy(text: str, timeout: float) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write(text)
    try:
        done = subprocess.run(
            [sys.executable, "-c", NAIVE, handle.name], capture_output=True, text=True, timeout=timeout
        )
        return (
            f"{float(done.stdout.strip()):.2f} s" if done.returncode == 0 else done.stderr.strip().splitlines()[-1][:40]
        )
    except subprocess.TimeoutExpired:
        return f"> {timeout:g} s"
    finally:
        Path(handle.name).unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[1, 16, 256, 1024])
    parser.add_argument("--naive-kb", type=int, nargs="*", default=[1, 4, 16])
    parser.add_argument("--naive-timeout", type=float, default=30.0)
    args = parser.parse_args()

    from procrl.core.text import MAX_CHARS, segment

    segment("Warm up the sentence pipeline.")
    mix = build_mix()
    reference = 16 if 16 in args.sizes_kb else args.sizes_kb[0]
    print(f"{'completion':<15}{'size':>8}{'seconds':>10}{'s per MB':>10}{'growth/size':>13}   slowest part")
    for kind, make in KINDS.items():
        base = None
        for kb in args.sizes_kb:
            text = make(kb * 1024)
            total, parts, too_long = score_once(mix, text)
            if kb == reference:
                base = total
            growth = f"{(total / base) / (kb / reference):.2f}" if base and kb > reference else ""
            slowest = max(parts, key=parts.get)
            note = "  (too_long)" if too_long else ""
            print(
                f"{kind:<15}{kb:>6} KB{total:>10.3f}{total / (kb / 1024):>10.2f}{growth:>13}   "
                f"{slowest} {parts[slowest]:.3f} s{note}",
                flush=True,
            )
    from procrl.rewards.judges.reference import judge_steps

    huge_gold = (
        GOLD.split("####")[0]
        + "".join(f"Then {i} + 1 = <<{i}+1={i + 1}>>{i + 1} apples.\n" for i in range((1 << 20) // 40))
        + "#### 36"
    )
    started = time.perf_counter()
    verdict = judge_steps("How many apples?", ("3 boxes hold 3 * 12 = 36 apples.",), huge_gold)
    print(
        f"{f'reference: {len(huge_gold) // 1024} KB gold':<23}{time.perf_counter() - started:>10.3f}"
        f"   verdict {verdict.index}: {verdict.note}"
    )
    over = KINDS["one long line"](MAX_CHARS + 1)
    total, _, too_long = score_once(mix, over)
    print(f"{'over the cap':<15}{'>1024 KB':>9}{total:>10.3f}{'':>10}{'':>13}   too_long: {too_long}")
    if args.naive_kb:
        print("\nnaive baseline: spaCy on the raw line (segmentation before the caps), parentheses")
        print(f"{'size':>8}{'naive spaCy':>14}{'procrl segment':>16}")
        for kb in args.naive_kb:
            text = KINDS["parentheses"](kb * 1024)
            started = time.perf_counter()
            segment(text)
            ours = time.perf_counter() - started
            print(f"{kb:>5} KB{naive_spacy(text, args.naive_timeout):>14}{ours:>14.3f} s", flush=True)


if __name__ == "__main__":
    main()
