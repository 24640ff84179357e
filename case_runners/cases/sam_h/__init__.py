"""sam_h: FlagPerf's Segment Anything (ViT-H) inference case (an inference case only: no training part)."""
