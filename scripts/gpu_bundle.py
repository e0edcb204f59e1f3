"""Build the carry bundle: the wheels a bare GPU machine lacks to run benchmarks/gpu_acceptance.py.

The GPU machine lent for checks has no network and no package index; what a run needs beyond its
image travels with the working tree, 64 MiB in all, tracked files included. Its image (Python
3.12, torch, transformers, accelerate, peft, pyarrow, pandas, xxhash, msgpack, psutil, pydantic,
einops, ninja, py-cpuinfo, sympy, nvidia-ml-py, sentence-transformers and more) lacks TRL,
DeepSpeed, datasets and the math verifier, which every training phase imports. This script
downloads those wheels (pure Python, or built for the target CPython) into an ignored folder,
builds DeepSpeed's wheel from its source distribution with no ops compiled ahead of time, checks
that every file installs on the target, writes ``BUNDLE.json`` (file, size, sha256, why) and prints
the bundle's size beside the tree's: their sum must stay under 64 MiB.

    python scripts/gpu_bundle.py                                      # .gpu-bundle, CPython 3.12
    python scripts/gpu_bundle.py --python-version 3.11 --dest .gpu-bundle-cp311   # a CPU rehearsal

On the GPU machine (docs/cost-at-scale.md gives the whole command):

    python3 -m pip install -q --no-index --no-deps --target SITE .gpu-bundle/*.whl
    export PYTHONPATH=SITE
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
CARRY_LIMIT = 64 * MIB
MANIFEST = "BUNDLE.json"

# (requirement, why it travels). Versions are pinned: the bundle is what the rehearsal proved.
WHEELS = [
    ("trl==1.16.0", "the trainers (GRPO, and the base of procrl's PPO)"),
    # datasets >= 4.7 is TRL 1.16's floor; every such release declares pyarrow >= 21 (5.1 and
    # later >= 24); 5.0.0 has the lowest pyarrow floor (21) and the widest fsspec range (<=
    # 2026.4.0) of those, and accepts huggingface_hub < 2 (the image has 1.33)
    ("datasets==5.0.0", "TRL imports it; procrl's data loading (pyarrow >= 21 from the image)"),
    ("dill==0.4.1", "datasets (< 0.4.2)"),
    ("multiprocess==0.70.19", "datasets (< 0.70.20); one wheel per CPython version"),
    ("math-verify==0.9.0", "the accuracy reward's answer check"),
    ("latex2sympy2_extended==1.11.0", "math-verify (== 1.11.0)"),
    ("antlr4-python3-runtime==4.13.2", "latex2sympy2_extended (4.9.3-4.13.2)"),
    ("hjson==3.1.0", "DeepSpeed's config reader"),
]
# built here from the source distribution: DeepSpeed publishes no wheel
SDISTS = [("deepspeed==0.19.8", "ZeRO-3 for the GRPO phases; no ops built ahead of time (DS_BUILD_OPS=0)")]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
# GSM8K train (MIT): the 7B shapes' stand-in tokenizers are trained on it and the TRACE phase scores
# its reference solutions (benchmarks/real_shapes.py); it lies beside the checkout, not in it
GSM8K_FILES = ("train.jsonl", "LICENSE")


def find_gsm8k() -> Path | None:
    """The folder holding GSM8K's ``train.jsonl``, as benchmarks/real_shapes.py finds it."""
    if os.environ.get("PROCRL_GSM8K_TRAIN"):
        return Path(os.environ["PROCRL_GSM8K_TRAIN"]).parent
    for parent in REPO.parents:
        if (parent / "shared" / "data" / "gsm8k" / "train.jsonl").is_file():
            return parent / "shared" / "data" / "gsm8k"
    return None


def fail(message: str) -> None:
    print(f"gpu_bundle: {message}", file=sys.stderr)
    raise SystemExit(2)


