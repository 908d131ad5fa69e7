# Supervision: every rank ignores SIGABRT (the torchrun launcher's stack-dump signal at the timeout),
# writes its pid to $SUPERVISION_PIDS/rank{RANK}.pids and hangs.
import os
import signal
import time

signal.signal(signal.SIGABRT, signal.SIG_IGN)
out = os.environ["SUPERVISION_PIDS"]
rank = os.environ["RANK"]
with open(os.path.join(out, f".rank{rank}.tmp"), "w") as f:
    f.write(f"{os.getpid()}\n")
os.rename(os.path.join(out, f".rank{rank}.tmp"), os.path.join(out, f"rank{rank}.pids"))
time.sleep(600)
