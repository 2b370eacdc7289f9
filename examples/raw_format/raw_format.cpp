// `raw`: a small format plugin, the format twin of examples/memory_storage.
//
// A file is a header and the samples, each sample_bytes long, one after
// another:
//
//   offset 0   8 bytes  magic "IOMIRAW1"
//   offset 8   uint64   bytes of one sample (little-endian)
//   offset 16  uint64   number of samples
//   offset 24  uint64   bytes of the header, H (0: 32, the smallest)
//   offset 32  zeros up to H
//   offset H   the samples' bytes, from spec.PayloadContent()
//
// H is the manifest key dataset.raw.header_bytes, which this plugin declares
// itself (kKeys below): the core checks its type, lists it in `iomimic config
// --keys` and hands it over as the option "raw.header_bytes", with no change
// to the core (docs/plugins.md, "Declared dataset keys").
//
// It shows the parts of the format contract (iomimic/format.h,
// docs/plugins.md) a plugin author meets first:
// - the reader learns the file's shape from the file itself (OpenReader is
//   given a path, not the FileSpec), here from the header;
// - every byte goes through the Storage and File it is handed; buffers the
//   CPU fills come from AllocateHostBuffer, because a back end may hand out
//   device memory; sample buffers read into and never parsed come from
//   Storage::Allocate and may be device memory;
// - damage is an error value naming the path and the offset, never a crash,
//   and no exception leaves the plugin (Guard, iomimic/guard.h);
// - the Format is shared by all threads (it keeps no mutable state); a
//   FileReader is used by one thread at a time;
// - writing in parts (WriteFrame + FillPayload) gives WriteFile's bytes.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "iomimic/iomimic.h"

namespace {

using iomimic::Buffer;
using iomimic::File;
using iomimic::FileSpec;
using iomimic::OpenMode;
using iomimic::Result;
using iomimic::SampleView;
using iomimic::Status;
using iomimic::Storage;

constexpr char kMagic[8] = {'I', 'O', 'M', 'I', 'R', 'A', 'W', '1'};
constexpr std::uint64_t kHeaderBytes = 32;          // the smallest header
constexpr std::uint64_t kMaxHeaderBytes = 1 << 20;  // the largest
constexpr std::size_t kChunk = 1 << 20;             // payload written in 1 MiB pieces

void PutU64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint64_t GetU64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

class RawReader final : public iomimic::FileReader {
 public:
  RawReader(std::unique_ptr<File> file, Storage* storage, std::uint64_t header_bytes,
            std::uint64_t sample_bytes, std::uint64_t count, bool keep)
      : file_(std::move(file)),
        storage_(storage),
        header_bytes_(header_bytes),
        sample_bytes_(sample_bytes),
        count_(count),
        keep_(keep) {}

  std::uint64_t num_samples() const override { return count_; }

  // One ranged read per sample (read_type on_demand), or the whole payload
  // once (read_type memory).
  Result<SampleView> ReadSample(std::uint64_t index) override {
    return iomimic::Guard("raw", "reading a sample of", file_->path(), [&]() -> Result<SampleView> {
      if (index >= count_) {
        return Status::OutOfRange(file_->path() + ": sample " + std::to_string(index) +
                                  " is out of range (the file has " + std::to_string(count_) +
                                  " samples)");
      }
      if (keep_) {
        if (buffer_.empty() && count_ * sample_bytes_ > 0) {
          IOMIMIC_RETURN_IF_ERROR(Load(header_bytes_, count_ * sample_bytes_));
        }
        return SampleView{buffer_.span().subspan(index * sample_bytes_, sample_bytes_),
                          sample_bytes_};
      }
      IOMIMIC_RETURN_IF_ERROR(Load(header_bytes_ + index * sample_bytes_, sample_bytes_));
      return SampleView{buffer_.span().first(sample_bytes_), sample_bytes_};
    });
  }

  Result<std::vector<iomimic::ByteRange>> SampleRanges(std::uint64_t index) override {
    if (index >= count_) return Status::OutOfRange(file_->path() + ": no such sample");
    return std::vector<iomimic::ByteRange>{{header_bytes_ + index * sample_bytes_, sample_bytes_}};
  }
  File* data_file() override { return file_.get(); }

