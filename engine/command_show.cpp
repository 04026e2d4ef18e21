// `meshfit show --model M`: the resolved model, its layer kinds and its parameter count by part
// (docs/spec/memory-model.md §2.1, §4).
#include <utility>

#include "engine/cli_options.hpp"
#include "engine/input_error.hpp"
#include "engine/commands.hpp"
#include "engine/json_writer.hpp"
#include "engine/model_config.hpp"
#include "engine/text_format.hpp"
#include "estimators/parameter_counts.hpp"

namespace meshfit {

namespace {

std::string kind_name(const Model& m, FfnKind ffn) {
  return std::string(m.attention == AttentionKind::mla ? "mla" : "gqa") + (ffn == FfnKind::moe ? "_moe" : "_dense");
}

// Consecutive body layers of one kind, in model order: [("mla_dense", 3), ("mla_moe", 58)].
std::vector<std::pair<std::string, std::int64_t>> kind_runs(const Model& m) {
  std::vector<std::pair<std::string, std::int64_t>> runs;
  for (FfnKind ffn : m.layer_ffn) {
    const std::string k = kind_name(m, ffn);
    if (!runs.empty() && runs.back().first == k) {
      ++runs.back().second;
    } else {
      runs.emplace_back(k, 1);
    }
  }
  return runs;
}

// The parts of the parameter count, in report order.
std::vector<std::pair<std::string, std::int64_t>> parts(const ModelParams& p) {
  return {{"embedding", p.embedding},
          {"positions", p.positions},
          {"attention", p.attention},
          {"mlp", p.dense_ffn},
          {"routed_experts", p.routed_experts},
          {"shared_experts", p.shared_experts},
          {"router", p.router},
          {"norms", p.layer_norms + p.final_norm},
          {"output", p.output}};
}

void write_json(const Model& m, std::ostream& out) {
  const ModelParams p = model_params(m);
  JsonWriter j(out);
  j.begin_object().field("name", m.name).field("model_type", m.model_type);
  j.key("dims")
      .begin_object()
      .field("hidden", m.hidden)
      .field("layers", m.layers)
      .field("heads", m.heads)
      .field("kv_heads", m.kv_heads)
      .field("head_dim", m.head_dim)
      .field("vocab", m.vocab)
      .field("ffn", m.ffn)
      .field("gated", m.gated)
      .field("norm", m.norm == NormKind::rms ? "rms" : "ln")
      .field("qkv_bias", m.qkv_bias)
      .field("o_bias", m.o_bias)
      .field("mlp_bias", m.mlp_bias)
      .field("qk_norm", m.qk_norm)
      .field("tie_word_embeddings", m.tie)
      .field("position_embeddings", m.positions)
      .field("attention", m.attention == AttentionKind::mla ? "mla" : "gqa");
  if (m.attention == AttentionKind::mla) {
    j.field("q_lora_rank", m.q_lora_rank)
        .field("kv_lora_rank", m.kv_lora_rank)
        .field("qk_nope_head_dim", m.qk_nope_dim)
        .field("qk_rope_head_dim", m.qk_rope_dim)
        .field("v_head_dim", m.v_head_dim);
  }
  if (m.is_moe()) {
    j.field("experts", m.experts)
        .field("experts_per_token", m.top_k)
        .field("expert_ffn", m.expert_ffn)
        .field("shared_experts", m.shared_experts)
        .field("shared_expert_ffn", m.shared_expert_ffn)
        .field("router_bias", m.router_bias)
        .field("first_dense_layers", m.first_dense);
  }
  j.field("mtp_depths", m.mtp_depths);
  j.end_object();
  j.key("layer_kinds").begin_array();
  for (const auto& [kind, count] : kind_runs(m)) {
    j.begin_object().field("kind", kind).field("count", count).end_object();
  }
  j.end_array();
  j.key("parameters").begin_object();
  for (const auto& [name, value] : parts(p)) j.field(name, value);
  j.field("total", p.main_total());
  j.field("mtp", p.mtp)
      .field("total_with_mtp", p.total_with_mtp())
      .field("checkpoint_total", p.checkpoint_total())
      .field("activated", p.activated);
  j.end_object().end_object();
  out << '\n';
}

void write_table(const Model& m, std::ostream& out) {
  const ModelParams p = model_params(m);
  out << "model " << m.name << " (" << m.model_type << ")\n\n";
  TextTable dims(2);
  dims.row({"hidden size", std::to_string(m.hidden)});
  dims.row({"body layers", std::to_string(m.layers)});
  std::string heads = std::to_string(m.heads) + " query";
  if (m.attention == AttentionKind::gqa) {
    heads += ", " + std::to_string(m.kv_heads) + " key/value, head dim " + std::to_string(m.head_dim);
  }
  dims.row({"attention heads", heads});
  if (m.attention == AttentionKind::mla) {
    dims.row({"MLA", "q rank " + std::to_string(m.q_lora_rank) + ", kv rank " + std::to_string(m.kv_lora_rank) +
                         ", qk " + std::to_string(m.qk_nope_dim) + "+" + std::to_string(m.qk_rope_dim) + ", v " +
                         std::to_string(m.v_head_dim)});
  }
  if (m.ffn > 0) dims.row({"FFN width", std::to_string(m.ffn) + (m.gated ? " (gated)" : " (not gated)")});
  if (m.is_moe()) {
    std::string moe = std::to_string(m.experts) + " routed experts of width " + std::to_string(m.expert_ffn) +
                      ", top-" + std::to_string(m.top_k);
    if (m.shared_experts > 0) {
      moe += ", " + std::to_string(m.shared_experts) + " shared of width " + std::to_string(m.shared_expert_ffn);
    }
    dims.row({"experts", moe});
  }
  dims.row({"vocabulary", std::to_string(m.vocab) + (m.tie ? " (tied embeddings)" : " (untied)")});
  dims.row({"norm", m.norm == NormKind::rms ? "RMSNorm" : "LayerNorm"});
  std::string extras;
  auto add = [&](bool on, const char* what) {
    if (on) extras += (extras.empty() ? "" : ", ") + std::string(what);
  };
  add(m.qkv_bias, "qkv bias");
  add(m.o_bias, "output-projection bias");
  add(m.mlp_bias, "MLP bias");
  add(m.qk_norm, "QK-norm");
  add(m.router_bias, "router bias");
  add(m.positions > 0, "learned positions");
  if (m.rope_attention_factor != 1.0) {
    extras += (extras.empty() ? "" : ", ") + std::string("YaRN rotary (attention factor ") +
              fixed(m.rope_attention_factor, 3) + ")";
  }
  if (!extras.empty()) dims.row({"extras", extras});
  if (m.mtp_depths > 0) dims.row({"MTP depths", std::to_string(m.mtp_depths)});
  std::string kinds;
  for (const auto& [kind, count] : kind_runs(m)) {
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " x " + kind;
  }
  dims.row({"layer kinds", kinds});
  dims.print(out);

  out << "\nparameters\n";
  TextTable t;
  for (const auto& [name, value] : parts(p)) {
    if (value != 0) t.row({name, with_commas(value)});
  }
  t.row({"total", with_commas(p.main_total()), "(" + billions(p.main_total()) + ")"});
  if (p.mtp > 0) {
    t.row({"mtp", with_commas(p.mtp)});
    t.row({"total with MTP", with_commas(p.total_with_mtp())});
    t.row({"as the checkpoint stores it", with_commas(p.checkpoint_total())});
  }
  if (m.is_moe()) t.row({"activated per token", with_commas(p.activated), "(" + billions(p.activated) + ")"});
  t.print(out, "  ");
}

}  // namespace

int command_show(const std::vector<std::string>& args, std::ostream& out, std::ostream& /*err*/) {
  CommonFlags common;
  std::string model_spec;
  po::options_description desc(
      "Usage: meshfit show --model M [--format table|json]\n\n"
      "Prints the resolved model: dimensions, layer kinds and parameter counts by part.\n"
      "M is a preset name (see 'meshfit models'), a Hugging Face config.json, a meshfit model\n"
      "YAML, or a directory holding a config.json.\nOptions");
  desc.add_options()("model", po::value(&model_spec), "model preset or file");
  add_common_options(desc, common);
  if (!parse_or_help("show", args, desc, common, out)) return 0;
  const OutputFormat format = parse_format(common.format, {"table", "json"});
  if (model_spec.empty()) throw UsageError("meshfit show: --model is required\nTry 'meshfit show --help'.");
  const Model m = load_model(model_spec);
  if (format == OutputFormat::json) {
    write_json(m, out);
  } else {
    write_table(m, out);
  }
  return 0;
}

}  // namespace meshfit
