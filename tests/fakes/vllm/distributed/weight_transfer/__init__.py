"""NCCL weight transfer (server mode) has no CPU stand-in in the vLLM test double: every entry
point TRL's VLLMClient imports raises."""


def no_nccl(*args, **kwargs):
    raise RuntimeError("the vLLM test double has no NCCL weight transfer (server mode needs a GPU and real vLLM)")
