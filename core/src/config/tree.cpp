#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <sstream>

#include "config/schema_internal.h"
#include "config/tree_internal.h"

namespace iomimic::config::internal {
namespace {

std::string Position(const YAML::Mark& mark) {
  if (mark.line < 0) return "";
  return ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Counts nodes and depth with each alias expanded, in one pass over the
// parser's events; stops at the first bound crossed by throwing Exceeded.
class BoundsCounter : public YAML::EventHandler {
 public:
  struct Exceeded {
    YamlBoundsError error;
  };

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (anchor >= anchors_.size() || anchors_[anchor].open) {
      throw Exceeded{{mark, "YAML alias refers to its own anchor (a recursive structure)"}};
    }
    const Anchor& a = anchors_[anchor];
    Add(mark, a.nodes, a.depth);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchor {
    bool open = false;
    std::uint64_t nodes = 0;
    int depth = 0;  // levels below and including the anchored node
  };
  struct Frame {
    YAML::anchor_t anchor;
    YAML::Mark mark;
    std::uint64_t nodes;  // this node and everything below it
    int depth;            // levels below and including this node
  };

  Anchor& AnchorAt(YAML::anchor_t anchor) {
    if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
    return anchors_[anchor];
  }
  // Adds a subtree of `nodes` nodes, `depth` levels deep, at the current level.
  void Add(const YAML::Mark& mark, std::uint64_t nodes, int depth) {
    total_ += nodes;
    if (total_ > kMaxYamlNodes) {
      throw Exceeded{{mark, "YAML document has more than " + std::to_string(kMaxYamlNodes) +
                                " nodes with its aliases expanded (aliases of aliases, "
                                "\"billion laughs\"?)"}};
    }
    const int level = static_cast<int>(stack_.size()) + depth;
    if (level > kMaxYamlDepth) {
      throw Exceeded{{mark, "YAML document nests more than " + std::to_string(kMaxYamlDepth) +
                                " levels deep"}};
    }
    if (!stack_.empty()) {
      stack_.back().nodes += nodes;
      stack_.back().depth = std::max(stack_.back().depth, depth + 1);
    }
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) AnchorAt(anchor) = Anchor{false, 1, 1};
    Add(mark, 1, 1);
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Add(mark, 1, 1);  // the container itself, at this level
    if (anchor != YAML::NullAnchor) AnchorAt(anchor).open = true;
    stack_.push_back(Frame{anchor, mark, 1, 1});
  }
  void Close() {
    if (stack_.empty()) return;
    const Frame done = stack_.back();
    stack_.pop_back();
    // The container counted itself in Open; its parent now learns the rest.
    if (!stack_.empty()) {
      stack_.back().nodes += done.nodes - 1;
      stack_.back().depth = std::max(stack_.back().depth, done.depth + 1);
    }
    if (done.anchor != YAML::NullAnchor)
      AnchorAt(done.anchor) = Anchor{false, done.nodes, done.depth};
  }

  std::vector<Anchor> anchors_;
  std::vector<Frame> stack_;
  std::uint64_t total_ = 0;
};

bool IsUnder(std::string_view path, std::string_view prefix) {
  return path.size() > prefix.size() && path.starts_with(prefix) && path[prefix.size()] == '.';
}

// Moves the value of `from_key` in `from` to `to_key` in `to`, keeping the
// value node itself (and so its position in the file).
void MoveEntry(YAML::Node from, std::string_view from_key, YAML::Node to, std::string_view to_key) {
  const std::optional<Entry> entry = FindEntry(from, from_key);
  if (!entry) return;
  const YAML::Node value = entry->value;
  from.remove(std::string(from_key));
  to[std::string(to_key)] = value;
}

// Replaces the spelling `old_key` in section `section` (at `section_path`)
// by `new_key` in section `target` (at `target_path`).
Status RenameKey(YAML::Node section, std::string_view section_path, std::string_view old_key,
                 YAML::Node target, std::string_view target_path, std::string_view new_key,
                 const Locator& locator, std::vector<Diagnostic>* warnings) {
  const std::optional<Entry> old_entry = FindEntry(section, old_key);
  if (!old_entry) return Status::OK();
  const std::string old_path = JoinPath(section_path, old_key);
  const std::string new_path = JoinPath(target_path, new_key);
  if (const std::optional<Entry> current = FindEntry(target, new_key)) {
    std::string what = "conflicts with " + new_path;
    if (current->key.Mark().line >= 0) {
      what += " (line " + std::to_string(current->key.Mark().line + 1) + ")";
    }
    return locator.Error(old_entry->key.Mark(), old_path, what + "; give only one of them");
  }
  if (warnings != nullptr) {
    warnings->push_back(
        locator.Warning(old_entry->key.Mark(), old_path,
                        "legacy key '" + old_path + "' read as '" + new_path +
                            "' (DLIO since v2.0.1 ignores the old spelling and uses its default)"));
  }
  MoveEntry(section, old_key, target, new_key);
  return Status::OK();
}

}  // namespace

void Locator::SetOverride(const std::string& path, const std::string& text) {
  ClearOverride(path);
  overrides_[path] = text;
}

void Locator::ClearOverride(const std::string& path) {
  for (auto it = overrides_.begin(); it != overrides_.end();) {
    if (it->first == path || IsUnder(it->first, path)) {
      it = overrides_.erase(it);
    } else {
      ++it;
    }
  }
}

const std::string* Locator::OverrideFor(std::string_view path) const {
  while (true) {
    if (auto it = overrides_.find(path); it != overrides_.end()) return &it->second;
    const std::size_t dot = path.rfind('.');
    if (dot == std::string_view::npos) return nullptr;
    path = path.substr(0, dot);
  }
}

void Locator::SetMovedFrom(const std::string& path, const std::string& from) {
  moved_[path] = from;
}

Status Locator::Error(const YAML::Mark& mark, std::string_view path, std::string_view what) const {
  std::string shown(path);
  std::string_view written = path;
  if (auto moved = moved_.find(path); moved != moved_.end()) {
    shown = moved->second + " (read as " + shown + ")";
    written = moved->second;
  }
  std::string message;
  if (const std::string* text = OverrideFor(written)) {
    message = "override '" + *text + "': ";
  } else if (const std::string* target = OverrideFor(path)) {
    message = "override '" + *target + "': ";
  } else {
    message = file_ + Position(mark) + ": error: ";
  }
  message.append(shown).append(": ").append(what);
  return Status::InvalidArgument(std::move(message));
}

std::string Locator::Where(const YAML::Mark& mark, std::string_view path) const {
  auto moved = moved_.find(path);
  if (const std::string* text = OverrideFor(moved == moved_.end() ? path : moved->second)) {
    return "override '" + *text + "'";
  }
  return file_ + Position(mark);
}

Status Locator::FileError(const YAML::Mark& mark, std::string_view what) const {
  return Status::InvalidArgument(file_ + Position(mark) + ": error: " + std::string(what));
}

Diagnostic Locator::Warning(const YAML::Mark& mark, std::string_view path,
                            std::string message) const {
  Diagnostic diagnostic;
  diagnostic.message = std::move(message);
  if (const std::string* text = OverrideFor(path)) {
    diagnostic.file = "override '" + *text + "'";
    return diagnostic;
  }
  diagnostic.file = file_;
  if (mark.line >= 0) {
    diagnostic.line = mark.line + 1;
    diagnostic.column = mark.column + 1;
  }
  return diagnostic;
}

std::optional<Entry> FindEntry(const YAML::Node& map, std::string_view key) {
  if (!map.IsMap()) return std::nullopt;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return Entry{it->first, it->second};
  }
  return std::nullopt;
}

