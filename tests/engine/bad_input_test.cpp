// Inputs that crashed, hung, overflowed or gave an unclear error (issue 18): each is exit 2 with a
// message naming the file (or flag), the field and what was expected.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using meshfit::test::data_path;
using meshfit::test::run;

namespace {

const std::vector<std::string> kSearch = {"search",    "--model", "llama-3.1-8b", "--device", "h100-80gb",
                                          "--devices", "8",       "--seq",        "4096",     "--global-batch",
                                          "8"};
const std::vector<std::string> kEstimate = {"estimate",  "--model", "llama-3.1-8b", "--device", "h100-80gb",
                                            "--devices", "8",       "--seq",        "4096",     "--global-batch",
                                            "8"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

// Exit 2, nothing on stdout, and every fragment in the message.
void expect_input_error(const std::vector<std::string>& args, const std::vector<std::string>& fragments) {
  const auto r = run(args);
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  for (const auto& f : fragments) CHECK_MESSAGE(r.err.find(f) != std::string::npos, "missing: " << f);
}

std::string temp_dir() {
  std::string t = (std::filesystem::temp_directory_path() / "meshfit-bad-XXXXXX").string();
  REQUIRE(::mkdtemp(t.data()) != nullptr);
  return t;
}

}  // namespace

TEST_CASE("numeric flags have checked ranges (--top 0 segfaulted)") {
  expect_input_error(with(kSearch, {"--top", "0"}), {"field '--top': expected a number from 1 to 10000, got 0"});
  // A size_t flag took -1 as 2^64 - 1.
  expect_input_error(with(kSearch, {"--top", "-1"}), {"field '--top'", "got -1"});
  expect_input_error(with(kSearch, {"--threads", "-1"}), {"field '--threads': expected a number from 0 to 1024"});
  // A count in a --devices list was bounded only when given alone.
  expect_input_error({"search", "--model", "llama-3.1-8b", "--device", "h100-80gb", "--devices", "8,99999999999",
                      "--seq", "4096", "--global-batch", "8"},
                     {"field '--devices': expected a positive count up to 16777216"});
  expect_input_error({"check", "x.json", "--device", "h100-80gb", "--devices", "8", "--seq", "8", "--global-batch", "8",
                      "--max-peak-gib", "nan"},
                     {"field '--max-peak-gib'"});
}

TEST_CASE("a train YAML of the wrong shape names its field (operator[] on a scalar was exit 3)") {
  for (const auto& [file, field] : std::vector<std::pair<std::string, std::string>>{
           {"train-parallel-scalar.yaml", "field 'parallel': expected a map of fields, got '5'"},
           {"train-model-scalar.yaml", "field 'model': expected a map of fields, got '5'"},
           {"train-poc-scalar.yaml",
            "field 'parallel.parallel_optimizer_config': expected a map of fields, got '5'"}}) {
    const std::string path = data_path("bad-input/" + file);
    CAPTURE(path);  // (a structured binding cannot be captured before C++20 in clang 14)
    expect_input_error(with(kEstimate, {"--strategy", path}), {path, field});
  }
}

TEST_CASE("a complex key is an input error (? [a, b] in a search file was exit 3)") {
  const std::string path = data_path("bad-input/search-complex-key.yaml");
  expect_input_error(with(kSearch, {"--search-file", path}), {path + ":1: a key must be a plain value, got a list"});
}

TEST_CASE("strategy degrees near 2^63 are bounded (signed overflow under UBSan)") {
  const std::string big = "9223372036854775807";
  expect_input_error(with(kEstimate, {"--strategy", "mbs=" + big}),
                     {"--strategy: field 'micro_batch_size': expected a positive integer up to the global batch 8"});
  expect_input_error(with(kEstimate, {"--strategy", "m=" + big}),
                     {"--strategy: field 'num_microbatches': expected a positive integer up to the global batch 8"});
  expect_input_error(with(kEstimate, {"--strategy", "tp=8,pp=" + big}),
                     {"--strategy: field 'pp': expected a positive integer up to the 8 devices"});
  expect_input_error(with(kEstimate, {"--strategy", "tp=4,cp=4,pp=4"}), {"tp·cp·pp = 4·4·4 exceeds the 8 devices"});
  // dp·mbs above the global batch is refused before m multiplies it.
  expect_input_error(with(kEstimate, {"--strategy", "dp=8,mbs=2,m=1"}), {"dp·mbs = 16 exceeds the global batch 8"});
}

TEST_CASE("only regular files up to 8 MiB are read (/dev/zero and FIFOs hung)") {
  expect_input_error({"show", "--model", "/dev/zero"}, {"/dev/zero: cannot read file: it is a device"});
  expect_input_error({"search", "--model", "llama-3.1-8b", "--device", "/dev/zero", "--devices", "8", "--seq", "4096",
                      "--global-batch", "8"},
                     {"/dev/zero: cannot read file: it is a device"});
  const std::string dir = temp_dir();
  const std::string fifo = dir + "/config.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_input_error({"show", "--model", fifo}, {fifo + ": cannot read file: it is a FIFO"});
  const std::string big = dir + "/big.json";
  {
    std::ofstream f(big);
    f << "{\"name\": \"" << std::string((8u << 20) + 1, 'x') << "\"}";
  }
  expect_input_error({"show", "--model", big}, {big + ": cannot read file: larger than 8 MiB"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("a key given twice names both places (the first won; Hugging Face's reader takes the last)") {
  const std::string json = data_path("bad-input/duplicate-key.json");
  expect_input_error({"show", "--model", json},
                     {json + ":4: field 'hidden_size' given twice (at line 3, column 3 and line 4, column 3)"});
  const std::string yaml = data_path("bad-input/duplicate-key-search.yaml");
  expect_input_error(with(kSearch, {"--search-file", yaml}), {yaml + ":3: field 'tp' given twice (at line 1"});
}

TEST_CASE("deep nesting says so, and quoted values are cut to 80 characters") {
  const std::string deep = data_path("bad-input/deep.json");
  expect_input_error({"show", "--model", deep}, {"nested too deeply (more than 64 levels"});
  const std::string dir = temp_dir();
  const std::string text = dir + "/notes.json";
  {
    std::ofstream f(text);
    f << std::string(5000, 'y') << '\n';
  }
  const auto r = run({"show", "--model", text});
  CHECK(r.code == 2);
  // 80 characters of the value, then "...", between quotes: the message stays one short line.
  CHECK(r.err.find("got '" + std::string(80, 'y') + "...'") != std::string::npos);
  CHECK(r.err.size() < 300);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a manifest's own errors name the manifest and line (not '--device is required')") {
  const std::string typo = data_path("bad-input/manifest-typo.yaml");
  expect_input_error({"check", typo}, {typo + ":1: field 'entry': unknown key (did you mean entries?)"});
  const std::string empty = data_path("bad-input/manifest-empty.yaml");
  expect_input_error({"check", empty}, {empty + ": the manifest is empty"});
  // A model file alone is read as a manifest (no --device): the error says what FILES mode needs.
  const std::string model = data_path("models/custom-symbols.yaml");
  expect_input_error({"check", model}, {"this looks like a model file: checking model files takes --device"});
  const std::string syntax = data_path("bad-input/manifest-syntax.yaml");
  expect_input_error({"check", syntax}, {syntax + ":3:", "malformed JSON/YAML"});
}

TEST_CASE("an entry's errors name the entry's field, not the CLI flag") {
  const std::string path = data_path("bad-input/manifest-entry-fields.yaml");
  const auto r = run({"check", path});
  CAPTURE(r.out);
  CHECK(r.code == 2);
  CHECK(r.out.find(path + ": field 'entries[0].headroom': expected a percentage below 100%") != std::string::npos);
  CHECK(r.out.find(path + ": field 'entries[1].strategy.tp': expected a positive integer up to the 8 devices") !=
        std::string::npos);
  CHECK(r.out.find(path + ": field 'entries[2].seq': expected at most 16777216") != std::string::npos);
  CHECK(r.out.find(path + ": field 'entries[3].devices': expected a positive integer up to 16777216") !=
        std::string::npos);
  CHECK(r.out.find("--headroom") == std::string::npos);
  CHECK(r.out.find("--seq") == std::string::npos);
}
