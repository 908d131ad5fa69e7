# Supervision: each rank starts a sleeper in a session of its own and a plain child, writes
# "rank_pid setsid_pid plain_pid" to $SUPERVISION_PIDS/rank{RANK}.pids, then exits 0 (or hangs with
# SUPERVISION_HANG=1).  No torch: the harness, not the process group, is under test.
import os
import subprocess
import time

out = os.environ["SUPERVISION_PIDS"]
rank = os.environ["RANK"]
detached = subprocess.Popen(["sleep", "300"], start_new_session=True)
plain = subprocess.Popen(["sleep", "300"])
tmp = os.path.join(out, f".rank{rank}.tmp")
with open(tmp, "w") as f:
    f.write(f"{os.getpid()} {detached.pid} {plain.pid}\n")
os.rename(tmp, os.path.join(out, f"rank{rank}.pids"))  # appears complete or not at all
if os.environ.get("SUPERVISION_HANG"):
    time.sleep(600)