std::optional<YAML::Node> Child(const YAML::Node& map, std::string_view key) {
  std::optional<Entry> entry = FindEntry(map, key);
  if (!entry) return std::nullopt;
  return entry->value;
}

std::optional<YAML::Node> FindPath(const YAML::Node& root, std::string_view path) {
  YAML::Node node = root;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string_view key = path.substr(0, dot);
    std::optional<YAML::Node> child = Child(node, key);
    if (!child) return std::nullopt;
    node.reset(*child);  // rebinds the handle; plain assignment would rewrite the tree
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return node;
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

std::string KeyText(const YAML::Node& key) { return key.IsScalar() ? key.Scalar() : Describe(key); }

std::optional<YamlBoundsError> CheckYamlBounds(const std::string& text) {
  std::istringstream in(text);
  BoundsCounter counter;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(counter);
  } catch (const BoundsCounter::Exceeded& e) {
    return e.error;
  } catch (const YAML::Exception&) {
    return std::nullopt;  // malformed: YAML::Load reports it with its position
  }
  return std::nullopt;
}

Status CheckDuplicateKeys(const YAML::Node& node, const std::string& path, const Locator& locator) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      IOMIMIC_RETURN_IF_ERROR(
          CheckDuplicateKeys(node[i], path + "[" + std::to_string(i) + "]", locator));
    }
    return Status::OK();
  }
  if (!node.IsMap()) return Status::OK();
  std::map<std::string, YAML::Mark> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = KeyText(it->first);
    const std::string child_path = JoinPath(path, key);
    const auto [previous, inserted] = seen.emplace(key, it->first.Mark());
    if (!inserted) {
      std::string what = "duplicate key";
      if (previous->second.line >= 0) {
        what += " (first given at line " + std::to_string(previous->second.line + 1) + ")";
      }
      return locator.Error(it->first.Mark(), child_path, what);
    }
    IOMIMIC_RETURN_IF_ERROR(CheckDuplicateKeys(it->second, child_path, locator));
  }
  return Status::OK();
}

