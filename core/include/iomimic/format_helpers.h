// iomimic plugin SDK: small helpers for writing a format plugin. Optional:
// nothing in the core depends on them (see docs/plugins.md).

#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "iomimic/format.h"
#include "iomimic/guard.h"
#include "iomimic/plugin.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic {

// A plugin factory for a Format built by its default constructor, for a
// plugin without options:
//   IOMIMIC_DEFINE_FORMAT_PLUGIN("mine", "1.0.0", "...", caps, IOMIMIC_NO_OPTIONS,
//                                &iomimic::MakeDefaultFormat<MyFormat>);
template <typename FormatT>
Result<std::unique_ptr<Format>> MakeDefaultFormat(const PluginContext& context) {
  (void)context;
  return std::unique_ptr<Format>(std::make_unique<FormatT>());
}

// Appends `bytes` to a chunked output `sink`: a writer's buffer that offers
// a non-empty window to fill (std::span<std::byte> Writable()) and is told
// how much of it was filled (Status Commit(std::size_t n), which may write a
// full chunk out). Copies window by window until every byte is committed;
// the first error of Commit.
template <typename Sink>
Status AppendToSink(Sink& sink, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    std::span<std::byte> window = sink.Writable();
    const std::size_t n = std::min(window.size(), bytes.size());
    std::memcpy(window.data(), bytes.data(), n);
    IOMIMIC_RETURN_IF_ERROR(sink.Commit(n));
    bytes = bytes.subspan(n);
  }
  return Status::OK();
}

// The kOutOfRange of a reader asked for sample `index` of a file of `count`
// samples: "<path>: sample index <index> is out of range (<holder> has
// <count> <unit>)", holder "the file" or "the index", unit "samples" or
// "records".
inline Status SampleIndexOutOfRange(const std::string& path, std::uint64_t index,
                                    std::uint64_t count, std::string_view holder = "the file",
                                    std::string_view unit = "samples") {
  return Status::OutOfRange(path + ": sample index " + std::to_string(index) +
                            " is out of range (" + std::string(holder) + " has " +
                            std::to_string(count) + " " + std::string(unit) + ")");
}

// The body of a reader's static Open: kInvalidArgument "<who>:
// ReaderOptions.storage is null (opening <path>)" for options without a
// storage, else `open` (a callable taking no arguments and returning
// Result<std::unique_ptr<FileReader>>) run under Guard(who, "opening", path),
// so that what it throws becomes an error (iomimic/guard.h).
template <typename F>
Result<std::unique_ptr<FileReader>> OpenReaderGuarded(std::string_view who, const std::string& path,
                                                      const ReaderOptions& options, F&& open) {
  if (options.storage == nullptr) {
    return Status::InvalidArgument(std::string(who) + ": ReaderOptions.storage is null (opening " +
                                   path + ")");
  }
  return Guard(who, "opening", path, std::forward<F>(open));
}

// The body of a reader's ReadSample: `read` (a callable taking no arguments
// and returning Result<SampleView>) run under Guard(who, "reading", path).
// When it fails with another code than kOutOfRange, or throws, `abort` (no
// arguments, must not throw) runs first, so that a failed load leaves nothing
// half-open and the next call starts afresh.
template <typename Read, typename Abort>
Result<SampleView> ReadSampleGuarded(std::string_view who, const std::string& path, Read&& read,
                                     Abort&& abort) {
  return Guard(
      who, "reading", path,
      [&]() -> Result<SampleView> {
        Result<SampleView> sample = read();
        if (!sample.ok() && sample.status().code() != StatusCode::kOutOfRange) abort();
        return sample;
      },
      abort);
}

// Opens `path` of `storage` for reading with access `hint` (other
// OpenOptions at their defaults). A failure keeps the storage's code, with
// "<who>: opening <path>" as context.
inline Result<std::unique_ptr<File>> OpenForReading(Storage& storage, const std::string& path,
                                                    AccessHint hint, std::string_view who) {
  OpenOptions options;
  options.mode = OpenMode::kRead;
  options.hint = hint;
  Result<std::unique_ptr<File>> opened = storage.Open(path, options);
  if (!opened.ok()) return opened.status().WithContext(std::string(who) + ": opening " + path);
  return opened;
}

}  // namespace iomimic
