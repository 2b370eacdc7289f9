// Test storages shared by the indexed_binary and mmap_indexed_binary tests:
// the SDK's in-memory storage (with a storage handing out "device" buffers) and
// a minimal POSIX storage for real files. Test code only.

#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/device_memory_storage.h"
#include "iomimic/testing/memory_storage.h"
#include "iomimic/testing/posix_test_storage.h"

namespace iomimic::indexed_binary::testing {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// An in-memory storage that records every request.

// The SDK's in-memory test storage (iomimic/testing/memory_storage.h).
using MemStorage = ::iomimic::testing::MemoryStorage;
using Request = ::iomimic::testing::StorageRequest;

// Hands out "device" buffers over a MemStorage, like a GPU staging back end
// (the SDK's iomimic/testing/device_memory_storage.h).
using DeviceMemStorage = ::iomimic::testing::DeviceMemoryStorage;

// ---------------------------------------------------------------------------
// A minimal POSIX storage for real files.

// Real files: the SDK's test storage (iomimic/testing/posix_test_storage.h).
using ::iomimic::testing::PosixFile;
using ::iomimic::testing::PosixStorage;
using ::iomimic::testing::TempDir;

}  // namespace iomimic::indexed_binary::testing
