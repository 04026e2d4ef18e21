"""The measurement plan: one entry per probe run, prepared before a GPU is at hand.

68 configurations over dense (Llama 3.1 8B/70B, Qwen3 8B), GQA, MoE (Qwen3-30B-A3B) and MLA
(DeepSeek-V2-Lite) models, TP 1-8 with and without SP, FSDP shard groups 8-256 with resharding on
and off, recompute none / full / per-op SAC, torch.compile on and off, micro-batch sizes 1-4 and
sequences of 2k-32k. Big models are cut to a few layers (the case records the layers run).
"""

import itertools

CONFIG_DIR = "tools/probe/configs"


def _entry(model, layers, world, shard_group, tp, sp, reshard, recompute, compile_, mbs, seq):
    return {"model": model, "layers": layers, "world": world, "shard_group": shard_group, "tp": tp, "sp": sp,
            "reshard": reshard, "recompute": recompute, "compile": compile_, "mbs": mbs, "seq": seq}


def plan():
    out = []
    # Llama 3.1 8B, 8 layers: recompute x compile x sequence, FSDP over 8, 64 and 256.
    for recompute, compile_, seq, group in itertools.product(["none", "full", "sac"], [False, True], [4096, 8192],
                                                             [8, 64, 256]):
        out.append(_entry("llama-3.1-8b", 8, group, group, 1, False, True, recompute, compile_, 1, seq))
    # Llama 3.1 8B: TP 2/4/8 with and without SP, HSDP (shard group below dp), micro-batch 2.
    for tp, sp in itertools.product([2, 4, 8], [False, True]):
        out.append(_entry("llama-3.1-8b", 8, 64, 64 // tp, tp, sp, True, "sac", False, 2, 8192))
    # Llama 3.1 70B, 4 layers: long sequences, reshard off, shard groups up to 256.
    for seq, reshard, group in itertools.product([8192, 32768], [True, False], [64, 256]):
        out.append(_entry("llama-3.1-70b", 4, group, group // 8, 8, True, reshard, "full", False, 1, seq))
    # Qwen3 8B: micro-batch sizes and 2k sequences.
    for mbs, recompute in itertools.product([1, 2, 4], ["none", "sac"]):
        out.append(_entry("qwen3-8b", 6, 16, 16, 1, False, True, recompute, True, mbs, 2048))
    # Qwen3-30B-A3B (MoE), 4 layers: every expert on the rank (no EP), FSDP over 8-32.
    for group, recompute, seq in itertools.product([8, 32], ["none", "full", "sac"], [4096]):
        out.append(_entry("qwen3-30b-a3b", 4, group, group, 1, False, True, recompute, False, 1, seq))
    # DeepSeek-V2-Lite (MLA + MoE with shared experts), 4 layers.
    for recompute, compile_ in itertools.product(["none", "full", "sac"], [False, True]):
        out.append(_entry("deepseek-v2-lite", 4, 16, 16, 1, False, True, recompute, compile_, 1, 4096))
    for i, e in enumerate(out):
        e["id"] = "probe-{:02d}-{}-L{}-n{}-g{}-tp{}{}-{}{}-b{}-s{}".format(
            i, e["model"], e["layers"], e["world"], e["shard_group"], e["tp"], "sp" if e["sp"] else "",
            e["recompute"], "-compiled" if e["compile"] else "", e["mbs"], e["seq"])
    return out


def command(entry, out_path):
    """The probe's command line for one entry (recorded in the case's notes)."""
    args = ["python3", "tools/probe/probe.py", "--config", f"{CONFIG_DIR}/{entry['model']}.json",
            "--id", entry["id"], "--layers", str(entry["layers"]), "--world", str(entry["world"]),
            "--shard-group", str(entry["shard_group"]), "--tp", str(entry["tp"]),
            "--recompute", entry["recompute"], "--mbs", str(entry["mbs"]), "--seq", str(entry["seq"]),
            "--steps", "4", "--out", out_path]
    if entry["sp"]:
        args.append("--sp")
    if not entry["reshard"]:
        args.append("--no-reshard")
    if entry["compile"]:
        args.append("--compile")
    return args
