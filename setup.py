"""Build customisation (metadata lives in pyproject.toml): install procrl's recipe start-up hook.

``zzz-procrl-recipe-hook.pth`` goes to the root of site-packages, for a regular install (through
``build_lib``, like any top-level file of the wheel) and for ``pip install -e .`` (written into the
editable wheel, next to setuptools' own ``__editable__`` .pth). See procrl_recipe_hook.py for what
the line does and why it costs nothing for other Python starts. The name sorts after the other
.pth files so that editable installs and path entries of dependencies are set up before it runs.
"""

from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build import build

PTH_NAME = "zzz-procrl-recipe-hook.pth"
PTH_LINE = (
    "import sys; getattr(sys, 'argv', None) and sys.argv[0].lower()"
    ".endswith(('.yaml', '.yml', 'accelerate', 'accelerate-launch'))"
    " and __import__('procrl_recipe_hook').run()\n"
)


class build_recipe_hook(Command):
    description = "write the procrl recipe start-up hook (.pth)"
    user_options: list = []

    def initialize_options(self):
        self.build_lib = None
        self.editable_mode = False  # set by setuptools' editable_wheel
        self._outputs: list[str] = []

    def finalize_options(self):
        self.set_undefined_options("build", ("build_lib", "build_lib"))

    def run(self):
        if self.editable_mode:
            # editable wheels take build outputs from the source tree; non-package files go to
            # install_lib, which editable_wheel points at the wheel's root
            target = Path(self.get_finalized_command("install").install_lib)
        else:
            target = Path(self.build_lib)
        target.mkdir(parents=True, exist_ok=True)
        path = target / PTH_NAME
        path.write_text(PTH_LINE, encoding="utf-8")
        self._outputs = [str(path)]

    def get_outputs(self):
        return self._outputs


class build_with_recipe_hook(build):
    sub_commands = [*build.sub_commands, ("build_recipe_hook", None)]


setup(cmdclass={"build": build_with_recipe_hook, "build_recipe_hook": build_recipe_hook})
