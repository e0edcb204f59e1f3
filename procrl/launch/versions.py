"""The GPU stack's versions: a vLLM outside the range the installed TRL supports is refused.

TRL reaches into vLLM's internals to push the policy's weights (colocate: the engine's model
runner ``load_weights``; server: ``vllm.distributed.weight_transfer``) and only warns when vLLM is
outside its range. procrl refuses instead, in one line naming both versions, before anything
loads (``procrl check`` and the pre-launch checks of ``procrl train`` / ``accelerate launch``).

The range is TRL's own: its ``vllm`` extra as its installed metadata declares it
(``vllm>=0.22.0,<=0.31.0`` for TRL 1.16), compared as TRL compares it (the base version, so a
post-release of a supported version passes). Versions are read from the installed packages'
metadata (``importlib.metadata``), without importing vLLM.
"""

from __future__ import annotations

from importlib import metadata

__all__ = ["VLLM_EXTRA", "installed_version", "trl_vllm_range", "vllm_version_problem"]

# procrl's own ``vllm`` extra (pyproject.toml): inside TRL's range, and the versions whose torch and
# transformers requirements keep the CPU suite's (docs/scaling-out.md, "Installing on a GPU machine").
VLLM_EXTRA = ">=0.27.1,<0.31"


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed.

    Args:
        distribution: the distribution's name (``vllm``, ``trl``).

    Returns:
        Its version string as its metadata gives it.
    """
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def trl_vllm_range() -> str | None:
    """The vLLM versions the installed TRL supports: the specifier of ``vllm`` in TRL's ``vllm``
    extra (its installed metadata), e.g. ``<=0.31.0,>=0.22.0``; None when TRL is not installed or
    declares none.

    Returns:
        The specifier as a string.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirements = metadata.requires("trl") or []
    except metadata.PackageNotFoundError:
        return None
    for line in requirements:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.name.lower() == "vllm" and str(requirement.specifier):
            return str(requirement.specifier)
    return None


def vllm_version_problem() -> str | None:
    """One line when the installed vLLM is outside the installed TRL's range, naming both
    versions and what to install; None when vLLM is absent, within the range, or TRL declares no
    range.

    Returns:
        The problem, or None.
    """
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    vllm = installed_version("vllm")
    supported = trl_vllm_range()
    if vllm is None or supported is None:
        return None
    try:
        base = Version(Version(vllm).base_version)  # as TRL's is_vllm_available compares it
    except InvalidVersion:
        return f"vllm {vllm} is not a version TRL can compare; install procrl's extra: pip install 'vllm{VLLM_EXTRA}'"
    if SpecifierSet(supported).contains(base, prereleases=True):
        return None
    return (
        f"vllm {vllm} is outside the vLLM versions TRL {installed_version('trl')} supports ({supported}); "
        f"install procrl's tested set: pip install 'vllm{VLLM_EXTRA}' (or pip install 'procrl[vllm]')"
    )
