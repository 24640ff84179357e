"""bert_hf: BERT-large masked-LM training (transformers BertForMaskedLM) on FlagPerf's flat .npy token streams."""
