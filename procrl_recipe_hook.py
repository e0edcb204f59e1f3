"""Start-up hook that lets ``python RECIPE.yaml`` and ``accelerate launch RECIPE.yaml`` train.

accelerate runs its script with the Python interpreter (``python FILE`` for one process,
``python -u FILE`` under torchrun for several) and never looks at the extension, so a procrl
recipe given as the "script" reaches Python. ``zzz-procrl-recipe-hook.pth`` (installed into
site-packages with procrl) runs this line at every interpreter start::

    import sys; sys.argv[0][-5:].lower() in ('.yaml', '.yml') ... and __import__('procrl_recipe_hook').run()

It costs one string comparison for every other start: this module is imported only when the
script's name ends in ``.yaml``/``.yml`` (or is ``accelerate``/``accelerate-launch``), and
``procrl`` only when the file (for accelerate: one of its ``.yaml`` arguments) also has the
recipe marker line ``recipe: procrl/v1`` at the top level.

In the ``accelerate launch ... RECIPE.yaml`` process itself it runs procrl's pre-launch checks
(vLLM, GPUs: procrl/launch/prelaunch.py; models and data findable: procrl/recipe/findable.py)
before accelerate starts any process, and ends it with one line per problem and exit status 2
when the machine cannot run the recipe. Any other file is left to Python untouched (read once,
never written). For a recipe, it runs ``procrl train RECIPE ARGS...`` in this process and ends
the interpreter with that exit status (a .pth line cannot raise SystemExit: atexit handlers run,
streams are flushed, then ``os._exit``). The script never runs as Python.

Turn it off with ``PROCRL_RECIPE_HOOK=0``. Python started with ``-S`` or ``-I`` skips .pth
files, and then a recipe runs as Python (and fails): use ``procrl train`` there.
"""

import os
import sys

MARKER = "procrl/v1"  # the value of procrl.recipe.MARKER; kept here so no procrl import is needed
_MAX_BYTES = 1 << 20
_ran = False


def has_marker(path: str) -> bool:
    """Whether ``path`` has a top-level ``recipe: procrl/v1`` line (plain text scan, no YAML)."""
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return False
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("recipe:"):
                    value = line[len("recipe:") :].split("#", 1)[0].strip().strip("'\"")
                    if value == MARKER:
                        return True
    except OSError:
        return False
    return False


def _exit_code(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def run() -> None:
    """Called from the .pth line when ``sys.argv[0]`` ends in .yaml/.yml or is accelerate's."""
    global _ran
    if _ran:  # in a venv the .pth line runs twice (site-packages is reached through lib and lib64)
        return
    _ran = True
    script = sys.argv[0] if sys.argv else ""
    if os.environ.get("PROCRL_RECIPE_HOOK", "1") == "0":
        return
    name = os.path.basename(script)
    if name == "accelerate" and sys.argv[1:2] == ["launch"]:
        _check_accelerate_launch(sys.argv[2:])
        return
    if name == "accelerate-launch":
        _check_accelerate_launch(sys.argv[1:])
        return
    if not script.lower().endswith((".yaml", ".yml")) or not has_marker(script):
        return
    code = 1
    try:
        # custom reward modules next to the recipe or in the cwd: procrl.recipe.load_recipe puts
        # both directories on sys.path, in every process that reads the recipe
        from procrl.launch.accelerate import run_recipe_script

        code = _exit_code(run_recipe_script(script, sys.argv[1:]))
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # noqa: BLE001 - report like an uncaught exception would, then exit
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        _finish(code)


def _check_accelerate_launch(args: list) -> None:
    """In the ``accelerate launch`` process, when one of its arguments is a procrl recipe: the
    launch decided (the recipe's launch section's flags put in front of accelerate's arguments when
    the user chose no launch) and the pre-launch checks run
    (procrl.launch.accelerate.check_accelerate_launch) before accelerate parses its arguments and
    starts any process; on a problem, its lines and exit status 2, without accelerate's traceback.
    A check that raises is one warning line and the decided launch goes on; a launch that cannot be
    decided is one error line and exit status 2, and no rank starts."""
    if not any(arg.lower().endswith((".yaml", ".yml")) and has_marker(arg) for arg in args):
        return  # not a recipe launch (an accelerate config file has no marker): procrl is not imported
    code = None
    try:
        from procrl.launch.accelerate import check_accelerate_launch

        code, launch_args = check_accelerate_launch(list(args))
        if launch_args is not None and launch_args != list(args):
            sys.argv[len(sys.argv) - len(args) :] = launch_args  # what accelerate's parser reads next
    except KeyboardInterrupt:
        code = 130
    except Exception as error:  # noqa: BLE001 - fail-closed: what procrl cannot decide, accelerate must not guess
        # (accelerate alone would count the GPUs and start N plain data-parallel ranks of the recipe)
        message = str(error).strip().splitlines()[0] if str(error).strip() else "no message"
        print(
            f"procrl: error: cannot decide the launch ({type(error).__name__}: {message}); nothing was started",
            file=sys.stderr,
            flush=True,
        )
        code = 2
    if code is not None:
        _finish(code)
    try:  # accelerate prints its command line when a rank fails (CalledProcessError): redacted as procrl's console is
        from procrl.core.redaction import redact_argv, redacted_console

        redact_argv(list(args))  # registers the --set secrets
        redacted_console().__enter__()  # for the rest of the launcher's life
    except Exception:  # noqa: BLE001 - redaction that cannot be set up must not stop a launch
        pass


def _finish(code: int) -> None:
    """End the interpreter as a normal exit would: join threads, atexit, flush, then _exit."""
    try:
        threading = sys.modules.get("threading")
        if threading is not None and hasattr(threading, "_shutdown"):
            threading._shutdown()
        import atexit

        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)
