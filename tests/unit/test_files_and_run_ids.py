"""Run ids that cannot collide or over-match; files written atomically and never through a symlink; directories
another user could change refused; results-dir problems in one line; a rejected plan leaves nothing behind."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from case_runners.core import files
from case_runners.core.errors import ConfigError
from case_runners.core.run_ids import RUN_ID_PATTERN, check_run_id, is_run_id, new_run_id
from case_runners.plan.run_plan import make_plan
from process_helpers import require_root


def plan(tmp_path: Path, **request) -> dict:
    return make_plan({"vendor": "cpu", "results_dir": str(tmp_path / "results"), "cases": ["digits_cnn"],
                      **request})


def test_generated_run_ids_carry_the_second_and_differ_within_it():
    ids = {new_run_id(now=1795000000.0) for _ in range(200)}
    assert len(ids) == 200
    assert all(i.startswith("run") and len(i) == len("run20261122153012-a1b2c3") and is_run_id(i) for i in ids)


@pytest.mark.parametrize("bad", ["0", "run", "run1", "a" * 65, "1run20261122", "run 1", "run/../x", "run.x-yyyy",
                                 "", "-eperfplay", None, 12345678])
def test_a_given_run_id_must_match_the_strict_pattern(bad):
    assert not is_run_id(bad)
    with pytest.raises(ConfigError, match="is not a run id"):
        check_run_id(bad)


def test_two_runs_in_the_same_second_get_two_run_dirs(tmp_path, monkeypatch):
    monkeypatch.setattr("time.time", lambda: 1795000000.0)
    first, second = plan(tmp_path), plan(tmp_path)
    assert first["ok"] and second["ok"]
    assert first["run_id"] != second["run_id"] and first["run_id"][:17] == second["run_id"][:17]
    assert all(RUN_ID_PATTERN.fullmatch(p["run_id"]) for p in (first, second))
    assert (os.stat(first["run_dir"]).st_mode & 0o777) == 0o700


def test_a_run_id_given_twice_is_refused_before_anything_is_written(tmp_path):
    assert plan(tmp_path, run_id="run-given-1")["ok"]
    again = plan(tmp_path, run_id="run-given-1")
    assert not again["ok"]
    assert again["errors"] == [f"run vars: key 'perfplay_run_id': run 'run-given-1' exists already in "
                               f"{tmp_path / 'results'}: choose another run id or none"]
    short = plan(tmp_path, run_id="0")
    assert "key 'perfplay_run_id': '0' is not a run id" in short["errors"][0]


@pytest.mark.parametrize("where, cause", [
    ("file", "is not a directory"),
    ("proc", "MiB free in /proc"),
    ("group-writable", "writable by group or others"),
])
def test_results_dir_problems_are_one_line_naming_path_and_cause(tmp_path, where, cause):
    results = {"file": tmp_path / "a-file", "proc": Path("/proc"), "group-writable": tmp_path / "shared"}[where]
    if where == "file":
        results.write_text("")
    if where == "group-writable":
        results.mkdir()
        results.chmod(0o775)
    checked = make_plan({"vendor": "cpu", "results_dir": str(results), "cases": ["digits_cnn"]})
    assert not checked["ok"] and len(checked["errors"]) == 1
    (message,) = checked["errors"]
    assert message.startswith("run vars: key 'perfplay_results_dir': ") and cause in message
    assert "\n" not in message and "Traceback" not in message


def test_too_little_free_space_is_refused_naming_the_run_var(tmp_path):
    checked = plan(tmp_path, min_free_bytes=1 << 49)  # 512 TiB
    assert not checked["ok"]
    assert "less than key 'perfplay_min_free_bytes'" in checked["errors"][0]
    assert not (tmp_path / "results").exists()


def test_a_plan_that_cannot_write_its_run_dir_leaves_nothing(tmp_path, monkeypatch):
    def full(*_args, **_kwargs):
        raise files.WriteError("no space left on device: x/perfplay-src.tar", "x")

    monkeypatch.setattr("case_runners.plan.run_plan.write_bundle", full)
    failed = plan(tmp_path, bundle=True)
    assert not failed["ok"] and "no space left on device" in failed["errors"][0]
    assert list((tmp_path / "results").iterdir()) == [], "no empty or partial run dir is left"


def test_atomic_writes_leave_the_old_file_or_the_new_one_never_a_torn_one(tmp_path, monkeypatch):
    target = tmp_path / "result.json"
    files.atomic_write_json(target, {"round": 1})
    real_fsync = os.fsync

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(files.WriteError, match=f"^no space left on device: {target}$"):
        files.atomic_write_json(target, {"round": 2})
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads(target.read_text()) == {"round": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"], "no temporary file is left"


def test_writes_never_follow_a_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    link = tmp_path / "rank0.out.log"
    link.symlink_to(victim)
    for mode in ({}, {"append": True}, {"new": True}):
        with pytest.raises(files.WriteError):
            files.open_fd(link, **mode)
    files.atomic_write_text(link, "replaced")  # the rename replaces the link itself
    assert victim.read_text() == "precious" and not link.is_symlink() and link.read_text() == "replaced"


def test_secure_dir_creates_private_dirs_and_refuses_unsafe_ones(tmp_path):
    made = files.secure_dir(tmp_path / "a" / "b" / "c")
    assert all((os.stat(p).st_mode & 0o777) == 0o700 for p in (tmp_path / "a", tmp_path / "a" / "b", made))
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    with pytest.raises(files.UnsafeDirError, match="writable by group or others"):
        files.secure_dir(tmp_path / "open")
    with pytest.raises(files.UnsafeDirError, match="writable by group or others"):
        files.secure_dir(tmp_path / "open" / "below")
    (tmp_path / "sticky").mkdir()
    (tmp_path / "sticky").chmod(0o1777)
    assert files.secure_dir(tmp_path / "sticky" / "mine")  # like /tmp: others cannot take ours away


def test_disk_full_is_named_with_its_path(tmp_path):
    assert files.describe_os_error(OSError(errno.ENOSPC, "x"), "/r/result.json") == \
        "no space left on device: /r/result.json"
    assert files.disk_full_reason(tmp_path) is None
    assert files.low_space_reason(tmp_path, 0) is None


OTHER_UID = 54321  # a uid no account uses here: "another user"


def test_a_symlink_of_another_user_on_the_way_is_refused_by_every_writer(tmp_path):
    public = tmp_path / "public"  # like /tmp: sticky and world-writable
    public.mkdir()
    public.chmod(0o1777)
    victim = tmp_path / "root-only"
    victim.mkdir(mode=0o700)
    link = public / "results"
    link.symlink_to(victim)
    os.lchown(link, OTHER_UID, OTHER_UID)
    with pytest.raises(files.UnsafeDirError, match=rf"the symlink {link} belongs to uid {OTHER_UID}.*refusing"):
        files.secure_dir(link / "run1")
    with pytest.raises(files.UnsafeDirError, match="refusing to follow it"):
        files.atomic_write_text(link / "report.html", "<html>")
    for results in (link, link / "below"):
        checked = make_plan({"vendor": "cpu", "results_dir": str(results), "cases": ["digits_cnn"]})
        assert not checked["ok"] and "key 'perfplay_results_dir'" in checked["errors"][0]
        assert f"symlink {link} belongs to uid {OTHER_UID}" in checked["errors"][0]
    assert not list(victim.iterdir()), "nothing was written through the link"
    os.lchown(link, os.geteuid(), os.getegid())  # the user's own link there is followed
    assert files.secure_dir(link / "run1") == link / "run1" and (victim / "run1").is_dir()


def test_a_report_may_be_written_into_a_sticky_directory_like_tmp_but_not_the_history(tmp_path):
    """report -o /tmp/x.html: the file is a new temporary file renamed into place, which nobody else can redirect in a
    sticky directory; the history database is written in place (with its journal), so it stays in a private one."""
    from case_runners.records import history_db
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o1777)
    files.atomic_write_text(public / "report.html", "<html>")
    assert (public / "report.html").read_text() == "<html>"
    with pytest.raises(files.UnsafeDirError, match="writable by group or others"):
        with history_db.opened(public / "perfplay.sqlite"):
            pass
    public.chmod(0o777)  # not sticky: another user could take the file away or put a link in its place
    with pytest.raises(files.UnsafeDirError, match="writable by group or others"):
        files.atomic_write_text(public / "report.html", "<html>")


def test_a_directory_of_another_user_is_refused_for_reports_summaries_and_the_history(tmp_path):
    from case_runners.records import history_db
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, OTHER_UID, OTHER_UID)
    with pytest.raises(files.UnsafeDirError, match=rf"{theirs} belongs to uid {OTHER_UID}, not to the user"):
        files.atomic_update_text(theirs / "summary.md", "# summary\n")  # report -o and summary --write
    with pytest.raises(files.UnsafeDirError, match=rf"belongs to uid {OTHER_UID}"):
        with history_db.opened(theirs / "perfplay.sqlite"):
            pass
    assert not list(theirs.iterdir())


def test_an_unprivileged_user_gets_one_line_not_a_traceback(tmp_path):
    from case_runners.core.errors import PerfplayError
    from case_runners.records import history_db
    require_root("becoming another user")
    os.seteuid(65534)
    try:
        with pytest.raises(PerfplayError, match=r"/root.*(permission denied|belongs to uid 0)"):
            with history_db.opened(Path("/root/perfplay-probe/perfplay.sqlite")):
                pass
        with pytest.raises(PerfplayError, match=r"/root belongs to uid 0, not to the user running perfplay"):
            files.atomic_write_text(Path("/root/report.html"), "<html>")
    finally:
        os.seteuid(0)
