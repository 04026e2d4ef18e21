"""A probe run as a case of the validation schema (data/validation/README.md).

Plain YAML written by hand, so that writing a case needs no third-party module: the keys and their
order are the schema's, every sub-key present (null when unknown), strings always quoted.
"""

import json

PROBE_VERSION = "0.2.0"
DEVICE_NAME = "H200-141GB"

# Hugging Face config fields the schema's `model` block carries, by kind of model.
_MODEL_KEYS = ["model_type", "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
               "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings"]
_MOE_KEYS = ["num_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
             "first_k_dense_replace"]
_MLA_KEYS = ["q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]


def _scalar(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))  # a JSON string is a valid double-quoted YAML scalar


def _block(name, fields, indent="  "):
    lines = [f"{indent}{name}:"]
    for k, v in fields:
        lines.append(f"{indent}  {k}: {_scalar(v)}")
    return lines


def routed_experts(config):
    """The routed expert count of a config.json dict (Qwen's num_experts, DeepSeek's
    n_routed_experts), or None for a dense model."""
    return config.get("num_experts", config.get("n_routed_experts"))


def model_fields(config, layers):
    """The schema's model block from a config.json dict, with the layer count actually run."""
    cfg = dict(config)
    cfg["num_hidden_layers"] = layers
    moe_experts = routed_experts(cfg)
    mla = cfg.get("kv_lora_rank") is not None
    fields = []
    for k in _MODEL_KEYS:
        v = cfg.get(k)
        if k == "num_key_value_heads" and mla:
            v = None  # does not apply to MLA
        if k == "head_dim" and v is None and not mla:
            v = cfg["hidden_size"] // cfg["num_attention_heads"]
        if k == "intermediate_size" and cfg.get("model_type") == "qwen3_moe" and not cfg.get("mlp_only_layers"):
            v = None  # every layer is MoE
        fields.append((k, v))
    if moe_experts:
        fields += [("num_experts", moe_experts), ("num_experts_per_tok", cfg.get("num_experts_per_tok")),
                   ("moe_intermediate_size", cfg.get("moe_intermediate_size")),
                   ("n_shared_experts", cfg.get("n_shared_experts", 0) or 0),
                   ("first_k_dense_replace", min(cfg.get("first_k_dense_replace", 0) or 0, layers))]
    if mla:
        fields += [(k, cfg.get(k)) for k in _MLA_KEYS]
    return fields


def other_text(c):
    """The features the schema has no field for, in words `meshfit validate` reads: probe.py
    compiles the loss with the blocks (torchtitan's compile.components model + loss) except under
    TP, where the loss runs in loss parallel eagerly."""
    parts = ["fake process group: collectives skipped"]
    if c["compile"]:
        parts.append("torch.compile on the blocks and on the loss" if c["tp"] == 1 else
                     "torch.compile on the blocks; the loss eager in loss parallel")
    elif c["tp"] > 1:
        parts.append("loss parallel")
    return "; ".join(parts)


def case_text(run):
    """One case (a YAML list item) from a probe run's record: see probe.py's `record`."""
    c = run["configuration"]
    world, tp = c["world"], c["tp"]
    dp = world // tp
    lines = [f"- id: {_scalar(run['id'])}",
             f"  source: {_scalar('tools/probe ' + PROBE_VERSION + ', one rank of ' + str(world) + ' on one GPU (fake process group)')}",
             "  framework: \"pytorch-probe\""]
    lines += _block("model", model_fields(run["config"], c["layers"]))
    lines += _block("run", [("seq_len", c["seq"]), ("micro_batch_size", c["mbs"]), ("num_microbatches", 1),
                            ("global_batch_size", c["mbs"] * dp)])
    lines += _block("strategy", [("world_size", world), ("dp", dp), ("tp", tp), ("sp", bool(c["sp"]) and tp > 1),
                                 ("pp", 1), ("vpp", 1), ("pp_schedule", None), ("cp", 1), ("cp_algo", None),
                                 ("ep", 1), ("etp", 1), ("zero_stage", 3), ("shard_group", c["shard_group"]),
                                 ("reshard_after_forward", bool(c["reshard"]))])
    detail = {"none": None, "full": "full activation checkpointing (every transformer block)",
              "sac": "torchtitan-style per-op SAC (matmul outputs every other, attention outputs)"}[c["recompute"]]
    lines += _block("recompute", [("mode", {"none": "none", "full": "full", "sac": "selective"}[c["recompute"]]),
                                  ("detail", detail), ("layers", None)])
    lines += _block("precision", [("compute", "bf16"), ("param_bytes", 2), ("master_weight_bytes", 4), ("grad_bytes", 4),
                                  ("optimizer", "adamw"), ("optimizer_state_bytes", 8)])
    lines += _block("features", [("flash_attention", True), ("torch_compile", bool(c["compile"])), ("fp8", False),
                                 ("chunked_loss", False), ("other", other_text(c))])
    lines += _block("device", [("name", DEVICE_NAME), ("capacity_gib", run.get("capacity_gib"))])
    lines += _block("measured", [("value_gib", run["allocated_gib"]), ("metric", "allocated"),
                                 ("scope", "rank 0 (every rank holds the same shapes)"), ("confidence", "high"),
                                 ("tokens_per_sec_per_device", run.get("tokens_per_sec")), ("mfu", None),
                                 ("tflops_per_device", None), ("step_time_s", run.get("step_time_s"))])
    lines.append(f"  notes: {_scalar(run['notes'])}")
    return "\n".join(lines) + "\n"


def append_case(path, run):
    with open(path, "a", encoding="utf-8") as f:
        f.write(case_text(run))
