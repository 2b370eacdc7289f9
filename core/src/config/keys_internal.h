// The manifest's keys as data: config/key_table.h's rows, each with its
// schema (KeySpec) and a reference to the Config member that holds it. The
// converter (convert.cpp), the emitter (emit.cpp), the unknown-key checks and
// suggestions (schema.cpp) and docs/manifest.md (KeysMarkdown) all walk this
// one table.

#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "config/config.h"

namespace iomimic::config::internal {

using Words = std::vector<std::string_view>;

enum class ValueType {
  kBool,
  kUInt,
  kInt,
  kNumber,
  kText,
  kChoice,    // one of `choices`
  kPlugin,    // a plugin name (checked against the loaded plugins later)
  kDtype,     // a NumPy dtype name
  kShuffle,   // off, seed, random (and DLIO's spellings)
  kReadType,  // on_demand, memory
  kUIntList,
  kTextList,
  kTextMap,     // a map of free keys (plugin options, DLIO's storage_options)
  kTime,        // seconds or a distribution, with a sibling <key>_stdev
  kPresence,    // a section enabled by its presence (or true/false)
  kRecordList,  // a list of maps with the fields `fields` (the first required)
};

// Who defined the key.
enum class Origin { kDlio, kMlperf, kIomimic };

inline constexpr std::uint64_t kNoMax = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::int64_t kNoMin = std::numeric_limits<std::int64_t>::min();
inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();
inline constexpr double kNoLimitMin = -std::numeric_limits<double>::infinity();

// A key's schema. Built with the vocabulary of key_table.h: a type function
// (UInt(0, kNoMax), Choice(kFrameworks), ...) and modifiers that each return
// a modified copy.
struct KeySpec {
  ValueType type = ValueType::kText;
  std::uint64_t umin = 0, umax = kNoMax;  // kUInt, kUIntList (umin)
  std::int64_t imin = kNoMin, imax = std::numeric_limits<std::int64_t>::max();  // kInt
  double dmin = kNoLimitMin, dmax = kNoLimit;                                   // kNumber
  const Words* choices = nullptr;                                               // kChoice
  const Words* fields = nullptr;                                                // kRecordList
  std::string_view stdev_key;                                                   // kTime
  bool nullable = false;                // null leaves the default
  bool non_empty = false;               // kText: "" is an error
  bool allow_empty = false;             // kPlugin: "" allowed (inherit)
  bool null_is_zero = false;            // kUIntList: null elements read as 0
  bool null_when_empty = false;         // emitted as null when "" (DLIO's None)
  bool omit_when_empty = false;         // not emitted when "" (DLIO rejects its null)
  bool null_when_zero = false;          // emitted as null when 0
  bool strip_slashes = false;           // trailing '/' removed
  bool by_rule = false;                 // no Config member: a rule in convert.cpp uses it
  bool format_param = false;            // passed to the format (FileSpec::parameters)
  bool ReaderConfig::*given = nullptr;  // set when present; emitted only then
  std::string_view legacy;              // DLIO's older spelling of the path
  Origin origin = Origin::kDlio;
  std::string_view doc;

  KeySpec Nullable() const { return With(&KeySpec::nullable); }
  KeySpec NonEmpty() const { return With(&KeySpec::non_empty); }
  KeySpec AllowEmpty() const { return With(&KeySpec::allow_empty); }
  KeySpec NullIsZero() const { return With(&KeySpec::null_is_zero); }
  KeySpec NullWhenEmpty() const { return With(&KeySpec::null_when_empty); }
  KeySpec OmitWhenEmpty() const { return With(&KeySpec::omit_when_empty); }
  KeySpec NullWhenZero() const { return With(&KeySpec::null_when_zero); }
  KeySpec StripSlashes() const { return With(&KeySpec::strip_slashes); }
  KeySpec FormatParam() const { return With(&KeySpec::format_param); }
  KeySpec ByRule() const { return With(&KeySpec::by_rule); }
  KeySpec EmitIfGiven(bool ReaderConfig::*flag) const {
    KeySpec k = *this;
    k.given = flag;
    return k;
  }
  KeySpec Legacy(std::string_view path) const {
    KeySpec k = *this;
    k.legacy = path;
    return k;
  }
  KeySpec Mlperf() const {
    KeySpec k = *this;
    k.origin = Origin::kMlperf;
    return k;
  }
  KeySpec Iomimic() const {
    KeySpec k = *this;
    k.origin = Origin::kIomimic;
    return k;
  }
  KeySpec Doc(std::string_view text) const {
    KeySpec k = *this;
    k.doc = text;
    return k;
  }

 private:
  KeySpec With(bool KeySpec::*flag) const {
    KeySpec k = *this;
    k.*flag = true;
    return k;
  }
};

// Where a key's value lives in a Config; monostate for keys that are only
// accepted and checked.
using FieldRef = std::variant<
    std::monostate, bool& (*)(Config&), std::uint64_t& (*)(Config&), std::int64_t& (*)(Config&),
    int& (*)(Config&), double& (*)(Config&), std::string& (*)(Config&), UIntVector& (*)(Config&),
    std::vector<std::string>& (*)(Config&), TextMap& (*)(Config&), Distribution& (*)(Config&),
    ShuffleMode& (*)(Config&), ReadType& (*)(Config&), RecordList& (*)(Config&)>;

struct KeyDef {
  std::string path;  // dotted, from the workload root: "dataset.hdf5.chunk_dims"
  KeySpec spec;
  FieldRef field;
};

// Calls `f` with the value of `key` in `config` (a const reference of its
// member's type); does nothing for a key that is only accepted (no member).
template <typename F>
void VisitValue(const KeyDef& key, const Config& config, F&& f) {
  Config& c = const_cast<Config&>(config);  // the accessors only read here
  std::visit(
      [&](auto&& get) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(get)>, std::monostate>) {
          f(std::as_const(get(c)));
        }
      },
      key.field);
}

// Every key, in the table's order (DLIO's section order).
const std::vector<KeyDef>& Keys();

// The row of `path`, or null.
const KeyDef* FindKeyDef(std::string_view path);

// The word lists of choice keys (also used in messages).
extern const Words kDistributionTypes;
extern const Words kReadTypes;

// docs/manifest.md: every key with its type, default, origin and
// documentation, by section.
std::string KeysMarkdown();

// `text` for a cell of a docs/manifest.md table: '<' and '>' as entities,
// '|' escaped.
std::string EscapeMarkdown(std::string_view text);

}  // namespace iomimic::config::internal
