# Supervision: rank 0 starts a sleeper in a session of its own, records "rank_pid sleeper_pid" in
# $SUPERVISION_PIDS/rank0.pids (appending: the harness may run it twice), then kills its parent process
# (the warm launcher's zygote) with SIGKILL.  Rank 1 waits to be killed with it.
import os
import signal
import subprocess
import time

if os.environ["RANK"] == "0":
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(os.path.join(os.environ["SUPERVISION_PIDS"], "rank0.pids"), "a") as f:
        f.write(f"{os.getpid()} {sleeper.pid}\n")
    os.kill(os.getppid(), signal.SIGKILL)
time.sleep(600)
