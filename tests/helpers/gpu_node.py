"""A CPU machine that looks like a GPU node to ``accelerate launch``, and to it alone.

``accelerate launch`` with no config decides the number of processes from the devices it finds
(``accelerate.utils.get_torch_accelerator_backend()``: ``torch.accelerator.current_accelerator()``,
then ``torch.cuda.device_count()``); on a node with N GPUs it starts N plain data-parallel
processes. To reach that code on CPU, :func:`gpu_node` builds a second virtual environment that
layers on this one (its site-packages are this venv's, added by a ``.pth`` line) and, in the
``accelerate`` process only, makes torch report N CUDA devices of a given memory before anything
else runs (before procrl's start-up hook too, which reads the same torch functions). The processes
accelerate starts are plain Python processes of that environment: they see the real machine
(no GPU) and train on CPU over gloo, as the launch they were given says.

Nothing of procrl is replaced: accelerate's own launcher, procrl's hook and pre-launch checks run
as they would on a GPU node.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

EMULATION = '''
"""Make torch report {n} CUDA devices, in the ``accelerate`` launcher process only."""
import os
import sys

_name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
if os.environ.get("PROCRL_EMULATED_GPUS") and _name in ("accelerate", "accelerate-launch"):
    import types

    import torch

    _count = int(os.environ["PROCRL_EMULATED_GPUS"])
    _memory = os.environ.get("PROCRL_EMULATED_GPU_MEMORY", str(85_031_714_816))
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: _count
    torch.accelerator.current_accelerator = lambda check_available=False: torch.device("cuda")
    torch.accelerator.is_available = lambda: True
    torch.accelerator.device_count = lambda: _count

    def _properties(device=0):
        if _memory == "raise":  # a driver that fails the query, as one in the field does
            raise RuntimeError("CUDA error: unspecified launch failure (emulated driver error)")
        return types.SimpleNamespace(total_memory=int(_memory), name="emulated GPU", major=9, minor=0)

    torch.cuda.get_device_properties = _properties
'''


def gpu_node(root: Path) -> Path:
    """Build (once per ``root``) the layered environment; returns its ``accelerate`` command.
    Run it with :func:`node_env` to choose the device count and memory."""
    venv = root / "gpu-node-venv"
    accelerate = venv / "bin" / "accelerate"
    if accelerate.exists():
        return accelerate
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    ours = next(p for p in site.getsitepackages() if p.endswith("site-packages"))
    theirs = next((venv / "lib").glob("python3*/site-packages"))
    (theirs / "procrl_gpu_node_emulation.py").write_text(textwrap.dedent(EMULATION))
    # one line, run at interpreter start: this venv's packages importable, torch patched (launcher
    # only), then this venv's .pth files processed (procrl's editable install and start-up hook)
    (theirs / "00-procrl-gpu-node.pth").write_text(
        f"import sys, site; sys.path.append({ours!r}); import procrl_gpu_node_emulation; site.addsitedir({ours!r})\n"
    )
    accelerate.write_text(
        f"#!{venv / 'bin' / 'python'}\n"
        "import sys\n"
        "from accelerate.commands.accelerate_cli import main\n"
        "sys.exit(main())\n"
    )
    accelerate.chmod(0o755)
    return accelerate


def node_env(gpus: int, hf_home: Path, memory_bytes: int | str | None = None) -> dict[str, str]:
    """The variables of one emulated node: ``gpus`` devices (of ``memory_bytes`` each, default an
    80 GB card; ``"raise"``: the memory query raises, as a failing driver's does) and ``hf_home``
    as HF_HOME (where accelerate's default config lives)."""
    env = {"PROCRL_EMULATED_GPUS": str(gpus), "HF_HOME": str(hf_home)}
    if memory_bytes is not None:
        env["PROCRL_EMULATED_GPU_MEMORY"] = str(memory_bytes)
    return env


def write_default_config(hf_home: Path, **values) -> Path:
    """accelerate's default config (what ``accelerate config`` writes) under ``hf_home``."""
    import yaml

    config = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "MULTI_GPU",
        "num_machines": 1,
        "num_processes": 2,
        "mixed_precision": "no",
        "machine_rank": 0,
        "gpu_ids": "all",
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
        "debug": False,
    }
    config.update(values)
    path = hf_home / "accelerate" / "default_config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


__all__ = ["gpu_node", "node_env", "write_default_config"]
_ = os  # the module's users pass node_env() through tests.helpers.launch.run_command
