"""Every API a card lists resolves in the installed torch, and what cards state about signatures holds."""

import pytest
from helpers.factcheck import check_section

from fsdp_skill.core.apis import introspect
from fsdp_skill.core.knowledge.cards import load_knowledge, parse_card

pytestmark = pytest.mark.torch
KB = load_knowledge()
APIS = sorted({a for s in KB.sections.values() for a in s.apis})


@pytest.mark.parametrize("name", APIS)
def test_listed_api_resolves(name):
    info = introspect(name)
    assert info.available, f"{name} is listed by a card but missing from the installed torch"


@pytest.mark.parametrize("section_id", list(KB.sections))
def test_card_claims_match_introspection(section_id):
    assert check_section(KB.sections[section_id]) == []


BAD_CARD = """---
id: join
title: t
topic: join
aliases: [a]
sources: [https://docs.pytorch.org/docs/stable/distributed.algorithms.join.html]
---

## Join
<!--
slug: j
apis: [torch.distributed.algorithms.Join, torch.distributed.fsdp.fully_shard]
sources: [https://docs.pytorch.org/docs/stable/distributed.algorithms.join.html]
-->
The signature is `Join(joinables, enable=False, throw_on_early_termination=False)`, and
`fully_shard(model, reshard_after_fwd=True)` keeps parameters.
"""


def test_factcheck_catches_a_wrong_default_and_a_wrong_keyword():
    section = parse_card(BAD_CARD, "join.md").sections[0]
    problems = check_section(section)
    assert any("default of 'enable' is True" in p for p in problems), problems
    assert any("no parameter 'reshard_after_fwd'" in p for p in problems), problems
    assert len(problems) == 2


BAD_FIELDS_CARD = """---
id: mixed-precision
title: t
topic: mixed-precision
aliases: [a]
sources: [https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html]
---

## Fields
<!--
slug: f
apis: [torch.distributed.fsdp.MixedPrecisionPolicy, torch.distributed.fsdp.CPUOffloadPolicy, torch.distributed.fsdp.ShardingStrategy]
sources: [https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html]
-->
`cast_forward_inputs` defaults to `False`. The default is `pin_memory=False`.
`output_dtype` (default `None`) is right; `ShardingStrategy.HYBRID_ZERO3` is not a member, `ShardingStrategy.NO_SHARD` is.
"""


def test_factcheck_reads_dataclass_field_defaults_and_enum_members():
    problems = check_section(parse_card(BAD_FIELDS_CARD, "mixed-precision.md").sections[0])
    assert any("default of 'cast_forward_inputs'" in p and "is True" in p for p in problems), problems
    assert any("default of 'pin_memory'" in p and "is True" in p for p in problems), problems
    assert any("ShardingStrategy.HYBRID_ZERO3 is not a member" in p for p in problems), problems
    assert len(problems) == 3, problems


def test_a_signature_does_not_print_object_addresses(monkeypatch):
    """A default that is a function prints as ``<function f at 0x...>``; the signature drops the address, so an
    answer's API block is the same in every process and state directory."""
    import sys
    import types

    from fsdp_skill.runtime import introspect as script

    mod = types.ModuleType("fsdp_skill_address_probe")

    def noop():
        return None

    def api(x, fn=noop, obj=object()):
        return x

    mod.api = api
    monkeypatch.setitem(sys.modules, "fsdp_skill_address_probe", mod)
    got = script.describe("fsdp_skill_address_probe.api")["signature"]
    assert " at 0x" not in got and "fn=<function test_a_signature_does_not_print_object_addresses.<locals>.noop>" in got, got
    assert "obj=<object object>" in got, got
