# Supervision: each rank starts a sleeper in a session of its own and appends "rank_pid sleeper_pid" to
# $SUPERVISION_PIDS/rank{RANK}.pids (the harness may run it twice).  Once rank 1 has written as many lines
# as rank 0, rank 0 walks up its ancestors and SIGKILLs the harness's shepherd (runtime/shepherd.py; this
# file is not named like it, or its torchrun agent would match).
# Both ranks then sleep: nothing but the harness ends them.  No torch: the harness is under test.
import os
import signal
import subprocess
import time

out = os.environ["SUPERVISION_PIDS"]
rank = os.environ["RANK"]
sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
with open(os.path.join(out, f"rank{rank}.pids"), "a") as f:
    f.write(f"{os.getpid()} {sleeper.pid}\n")


def lines(name: str) -> int:
    try:
        with open(os.path.join(out, name)) as f:
            return len(f.read().splitlines())
    except OSError:
        return 0


if rank == "0":
    deadline = time.monotonic() + 120
    while lines("rank1.pids") < lines("rank0.pids") and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = os.getpid()
    for _ in range(8):
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if any(arg.endswith(b"/shepherd.py") for arg in f.read().split(b"\0")):
                os.kill(pid, signal.SIGKILL)
                break
time.sleep(600)
