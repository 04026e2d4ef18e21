#include "estimators/strategy.hpp"

namespace meshfit {

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::none: return "none";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved_1f1b: return "interleaved_1f1b";
    case Schedule::gpipe: return "gpipe";
    case Schedule::zb_h1: return "zb_h1";
    case Schedule::dualpipev: return "dualpipev";
  }
  return "?";
}

const char* to_string(CpAlgo a) {
  switch (a) {
    case CpAlgo::none: return "none";
    case CpAlgo::ring: return "ring";
    case CpAlgo::ulysses: return "ulysses";
    case CpAlgo::hybrid: return "hybrid";
    case CpAlgo::allgather: return "allgather";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

const char* to_string(Offload o) {
  switch (o) {
    case Offload::none: return "none";
    case Offload::optimizer: return "optimizer";
    case Offload::params: return "params";
  }
  return "?";
}

}  // namespace meshfit
