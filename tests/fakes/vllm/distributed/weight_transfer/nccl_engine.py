from vllm.distributed.weight_transfer import no_nccl


class NCCLWeightTransferEngine:
    trainer_init = staticmethod(no_nccl)
    trainer_send_weights = staticmethod(no_nccl)


def NCCLTrainerSendWeightsArgs(*args, **kwargs):  # noqa: N802 (vLLM's class name)
    no_nccl()
