# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
# private torch internals used here (run on 2.6.0, 2.9.1, 2.13.0, 2.14.1 by scripts/dev matrix; a missing one is a
#   one-line PlanFailure naming the torch): torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker and its
#   _update_peak_stats / _curr_mem_snap / _peak_mem / _peak_mem_snap (checked with hasattr; the stock tracker otherwise),
#   DTensor._local_tensor, torch._subclasses.fake_tensor.FakeTensorMode, torch.testing._internal.distributed.fake_pg.FakeStore,
#   torch.distributed._composable.checkpoint, torch.distributed.algorithms._checkpoint.checkpoint_wrapper (with
#   torch.utils.checkpoint.create_selective_checkpoint_contexts for selective-op)
"""The planner's child process: ``python child.py [--frame NONCE] [--request FILE] [< request.json]`` prints one JSON
line per setting (the request read from FILE, else from stdin).

Runs under the target interpreter as a file (standard library and torch only; the built-in model is
loaded by path from ``transformer.py`` beside it).  For each setting it acts as one rank (default 0) of
the requested world size through torch's ``fake`` process-group backend, builds the model under
``FakeTensorMode`` (nothing is allocated), applies activation checkpointing and ``fully_shard`` per
block and on the root, creates the optimizer state as the first step would (so it is held throughout,
as in every later step) and then runs one training step measured by ``FSDPMemTracker``: peak bytes per category and the phase of the
peak.  The device mesh is created outside ``FakeTensorMode`` (inside it fails).

Request (stdin JSON)::

    {"model": {"transformer": {"layers": 2, ...}} | {"factory": "path.py:fn" | "pkg.mod:fn", "input": null | "..."},
     "settings": [{"mesh": [8] | [2, 4], "reshard_after_forward": true | false | 2, "param_dtype": "bf16" | null,
                   "reduce_dtype": "fp32" | null, "optimizer": "adamw", "activation_checkpointing": "per-block",
                   "cpu_offload": false, "embedding_groups": false, "batch": 1, "seq": 2048, "rank": 0}, ...]}

Each result line is ``{"ok": true, ...figures...}`` or ``{"ok": false, "kind": "model" | "setting" |
"torch", "error": "one line"}`` (then the child exits 3), after ``@fsdp-skill-result:NONCE `` when run with
``--frame NONCE``; anything else on stdout is the user's code's.  Bytes everywhere.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

# torch is not analysed (pyproject's mypy section): its objects are Any here.  A setting and the model spec are
# the request's JSON objects (dict[str, Any]); inputs are (positional arguments, keyword arguments).

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
CATEGORIES = {
    "Sharded Param": "sharded_param",
    "Unsharded Param": "unsharded_param",
    "Buffer": "buffer",
    "Sharded Grad": "sharded_grad",
    "Unsharded Grad": "unsharded_grad",
    "Activation": "activation",
    "Temp": "temp",
    "All Gather": "all_gather",
    "Reduce Scatter": "reduce_scatter",
    "OptState": "optimizer_state",
    "Inputs": "inputs",
}


class PlanFailure(Exception):
    """A setting or model the planner cannot run; ``kind`` is 'model', 'setting' or 'torch'."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def load_sibling(name: str) -> ModuleType:
    """The module ``name`` from the file ``name.py`` beside this one, under a private module name."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    key = "_fsdp_skill_plan_" + name
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def resolve_factory(ref: str) -> Callable[[], Any]:
    """The callable named by ``path/to/file.py:name`` or ``package.module:name``; raises PlanFailure('model')."""
    target, _, attr = ref.rpartition(":")
    if not target or not attr:
        raise PlanFailure("model", f"{ref!r} is not FILE.py:FUNCTION or package.module:FUNCTION")
    try:
        if target.endswith(".py"):
            if not os.path.isfile(target):
                raise PlanFailure("model", f"{target}: no such file")
            folder = os.path.dirname(os.path.abspath(target))
            if folder not in sys.path:
                sys.path.insert(0, folder)
            spec = importlib.util.spec_from_file_location("_fsdp_skill_user_model", target)
            if spec is None or spec.loader is None:
                raise PlanFailure("model", f"{target} cannot be loaded as a module")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:  # `--model pkg.module:fn` resolves from the caller's directory, and only
                sys.path.insert(0, os.getcwd())  # then: torch and the stdlib are imported already, a random.py there
            module = importlib.import_module(target)  # cannot stand in for them (the built-in model reads no cwd)
    except PlanFailure:
        raise
    except BaseException as exc:  # the user's module failed to import: report it as one line
        raise PlanFailure("model", f"importing {target} failed: {_line(exc)}") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise PlanFailure("model", f"{target} has no callable {attr!r}")
    return fn  # type: ignore[no-any-return]  # the user's callable, whatever it returns


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def _block_list(model: Any) -> Any:
    """The model's largest ``nn.ModuleList`` (e.g. ``model.layers``), or None."""
    from torch import nn

    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    return max(lists, key=len) if lists else None


