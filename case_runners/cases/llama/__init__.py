"""llama: a decoder LLM (transformers' LlamaForCausalLM) pretrained on a flat token file; the token file format,
its check and its preparation from a text tree are in data.py, dataset.py and prepare.py."""
