"""Driver: FlagPerf lifecycle events written as structured JSONL and `[PerfLog]` lines."""
