// ResolveInterpolations: OmegaConf's ${...} in manifest values, resolved as
// Hydra resolves them when DLIO or MLPerf Storage's fork loads a workload
// (docs/dlio-compat.md, "Interpolation").

#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/scalar_internal.h"
#include "config/tree_internal.h"

namespace iomimic::config::internal {
namespace {

// Nested interpolations deeper than this are taken for a cycle that the
// path check cannot see (a reference through an environment default).
constexpr int kMaxDepth = 32;

constexpr std::string_view kWorkloadRoot = "workload.";

bool IsEnvName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      return false;
    }
  }
  return !(name[0] >= '0' && name[0] <= '9');
}

// A resolver argument without surrounding blanks and quotes.
std::string Unquote(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  return std::string(s);
}

// Splits a dotted path into keys ("a.b" -> {a, b}).
std::vector<std::string> SplitKeys(std::string_view path) {
  std::vector<std::string> keys;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    keys.emplace_back(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  return keys;
}

std::string JoinKeys(const std::vector<std::string>& keys) {
  std::string path;
  for (const std::string& k : keys) path += (path.empty() ? "" : ".") + k;
  return path;
}

class Resolver {
 public:
  Resolver(YAML::Node root, const Locator& locator, std::vector<Diagnostic>* warnings)
      : locator_(locator), warnings_(warnings) {
    root_.reset(root);
  }

  // Resolves every scalar below `node` (at `path`) in place.
  Status Walk(YAML::Node node, std::vector<std::string>* path) {
    if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        path->push_back(KeyText(it->first));
        YAML::Node value;
        value.reset(it->second);
        IOMIMIC_RETURN_IF_ERROR(Walk(value, path));
        path->pop_back();
      }
    } else if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) {
        path->push_back(std::to_string(i));
        YAML::Node item;
        item.reset(node[i]);
        IOMIMIC_RETURN_IF_ERROR(Walk(item, path));
        path->pop_back();
      }
    } else if (node.IsScalar() && node.Scalar().find("${") != std::string::npos) {
      IOMIMIC_RETURN_IF_ERROR(ResolveNode(node, *path, 0));
    }
    return Status::OK();
  }

 private:
  // Replaces the scalar `node` at `path` by its resolved value.
  Status ResolveNode(YAML::Node node, const std::vector<std::string>& path, int depth) {
    const std::string where = JoinKeys(path);
    if (!active_.insert(where).second) {
      return locator_.Error(node.Mark(), where, "interpolation refers back to itself (a cycle)");
    }
    const std::string text = node.Scalar();
    Status status = Status::OK();
    // A value that is one interpolation takes the referenced node whole (a
    // number stays a number, a map stays a map); otherwise the pieces are
    // text.
    std::size_t end = 0;
    if (text.starts_with("${") && (end = ClosingBrace(text, 0)) == text.size() - 1) {
      YAML::Node value;
      status = Evaluate(std::string_view(text).substr(2, end - 2), node, path, depth, &value);
      if (status.ok()) {
        if (value.IsScalar()) {
          node = value.Scalar();
        } else {
          node = YAML::Clone(value);
        }
      }
    } else {
      std::string out;
      status = Substitute(text, node, path, depth, &out);
      if (status.ok()) node = out;
    }
    active_.erase(where);
    return status;
  }

  // Index of the '}' that closes the "${" at `open`, or npos.
  static std::size_t ClosingBrace(std::string_view text, std::size_t open) {
    int level = 0;
    for (std::size_t i = open; i < text.size(); ++i) {
      if (text.compare(i, 2, "${") == 0) {
        ++level;
        ++i;
      } else if (text[i] == '}' && --level == 0) {
        return i;
      }
    }
    return std::string_view::npos;
  }

  // Replaces each ${...} in `text` by the text of its value.
  Status Substitute(std::string_view text, const YAML::Node& node,
                    const std::vector<std::string>& path, int depth, std::string* out) {
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t open = text.find("${", at);
      if (open == std::string_view::npos) break;
      if (open > 0 && text[open - 1] == '\\') {  // OmegaConf's escape: \${ is literal
        out->append(text.substr(at, open - 1 - at));
        out->append("${");
        at = open + 2;
        continue;
      }
      const std::size_t close = ClosingBrace(text, open);
      if (close == std::string_view::npos) {
        return locator_.Error(
            node.Mark(), JoinKeys(path),
            "unterminated interpolation '" + std::string(text.substr(open)) + "' (no closing '}')");
      }
      out->append(text.substr(at, open - at));
      YAML::Node value;
      IOMIMIC_RETURN_IF_ERROR(
          Evaluate(text.substr(open + 2, close - open - 2), node, path, depth, &value));
      if (!value.IsScalar() && !value.IsNull()) {
        return locator_.Error(node.Mark(), JoinKeys(path),
                              "'${" + std::string(text.substr(open + 2, close - open - 2)) +
                                  "}' is " + Describe(value) + ", which cannot be part of a text");
      }
      out->append(value.IsNull() ? "None" : value.Scalar());
      at = close + 1;
    }
    out->append(text.substr(std::min(at, text.size())));
    return Status::OK();
  }

  // The value of one interpolation body (without ${ and }).
  Status Evaluate(std::string_view body, const YAML::Node& node,
                  const std::vector<std::string>& path, int depth, YAML::Node* value) {
    const std::string where = JoinKeys(path);
    if (depth > kMaxDepth) {
      return locator_.Error(node.Mark(), where, "interpolations nest too deep (a cycle?)");
    }
    const std::string expr = Unquote(body);
    const std::size_t colon = expr.find(':');
    if (colon != std::string::npos) return Resolve(expr, colon, node, path, depth, value);
    // A key: absolute from the workload root (a Hydra config has it under
    // `workload:`), or relative with leading dots (one: this value's map).
    std::vector<std::string> target;
    std::string_view key = expr;
    if (key.starts_with('.')) {
      std::size_t dots = 0;
      while (dots < key.size() && key[dots] == '.') ++dots;
      target.assign(path.begin(), path.end() - 1);  // the map holding this value
      for (std::size_t up = 1; up < dots; ++up) {
        if (target.empty()) {
          return locator_.Error(node.Mark(), where,
                                "'${" + expr + "}' climbs above the top of the manifest");
        }
        target.pop_back();
      }
      key.remove_prefix(dots);
    } else if (key.starts_with(kWorkloadRoot) && !FindPath(root_, key)) {
      key.remove_prefix(kWorkloadRoot.size());
    }
    for (std::string& k : SplitKeys(key)) target.push_back(std::move(k));
    std::optional<YAML::Node> found = FindPath(root_, JoinKeys(target));
    if (!found) {
      // MLPerf Storage's object-storage files write ${AWS_REGION} and the
      // like for environment variables. Hydra would refuse them; the intent
      // is plain, so a set variable is used, with a warning (its value,
      // possibly a secret, is not printed).
      if (IsEnvName(expr)) {
        if (const char* set = std::getenv(expr.c_str()); set != nullptr) {
          if (warnings_ != nullptr) {
            warnings_->push_back(locator_.Warning(
                node.Mark(), where,
                "'${" + expr + "}' names no key; the environment variable " + expr +
                    " is used (Hydra would refuse it: write ${oc.env:" + expr + "})"));
          }
          *value = YAML::Node(std::string(set));
          return Status::OK();
        }
        return locator_.Error(node.Mark(), where,
                              "'${" + expr +
                                  "}' names no key of the manifest and no environment "
                                  "variable " +
                                  expr + " is set");
      }
      return locator_.Error(
          node.Mark(), where,
          "'${" + expr + "}' names no key of the manifest (looked for '" + JoinKeys(target) + "')");
    }
    YAML::Node target_node;
    target_node.reset(*found);
    if (target_node.IsScalar() && target_node.Scalar().find("${") != std::string::npos) {
      IOMIMIC_RETURN_IF_ERROR(ResolveNode(target_node, target, depth + 1));
    }
    value->reset(target_node);
    return Status::OK();
  }

  // `name:args` resolvers: oc.env (OmegaConf 2.1+) and env (OmegaConf 2.0).
  Status Resolve(const std::string& expr, std::size_t colon, const YAML::Node& node,
                 const std::vector<std::string>& path, int depth, YAML::Node* value) {
    const std::string where = JoinKeys(path);
    const std::string name = Unquote(std::string_view(expr).substr(0, colon));
    const std::string args = expr.substr(colon + 1);
    if (name != "oc.env" && name != "env") {
      return locator_.Error(node.Mark(), where,
                            "unknown resolver '" + name + "' in '${" + expr +
                                "}' (iomimic resolves key references, oc.env and env)");
    }
    // The variable, then an optional default after the first top-level comma.
    std::size_t comma = std::string::npos;
    for (std::size_t i = 0, level = 0; i < args.size(); ++i) {
      if (args.compare(i, 2, "${") == 0)
        ++level, ++i;
      else if (args[i] == '}' && level > 0)
        --level;
      else if (args[i] == ',' && level == 0) {
        comma = i;
        break;
      }
    }
    const std::string variable = Unquote(std::string_view(args).substr(0, comma));
    if (!IsEnvName(variable)) {
      return locator_.Error(
          node.Mark(), where,
          "'${" + expr + "}': '" + variable + "' is not an environment variable name");
    }
    if (const char* set = std::getenv(variable.c_str()); set != nullptr) {
      *value = YAML::Node(std::string(set));
      return Status::OK();
    }
    if (comma == std::string::npos) {
      return locator_.Error(
          node.Mark(), where,
          "environment variable " + variable + " is not set (" + "${" + expr + "} has no default)");
    }
    const std::string fallback = Unquote(std::string_view(args).substr(comma + 1));
    if (fallback == "null") {
      *value = YAML::Node(YAML::NodeType::Null);
      return Status::OK();
    }
    std::string text;
    IOMIMIC_RETURN_IF_ERROR(Substitute(fallback, node, path, depth + 1, &text));
    *value = YAML::Node(text);
    return Status::OK();
  }

  YAML::Node root_;
  const Locator& locator_;
  std::vector<Diagnostic>* warnings_;
  std::set<std::string> active_;  // paths being resolved (cycle check)
};

}  // namespace

Status ResolveInterpolations(YAML::Node root, const Locator& locator,
                             std::vector<Diagnostic>* warnings) {
  Resolver resolver(root, locator, warnings);
  std::vector<std::string> path;
  return resolver.Walk(root, &path);
}

}  // namespace iomimic::config::internal
