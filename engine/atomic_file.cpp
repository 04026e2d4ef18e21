#include "engine/atomic_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/input_error.hpp"

namespace meshfit {

void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw InputError("command line", flag, "cannot write '" + path + "': " + std::strerror(errno));
  auto fail = [&](const char* what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw InputError("command line", flag, std::string("cannot ") + what + " '" + path + "': " + why);
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("flush");
  (void)::fchmod(fd, 0644);  // mkstemp's 0600 would surprise a CI job reading the report as another user
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw InputError("command line", flag, "cannot close '" + path + "'");
  }
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmpl.c_str());
    throw InputError("command line", flag, "cannot replace '" + path + "': " + why);
  }
}

}  // namespace meshfit
