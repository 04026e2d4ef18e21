// Text from inputs made safe for each output (engine/utf8_text.hpp), and report files written
// as a user expects of them: through symlinks, keeping their mode, never two into one (issue 18).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/atomic_file.hpp"
#include "engine/input_error.hpp"
#include "engine/utf8_text.hpp"
#include "test_support.hpp"

using meshfit::printable;
using meshfit::quoted_text;
using meshfit::valid_utf8;
using meshfit::test::data_path;
using meshfit::test::run;

namespace {

const std::string kFFFD = "\xEF\xBF\xBD";

// RFC 3629 well-formedness and no control character but tab, LF, CR: what JSON and XML accept.
bool clean_utf8(const std::string& s) {
  if (valid_utf8(s) != s) return false;
  for (const unsigned char c : s) {
    if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7F) return false;
  }
  return true;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

}  // namespace

TEST_CASE("valid_utf8 replaces each ill-formed byte (RFC 3629 §4)") {
  CHECK(valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(valid_utf8("a\xC0\xAF"
                   "b") == "a" + kFFFD + kFFFD + "b");                     // overlong '/'
  CHECK(valid_utf8("\xED\xA0\x80") == kFFFD + kFFFD + kFFFD);              // a surrogate, U+D800
  CHECK(valid_utf8("\xF4\x90\x80\x80") == kFFFD + kFFFD + kFFFD + kFFFD);  // past U+10FFFF
  CHECK(valid_utf8("x\xE2\x82") == "x" + kFFFD + kFFFD);                   // cut short
  CHECK(valid_utf8("\xEF\xBF\xBF") == kFFFD + kFFFD + kFFFD);              // U+FFFF, no XML character
}

TEST_CASE("printable escapes control characters; quoted_text cuts at 80 characters") {
  CHECK(printable("a\x1B[31mb\x07\n\tc") == "a\\x1B[31mb\\x07\n\tc");
  CHECK(printable("\x7F\xC2\x85") == "\\x7F\\x85");  // DEL and C1's NEL
  CHECK(quoted_text("tp") == "'tp'");
  CHECK(quoted_text(std::string(100, 'x')) == "'" + std::string(80, 'x') + "...'");
  // A cut never splits a character: 81 two-byte characters keep 80 whole ones.
  std::string e;
  for (int i = 0; i < 81; ++i) e += "\xC3\xA9";
  CHECK(quoted_text(e) == "'" + e.substr(0, 160) + "...'");
}

TEST_CASE("a model name with control bytes or invalid UTF-8 leaves every output valid") {
  for (const char* file : {"bad-input/control-name.json", "bad-input/invalid-utf8-name.yaml"}) {
    CAPTURE(file);
    const std::string model = data_path(file);
    const std::vector<std::string> base = {"search",    "--model", model,   "--device", "h100-80gb",
                                           "--devices", "8",       "--seq", "1024",     "--global-batch",
                                           "8",         "--top",   "2"};
    const auto table = run(base);
    CHECK(table.code == 0);
    CHECK(clean_utf8(table.out));
    auto json_args = base;
    json_args.insert(json_args.end(), {"--format", "json"});
    const auto json = run(json_args);
    CHECK(json.code == 0);
    CHECK(clean_utf8(json.out));
    const auto show = run({"show", "--model", model, "--format", "json"});
    CHECK(clean_utf8(show.out));
    // The chart parses as XML; neither it nor the report carries a control byte or bad UTF-8.
    const std::string svg = std::filesystem::temp_directory_path() / "meshfit-name.svg";
    const std::string html = std::filesystem::temp_directory_path() / "meshfit-name.html";
    auto chart_args = base;
    chart_args.insert(chart_args.end(), {"--plot", svg, "--report", html});
    CHECK(run(chart_args).code == 0);
    CHECK_FALSE(meshfit::test::xml_elements(slurp(svg)).empty());
    for (const auto& f : {svg, html}) {
      CHECK(clean_utf8(slurp(f)));
      std::filesystem::remove(f);
    }
  }
  // The JUnit report of a check over the same files parses as XML.
  const std::string dir = (std::filesystem::temp_directory_path() / "meshfit-names").string();
  std::filesystem::create_directories(dir);
  const auto check =
      run({"check", data_path("bad-input/control-name.json"), data_path("bad-input/invalid-utf8-name.yaml"), "--device",
           "h100-80gb", "--devices", "8", "--seq", "1024", "--global-batch", "8", "--junit", dir + "/j.xml"});
  CHECK(check.code == 0);
  CHECK(clean_utf8(check.out));
  const std::string xml = slurp(dir + "/j.xml");
  CHECK(clean_utf8(xml));
  CHECK_FALSE(meshfit::test::xml_elements(xml).empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("report files: through a symlink to its target, the mode kept, a device written in place") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "meshfit-reports";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string target = (dir / "report.json").string(), link = (dir / "latest.json").string();
  { std::ofstream(target) << "old"; }
  REQUIRE(::chmod(target.c_str(), 0640) == 0);
  fs::create_symlink("report.json", link);
  meshfit::write_file_atomically(link, "new", "--json");
  CHECK(fs::is_symlink(link));  // the link was not replaced by a file
  CHECK(slurp(target) == "new");
  struct stat st {};
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);
  // A dangling link creates its target.
  fs::create_symlink("later.json", dir / "next.json");
  meshfit::write_file_atomically((dir / "next.json").string(), "x", "--json");
  CHECK(slurp((dir / "later.json").string()) == "x");
  // /dev/null stays a device (as root, a rename over it replaced it with a regular file).
  meshfit::write_file_atomically("/dev/null", "discarded", "--json");
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  fs::remove_all(dir);
}

TEST_CASE("two reports into one file are refused") {
  CHECK_THROWS_WITH_AS(meshfit::check_distinct_outputs({{"--json", "out/r.xml"}, {"--junit", "out/./r.xml"}}),
                       doctest::Contains("field '--junit': names the same file as --json"), meshfit::InputError);
  CHECK_NOTHROW(meshfit::check_distinct_outputs({{"--json", "r.json"}, {"--junit", "r.xml"}, {"--plot", ""}}));
  const auto r = run({"check", "x.json", "--device", "h100-80gb", "--devices", "8", "--seq", "8", "--global-batch", "8",
                      "--json", "same.out", "--junit", "same.out"});
  CHECK(r.code == 2);
  CHECK(r.err.find("names the same file as --json") != std::string::npos);
}
