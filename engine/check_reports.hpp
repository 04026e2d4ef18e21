// What `meshfit check` writes: the summary (one line per entry, then the totals), the versioned
// JSON report of cli.md, JUnit XML for CI test reporters, and GitHub Actions annotations.
// All of them are deterministic: timings go to stderr only, never into these.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "engine/check_runner.hpp"

namespace meshfit {

void write_check_summary(const std::vector<CheckResult>& results, std::ostream& out);
void write_check_json(const std::vector<CheckResult>& results, std::ostream& out);
// One <testcase> per entry in one <testsuite>; a fail is a <failure>, an error an <error>.
void write_check_junit(const std::vector<CheckResult>& results, std::ostream& out);
// "::error file=F,line=N,title=T::message" per failed or invalid entry (workflow commands).
void write_github_annotations(const std::vector<CheckResult>& results, std::ostream& out);

}  // namespace meshfit
