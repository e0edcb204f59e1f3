"""NCCL weight transfer (server mode) has no CPU stand-in in the vLLM test double."""


def _no_nccl(*args, **kwargs):
    raise RuntimeError("the vLLM test double has no NCCL weight transfer (server mode needs a GPU and real vLLM)")


trainer_init = packed_nccl_broadcast_producer = _no_nccl


class NCCLWeightTransferEngine:
    trainer_init = staticmethod(_no_nccl)
    trainer_send_weights = staticmethod(_no_nccl)


class NCCLTrainerSendWeightsArgs:
    def __init__(self, *args, **kwargs):
        _no_nccl()
