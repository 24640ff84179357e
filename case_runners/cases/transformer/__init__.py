"""transformer: the Transformer (big) translating WMT14 English to German, scored with BLEU (FlagPerf's transformer)."""
