// `meshfit models`: the bundled model presets.
#include "engine/cli_options.hpp"
#include "engine/commands.hpp"
#include "engine/json_writer.hpp"
#include "engine/model_config.hpp"
#include "engine/presets.hpp"
#include "engine/text_format.hpp"
#include "estimators/parameter_counts.hpp"

namespace meshfit {

int command_models(const std::vector<std::string>& args, std::ostream& out, std::ostream& /*err*/) {
  CommonFlags common;
  po::options_description desc(
      "Usage: meshfit models [--format table|json]\n\nLists the bundled model presets.\nOptions");
  add_common_options(desc, common);
  if (!parse_or_help("models", args, desc, common, out)) return 0;
  const OutputFormat format = parse_format(common.format, {"table", "json"});

  std::vector<Model> models;
  for (const auto& name : preset_names("models")) models.push_back(load_model(name));

  if (format == OutputFormat::json) {
    JsonWriter j(out);
    j.begin_object().key("models").begin_array();
    for (const auto& m : models) {
      const ModelParams p = model_params(m);
      j.begin_object()
          .field("name", m.name)
          .field("model_type", m.model_type)
          .field("layers", m.layers)
          .field("hidden", m.hidden)
          .field("parameters", p.main_total())
          .field("activated_parameters", p.activated)
          .end_object();
    }
    j.end_array().end_object();
    out << '\n';
    return 0;
  }
  TextTable t;
  t.row({"name", "type", "layers", "hidden", "heads", "kv", "experts", "parameters", "activated"});
  for (const auto& m : models) {
    const ModelParams p = model_params(m);
    t.row({m.name, m.model_type, std::to_string(m.layers), std::to_string(m.hidden), std::to_string(m.heads),
           std::to_string(m.kv_heads), m.experts ? std::to_string(m.top_k) + "/" + std::to_string(m.experts) : "-",
           billions(p.main_total()), billions(p.activated)});
  }
  t.print(out);
  return 0;
}

}  // namespace meshfit
