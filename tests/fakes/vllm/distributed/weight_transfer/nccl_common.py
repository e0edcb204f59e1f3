from vllm.distributed.weight_transfer import no_nccl as trainer_init  # noqa: F401
