"""mmlu: FlagPerf's 5-shot MMLU inference cases over any decoder shape of the llama case (inference/ only)."""
