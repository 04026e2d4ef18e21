"""One probe run: rank 0 of an N-rank training job on the one local GPU, its memory and step time.

PyTorch's fake process group ("fake" backend, torch.testing._internal.distributed.fake_pg) makes
every collective a no-op that still allocates its outputs, so the tensors rank 0 holds are exactly
those of a real N-rank job: FSDP2 shards (fully_shard over a 1-D or HSDP mesh), DTensor TP shards,
gathered parameters, gradients and AdamW states. What it cannot show is communication time: the
step time recorded here is compute only.

Usage (see configurations.py for the plan, run_all.py to run it):
  python3 tools/probe/probe.py --config tools/probe/configs/llama-3.1-8b.json --layers 8 \
      --world 64 --shard-group 64 --tp 2 --sp --recompute sac --compile --mbs 1 --seq 8192 \
      --steps 4 --out cases.yaml
"""

import argparse
import json
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import case_writer  # noqa: E402

GIB = 1024 ** 3


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="a Hugging Face config.json")
    p.add_argument("--id", default=None, help="the case id (default: from the settings)")
    p.add_argument("--layers", type=int, default=None, help="body layers to build (default: the config's)")
    p.add_argument("--world", type=int, required=True, help="ranks of the job (rank 0 is run)")
    p.add_argument("--shard-group", type=int, required=True, help="FSDP shard group (HSDP when below world/tp)")
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--sp", action="store_true", help="sequence parallelism with TP")
    p.add_argument("--no-reshard", action="store_true", help="fully_shard(reshard_after_forward=False)")
    p.add_argument("--recompute", choices=["none", "full", "sac"], default="none")
    p.add_argument("--compile", action="store_true", help="torch.compile each block")
    p.add_argument("--mbs", type=int, default=1)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--out", required=True, help="a YAML file the case is appended to")
    a = p.parse_args(argv)
    if a.world % a.tp != 0 or (a.world // a.tp) % a.shard_group != 0:
        p.error("--tp must divide --world and --shard-group must divide world/tp")
    return a


def configuration(a, config):
    layers = a.layers or config["num_hidden_layers"]
    return {"model": os.path.splitext(os.path.basename(a.config))[0], "layers": layers, "world": a.world,
            "shard_group": a.shard_group, "tp": a.tp, "sp": a.sp and a.tp > 1, "reshard": not a.no_reshard,
            "recompute": a.recompute, "compile": a.compile, "mbs": a.mbs, "seq": a.seq}


def sac_policy(torch):
    """torchtitan's per-op SAC (torchtitan/distributed/activation_checkpoint.py): save the outputs
    of attention and of every other matmul, recompute everything else."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    ops = torch.ops.aten
    save = {ops.mm.default, ops._scaled_dot_product_flash_attention.default,
            ops._scaled_dot_product_efficient_attention.default}
    if hasattr(ops, "_scaled_dot_product_cudnn_attention"):
        save.add(ops._scaled_dot_product_cudnn_attention.default)

    def context_fn():
        counts = {"mm": 0}

        def policy(ctx, func, *args, **kwargs):
            if func == ops.mm.default:
                counts["mm"] += 1
                if counts["mm"] % 2 == 0:  # every other matmul recomputed
                    return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE if func in save else CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return context_fn


def tp_plan(torch, layer, sp):
    """DTensor TP for a Hugging Face decoder layer (Megatron's split: column-parallel q/k/v and
    gate/up, row-parallel o/down); with SP the norms run on sequence shards."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)

    plan = {}
    names = dict(layer.named_modules())
    seq_in = Shard(1) if sp else Replicate()
    for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"):
        if n in names:
            plan[n] = ColwiseParallel()
    for n in ("self_attn.o_proj", "mlp.down_proj"):
        if n in names:
            plan[n] = RowwiseParallel(output_layouts=seq_in)
    if sp:
        for n in ("input_layernorm", "post_attention_layernorm"):
            if n in names:
                plan[n] = SequenceParallel()
        plan["self_attn"] = PrepareModuleInput(input_kwarg_layouts={"hidden_states": Shard(1)},
                                               desired_input_kwarg_layouts={"hidden_states": Replicate()})
        plan["mlp"] = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
    return plan


def run(a):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor.parallel import parallelize_module
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from torch.utils.checkpoint import checkpoint
    from transformers import AutoConfig, AutoModelForCausalLM

    with open(a.config, encoding="utf-8") as f:
        config_dict = json.load(f)
    conf = configuration(a, config_dict)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=a.world)
    torch.cuda.set_device(0)
    dp = a.world // a.tp
    mesh = init_device_mesh("cuda", (dp // a.shard_group, a.shard_group, a.tp),
                            mesh_dim_names=("dp_replicate", "dp_shard", "tp"))
    hf = AutoConfig.for_model(**{k: v for k, v in config_dict.items() if k != "architectures"})
    hf.num_hidden_layers = conf["layers"]
    hf._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf, torch_dtype=torch.float32)
    blocks = model.model.layers
    if a.tp > 1:
        for block in blocks:
            parallelize_module(block, mesh["tp"], tp_plan(torch, block, conf["sp"]))
    if a.recompute != "none":
        context_fn = sac_policy(torch) if a.recompute == "sac" else None
        for block in blocks:
            forward = block.forward

            def wrapped(*args, _forward=forward, **kwargs):
                if context_fn is None:
                    return checkpoint(_forward, *args, use_reentrant=False, **kwargs)
                return checkpoint(_forward, *args, use_reentrant=False, context_fn=context_fn, **kwargs)

            block.forward = wrapped
    if a.compile:
        for block in blocks:
            block.compile()
    dp_mesh = mesh["dp_replicate", "dp_shard"] if dp // a.shard_group > 1 else mesh["dp_shard"]
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in blocks:
        fully_shard(block, mesh=dp_mesh, reshard_after_forward=not a.no_reshard, mp_policy=mp)
    fully_shard(model, mesh=dp_mesh, reshard_after_forward=not a.no_reshard, mp_policy=mp)
    model.to_empty(device="cuda")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.02)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)

    tokens = torch.randint(0, hf.vocab_size, (a.mbs, a.seq), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    steps = []
    for _ in range(a.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        steps.append({"seconds": start.elapsed_time(end) / 1e3,
                      "allocated_gib": torch.cuda.max_memory_allocated() / GIB,
                      "reserved_gib": torch.cuda.max_memory_reserved() / GIB})
    dist.destroy_process_group()
    return conf, config_dict, steps, torch.cuda.get_device_properties(0).total_memory / GIB


def record(a, conf, config_dict, steps, capacity_gib):
    """The case's record (case_writer.case_text reads it): the peak over the steps (the first step
    allocates the optimizer states), and the median step time of the steps after the first."""
    later = sorted(s["seconds"] for s in steps[1:]) or [steps[0]["seconds"]]
    step_s = later[len(later) // 2]
    dp = conf["world"] // conf["tp"]
    command = " ".join(shlex.quote(x) for x in [sys.executable, "tools/probe/probe.py"] + sys.argv[1:])
    reserved = max(s["reserved_gib"] for s in steps)
    return {
        "id": a.id or "probe-{}-L{}-n{}".format(conf["model"], conf["layers"], conf["world"]),
        "configuration": conf, "config": config_dict, "capacity_gib": round(capacity_gib, 2),
        "allocated_gib": round(max(s["allocated_gib"] for s in steps), 3),
        "step_time_s": round(step_s, 4),
        "tokens_per_sec": round(conf["mbs"] * conf["seq"] / step_s / conf["tp"], 1) if step_s > 0 else None,
        "notes": ("Measured by tools/probe {} on one H200 with the fake process group (rank 0 of {}; "
                  "collectives skipped, so the step time is compute only). {} of {} layers, dp {} "
                  "({} replicas of {}). Peak reserved {:.3f} GiB. Command: {}").format(
                      case_writer.PROBE_VERSION, conf["world"], conf["layers"], config_dict["num_hidden_layers"],
                      dp, dp // conf["shard_group"], conf["shard_group"], reserved, command),
    }


def main(argv):
    a = parse_args(argv)
    conf, config_dict, steps, capacity = run(a)
    case_writer.append_case(a.out, record(a, conf, config_dict, steps, capacity))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
