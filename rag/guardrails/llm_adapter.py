"""How NeMo Guardrails reaches this project's LLM, offline.

Every ``ChatLLM`` (``rag.llm.OpenAIChatLLM`` for the bundled llama.cpp server, NIM, vLLM...; the deterministic
``FakeLLM`` in tests) is wrapped as a nemoguardrails ``LLMModel`` and handed to ``LLMRails(llm=...)``: the rails'
calls (the LLM self-check) go through the pipeline's own client, with its timeout, retries, failover and request
counts, never through a second HTTP client of nemoguardrails' own that would ignore them."""
from __future__ import annotations

import asyncio
from typing import Any

from rag.llm import ChatLLM


def _content(message: Any) -> tuple[str, str]:
    if isinstance(message, dict):
        return str(message.get("role", "user")), str(message.get("content") or "")
    role = getattr(message, "role", "user")
    role = getattr(role, "value", role)
    content = getattr(message, "content", "")
    if isinstance(content, list):  # multimodal parts: keep the text
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(role), str(content or "")


class ChatLLMModel:
    """A ``ChatLLM`` seen through nemoguardrails' ``LLMModel`` protocol (non-streaming; stream yields one chunk)."""

    def __init__(self, llm: ChatLLM):
        self.llm = llm

    @property
    def model_name(self) -> str:
        return getattr(self.llm, "model_id", "ragdoctor-llm")

    @property
    def provider_name(self) -> str | None:
        return "ragdoctor"

    @property
    def provider_url(self) -> str | None:
        return getattr(self.llm, "base_url", None)

    def _messages(self, prompt: Any) -> list[dict[str, str]]:
        if isinstance(prompt, str):
            return [{"role": "user", "content": prompt}]
        out = []
        for m in prompt:
            role, content = _content(m)
            out.append({"role": {"bot": "assistant", "human": "user", "developer": "system"}.get(role, role),
                        "content": content})
        return out

    async def generate_async(self, prompt: Any, *, stop: list[str] | None = None, **kwargs: Any):
        from nemoguardrails.types import LLMResponse, UsageInfo  # noqa: PLC0415 - nemoguardrails (1 s): rails on only

        messages = self._messages(prompt)
        resp = await asyncio.to_thread(self.llm.chat, messages, temperature=float(kwargs.get("temperature") or 0.0),
                                       max_tokens=int(kwargs.get("max_tokens") or 256))
        text = resp.text
        for s in stop or []:
            if s and s in text:
                text = text[: text.index(s)]
        usage = UsageInfo(input_tokens=resp.prompt_tokens or 0, output_tokens=resp.completion_tokens or 0,
                          total_tokens=(resp.prompt_tokens or 0) + (resp.completion_tokens or 0))
        return LLMResponse(content=text, model=resp.model, finish_reason="stop", usage=usage)

    async def stream_async(self, prompt: Any, *, stop: list[str] | None = None, **kwargs: Any):
        from nemoguardrails.types import LLMResponseChunk  # noqa: PLC0415 - nemoguardrails (1 s): rails on only

        resp = await self.generate_async(prompt, stop=stop, **kwargs)
        yield LLMResponseChunk(delta_content=resp.content, model=resp.model, finish_reason="stop")
