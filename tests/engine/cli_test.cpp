// The command line in-process: output, stderr and exit codes (shared/spec/cli.md).
#include <doctest/doctest.h>

#include "test_support.hpp"

using meshfit::test::data_path;
using meshfit::test::run;

TEST_CASE("--version and --help") {
  const auto v = run({"--version"});
  CHECK(v.code == 0);
  CHECK(v.out.rfind("meshfit ", 0) == 0);
  const auto h = run({"--help"});
  CHECK(h.code == 0);
  CHECK(h.out.find("show") != std::string::npos);
  for (const char* cmd : {"models", "devices", "show"}) {
    const auto r = run({cmd, "--help"});
    CHECK(r.code == 0);
    CHECK(r.out.find("Usage: meshfit") != std::string::npos);
  }
}

TEST_CASE("no subcommand, unknown subcommand, unknown flag: usage errors, exit 2") {
  CHECK(run({}).code == 2);
  const auto r = run({"shwo"});
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown subcommand 'shwo'") != std::string::npos);
  CHECK(r.err.find("did you mean show") != std::string::npos);
  const auto f = run({"show", "--model", "llama-3.1-8b", "--frmat", "json"});
  CHECK(f.code == 2);
  CHECK(f.err.find("frmat") != std::string::npos);
  const auto missing = run({"show"});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("--model is required") != std::string::npos);
  CHECK(run({"show", "--model", "llama-3.1-8b", "--format", "xml"}).code == 2);
}

TEST_CASE("models and devices list every preset of cli.md") {
  const auto m = run({"models"});
  CHECK(m.code == 0);
  for (const char* name : {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mixtral-8x7b",
                           "qwen3-32b", "qwen3-30b-a3b", "deepseek-v3", "gpt3-175b"}) {
    CHECK(m.out.find(name) != std::string::npos);
  }
  const auto d = run({"devices", "--format", "json"});
  CHECK(d.code == 0);
  CHECK(d.out.find("\"name\":\"h100-80gb\",\"capacity_bytes\":85520809984,") != std::string::npos);
}

TEST_CASE("show prints the published parameter counts") {
  const auto r = run({"show", "--model", "llama-3.1-70b"});
  CHECK(r.code == 0);
  CHECK(r.out.find("70,553,706,496") != std::string::npos);
  const auto j = run({"show", "--model", "mixtral-8x7b", "--format", "json"});
  CHECK(j.code == 0);
  CHECK(j.out.find("\"total\":46702792704") != std::string::npos);
  CHECK(j.out.find("\"layer_kinds\":[{\"kind\":\"gqa_moe\",\"count\":32}]") != std::string::npos);
  const auto file = run({"show", "--model", data_path("models/gpt2.json")});
  CHECK(file.code == 0);
  CHECK(file.out.find("124,439,808") != std::string::npos);
}

TEST_CASE("bad input: message on stderr, nothing on stdout, exit 2") {
  for (const char* bad : {"bad/malformed.json", "bad/missing-field.json", "bad/zero-layers.json",
                          "bad/negative-hidden.json", "bad/fractional-ffn.json",
                          "bad/heads-not-dividing.json", "bad/unknown-type.json",
                          "bad/no-such-file.json"}) {
    CAPTURE(bad);
    const auto r = run({"show", "--model", data_path(bad)});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("meshfit show: error: ") == 0);
    CHECK(r.err.find(bad) != std::string::npos);
  }
  const auto preset = run({"show", "--model", "mixtral"});
  CHECK(preset.code == 2);
  CHECK(preset.err.find("did you mean mixtral-8x7b") != std::string::npos);
}
