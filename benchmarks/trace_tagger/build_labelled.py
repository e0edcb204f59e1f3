"""Write the adjudicated labels and the per-split training files of the TRACE tagger.

Adjudication rule: labeller A's set wherever A and B disagree (B measures agreement; A followed
the guideline throughout). Reads ``data/sentences.jsonl`` and ``data/labels_A.jsonl``; writes
``data/labelled.jsonl`` (``{id, split, source, sentence, labels}``) and ``data/{train,dev,heldout}.jsonl``
in the ``procrl train-tagger`` format (``{"sentence", "labels"}``).

Usage: python benchmarks/trace_tagger/build_labelled.py
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parent / "data"


def main() -> None:
    sentences = [json.loads(line) for line in (DATA / "sentences.jsonl").read_text().splitlines() if line.strip()]
    labels_a = {
        row["id"]: row["labels"] for row in map(json.loads, (DATA / "labels_A.jsonl").read_text().splitlines()) if row
    }
    rows = [
        {
            "id": s["id"],
            "split": s["split"],
            "source": s["source"],
            "sentence": s["sentence"],
            "labels": labels_a[s["id"]],
        }
        for s in sentences
    ]
    with (DATA / "labelled.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    for split in ("train", "dev", "heldout"):
        with (DATA / f"{split}.jsonl").open("w", encoding="utf-8") as handle:
            for row in rows:
                if row["split"] == split:
                    handle.write(
                        json.dumps({"sentence": row["sentence"], "labels": row["labels"]}, ensure_ascii=False) + "\n"
                    )
        print(split, sum(r["split"] == split for r in rows))


if __name__ == "__main__":
    main()
