"""t5_small: T5-small fine-tuned to summarise CNN/DailyMail, scored with ROUGE-1 (FlagPerf's t5_small)."""
