"""The LLM judge behind an OpenAI-compatible chat endpoint (vLLM ``serve``, TGI, OpenAI).

Async: at most ``concurrency`` requests in flight; each attempt has ``timeout_s`` seconds in
all, from connecting to the last byte of the reply (a server that drips its reply a byte at a
time cannot stretch it: httpx's own timeouts are per read); 429, 5xx, timeouts, connection
errors and a 200 whose body is not a chat completion (a proxy's HTML error page, truncated JSON)
are retried ``max_retries`` times with exponential backoff (``backoff_s * 2**attempt``,
jittered, ``Retry-After`` honoured up to 30 s); other 4xx are not retried. Replies are cached by (model, prompt), so a
prompt judged before (the same completion in a later epoch, a rerun of eval-judge) costs no request. The API key is read
from the environment variable named by ``api_key_env`` at request time; it is never stored.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections import OrderedDict

import httpx

from procrl.core.redaction import redact_url
from procrl.rewards.judges.prompt import build_prompt, parse_verdict
from procrl.rewards.judges.protocol import Judge, JudgeItem, Verdict
from procrl.rewards.judges.settings import OpenAISettings

__all__ = ["OpenAIJudge"]

logger = logging.getLogger(__name__)

_RETRY_AFTER_CAP_S = 30.0


def _reply_text(response: httpx.Response) -> str | None:
    """The assistant text of a chat completion, or None when the body is not one."""
    try:
        message = response.json()["choices"][0]["message"]
        # reasoning servers may put the whole reply in reasoning_content
        text = message.get("content") or message.get("reasoning_content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return text if isinstance(text, str) else None


class OpenAIJudge(Judge):
    Settings = OpenAISettings
    sends_requests = True
    reports_categories = True
    answer_kinds = ("number", "choice", "yes_no")  # the prompt asks for each (prompt.py)

    @classmethod
    def from_settings(cls, settings: OpenAISettings, device=None) -> OpenAIJudge:
        return cls(settings)

    def __init__(self, settings: OpenAISettings):
        if not settings.model:
            raise ValueError("the openai judge needs a model name")
        self.model = settings.model
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.api_key_env = settings.api_key_env
        self.concurrency = max(1, settings.concurrency)
        self.timeout_s = settings.timeout_s
        self.max_retries = max(0, settings.max_retries)
        self.backoff_s = settings.backoff_s
        self.max_tokens = settings.max_tokens
        self.temperature = settings.temperature
        self.reference = settings.reference
        self.categories = settings.categories
        self.cache_size = settings.cache_size
        self._cache: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._stats = {"requests": 0, "retries": 0, "cache_hits": 0}
        self._warned_missing_key = False
        self._ssl_context = None

    # -- helpers --

    def prompt(self, item: JudgeItem) -> str:
        return build_prompt(
            item.question, list(item.steps), item.gold if self.reference else None, self.categories, item.kind
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            elif not self._warned_missing_key:
                logger.warning(
                    "first_error judge: environment variable %s is not set; sending no API key", self.api_key_env
                )
                self._warned_missing_key = True
        return headers

    def _backoff(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            retry_after = response.headers.get("retry-after")
            try:
                if retry_after is not None:
                    return min(max(float(retry_after), 0.0), _RETRY_AFTER_CAP_S)
            except ValueError:
                pass
        return self.backoff_s * (2**attempt) * (1.0 + 0.25 * random.random())

    def _tls(self):
        """TLS settings for a client: none for plain http, else one context built once (loading
        the CA bundle takes tens of milliseconds, too much to repeat for every batch)."""
        if not self.url.startswith("https://"):
            return False
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    def _remember(self, key: tuple[str, str], text: str) -> None:
        if self.cache_size <= 0:
            return
        self._cache[key] = text
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    # -- requests --

    async def _complete(self, client: httpx.AsyncClient, prompt: str) -> tuple[str | None, str, str | None]:
        """The reply text and ``ok``, or None, the failure kind after all attempts and what the
        last attempt got (``HTTP 401 Unauthorized``: ``procrl check --probe-judge`` names it)."""
        key = (self.model, prompt)
        if key in self._cache:
            self._stats["cache_hits"] += 1
            self._cache.move_to_end(key)
            return self._cache[key], "ok", None
        payload = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        failure, reason = "http_error", None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._stats["retries"] += 1
            response = None
            try:
                self._stats["requests"] += 1
                # the deadline covers the whole attempt (httpx's timeout is per read)
                response = await asyncio.wait_for(
                    client.post(self.url, json=payload, headers=self._headers(), timeout=self.timeout_s), self.timeout_s
                )
            except (httpx.TimeoutException, asyncio.TimeoutError):
                failure, reason = "timeout", f"no complete reply within timeout_s {self.timeout_s:g} s"
            except httpx.TransportError as error:
                failure, reason = "connection_error", f"{type(error).__name__} connecting to {redact_url(self.url)}"
                logger.debug("first_error judge: %s: %s", type(error).__name__, error)
            else:
                status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
                if response.status_code == 429 or response.status_code >= 500:
                    failure, reason = "http_error", f"{status} from {redact_url(self.url)}"
                elif response.status_code >= 400:
                    logger.warning(
                        "first_error judge: HTTP %d from %s (not retried)", response.status_code, redact_url(self.url)
                    )
                    return None, "http_error", f"{status} from {redact_url(self.url)} (not retried)"
                else:
                    text = _reply_text(response)
                    if text is not None:
                        self._remember(key, text)
                        return text, "ok", None
                    # an HTML error page, truncated JSON: retried
                    failure, reason = (
                        "bad_response",
                        f"{status} from {redact_url(self.url)} that is not a chat completion",
                    )
            if attempt < self.max_retries:
                await asyncio.sleep(self._backoff(attempt, response))
        return None, failure, reason

    async def _judge_one(self, client, semaphore, item: JudgeItem) -> Verdict:
        async with semaphore:
            text, status, reason = await self._complete(client, self.prompt(item))
        if text is None:
            return Verdict(None, status=status, note=reason)
        parsed = parse_verdict(text, len(item.steps))
        return Verdict(parsed.index, status=parsed.status, category=parsed.category, note=text)

    async def judge(self, items: list[JudgeItem]) -> list[Verdict]:
        self._stats = {"requests": 0, "retries": 0, "cache_hits": 0}
        # Client and semaphore belong to the running event loop, so they are made per call.
        semaphore = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        async with httpx.AsyncClient(limits=limits, verify=self._tls()) as client:
            return list(await asyncio.gather(*(self._judge_one(client, semaphore, item) for item in items)))

    def judge_sync(self, items: list[JudgeItem]) -> list[Verdict]:
        return asyncio.run(self.judge(items))

    def stats(self) -> dict[str, float]:
        return {key: float(value) for key, value in self._stats.items()}
