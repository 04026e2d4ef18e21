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
    a.argv = list(argv)
    if a.world % a.tp != 0 or (a.world // a.tp) % a.shard_group != 0:
        p.error("--tp must divide --world and --shard-group must divide world/tp")
    return a


def configuration(a, config):
    layers = a.layers or config["num_hidden_layers"]
    return {"model": os.path.splitext(os.path.basename(a.config))[0], "layers": layers, "world": a.world,
            "shard_group": a.shard_group, "tp": a.tp, "sp": a.sp and a.tp > 1, "reshard": not a.no_reshard,
            "recompute": a.recompute, "compile": a.compile, "mbs": a.mbs, "seq": a.seq}


def sac_policy(torch):
    """torchtitan's per-op SAC (torchtitan/distributed/activation_checkpoint.py, SelectiveAC): save
    the outputs of the compute-intensive ops (matmuls, attention, topk, max) and of the
    reduce-scatter and all-to-all collectives, except every second mm/linear; recompute the rest.
    The mm count is kept apart for the forward and the recompute pass, as torchtitan does, so both
    passes make the same choice for the same matmul."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    ops = torch.ops.aten
    mm_ops = {ops.mm.default, ops.linear.default}
    save = set(mm_ops)
    try:  # the partitioner's own list, as torchtitan takes it
        from torch._functorch.partitioners import get_default_op_list
        save |= {op.default for op in get_default_op_list().compute_intensive_ops}
    except Exception:  # noqa: BLE001 - older PyTorch: the main ones by name
        pass
    for name in ("addmm", "bmm", "_grouped_mm", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention", "topk", "max"):
        if hasattr(ops, name):
            save.add(getattr(ops, name).default)
    functional = getattr(torch.ops, "_c10d_functional", None)
    for name in ("reduce_scatter_tensor", "all_to_all_single"):
        if functional is not None and hasattr(functional, name):
            save.add(getattr(functional, name).default)

    def context_fn():
        counts = {"forward": 0, "recompute": 0}

        def policy(ctx, func, *args, **kwargs):
            mode = "recompute" if ctx.is_recompute else "forward"
            if func in mm_ops:
                counts[mode] += 1
            if func in save:
                if func in mm_ops and counts[mode] % 2 == 0:
                    return CheckpointPolicy.PREFER_RECOMPUTE
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return context_fn


def tp_plan_block(layer, sp):
    """DTensor TP for a Hugging Face decoder layer, torchtitan's split (Megatron's): column-parallel
    q/k/v and gate/up, row-parallel o/down; with SP the norms run on sequence shards and the
    attention and MLP inputs are gathered."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)

    plan = {}
    names = dict(layer.named_modules())
    seq_out = Shard(1) if sp else Replicate()
    for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"):
        if n in names:
            plan[n] = ColwiseParallel()
    for n in ("self_attn.o_proj", "mlp.down_proj"):
        if n in names:
            plan[n] = RowwiseParallel(output_layouts=seq_out)
    if sp:
        for n in ("input_layernorm", "post_attention_layernorm"):
            if n in names:
                plan[n] = SequenceParallel()
        plan["self_attn"] = PrepareModuleInput(input_kwarg_layouts={"hidden_states": Shard(1)},
                                               desired_input_kwarg_layouts={"hidden_states": Replicate()})
        plan["mlp"] = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
    return plan


