#include "engine/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/input_error.hpp"

namespace meshfit {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& flag, const std::string& what, const std::string& path, int why) {
  throw InputError("command line", flag, "cannot " + what + " " + quoted_text(path) + ": " + std::strerror(why));
}

// The file a path names once its symbolic links are followed (a dangling link names its
// target-to-be), so that a report written through a link replaces the target, not the link.
fs::path resolve_links(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {  // SYMLOOP_MAX-style bound on link chains
    std::error_code ec;
    if (!fs::is_symlink(p, ec)) return p;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) return p;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  return p;
}

void write_all(int fd, const std::string& content, const std::string& flag, const std::string& path) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int why = errno;
      ::close(fd);
      fail(flag, "write", path, why);
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag) {
  const fs::path target = resolve_links(fs::path(path));
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail(flag, "write", path, EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    // A FIFO or a device (/dev/stdout, a named pipe a CI step reads): written in place, since
    // it cannot be replaced by a rename.
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail(flag, "write", path, errno);
    write_all(fd, content, flag, path);
    if (::close(fd) != 0) fail(flag, "close", path, errno);
    return;
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) fail(flag, "write", path, errno);
  auto cleanup_fail = [&](const char* what) {
    const int why = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    fail(flag, what, path, why);
  };
  try {
    write_all(fd, content, flag, path);
  } catch (...) {
    ::unlink(tmpl.c_str());
    throw;
  }
  if (::fsync(fd) != 0) cleanup_fail("flush");
  // The mode a replaced file had, else what creating it would give (0666 less the umask):
  // mkstemp's 0600 would surprise a CI job reading the report as another user.
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0) cleanup_fail("set the mode of");
  if (::close(fd) != 0) {
    const int why = errno;
    ::unlink(tmpl.c_str());
    fail(flag, "close", path, why);
  }
  if (std::rename(tmpl.c_str(), target.c_str()) != 0) {
    const int why = errno;
    ::unlink(tmpl.c_str());
    fail(flag, "replace", path, why);
  }
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [flag_a, a] = outputs[i];
      const auto& [flag_b, b] = outputs[j];
      if (a.empty() || b.empty()) continue;
      std::error_code ec;
      const bool same = fs::weakly_canonical(resolve_links(a), ec) == fs::weakly_canonical(resolve_links(b), ec);
      if (same) {
        throw InputError("command line", flag_b,
                         "names the same file as " + flag_a + " (" + quoted_text(b) +
                             "); expected a file of its own for each report");
      }
    }
  }
}

}  // namespace meshfit
