"""case_runners report on run directories built from valid records: the page's sections, what it says when there
is nothing to show, escaping, refusal of what is not a run, and a file written only when its content changed."""

from __future__ import annotations

import html
import json
import re
import shutil
import time
from pathlib import Path

from case_runners.cli.main import main
from case_runners.monitors.spec import SAMPLES_SUFFIX
from case_runners.rank.driver import events as ev
from case_runners.rank.driver.events import EventLogger
from case_runners.records.names import INFERENCE_STEP_NAMES
from case_runners.records.resolved import ResolvedConfig
from case_runners.records.round_build import write_round_record
from case_runners.views.report import REPORT_NAME
from case_runners.views.report.data import read_run
from case_runners.views.report.sections import SECTION_IDS, render_report
from record_helpers import (
    inference_rank_result,
    node_result,
    resolved,
    round_record,
    write_node,
    write_resolved,
)


def make_run(root: Path, statuses: list[str], reason: str | None = "boom", **record: object) -> Path:
    """A run directory of digits_cnn at 1x1 with a round record per status."""
    config = resolved(repeat=len(statuses))
    run_dir = root / "run20250101000000"
    case_dir = run_dir / config["case_id"]
    case_dir.mkdir(parents=True)
    write_resolved(case_dir / "resolved_config.json", config)
    for number, status in enumerate(statuses, 1):
        (case_dir / f"round{number}").mkdir()
        doc = round_record(config, number, status, None if status == "success" else reason,
                           metrics={"p_train": 900.0 + number}, **record)
        (case_dir / f"round{number}" / "round_record.json").write_text(json.dumps(doc))
    return run_dir