YAML::Node UnwrapWorkloadRoot(const YAML::Node& root, const Locator& locator,
                              std::vector<Diagnostic>* warnings) {
  const std::optional<YAML::Node> workload = Child(root, "workload");
  if (!workload || !workload->IsMap()) return root;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = KeyText(it->first);
    if (key != "workload" && LookupKey(key)) return root;  // a manifest with a stray key
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = KeyText(it->first);
    if (key == "workload") continue;
    warnings->push_back(
        locator.Warning(it->first.Mark(), key, "key '" + key + "' next to 'workload:' is ignored"));
  }
  return *workload;
}

Status CanonicalizeLegacy(YAML::Node root, const Locator& locator,
                          std::vector<Diagnostic>* warnings) {
  // `data_reader:` is DLIO's older name of `reader:` (still read first by
  // DLIO at HEAD, so no warning).
  if (const std::optional<Entry> old_reader = FindEntry(root, "data_reader")) {
    if (const std::optional<Entry> reader = FindEntry(root, "reader")) {
      return locator.Error(old_reader->key.Mark(), "data_reader",
                           "given together with 'reader' (line " +
                               std::to_string(reader->key.Mark().line + 1) + "); use one section");
    }
    MoveEntry(root, "data_reader", root, "reader");
  }

  // `model: <name>`.
  if (const std::optional<Entry> model = FindEntry(root, "model");
      model && model->value.IsScalar()) {
    if (warnings != nullptr) {
      warnings->push_back(
          locator.Warning(model->key.Mark(), "model",
                          "legacy form 'model: " + model->value.Scalar() +
                              "' read as 'model.name' (DLIO since v2.0.1 ignores it)"));
    }
    const YAML::Node name = model->value;
    root.remove("model");
    YAML::Node section(YAML::NodeType::Map);
    section["name"] = name;
    root["model"] = section;
  }

  if (std::optional<YAML::Node> dataset = Child(root, "dataset"); dataset && dataset->IsMap()) {
    static constexpr std::pair<std::string_view, std::string_view> kRenames[] = {
        {"record_length", "record_length_bytes"},
        {"record_length_stdev", "record_length_bytes_stdev"},
        {"record_length_resize", "record_length_bytes_resize"},
    };
    for (const auto& [old_key, new_key] : kRenames) {
      IOMIMIC_RETURN_IF_ERROR(
          RenameKey(*dataset, "dataset", old_key, *dataset, "dataset", new_key, locator, warnings));
    }
  }

  if (std::optional<YAML::Node> checkpoint = Child(root, "checkpoint");
      checkpoint && checkpoint->IsMap() && FindEntry(*checkpoint, "model_size")) {
    std::optional<YAML::Node> model = Child(root, "model");
    if (!model || model->IsNull()) {
      root.remove("model");
      root["model"] = YAML::Node(YAML::NodeType::Map);
      model = Child(root, "model");
    }
    // A `model:` of the wrong shape is reported when it is typed.
    if (model->IsMap()) {
      IOMIMIC_RETURN_IF_ERROR(RenameKey(*checkpoint, "checkpoint", "model_size", *model, "model",
                                        "model_size_bytes", locator, warnings));
    }
  }
  return Status::OK();
}