def pip(args: list[str], env: dict | None = None) -> None:
    command = [sys.executable, "-m", "pip", *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        fail(f"pip {args[0]} failed ({done.returncode}): {tail[-800:]}")


def wheel_fits(name: str, python: str) -> bool:
    """Whether a wheel's file name says it installs on CPython ``python`` on x86-64 Linux."""
    stem = name[: -len(".whl")]
    parts = stem.split("-")
    if len(parts) < 5:
        return False
    py_tags, abi_tags, platform_tags = (set(part.split(".")) for part in parts[-3:])
    cp = "cp" + python.replace(".", "")
    py_ok = bool(py_tags & {"py3", f"py{python.replace('.', '')}", cp})
    abi_ok = bool(abi_tags & {"none", "abi3", cp})
    platform_ok = "any" in platform_tags or any(
        re.fullmatch(r"(manylinux\d*(_\d+_\d+)?|linux)_x86_64", tag) for tag in platform_tags
    )
    return py_ok and abi_ok and platform_ok


def tree_bytes() -> tuple[int, int]:
    """The bytes of the tracked files and of the untracked, not ignored ones (both travel)."""

    def total(args: list[str]) -> int:
        listed = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True).stdout
        paths = [REPO / p.decode() for p in listed.split(b"\0") if p]
        return sum(p.stat().st_size for p in paths if p.is_file() and not p.is_symlink())

    return total(["ls-files", "-z"]), total(["ls-files", "-z", "--others", "--exclude-standard"])


def clear_previous(dest: Path) -> None:
    """Remove what an earlier run of this script wrote to ``dest``, and nothing else."""
    manifest = dest / MANIFEST
    if not dest.exists():
        return
    if not dest.is_dir():
        fail(f"--dest {dest} exists and is not a folder")
    if not manifest.is_file():
        if any(dest.iterdir()):
            fail(f"--dest {dest} holds files this script did not write (no {MANIFEST}); choose another folder")
        return
    try:
        recorded = json.loads(manifest.read_text())
        files = [entry["file"] for entry in recorded["wheels"]]
        data = [entry["file"] for entry in recorded.get("data", [])]
    except (ValueError, KeyError, TypeError) as error:
        fail(f"{manifest} is not this script's manifest ({error}); remove the folder yourself")
    for name in files:
        path = dest / Path(name).name  # a manifest names files in dest (and dest/gsm8k) only
        if path.is_file():
            path.unlink()
    for name in data:
        path = dest / "gsm8k" / Path(name).name
        if path.is_file():
            path.unlink()
    if (dest / "gsm8k").is_dir() and not any((dest / "gsm8k").iterdir()):
        (dest / "gsm8k").rmdir()
    manifest.unlink()


