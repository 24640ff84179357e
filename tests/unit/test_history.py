"""The history database (case_runners/views/history/): real runs index themselves, `reindex` rebuilds the same rows from
the files, a corrupt round_record.json is reported by name and the rest indexed, a database of a newer schema is refused
with its version, an older one migrated; `list` filters and its three formats; `add` is idempotent; what is not a
run directory is refused by name."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from case_runners.cli.main import main
from case_runners.core.errors import PerfplayError
from case_runners.core.run_ids import new_run_id
from case_runners.records import history_db
from case_runners.records.history_db import (
    COLUMNS,
    DB_NAME,
    MIGRATIONS,
    SCHEMA_VERSION,
    HistoryError,
    opened,
    replace_run,
)
from case_runners.views.history.cli import parse_date
from case_runners.views.history.index import index_run, run_date
from case_runners.views.history.lookup import run_dirs
from process_helpers import SHORT_S

REPO = Path(__file__).resolve().parents[2]


def git_head() -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two real `case_runners run digits_cnn` runs into one results dir: 2 rounds of 5 steps, then 1 of 3 steps at
    half the batch size; each indexes itself into results/perfplay.sqlite at its end."""
    folder = tmp_path_factory.mktemp("results")
    for argv in (["--repeat", "2", "--set", "max_steps=5"], ["--set", "max_steps=3", "--batch-size", "16"]):
        done = subprocess.run([sys.executable, "-m", "case_runners", "run", "digits_cnn", *argv, "--results-dir",
                               str(folder), "--monitor-interval-s", "0.2"], cwd=REPO, capture_output=True, text=True,
                              timeout=600, check=False)
        assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: not converged in so few steps
        assert f"history: {2 if '--repeat' in argv else 1} round(s) indexed into {folder / DB_NAME}" in done.stdout
    return folder


def runs_of(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir())


