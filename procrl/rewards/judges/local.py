"""What the in-process model judges (``hf``, ``prm``) share: their common settings and lazy,
once-only loading of tokenizer and model (whole on every rank: a judge is never trained)."""

from __future__ import annotations

import threading
from typing import Any

from procrl.rewards.judges import Judge
from procrl.rewards.standalone import load_scoring_model

__all__ = ["LocalModelJudge"]


class LocalModelJudge(Judge):
    """Subclasses name their backend, pick the auto class and prepare the tokenizer."""

    backend = "local"

    def __init__(self, model: str, device: Any, batch_size: int, dtype: str, trust_remote_code: bool):
        if not model:
            raise ValueError(f"the {self.backend} judge needs a model")
        self.model_name = model
        self.device = device
        self.batch_size = max(1, batch_size)
        self.dtype = dtype
        self.trust_remote_code = trust_remote_code
        self._model = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _auto_class(self, path: str) -> Any:
        raise NotImplementedError

    def _prepare_tokenizer(self, tokenizer: Any) -> None:
        """Padding side and backend-specific checks (called before the model loads)."""

    def _load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            from transformers import AutoTokenizer

            from procrl.models import resolve_model_path

            path = resolve_model_path(self.model_name)
            tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=self.trust_remote_code)
            if tokenizer.pad_token is None:
                tokenizer.pad_token = tokenizer.eos_token
            self._prepare_tokenizer(tokenizer)
            self._model = load_scoring_model(
                self._auto_class(path), path, dtype=self.dtype, device=self.device,
                trust_remote_code=self.trust_remote_code,
            )
            self._tokenizer = tokenizer
