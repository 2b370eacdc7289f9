// iomimic plugin SDK: keeping exceptions inside a plugin.
//
// No exception may cross a plugin boundary (status.h). Plugin code that calls
// throwing code (the standard library's containers and strings, codecs
// written in C++) wraps the call in Guard, which turns whatever is thrown into
// an error Status naming the plugin, the operation and the object:
//
//   return Guard("myformat", "writing", spec.path, [&] { return WriteImpl(spec); });
//
//   std::bad_alloc   -> kResourceExhausted "myformat: out of memory writing <path>"
//   std::exception e -> kInternal          "myformat: writing <path>: <e.what()>"
//   anything else    -> kInternal          "myformat: writing <path>: unknown exception"
//
// An empty `object` leaves it (and the space before it) out:
// Guard("myformat", "validating a file spec", "", ...) reports
// "myformat: out of memory validating a file spec". The messages are only built
// when something was thrown, so a Guard costs nothing on the normal path.

#pragma once

#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "iomimic/status.h"

namespace iomimic {

namespace guard_internal {

// "<what>" or "<what> <object>".
inline std::string Subject(std::string_view what, std::string_view object) {
  std::string out(what);
  if (!object.empty()) {
    out += ' ';
    out += object;
  }
  return out;
}

// "<plugin>: " or "" for an empty plugin name.
inline std::string Prefix(std::string_view plugin) {
  return plugin.empty() ? std::string() : std::string(plugin) + ": ";
}

}  // namespace guard_internal

// Runs `body` (a callable taking no arguments and returning a Status or a
// Result<T>) and returns what it returns. If `body` throws, calls
// `on_exception()` first (for clean-up that only the exceptional path needs;
// it must not throw) and then returns the error described in the header
// comment. `plugin` may be empty, then the message has no "<plugin>: " prefix.
// Nothing escapes: every exception type is caught.
template <typename F, typename OnException>
auto Guard(std::string_view plugin, std::string_view what, std::string_view object, F&& body,
           OnException&& on_exception) -> decltype(body()) {
  try {
    return std::forward<F>(body)();
  } catch (const std::bad_alloc&) {
    on_exception();
    return Status::ResourceExhausted(guard_internal::Prefix(plugin) + "out of memory " +
                                     guard_internal::Subject(what, object));
  } catch (const std::exception& e) {
    on_exception();
    return Status::Internal(guard_internal::Prefix(plugin) + guard_internal::Subject(what, object) +
                            ": " + e.what());
  } catch (...) {
    on_exception();
    return Status::Internal(guard_internal::Prefix(plugin) + guard_internal::Subject(what, object) +
                            ": unknown exception");
  }
}

// As above, with nothing to clean up when `body` throws.
template <typename F>
auto Guard(std::string_view plugin, std::string_view what, std::string_view object, F&& body)
    -> decltype(body()) {
  return Guard(plugin, what, object, std::forward<F>(body), [] {});
}

}  // namespace iomimic
