// Text <-> value conversions for YAML scalars, typed the way Hydra/OmegaConf
// types a DLIO manifest (YAML 1.1 booleans, decimal integers, floats with
// or without a dot).

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace iomimic::config::internal {

// true/True/TRUE/yes/on (and case variants), 1 -> true; the false words,
// 0 -> false; anything else -> nullopt.
std::optional<bool> ParseBool(std::string_view text);

// A decimal integer with an optional sign and YAML 1.1 '_' separators, or a
// 0x hexadecimal one. nullopt when malformed or out of range.
std::optional<std::int64_t> ParseInt(std::string_view text);
std::optional<std::uint64_t> ParseUInt(std::string_view text);

// A finite number: integer, decimal or exponent notation (1e-3, 2.5E+2).
// nullopt when malformed, infinite or NaN.
std::optional<double> ParseDouble(std::string_view text);

// The shortest text that reads back as `value`, always recognisable as a
// float by YAML 1.1 readers when it uses an exponent (1.0e-05, not 1e-05).
std::string FormatDouble(double value);

// Whether a plain (unquoted) scalar with this text would be read back as
// something other than a string (a boolean, null or a number).
bool LooksLikeNonString(std::string_view text);

// Text with surrounding spaces and tabs removed.
std::string_view Trim(std::string_view text);

}  // namespace iomimic::config::internal
