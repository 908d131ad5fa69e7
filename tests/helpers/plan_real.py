"""A real gloo run of the planner's model and step, for the exactness test (tests/test_plan_exact.py).

``run(world_size, setting, spec, out_dir)`` spawns ``world_size`` processes; each builds the built-in
transformer for real, shards it with the planner's own ``shard`` / ``make_optimizer`` / ``warm_up`` /
``train_step`` (:mod:`fsdp_skill.core.plan.child`), and writes ``rank<r>.json``: the bytes of its local
parameter shards, gradient shards and optimizer state (summed over distinct storages, as the tracker
counts them) and the peak of the measured step by ``MemTracker``, with and without the storages gloo's
reduce-scatter makes for itself (see ``_tracker``).
"""

from __future__ import annotations

import json
import os
import socket


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _storage_bytes(tensors) -> int:
    from torch.distributed.tensor import DTensor

    seen, total = set(), 0
    for t in tensors:
        local = t.to_local() if isinstance(t, DTensor) else t
        st = local.untyped_storage()
        if st.data_ptr() not in seen:
            seen.add(st.data_ptr())
            total += st.nbytes()
    return total


def _tracker(model, optimizer):
    """A ``MemTracker`` that also keeps the peak without the gloo backend's own staging copies.

    gloo's reduce-scatter copies its whole input before reducing it (NCCL reduces in place into the
    output), and the tracker first sees that copy inside ``dist.reduce_scatter_single``. The plan is made
    for NCCL, so the comparison subtracts the storages first seen inside that call; ``staging_peak`` is
    the most such bytes alive at once, for the report."""
    import torch.distributed as dist
    from torch.distributed._tools.mem_tracker import MemTracker, get_untyped_storages

    class RealTracker(MemTracker):
        def __init__(self):
            super().__init__()
            self.in_collective = False
            self.staging = {}  # id(winfo) -> bytes, while alive
            self.peak_without_staging = 0
            self.staging_peak = 0

        def _track(self, reftype, t):
            before = len(self._WINFO) if self.in_collective else None
            super()._track(reftype, t)
            if before is not None and len(self._WINFO) > before:
                for st in get_untyped_storages(t):
                    winfo, _ = self._WINFO.get(st, (None, None))
                    if winfo is not None and id(winfo) not in self.staging:
                        self.staging[id(winfo)] = winfo.mem_consumed

        def _delete_callback(self, winfo, w_st):
            self.staging.pop(id(winfo), None)
            super()._delete_callback(winfo, w_st)

        def _update_peak_stats(self, peak_state):
            super()._update_peak_stats(peak_state)
            total = sum(snap["Total"] for snap in self._curr_mem_snap.values())
            staged = sum(self.staging.values())
            self.staging_peak = max(self.staging_peak, staged)
            self.peak_without_staging = max(self.peak_without_staging, total - staged)

    tracker = RealTracker()
    original = dist.reduce_scatter_single

    def reduce_scatter_single(*args, **kwargs):
        tracker.in_collective = True
        try:
            return original(*args, **kwargs)
        finally:
            tracker.in_collective = False

    dist.reduce_scatter_single = reduce_scatter_single
    tracker.track_external(model, optimizer)
    return tracker


def _rank(rank: int, world_size: int, port: int, setting: dict, spec: dict, out_dir: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    from fsdp_skill.core.plan import child

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        torch.manual_seed(0)
        shape = tuple(setting["mesh"])
        mesh = init_device_mesh("cpu", shape, mesh_dim_names=("replicate", "shard") if len(shape) == 2 else ("shard",))
        model = child.build_model(spec)
        child.shard(model, mesh, setting)
        opt = child.make_optimizer(model, setting["optimizer"])
        inputs = child.make_inputs(spec, setting)
        child.warm_up(model, opt)
        tracker = _tracker(model, opt)
        with tracker:
            child.train_step(model, opt, inputs, True)
        peak = sum(s["Total"] for s in tracker.get_tracker_snapshot("peak").values())
        params = list(model.parameters())
        state = [t for st in opt.state.values() for t in st.values() if isinstance(t, torch.Tensor)]
        result = {
            "sharded_param_bytes": _storage_bytes(params),
            "sharded_grad_bytes": _storage_bytes([p.grad for p in params if p.grad is not None]),
            "optimizer_state_bytes": _storage_bytes(state),
            "peak_bytes": int(peak),
            "peak_without_staging_bytes": int(tracker.peak_without_staging),
            "staging_peak_bytes": int(tracker.staging_peak),
        }
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
    finally:
        dist.destroy_process_group()


def run(world_size: int, setting: dict, spec: dict, out_dir: str) -> list[dict]:
    """Each rank's real figures (bytes), rank order; raises when a rank fails.

    The ranks are spawned from a child interpreter, not from the test process: ``mp.spawn`` starts
    multiprocessing's resource tracker, which would otherwise outlive the test as a child of pytest (and
    fail the tests that check the harness leaves no process behind).
    """
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    subprocess.run(
        [sys.executable, "-m", "tests.helpers.plan_real", json.dumps([world_size, setting, spec, out_dir])],
        cwd=root,
        env=env,
        check=True,
        timeout=900,
    )
    out = []
    for r in range(world_size):
        with open(os.path.join(out_dir, f"rank{r}.json")) as f:
            out.append(json.load(f))
    return out


if __name__ == "__main__":
    import sys

    import torch.multiprocessing as mp

    ws, setting_, spec_, out_dir_ = json.loads(sys.argv[1])
    mp.spawn(_rank, args=(ws, _free_port(), setting_, spec_, out_dir_), nprocs=ws, join=True)
