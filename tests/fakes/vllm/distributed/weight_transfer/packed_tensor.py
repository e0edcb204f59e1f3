from vllm.distributed.weight_transfer import no_nccl as packed_nccl_broadcast_producer  # noqa: F401
