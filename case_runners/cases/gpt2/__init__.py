"""gpt2: Megatron-GPT2 345M (transformers GPT2LMHeadModel) pretraining, LAMBADA last-token accuracy."""
