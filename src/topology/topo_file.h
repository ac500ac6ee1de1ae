// The hosts-to-racks file named by ZPP_TOPO_FILE: one "hostname rack" per line, '#' starts a
// comment, blank lines are skipped. The whole file is rejected on any error, because a file that
// is wrong in one line may be wrong in others and a wrong rack map is worse than none.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zpp::topology {

struct TopoFileEntry {
  std::string host;
  std::string rack;
  int line = 0;
};

struct TopoFile {
  std::vector<TopoFileEntry> entries;

  // The entry of `host`: an exact match first, then by short name (the part before the first
  // dot) on either side, so "node7" and "node7.cluster.local" find each other. nullptr: absent.
  const TopoFileEntry* Find(std::string_view host) const;
};

struct TopoFileParse {
  std::optional<TopoFile> file;     // set only when there was no error
  std::vector<std::string> errors;  // "path:line: what", or "path: what" for the whole file
};

// Pure: parses the contents of a file; `path` only names it in the errors.
TopoFileParse ParseTopoFile(std::string_view contents, std::string_view path);

// Reads and parses; a missing, unreadable or oversized file is one error naming the path.
TopoFileParse LoadTopoFile(const std::string& path);

// The same with `open` in place of fopen(path, "rb") (nullptr with errno set on failure): the
// seam that lets tests run "permission denied" as root, which reads any file.
using FileOpener = std::function<FILE*(const std::string& path)>;
TopoFileParse LoadTopoFile(const std::string& path, const FileOpener& open);

}  // namespace zpp::topology