def blocks_of(model: Any) -> list[Any]:
    """The model's blocks: the children of its largest ``nn.ModuleList`` (e.g. ``model.layers``), or []."""
    holder = _block_list(model)
    return [] if holder is None else list(holder)


def dtype(name: str | None) -> Any:
    """torch dtype for 'fp32' / 'bf16' / 'fp16', None for None."""
    import torch

    return None if name is None else getattr(torch, DTYPES[name])


def shard(model: Any, mesh: Any, setting: dict[str, Any]) -> list[Any]:
    """Apply activation checkpointing (per block, when asked) and fully_shard per block and on the root,
    with the setting's MixedPrecisionPolicy, reshard_after_forward and CPUOffloadPolicy; returns the blocks."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=dtype(setting.get("param_dtype")), reduce_dtype=dtype(setting.get("reduce_dtype")))
    offload = CPUOffloadPolicy(pin_memory=False) if setting.get("cpu_offload") else OffloadPolicy()
    blocks = blocks_of(model)
    ac = setting.get("activation_checkpointing") or "none"
    if ac != "none" and not blocks:
        raise PlanFailure(
            "setting",
            f"activation checkpointing {'per block' if ac == 'per-block' else f'({ac})'} needs blocks, and the model has no "
            "nn.ModuleList (the planner checkpoints and shards the children of the largest one)",
        )
    blocks = apply_ac(model, blocks, ac)
    reshard = setting.get("reshard_after_forward", True)
    groups = setting.get("embedding_groups")
    if groups and not all(hasattr(model, name) for name in ("tok_embeddings", "norm", "output")):
        raise PlanFailure(
            "setting",
            "embedding_groups shards the built-in transformer's tok_embeddings and norm + output as groups of their "
            "own; this model has no such modules (call fully_shard on yours in your own factory instead)",
        )
    if groups:
        fully_shard(model.tok_embeddings, mesh=mesh, mp_policy=mp, offload_policy=offload, reshard_after_forward=reshard)
    for block in blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp, offload_policy=offload, reshard_after_forward=reshard)
    if groups:  # gathered last in forward, first in backward: kept unsharded in between, as torchtitan does
        fully_shard([model.norm, model.output], mesh=mesh, mp_policy=mp, offload_policy=offload, reshard_after_forward=False)
    fully_shard(model, mesh=mesh, mp_policy=mp, offload_policy=offload)
    return blocks


def apply_ac(model: Any, blocks: list[Any], ac: str) -> list[Any]:
    """Activation checkpointing of ``blocks`` (the children of the model's largest ``nn.ModuleList``) as ``ac``
    names it; returns the blocks to shard.  ``none``; ``per-block`` (every block) and ``selective-N`` (the N-th,
    2N-th, ... block counted from 1, as torchtitan's layer-level selective AC picks them), both with
    torch.distributed._composable.checkpoint (non-reentrant) on the block; ``selective-op``: every block
    replaced by ``checkpoint_wrapper(block, context_fn=...)`` under the selective policy :func:`op_sac_policy`,
    as torchtitan applies it (the wrapper keeps fully_shard's hooks, on the wrapper, outside the checkpointed
    region: with the composable checkpoint, SAC sees the hooks' ops in the recompute only and refuses them)."""
    if ac == "none":
        return blocks
    from torch.distributed._composable import checkpoint

    if ac == "selective-op":
        from functools import partial

        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        from torch.utils.checkpoint import create_selective_checkpoint_contexts

        def contexts() -> Any:
            return create_selective_checkpoint_contexts(partial(op_sac_policy, {"forward": 0, "recompute": 0}))

        holder = _block_list(model)
        for i, block in enumerate(blocks):
            holder[i] = checkpoint_wrapper(block, context_fn=contexts, preserve_rng_state=False)
        return list(holder)
    if ac == "per-block":
        chosen = blocks
    elif ac.startswith("selective-") and ac[len("selective-") :].isdigit():
        every = int(ac[len("selective-") :])
        chosen = [b for i, b in enumerate(blocks, start=1) if i % every == 0]
    else:
        raise PlanFailure("setting", f"unknown activation checkpointing {ac!r}")
    for block in chosen:
        checkpoint(block)
    return blocks


def op_sac_policy(counts: dict[str, int], ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
    """The op-level selective policy (torchtitan's ``selective_ac_option = "op"`` in the form its benchmark tables
    used): the outputs of the matmuls (``aten.mm``) and of the attention kernel (``aten._scaled_dot_product_*``,
    whichever backend SDPA picked: flash, efficient, cuDNN or the CPU flash kernel the planner's CPU trace runs)
    and of a reduce-scatter are saved for backward, except every second matmul (counted per block and per pass,
    forward and recompute apart); everything else is recomputed.  ``counts`` is the block's matmul count per pass."""
    import torch
    from torch.utils.checkpoint import CheckpointPolicy

    mode = "recompute" if ctx.is_recompute else "forward"
    if func is torch.ops.aten.mm.default:
        counts[mode] += 1
        return CheckpointPolicy.PREFER_RECOMPUTE if counts[mode] % 2 == 0 else CheckpointPolicy.MUST_SAVE
    name = getattr(func, "__name__", "")
    if name.startswith("_scaled_dot_product_") or "reduce_scatter_tensor" in name:
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def make_optimizer(model: Any, name: str) -> Any:
    """AdamW / Adam (lr 1e-4, two fp32 states per parameter) or SGD (momentum 0.9, one), ``foreach=True``
    as torch picks on CUDA."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-4, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-2, momentum=0.9, foreach=True)
    raise PlanFailure("setting", f"unknown optimizer {name!r}; use adamw, adam or sgd")


def compute_loss(model: Any, inputs: tuple[tuple[Any, ...], dict[str, Any]], builtin: bool) -> Any:
    """The scalar loss of one forward: next-token cross-entropy for the built-in transformer, else the
    output's ``.loss`` when it has one, else the sum of its (first) tensor output."""
    import torch

    args, kwargs = inputs
    out = model(*args, **kwargs)
    if builtin:
        return load_sibling("transformer").loss_fn(out, args[0])
    loss = getattr(out, "loss", None)
    if loss is None:
        if isinstance(out, (tuple, list)):
            out = next((o for o in out if isinstance(o, torch.Tensor)), None)
        if not isinstance(out, torch.Tensor):
            raise PlanFailure("model", "the model's output has no .loss and no tensor to sum")
        loss = out.sum()
    return loss


def train_step(
    model: Any,
    optimizer: Any,
    inputs: tuple[tuple[Any, ...], dict[str, Any]],
    builtin: bool,
    marks: Callable[[str], object] | None = None,
) -> None:
    """One step: forward, backward, optimizer step; ``marks(phase)`` is called after each phase.  The
    gradients stay set (the caller zeroes them)."""
    loss = compute_loss(model, inputs, builtin)
    marks and marks("forward")
    loss.backward()
    marks and marks("backward")
    optimizer.step()
    marks and marks("optimizer step")


def warm_up(model: Any, optimizer: Any) -> None:
    """Create the optimizer state as the first step would (zero gradients, one ``step``), then drop the
    gradients: the measured step is then a steady-state one, with optimizer state held throughout.

    The step must be the optimizer's own (foreach) one: it also makes DTensor's first, uncached sharding
    propagation of each foreach op over the whole parameter list, half of a 70B plan's time.  Made under the
    tracker instead (after a for-loop warm-up, tried), that propagation was counted as the step's memory,
    several times the optimizer state."""
    import torch

    for p in model.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _call_factory(ref: str) -> Any:
    """The user's ``file.py:fn`` / ``pkg.mod:fn`` called with no arguments; any failure is a PlanFailure naming it."""
    try:
        return resolve_factory(ref)()
    except PlanFailure:
        raise
    except BaseException as exc:
        hint = ""
        if isinstance(exc, RuntimeError) and "Couldn't swap" in str(exc):
            # nn.Module._apply swaps each parameter for the moved one; a fake tensor cannot be swapped that way
            hint = (
                ": the factory moves a built module to a device (.to('meta'), .to('cuda'), .cuda(), ...), which "
                "fails under the FakeTensorMode factories are called in; return the model where it was built "
                "(the default device) and leave the placement to the planner: nothing is allocated either way"
            )
        raise PlanFailure("model", f"{ref}() failed: {_line(exc)}{hint}") from exc


def build_model(spec: dict[str, Any]) -> Any:
    """The model of the request: the built-in transformer or the user's factory (called with no arguments)."""
    from torch import nn

    if "transformer" in spec:
        return load_sibling("transformer").Transformer(**spec["transformer"])
    ref = spec["factory"]
    model = _call_factory(ref)
    if not isinstance(model, nn.Module):
        raise PlanFailure("model", f"{ref}() returned {type(model).__name__}, not an nn.Module")
    named = list(model.named_parameters())
    if not named:
        raise PlanFailure(
            "model",
            f"{ref}() returned a {type(model).__name__} with no parameters, so there is nothing to shard or measure: "
            "give --model a factory that returns the model you train with its layers built (it is called under "
            "FakeTensorMode, so a full-size model allocates nothing), or plan the built-in decoder with --transformer SPEC",
        )
    meta = [name for name, p in named if p.is_meta]
    if meta:
        shown = ", ".join(meta[:3]) + (f" and {len(meta) - 3} more" if len(meta) > 3 else "")
        raise PlanFailure(
            "model",
            f"{ref}() built {len(meta)} of {len(named)} parameters on the meta device ({shown}), which has no memory "
            "to measure: build the model on the default device instead (drop torch.device('meta') or device='meta' "
            "from the factory); --model factories are called under FakeTensorMode, so that allocates nothing either",
        )
    return model


def make_inputs(spec: dict[str, Any], setting: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The step's inputs as ``(args, kwargs)``: from the input factory (a dict: keyword arguments; a tuple or list:
    positional arguments, so ``(batch_dict,)`` passes one dict; anything else but None: one argument), else
    int64 tokens of batch x seq.  Raises PlanFailure('model') for None or a dict with a non-str key."""
    import torch

    if spec.get("input"):
        made = _call_factory(spec["input"])
        if made is None:
            raise PlanFailure(
                "model",
                f"{spec['input']}() returned None; return the forward's input: a tensor, a "
                "tuple of positional arguments or a dict of keyword arguments",
            )
        if isinstance(made, dict):
            if not all(isinstance(k, str) for k in made):
                raise PlanFailure("model", f"{spec['input']}() returned a dict whose keys are not all strings")
            return (), made
        return (tuple(made) if isinstance(made, (tuple, list)) else (made,)), {}
    vocab = spec.get("transformer", {}).get("vocab", 2)
    return (torch.randint(0, vocab, (setting["batch"], setting["seq"])),), {}


def local_bytes(tensors: Iterable[Any]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (a DTensor counts its local shard's storage, padding
    included): what this rank holds for them."""
    from torch.distributed.tensor import DTensor

    seen: set[int] = set()
    total = 0
    for t in tensors:
        st = (t._local_tensor if isinstance(t, DTensor) else t).untyped_storage()  # to_local() without autograd
        key = st._cdata  # the StorageImpl itself (fake storages have no data pointer)
        if key not in seen:
            seen.add(key)
            total += st.nbytes()
    return total


def held_bytes(model: Any, optimizer: Any) -> tuple[int, int, int]:
    """(sharded parameter, sharded gradient, optimizer state) bytes this rank holds after the step."""
    import torch

    params = list(model.parameters())
    state = [t for st in optimizer.state.values() for t in st.values() if isinstance(t, torch.Tensor)]
    return (local_bytes(params), local_bytes([p.grad for p in params if p.grad is not None]), local_bytes(state))


HOST_WITH_OFFLOAD = ("Sharded Param", "Sharded Grad", "OptState")  # in host memory under CPUOffloadPolicy


def make_tracker(model: Any, optimizer: Any, device_peak: bool = False) -> Any:
    """An ``FSDPMemTracker`` for ``model`` and ``optimizer`` that keeps only the global peak, and also the peak of
    what is not in HOST_WITH_OFFLOAD (``device_peak``, bytes, with its category snapshot ``device_peak_snap``):
    the GPU's own peak under CPUOffloadPolicy, which can come at another moment than the whole peak.

    The stock tracker also updates every module's own peak on every operator, a loop over all modules per
    op (quadratic in depth: 22 s of a 70B plan's 40).  The plan reads only the global peak and its category
    snapshot, which this override keeps exactly as the stock code does.  ``device_peak`` False skips the
    second peak (``device_peak`` stays 0).  Under a torch whose tracker has another private layout, the stock
    tracker is returned (``device_peak`` None)."""
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

    track_device = device_peak

    class GlobalPeakTracker(FSDPMemTracker):  # type: ignore[misc]  # torch's class, Any here
        device_peak: int = 0
        device_peak_snap: dict[Any, dict[Any, int]] = {}

        def _update_peak_stats(self, peak_state: Any) -> None:
            device = 0
            for dev, dev_snap in self._curr_mem_snap.items():
                if self._peak_mem.get(dev, 0) < dev_snap["Total"]:
                    self._peak_mem[dev] = dev_snap["Total"]
                    self._peak_mem_snap[dev] = dict(dev_snap)
                if not track_device:
                    continue
                device += dev_snap["Total"] - sum(v for k, v in dev_snap.items() if getattr(k, "value", k) in HOST_WITH_OFFLOAD)
            if device > self.device_peak:
                self.device_peak = device
                self.device_peak_snap = {k: dict(v) for k, v in self._curr_mem_snap.items()}

    tracker = GlobalPeakTracker(model, optimizer)
    if not (
        hasattr(FSDPMemTracker, "_update_peak_stats")  # the method overridden, and the state it reads
        and all(hasattr(tracker, a) for a in ("_curr_mem_snap", "_peak_mem", "_peak_mem_snap"))
    ):
        stock = FSDPMemTracker(model, optimizer)  # another torch's private layout: the same peak, only slower
        stock.device_peak = stock.device_peak_snap = None
        return stock
    return tracker


def _snapshot(tracker: Any, which: str, snap: dict[Any, Any] | None = None) -> dict[str, int]:
    """Bytes per category (our names) of the tracker's ``which`` snapshot, or of ``snap`` when given."""
    snap = tracker.get_tracker_snapshot(which) if snap is None else snap
    out = {v: 0 for v in CATEGORIES.values()}
    for per_device in snap.values():
        for key, value in per_device.items():
            name = CATEGORIES.get(getattr(key, "value", key))
            if name:
                out[name] += int(value)
    return out


def _needs() -> tuple[Any, Any, Any]:
    """The torch pieces the planner needs (FakeTensorMode, init_device_mesh, FakeStore); raises PlanFailure('torch')
    naming the installed torch when one is missing."""
    import torch

    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker  # noqa: F401
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        from torch.testing._internal.distributed.fake_pg import FakeStore
    except ImportError as exc:
        raise PlanFailure(
            "torch",
            f"the planner needs torch's fully_shard, FSDPMemTracker and fake process group "
            f"(torch 2.6 or later); torch {torch.__version__} here: {_line(exc)}",
        ) from exc
    return FakeTensorMode, init_device_mesh, FakeStore


def plan_one(spec: dict[str, Any], setting: dict[str, Any]) -> dict[str, Any]:
    """Figures of one setting (a dict, bytes), acting as rank ``setting['rank']``; raises PlanFailure."""
    import torch
    import torch.distributed as dist

    FakeTensorMode, init_device_mesh, FakeStore = _needs()

    started = time.perf_counter()
    shape = tuple(setting["mesh"])
    world = 1
    for n in shape:
        world *= n
    dist.init_process_group("fake", store=FakeStore(), rank=setting.get("rank", 0), world_size=world)
    try:
        names = ("replicate", "shard") if len(shape) == 2 else ("shard",)
        mesh = init_device_mesh("cpu", shape, mesh_dim_names=names)  # outside FakeTensorMode
        fake = FakeTensorMode()
        with fake:
            model = build_model(spec)
            params = sum(p.numel() for p in model.parameters())
        # outside the mode (the fake parameters still dispatch to it): an int reshard_after_forward builds
        # its smaller device mesh here, which fails inside FakeTensorMode
        blocks = shard(model, mesh, setting)
        with fake:
            optimizer = make_optimizer(model, setting["optimizer"])
            inputs = make_inputs(spec, setting)
            builtin = "transformer" in spec
            warm_up(model, optimizer)
            tracker = make_tracker(model, optimizer, device_peak=bool(setting.get("cpu_offload")))
            tracker.track_inputs(inputs)
            peaks: dict[str, tuple[int, int]] = {}
            with tracker:
                train_step(
                    model,
                    optimizer,
                    inputs,
                    builtin,
                    marks=lambda phase: peaks.setdefault(
                        phase, (sum(_snapshot(tracker, "peak").values()), tracker.device_peak or 0)
                    ),
                )
                steady = held_bytes(model, optimizer)
            peak = _snapshot(tracker, "peak")
            device = None
            if setting.get("cpu_offload") and tracker.device_peak is not None:
                device = _snapshot(tracker, "", tracker.device_peak_snap)
                for name in HOST_WITH_OFFLOAD:
                    device[CATEGORIES[name]] = 0  # in host memory
    except PlanFailure:
        raise
    except AttributeError as exc:
        if "record_event" in str(exc):  # torch 2.6: FSDP2 on the CPU device, where the planner runs it, lacks it
            raise PlanFailure(
                "torch",
                f"this torch ({torch.__version__}) cannot run FSDP2 on the CPU device, where the planner runs the step "
                f"(2.9.1 and newer can; 2.7 and 2.8 were not tried): {_line(exc)}",
            ) from exc
        raise PlanFailure("setting", f"planning failed: {_line(exc)}") from exc
    except Exception as exc:
        raise PlanFailure("setting", f"planning failed: {_line(exc)}") from exc
    finally:
        dist.destroy_process_group()
    total = sum(peak.values())
    on_device = sum(device.values()) if device else None
    which, top = (1, on_device) if on_device is not None else (0, total)  # with offload, the phase of the GPU's own peak
    phase = next(p for p in ("forward", "backward", "optimizer step") if peaks[p][which] >= top)
    return {
        "ok": True,
        "setting": setting,
        "world_size": world,
        "params": params,
        "blocks": len(blocks),
        "peak_bytes": total,
        "peak_phase": phase,
        "peak_by_category": peak,
        "device_peak_bytes": on_device,
        "device_peak_by_category": device,
        "sharded_param_bytes": steady[0],
        "sharded_grad_bytes": steady[1],
        "optimizer_state_bytes": steady[2],
        "seconds": time.perf_counter() - started,
        "torch_version": torch.__version__,
    }


def main(argv: list[str]) -> int:
    """Read the request (``--request FILE``, else stdin), print one JSON line per setting; return 0, or 3 after a
    failure line.

    With ``--frame NONCE`` (how the tool runs it) each line is framed as ``@fsdp-skill-result:NONCE {...}``
    (runtime/framing.py), so what the user's factory prints is not taken for a result.  The lines go to a copy
    of the stdout descriptor taken before any user code runs: a factory that replaces ``sys.stdout`` does not
    swallow them."""
    import warnings

    warnings.simplefilter("ignore")
    options = dict(zip(argv[0::2], argv[1::2], strict=False))
    prefix = "@fsdp-skill-result:" + options["--frame"] + " " if "--frame" in options else ""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")

    def emit(value: dict[str, Any]) -> None:
        try:
            sys.stdout.flush()  # the user's output so far comes first
        except (OSError, ValueError):
            pass  # the user's code closed or replaced it
        out.write(prefix + json.dumps(value) + "\n")
        out.flush()

    if "--request" in options:  # how the tool runs it: its stdin is the shepherd's, not the caller's
        with open(options["--request"], encoding="utf-8") as f:
            request = json.load(f)
    else:
        request = json.loads(sys.stdin.read())
    for setting in request["settings"]:
        try:
            result = plan_one(request["model"], setting)
        except PlanFailure as exc:
            emit({"ok": False, "kind": exc.kind, "error": str(exc), "traceback": traceback.format_exc(limit=-8)})
            return 3
        emit(result)
    return 0


if __name__ == "__main__":
    here = sys.path[0]
    sys.path[:] = [p for p in sys.path if p != here]  # `python child.py` put the plan folder first
    code = main(sys.argv[1:])
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    # every result is written and flushed: exit now, not after the threads the user's factory left running (a
    # non-daemon thread would hold the interpreter's shutdown, and the plan would time out with every row measured)
    os._exit(code)
