"""How procrl's CPU threads wait, decided before torch loads.

PyTorch's CPU kernels run on OpenMP threads, and by default a thread that finishes its share of
a kernel spins, busy-waiting for the next one, instead of sleeping. On a machine whose cores are
shared (two procrl commands at once, a training run beside a test run), the spinning threads of
one process take the cores the other one needs, and both slow down far more than twice
(docs/cpu-lab.md, "Two commands on one machine", has the measurements). A passive wait (the
thread sleeps until there is work) costs a process running alone next to nothing on the small
models procrl trains on a CPU, and keeps two processes at about twice their time alone.

So procrl sets ``OMP_WAIT_POLICY=PASSIVE`` when it is imported before torch (every procrl
command and ``procrl.run`` import procrl first), unless the variable is already set: set it
yourself (``OMP_WAIT_POLICY=ACTIVE``) to override, and ``OMP_NUM_THREADS`` (or
``torch.set_num_threads``) for the number of threads, which procrl leaves to torch.
"""

from __future__ import annotations

import os
import sys

__all__ = ["WAIT_POLICY", "configure_thread_waits"]

WAIT_POLICY = "PASSIVE"


def configure_thread_waits() -> bool:
    """Set ``OMP_WAIT_POLICY`` for the OpenMP runtime that torch loads, unless the user set it or
    torch (and so OpenMP, which reads it once) is loaded already; returns whether it was set."""
    if "OMP_WAIT_POLICY" in os.environ or "torch" in sys.modules:
        return False
    os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
    return True
