"""The rule table: each rule is data (:class:`Rule`: code, severity, message, knowledge section, verified
snippet) plus a small finder in :mod:`fsdp_skill.core.check.finders` (FSD003-FSD010 in
:mod:`fsdp_skill.core.check.rank_conditional`). README's rule table is rendered from :data:`RULES`."""

from __future__ import annotations

from fsdp_skill.core.check.models import Rule, Severity


def _r(code: str, severity: Severity, summary: str, message: str, section: str, snippet: str) -> Rule:
    return Rule(code=code, severity=severity, summary=summary, message=message, section=section, snippet=snippet)


RULES: dict[str, Rule] = {
    r.code: r
    for r in [
        _r(
            "FSD001",
            "error",
            "optimizer built from a module's parameters before `fully_shard` of that module",
            "optimizer created before fully_shard replaces these parameters with DTensors: it will never see a gradient; "
            "create it after the last fully_shard",
            "fsdp2/optimizer-after-fully-shard",
            "fsdp2/optimizer-order",
        ),
        _r(
            "FSD002",
            "error",
            "optimizer built from a module's parameters before `FSDP(...)` wraps it",
            "optimizer created before FullyShardedDataParallel wraps the module holds the unwrapped parameters; "
            "create it after wrapping",
            "fsdp2/optimizer-after-fully-shard",
            "recipes/fsdp1-end-to-end",
        ),
        _r(
            "FSD003",
            "error",
            "`torch.distributed` collective inside a rank-conditional branch",
            "the other ranks never join this collective and the job hangs; call it on every rank",
            "debugging/distributed-debug-detail",
            "debugging/distributed-debug-detail",
        ),
        _r(
            "FSD004",
            "error",
            "`dcp.save` / `dcp.load` inside a rank-conditional branch",
            "dcp.save/dcp.load are collectives (each rank writes or reads its own shard): call them on every rank",
            "checkpoint/fsdp2-dcp-save-load",
            "checkpoint/fsdp2-dcp-roundtrip",
        ),
        _r(
            "FSD005",
            "error",
            "full state dict (`get_model_state_dict(full_state_dict=True)`, `broadcast_from_rank0`) on rank 0 only",
            "gathering a full state dict is collective: every rank calls it, only rank 0 then saves",
            "checkpoint/fsdp2-full-state-dict",
            "checkpoint/fsdp2-full-state-dict-rank0",
        ),
        _r(
            "FSD006",
            "error",
            "FSDP1 `model.state_dict()` / `FSDP.optim_state_dict` on rank 0 only",
            "FSDP1's FULL_STATE_DICT all-gathers the parameters: every rank calls state_dict(), use rank0_only=True "
            "and save on rank 0",
            "checkpoint/fsdp1-full-state-dict-rank0",
            "checkpoint/fsdp1-full-state-dict-rank0",
        ),
        _r(
            "FSD007",
            "error",
            "`DTensor.full_tensor()` inside a rank-conditional branch",
            "full_tensor() all-gathers the shards: every rank must call it",
            "fsdp2/dtensor-local-shard",
            "fsdp2/dtensor-to-local",
        ),
        _r(
            "FSD008",
            "error",
            "`ZeroRedundancyOptimizer.consolidate_state_dict` on rank 0 only",
            "consolidate_state_dict() is collective: call it on every rank, then state_dict() on the target rank",
            "checkpoint/zero-consolidate-state-dict",
            "checkpoint/zero-consolidate-state-dict",
        ),
        _r(
            "FSD009",
            "error",
            "`new_group` / `init_device_mesh` inside a rank-conditional branch, or `new_group` given ranks built from this process's rank",
            "process groups are created by every rank of the default group, members or not, in the same order and with "
            "the same ranks: create every group on every rank and keep the one that holds this rank",
            "init/new-group",
            "init/new-group",
        ),
        _r(
            "FSD010",
            "error",
            "forward of an FSDP module (e.g. evaluation) on rank 0 only",
            "an FSDP module all-gathers its parameters in forward: run it on every rank (evaluate on all ranks, log on rank 0)",
            "sharding/parameter-sharding-basics",
            "sharding/shard-layout",
        ),
        _r(
            "FSD011",
            "error",
            "plain `GradScaler` in a script that shards with FSDP",
            "use torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler: a plain GradScaler checks only the local "
            "shard for inf, so ranks skip different steps and their scales diverge",
            "mixed-precision/fp16-sharded-grad-scaler",
            "mixed-precision/fsdp1-fp16-sharded-grad-scaler",
        ),
        _r(
            "FSD012",
            "error",
            "`torch.nn.utils.clip_grad_norm_` on an FSDP1 model's parameters",
            "on FSDP1 flat shards torch.nn.utils.clip_grad_norm_ sees only the local shard; call model.clip_grad_norm_(max_norm) "
            "on the root FSDP module",
            "fsdp2/gradient-clipping",
            "recipes/fsdp1-end-to-end",
        ),
        _r(
            "FSD013",
            "error",
            "NCCL process group without `torch.cuda.set_device` or `device_id` (in a script)",
            "NCCL without torch.cuda.set_device(local_rank) (or init_process_group(device_id=...)): every process "
            'uses cuda:0 ("Duplicate GPU detected")',
            "backends/nccl-exclusive-gpu",
            "init/env-init",
        ),
        _r(
            "FSD014",
            "warning",
            "`init_process_group` without `destroy_process_group` (in a script)",
            "no destroy_process_group(): call it once at the end (in a finally:), or NCCL teardown can hang at exit",
            "init/destroy-process-group",
            "init/env-init",
        ),
        _r(
            "FSD015",
            "error",
            "`fully_shard` on a submodule after `fully_shard` on its parent",
            "fully_shard bottom-up: blocks first, the root last; after the root every parameter is already a DTensor "
            "and this call raises",
            "sharding/fully-shard-order-root",
            "sharding/bottom-up-order",
        ),
        _r(
            "FSD016",
            "error",
            "`torch.save` of an FSDP2 module's `state_dict()` (not to a per-rank file)",
            "an FSDP2 state_dict() holds this rank's DTensor shards, not the model: use get_model_state_dict(model, "
            "options=StateDictOptions(full_state_dict=True, cpu_offload=True)) or dcp.save",
            "checkpoint/fsdp2-full-state-dict",
            "checkpoint/fsdp2-full-state-dict-rank0",
        ),
        _r(
            "FSD017",
            "warning",
            "`torch.save(optimizer.state_dict())` with FSDP1",
            "with FSDP1 optimizer.state_dict() is per-rank flat-parameter state: save FSDP.optim_state_dict(model, optim) "
            "inside a state_dict_type context",
            "checkpoint/fsdp1-optim-state-dict",
            "checkpoint/fsdp1-optim-state-dict",
        ),
        _r(
            "FSD018",
            "error",
            "`no_sync()` on an FSDP2 module",
            "FSDP2 modules have no no_sync(): use model.set_requires_gradient_sync(False) for the accumulation "
            "micro-batches and True before the last",
            "fsdp2/gradient-accumulation-no-sync",
            "fsdp2/grad-accumulation",
        ),
        _r(
            "FSD019",
            "error",
            "FSDP1 argument or class passed to `fully_shard` (or an FSDP2 policy to `FSDP`)",
            "FSDP1 and FSDP2 arguments differ",
            "fsdp2/migrate-fsdp1-to-fsdp2",
            "fsdp2/migrate-fsdp1-to-fsdp2",
        ),
        _r(
            "FSD020",
            "warning",
            "model cast to bf16/fp16 before sharding",
            "casting the model before sharding makes the sharded (master) weights and optimizer state low precision; "
            "keep it fp32 and set MixedPrecisionPolicy(param_dtype=torch.bfloat16)",
            "model/model-dtype-vs-policy",
            "model/model-dtype-vs-policy",
        ),
        _r(
            "FSD021",
            "error",
            "`.forward()` / `.generate()` called directly on an FSDP2 module",
            "FSDP2 all-gathers parameters only when the module is called: call model(...), or "
            "register_fsdp_forward_method(model, name) for other methods",
            "fsdp2/register-fsdp-forward-method",
            "fsdp2/register-forward-method",
        ),
        _r(
            "FSD022",
            "error",
            "`register_hook` on the parameters of an FSDP2 module",
            "hooks registered with register_hook on FSDP2's sharded parameters never fire; use "
            "register_post_accumulate_grad_hook",
            "model/gradient-hooks",
            "model/gradient-hooks",
        ),
        _r(
            "FSD023",
            "error",
            "`Join` given an FSDP module",
            "FSDP is not Joinable (Join([...]) fails at construction); even out the batches (DistributedSampler, "
            "a 'has data' all_reduce)",
            "join/join-limitations",
            "join/uneven-alternatives",
        ),
        _r(
            "FSD024",
            "error",
            "`monitored_barrier` on an NCCL-only default group",
            'monitored_barrier is implemented by gloo only: pass group=dist.new_group(backend="gloo") or init '
            'with "cpu:gloo,cuda:nccl"',
            "debugging/monitored-barrier",
            "debugging/monitored-barrier",
        ),
        _r(
            "FSD025",
            "error",
            "`dcp.async_save` without a CPU-capable process group",
            'async_save needs a CPU backend ("A CPU backend must be enabled for async save"): init with '
            '"cpu:gloo,cuda:nccl" or pass process_group= a gloo group',
            "checkpoint/dcp-async-save",
            "checkpoint/dcp-async-save",
        ),
        _r(
            "FSD026",
            "warning",
            "argparse declares only `--local_rank`",
            "torch.distributed.launch passes --local-rank (dashed) since torch 2.0 and torchrun passes none: read "
            "LOCAL_RANK from the environment, or accept both spellings with a default",
            "launch/local-rank-argument",
            "launch/local-rank-argument",
        ),
        _r(
            "FSD027",
            "warning",
            "activation checkpointing without `use_reentrant=False`",
            "torch.utils.checkpoint.checkpoint without use_reentrant=False uses the reentrant variant (no gradients "
            "when inputs do not require grad); pass use_reentrant=False",
            "model/ac-reentrant",
            "model/ac-reentrant-vs-nonreentrant",
        ),
        _r(
            "FSD028",
            "error",
            "`torch.compile(..., fullgraph=True)` on a root FSDP2 model",
            "fullgraph=True on the whole FSDP2 model fails on FSDP's hooks: compile each block instead",
            "model/compile-fully-shard",
            "model/compile-per-block-parity",
        ),
        _r(
            "FSD029",
            "error",
            "`parallelize_module` (tensor parallel) after `fully_shard` of the same module",
            "apply tensor parallel before fully_shard: it needs the plain parameters",
            "parallelism/apply-order-tp-ac-compile-fsdp",
            "parallelism/apply-order-tp-ac-compile-fsdp",
        ),
        _r(
            "FSD030",
            "error",
            "`set_requires_gradient_sync(False)` never turned back on",
            "gradients are never reduce-scattered: set_requires_gradient_sync(True) before the last micro-batch",
            "fsdp2/gradient-accumulation-no-sync",
            "fsdp2/grad-accumulation",
        ),
        _r(
            "FSD031",
            "warning",
            "FSDP1 wrapping a partly frozen model as one unit without `use_orig_params=True`",
            'with use_orig_params=False one FSDP1 unit must be all frozen or all trainable ("Must flatten tensors with '
            'uniform requires_grad"); pass use_orig_params=True or wrap the frozen part separately',
            "model/frozen-params-fsdp1",
            "model/frozen-params-fsdp1",
        ),
        _r(
            "FSD032",
            "error",
            "meta-device model sharded but never materialised (`to_empty`; in a script)",
            "the model was built on the meta device and is never materialised: call model.to_empty(device=...) after "
            "fully_shard, then initialise (reset_parameters or load)",
            "fsdp2/meta-device-init",
            "fsdp2/meta-init",
        ),
        _r(
            "FSD033",
            "info",
            "CPU offload with an optimizer not set to `fused=True` / `foreach=True`",
            "with CPU offload the optimizer steps on CPU: pass fused=True (or foreach=True) for a fast CPU step",
            "offload/offload-optimizer-choice",
            "offload/fsdp2-offload-fused-adamw",
        ),
        _r(
            "FSD034",
            "info",
            "low-precision `param_dtype` without `reduce_dtype`",
            "reduce_dtype is unset, so gradients are reduced in the low param_dtype; set reduce_dtype=torch.float32",
            "mixed-precision/numerics-pitfalls",
            "mixed-precision/fsdp2-bf16-fp32-reduce",
        ),
        _r(
            "FSD035",
            "warning",
            "`DistributedSampler` loader iterated over epochs without `set_epoch`",
            "DistributedSampler shuffles with seed + epoch: without sampler.set_epoch(epoch) every epoch repeats the same order",
            "checkpoint/resume-latest-complete",
            "checkpoint/resume-latest-complete",
        ),
        _r(
            "FSD036",
            "error",
            "rank-0-only forward through a DDP wrapper that was given to `Join`",
            "after a Join the wrapper's forward still issues all-reduces the other ranks never answer; evaluate on one "
            "rank through model.module",
            "join/joinable-interface",
            "join/join-config-after-exit",
        ),
        _r(
            "FSD037",
            "error",
            "`break` / `continue` / `return` under a rank condition that skips collectives or a wrapped model's "
            "forward/backward the other ranks still run (or a framework's stop flag, `trainer.should_stop = True`, set "
            "on some ranks only)",
            "the ranks that leave stop answering the others' collectives and the job hangs; decide on every rank "
            "(all_reduce a stop flag) and leave together",
            "debugging/rank-divergent-early-exit",
            "debugging/early-stop-agreed",
        ),
        _r(
            "FSD038",
            "error",
            "`if` / `while` on a value only one rank holds (`dist.reduce(..., dst=0)`, `gather`, a rank-0-only result) "
            "guarding collectives or an exit from a training loop",
            "the ranks can take different branches and the job hangs or skips work on some; broadcast (or all_reduce) the "
            "value first so every rank decides the same",
            "debugging/decision-on-one-rank-value",
            "debugging/broadcast-the-decision",
        ),
        _r(
            "FSD039",
            "error",
            "framework save that is a collective under FSDP (`trainer.save_model`, `accelerator.save_state`, Lightning "
            "`save_checkpoint`, FULL_STATE_DICT `state_dict()`) or always (DeepSpeed `engine.save_checkpoint`, accelerate "
            "`save_state` with DeepSpeed) on rank 0 only",
            "under FSDP this save gathers or writes every rank's shards (Lightning's and DeepSpeed's end in a barrier): "
            "call it on every rank, the framework writes the files from the main process itself",
            "checkpoint/framework-save-every-rank",
            "checkpoint/framework-save-every-rank",
        ),
        _r(
            "FSD040",
            "error",
            "optimizer step inside DDP `no_sync()` (on gradients never all-reduced)",
            "no_sync() must hold the forward and backward of the accumulating micro-batches only: run the last micro-batch "
            "and optimizer.step() outside it (a step inside uses gradients that were never all-reduced, so the replicas "
            "drift apart)",
            "debugging/ddp-no-sync-accumulation",
            "debugging/ddp-no-sync-accumulation",
        ),
        _r(
            "FSD041",
            "warning",
            "checkpoint written under `local_rank == 0` to a path that does not name the node",
            "local rank 0 of every node writes this same path: on a shared filesystem the nodes overwrite each other; "
            "save under the global rank 0 (or put the node rank in the path)",
            "checkpoint/local-rank-save-shared-path",
            "checkpoint/local-rank-save-shared-path",
        ),
        _r(
            "FSD042",
            "warning",
            "global rank used as the CUDA device index (`set_device(rank)`, `cuda:{rank}`, `.to(rank)`)",
            "past the first node the global rank is larger than the GPU count (invalid device ordinal); index the "
            "device by LOCAL_RANK",
            "launch/local-rank-device",
            "launch/local-rank-device",
        ),
        _r(
            "FSD043",
            "warning",
            "`torch.load` (or Lightning `load_from_checkpoint`) without `map_location` on every rank",
            "torch.load puts each tensor back on the device it was saved from (usually cuda:0), so every rank allocates "
            'the checkpoint on that GPU; pass map_location="cpu" (or this rank\'s device)',
            "checkpoint/torch-load-map-location",
            "checkpoint/torch-load-map-location",
        ),
        _r(
            "FSD044",
            "error",
            "FSDP1 `.generate()` (a method other than forward) outside `summon_full_params`",
            "a method other than forward bypasses the FSDP1 root's forward, so its own parameters stay sharded; "
            "call it inside `with FSDP.summon_full_params(model, writeback=False, recurse=False):`",
            "sharding/fsdp1-generate-summon",
            "sharding/fsdp1-generate-summon",
        ),
        _r(
            "FSD045",
            "warning",
            "forward through a DDP wrapper (e.g. evaluation) on rank 0 only",
            "a DDP forward broadcasts the module's buffers from rank 0 (unless built with broadcast_buffers=False or, from torch 2.13, forward_sync_buffers=False) and the other "
            "ranks never join: evaluate through model.module on one rank, or run the wrapper on every rank",
            "debugging/ddp-forward-on-one-rank",
            "debugging/ddp-eval-through-module",
        ),
        _r(
            "FSD046",
            "warning",
            "only the backward inside DDP `no_sync()`, its forward before it (the context does nothing)",
            "DDP arms the gradient all-reduce in forward: with the forward outside no_sync() the backward inside still "
            "all-reduces, so the accumulation saves no communication; put the micro-batch's forward inside the context too",
            "debugging/ddp-no-sync-accumulation",
            "debugging/ddp-no-sync-accumulation",
        ),
        _r(
            "FSD047",
            "error",
            "NCCL collective on a tensor built on the CPU (`torch.tensor([n])`, `torch.zeros(1)`, `torch.FloatTensor([...])`, `.cpu()`) and never moved",
            'an NCCL-only process group cannot communicate a CPU tensor ("No backend type associated with device type '
            "cpu\"): build it with device= the rank's GPU, move it with .cuda() / .to(device), or form the group as "
            '"cpu:gloo,cuda:nccl"',
            "backends/mixed-backends",
            "backends/cpu-tensor-on-gloo-group",
        ),
        _r(
            "FSD048",
            "error",
            "`DistributedSampler(seed=...)` with a seed that differs between ranks",
            "DistributedSampler shuffles with seed + epoch and gives each rank every world_size-th index of that one "
            "permutation: with a per-rank seed the ranks draw different permutations, their shards overlap and some "
            "samples are never seen; give every rank the same seed",
            "checkpoint/distributed-sampler-same-seed",
            "checkpoint/distributed-sampler-same-seed",
        ),
        _r(
            "FSD049",
            "error",
            '`from_pretrained(device_map="auto")` model wrapped in DDP / FSDP / `fully_shard` / `accelerator.prepare`',
            'device_map="auto" spreads every rank\'s copy of the model over all the GPUs it sees, so the ranks share '
            "GPUs and DDP/FSDP replicate a model split across devices; load it on the rank's own device "
            '(device_map={"": local_rank}, or no device_map and .to(device))',
            "model/device-map-auto-with-ddp",
            "model/device-map-auto-with-ddp",
        ),
        _r(
            "FSD050",
            "error",
            "reentrant activation checkpointing with DDP `find_unused_parameters=True`",
            "with find_unused_parameters=True DDP marks the checkpointed block's parameters ready after forward, and the "
            'reentrant recomputation marks them again in backward: "Expected to mark a variable ready only once"; '
            'pass use_reentrant=False (gradient_checkpointing_kwargs={"use_reentrant": False}) or drop '
            "find_unused_parameters / use static_graph=True",
            "model/ac-reentrant-find-unused",
            "model/ac-reentrant-find-unused",
        ),
        _r(
            "FSD051",
            "warning",
            "collective (`dist.barrier()`, ...) before `torch.cuda.set_device(local_rank)` with NCCL",
            "NCCL runs a collective on the current device, and before set_device that is cuda:0 on every rank (a CUDA "
            "context and buffers of every process on GPU 0, or a hang; torch warns it is using the device under current "
            "context): call torch.cuda.set_device(local_rank) first, or pass device_id= to init_process_group",
            "debugging/barrier-device-warning",
            "launch/local-rank-device",
        ),
        _r(
            "FSD052",
            "warning",
            "`accelerator.gather` (not `gather_for_metrics`) of predictions in an evaluation loop, fed to a metric",
            "a prepared dataloader pads the last batch with duplicated samples so that every process gets one, and "
            "gather() keeps them: the metric counts those samples twice; use accelerator.gather_for_metrics(...), "
            "which drops the duplicates",
            "recipes/accelerate-gather-for-metrics",
            "recipes/accelerate-gather-for-metrics",
        ),
        _r(
            "FSD053",
            "error",
            "FSDP2: full state dict from `torch.load` loaded with `load_state_dict` after `fully_shard`",
            'after fully_shard the parameters are DTensors and load_state_dict of plain tensors fails ("got mixed '
            'torch.Tensor and DTensor"): load before fully_shard, or use set_model_state_dict(model, sd, '
            "options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))",
            "checkpoint/fsdp2-full-state-dict",
            "checkpoint/fsdp2-full-state-dict-rank0",
        ),
        _r(
            "FSD054",
            "error",
            "Accelerate / Lightning collective (`gather`, `wait_for_everyone`, `all_gather`, `log(sync_dist=True)`, `strategy.barrier`, the `trainer.log_dir` property) on some ranks only",
            "this framework call is a torch.distributed collective underneath: the other ranks never join it and the job "
            "hangs; call it on every rank and keep only the printing or saving under the rank condition",
            "debugging/framework-collective-on-rank-zero",
            "debugging/framework-gather-every-rank",
        ),
        _r(
            "FSD055",
            "warning",
            "file written on rank 0 (`torch.save`, `save_pretrained`, or a helper doing it) then read on every rank (or a "
            "directory made on rank 0, then written into by every rank) with no barrier between",
            "nothing makes the other ranks wait for rank 0's write: they can read no file, a partial one or the previous "
            "one; put dist.barrier() (accelerator.wait_for_everyone()) after the save and before the load",
            "checkpoint/rank-zero-write-barrier",
            "checkpoint/rank-zero-write-barrier",
        ),
        _r(
            "FSD056",
            "warning",
            "collective or wrapped forward under `if os.path.exists(p)` where `p` is node-local, per-rank, just written by one "
            "rank or read by one rank only",
            "each rank asks its own filesystem: a node-local path, a per-rank name or a file rank 0 wrote without a barrier "
            "since can exist on some ranks only, and only they reach this work; decide on one rank and broadcast the answer",
            "debugging/decision-on-one-rank-value",
            "debugging/broadcast-the-decision",
        ),
        _r(
            "FSD057",
            "warning",
            "`continue` / `break` / `return` decided on this rank's data (`isnan(loss)`, `batch is None`, an `except` "
            "around its loss) before the backward or a collective",
            "each rank decides on its own loss or batch, so one rank skips the backward (its gradient all-reduce) or the "
            "collective while the others wait in it; all-reduce the skip flag first (ReduceOp.MAX) and let every rank skip together",
            "debugging/rank-divergent-early-exit",
            "debugging/early-stop-agreed",
        ),
        _r(
            "FSD058",
            "error",
            "early stopping (`break` out of the training loop) on a validation metric each rank computed on its own "
            "shard, or on this rank's own wall clock (`time.time() - start > budget`)",
            "a value each rank computed alone (a metric over its own shard of the data, its own clock) can differ "
            "between ranks, so they can decide differently and leave the loop at different iterations: the others hang "
            "in the next collective; all-reduce the metric (or the stop flag) before deciding, or broadcast rank 0's decision",
            "debugging/rank-divergent-early-exit",
            "debugging/early-stop-agreed",
        ),
        _r(
            "FSD059",
            "warning",
            "loader with a `DistributedSampler` returned by a helper, iterated over epochs without `set_epoch`",
            "the sampler inside the loader the helper returns shuffles with seed + epoch: without "
            "loader.sampler.set_epoch(epoch) at the top of each epoch every epoch repeats the same order",
            "checkpoint/resume-latest-complete",
            "checkpoint/resume-latest-complete",
        ),
        _r(
            "FSD060",
            "warning",
            "DDP `no_sync()` accumulation and `optimizer.step()` decided on different micro-batches (`step % n` vs `(step + 1) % n`)",
            "the micro-batch that runs outside no_sync() (whose backward all-reduces the accumulated gradients) is not the "
            "one that steps: the step uses gradients whose last micro-batches were never all-reduced, and the replicas drift "
            "apart; decide both on the same condition",
            "debugging/ddp-no-sync-accumulation",
            "debugging/ddp-no-sync-accumulation",
        ),
        _r(
            "FSD061",
            "warning",
            "training loop over a `DataLoader` with no `DistributedSampler` (nor any sampler, nor a dataset split per rank) in a DDP / FSDP script",
            "every rank iterates the whole dataset in the same order, so the ranks train on the same batches and N "
            "processes do the work of one; give the loader sampler=DistributedSampler(dataset) (and call "
            "sampler.set_epoch(epoch) each epoch), or split the dataset by rank",
            "data/shard-the-training-loader",
            "data/distributed-sampler-shards",
        ),
        _r(
            "FSD062",
            "error",
            "`DataLoader(..., sampler=DistributedSampler(...), shuffle=True)`",
            'DataLoader raises "ValueError: sampler option is mutually exclusive with shuffle": drop shuffle=True from '
            "the DataLoader and pass shuffle to DistributedSampler (it shuffles by default)",
            "data/shard-the-training-loader",
            "data/distributed-sampler-shards",
        ),
        _r(
            "FSD063",
            "warning",
            "`DistributedSampler(rank=local_rank)` or `num_replicas=torch.cuda.device_count()` (the node's view for the job's)",
            "the sampler splits the dataset among the whole job: num_replicas is the world size and rank the global rank "
            "(the defaults, from the process group); with the node's local rank every node reads the same shards, with "
            "the node's GPU count the ranks past the first node are out of range",
            "data/shard-the-training-loader",
            "data/distributed-sampler-shards",
        ),
        _r(
            "FSD064",
            "error",
            "`dist.all_reduce` / `broadcast` / `reduce` given a Python number, `.item()`, a list or a NumPy array",
            "collectives work on tensors in place and raise TypeError for anything else (a number cannot be changed in "
            "place anyway): reduce a tensor, e.g. t = torch.tensor([value], device=device); dist.all_reduce(t); t.item()",
            "data/reduce-a-metric",
            "data/reduce-a-metric",
        ),
        _r(
            "FSD065",
            "warning",
            "loss or metric all-reduced with the default `SUM`, then reported or kept as an average with no division",
            "dist.all_reduce sums by default: the value is the sum over the ranks, N times the mean; divide by "
            "dist.get_world_size() (or by the summed count) before reporting it as an average",
            "data/reduce-a-metric",
            "data/reduce-a-metric",
        ),
        _r(
            "FSD066",
            "warning",
            "value divided by the world size after `all_reduce(op=ReduceOp.AVG)` (averaged twice)",
            "ReduceOp.AVG already divides by the number of ranks: dividing again makes the value N times too small; "
            "drop the division (or reduce with SUM and divide once)",
            "data/reduce-a-metric",
            "data/reduce-a-metric",
        ),
        _r(
            "FSD067",
            "warning",
            "gradients all-reduced by hand (`dist.all_reduce(p.grad)`) on the parameters of a DDP / FSDP model",
            "the wrapper already averaged the gradients during backward: this all-reduce repeats the communication and, "
            "unless divided again, makes the gradients N times too large; drop it (or drop the wrapper)",
            "data/through-the-wrapper",
            "data/ddp-step-through-the-wrapper",
        ),
        _r(
            "FSD068",
            "error",
            "training forward through `model.module(...)` or the unwrapped module (not the DDP / FSDP wrapper) feeding `backward()`",
            "DDP arms its gradient all-reduce (and FSDP1 gathers its parameters) only in the wrapper's forward: a forward "
            "around it trains each rank on its own gradients and the replicas drift apart (FSDP1 fails on the flat "
            "shards); call the wrapper, model(x), and keep model.module for state_dict, saving and attributes",
            "data/through-the-wrapper",
            "data/ddp-step-through-the-wrapper",
        ),
        _r(
            "FSD069",
            "error",
            "state dict saved from a DDP / DataParallel wrapper (`module.*` keys) loaded into the bare model, or the reverse",
            'the wrapper\'s state dict names every key "module.<name>" and the bare model\'s "<name>": load_state_dict fails '
            'with "Missing key(s) ... Unexpected key(s)"; save ddp_model.module.state_dict() (or strip the prefix with '
            "torch.nn.modules.utils.consume_prefix_in_state_dict_if_present) and load into the module before wrapping it",
            "checkpoint/ddp-module-prefix",
            "checkpoint/ddp-module-prefix",
        ),
        _r(
            "FSD070",
            "warning",
            "`torch.save` / `save_pretrained` of a checkpoint on every rank to one path that does not name the rank",
            "every rank writes the same file at the same time: the writes interleave or replace each other and a reader can "
            "get a partial or mixed file; save on rank 0 only (if dist.get_rank() == 0:) and dist.barrier() before anyone "
            "reads it, or give each rank its own file",
            "checkpoint/rank-zero-write-barrier",
            "checkpoint/rank-zero-write-barrier",
        ),
        _r(
            "FSD071",
            "error",
            "`load_state_dict` on one rank into a module already wrapped by DDP / FSDP1, or into an optimizer",
            "the other ranks never load: DDP broadcasts the parameters only in its constructor and nothing broadcasts an "
            "optimizer's state, so the replicas start from different weights or state (an FSDP1 module's load all-gathers: "
            "the job hangs); load on every rank (map_location='cpu'), or on rank 0 before DDP(...) for the parameters only",
            "checkpoint/load-before-wrap",
            "checkpoint/load-before-wrap",
        ),
        _r(
            "FSD072",
            "warning",
            "FSDP1: `optimizer.load_state_dict` of a state read from one file, never converted with `optim_state_dict_to_load`",
            "with FSDP1 each rank's optimizer holds the state of its own shard of the flat parameters: one file's plain "
            "optimizer state fits at most the rank that wrote it; save FSDP.optim_state_dict(model, optim) and load "
            "FSDP.optim_state_dict_to_load(model, optim, osd) on every rank",
            "checkpoint/fsdp1-optim-state-dict",
            "checkpoint/fsdp1-optim-state-dict",
        ),
        _r(
            "FSD073",
            "warning",
            "`init_process_group(rank=local_rank)` with the job's world size (the rank on the node for the rank in the job)",
            "the rank given to init_process_group numbers the process in the whole job: on a second node the local ranks "
            "0..n-1 repeat the first node's, two processes claim each rank and the ranks past the first node's are never "
            "filled, so the rendezvous hangs; pass the global rank (RANK, or node_rank * gpus_per_node + local_rank), "
            "or leave rank out with env:// under torchrun",
            "launch/local-rank-device",
            "launch/local-rank-device",
        ),
        _r(
            "FSD074",
            "error",
            'CUDA device written into a multi-process script (`"cuda:0"`, `.cuda(0)`, `device_ids=[0]`, `set_device(0)`; a bare `"cuda"` never bound with `set_device`)',
            'every rank of the node lands on that one GPU: NCCL fails with "Duplicate GPU detected" (or the ranks share '
            'its memory and run out of it); take the device from the rank on the node, torch.device("cuda", local_rank) '
            "after torch.cuda.set_device(local_rank)",
            "launch/device-from-local-rank",
            "launch/device-from-local-rank",
        ),
        _r(
            "FSD075",
            "error",
            "`FSDP(...)` without `sync_module_states=True` (or `fully_shard`) of a module whose weights only some ranks loaded",
            "neither FSDP1 without sync_module_states nor fully_shard broadcasts the module: each rank shards its own "
            "weights, so the other ranks train from random or empty ones; pass sync_module_states=True to FSDP(...) with "
            "device_id (it refuses a module on the CPU), for FSDP2 set_model_state_dict(..., broadcast_from_rank0=True) "
            "after fully_shard, or load on every rank",
            "checkpoint/fsdp1-sync-module-states",
            "checkpoint/fsdp1-sync-module-states",
        ),
        _r(
            "FSD076",
            "warning",
            "FSDP1 `CPUOffload(offload_params=True)` of a module moved to the GPU before the wrap",
            "FSDP1 flattens and shards each unit on the device it finds it on and only then moves the shard to the CPU: "
            "the whole unsharded model must first fit in each rank's GPU memory, the peak CPU offload was meant to "
            "avoid; keep the module on the CPU and pass device_id=torch.cuda.current_device() (with an "
            "auto_wrap_policy FSDP moves one unit at a time)",
            "offload/fsdp1-offload-module-on-cpu",
            "offload/fsdp1-cpu-offload-cuda",
        ),
        _r(
            "FSD077",
            "warning",
            "module wrapped by DDP without `find_unused_parameters=True` whose `forward` leaves a trained submodule or parameter out of some calls",
            "a parameter that gets no gradient in a step keeps its bucket from finishing, and the next forward raises "
            '"Expected to have finished reduction in the prior iteration before starting a new one": use the part on '
            "every call, freeze it (requires_grad_(False)) or remove it before wrapping, or pass find_unused_parameters=True",
            "debugging/ddp-unused-parameters",
            "debugging/ddp-unused-parameters",
        ),
        _r(
            "FSD078",
            "warning",
            "evaluation over a `DistributedSampler` (`drop_last=False`: it pads) whose per-rank results are gathered or summed whole",
            "DistributedSampler repeats samples so that every rank gets as many, so the gathered predictions (or the summed "
            "counts) hold those samples twice and the metric is skewed; keep each sample's index and drop the repeats, cut "
            "the gathered results to len(dataset), or evaluate the remainder apart (sampler drop_last=True)",
            "data/evaluate-without-padding",
            "data/evaluate-without-padding",
        ),
        _r(
            "FSD079",
            "warning",
            "loop with a backward or a collective over data split by hand per rank into parts that can differ in size (`data[rank::world]`, `array_split`, `chunk`)",
            "a rank with one batch more runs one more backward (its gradient all-reduce) or collective, which the others "
            "never join, and the job hangs at the end of the epoch; cut the data to a multiple of the world size first, "
            "use DistributedSampler (it pads), agree on the number of steps (all_reduce with ReduceOp.MIN), or wrap the "
            "loop in Join([model])",
            "join/uneven-alternatives",
            "join/uneven-alternatives",
        ),
        _r(
            "FSD080",
            "warning",
            "Hugging Face `generate()` without `synced_gpus=True` on a model still sharded while it generates (FSDP2, FSDP1 nested units, ZeRO-3)",
            "each generated token is a forward whose sharded layers all-gather their parameters: a rank whose sequences end "
            "first stops joining those all-gathers and the others hang; pass synced_gpus=True (transformers 4.46 and later "
            "default it to True for an FSDP-managed module, older releases and a ZeRO-3 engine set up without "
            "HfDeepSpeedConfig do not)",
            "sharding/fsdp1-generate-summon",
            "sharding/fsdp1-generate-summon",
        ),
        _r(
            "FSD081",
            "error",
            "FSDP1 `summon_full_params` entered on some ranks only (`rank0_only=True` included)",
            "summon_full_params all-gathers the flat parameters (and their gradients with with_grads=True) on every rank "
            "of the sharding group, whatever rank0_only says: the ranks that skip it never join and the job hangs; enter "
            "the context on every rank and keep only the printing or saving on rank 0",
            "sharding/fsdp1-generate-summon",
            "sharding/fsdp1-generate-summon",
        ),
        _r(
            "FSD082",
            "error",
            "plain `loss.backward()` on the output of a DeepSpeed engine's forward (not `engine.backward(loss)`)",
            "the engine's backward scales the loss for gradient accumulation and fp16 and averages the gradients across "
            "the ranks at the accumulation boundary; a plain backward skips that, so each rank steps on its own "
            "gradients and the replicas drift apart: call engine.backward(loss), then engine.step()",
            "data/through-the-wrapper",
            "data/ddp-step-through-the-wrapper",
        ),
        _r(
            "FSD083",
            "info",
            "gradient accumulation (`step()` under a `%` test) on a DDP / Accelerate model without `no_sync()`",
            "each micro-batch's backward runs DDP's full gradient all-reduce, so accumulating N micro-batches costs N "
            "all-reduces where one is needed (the result is the same, the communication is not): run the micro-batches "
            "that do not step inside model.no_sync() (accelerator.no_sync(model)), or use accelerator.accumulate(model) "
            "with Accelerator(gradient_accumulation_steps=N)",
            "debugging/ddp-no-sync-accumulation",
            "debugging/ddp-no-sync-accumulation",
        ),
        _r(
            "FSD084",
            "error",
            "weights drawn from a per-rank seed (`manual_seed(seed + rank)`), then replicated without a broadcast (FSDP1 `HYBRID_SHARD` / `NO_SHARD` without `sync_module_states=True`, `fully_shard` on a (replicate, shard) mesh)",
            "the replicas start from different weights and nothing broadcasts them: the averaged gradients give each "
            "replica the same update, so they never agree and each trains its own model; draw the weights from one "
            "seed on every rank (reseed per rank afterwards for dropout or augmentation) or, with FSDP1, pass "
            "sync_module_states=True",
            "sharding/rank-seeded-init-replicas",
            "sharding/rank-seeded-init-replicas",
        ),
        _r(
            "FSD085",
            "error",
            "`DDP(module, device_ids=[...])` of a module built on the CPU and never moved to its GPU",
            "DDP raises a ValueError at the wrap (device_ids and output_device work only with a module whose "
            "parameters are on one or more GPUs, or with a CPU module given no device_ids): move the module to "
            "this rank's GPU first (module.to(local_rank)), or leave device_ids out for a CPU run",
            "launch/ddp-device-ids-cpu-module",
            "launch/ddp-device-ids-cpu-module",
        ),
        _r(
            "FSD086",
            "warning",
            "validation metric computed over this rank's `DistributedSampler` shard, then compared with a best value or reported on rank 0, never reduced",
            "each rank's evaluation loop saw only its own shard of the validation set, so this value is one rank's "
            "metric, not the job's: the best checkpoint is chosen (and the number printed) on rank 0's share of the "
            "data; all-reduce the sums and counts (dist.all_reduce(torch.tensor([correct, total], device=device))) "
            "and divide before comparing or reporting",
            "data/reduce-a-metric",
            "data/reduce-a-metric",
        ),
        _r(
            "FSD087",
            "warning",
            "Lightning `self.log(name, ...)` without `sync_dist=True` of the metric a `ModelCheckpoint` / `EarlyStopping` / scheduler monitors, under a multi-process Trainer",
            "each process logs the mean over its own validation shard, so every rank's callback watches a different "
            "value: the ranks can keep different top-k checkpoints and step their schedulers at different epochs; "
            "pass sync_dist=True (or log a torchmetrics Metric object, which syncs itself)",
            "data/reduce-a-metric",
            "data/reduce-a-metric",
        ),
        _r(
            "FSD088",
            "error",
            "all-gather (`dist.all_gather`, `all_gather_into_tensor`, Lightning `self.all_gather`, `accelerator.gather`) of a tensor whose size depends on this rank's data (a mask selection, a data-bound slice), sizes never exchanged",
            'these gathers need the same shape on every rank: with sizes that differ Gloo aborts ("Received data size '
            "doesn't match expected size\") and NCCL hangs or returns garbage; gather the sizes first, pad to the "
            "largest, gather and cut each part back (accelerator.pad_across_processes), or use all_gather_object",
            "data/gather-uneven-sizes",
            "data/gather-uneven-sizes",
        ),
        _r(
            "FSD089",
            "warning",
            "`with accelerator.accumulate(model):` around the whole batch loop instead of around each step",
            "the context decides once, when it is entered, whether this step syncs the gradients and steps the "
            "optimizer: entered once around the loop it decides the same for every batch (no accumulation, or no step "
            "at all); enter it inside the loop, around one batch's forward, backward and step",
            "debugging/ddp-no-sync-accumulation",
            "debugging/ddp-no-sync-accumulation",
        ),
        _r(
            "FSD090",
            "error",
            "model `from_pretrained` inside `accelerator.main_process_first()` under DeepSpeed ZeRO-3",
            "under ZeRO-3 from_pretrained builds the model inside deepspeed.zero.Init, whose partitioning is "
            "collective, while main_process_first holds the other ranks in a barrier until the main process leaves "
            "the block: its collectives have no peers and the job hangs; load the model on every rank at once and keep "
            "main_process_first for the dataset's preprocessing",
            "debugging/framework-collective-on-rank-zero",
            "debugging/framework-gather-every-rank",
        ),
    ]
}

NOT_ANALYSED = "FSD000"  # the file was not analysed (does not parse, or the checker failed on it): a finding, not a rule
# the rule codes as a range ("FSD001-FSD090"): the check_script tool's description gives it, and a test holds the
# pre-commit hook's description and README to it
RULE_RANGE = f"{min(RULES)}-{max(RULES)}"
