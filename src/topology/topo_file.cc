#include "topology/topo_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/text.h"
#include "config/rack_token.h"
#include "topology/printable.h"
#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

// A rack map for even a very large cluster is a few MiB; anything bigger is not a rack map.
constexpr size_t kMaxFileBytes = 64u << 20;
constexpr size_t kMaxHostLength = 255;

std::string_view ShortName(std::string_view host) { return host.substr(0, host.find('.')); }

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// Host names are printable ASCII without blanks; anything else means the file is not text.
std::string_view HostProblem(std::string_view host) {
  if (host.size() > kMaxHostLength) return "is longer than 255 characters";
  for (char c : host) {
    if (c <= ' ' || c > '~') return "has a character that is not printable ASCII";
  }
  return "";
}

std::string Quoted(std::string_view s) { return StrCat("'", Printable(s), "'"); }

}  // namespace

const TopoFileEntry* TopoFile::Find(std::string_view host) const {
  for (const TopoFileEntry& entry : entries) {
    if (entry.host == host) return &entry;
  }
  const std::string_view short_host = ShortName(host);
  for (const TopoFileEntry& entry : entries) {
    if (ShortName(entry.host) == short_host) return &entry;
  }
  return nullptr;
}

TopoFileParse ParseTopoFile(std::string_view contents, std::string_view path) {
  TopoFileParse result;
  const std::string where(path);
  auto error = [&](int line, const std::string& what) {
    result.errors.push_back(StrCat(where, ":", line, ": ", what));
  };

  TopoFile file;
  std::map<std::string, size_t, std::less<>> index_of_host;
  const std::vector<std::string_view> lines = text::Split(contents, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_number = static_cast<int>(i) + 1;
    std::string_view line = lines[i];
    line = line.substr(0, line.find('#'));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() != 2) {
      error(line_number, StrCat("expected 'hostname rack', found ", fields.size(),
                                (fields.size() == 1 ? " field" : " fields")));
      continue;
    }
    const std::string_view host = fields[0];
    const std::string_view rack = fields[1];
    if (const std::string_view problem = HostProblem(host); !problem.empty()) {
      error(line_number, StrCat("host name ", Quoted(host), " ", problem));
      continue;
    }
    if (const std::string_view problem = config::RackTokenProblem(rack); !problem.empty()) {
      error(line_number, StrCat("rack ", Quoted(rack), " ", problem));
      continue;
    }
    auto [it, inserted] = index_of_host.try_emplace(std::string(host), file.entries.size());
    if (!inserted) {
      const TopoFileEntry& first = file.entries[it->second];
      if (first.rack != rack) {
        error(line_number,
              StrCat("host ", Quoted(host), " is in rack ", Quoted(rack), " here but in rack ",
                     Quoted(first.rack), " on line ", first.line));
      }
      continue;
    }
    file.entries.push_back({std::string(host), std::string(rack), line_number});
  }
  if (result.errors.empty() && file.entries.empty()) {
    result.errors.push_back(StrCat(where, ": lists no hosts"));
  }
  if (result.errors.empty()) result.file = std::move(file);
  return result;
}

TopoFileParse LoadTopoFile(const std::string& path) {
  return LoadTopoFile(path, [](const std::string& name) { return std::fopen(name.c_str(), "rb"); });
}

TopoFileParse LoadTopoFile(const std::string& path, const FileOpener& open) {
  TopoFileParse result;
  FILE* stream = open(path);
  if (stream == nullptr) {
    result.errors.push_back(StrCat(path, ": cannot open (", std::strerror(errno), ")"));
    return result;
  }
  std::string contents;
  char buffer[8192];
  bool too_large = false;
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), stream)) > 0) {
    contents.append(buffer, n);
    if (contents.size() > kMaxFileBytes) {
      too_large = true;
      break;
    }
  }
  // A directory opens but fails on read (EISDIR): that is "unreadable", not "empty".
  const bool read_failed = std::ferror(stream) != 0;
  const int read_errno = errno;
  std::fclose(stream);
  if (read_failed) {
    result.errors.push_back(StrCat(path, ": cannot read (", std::strerror(read_errno), ")"));
    return result;
  }
  if (too_large) {
    result.errors.push_back(StrCat(path, ": larger than 64 MiB, not a hosts-to-racks file"));
    return result;
  }
  return ParseTopoFile(contents, path);
}

}  // namespace zpp::topology
