// iomimic plugin SDK, for tests: writes a file the way shared-file
// generation does, in one process, so a format's unit tests can check that
// WriteFrame + FillPayload give the file WriteFile gives. Header-only.

#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::testing {

// Writes `spec`'s file at spec.path on `storage` in parts: the frame first,
// then the payload cut into `pieces` slices of odd sizes, written last slice
// first (so no slice can lean on one written before it), each filled by
// FillPayload from its own position. Returns the layout WriteFrame gave.
inline Result<PayloadLayout> WriteInParts(Format& format, Storage& storage, const FileSpec& spec,
                                          std::uint64_t pieces = 5) {
  IOMIMIC_RETURN_IF_ERROR(format.CanWriteInParts(spec));
  OpenOptions options;
  options.mode = OpenMode::kWrite;
  PayloadLayout layout;
  {
    IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(spec.path, options));
    IOMIMIC_ASSIGN_OR_RETURN(layout, format.WriteFrame(storage, *file, spec));
    IOMIMIC_RETURN_IF_ERROR(file->Close());
  }
  options.mode = OpenMode::kReadWrite;
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file, storage.Open(spec.path, options));
  pieces = std::max<std::uint64_t>(1, pieces);
  // Slice k starts at k * step + k (odd offsets and lengths).
  const std::uint64_t step = layout.payload_bytes / pieces;
  std::vector<std::uint64_t> starts;
  for (std::uint64_t k = 0; k < pieces; ++k) {
    starts.push_back(std::min(layout.payload_bytes, k * step + (k > 0 ? k : 0)));
  }
  starts.push_back(layout.payload_bytes);
  for (std::uint64_t k = pieces; k-- > 0;) {
    const std::uint64_t from = starts[k];
    const std::uint64_t to = std::max(from, starts[k + 1]);
    std::vector<std::byte> bytes(static_cast<std::size_t>(to - from));
    IOMIMIC_RETURN_IF_ERROR(format.FillPayload(spec, from, bytes));
    IOMIMIC_RETURN_IF_ERROR(file->WriteAtAll(layout.payload_offset + from, bytes));
  }
  IOMIMIC_RETURN_IF_ERROR(file->Close());
  return layout;
}

}  // namespace iomimic::testing
