# perfplay: the action of case_finish. With fetch_to, the node directory travels as one archive: packed by the module
# in the remote temporary directory, fetched, unpacked into fetch_to on the controller, removed on both sides.
# A remote node that succeeded comes back in case_wait's last answer instead (unpack_inline), or where its directory
# is too big for that, through finish_and_fetch called by case_wait's action.

from __future__ import annotations

import os
import tarfile
import tempfile
from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

ARCHIVE = "node.tar.gz"


def unpack(archive: str, dest: str, top: str) -> None:
    """Unpack archive into dest; every member must lie under `top` (the node directory's name)."""
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            name = os.path.normpath(member.name)
            if name != top and not name.startswith(top + os.sep) or os.path.isabs(member.name):
                raise AnsibleError("the node archive holds %r, outside %s/" % (member.name, top))
            if not (member.isfile() or member.isdir()):
                raise AnsibleError("the node archive holds %r, not a file or directory" % member.name)
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, members=members, filter="data")
        else:  # Python < 3.11.4: the checks above are the filter
            tar.extractall(dest, members=members)


def unpack_inline(data: bytes, fetch_to: str, log_dir: str) -> str:
    """Unpack a node archive that came in a module's answer (case_wait's archive_b64, decoded) into fetch_to; the
    node directory on the controller."""
    os.makedirs(fetch_to, mode=0o700, exist_ok=True)
    top = os.path.basename(os.path.normpath(log_dir))
    fd, local = tempfile.mkstemp(prefix=".node-", suffix=".tar.gz", dir=fetch_to)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        unpack(local, fetch_to, top)
    finally:
        os.unlink(local)
    return os.path.join(fetch_to, top)


def finish_and_fetch(action: ActionBase, args: dict[str, Any], fetch_to: str,
                     task_vars: dict[str, Any] | None) -> dict[str, Any]:
    """Run case_finish through `action` (an ActionBase: case_finish's, or case_wait's for a node directory too big
    for its answer) with the archive in a remote temporary directory, fetch and unpack it into fetch_to; the
    module's answer, with `fetched`."""
    result: dict[str, Any] = {}
    remote_tmp = action._make_tmp_path()
    try:
        args = dict(args, archive=action._connection._shell.join_path(remote_tmp, ARCHIVE))
        answer = action._execute_module(module_name="case_finish", module_args=args, task_vars=task_vars)
        result.update(answer)
        if answer.get("failed") or answer.get("unreachable") or not answer.get("archive"):
            return result
        os.makedirs(fetch_to, mode=0o700, exist_ok=True)
        fd, local = tempfile.mkstemp(prefix=".node-", suffix=".tar.gz", dir=fetch_to)
        os.close(fd)
        try:
            action._connection.fetch_file(args["archive"], local)
            top = os.path.basename(os.path.normpath(args["log_dir"]))
            unpack(local, fetch_to, top)
        finally:
            os.unlink(local)
        result["fetched"] = os.path.join(fetch_to, top)
        result["changed"] = True
    except AnsibleError as exc:
        result.update(failed=True, msg="collecting the node directory %s: %s" % (args.get("log_dir"), exc))
    finally:
        action._remove_tmp_path(remote_tmp)
    return result


class ActionModule(ActionBase):
    _supports_check_mode = False
    _supports_async = False

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        fetch_to = args.pop("fetch_to", None)
        if not fetch_to:
            result.update(self._execute_module(module_name="case_finish", module_args=args, task_vars=task_vars))
            return result
        result.update(finish_and_fetch(self, args, fetch_to, task_vars))
        return result
