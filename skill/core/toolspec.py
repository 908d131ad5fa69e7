"""The agent tool catalogue: names, descriptions, input models and output models, shared by every adapter.

The MCP adapter (:mod:`fsdp_skill.adapters.mcp`) registers these tools; the function-call adapter
(:mod:`fsdp_skill.adapters.tools`, ``fsdp-skill tools --format openai|anthropic``) prints them as
function-call schemas for frameworks that do not speak MCP and runs such a framework's tool calls.  Parameter schemas are derived from the pydantic
input models below, so the MCP ``inputSchema`` and the function-call ``parameters`` are the same.

No adapter imports live here (no FastAPI, no mcp): only pydantic and the core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fsdp_skill.core.answer import MAX_K, MAX_QUESTION_CHARS
from fsdp_skill.core.check import MAX_CHECK_CHARS, RULE_RANGE, CheckReport
from fsdp_skill.core.models import Answer, SectionOut
from fsdp_skill.core.plan.models import PlanReport
from fsdp_skill.records import Record

if TYPE_CHECKING:  # imported where a tool runs (the plan request imports the runtime's limits)
    from fsdp_skill.core.knowledge.catalogue import Catalogue
    from fsdp_skill.core.plan.request import PlanRequest
    from fsdp_skill.core.verify.export import ExportedScript
    from fsdp_skill.core.verify.sent_scripts import ScriptRun
    from fsdp_skill.core.verify.snippets import SnippetInfo, Verifier
    from fsdp_skill.core.verify.workdirs import RunFileContent

_TERMS = (
    "FSDP / FSDP2 (fully_shard, FullyShardedDataParallel), sharding 分片 (FULL_SHARD, SHARD_GRAD_OP, "
    "HYBRID_SHARD, reshard_after_forward), mixed precision 混合精度 (MixedPrecisionPolicy, bf16/fp16), "
    "CPU offload 卸载 (CPUOffloadPolicy), meta-device init, uneven inputs with Join 不均匀输入, "
    "process-group backends 后端 (nccl, gloo), init_process_group 初始化 and torchrun, "
    "distributed checkpoint 检查点 (DCP, state_dict)"
)


class AskInput(BaseModel):
    """Arguments of the ``ask`` tool."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        description=f"The question in English or Chinese, or a pasted torch.distributed error or "
        f"traceback (at most {MAX_QUESTION_CHARS:,} characters)"
    )
    k: int = Field(3, ge=1, le=MAX_K, description=f"Number of knowledge sections to return, 1-{MAX_K}")
    verify: bool = Field(
        True,
        description="Attach a verdict to each code snippet, running it on a real process group "
        "when no cached verdict exists; false returns snippets as 'unverified' at once",
    )
    language: Literal["auto", "en", "zh"] = Field(
        "auto",
        description="The reader's language: 'auto' follows the question's main language; 'zh' marks the "
        "answer for Chinese rendering (sections[].text_zh, the full Chinese body), 'en' for English "
        "(sections[].text). Both bodies are always returned",
    )


class CheckInput(BaseModel):
    """Arguments of the ``check_script`` tool (and the body of ``POST /v1/check``)."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(
        min_length=1,
        max_length=MAX_CHECK_CHARS,
        description=f"The Python source to check (a training script; at most {MAX_CHECK_CHARS:,} "
        f"characters). It is parsed, never imported or run",
    )
    path: str = Field(
        "script.py",
        min_length=1,
        max_length=260,
        description="File name to show in the findings (display only; nothing is read or written)",
    )
    select: list[str] = Field(
        default_factory=list,
        description="Only findings whose code starts with one of these prefixes (e.g. ['FSD00', 'FSD011']); empty: all",
    )
    ignore: list[str] = Field(
        default_factory=list, description="Drop findings whose code starts with one of these prefixes (e.g. ['FSD03'])"
    )


class SectionInput(BaseModel):
    """Arguments of the ``get_section`` tool."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Section id 'topic/slug', e.g. from sections[].id of an ask answer")


