// Small helpers around the HDF5 C library: owned identifiers, error stacks
// turned into text, and the lock that serialises HDF5 calls.
//
// Thread safety. Debian's serial libhdf5 is built thread-safe: every API call
// takes one global recursive lock, so concurrent reader and generator threads
// are correct but their HDF5 calls (and the storage requests the virtual file
// driver makes inside them) run one at a time. ApiLock adds a process-wide
// mutex around whole plugin operations only when the library reports that it
// is NOT thread-safe, so the plugin stays correct with such builds too.
//
// Error reporting. HDF5 prints its error stack to stderr on every failure by
// default. The stack and its "auto" print setting are per thread in a
// thread-safe build, so every plugin entry point calls QuietErrors() (cheap
// after the first call on a thread) and failures are read back with
// TakeErrorStack() and turned into iomimic::Status messages.

#pragma once

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace iomimic::hdf5 {

// A shape as Python prints the tuple h5py gives: "(3, 4)", "(5,)", None
// for an unlimited dimension.
std::string DimsText(std::span<const hsize_t> dims);

// True when the loaded libhdf5 serialises its API calls itself.
bool LibraryIsThreadSafe();

// Held for the duration of one plugin operation; locks a process-wide mutex
// only when the library is not thread-safe. Recursive, so nested operations
// of the same thread are fine.
class ApiLock {
 public:
  ApiLock();
  ~ApiLock();
  ApiLock(const ApiLock&) = delete;
  ApiLock& operator=(const ApiLock&) = delete;

 private:
  bool locked_ = false;
};

// Turns off HDF5's automatic error printing for the calling thread.
void QuietErrors();

// An owned HDF5 identifier (file, dataset, dataspace, datatype, property
// list, group), closed with the function for its type. Move-only.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      Reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  ~Handle() { Reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

  // Closes the identifier. Returns false when HDF5 reported an error (the
  // identifier is released either way). True for an empty handle.
  bool Close();
  // Closes, ignoring errors.
  void Reset() { (void)Close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// One entry of an HDF5 error stack.
struct ErrorEntry {
  std::string function;     // HDF5 function that pushed it
  std::string description;  // its message
  std::string minor;        // text of the minor error code
  hid_t major_id = H5I_INVALID_HID;
  hid_t minor_id = H5I_INVALID_HID;
};

// The calling thread's HDF5 error stack, innermost (most specific) first.
struct ErrorStack {
  std::vector<ErrorEntry> entries;

  bool empty() const { return entries.empty(); }
  // True when some entry carries the minor code `minor` (e.g. H5E_TRUNCATED).
  bool Has(hid_t minor) const;
  // True when some entry carries the major code `major` (e.g. H5E_PLUGIN).
  bool HasMajor(hid_t major) const;
  // The first (innermost) description containing `text`, or "".
  std::string Find(const std::string& text) const;
  // One line: the innermost descriptions (at most `depth`), most specific
  // first, separated by "; ", duplicates dropped.
  std::string Summary(std::size_t depth = 3) const;
};

// Reads the calling thread's default error stack and clears it.
ErrorStack TakeErrorStack();

}  // namespace iomimic::hdf5
