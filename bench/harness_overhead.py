"""Harness overhead: the default case through the playbook against the same case run directly.

Alternates `ansible-playbook run_case.yml` and `python -m case_runners run` on the same case, at 1 and at
3 rounds, and reports
- fixed cost: what the playbook adds once per run (preflight, runtime check, summary);
- per-round cost: what it adds to each further round — the target is at most 1.5 s
  (FlagPerf sleeps 60 s after every launch, then polls every 10 s).
Both paths train the same seeded case for the same number of steps, so the training time cancels out.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bench.alternation import added_costs, alternate
from case_runners.run_options import ArgumentParser

VENV_BIN = Path(sys.executable).parent
TARGET_PER_ROUND_S = 1.5


def commands(case: str, steps: int, rounds: int, results: Path) -> dict[str, list[str]]:
    overrides = {"max_steps": steps}
    selection = {"case": case, "repeat": rounds, "overrides": overrides}
    return {
        "playbook": [str(VENV_BIN / "ansible-playbook"), "run_case.yml", "-e",
                     json.dumps({"perfplay_cases": [selection], "perfplay_results_dir": str(results)})],
        "direct": [sys.executable, "-m", "case_runners", "run", case, "--repeat", str(rounds),
                   "--set", f"max_steps={steps}", "--results-dir", str(results)],
    }


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="digits_cnn")
    parser.add_argument("--steps", type=int, default=60, help="training steps per round (fixed work)")
    parser.add_argument("--pairs", type=int, default=2, help="alternated playbook/direct pairs per round count")
    args = parser.parse_args()
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    with tempfile.TemporaryDirectory(prefix="perfplay-bench-") as tmp:
        med = alternate(("playbook", "direct"),
                        lambda way, rounds: commands(args.case, args.steps, rounds, Path(tmp))[way], args.pairs, env)
    fixed, per_round = added_costs(med, "playbook", "direct")
    print(f"\nmedian wall time, 1 round:  playbook {med['playbook', 1]:.2f} s, direct {med['direct', 1]:.2f} s")
    print(f"median wall time, 3 rounds: playbook {med['playbook', 3]:.2f} s, direct {med['direct', 3]:.2f} s")
    print(f"playbook fixed cost per run:   {fixed:.2f} s (preflight, runtime check, summary)")
    verdict = "PASS" if per_round <= TARGET_PER_ROUND_S else "FAIL"
    print(f"playbook overhead per round:   {per_round:.2f} s (target <= {TARGET_PER_ROUND_S:g} s) {verdict}")
    return 0 if verdict == "PASS" else 1  # a missed target fails `make bench`


if __name__ == "__main__":
    raise SystemExit(main())
