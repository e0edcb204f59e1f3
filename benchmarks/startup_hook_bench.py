"""Cost of procrl's recipe start-up hook (zzz-procrl-recipe-hook.pth) for Python starts that are
not recipes, against a naive hook that would import procrl to decide.

Measures, in one run:
  * hook: processing the installed .pth file the way ``site`` does (``site.addpackage``: open,
    read, exec the line) with ``sys.argv[0] = '-c'``, times 2 (a venv reads it twice);
  * naive: the extra start-up time of a hook that imports ``procrl.recipe`` on every start
    (``python -c 'import procrl.recipe'`` minus ``python -c pass``, medians, runs interleaved);
  * startup: the median wall time of ``python -c pass`` with the hook installed.

Prints hook / startup (the share of a start the hook costs) and naive / hook.

    python benchmarks/startup_hook_bench.py [--runs 15]
"""

from __future__ import annotations

import argparse
import site
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

PTH = "zzz-procrl-recipe-hook.pth"


def pth_cost(directory: str, repeats: int = 2000) -> float:
    """Seconds per processing of the .pth by site.addpackage (exec of its line included)."""
    saved = sys.argv
    sys.argv = ["-c"]
    try:
        start = time.perf_counter()
        for _ in range(repeats):
            site.addpackage(directory, PTH, set())
        return (time.perf_counter() - start) / repeats
    finally:
        sys.argv = saved


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="Interpreter starts per arm (interleaved).")
    args = parser.parse_args()
    directory = sysconfig.get_paths()["purelib"]
    if not (Path(directory) / PTH).is_file():
        sys.exit(f"{PTH} is not installed in {directory}: pip install -e .")
    hook = 2 * pth_cost(directory)
    plain, naive = [], []
    for _ in range(args.runs):
        plain.append(wall(["-c", "pass"]))
        naive.append(wall(["-c", "import procrl.recipe"]))
    startup = statistics.median(plain)
    naive_extra = max(statistics.median(naive) - startup, 0.0)
    print(f"hook (.pth processed twice, not a recipe): {hook * 1e6:8.2f} us per start")
    print(f"python -c pass (median of {args.runs}):      {startup * 1e3:8.2f} ms")
    print(f"naive hook (import procrl.recipe):        {naive_extra * 1e3:8.2f} ms per start")
    print(f"hook / startup = {hook / startup:.2e}   naive / hook = {naive_extra / hook:.0f}x")


if __name__ == "__main__":
    main()
