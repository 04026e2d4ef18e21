#include "estimators/run.hpp"

namespace meshfit {

// memory-model.md §2.3: AdamW keeps two moments; SGD with momentum one; Muon one on body layers
// and AdamW's two on the tables (SAPP-ND's derive rule); Adafactor's factored second moment is
// approximated as 0, with the optional first moment counted as one state.
double Run::optimizer_states() const {
  switch (optimizer) {
    case Optimizer::adamw: return 2;
    case Optimizer::sgd_momentum: return 1;
    case Optimizer::muon: return 1;
    case Optimizer::adafactor: return 1;
  }
  return 2;
}

double Run::optimizer_states_table() const { return optimizer == Optimizer::muon ? 2 : optimizer_states(); }

const char* to_string(Framework f) {
  switch (f) {
    case Framework::megatron: return "megatron";
    case Framework::torchtitan: return "torchtitan";
    case Framework::deepspeed: return "deepspeed";
  }
  return "?";
}

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adamw: return "adamw";
    case Optimizer::sgd_momentum: return "sgd_momentum";
    case Optimizer::muon: return "muon";
    case Optimizer::adafactor: return "adafactor";
  }
  return "?";
}

const char* to_string(Rules r) { return r == Rules::sapp_nd ? "sapp-nd" : "default"; }

}  // namespace meshfit
