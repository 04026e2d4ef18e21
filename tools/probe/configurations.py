"""The measurement plan: one entry per probe run, prepared before a GPU is at hand.

56 configurations over dense (Llama 3.1 8B/70B, Qwen3 8B), GQA, MoE (Qwen3-30B-A3B) and MLA
(DeepSeek-V2-Lite) models, TP 1-8 with and without SP, FSDP shard groups 8-256 with resharding on
and off, recompute none / full / per-op SAC, torch.compile on and off, micro-batch sizes 1-4 and
sequences of 2k-32k. Big models are cut to a few layers (the case records the layers run).
"""

import itertools

CONFIG_DIR = "tools/probe/configs"


def _entry(model, layers, world, shard_group, tp, sp, reshard, recompute, compile_, mbs, seq):
    return {"model": model, "layers": layers, "world": world, "shard_group": shard_group, "tp": tp, "sp": sp,
            "reshard": reshard, "recompute": recompute, "compile": compile_, "mbs": mbs, "seq": seq}


def _families():
    """The plan's families, each a list in its own order."""
    fam = {}
    # Llama 3.1 8B, 8 layers, eager: recompute x sequence x FSDP group (8, 64, 256).
    fam["dense"] = [_entry("llama-3.1-8b", 8, g, g, 1, False, True, r, False, 1, s)
                    for r, s, g in itertools.product(["none", "full", "sac"], [8192, 4096], [8, 64, 256])]
    # Llama 3.1 8B: TP 2/4/8 with and without SP, HSDP (shard group below dp), micro-batch 2.
    fam["tp"] = [_entry("llama-3.1-8b", 8, 64, 64 // tp, tp, sp, True, "sac", False, 2, 8192)
                 for tp, sp in itertools.product([2, 4, 8], [True, False])]
    # Llama 3.1 70B, 4 layers, TP 8 + SP: long sequences, reshard off, shard groups up to 256.
    fam["70b"] = [_entry("llama-3.1-70b", 4, g, g // 8, 8, True, rs, "full", False, 1, s)
                  for s, rs, g in itertools.product([8192, 32768], [True, False], [64, 256])]
    # Qwen3-30B-A3B (MoE), 4 layers: every expert on the rank (no EP), FSDP over 8 and 32.
    fam["moe"] = [_entry("qwen3-30b-a3b", 4, g, g, 1, False, True, r, False, 1, 4096)
                  for g, r in itertools.product([8, 32], ["none", "full", "sac"])]
    # DeepSeek-V2-Lite (MLA + MoE with shared experts), 4 layers, eager and compiled.
    fam["mla"] = [_entry("deepseek-v2-lite", 4, 16, 16, 1, False, True, r, c, 1, 4096)
                  for c, r in itertools.product([False, True], ["none", "full", "sac"])]
    # Llama 3.1 8B compiled (blocks and loss): recompute x FSDP group.
    fam["compiled"] = [_entry("llama-3.1-8b", 8, g, g, 1, False, True, r, True, 1, 8192)
                       for r, g in itertools.product(["none", "full", "sac"], [8, 256])]
    # Qwen3 8B compiled: micro-batch sizes 1-4 at 2k sequences.
    fam["qwen3"] = [_entry("qwen3-8b", 6, 16, 16, 1, False, True, r, True, m, 2048)
                    for m, r in itertools.product([1, 2, 4], ["none", "sac"])]
    return fam


def plan():
    """The families interleaved, one of each in turn, so that a run cut short by its time budget
    still covers every family."""
    fam = _families()
    out = []
    for i in range(max(len(v) for v in fam.values())):
        for v in fam.values():
            if i < len(v):
                out.append(dict(v[i]))
    for i, e in enumerate(out):
        e["id"] = "probe-{:02d}-{}-L{}-n{}-g{}-tp{}{}-{}{}{}-b{}-s{}".format(
            i, e["model"], e["layers"], e["world"], e["shard_group"], e["tp"], "sp" if e["sp"] else "",
            e["recompute"], "-compiled" if e["compile"] else "", "" if e["reshard"] else "-noreshard",
            e["mbs"], e["seq"])
    return out


def command(entry, out_path):
    """The probe's command line for one entry (recorded in the case's notes)."""
    args = ["python3", "tools/probe/probe.py", "--config", f"{CONFIG_DIR}/{entry['model']}.json",
            "--id", entry["id"], "--layers", str(entry["layers"]), "--world", str(entry["world"]),
            "--shard-group", str(entry["shard_group"]), "--tp", str(entry["tp"]),
            "--recompute", entry["recompute"], "--mbs", str(entry["mbs"]), "--seq", str(entry["seq"]),
            "--steps", "3", "--out", out_path]
    if entry["sp"]:
        args.append("--sp")
    if not entry["reshard"]:
        args.append("--no-reshard")
    if entry["compile"]:
        args.append("--compile")
    return args
