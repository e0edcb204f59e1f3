"""What the in-process model judges (``hf``, ``prm``) share: their common settings and lazy,
once-only loading of tokenizer and model (whole on every rank: a judge is never trained)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from procrl.models.standalone import load_scoring_model
from procrl.rewards.judges.protocol import Judge, JudgeItem, Verdict
from procrl.rewards.judges.settings import LocalModelSettings

__all__ = ["LocalModelJudge"]

logger = logging.getLogger(__name__)


class LocalModelJudge(Judge):
    """Subclasses name their backend, pick the auto class, prepare the tokenizer, run the model
    on a batch (:meth:`_model_outputs`) and read one verdict from each output (:meth:`_verdict`)."""

    backend = "local"
    loads_model = True

    @classmethod
    def from_settings(cls, settings: LocalModelSettings, device: Any = "cpu") -> LocalModelJudge:
        return cls(settings, device)

    def __init__(self, settings: LocalModelSettings, device: Any = "cpu"):
        if not settings.model:
            raise ValueError(f"the {self.backend} judge needs a model")
        self.model_name = settings.model
        self.gguf_file: str | None = None
        self.device = device
        self.batch_size = max(1, settings.batch_size)
        self.dtype = settings.dtype
        self.trust_remote_code = settings.trust_remote_code
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
            from procrl.models.loading import load_tokenizer_from, model_source

            source = model_source(self.model_name, self.gguf_file)
            tokenizer = load_tokenizer_from(source, trust_remote_code=self.trust_remote_code)
            self._prepare_tokenizer(tokenizer)
            self._model = load_scoring_model(
                self._auto_class(source.path),
                source,
                dtype=self.dtype,
                device=self.device,
                trust_remote_code=self.trust_remote_code,
            )
            self._tokenizer = tokenizer

    def _model_outputs(self, items: list[JudgeItem]) -> list[Any]:
        raise NotImplementedError

    def _verdict(self, item: JudgeItem, output: Any) -> Verdict:
        raise NotImplementedError

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        if not items:
            return []
        try:
            outputs = self._model_outputs(items)
        except Exception as error:  # e.g. out of memory: these samples fail, training goes on
            logger.warning(
                "first_error %s judge failed on %d items: %s: %s", self.backend, len(items), type(error).__name__, error
            )
            return [Verdict(None, status="judge_error", note=str(error)) for _ in items]
        return [self._verdict(item, output) for item, output in zip(items, outputs)]
