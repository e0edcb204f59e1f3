"""Layer 2, models: loading policies and scoring models (:mod:`~procrl.models.loading`,
:mod:`~procrl.models.standalone`), GGUF headers (:mod:`~procrl.models.gguf`) and the embedded models
(:mod:`~procrl.models.tiny`, :mod:`~procrl.models.reasoner`)."""