def tp_plan_outer(sp):
    """torchtitan's plan for the embedding, the final norm and the output layer: the embedding
    row-parallel (its output sequence-sharded with SP), the output layer column-parallel over the
    vocabulary with its logits left sharded for the loss-parallel cross entropy."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel

    plan = {"model.embed_tokens": RowwiseParallel(input_layouts=Replicate(),
                                                  output_layouts=Shard(1) if sp else Replicate()),
            "lm_head": ColwiseParallel(input_layouts=Shard(1) if sp else Replicate(), output_layouts=Shard(-1),
                                       use_local_output=False)}
    if sp:
        plan["model.norm"] = SequenceParallel()
    return plan


def fill_fake_collectives(torch):
    """The fake process group leaves a collective's output as allocated, unwritten memory. For a
    mixture of experts that matters: the router would see garbage weights and send every token to
    the same experts. So FSDP's all-gather fills every rank's slot with this rank's shard and its
    reduce-scatter keeps this rank's chunk, as if every rank held the same values: routing is then
    that of random weights, balanced. The copies add one pass over the gathered bytes, about what
    NCCL itself writes."""
    import torch.distributed as dist

    gather, scatter = dist.all_gather_into_tensor, dist.reduce_scatter_tensor

    def all_gather_into_tensor(output_tensor, input_tensor, *args, **kwargs):
        work = gather(output_tensor, input_tensor, *args, **kwargs)
        with torch.no_grad():
            world = output_tensor.numel() // max(input_tensor.numel(), 1)
            slots = output_tensor.view(world, -1)
            if input_tensor.data_ptr() == slots[0].data_ptr():
                slots[1:].copy_(slots[:1].expand(world - 1, -1))
            else:
                slots.copy_(input_tensor.reshape(1, -1).expand(world, -1))
        return work

    def reduce_scatter_tensor(output, input, *args, **kwargs):  # noqa: A002 - dist's own names
        work = scatter(output, input, *args, **kwargs)
        with torch.no_grad():
            output.view(-1).copy_(input.view(-1)[: output.numel()])
        return work

    dist.all_gather_into_tensor, dist.reduce_scatter_tensor = all_gather_into_tensor, reduce_scatter_tensor


def use_torch_rms_norm(torch, model):
    """Swap the Hugging Face RMSNorm (which upcasts to fp32 in Python ops and keeps those
    intermediates) for torch.nn.RMSNorm, the norm torchtitan's models use."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child).__name__.endswith("RMSNorm") and hasattr(child, "weight"):
                eps = getattr(child, "variance_epsilon", getattr(child, "eps", 1e-6))
                norm = torch.nn.RMSNorm(child.weight.shape[0], eps=eps, device=child.weight.device,
                                        dtype=child.weight.dtype)
                with torch.no_grad():
                    norm.weight.copy_(child.weight)
                setattr(parent, name, norm)