 private:
  // Reads `length` bytes at `offset` into buffer_ (allocated by the storage:
  // never parsed here, so device memory is fine).
  Status Load(std::uint64_t offset, std::uint64_t length) {
    if (buffer_.size() < length) {
      IOMIMIC_ASSIGN_OR_RETURN(buffer_, storage_->Allocate(length));
    }
    IOMIMIC_ASSIGN_OR_RETURN(std::size_t n, file_->ReadAt(offset, buffer_.span().first(length)));
    if (n != length) {
      return Status::Corruption(file_->path() + ": truncated file: " + std::to_string(length) +
                                " bytes wanted at offset " + std::to_string(offset) + ", " +
                                std::to_string(n) + " there");
    }
    return Status::OK();
  }

  std::unique_ptr<File> file_;
  Storage* storage_;
  std::uint64_t header_bytes_;
  std::uint64_t sample_bytes_;
  std::uint64_t count_;
  bool keep_;
  Buffer buffer_;
};

class RawFormat final : public iomimic::Format {
 public:
  explicit RawFormat(std::uint64_t header_bytes) : header_bytes_(header_bytes) {}
  std::string name() const override { return "raw"; }

  iomimic::FormatTraits traits() const override {
    iomimic::FormatTraits t;
    t.extension = "raw";
    t.multi_sample_files = true;
    t.partial_reads = true;
    t.needs_host_decode = false;
    t.predictable_size = true;
    return t;
  }

  Status Validate(const FileSpec& spec) const override {
    if (spec.num_samples == 0 || spec.sample_shape.empty() || spec.sample_elements() == 0) {
      return Status::InvalidArgument(
          "raw: a file needs at least one sample of at least one "
          "element");
    }
    if (spec.compression != "none") {
      return Status::NotSupported("raw: compression '" + spec.compression + "' is not supported");
    }
    return Status::OK();
  }

  Result<std::uint64_t> ExpectedFileSize(const FileSpec& spec) const override {
    IOMIMIC_RETURN_IF_ERROR(Validate(spec));
    return header_bytes_ + spec.num_samples * spec.sample_bytes();
  }