def report(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main(["report", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def sections(page: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', page, re.S))


def nav(page: str) -> list[str]:
    return re.findall(r'<a href="#([^"]+)">', page)


def omitted(page: str) -> str:
    found = re.search(r'<p class="omitted">Not in this report: (.*?)</p>', page)
    return found.group(1) if found else ""


TRAINING_SECTIONS = ["summary", "throughput", "mfu", "convergence", "environment", "failures"]


def test_a_training_run_has_the_sections_of_its_figures_and_says_what_it_lacks(tmp_path):
    """One training run without monitors: its sections (the header links to them, in SECTIONS' order), each of the
    others named in the header with the reason, and what a shown section lacks said in words."""
    page = render_report([read_run(make_run(tmp_path, ["success", "success"]))])
    found = sections(page)
    assert list(found) == TRAINING_SECTIONS == nav(page)
    assert [sid for sid in SECTION_IDS if sid in found] == TRAINING_SECTIONS
    assert omitted(page) == (
        "Side by side (one run: give the report two runs or more); Scaling efficiency (no case ran at two scales "
        "or more within a run); Base benchmarks (no base benchmark (task base: gemm, memory bandwidth, transfers, "
        "collectives)); Generation latency (no generate case (task generate: LLM generation latency)); Operators "
        "(no operation case (task operation: single operators against the roofline)); Accuracy alignment (one run: "
        "an alignment needs a reference run and a candidate run of the same training case); Monitors (no round has "
        "monitor samples: run without --no-monitors).")
    assert 'id="no-results"' not in page
    assert "No MFU value" in found["mfu"]
    assert "FLOPs per sample x its throughput" in found["mfu"] and " per sample</td>" in found["mfu"]
    assert "Environment not recorded" in found["environment"]
    assert "p_whole, the whole training loop" in found["throughput"] and "Inference" not in found["throughput"]
    assert "No failed round" in found["failures"]
    assert found["throughput"].count("<img") == 1
    assert re.search(r'<img src="data:image/svg\+xml;base64,', found["throughput"])


def test_zero_successful_rounds_is_said_at_the_top(tmp_path):
    page = render_report([read_run(make_run(tmp_path, ["failed", "timeout"]))])
    alert = re.search(r'<div class="alert" id="no-results">(.*?)</div>', page)
    assert alert and "none of the 2 round(s)" in alert.group(1)
    assert page.index('id="no-results"') < page.index('<section id="summary">')
    found = sections(page)
    assert "<img" not in page, "no empty plot"
    assert "No training or inference throughput to show" in found["throughput"]
    assert found["failures"].count('<td class="bad">') == 2


def test_text_from_records_is_escaped(tmp_path):
    run_dir = make_run(tmp_path, ["failed"], reason='<script>alert("x")</script> & <b>')
    page = render_report([read_run(run_dir)])
    assert "<script" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;" in page


def test_no_url_outside_the_page(tmp_path):
    page = render_report([read_run(make_run(tmp_path, ["success", "failed"]))])
    assert "http:" not in page and "https:" not in page and "//" not in page.replace("<!DOCTYPE html>", "")
    assert set(re.findall(r'(?:src|href)="([a-z]+:|#)', page)) <= {"data:", "#"}


def test_an_environment_is_shown_when_the_record_has_one(tmp_path):
    run = read_run(make_run(tmp_path, ["success", "success"]))
    env = {"perfplay": {"version": "1.0", "commit": "abc1234", "dirty": False}, "python": "3.11.7", "torch": "2.13.0",
           "software": {"cuda": "12.4"}, "host": {"cpu_model": "EPYC <x>"}, "devices": ["H100", "H100"]}
    for entry in run.rounds:
        entry.record.environment = env  # as records/environment.py's Environment gives it (to_json() or a dict)
    environment = sections(render_report([run]))["environment"]
    for cell in ("perfplay.commit", "abc1234", "software.cuda", "12.4", "host.cpu_model", "EPYC &lt;x&gt;",
                 "H100, H100"):
        assert f"<td>{cell}</td>" in environment
    assert "not recorded" not in environment


def test_a_directory_that_is_not_a_run_is_refused_by_name(tmp_path, capsys):
    code, out, err = report(capsys, tmp_path)
    assert code == 2 and out == ""
    assert err == f"error: {tmp_path}: not a run directory (no <case_id>/resolved_config.json and no " \
                  f"<case_id>/round<N>/round_record.json in it)\n"
    code, _, err = report(capsys, tmp_path / "nothing")
    assert code == 2 and f"{tmp_path / 'nothing'}: no such directory" in err
    assert not list(tmp_path.iterdir())


def test_written_only_when_its_content_changed(tmp_path, capsys):
    run_dir = make_run(tmp_path, ["success"])
    path = run_dir / REPORT_NAME
    assert report(capsys, run_dir, "--check", "--json")[1] == \
        json.dumps({"path": str(path), "changed": True, "write_error": None}) + "\n"
    assert not path.exists(), "--check writes nothing"
    assert report(capsys, run_dir) == (0, f"report: {path}\n", "")
    first = path.read_bytes()
    assert report(capsys, run_dir) == (0, f"report: {path} (up to date)\n", ""), "the same runs, the same bytes"
    assert json.loads(report(capsys, run_dir, "--json", "--check")[1])["changed"] is False
    path.write_text("edited")
    assert json.loads(report(capsys, run_dir, "--json")[1])["changed"] is True
    assert path.read_bytes() == first


def test_a_report_that_cannot_be_written_says_why(tmp_path, capsys):
    run_dir = make_run(tmp_path, ["success"])
    (run_dir / REPORT_NAME).mkdir()  # in the way of the file
    answer = json.loads(report(capsys, run_dir, "--json")[1])
    assert answer["changed"] is False and str(run_dir / REPORT_NAME) in answer["write_error"]
    code, _, err = report(capsys, run_dir)
    assert code == 1 and err.startswith("error: report not written: ")


def test_several_runs_side_by_side(tmp_path, capsys):
    first, second = make_run(tmp_path / "a", ["success"]), make_run(tmp_path / "b", ["success", "success"])
    code, _, err = report(capsys, first, second)
    assert code == 2 and "2 runs: -o PATH says where their report goes" in err
    out = tmp_path / "both.html"
    assert report(capsys, first, second, "-o", out) == (0, f"report: {out}\n", "")
    page = out.read_text()
    assert page.count("run20250101000000 (cpu CPU)") >= 2
    assert list(sections(page)) == ["summary", "side-by-side", "throughput", "mfu", "convergence", "alignment",
                                    "environment", "failures"] == nav(page)


def test_rounds_without_monitors_or_records_are_described_in_words(tmp_path):
    """A record without node directories, and a round that started and left no record (a stand-in)."""
    run_dir = make_run(tmp_path, ["success"])
    case_dir = next(run_dir.glob("*/resolved_config.json")).parent
    config = json.loads((case_dir / "resolved_config.json").read_text())
    write_resolved(case_dir / "resolved_config.json", {**config, "repeat": 2})
    (case_dir / "round2").mkdir()
    page = render_report([read_run(run_dir)])
    found = sections(page)
    assert "monitors" not in found and "Monitors (no round has monitor samples: run without --no-monitors)" in \
        omitted(page)
    assert "the round started but left no record" in found["failures"]
    assert "1 valid round(s) of 2" in page


def test_a_run_id_of_the_history_database_is_a_run(tmp_path, capsys):
    run_dir = make_run(tmp_path, ["success"])
    db = tmp_path / "perfplay.sqlite"
    assert main(["history", "add", str(run_dir), "--db", str(db)]) == 0
    capsys.readouterr()
    assert report(capsys, run_dir.name, "--db", db) == (0, f"report: {run_dir / REPORT_NAME}\n", "")
    code, _, err = report(capsys, "run20990101000000", "--db", db)
    assert code == 2 and "run20990101000000: neither a directory nor a run id in the history database" in err


def test_an_alignment_that_cannot_be_made_says_why(tmp_path):
    """Two runs of the same case whose records name no node to read a loss from: the pair is named with the reason
    compare gives."""
    first, second = make_run(tmp_path / "a", ["success"]), make_run(tmp_path / "b", ["failed", "success"])
    alignment = sections(render_report([read_run(first), read_run(second)]))["alignment"]
    assert "No pair of runs could be aligned" in alignment and "<img" not in alignment
    assert "digits_cnn 1x1: run20250101000000 against run20250101000000: not aligned:" in alignment
    assert "no node 0 in per_node: no rank 0 to read the loss of" in alignment  # compare's own words
    single = render_report([read_run(first)])
    assert "alignment" not in sections(single)
    assert "Accuracy alignment (one run: an alignment needs a reference run" in omitted(single)


def test_two_runs_side_by_side_as_compare_runs_sees_them(tmp_path):
    """The second run's p_train (901, 902, 903) against the first's (901, 902): compare-runs' ratio and verdict, and
    the one environment key that differs."""
    first = read_run(make_run(tmp_path / "a", ["success", "success"]))
    second = read_run(make_run(tmp_path / "b", ["success", "success", "success"]))
    env = {"perfplay": {"version": "1.0", "commit": "abc1234", "dirty": False}, "python": "3.11.7", "software": {},
           "host": None, "devices": []}
    for run, torch in ((first, "2.13.0"), (second, "2.14.0")):
        for entry in run.rounds:
            entry.record.environment = {**env, "torch": torch}
    side = sections(render_report([first, second]))["side-by-side"]
    assert "<h3>digits_cnn training 1x1</h3>" in side
    assert "#2 digits_cnn_CPUx1x1 (cpu CPU, 3 valid round(s))" in side
    assert ("<tr><td>p_train</td><td>samples/s</td><td>901.5 ±0.7071 (2)</td><td>902.0 ±1 (3)</td><td>1.001</td>"
            "<td>within noise</td></tr>") in side
    differences = side[side.index("Environment differences"):]
    assert "<tr><td>torch</td><td>2.13.0</td><td>2.14.0</td></tr>" in differences
    assert differences.count("<tr>") == 2, "the header and torch: every other key is the same"


def inference_run(root: Path) -> Path:
    """A run of digits_cnn inference, one round: its rank's result, the host monitor's samples, and rank 0's events
    written by the driver's EventLogger as tasks/inference/task.py writes them (LAUNCH_INFERENCE, then INFERENCE_STEP as
    each pipeline step ends); its record built by the controller's write_round_record."""
    config = resolved(selection={"task": "inference"})
    run_dir = root / "run20250101000000"
    case_dir = run_dir / config["case_id"]
    case_dir.mkdir(parents=True)
    write_resolved(case_dir / "resolved_config.json", config)
    node = write_node(case_dir / "round1" / "host_noderank0", node_result("host"), [inference_rank_result()])
    log = EventLogger(node, 0, 1, stream=None)
    try:
        log.event(ev.LAUNCH_INFERENCE, {"case": "digits_cnn", "compiler": "onnxruntime", "notes": []})
        for step, name in INFERENCE_STEP_NAMES.items():
            log.event(ev.INFERENCE_STEP, {"step": step, "name": name})
        log.event(ev.FINISHED, {})
    finally:
        log.close()
    now = time.time()
    (node / f"host{SAMPLES_SUFFIX}").write_text("".join(json.dumps({"ts": now + t, "cpu_util": 50.0}) + "\n"
                                                        for t in (-1, 0, 1)))
    write_round_record(node.parent, ResolvedConfig.from_json(config), 1, run_dir.name)
    return run_dir


def test_the_monitors_of_a_case_s_rounds_are_one_figure(tmp_path):
    """Rounds one after the other in one figure per case, not a figure per round: the report of 100 rounds takes
    1.3 CPU-s, not 30 (python -m bench.report_rounds)."""
    run_dir = inference_run(tmp_path)
    case_dir = next(run_dir.glob("*/resolved_config.json")).parent
    config = ResolvedConfig.load(case_dir / "resolved_config.json")
    for number in (2, 3):
        shutil.copytree(case_dir / "round1", case_dir / f"round{number}")
        write_round_record(case_dir / f"round{number}", config, number, run_dir.name)
    monitors = sections(render_report([read_run(run_dir)]))["monitors"]
    assert monitors.count("<img") == 1 and re.search(r'alt="monitors of \S+ rounds 1-3"', monitors)
    assert "one figure per case with its rounds one after the other" in monitors


def test_an_inference_run_explains_inference_and_shades_its_steps(tmp_path):
    run = read_run(inference_run(tmp_path))
    (entry,) = run.rounds
    assert entry.record.status == "success" and entry.monitors is not None
    assert [phase.name for phase in entry.monitors.phases] == list(INFERENCE_STEP_NAMES.values())
    page = render_report([run])
    found = sections(page)
    assert list(found) == ["summary", "throughput", "mfu", "monitors", "environment", "failures"] == nav(page)
    assert "Loss and eval metric (no training case: no loss curve)" in omitted(page)
    assert "Inference (items/s): validation" in found["throughput"] and "p_whole" not in found["throughput"]
    assert "FLOPs per item x its throughput" in found["mfu"] and " per item</td>" in found["mfu"]  # not per sample
    assert "sample" not in found["mfu"]
    assert html.escape("the shaded spans are rank 0's phases from its events: an inference round's pipeline steps "
                       "(data and model, framework validation, ONNX export, compile, engine inference)") \
        in found["monitors"]
    assert "training" not in found["monitors"] and found["monitors"].count("<img") == 1
