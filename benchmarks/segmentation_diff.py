"""Where two sentence splitters segment differently, per corpus: procrl's own ``rules`` splitter
against spaCy's (the ``spacy`` extra), on every row of the corpora the digests read, with the
differing sentence boundaries counted by kind and shown. Also compares two ``--rows`` files of
``benchmarks/component_digest.py`` (before and after a change) and lists every changed verdict.

    python benchmarks/segmentation_diff.py splitters --gsm8k ../shared/data/gsm8k \\
        --mr-gsm8k MR_GSM8K_GIT --big-bench-mistake BBM_GIT --reasoneval REASONEVAL_GIT > splitters.md
    python benchmarks/segmentation_diff.py rows before-rows.jsonl after-rows.jsonl > verdicts.md
    python benchmarks/segmentation_diff.py speed --gsm8k ../shared/data/gsm8k   # completions/s, both splitters

Needs spaCy for ``splitters`` (``pip install 'procrl[spacy]'``).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def _segment_all(texts: list[str], splitter: str):
    from procrl.core import text

    text.use_sentence_splitter(splitter)
    return [text.segment(t) for t in texts]


def _kind(completion: str, boundary: int) -> str:
    """What stands around a sentence boundary only one splitter makes: the mark before it and the
    first character after it."""
    before = completion[max(0, boundary - 3) : boundary].rstrip()
    after = completion[boundary : boundary + 3].lstrip()[:1]
    mark = before[-1:] if before else ""
    first = (
        "upper" if after.isupper() else "digit" if after.isdigit() else "lower" if after.islower() else after or "end"
    )
    return f"after {mark!r} before {first}"


def splitters(args) -> int:
    from quantities_digest import corpora

    print(
        "| corpus | rows | sentences (spacy) | sentences (rules) | rows with other sentences | rows with other steps |"
    )
    print("|---|---|---|---|---|---|")
    kinds: collections.Counter = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as folder:
        for name, rows in corpora(args, Path(folder)).items():
            texts = [r.completion for r in rows]
            old = _segment_all(texts, "spacy")
            new = _segment_all(texts, "rules")
            other_sentences = other_steps = 0
            for completion, a, b in zip(texts, old, new):
                a_bounds = {s.start for s in a.sentences}
                b_bounds = {s.start for s in b.sentences}
                if a_bounds != b_bounds:
                    other_sentences += 1
                    for bound, who in [(x, "spacy only") for x in a_bounds - b_bounds] + [
                        (x, "rules only") for x in b_bounds - a_bounds
                    ]:
                        key = f"{who}: {_kind(completion, bound)}"
                        kinds[key] += 1
                        if len(examples[key]) < 3:
                            shown = completion[max(0, bound - 60) : bound + 40].replace("\n", "⏎")
                            examples[key].append(f"{shown[: min(60, bound)]}‖{shown[min(60, bound) :]}")
                if [(s.start, s.end) for s in a.steps] != [(s.start, s.end) for s in b.steps]:
                    other_steps += 1
            total_a = sum(len(s.sentences) for s in old)
            total_b = sum(len(s.sentences) for s in new)
            print(f"| {name} | {len(rows)} | {total_a} | {total_b} | {other_sentences} | {other_steps} |", flush=True)
    print("\n| boundary made by | count | examples (‖ marks the boundary) |\n|---|---|---|")
    for key, count in kinds.most_common():
        shown = "<br>".join(f"`{e}`" for e in examples[key])
        print(f"| {key} | {count} | {shown} |")
    return 0


def rows(args) -> int:
    def read(path):
        out = {}
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            out[(record["recipe"], record["corpus"], record["component"], record["row"])] = record
        return out

    before, after = read(args.before), read(args.after)
    changed = collections.Counter()
    total = collections.Counter()
    lines = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        total[key[:3]] += 1
        if a is None or b is None or a["score"] != b["score"] or a["steps"] != b["steps"]:
            changed[key[:3]] += 1
            score_a = None if a is None else a["score"]
            score_b = None if b is None else b["score"]
            steps_a = None if a is None or a["steps"] is None else len(a["steps"])
            steps_b = None if b is None or b["steps"] is None else len(b["steps"])
            lines.append(f"| {' | '.join(map(str, key))} | {score_a} | {score_b} | {steps_a} | {steps_b} |")
    print("| recipe | corpus | component | rows | rows changed |\n|---|---|---|---|---|")
    for key in sorted(total):
        print(f"| {' | '.join(key)} | {total[key]} | {changed[key]} |")
    print(f"\n{sum(changed.values())} of {sum(total.values())} scored rows changed.\n")
    print("| recipe | corpus | component | row | score before | after | steps before | after |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(lines[: args.limit]))
    return 0


def speed(args) -> int:
    """Completions segmented per second by each splitter, alternating runs, and their ratio."""
    import time

    from procrl.core import text

    texts = [json.loads(line)["answer"] for line in (Path(args.gsm8k) / "train.jsonl").read_text().splitlines()]
    texts = texts[: args.rows]
    rates: dict[str, list[float]] = {"spacy": [], "rules": []}
    for _ in range(args.runs):
        for splitter in rates:
            text.use_sentence_splitter(splitter)
            started = time.perf_counter()
            text.segment_batch(texts)
            rates[splitter].append(len(texts) / (time.perf_counter() - started))
    text.use_sentence_splitter("rules")
    best = {name: max(values) for name, values in rates.items()}
    for name, values in rates.items():
        print(f"{name}: {', '.join(f'{v:,.0f}' for v in values)} completions/s (best {best[name]:,.0f})")
    print(f"rules / spacy: {best['rules'] / best['spacy']:.1f}x ({len(texts)} GSM8K train solutions per run)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    split = sub.add_parser("splitters", help="where the rules and spaCy splitters differ, per corpus")
    for flag in ("--gsm8k", "--mr-gsm8k", "--big-bench-mistake", "--reasoneval"):
        split.add_argument(flag)
    diff = sub.add_parser("rows", help="changed verdicts between two component_digest --rows files")
    diff.add_argument("before")
    diff.add_argument("after")
    diff.add_argument("--limit", type=int, default=400, help="changed rows listed at most")
    timing = sub.add_parser("speed", help="completions per second, both splitters")
    timing.add_argument("--gsm8k", required=True)
    timing.add_argument("--rows", type=int, default=3000)
    timing.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    return {"splitters": splitters, "rows": rows, "speed": speed}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