  Status WriteFile(Storage& storage, File& file, const FileSpec& spec) override {
    return iomimic::Guard("raw", "writing", spec.path, [&]() -> Status {
      IOMIMIC_ASSIGN_OR_RETURN(iomimic::PayloadLayout layout, WriteFrame(storage, file, spec));
      const std::size_t chunk =
          static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, layout.payload_bytes));
      IOMIMIC_ASSIGN_OR_RETURN(Buffer buffer, iomimic::AllocateHostBuffer(storage, chunk, "raw"));
      iomimic::ContentStream content = spec.PayloadContent();
      for (std::uint64_t done = 0; done < layout.payload_bytes;) {
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(chunk, layout.payload_bytes - done));
        content.Fill(buffer.span().first(n));
        IOMIMIC_RETURN_IF_ERROR(file.WriteAt(layout.payload_offset + done, buffer.span().first(n)));
        done += n;
      }
      return Status::OK();
    });
  }

  Status CanWriteInParts(const FileSpec& spec) const override { return Validate(spec); }

  Result<iomimic::PayloadLayout> WriteFrame(Storage& storage, File& file,
                                            const FileSpec& spec) override {
    IOMIMIC_RETURN_IF_ERROR(Validate(spec));
    const std::size_t size = static_cast<std::size_t>(header_bytes_);
    IOMIMIC_ASSIGN_OR_RETURN(Buffer header, iomimic::AllocateHostBuffer(storage, size, "raw"));
    std::memset(header.data(), 0, size);
    std::memcpy(header.data(), kMagic, sizeof(kMagic));
    PutU64(header.data() + 8, spec.sample_bytes());
    PutU64(header.data() + 16, spec.num_samples);
    PutU64(header.data() + 24, header_bytes_);
    IOMIMIC_RETURN_IF_ERROR(file.WriteAt(0, header.span().first(size)));
    iomimic::PayloadLayout layout;
    layout.payload_offset = header_bytes_;
    layout.payload_bytes = spec.num_samples * spec.sample_bytes();
    layout.file_size = header_bytes_ + layout.payload_bytes;
    return layout;
  }

  Status FillPayload(const FileSpec& spec, std::uint64_t position,
                     std::span<std::byte> out) const override {
    spec.PayloadContent(position).Fill(out);
    return Status::OK();
  }

  Result<std::unique_ptr<iomimic::FileReader>> OpenReader(
      const std::string& path, const iomimic::ReaderOptions& options) override {
    return iomimic::Guard(
        "raw", "opening", path, [&]() -> Result<std::unique_ptr<iomimic::FileReader>> {
          if (options.storage == nullptr)
            return Status::InvalidArgument("raw: no storage to read from");
          Storage& storage = *options.storage;
          IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                                   storage.Open(path, {OpenMode::kRead}));
          // The header is parsed on the CPU: host memory whatever the back end.
          IOMIMIC_ASSIGN_OR_RETURN(Buffer header,
                                   iomimic::AllocateHostBuffer(storage, kHeaderBytes, "raw"));
          IOMIMIC_ASSIGN_OR_RETURN(std::size_t n,
                                   file->ReadAt(0, header.span().first(kHeaderBytes)));
          if (n < kHeaderBytes) {
            return Status::Corruption(path + ": truncated header: " + std::to_string(n) +
                                      " bytes at offset 0, 32 needed");
          }
          if (std::memcmp(header.data(), kMagic, sizeof(kMagic)) != 0) {
            return Status::Corruption(path + ": not a raw file (bad magic at offset 0)");
          }
          const std::uint64_t sample_bytes = GetU64(header.data() + 8);
          const std::uint64_t count = GetU64(header.data() + 16);
          const std::uint64_t stored = GetU64(header.data() + 24);
          const std::uint64_t header_bytes = stored == 0 ? kHeaderBytes : stored;
          if (header_bytes < kHeaderBytes || header_bytes > kMaxHeaderBytes || sample_bytes == 0 ||
              (count != 0 && sample_bytes > (UINT64_MAX - header_bytes) / count)) {
            return Status::Corruption(path + ": bad header field at offset 8..31");
          }
          IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t size, file->Size());
          const std::uint64_t want = header_bytes + sample_bytes * count;
          if (size != want) {
            return Status::Corruption(
                path + ": the header (offset 8) says " + std::to_string(count) + " samples of " +
                std::to_string(sample_bytes) + " bytes, " + std::to_string(want) +
                " bytes in all, but the file ends at offset " + std::to_string(size));
          }
          return std::unique_ptr<iomimic::FileReader>(new RawReader(std::move(file), &storage,
                                                                    header_bytes, sample_bytes,
                                                                    count, options.keep_in_memory));
        });
  }

 private:
  std::uint64_t header_bytes_;
};

// The keys this plugin adds to the manifest, below dataset.raw.
const IomimicOptionSpec kKeys[] = {
    {"header_bytes", "int", "32",
     "bytes of each file's header before the first sample, 32 to 1048576"},
};

Result<std::unique_ptr<iomimic::Format>> Create(const iomimic::PluginContext& ctx) {
  // A declared key reaches the plugin as the option "<plugin>.<key>"; the
  // core has checked that it is an integer, the range is the plugin's to say.
  IOMIMIC_ASSIGN_OR_RETURN(
      const std::int64_t header_bytes,
      ctx.options.GetInt("raw.header_bytes", static_cast<std::int64_t>(kHeaderBytes)));
  if (header_bytes < static_cast<std::int64_t>(kHeaderBytes) ||
      header_bytes > static_cast<std::int64_t>(kMaxHeaderBytes)) {
    return Status::InvalidArgument("dataset.raw.header_bytes " + std::to_string(header_bytes) +
                                   " is out of range (32 to 1048576)");
  }
  return std::unique_ptr<iomimic::Format>(new RawFormat(static_cast<std::uint64_t>(header_bytes)));
}

}  // namespace

IOMIMIC_DEFINE_FORMAT_PLUGIN_WITH_KEYS(
    "raw", "1.0.0",
    "fixed-size samples after a header of dataset.raw.header_bytes (example plugin)",
    IOMIMIC_CAP_PARTIAL_READS | IOMIMIC_CAP_MULTI_SAMPLE, IOMIMIC_NO_OPTIONS, kKeys, &Create);
