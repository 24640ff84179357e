# perfplay: the action of case_finish. With fetch_to, the node directory travels as one archive: packed by the module
# in the remote temporary directory, fetched, unpacked into fetch_to on the controller, removed on both sides.

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
        remote_tmp = self._make_tmp_path()
        try:
            args["archive"] = self._connection._shell.join_path(remote_tmp, ARCHIVE)
            answer = self._execute_module(module_name="case_finish", module_args=args, task_vars=task_vars)
            result.update(answer)
            if answer.get("failed") or answer.get("unreachable") or not answer.get("archive"):
                return result
            os.makedirs(fetch_to, mode=0o700, exist_ok=True)
            fd, local = tempfile.mkstemp(prefix=".node-", suffix=".tar.gz", dir=fetch_to)
            os.close(fd)
            try:
                self._connection.fetch_file(args["archive"], local)
                top = os.path.basename(os.path.normpath(args["log_dir"]))
                unpack(local, fetch_to, top)
            finally:
                os.unlink(local)
            result["fetched"] = os.path.join(fetch_to, top)
            result["changed"] = True
        except AnsibleError as exc:
            result.update(failed=True, msg="collecting the node directory %s: %s" % (args.get("log_dir"), exc))
        finally:
            self._remove_tmp_path(remote_tmp)
        return result