Status MoveReaderStorageKeys(YAML::Node root, Locator* locator) {
  std::optional<YAML::Node> reader = Child(root, "reader");
  if (!reader || !reader->IsMap()) return Status::OK();
  // reader.<key> -> <section>.<target>.
  struct Move {
    std::string_view key, section, target;
    bool wins;  // replaces a value the section has (else both is an error)
  };
  static constexpr Move kMoves[] = {
      {"storage_type", "storage", "storage_type", false},
      {"protocol", "storage", "protocol", false},
      {"storage_library", "storage", "storage_library", false},
      {"storage_root", "storage", "storage_root", false},
      {"storage_options", "storage", "storage_options", false},
      {"endpoint_uris", "storage", "endpoint_uris", false},
      {"load_balance_strategy", "storage", "load_balance_strategy", false},
      {"use_mpi_endpoint_distribution", "storage", "use_mpi_endpoint_distribution", false},
      // The fork's loaders read their data from data_loader_root; the
      // dataset's data_folder is then unused (its files say so).
      {"data_loader_root", "dataset", "data_folder", true},
      {"checkpoint_folder", "checkpoint", "checkpoint_folder", false},
  };
  for (const Move& m : kMoves) {
    const std::optional<Entry> entry = FindEntry(*reader, m.key);
    if (!entry) continue;
    std::optional<YAML::Node> section = Child(root, m.section);
    if (!section || section->IsNull()) {
      root.remove(std::string(m.section));
      root[std::string(m.section)] = YAML::Node(YAML::NodeType::Map);
      section = Child(root, m.section);
    }
    if (!section->IsMap()) continue;  // reported when typed
    const std::string from = JoinPath("reader", m.key);
    const std::string to = JoinPath(m.section, m.target);
    std::optional<Entry> current = FindEntry(*section, m.target);
    if (current && entry->value.IsNull()) {  // nothing to add
      reader->remove(std::string(m.key));
      continue;
    }
    if (current && current->value.IsNull()) {  // `storage_options:` with nothing under it
      section->remove(std::string(m.target));
      current.reset();
    }
    // Maps (storage_options) merge: the reader's entries fill in what the
    // section lacks; the same entry with two values is the conflict below.
    if (current && current->value.IsMap() && entry->value.IsMap()) {
      YAML::Node into = current->value;
      for (auto it = entry->value.begin(); it != entry->value.end(); ++it) {
        const std::string key = KeyText(it->first);
        const std::optional<Entry> have = FindEntry(into, key);
        if (!have) {
          into[key] = it->second;
          continue;
        }
        const std::string child = JoinPath(to, key);
        const bool same = have->value.IsScalar() && it->second.IsScalar() &&
                          have->value.Scalar() == it->second.Scalar();
        if (!same && locator->OverrideFor(child) == nullptr) {
          return locator->Error(it->first.Mark(), JoinPath(from, key),
                                "conflicts with " + child + "; give only one of them");
        }
      }
      reader->remove(std::string(m.key));
      continue;
    }
    // A command-line override of the target wins over the file's reader key.
    if (current && locator->OverrideFor(to) != nullptr) {
      reader->remove(std::string(m.key));
      continue;
    }
    if (current && !m.wins) {
      const bool same = current->value.IsScalar() && entry->value.IsScalar() &&
                        current->value.Scalar() == entry->value.Scalar();
      if (!same) {
        std::string where;
        if (current->key.Mark().line >= 0) {
          where = " (line " + std::to_string(current->key.Mark().line + 1) + ")";
        }
        return locator->Error(entry->key.Mark(), from,
                              "conflicts with " + to + where + "; give only one of them");
      }
      reader->remove(std::string(m.key));
      continue;
    }
    if (m.wins) section->remove(std::string(m.target));
    MoveEntry(*reader, m.key, *section, m.target);
    locator->SetMovedFrom(to, from);
  }
  return Status::OK();
}

void RecordKeyOrigins(const YAML::Node& root, const Locator& locator,
                      std::map<std::string, std::string, std::less<>>* origins) {
  struct Walk {
    const Locator& locator;
    std::map<std::string, std::string, std::less<>>* origins;
    void operator()(const YAML::Node& map, const std::string& path) const {
      for (auto it = map.begin(); it != map.end(); ++it) {
        const std::string child = JoinPath(path, KeyText(it->first));
        if (it->second.IsMap()) {
          (*this)(it->second, child);
        } else {
          const YAML::Mark mark = it->second.IsNull() ? it->first.Mark() : it->second.Mark();
          origins->emplace(child, locator.Where(mark, child));
        }
      }
    }
  };
  if (root.IsMap()) Walk{locator, origins}(root, "");
}

}  // namespace iomimic::config::internal