class SnippetInput(BaseModel):
    """Arguments of the ``verify_snippet`` tool."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Snippet id, e.g. from sections[].snippets[].id of an ask answer")


class ExportInput(BaseModel):
    """Arguments of the ``export_snippet`` tool."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Snippet id, e.g. from sections[].snippets[].id of an ask answer")
    include_unverified: bool = Field(
        False,
        description="Also return a snippet that did not pass verification "
        "(failed, timeout, skipped), marked NOT VERIFIED in its header",
    )


class ListInput(BaseModel):
    """Arguments of the ``list_sections`` tool."""

    model_config = ConfigDict(extra="forbid")

    topic: list[str] = Field(
        default_factory=list, description="Only sections of these topics (e.g. ['join']); empty: every section"
    )


class VerifyScriptInput(BaseModel):
    """Arguments of the ``verify_script`` tool (local stdio server with --allow-run-scripts only)."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(
        max_length=1_000_000,
        description="The complete script to run, as a user would launch it with torchrun (it calls init_process_group itself)",
    )
    filename: str = Field(
        "script.py",
        description="File name the code is written to inside workdir (plain name "
        "ending in .py); sibling files written earlier there import",
    )
    args: list[str] = Field(
        default_factory=list, description="The script's own arguments (its sys.argv[1:]), as after `torchrun ... script.py`"
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Variables added to the ranks' environment (names starting FSDP_SKILL_ are dropped)"
    )
    world_size: int = Field(2, ge=1, le=64, description="Ranks to launch, 1-64")
    backend: Literal["auto", "gloo", "nccl"] = Field(
        "auto", description="Process-group backend: auto (NCCL when there are enough GPUs, else gloo), gloo or nccl"
    )
    timeout: float = Field(60.0, gt=0, le=3600, description="Seconds before the run is killed as hung (at most 3600)")
    launcher: Literal["warm", "torchrun"] = Field(
        "warm", description="warm (ranks forked from a preloaded parent, fast) or torchrun (torch's own launcher)"
    )
    cpu: bool = Field(
        False,
        description="CPU dry run: run a CUDA script on gloo ranks with CUDA placement (.cuda(), device='cuda', NCCL, "
        "set_device, autocast, GradScaler, ...) mapped to the CPU; verification.dry_run is then 'cpu', and a script "
        "needing what the CPU cannot stand in for (a CUDA extension, fp8) is skipped with 'cannot dry-run on CPU: ...'",
    )
    workdir: str = Field(
        "default",
        description="Name of the working directory (plain name); it persists for this "
        "server's lifetime, so a second call with the same name sees the files "
        "the first one wrote (e.g. to test resuming from a checkpoint)",
    )


class ReadRunFileInput(BaseModel):
    """Arguments of the ``read_run_file`` tool (registered with ``verify_script`` only)."""

    model_config = ConfigDict(extra="forbid")

    workdir: str = Field(
        "default", description="Name of the working directory a verify_script call ran in (its workdir argument)"
    )
    path: str = Field(
        description="The file's path relative to workdir, as in files[].path of the verify_script result (no '..', "
        "not absolute; symbolic links are not followed)"
    )
    offset: int = Field(0, ge=0, le=2**62, description="Byte offset to start reading at (next_offset of the previous part)")


@dataclass(frozen=True)
class ToolSpec:
    """One agent tool: its name, when to call it, its typed input and output, and the core call behind it."""

    name: str
    title: str
    description: str
    input: type[BaseModel]
    # a pydantic model or a record (fsdp_skill.records: the answers' value types); pydantic's TypeAdapter gives
    # either one's schema and JSON
    output: type[BaseModel] | type[Record]
    # call(arguments, verifier): the core call, given an instance of ``input``; ``verifier`` None means the
    # runtime's (see core.verify.snippets)
    call: Callable[[Any, Verifier | None], BaseModel | Record]
    # acall(arguments, verifier): the same call for an adapter on an event loop (MCP), awaited there instead of
    # running ``call`` in a worker thread; None: run ``call`` in a thread.  plan_memory has one: its plan waits in
    # the plan queue (core/plan/queue.py) without a thread, and a full queue is a QueueFull at once.
    acall: Callable[[Any, Verifier | None], Awaitable[BaseModel | Record]] | None = None
    # Behaviour hints for agents (MCP tool annotations): read_only = changes nothing the caller can see (a
    # verdict cached along the way is not a change); idempotent = calling again with the same arguments has
    # no further effect; destructive = may delete or overwrite the caller's data.  No tool reaches outside
    # this host (openWorldHint false).
    read_only: bool = True
    idempotent: bool = True
    destructive: bool = False


def _ask(a: AskInput, verifier: Verifier | None = None) -> Answer:
    from fsdp_skill.core.answer import ask

    return ask(a.question, k=a.k, verify=a.verify, verifier=verifier, language=a.language)


def _check_script(a: CheckInput, verifier: Verifier | None = None) -> CheckReport:
    from fsdp_skill.core.check import check_code

    return check_code(a.code, a.path, select=a.select, ignore=a.ignore)


def _get_section(a: SectionInput, verifier: Verifier | None = None) -> SectionOut:
    from fsdp_skill.core.verify.snippets import get_section

    return get_section(a.id, verifier=verifier)


def _verify_snippet(a: SnippetInput, verifier: Verifier | None = None) -> SnippetInfo:
    from fsdp_skill.core.verify.snippets import verify_snippet

    return verify_snippet(a.id, verifier=verifier)


def _export_snippet(a: ExportInput, verifier: Verifier | None = None) -> ExportedScript:
    from fsdp_skill.core.verify.export import export_one

    return export_one(a.id, include_unverified=a.include_unverified, verifier=verifier)


def _list_sections(a: ListInput, verifier: Verifier | None = None) -> Catalogue:
    from fsdp_skill.core.knowledge.catalogue import catalogue

    return catalogue(a.topic)


def _plan_memory(a: PlanRequest, verifier: Verifier | None = None) -> PlanReport:
    from fsdp_skill.core.plan.queue import plan_queued_sync

    return plan_queued_sync(a)  # the served doors' queue: a function-call framework may call from many threads


async def _plan_memory_async(a: PlanRequest, verifier: Verifier | None = None) -> PlanReport:
    from fsdp_skill.core.plan.queue import plan_queued

    return await plan_queued(a)


def _tool_specs() -> list[ToolSpec]:
    from fsdp_skill.core.knowledge.catalogue import Catalogue
    from fsdp_skill.core.plan.request import PlanRequest
    from fsdp_skill.core.verify.export import ExportedScript
    from fsdp_skill.core.verify.snippets import SnippetInfo

    return [
        ToolSpec(
            name="ask",
            title="Ask the FSDP expert",
            description=(
                "Answer a question about PyTorch FSDP and torch.distributed with the best-matching knowledge sections "
                "(prose, official source URLs), live API signatures from the installed torch, and complete code "
                "snippets each carrying a verdict from running it on a real multi-process process group. Call it "
                f"first whenever the user asks about {_TERMS}, or pastes a torch.distributed error, hang or traceback "
                "(English or Chinese, 中文提问也可以). Recommend only snippets whose verification.status is 'passed'; "
                "treat 'failed'/'timeout' as not recommended. If abstained is true the question is outside this field."
            ),
            input=AskInput,
            output=Answer,
            call=_ask,
        ),
        ToolSpec(
            name="check_script",
            title="Check a training script for FSDP mistakes",
            description=(
                "Review Python code statically (parsed, never run) for FSDP / torch.distributed mistakes: the "
                "optimizer built before fully_shard, a collective or barrier on only some ranks, GradScaler "
                "instead of ShardedGradScaler, NCCL without set_device, a checkpoint saved or loaded on one rank, "
                f"and more (rules {RULE_RANGE}). Each finding has code, severity (error: hangs, crashes or computes "
                "wrong results; warning; info), message, line/col, the knowledge section that explains it "
                "(get_section) and the verified snippet that shows the fix (export_snippet). Call it on every "
                "training script you write or edit, before running it or giving it to the user; fix every error."
            ),
            input=CheckInput,
            output=CheckReport,
            call=_check_script,
        ),
        ToolSpec(
            name="get_section",
            title="Read a knowledge section",
            description=(
                "Fetch one knowledge section by id (from sections[].id of an ask answer, e.g. 'join/ddp-join') with "
                "its full markdown text, full Chinese body (text_zh), Chinese summary, official sources and snippets with their latest verdicts "
                "(cached runs only; nothing is executed). Call it to read or quote a section in full, or to follow "
                f"up on a topic ask already found ({_TERMS})."
            ),
            input=SectionInput,
            output=SectionOut,
            call=_get_section,
        ),
        ToolSpec(
            name="list_sections",
            title="List sections and snippet ids",
            description=(
                "List the knowledge base: every topic, and for each section its id, title, topic and the ids of its "
                "runnable snippets (no text, nothing is run). Pass topic (e.g. ['join', 'mixed-precision']) to "
                "narrow it. Call it to browse what is covered or to find a snippet id for verify_snippet / "
                "export_snippet or a section id for get_section."
            ),
            input=ListInput,
            output=Catalogue,
            call=_list_sections,
        ),
        ToolSpec(
            name="verify_snippet",
            title="Verify a knowledge snippet",
            description=(
                "Run one knowledge snippet (by id, from sections[].snippets[].id) on a real process group on this "
                "host — gloo on CPU, NCCL when there are enough GPUs — and return its code with the verdict: "
                "passed / failed (with per-rank tracebacks) / timeout (with where ranks hung) / skipped (e.g. needs "
                "CUDA). A cached verdict returns at once; a fresh run takes seconds. Call it before recommending a "
                "snippet whose status is 'unverified', or when the user asks whether an FSDP / fully_shard / "
                "分片 / 混合精度 / 卸载 / Join / 后端 / 初始化 / 检查点 pattern works with their torch. Only knowledge "
                "snippets can be run: this tool never executes code you send."
            ),
            input=SnippetInput,
            output=SnippetInfo,
            call=_verify_snippet,
            read_only=False,
        ),
        ToolSpec(
            name="export_snippet",
            title="Export a snippet as a script",
            description=(
                "Return a knowledge snippet as a ready-to-save script file: a comment header (snippet and section "
                "ids, source URL, verdict, torch version, backend, world_size, the torchrun command) followed by the "
                "verified code byte for byte. The snippet is verified first (cache or run). Call it when the user "
                "wants a runnable FSDP / FSDP2 / torch.distributed example file (示例脚本) to launch with torchrun. "
                "Snippets that did not pass are refused unless include_unverified is true."
            ),
            input=ExportInput,
            output=ExportedScript,
            call=_export_snippet,
            read_only=False,
        ),
        ToolSpec(
            name="plan_memory",
            title="Plan FSDP2 memory per GPU",
            description=(
                "Answer 'will it fit?' / 'how much GPU memory?' for FSDP2 training of a Llama-style transformer "
                "(given by its sizes; no code is sent or run): acts as one rank of any world size or HSDP mesh on a "
                "fake process group with fake tensors and measures one training step with FSDPMemTracker, returning "
                "per-rank peak bytes by category (sharded/unsharded params, grads, activations, all-gather and "
                "reduce-scatter buffers, optimizer state), the phase of the peak, a fit verdict for gpu_memory_gib, "
                "rough estimates of what is not measured (CUDA context, NCCL, fragmentation) and knobs that lower "
                "the peak with their knowledge sections. Use sweep to compare world sizes, activation checkpointing, "
                "reshard_after_forward or dtypes. Takes seconds to a minute."
            ),
            input=PlanRequest,  # the body of POST /v1/plan too: one request model (core/plan/request.py)
            output=PlanReport,
            call=_plan_memory,
            acall=_plan_memory_async,
        ),
    ]


def verify_script_spec(session_dir: str) -> ToolSpec:
    """The ``verify_script`` tool, whose working directories live under ``session_dir``.  It runs code the
    caller sends, so it is not in :func:`tool_specs`: only ``fsdp-skill mcp --allow-run-scripts`` adds it."""
    from fsdp_skill.core.verify.sent_scripts import OUTPUT_LIMIT_BYTES, ScriptRun, run_sent_script
    from fsdp_skill.core.verify.workdirs import DEFAULT_SESSION_BYTES, MAX_LISTED_FILES

    def call(a: VerifyScriptInput, verifier: Verifier | None = None) -> ScriptRun:
        return run_sent_script(
            a.code,
            session_dir=session_dir,
            workdir=a.workdir,
            filename=a.filename,
            args=a.args,
            env=a.env,
            world_size=a.world_size,
            backend=a.backend,
            timeout=a.timeout,
            launcher=a.launcher,
            verifier=verifier,
            dry_run="cpu" if a.cpu else None,
        )

    return ToolSpec(
        name="verify_script",
        title="Run a script on a real process group",
        description=(
            "Run the Python script you send on world_size real processes of this host (gloo on CPU, NCCL with "
            "enough GPUs), exactly as `fsdp-skill verify FILE.py -- ARGS` would: the code is written to "
            "workdir/filename, run from workdir with that directory first on sys.path, with args as its sys.argv[1:] "
            "and env added to its environment (no FSDP_SKILL_* variable reaches it; HOME is the session's own). "
            "Returns the verdict (passed / failed with per-rank tracebacks and "
            "the user's line / timeout with where each rank blocked), hints naming knowledge sections, each rank's "
            f"whole stdout+stderr in verification.ranks[].output (at most {OUTPUT_LIMIT_BYTES // 1024} KiB per rank: "
            "a longer one keeps its last bytes and output_dropped_bytes says how many were cut) and the files workdir "
            f"holds after the run (files[]: path and size in bytes, the first {MAX_LISTED_FILES}; files_cut says when "
            "there are more); read one with read_run_file. The "
            "workdir keeps its files between calls of this server, so running a second script (or the same one "
            "again) in the same workdir can read what the first wrote: use it to test checkpoint save and resume. "
            f"The session directory holding every workdir is capped at {DEFAULT_SESSION_BYTES // 2**20} MiB by "
            "default: before a run that finds it over the cap, the least recently used other workdirs are removed "
            "(removed_workdirs), and a run whose own workdir is over the cap is refused. "
            "Use it to check an FSDP / torch.distributed script before giving it to the user."
        ),
        input=VerifyScriptInput,
        output=ScriptRun,
        call=call,
        read_only=False,
        idempotent=False,
        destructive=True,
    )


def read_run_file_spec(session_dir: str) -> ToolSpec:
    """The ``read_run_file`` tool: a file of a ``verify_script`` working directory under ``session_dir``; added
    with ``verify_script`` only."""
    from fsdp_skill.core.verify.workdirs import READ_LIMIT_BYTES, RunFileContent, read_run_file

    def call(a: ReadRunFileInput, verifier: Verifier | None = None) -> RunFileContent:
        return read_run_file(session_dir, a.workdir, a.path, offset=a.offset)

    return ToolSpec(
        name="read_run_file",
        title="Read a file a script run wrote",
        description=(
            "Read a file from a verify_script working directory (workdir, and path relative to it as in the run's "
            f"files[].path): at most {READ_LIMIT_BYTES // 1024} KiB from offset per call (truncated and next_offset "
            "say where the rest starts). encoding says how content holds the bytes: utf-8 (text, undecodable bytes "
            "replaced by U+FFFD) or base64 (bytes with NUL, e.g. a torch.save checkpoint). Absolute paths, '..' and "
            "symbolic links are refused: only regular files inside the working directory are read. Use it to see "
            "a log, metrics or config file a script wrote."
        ),
        input=ReadRunFileInput,
        output=RunFileContent,
        call=call,
    )


def script_tool_specs(session_dir: str) -> list[ToolSpec]:
    """The tools of ``fsdp-skill mcp --allow-run-scripts`` beyond :func:`tool_specs`: ``verify_script`` and
    ``read_run_file``, sharing the session directory ``session_dir``."""
    return [verify_script_spec(session_dir), read_run_file_spec(session_dir)]


_SPECS: list[ToolSpec] | None = None


def tool_specs() -> list[ToolSpec]:
    """The tools, in the order agents should consider them."""
    global _SPECS
    if _SPECS is None:
        _SPECS = _tool_specs()
    return _SPECS


def tool_spec(name: str) -> ToolSpec:
    """The tool called ``name``; NotFoundError for an unknown name."""
    for spec in tool_specs():
        if spec.name == name:
            return spec
    from fsdp_skill.errors import NotFoundError

    raise NotFoundError(f"unknown tool {name!r}; tools: {', '.join(s.name for s in tool_specs())}")
