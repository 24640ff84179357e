"""bert: BERT-large masked-LM pretraining on pre-tokenised .npz shards."""
