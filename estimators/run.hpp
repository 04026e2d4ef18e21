// The run: batch, precision, optimizer and the framework whose defaults apply
// (shared/spec/memory-model.md §2.3, §2.4, §2.6; symbols.md §3, §5).
#pragma once

#include <cstdint>
#include <string>

namespace meshfit {

enum class Framework : std::uint8_t { megatron, torchtitan, deepspeed };
enum class Rules : std::uint8_t { standard, sapp_nd };  // --rules default|sapp-nd
enum class Optimizer : std::uint8_t { adamw, sgd_momentum, muon, adafactor };
enum class ReshardAfterForward : std::uint8_t { on, off, automatic };

// Bytes per element of each model-state tensor (§2.3).
struct Precision {
  std::string preset;    // name of the preset the fields came from
  double beta_P = 2;       // persistent parameters
  double beta_G = 4;       // gradients as accumulated
  double beta_master = 4;  // fp32 master copy, sharded like optimizer state
  double beta_state = 4;   // one optimizer-state element
  double beta_gather = 2;  // a parameter as ZeRO-3/FSDP all-gathers it
  double beta_red = 4;     // an unsharded gradient element at its reduce-scatter
  double beta_gcomm = 4;   // a gradient element as the reduction moves it (time model)
};

// Defaults a framework imposes (§2.6); any of them can be overridden by an explicit run field.
struct FrameworkProfile {
  Framework framework = Framework::megatron;
  std::string precision_preset = "megatron_bf16";
  std::int64_t vocab_pad_multiple = 128;  // q_V
  ReshardAfterForward reshard_after_forward = ReshardAfterForward::on;
  double grad_bucket_elements = 0;        // ZeRO 0/1 reduce buckets, elements (× β_G)
  double allgather_bucket_elements = 0;   // ZeRO 1/2 all-gather buckets, elements (× β_P)
  std::string expert_rule = "megatron";   // search-and-time.md §2.4
  double eta_fw = 1.0;                    // kernel-efficiency scale of the time model
};

struct Run {
  std::int64_t seq = 0;            // s
  std::int64_t global_batch = 0;   // gb, sequences per optimizer step
  std::int64_t micro_batch = 0;    // b; 0 = free (the search chooses)
  FrameworkProfile profile;
  Precision precision;
  Optimizer optimizer = Optimizer::adamw;
  Rules rules = Rules::standard;
  bool flash_attention = true;

  // Optimizer states per body parameter and per table parameter (§2.3).
  double optimizer_states() const;
  double optimizer_states_table() const;
  double beta_opt() const { return optimizer_states() * precision.beta_state + precision.beta_master; }
  double beta_opt_table() const {
    return optimizer_states_table() * precision.beta_state + precision.beta_master;
  }
};

const char* to_string(Framework f);
const char* to_string(Optimizer o);
const char* to_string(Rules r);

}  // namespace meshfit