def history(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["history", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys, db: Path, *argv: str) -> list[dict]:
    code, out, err = history(capsys, "list", "--db", str(db), "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_two_real_runs_index_themselves_one_row_per_round(results, capsys):
    rows = listed(capsys, results / DB_NAME)
    first, second = runs_of(results)
    assert [(r["run_dir"], r["round"]) for r in rows] == [(str(first), 1), (str(first), 2), (str(second), 1)]
    for row in rows:
        assert list(row) == list(COLUMNS)
        assert row["run_id"] == Path(row["run_dir"]).name
        assert (row["case"], row["case_id"], row["task"], row["vendor"], row["hardware"], row["nnodes"],
                row["nproc"]) == ("digits_cnn", "digits_cnn_CPUx1x1", "training", "cpu", "CPU", 1, 1)
        assert row["status"] in ("success", "not_converged") and row["date"] == run_date(Path(row["run_dir"]))
        assert row["metrics"]["p_train"] > 0 and "mfu" in row["metrics"]
        assert row["environment"]["perfplay"]["commit"] == git_head()
    assert [(r["standard"], r["non_standard"]) for r in rows] == [(True, [])] * 3  # a batch size is no workload
    assert rows[2]["metrics"]["steps"] == 3


def test_reindex_from_the_files_gives_the_same_rows(results, capsys, tmp_path):
    indexed = listed(capsys, results / DB_NAME)
    fresh = tmp_path / "fresh.sqlite"
    code, out, err = history(capsys, "reindex", "--results", str(results), "--db", str(fresh))
    assert code == 0, err
    assert out.splitlines() == [f"{fresh}: 3 round(s) of 2 run(s) from {results}"]
    assert listed(capsys, fresh) == indexed
    code, _, _ = history(capsys, "reindex", "--results", str(results), "--db", str(results / DB_NAME))
    assert code == 0 and listed(capsys, results / DB_NAME) == indexed


def test_add_is_idempotent_and_says_whether_rows_changed(results, capsys, tmp_path):
    db = tmp_path / "h.sqlite"
    first, second = map(str, runs_of(results))
    answers = []
    for argv in ([first, second], [first, second], [first, "--check"]):
        code, out, err = history(capsys, "add", *argv, "--db", str(db), "--json")
        assert code == 0, err
        answers.append(json.loads(out))
    assert [r["changed"] for r in answers[0]["runs"]] == [True, True] and answers[0]["changed"] is True
    assert [r["changed"] for r in answers[1]["runs"]] == [False, False] and answers[1]["changed"] is False
    assert answers[2]["changed"] is False
    assert [r["rounds"] for r in answers[0]["runs"]] == [2, 1]
    assert listed(capsys, db) == listed(capsys, results / DB_NAME)
    code, out, _ = history(capsys, "add", first, "--db", str(db))
    assert out == f"{first}: 2 round(s), already indexed, unchanged ({db})\n"


def test_a_corrupt_result_json_is_reported_by_name_and_the_rest_indexed(results, capsys, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns(DB_NAME))
    run = runs_of(copy)[0]
    broken = run / "digits_cnn_CPUx1x1" / "round1" / "round_record.json"
    broken.write_text('{"schema": "perfplay.round_record/1", "run_id": ')
    db = tmp_path / "h.sqlite"
    code, _, err = history(capsys, "add", str(run), "--db", str(db))
    assert code == 1
    assert f"warning: {broken}: is not JSON" in err and "(indexed as unreadable)" in err
    rows = listed(capsys, db)
    assert [(r["round"], r["status"]) for r in rows] == [(1, "unreadable"), (2, rows[1]["status"])]
    assert rows[1]["status"] in ("success", "not_converged") and rows[1]["metrics"]["p_train"] > 0
    assert rows[0]["reason"].startswith(str(broken)) and rows[0]["environment"] is None
    code, _, err = history(capsys, "reindex", "--results", str(copy), "--db", str(db))
    assert code == 1 and f"{broken}: is not JSON" in err and len(listed(capsys, db)) == 3


NOT_A_RUN = "not a run directory (no <case_id>/resolved_config.json and no <case_id>/round<N>/round_record.json in it)"


def test_what_is_not_a_run_directory_is_refused_by_name(results, capsys, tmp_path):
    db = tmp_path / "h.sqlite"
    run = str(runs_of(results)[0])
    for path, why in ((tmp_path, NOT_A_RUN), (tmp_path / "nothing", "no such directory (give a run directory, "
                                                                      "results/<run_id>)")):
        code, _, err = history(capsys, "add", run, str(path), "--db", str(db))
        assert code == 2 and err == f"error: {path}: {why}\n"
    assert not db.exists(), "nothing written when one of the runs named is not one"
    parent = tmp_path / "parent"  # the results dir inside a folder of its own: not beside other tests' folders
    shutil.copytree(results, parent / results.name, ignore=shutil.ignore_patterns(DB_NAME))
    code, out, _ = history(capsys, "reindex", "--results", str(parent), "--db", str(db))
    assert code == 0 and f"skipped {parent / results.name}: {NOT_A_RUN}" in out.splitlines()


def newer_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    return path


def test_a_database_of_a_newer_schema_is_refused_with_its_version(results, capsys, tmp_path):
    db = newer_db(tmp_path / "newer.sqlite")
    said = (f"error: {db}: written by a newer perfplay (history schema version {SCHEMA_VERSION + 1}; this perfplay "
            f"reads versions up to {SCHEMA_VERSION})")
    for argv in (["list"], ["add", str(runs_of(results)[0])], ["reindex", "--results", str(results)]):
        code, _, err = history(capsys, *argv, "--db", str(db))
        assert code == 2 and err.startswith(said), err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [], "left as it was"
    conn.close()


def test_another_programs_database_and_a_file_that_is_none_are_refused(capsys, tmp_path):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE accounts (id INTEGER)")
    conn.commit()
    conn.close()
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database, a note\n" * 100)
    for db, why in ((other, "not a perfplay history database (it has tables of its own: accounts)"),
                    (text, "file is not a database")):
        code, _, err = history(capsys, "list", "--db", str(db))
        assert code == 2 and err == f"error: {db}: {why}\n"


def test_a_database_of_an_older_schema_is_migrated_and_keeps_its_rows(results, tmp_path):
    db = tmp_path / "v1.sqlite"
    run_dir, rows, _ = index_run(runs_of(results)[0])
    conn = sqlite3.connect(db)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {history_db.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.executemany(f"INSERT INTO rounds VALUES ({', '.join('?' * len(COLUMNS))})",
                     [history_db._stored(row) for row in rows])
    conn.commit()
    conn.close()
    with opened(db) as conn:
        assert history_db.schema_version(conn) == SCHEMA_VERSION == 2
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"rounds_by_run_id", "rounds_by_date"} <= indexes
        assert history_db.run_rows(conn, str(run_dir)) == rows
        assert replace_run(conn, str(run_dir), rows) is False


def test_list_filters_and_its_three_formats(results, capsys):
    db = results / DB_NAME
    first, second = runs_of(results)
    everything = listed(capsys, db)
    assert len(listed(capsys, db, "--case", "digits_cnn")) == 3
    assert len(listed(capsys, db, "--case", "digits_cnn_CPUx1x1", "--vendor", "cpu", "--hardware", "CPU",
                      "--task", "training")) == 3
    assert listed(capsys, db, "--vendor", "nvidia") == [] and listed(capsys, db, "--task", "inference") == []
    status = everything[0]["status"]
    assert listed(capsys, db, "--status", status) == [r for r in everything if r["status"] == status]
    day = everything[0]["date"][:10]
    assert len(listed(capsys, db, "--since", day, "--until", day)) == 3
    assert listed(capsys, db, "--since", everything[-1]["date"]) == [r for r in everything
                                                                     if r["date"] >= everything[-1]["date"]]
    assert listed(capsys, db, "--until", "2000-01-01") == []
    code, out, _ = history(capsys, "list", "--db", str(db))
    header, *lines = out.splitlines()
    assert header.split() == ["date", "run_id", "case_id", "round", "status", "standard", "vendor", "hardware", "scale",
                              "throughput", "MFU"]
    assert [line.split()[2] for line in lines] == [first.name, first.name, second.name]
    assert [line.split()[6:10] for line in lines] == [["yes", "cpu", "CPU", "1x1"]] * 3
    code, out, _ = history(capsys, "list", "--db", str(db), "--csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and list(table[0]) == list(COLUMNS) and len(table) == 3
    assert [json.loads(r["metrics"]) for r in table] == [r["metrics"] for r in everything]
    assert table[2]["standard"] == "true" and json.loads(table[0]["environment"]) == everything[0]["environment"]
    code, out, _ = history(capsys, "list", "--db", str(db), "--vendor", "nvidia")
    assert out == "no round matches\n"
    code, _, err = history(capsys, "list", "--db", str(db), "--since", "last week")
    assert code == 2 and "--since 'last week': expected a date" in err


def test_dates_given_to_list():
    assert parse_date("2025-03-01", "--since", end=False) == "2025-03-01 00:00:00"
    assert parse_date("2025-03-01", "--until", end=True) == "2025-03-01 23:59:59"
    assert parse_date("2025-03-01T10:20", "--until", end=True) == "2025-03-01 10:20:59"
    assert parse_date("2025-03-01 10:20:30", "--since", end=False) == "2025-03-01 10:20:30"
    assert run_date(Path("/r/run20250301102030-abcdef")) == "2025-03-01 10:20:30"


def test_list_without_a_database_says_how_one_is_made(capsys, tmp_path):
    code, _, err = history(capsys, "list", "--db", str(tmp_path / "none.sqlite"))
    assert code == 2 and "no history database there" in err and not (tmp_path / "none.sqlite").exists()


def test_run_dirs_takes_directories_as_they_are_and_looks_run_ids_up(results, tmp_path):
    first, second = runs_of(results)
    db = results / DB_NAME
    assert run_dirs([str(first), second.name], db) == [first, second]
    with pytest.raises(PerfplayError, match="nosuchrun1: neither a directory nor a run id in the history database"):
        run_dirs(["nosuchrun1"], db)
    with pytest.raises(PerfplayError, match="nosuchrun1: not a directory, and the history database cannot say"):
        run_dirs(["nosuchrun1"], tmp_path / "none.sqlite")
    twice = tmp_path / "elsewhere" / first.name  # the same run id in two results dirs
    shutil.copytree(first, twice)
    other = tmp_path / "two.sqlite"
    with opened(other) as conn:
        for path in (first, twice):
            replace_run(conn, str(path), index_run(path)[1])
    with pytest.raises(PerfplayError, match="more than one directory"):
        run_dirs([first.name], other)


def test_two_writers_at_once_both_land(results, tmp_path):
    db = tmp_path / "busy.sqlite"
    indexed = [index_run(path) for path in runs_of(results)]
    start = threading.Barrier(len(indexed))
    failures: list[BaseException] = []

    def add(run_dir: Path, rows: list) -> None:
        try:
            with opened(db) as conn:
                start.wait(timeout=SHORT_S)
                replace_run(conn, str(run_dir), rows)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=add, args=(run_dir, rows)) for run_dir, rows, _ in indexed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    with opened(db) as conn:
        assert sum(len(history_db.run_rows(conn, str(d))) for d, _, _ in indexed) == 3


def test_a_failed_index_is_named(results, tmp_path):
    with pytest.raises(HistoryError, match="is a directory"):
        with opened(tmp_path):
            pass


def test_a_database_that_cannot_be_given_its_schema_leaves_no_file(monkeypatch, tmp_path):
    monkeypatch.setattr(history_db, "MIGRATIONS", (("CREATE TABLE rounds (x",),))  # fails as a full disk would
    path = tmp_path / "results" / "perfplay.sqlite"
    with pytest.raises(HistoryError, match=str(path)):
        with opened(path):
            pass
    assert not path.exists(), "no empty database left behind"


def test_a_run_s_date_is_the_start_its_generated_id_carries(tmp_path):
    at = time.mktime((2026, 11, 23, 9, 8, 7, 0, 0, -1))
    assert run_date(tmp_path / new_run_id(at)) == "2026-11-23 09:08:07"
    assert run_date(tmp_path / "my-own-run") is None, "no stamp in the id and no monitor that says when it started"
