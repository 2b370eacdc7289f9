#include "config/overrides_internal.h"
#include "config/scalar_internal.h"
#include "config/schema_internal.h"

namespace iomimic::config::internal {
namespace {

constexpr std::string_view kWorkloadPrefix = "workload.";

Status OverrideError(const std::string& text, std::string_view what) {
  return Status::InvalidArgument("override '" + text + "': " + std::string(what));
}

Status BadForm(const std::string& text) {
  return OverrideError(text, "expected workload.<key>=<value> or hydra.run.dir=...");
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> segments;
  while (true) {
    const std::size_t dot = path.find('.');
    segments.emplace_back(path.substr(0, dot));
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  return segments;
}

bool IsWellFormedPath(std::string_view path) {
  for (const std::string& segment : SplitPath(path)) {
    if (segment.empty()) return false;
    for (char c : segment) {
      if (c == ' ' || c == '\t' || c == '=' || c == '[' || c == ']') return false;
    }
  }
  return true;
}

// The YAML node for an override value, typed the way Hydra types it.
Result<YAML::Node> ParseValue(const Override& override_) {
  const std::string& text = *override_.value;
  if (Trim(text).empty()) return YAML::Node(std::string());  // `key=` is the empty string
  if (std::optional<YamlBoundsError> bounds = CheckYamlBounds(text)) {
    return OverrideError(override_.text, bounds->what);
  }
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return OverrideError(override_.text, "malformed value: " + e.msg);
  }
}

std::string DidYouMean(std::string_view path) {
  std::optional<std::string> suggestion = SuggestKey(path);
  return suggestion ? " (did you mean '" + *suggestion + "'?)" : std::string();
}

Status ApplyHydra(const Override& override_, HydraConfig* hydra) {
  std::string* field = override_.key == "hydra.run.dir" ? &hydra->run_dir : &hydra->output_subdir;
  if (override_.op == Override::Op::kDelete) {
    *field = override_.key == "hydra.run.dir" ? HydraConfig().run_dir : HydraConfig().output_subdir;
    return Status::OK();
  }
  IOMIMIC_ASSIGN_OR_RETURN(const YAML::Node value, ParseValue(override_));
  if (value.IsNull()) {
    *field = "";
  } else if (value.IsScalar()) {
    *field = value.Scalar();
  } else {
    return OverrideError(override_.text, "expected a path, got " + Describe(value));
  }
  return Status::OK();
}

Status ApplyWorkload(const Override& override_, const std::string& path, YAML::Node root,
                     Locator* locator) {
  const std::vector<std::string> segments = SplitPath(path);
  const std::optional<YAML::Node> existing = FindPath(root, path);
  const bool known = LookupKey(path).has_value();

  switch (override_.op) {
    case Override::Op::kSet:
      break;
    case Override::Op::kReplace:
      if (!existing && !known) {
        const std::string hint = DidYouMean(path);
        return OverrideError(override_.text,
                             "no key '" + path + "' to replace" +
                                 (hint.empty() ? "; '+" + override_.text + "' adds it" : hint));
      }
      break;
    case Override::Op::kAdd:
      if (existing) {
        return OverrideError(
            override_.text, "'" + path + "' is already set; '+" + override_.text + "' replaces it");
      }
      break;
    case Override::Op::kDelete: {
      if (!existing) {
        if (known) return Status::OK();  // already at its default
        return OverrideError(override_.text, "no key '" + path + "' to delete" + DidYouMean(path));
      }
      if (override_.value && existing->IsScalar()) {
        IOMIMIC_ASSIGN_OR_RETURN(const YAML::Node expected, ParseValue(override_));
        if (expected.IsScalar() && expected.Scalar() != existing->Scalar()) {
          return OverrideError(override_.text, "'" + path + "' is '" + existing->Scalar() +
                                                   "', not '" + expected.Scalar() + "'");
        }
      }
      const std::size_t dot = path.rfind('.');
      YAML::Node parent = root;
      if (dot != std::string::npos) parent.reset(*FindPath(root, path.substr(0, dot)));
      parent.remove(segments.back());
      locator->ClearOverride(path);
      return Status::OK();
    }
  }

  IOMIMIC_ASSIGN_OR_RETURN(YAML::Node value, ParseValue(override_));
  if (path == "model" && value.IsScalar()) {
    // The legacy `model: <name>`, rewritten now so that later model.*
    // overrides find a map.
    YAML::Node section(YAML::NodeType::Map);
    section["name"] = value;
    value.reset(section);
  }
  YAML::Node parent = root;
  std::string parent_path;
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
    const std::string& segment = segments[i];
    parent_path = JoinPath(parent_path, segment);
    std::optional<YAML::Node> child = Child(parent, segment);
    if (!child || child->IsNull()) {
      parent.remove(segment);
      parent[segment] = YAML::Node(YAML::NodeType::Map);
      child = Child(parent, segment);
    } else if (!child->IsMap()) {
      return OverrideError(override_.text,
                           "'" + parent_path + "' is " + Describe(*child) + ", not a map of keys");
    }
    parent.reset(*child);  // rebinds the handle; assignment would rewrite the tree
  }
  parent.remove(segments.back());
  parent[segments.back()] = value;
  locator->SetOverride(path, override_.text);
  return Status::OK();
}

}  // namespace

