"""Test-only crash injection (tests/test_reliability_resume.py and tests/test_reliability_safety.py
put this directory on PYTHONPATH).

* PROCRL_TEST_KILL_AT=checkpoint-N: the process that writes ``checkpoint-N/trainer_state.json``
  (transformers writes it last, after weights, optimizer and RNG states) writes half of it, dumps
  the log history it holds to PROCRL_TEST_REFERENCE and SIGKILLs itself: a kill -9 in the middle
  of a checkpoint write, at a deterministic moment.
* PROCRL_TEST_TERM_AT=final-config: the process that writes the ``config.json`` of the final model
  (a model config written under PROCRL_TEST_OUTPUT_DIR, outside any ``checkpoint-N``; it is the
  first file ``save_pretrained`` writes) writes half of it and sends itself SIGTERM: a stop
  (``kill PID``, a scheduler's preemption) during the final save."""

import os

if os.environ.get("PROCRL_TEST_KILL_AT") or os.environ.get("PROCRL_TEST_TERM_AT"):
    import importlib.abc
    import sys

    def _patch_trainer_callback(module):
        import json
        import signal

        if not os.environ.get("PROCRL_TEST_KILL_AT"):
            return
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

    def _patch_configuration_utils(module):
        import signal

        if os.environ.get("PROCRL_TEST_TERM_AT") != "final-config":
            return
        original = module.PretrainedConfig.to_json_file
        run_dir = os.path.abspath(os.environ["PROCRL_TEST_OUTPUT_DIR"])

        def to_json_file(self, json_file_path, use_diff=True):
            path = os.path.abspath(str(json_file_path))
            inside = path.startswith(run_dir + os.sep)
            parts = os.path.relpath(path, run_dir).split(os.sep) if inside else []
            if not inside or any(part.startswith("checkpoint-") for part in parts):
                return original(self, json_file_path, use_diff)
            text = self.to_json_string(use_diff=use_diff)
            with open(json_file_path, "w", encoding="utf-8") as handle:
                handle.write(text[: len(text) // 2])
            os.kill(os.getpid(), signal.SIGTERM)
            return original(self, json_file_path, use_diff)  # reached only when SIGTERM did not stop the process

        module.PretrainedConfig.to_json_file = to_json_file

    _PATCHES = {
        "transformers.trainer_callback": _patch_trainer_callback,
        "transformers.configuration_utils": _patch_configuration_utils,
    }

    class _PatchOnImport(importlib.abc.MetaPathFinder):
        """Patch the modules right after they are imported (not before: importing transformers
        here would slow down every process, the launcher included)."""

        busy = set()

        def find_spec(self, name, path, target=None):
            if name not in _PATCHES or name in self.busy:
                return None
            import importlib.util

            self.busy.add(name)  # find the real spec without coming back here for this name
            try:
                spec = importlib.util.find_spec(name)
            finally:
                self.busy.discard(name)
            patch = _PATCHES.pop(name)
            loader = spec.loader
            original_exec = loader.exec_module

            def exec_module(module):
                original_exec(module)
                patch(module)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _PatchOnImport())
