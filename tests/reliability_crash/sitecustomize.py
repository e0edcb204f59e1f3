"""Test-only crash injection (tests/test_reliability_resume.py puts this directory on PYTHONPATH).

With PROCRL_TEST_KILL_AT=checkpoint-N, the process that writes ``checkpoint-N/trainer_state.json``
(transformers writes it last, after weights, optimizer and RNG states) writes half of it, dumps
the log history it holds to PROCRL_TEST_REFERENCE and SIGKILLs itself: a kill -9 in the middle
of a checkpoint write, at a deterministic moment."""

import os

if os.environ.get("PROCRL_TEST_KILL_AT"):
    import importlib.abc
    import sys

    def _patch(module):
        import json
        import signal

        original = module.TrainerState.save_to_json

        def save_to_json(self, json_path):
            folder = os.path.basename(os.path.dirname(os.path.abspath(json_path)))
            if folder != os.environ["PROCRL_TEST_KILL_AT"]:
                return original(self, json_path)
            with open(os.environ["PROCRL_TEST_REFERENCE"], "w") as handle:
                json.dump(self.log_history, handle)
            text = json.dumps({"global_step": self.global_step, "log_history": self.log_history}, indent=2)
            with open(json_path, "w") as handle:
                handle.write(text[: len(text) // 2])
            os.kill(os.getpid(), signal.SIGKILL)

        module.TrainerState.save_to_json = save_to_json

    class _PatchOnImport(importlib.abc.MetaPathFinder):
        """Patch transformers.trainer_callback right after it is imported (not before: importing
        transformers here would slow down every process, the launcher included)."""

        def find_spec(self, name, path, target=None):
            if name != "transformers.trainer_callback":
                return None
            sys.meta_path.remove(self)
            import importlib.util

            spec = importlib.util.find_spec(name)
            loader = spec.loader
            original_exec = loader.exec_module

            def exec_module(module):
                original_exec(module)
                _patch(module)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _PatchOnImport())
