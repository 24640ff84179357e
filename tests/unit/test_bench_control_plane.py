"""bench/control_plane.py's judgement: what each host adds to a further round, and a verdict that is PASS or MISSED
only when every repeat agrees; noise that straddles the target cannot be judged (and exits non-zero)."""

from __future__ import annotations

import pytest

from bench.control_plane import per_host, verdict


def test_what_a_host_adds_is_the_slope_over_the_sizes_not_the_round_per_host():
    # A round costs 1.0 s of its own and 0.3 s per host.
    assert per_host([2, 4, 8], [1.6, 2.2, 3.4]) == pytest.approx(0.3)
    assert per_host([2], [1.6]) == pytest.approx(0.8), "one size: the round's CPU per host, its own part included"


@pytest.mark.parametrize(("figures", "word", "code"), [
    ([0.31, 0.35, 0.38], "PASS", 0),
    ([0.45, 0.52, 0.61], "MISSED", 1),
    ([0.35, 0.52, -0.04], "CANNOT JUDGE", 2),  # the noise swamps the figure
    ([0.2], "CANNOT JUDGE", 2),  # one run says nothing of its noise
])
def test_a_verdict_needs_every_repeat_on_one_side_of_the_target(figures, word, code):
    text, got = verdict(figures, 0.4)
    assert text.startswith(word) and got == code
