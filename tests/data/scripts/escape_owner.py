# Supervision: each rank double-forks a sleeper that calls setsid() and execs `sleep` with an empty
# environment (`env -i`: no variable of the harness left), and appends "rank_pid sleeper_pid" to
# $SUPERVISION_PIDS/rank{RANK}.pids (the harness may run it twice).  Once rank 1 has written as many lines as
# rank 0, rank 0 SIGKILLs its ancestors up to and including the harness's shepherd (runtime/shepherd.py),
# the shepherd first; never the caller above it.  Both ranks then sleep: nothing but the harness ends them.
# No torch: the harness is under test.
import os
import shutil
import signal
import time

out = os.environ["SUPERVISION_PIDS"]
rank = os.environ["RANK"]
sleep = shutil.which("sleep") or "/bin/sleep"
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.close(r)
    if os.fork() == 0:
        os.setsid()
        os.write(w, f"{os.getpid()}\n".encode())
        os.close(w)
        os.execve(sleep, ["sleep", "300"], {})
    os._exit(0)
os.close(w)
os.waitpid(child, 0)
with os.fdopen(r) as f:
    sleeper = int(f.read())
with open(os.path.join(out, f"rank{rank}.pids"), "a") as f:
    f.write(f"{os.getpid()} {sleeper}\n")


def lines(name: str) -> int:
    try:
        with open(os.path.join(out, name)) as f:
            return len(f.read().splitlines())
    except OSError:
        return 0


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def is_shepherd(pid: int) -> bool:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return any(arg.endswith(b"/shepherd.py") for arg in f.read().split(b"\0"))


if rank == "0":
    deadline = time.monotonic() + 120
    while lines("rank1.pids") < lines("rank0.pids") and time.monotonic() < deadline:
        time.sleep(0.05)
    chain = [parent(os.getpid())]
    while len(chain) < 8 and not is_shepherd(chain[-1]) and chain[-1] > 1:
        chain.append(parent(chain[-1]))
    if is_shepherd(chain[-1]):
        for pid in reversed(chain):  # the shepherd first: it would otherwise end the tree when its child dies
            os.kill(pid, signal.SIGKILL)
time.sleep(600)