def build(dest: Path, python: str) -> list[dict]:
    cp = python.replace(".", "")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        wheels_dir = work / "wheels"
        platform_args = [arg for p in PLATFORMS for arg in ("--platform", p)]
        pip(
            [
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                python,
                "--implementation",
                "cp",
                "--abi",
                f"cp{cp}",
                "--abi",
                "abi3",
                "--abi",
                "none",
                *platform_args,
                "-d",
                str(wheels_dir),
                *[req for req, _ in WHEELS],
            ]  # fmt: skip
        )
        sdist_dir = work / "sdists"
        pip(["download", "--no-deps", "--no-binary=:all:", "-d", str(sdist_dir), *[req for req, _ in SDISTS]])
        # DS_BUILD_OPS=0: no CUDA/C++ op is compiled here (none would match the GPU machine); the
        # build's own environment has no torch, so the wheel is pure Python (py3-none-any)
        env = {**os.environ, "DS_BUILD_OPS": "0"}
        for sdist in sorted(sdist_dir.iterdir()):
            pip(["wheel", "--no-deps", "-w", str(wheels_dir), str(sdist)], env=env)
        why = {re.split(r"[=<>!~]", req)[0].lower().replace("-", "_"): note for req, note in [*WHEELS, *SDISTS]}
        entries = []
        dest.mkdir(parents=True, exist_ok=True)
        for wheel in sorted(wheels_dir.glob("*.whl")):
            if not wheel_fits(wheel.name, python):
                fail(f"{wheel.name} does not install on CPython {python} x86-64 Linux")
            data = wheel.read_bytes()
            shutil.copy2(wheel, dest / wheel.name)
            project = wheel.name.split("-")[0].lower()
            entries.append(
                {
                    "file": wheel.name,
                    "bytes": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "why": why.get(project, ""),
                }
            )
        stray = sorted(p.name for p in wheels_dir.iterdir() if p.suffix != ".whl")
        if stray:
            fail(f"pip left files that are not wheels: {', '.join(stray)}")
    return entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python-version", default="3.12", help="The target CPython, MAJOR.MINOR (the GPU image: 3.12)."
    )
    parser.add_argument("--dest", type=Path, default=REPO / ".gpu-bundle", help="The folder to fill (ignored by git).")
    parser.add_argument(
        "--gsm8k",
        type=Path,
        default=find_gsm8k(),
        help="The folder holding GSM8K's train.jsonl and LICENSE (default: shared/data/gsm8k beside the checkout).",
    )
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.\d{1,2}", args.python_version):
        parser.error(f"--python-version: {args.python_version!r} is not MAJOR.MINOR of a CPython 3")
    if args.gsm8k is None or not all((args.gsm8k / name).is_file() for name in GSM8K_FILES):
        parser.error(f"--gsm8k: no {' and '.join(GSM8K_FILES)} in {args.gsm8k} (GSM8K train, MIT)")
    dest = args.dest.resolve()
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", str(dest)]).returncode == 0
    if dest.is_relative_to(REPO) and not ignored:
        fail(f"--dest {dest} is inside the repository and not ignored by git: it would be committed")
    clear_previous(dest)
    entries = build(dest, args.python_version)
    (dest / "gsm8k").mkdir(exist_ok=True)
    data = []
    for name in GSM8K_FILES:
        shutil.copyfile(args.gsm8k / name, dest / "gsm8k" / name)
        content = (dest / "gsm8k" / name).read_bytes()
        data.append({"file": name, "bytes": len(content), "sha256": hashlib.sha256(content).hexdigest()})
    manifest = {"python": args.python_version, "platforms": PLATFORMS, "wheels": entries, "data": data}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    bundle = sum(e["bytes"] for e in [*entries, *data]) + (dest / MANIFEST).stat().st_size
    tracked, untracked = tree_bytes()
    width = max(len(e["file"]) for e in entries)
    for e in entries:
        print(f"{e['file']:<{width}}  {e['bytes'] / MIB:6.2f} MiB  {e['why']}")
    for e in data:
        print(
            f"{'gsm8k/' + e['file']:<{width}}  {e['bytes'] / MIB:6.2f} MiB  GSM8K train (MIT): tokenizers, TRACE rows"
        )
    total = bundle + tracked + untracked
    print(
        f"bundle     {dest}: {len(entries)} wheels + GSM8K train, {bundle:,} bytes ({bundle / MIB:.2f} MiB),"
        f" CPython {args.python_version}"
    )
    print(f"tracked    {tracked:,} bytes ({tracked / MIB:.2f} MiB)  (git ls-files)")
    print(f"untracked  {untracked:,} bytes ({untracked / MIB:.2f} MiB)  (not ignored: they travel too)")
    print(f"sum        {total:,} bytes ({total / MIB:.2f} MiB) of the {CARRY_LIMIT // MIB} MiB a device call carries")
    if total >= CARRY_LIMIT:
        print(
            f"gpu_bundle: over the {CARRY_LIMIT // MIB} MiB limit by {(total - CARRY_LIMIT) / MIB:.2f} MiB",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
