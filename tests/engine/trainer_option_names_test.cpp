// Every option an export writes is a real option of the trainer version it names: the names are
// read from that version's source (tests/data/trainer-options/*.txt, each with its repository,
// file and commit), so a key meshfit invents, or one the trainer renamed, fails here.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using meshfit::test::data_path;
using meshfit::test::run;

namespace {

std::set<std::string> names_in(const std::vector<std::string>& files) {
  std::set<std::string> out;
  for (const auto& f : files) {
    std::ifstream in(data_path("trainer-options/" + f));
    REQUIRE_MESSAGE(in.good(), f);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] != '#') out.insert(line);
    }
  }
  return out;
}

// The flags of a Megatron argument list: each line's first word that starts with "--".
std::vector<std::string> megatron_flags(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word.rfind("--", 0) == 0) out.push_back(word);
  }
  return out;
}

// A TOML's keys as section.key.
std::vector<std::string> toml_keys(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
    } else if (const auto eq = line.find(" = "); eq != std::string::npos) {
      out.push_back(section + "." + line.substr(0, eq));
    }
  }
  return out;
}

// A JSON's keys as parent.child (meshfit's own notes, "meshfit_*", left out).
void json_keys(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (key.rfind("meshfit_", 0) == 0) continue;
    out.push_back(prefix + key);
    if (kv.second.IsMap()) json_keys(kv.second, prefix + key + ".", out);
  }
}

std::string exported(const std::vector<std::string>& args) {
  const auto r = run(args);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  return r.out;
}

std::vector<std::string> export_args(const std::string& model, const std::string& devices, const std::string& to,
                                     const std::string& strategy, const std::string& framework = "megatron") {
  return {"export",         "--model", model,  "--device", "h100-80gb",  "--devices", devices,       "--seq",  "8192",
          "--global-batch", "512",     "--to", to,         "--strategy", strategy,    "--framework", framework};
}

}  // namespace

TEST_CASE("Megatron-LM exports use only flags of Megatron-LM's arguments.py") {
  const std::set<std::string> known = names_in({"megatron-arguments.txt", "megatron-arguments-derived.txt"});
  for (const auto& args :
       {export_args("llama-3.1-70b", "64", "megatron",
                    "tp=4,sp=true,pp=4,vpp=2,cp=2,cp_algo=ring,zero=1,recompute=full,recompute_layers=4,mbs=1"),
        export_args("mixtral-8x7b", "64", "megatron",
                    "tp=2,sp=true,cp=4,cp_algo=hybrid,cp_u=2,ep=8,etp=1,zero=1,shard_group=4,mbs=2"),
        export_args("deepseek-v3", "1024", "megatron", "tp=2,sp=true,pp=16,cp=2,ep=8,zero=1,mbs=1"),
        export_args("llama-3.1-8b", "16", "megatron", "tp=2,sp=true,zero=3,recompute=selective,mbs=1"),
        export_args("llama-3.1-8b", "16", "megatron", "tp=2,sp=true,pp=2,cp=2,cp_algo=ulysses,zero=1,mbs=1")}) {
    const std::string text = exported(args);
    for (const auto& flag : megatron_flags(text)) CHECK_MESSAGE(known.count(flag) == 1, flag);
  }
}

TEST_CASE("torchtitan exports use only keys of torchtitan's job config") {
  const std::set<std::string> known = names_in({"torchtitan-job-config.txt"});
  for (const auto& args :
       {export_args("llama-3.1-8b", "16", "torchtitan",
                    "tp=2,sp=true,pp=2,vpp=2,zero=3,shard_group=2,recompute=selective,mbs=1", "torchtitan"),
        export_args("llama-3.1-8b", "16", "torchtitan", "zero=2,recompute=full,mbs=1", "torchtitan"),
        export_args("mixtral-8x7b", "64", "torchtitan", "tp=2,sp=true,cp=2,cp_algo=ring,ep=4,zero=3,mbs=1",
                    "torchtitan")}) {
    const std::string text = exported(args);
    const auto keys = toml_keys(text);
    CHECK(keys.size() > 8);
    for (const auto& key : keys) CHECK_MESSAGE(known.count(key) == 1, key);
  }
}

TEST_CASE("DeepSpeed exports use only keys of DeepSpeed's config") {
  const std::set<std::string> known = names_in({"deepspeed-config-keys.txt"});
  for (const auto& args : {export_args("llama-3.1-8b", "8", "deepspeed", "zero=3,shard_group=4,recompute=full,mbs=2"),
                           export_args("llama-3.1-8b", "16", "deepspeed", "tp=2,zero=2,mbs=1"),
                           export_args("llama-3.1-8b", "16", "deepspeed", "cp=2,cp_algo=ulysses,zero=3,mbs=1")}) {
    std::vector<std::string> keys;
    json_keys(YAML::Load(exported(args)), "", keys);
    CHECK(keys.size() > 4);
    for (const auto& key : keys) CHECK_MESSAGE(known.count(key) == 1, key);
  }
}
