# Supervision: rank 0 gives up CAP_SYS_PTRACE (a no-op unless it runs as root: it then reads /proc as any
# other process of the same user does), walks its ancestors up to pid 1 and tries to read each one's
# /proc/PID/environ; it writes "pid readable|denied" per ancestor to $SUPERVISION_PIDS/environ.txt and
# "owner_env <value or ->" for FSDP_HARNESS_OWNER in its own environment.  Exits 0.  No torch.
import ctypes
import os

CAP_SYS_PTRACE = 19
out = os.environ["SUPERVISION_PIDS"]


def drop_ptrace() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # (effective, permitted, inheritable) x 2 words
    if libc.capget(header, data) == 0:
        data[0] &= ~(1 << CAP_SYS_PTRACE)
        data[1] &= ~(1 << CAP_SYS_PTRACE)
        libc.capset(header, data)


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


if os.environ["RANK"] == "0":
    drop_ptrace()
    rows = [f"owner_env {os.environ.get('FSDP_HARNESS_OWNER', '-')}"]
    pid = parent(os.getpid())
    while pid > 1:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                f.read()
            rows.append(f"{pid} readable")
        except OSError:
            rows.append(f"{pid} denied")
        pid = parent(pid)
    tmp = os.path.join(out, ".environ.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(rows) + "\n")
    os.rename(tmp, os.path.join(out, "environ.txt"))
