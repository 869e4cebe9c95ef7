#include "io/memory_inputs.hpp"

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <variant>

#include "io/text_input.hpp"
#include "orrery/error.hpp"

namespace orrery::io {
namespace {

// A matrix registered by value (owner set) or borrowed (owner null): readers see the view.
struct MatrixEntry {
  std::shared_ptr<const MatrixD> owner;
  MatrixViewD view;
};

struct Entry {
  std::variant<std::shared_ptr<const MatrixEntry>, std::shared_ptr<const SparseTriples>,
               std::shared_ptr<const std::string>>
      value;
};

struct Registry {
  std::mutex lock;
  std::map<std::string, Entry> entries;
};

Registry& registry() {
  static Registry r;
  return r;
}

std::atomic<unsigned long long> next_scope{0};

template <class T>
std::string put(const std::string& prefix, const std::string& name, T value) {
  // folders are allowed; empty, "." and ".." parts are not, so a name stays inside its scope
  const std::string padded = "/" + name + "/";
  if (name.empty() || padded.find("//") != std::string::npos || padded.find("/./") != std::string::npos ||
      padded.find("/../") != std::string::npos)
    internal_error("memory input: a name must be non-empty, with no empty, '.' or '..' part, found '" + name + "'");
  const std::string path = prefix + name;
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.lock);
  if (!r.entries.emplace(path, Entry{std::move(value)}).second)
    internal_error("memory input " + path + " is registered twice");
  return path;
}

template <class T>
std::shared_ptr<T> find(const std::string& path) {
  if (!is_memory_path(path)) return nullptr;
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.lock);
  const auto it = r.entries.find(path);
  if (it == r.entries.end()) return nullptr;
  const auto* p = std::get_if<std::shared_ptr<T>>(&it->second.value);
  return p ? *p : nullptr;
}

}  // namespace

bool is_memory_path(const std::string& path) { return path.rfind(kMemoryPrefix, 0) == 0; }

MemoryInputs::MemoryInputs() : prefix_(std::string(kMemoryPrefix) + std::to_string(next_scope++) + "/") {}

MemoryInputs::~MemoryInputs() {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.lock);
  for (auto it = r.entries.lower_bound(prefix_); it != r.entries.end() && it->first.rfind(prefix_, 0) == 0;)
    it = r.entries.erase(it);
}

std::string MemoryInputs::add_matrix(const std::string& name, MatrixD m) {
  auto owner = std::make_shared<const MatrixD>(std::move(m));
  return put(prefix_, name, std::make_shared<const MatrixEntry>(MatrixEntry{owner, MatrixViewD(*owner)}));
}
std::string MemoryInputs::add_view(const std::string& name, MatrixViewD v) {
  return put(prefix_, name, std::make_shared<const MatrixEntry>(MatrixEntry{nullptr, v}));
}
std::string MemoryInputs::add_sparse(const std::string& name, SparseTriples t) {
  return put(prefix_, name, std::shared_ptr<const SparseTriples>(std::make_shared<SparseTriples>(std::move(t))));
}
std::string MemoryInputs::add_bytes(const std::string& name, std::string bytes) {
  return put(prefix_, name, std::shared_ptr<const std::string>(std::make_shared<std::string>(std::move(bytes))));
}

bool memory_view(const std::string& path, MatrixViewD& out) {
  const auto m = find<const MatrixEntry>(path);
  if (!m) return false;
  out = m->view;
  return true;
}

std::shared_ptr<const SparseTriples> memory_sparse(const std::string& path) { return find<const SparseTriples>(path); }
std::shared_ptr<const std::string> memory_bytes(const std::string& path) { return find<const std::string>(path); }

bool input_is_directory(const std::string& path) {
  if (!is_memory_path(path)) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
  }
  const std::string below = path.back() == '/' ? path : path + "/";
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.lock);
  const auto it = r.entries.lower_bound(below);
  return it != r.entries.end() && it->first.compare(0, below.size(), below) == 0;
}

bool input_exists(const std::string& path) {
  if (!is_memory_path(path)) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  }
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.lock);
    if (r.entries.count(path)) return true;
  }
  return input_is_directory(path);
}

std::string read_input_bytes(const std::string& path) { return detail::Source(path).read_all(); }

}  // namespace orrery::io
