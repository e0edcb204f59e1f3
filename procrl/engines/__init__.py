"""procrl's rewards and process credit for other training engines, one module per engine, each an
:class:`~procrl.engines.protocol.EngineAdapter`: :mod:`.trl` (TRL scripts; public as ``procrl.trl``),
:mod:`.verl` (verl's reward function and token reward manager; public as ``procrl/verl.py``) and
:mod:`.server` (``procrl serve``: the mix over HTTP, OpenRLHF's remote reward model). docs/engines.md.
"""
