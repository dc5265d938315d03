"""A parent that never reaps: `python -m tests.infra.reaper CMD...` runs CMD and then sleeps.

It makes itself the child subreaper (Linux prctl PR_SET_CHILD_SUBREAPER), so the servers that
CMD starts and detaches (pg_ctl's postmaster, a daemonized redis-server) become its children
when their own parents exit; and it never calls wait(). A server killed with SIGKILL then stays
a zombie for as long as this process lives: what a container whose init reaps late shows after
a crash, made certain. Killing this process hands its zombies to init, which reaps them.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys

PR_SET_CHILD_SUBREAPER = 36


def main(command: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    # Python reaps no child on its own (no SIGCHLD handler): each exited child stays a zombie.
    child = subprocess.Popen(command)
    while child:
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1:])
