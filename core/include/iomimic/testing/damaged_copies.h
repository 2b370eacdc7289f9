// iomimic plugin SDK, testing helpers: the damaged files of a format's
// corruption tests. Header-only and free of any test framework, like
// format_test_support.h.

#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/testing/format_test_support.h"
#include "iomimic/testing/memory_storage.h"

namespace iomimic::testing {

// The good bytes of a file, and damaged copies of them written one after
// another as the file `path` of a MemoryStorage, each replacing the last.
class DamagedCopies {
 public:
  DamagedCopies(MemoryStorage& storage, std::string path, std::vector<std::byte> good)
      : storage_(storage), path_(std::move(path)), good_(std::move(good)) {}

  // The good bytes.
  const std::vector<std::byte>& good() const { return good_; }

  // Writes as the file the good bytes changed by `mutate`, which is called
  // with a std::vector<std::byte>& of them.
  template <typename Mutate>
  void Put(Mutate&& mutate) {
    std::vector<std::byte> bytes = good_;
    mutate(bytes);
    storage_.SetBytes(path_, std::move(bytes));
  }

  // Writes as the file the first `keep` good bytes, then opens it with
  // `format` and reads sample 0 (decoding or not); the first error.
  Status ReadTruncated(Format& format, std::size_t keep, bool decode = true) {
    Put([keep](std::vector<std::byte>& bytes) { bytes.resize(keep); });
    return OpenAndRead(format, storage_, path_, decode);
  }

 private:
  MemoryStorage& storage_;
  std::string path_;
  std::vector<std::byte> good_;
};

}  // namespace iomimic::testing