Result<Override> ParseOverride(const std::string& text) {
  Override result;
  result.text = text;
  std::string_view rest = text;
  if (rest.starts_with("~")) {
    result.op = Override::Op::kDelete;
    rest.remove_prefix(1);
  } else if (rest.starts_with("++")) {
    result.op = Override::Op::kSet;
    rest.remove_prefix(2);
  } else if (rest.starts_with("+")) {
    result.op = Override::Op::kAdd;
    rest.remove_prefix(1);
  }
  const std::size_t equals = rest.find('=');
  result.key = std::string(Trim(rest.substr(0, equals)));
  if (equals != std::string_view::npos) result.value = std::string(rest.substr(equals + 1));
  if (result.key.empty()) return BadForm(text);
  if (!result.value && result.op != Override::Op::kDelete) return BadForm(text);
  return result;
}

Result<std::string> FindWorkloadSelection(const std::vector<std::string>& overrides) {
  std::string selected;
  std::string selected_by;
  for (const std::string& text : overrides) {
    IOMIMIC_ASSIGN_OR_RETURN(const Override override_, ParseOverride(text));
    if (override_.key != "workload") continue;
    if (override_.op == Override::Op::kDelete) {
      return OverrideError(text, "the workload selection cannot be deleted");
    }
    const std::string name(Trim(*override_.value));
    if (name.empty()) return OverrideError(text, "expected a workload name");
    if (!selected.empty() && name != selected) {
      return OverrideError(text, "conflicts with '" + selected_by + "'");
    }
    selected = name;
    selected_by = text;
  }
  return selected;
}

Status ApplyOverrides(const std::vector<std::string>& overrides, YAML::Node root, Locator* locator,
                      HydraConfig* hydra) {
  for (const std::string& text : overrides) {
    IOMIMIC_ASSIGN_OR_RETURN(const Override override_, ParseOverride(text));
    if (override_.key == "workload") continue;  // a selection, handled by the caller
    if (override_.key == "hydra.run.dir" || override_.key == "hydra.output_subdir") {
      IOMIMIC_RETURN_IF_ERROR(ApplyHydra(override_, hydra));
      continue;
    }
    if (!override_.key.starts_with(kWorkloadPrefix)) return BadForm(text);
    const std::string_view raw_path =
        std::string_view(override_.key).substr(kWorkloadPrefix.size());
    if (!IsWellFormedPath(raw_path)) {
      return OverrideError(text, "malformed key '" + override_.key + "'");
    }
    IOMIMIC_RETURN_IF_ERROR(ApplyWorkload(override_, CanonicalKeyPath(raw_path), root, locator));
  }
  return Status::OK();
}

}  // namespace iomimic::config::internal
