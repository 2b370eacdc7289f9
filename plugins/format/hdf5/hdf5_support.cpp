#include "hdf5_support.h"

#include <algorithm>
#include <exception>
#include <new>

namespace iomimic::hdf5 {
namespace {

std::recursive_mutex& FallbackMutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

bool QueryThreadSafety() {
  hbool_t safe = 0;
  if (H5is_library_threadsafe(&safe) < 0) return false;
  return safe != 0;
}

std::string MessageText(hid_t id) {
  if (id < 0) return {};
  char buf[256];
  H5E_type_t type;
  const ssize_t n = H5Eget_msg(id, &type, buf, sizeof(buf));
  if (n <= 0) return {};
  return std::string(buf, static_cast<std::size_t>(std::min<ssize_t>(n, sizeof(buf) - 1)));
}

herr_t CollectEntry(unsigned /*n*/, const H5E_error2_t* error, void* data) {
  auto* stack = static_cast<ErrorStack*>(data);
  try {
    ErrorEntry entry;
    if (error->func_name != nullptr) entry.function = error->func_name;
    if (error->desc != nullptr) entry.description = error->desc;
    entry.major_id = error->maj_num;
    entry.minor_id = error->min_num;
    entry.minor = MessageText(error->min_num);
    stack->entries.push_back(std::move(entry));
  } catch (const std::exception&) {
    return -1;  // stops the walk; what was collected stays
  }
  return 0;
}

}  // namespace

bool LibraryIsThreadSafe() {
  static const bool safe = QueryThreadSafety();
  return safe;
}

ApiLock::ApiLock() {
  if (!LibraryIsThreadSafe()) {
    FallbackMutex().lock();
    locked_ = true;
  }
}

ApiLock::~ApiLock() {
  if (locked_) FallbackMutex().unlock();
}

void QuietErrors() {
  thread_local bool quiet = false;
  if (quiet) return;
  if (H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0) quiet = true;
}

bool Handle::Close() {
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  if (id < 0) return true;
  herr_t rc = -1;
  switch (H5Iget_type(id)) {
    case H5I_FILE:
      rc = H5Fclose(id);
      break;
    case H5I_GROUP:
      rc = H5Gclose(id);
      break;
    case H5I_DATASET:
      rc = H5Dclose(id);
      break;
    case H5I_DATASPACE:
      rc = H5Sclose(id);
      break;
    case H5I_DATATYPE:
      rc = H5Tclose(id);
      break;
    case H5I_GENPROP_LST:
      rc = H5Pclose(id);
      break;
    case H5I_ATTR:
      rc = H5Aclose(id);
      break;
    default:
      rc = H5Idec_ref(id) < 0 ? -1 : 0;
      break;
  }
  return rc >= 0;
}

bool ErrorStack::Has(hid_t minor) const {
  return std::any_of(entries.begin(), entries.end(),
                     [minor](const ErrorEntry& e) { return e.minor_id == minor; });
}

bool ErrorStack::HasMajor(hid_t major) const {
  return std::any_of(entries.begin(), entries.end(),
                     [major](const ErrorEntry& e) { return e.major_id == major; });
}

std::string ErrorStack::Find(const std::string& text) const {
  for (const ErrorEntry& e : entries) {
    if (e.description.find(text) != std::string::npos) return e.description;
  }
  return {};
}

std::string ErrorStack::Summary(std::size_t depth) const {
  std::string out;
  std::vector<const std::string*> seen;
  for (const ErrorEntry& e : entries) {
    if (seen.size() >= depth) break;
    const std::string& text = e.description.empty() ? e.minor : e.description;
    if (text.empty()) continue;
    if (std::any_of(seen.begin(), seen.end(), [&](const std::string* s) { return *s == text; })) {
      continue;
    }
    seen.push_back(&text);
    if (!out.empty()) out += "; ";
    out += text;
  }
  if (out.empty()) out = "unknown HDF5 error";
  return out;
}

ErrorStack TakeErrorStack() {
  ErrorStack stack;
  try {
    (void)H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &CollectEntry, &stack);
  } catch (const std::bad_alloc&) {
    // Keep what was collected.
  }
  (void)H5Eclear2(H5E_DEFAULT);
  return stack;
}

std::string DimsText(std::span<const hsize_t> dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += dims[i] == H5S_UNLIMITED ? std::string("None") : std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

}  // namespace iomimic::hdf5
