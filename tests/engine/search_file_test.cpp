// `meshfit search --search-file FILE.yaml` (search-and-time.md §1): pins per dimension (auto, a
// value or a list), policy switches, headroom, top and run options from a file; a flag given on
// the command line wins; every mistake names the file and the field, exit 2.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "test_support.hpp"

using meshfit::test::data_path;
using meshfit::test::run;

namespace {

const std::vector<std::string> kBase = {"search",    "--model",  "llama-3.1-8b", "--device", "h100-80gb",
                                        "--devices", "8",        "--seq",        "8192",     "--global-batch",
                                        "64",        "--format", "json"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> args = kBase;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The JSON without its "seconds" value (the one field that differs run to run).
std::string without_seconds(std::string json) {
  const std::string key = "\"seconds\":";
  const std::size_t at = json.find(key);
  if (at == std::string::npos) return json;
  const std::size_t end = json.find_first_not_of("0123456789.e+-", at + key.size());
  return json.erase(at, (end == std::string::npos ? json.size() : end) - at);
}

}  // namespace

TEST_CASE("a search file gives the same search as the flags it stands for") {
  const auto from_file = run(with({"--search-file", data_path("search/llama8b_pins.yaml")}));
  const auto from_flags = run(with({"--tp", "1,2", "--pp", "1", "--zero", "3", "--mbs", "1", "--policies",
                                    "tp_in_node=off", "--top", "3", "--headroom", "10%"}));
  REQUIRE(from_file.code == 0);
  REQUIRE(from_flags.code == 0);
  CHECK(without_seconds(from_file.out) == without_seconds(from_flags.out));
  // And it is not the unpinned search.
  CHECK(without_seconds(from_file.out) != without_seconds(run(kBase).out));
  CHECK(from_file.out.find("\"tp\":4") == std::string::npos);
  CHECK(from_file.out.find("\"zero_stage\":1") == std::string::npos);
}

TEST_CASE("a search file lists the offloads to search as --offload does") {
  const auto from_file = run(with({"--search-file", data_path("search/offload.yaml")}));
  const auto from_flags = run(with({"--offload", "none,params", "--zero", "3", "--pp", "1"}));
  REQUIRE(from_file.code == 0);
  CHECK(without_seconds(from_file.out) == without_seconds(from_flags.out));
  CHECK(from_file.out.find("\"offload\":\"params\"") != std::string::npos);
}

TEST_CASE("a flag on the command line wins over the search file") {
  const auto r = run(with({"--search-file", data_path("search/llama8b_pins.yaml"), "--tp", "2", "--top", "5"}));
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"tp\":1,") == std::string::npos);
  CHECK(r.out.find("\"tp\":2,") != std::string::npos);
  const auto flags = run(with({"--tp", "2", "--pp", "1", "--zero", "3", "--mbs", "1", "--policies", "tp_in_node=off",
                               "--top", "5", "--headroom", "10%"}));
  CHECK(without_seconds(r.out) == without_seconds(flags.out));
}

TEST_CASE("run options in a search file act as --run-options does") {
  const auto from_file = run(with({"--search-file", data_path("search/run_options.yaml")}));
  const auto from_flags = run(with({"--tp", "1", "--pp", "1", "--zero", "3", "--mbs", "1", "--run-options",
                                    data_path("search/pad4096_run_options.yaml")}));
  const auto default_pad = run(with({"--tp", "1", "--pp", "1", "--zero", "3", "--mbs", "1"}));
  REQUIRE(from_file.code == 0);
  CHECK(without_seconds(from_file.out) == without_seconds(from_flags.out));
  CHECK(without_seconds(from_file.out) != without_seconds(default_pad.out));  // 128,256 pads to 131,072
}

TEST_CASE("a bad search file names the file and the field, exit 2") {
  struct Bad {
    const char* file;
    const char* field;
    const char* says;
  };
  for (const Bad& b :
       {Bad{"search/unknown_key.yaml", "tensor_parallel", "unknown field"},
        Bad{"search/bad_value.yaml", "recompute", "sometimes"}, Bad{"search/bad_offload.yaml", "offload", "disk"},
        Bad{"search/alias_twice.yaml", "zero_stage", "given twice"},
        Bad{"search/bad_run_option.yaml", "run_options.vocab_pad", "unknown field"},
        Bad{"search/missing.yaml", "missing.yaml", ""}}) {
    CAPTURE(b.file);
    const auto r = run(with({"--search-file", data_path(b.file)}));
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(b.file) != std::string::npos);
    CHECK(r.err.find(b.field) != std::string::npos);
    CHECK(r.err.find(b.says) != std::string::npos);
  }
}