def build_model(torch, a, config_dict, layers):
    """The Hugging Face model from the config, materialised on the GPU in fp32 (its buffers, the
    rotary frequencies, computed as they are on a real run)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    skip = ("architectures", "auto_map", "torch_dtype", "dtype", "transformers_version")
    hf = AutoConfig.for_model(**{k: v for k, v in config_dict.items() if k not in skip})
    hf.num_hidden_layers = layers
    for key in ("layer_types",):
        if isinstance(getattr(hf, key, None), list):
            setattr(hf, key, getattr(hf, key)[:layers])
    model, errors = None, []
    moe = bool(case_writer.routed_experts(config_dict))
    for experts in ("grouped_mm", None) if moe else (None,):  # torchtitan's grouped GEMM where offered
        for dtype_key in ("dtype", "torch_dtype"):
            if experts is not None:
                hf._experts_implementation = experts
            try:
                with torch.device("cuda"):
                    model = AutoModelForCausalLM.from_config(hf, attn_implementation="sdpa",
                                                             **{dtype_key: torch.float32})
                break
            except Exception as e:  # noqa: BLE001 - the next variant, the reasons kept
                errors.append("{} / {}: {}".format(experts, dtype_key, e))
        if model is not None:
            break
    if model is None:
        raise RuntimeError("could not build the model: " + " | ".join(errors))
    for e in errors:
        print("probe: build variant refused: " + e, file=sys.stderr)
    use_torch_rms_norm(torch, model)
    return model, hf


def run(a):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor.parallel import loss_parallel, parallelize_module
    from torch.testing._internal.distributed.fake_pg import FakeStore

    with open(a.config, encoding="utf-8") as f:
        config_dict = json.load(f)
    conf = configuration(a, config_dict)
    moe = bool(case_writer.routed_experts(config_dict))
    if moe:
        fill_fake_collectives(torch)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=a.world)
    torch.cuda.set_device(0)
    dp = a.world // a.tp
    mesh = init_device_mesh("cuda", (dp // a.shard_group, a.shard_group, a.tp),
                            mesh_dim_names=("dp_replicate", "dp_shard", "tp"))
    model, hf = build_model(torch, a, config_dict, conf["layers"])
    blocks = model.model.layers

    # torchtitan's order (parallelize_llama): TP, activation checkpointing, compile, FSDP.
    if a.tp > 1:
        parallelize_module(model, mesh["tp"], tp_plan_outer(conf["sp"]))
        for block in blocks:
            parallelize_module(block, mesh["tp"], tp_plan_block(block, conf["sp"]))
    if a.recompute != "none":
        for i in range(len(blocks)):
            kwargs = {"context_fn": sac_policy(torch)} if a.recompute == "sac" else {}
            blocks[i] = checkpoint_wrapper(blocks[i], preserve_rng_state=False, **kwargs)
    if a.compile:
        for block in blocks:
            block.compile()
    dp_mesh = mesh["dp_replicate", "dp_shard"] if dp // a.shard_group > 1 else mesh["dp_shard"]
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    reshard = not a.no_reshard
    fully_shard(model.model.embed_tokens, mesh=dp_mesh, reshard_after_forward=reshard, mp_policy=mp)
    for block in blocks:
        fully_shard(block, mesh=dp_mesh, reshard_after_forward=reshard, mp_policy=mp)
    # The last norm and the output layer as one group, not resharded: backward follows at once.
    fully_shard([model.model.norm, model.lm_head], mesh=dp_mesh, reshard_after_forward=False, mp_policy=mp)
    fully_shard(model, mesh=dp_mesh, reshard_after_forward=reshard, mp_policy=mp)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)

    def cross_entropy(logits, labels):  # torchtitan's loss: fp32 logits, mean over tokens
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))

    if a.compile and a.tp == 1:  # torchtitan compiles the loss too; not under loss parallel here
        cross_entropy = torch.compile(cross_entropy)

    def forward(module, tokens):  # the root's forward, so FSDP's root hooks run
        base = module.model
        h = base.embed_tokens(tokens)
        positions = torch.arange(a.seq, device=tokens.device).unsqueeze(0)
        rotary = base.rotary_emb(h if not hasattr(h, "to_local") else h.to_local(), positions)
        for block in base.layers:
            out = block(h, attention_mask=None, position_ids=positions, position_embeddings=rotary)
            h = out[0] if isinstance(out, tuple) else out
        return module.lm_head(base.norm(h))

    model.forward = lambda tokens: forward(model, tokens)

    tokens = torch.randint(0, hf.vocab_size, (a.mbs, a.seq), device="cuda")
    labels = torch.roll(tokens, -1, dims=1)
    torch.cuda.synchronize()
    setup_gib = torch.cuda.memory_allocated() / GIB
    torch.cuda.empty_cache()  # the build's transients are not the run's
    torch.cuda.reset_peak_memory_stats()
    steps = []
    for _ in range(a.steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        if a.tp > 1:
            with loss_parallel():
                loss = cross_entropy(model(tokens), labels)
                loss.backward()
        else:
            loss = cross_entropy(model(tokens), labels)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        steps.append({"seconds": start.elapsed_time(end) / 1e3,
                      "allocated_gib": torch.cuda.max_memory_allocated() / GIB,
                      "reserved_gib": torch.cuda.max_memory_reserved() / GIB})
    conf["setup_allocated_gib"] = round(setup_gib, 3)
    conf["experts_implementation"] = getattr(hf, "_experts_implementation", None)
    conf["versions"] = "torch {}, transformers {}".format(torch.__version__, __import__("transformers").__version__)
    dist.destroy_process_group()
    return conf, config_dict, steps, torch.cuda.get_device_properties(0).total_memory / GIB


def record(a, conf, config_dict, steps, capacity_gib):
    """The case's record (case_writer.case_text reads it): the peak over the steps (the first step
    allocates the optimizer states). The median step time after the first step goes to the notes
    only: with collectives skipped it is compute alone, and run_all runs several probes on the GPU
    at once, so it is no throughput to judge an estimate by."""
    later = sorted(s["seconds"] for s in steps[1:]) or [steps[0]["seconds"]]
    step_s = later[len(later) // 2]
    dp = conf["world"] // conf["tp"]
    command = " ".join(shlex.quote(x) for x in ["python3", "tools/probe/probe.py"] + a.argv)
    reserved = max(s["reserved_gib"] for s in steps)
    extra = ""
    if conf.get("versions"):
        extra = " {}; experts {}; {:.3f} GiB allocated after setup.".format(
            conf["versions"], conf.get("experts_implementation") or "default", conf.get("setup_allocated_gib", 0.0))
    return {
        "id": a.id or "probe-{}-L{}-n{}".format(conf["model"], conf["layers"], conf["world"]),
        "configuration": conf, "config": config_dict, "capacity_gib": round(capacity_gib, 2),
        "allocated_gib": round(max(s["allocated_gib"] for s in steps), 3),
        "step_time_s": None,
        "tokens_per_sec": None,
        "notes": ("Measured by tools/probe {} on one H200 with the fake process group (rank 0 of {}; "
                  "collectives skipped). {} of {} layers, dp {} ({} replicas of {}). Peak reserved {:.3f} GiB. "
                  "Median step {:.4f} s (compute only, GPU possibly shared with another probe run: not a "
                  "throughput).{} Command: {}").format(
                      case_writer.PROBE_VERSION, conf["world"], conf["layers"], config_dict["num_hidden_layers"],
                      dp, dp // conf["shard_group"], conf["shard_group"], reserved, step_s, extra, command),
    }


def main(argv):
    a = parse_args(argv)
    conf, config_dict, steps, capacity = run(a)
    case_writer.append_case(a.out, record(a, conf, config_dict, steps, capacity))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
