"""vit_l_16: FlagPerf's ViT-L/16 inference case (an inference-only case: inference/, no training config)."""
