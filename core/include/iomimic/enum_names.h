// iomimic plugin SDK: the name of an enum value from a table (docs/plugins.md).
//
// An enum whose values count up from 0 (the default numbering) names them
// with a table in the enum's order instead of a switch with a case per
// value:
//
//   enum class Color { kRed, kGreen };
//   constexpr std::string_view kColorNames[] = {"red", "green"};
//   static_assert(std::size(kColorNames) == 2);  // one name per value
//   std::string_view ColorName(Color c) { return EnumName(c, kColorNames, "red"); }
//
// A value outside the table (an integer cast to the enum) answers
// `fallback`, as the `return` after a switch did. Header-only; constexpr.

#pragma once

#include <cstddef>
#include <type_traits>

namespace iomimic {

// names[value] when `value` indexes `names`, else `fallback`.
template <typename Enum, typename Name, std::size_t N>
constexpr Name EnumName(Enum value, const Name (&names)[N], std::type_identity_t<Name> fallback) {
  static_assert(std::is_enum_v<Enum>, "EnumName names the values of an enum");
  // A negative value becomes a large unsigned one, past the table.
  const auto index = static_cast<std::make_unsigned_t<std::underlying_type_t<Enum>>>(value);
  return index < N ? names[index] : fallback;
}

}  // namespace iomimic
