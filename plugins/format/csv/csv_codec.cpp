#include "csv_codec.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "zip/deflate_stream.h"

namespace iomimic::csv {
namespace {

// Staging buffer for decompressed text.
constexpr std::size_t kOutputSize = std::size_t{256} << 10;
// Largest piece handed to a library at once (their counters are 32-bit).
constexpr std::size_t kMaxPiece = std::size_t{1} << 30;

int Clamp(int level, int lo, int hi) { return std::min(std::max(level, lo), hi); }

// ---------------------------------------------------------------------------
// zlib: gzip and raw deflate.

class ZlibCompressor final : public Compressor {
 public:
  Status Init(int window_bits, int level) { return stream_.Init(Clamp(level, 0, 9), window_bits); }
  Status Write(std::span<const std::byte> input, ByteSink& sink) override {
    return stream_.Write(input, sink);
  }
  Status Finish(ByteSink& sink) override { return stream_.Finish(sink); }

 private:
  zip::DeflateStream stream_{"csv", kMaxPiece};
};

class ZlibDecompressor final : public Decompressor {
 public:
  ZlibDecompressor(std::string path, bool gzip) : path_(std::move(path)), gzip_(gzip) {}
  ~ZlibDecompressor() override {
    if (initialized_) inflateEnd(&z_);
  }
  Status Init() {
    std::memset(&z_, 0, sizeof(z_));
    const int rc = inflateInit2(&z_, gzip_ ? 16 + MAX_WBITS : -MAX_WBITS);
    if (rc == Z_MEM_ERROR)
      return Status::ResourceExhausted("csv: zlib inflateInit2: out of memory");
    if (rc != Z_OK) return Status::Internal("csv: zlib inflateInit2 failed: " + std::to_string(rc));
    initialized_ = true;
    buffer_.resize(kOutputSize);
    return Status::OK();
  }
  Status Feed(std::span<const std::byte> input, std::uint64_t offset,
              const TextSink& out) override {
    while (!input.empty()) {
      if (ended_) {
        if (!gzip_) {
          return Status::Corruption(path_ +
                                    ": data after the end of the deflate stream at offset " +
                                    std::to_string(offset));
        }
        inflateReset(&z_);  // another gzip member follows
        ended_ = false;
      }
      const std::size_t piece = std::min(input.size(), kMaxPiece);
      z_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(input.data()));
      z_.avail_in = static_cast<uInt>(piece);
      started_ = true;
      while (z_.avail_in > 0 && !ended_) {
        z_.next_out = reinterpret_cast<Bytef*>(buffer_.data());
        z_.avail_out = static_cast<uInt>(buffer_.size());
        const uInt before = z_.avail_in;
        const int rc = inflate(&z_, Z_NO_FLUSH);
        const std::size_t made = buffer_.size() - z_.avail_out;
        if (rc == Z_STREAM_END) {
          ended_ = true;
        } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
          return Status::Corruption(path_ + ": invalid " + std::string(Name()) + " data (" +
                                    (z_.msg ? z_.msg : "zlib error") + ") at offset " +
                                    std::to_string(offset + (piece - z_.avail_in)));
        } else if (rc == Z_MEM_ERROR) {
          return Status::ResourceExhausted("csv: zlib inflate: out of memory");
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
          return Status::Internal("csv: zlib inflate failed with code " + std::to_string(rc));
        } else if (made == 0 && before == z_.avail_in) {
          return Status::Internal("csv: zlib inflate made no progress at offset " +
                                  std::to_string(offset + (piece - z_.avail_in)));
        }
        if (made > 0) {
          produced_ += made;
          IOMIMIC_RETURN_IF_ERROR(out(std::span<const char>(buffer_.data(), made)));
        }
      }
      const std::size_t used = piece - z_.avail_in;
      offset += used;
      input = input.subspan(used);
    }
    return Status::OK();
  }
  Status Finish(std::uint64_t end, const TextSink& out) override {
    // Drain what zlib still holds (its window) without new input.
    while (started_ && !ended_) {
      z_.next_in = nullptr;
      z_.avail_in = 0;
      z_.next_out = reinterpret_cast<Bytef*>(buffer_.data());
      z_.avail_out = static_cast<uInt>(buffer_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const std::size_t made = buffer_.size() - z_.avail_out;
      if (made > 0) {
        produced_ += made;
        IOMIMIC_RETURN_IF_ERROR(out(std::span<const char>(buffer_.data(), made)));
      }
      if (rc == Z_STREAM_END) ended_ = true;
      if (made == 0 || rc != Z_OK) break;
    }
    if (!ended_) {
      return Status::Corruption(path_ + ": truncated " + std::string(Name()) +
                                " stream: the file ends at offset " + std::to_string(end) +
                                " before the end of the compressed data");
    }
    return Status::OK();
  }
  std::uint64_t produced() const override { return produced_; }

 private:
  const char* Name() const { return gzip_ ? "gzip" : "deflate"; }

  std::string path_;
  bool gzip_;
  z_stream z_{};
  bool initialized_ = false;
  bool started_ = false;
  bool ended_ = false;
  std::uint64_t produced_ = 0;
  std::vector<char> buffer_;
};

// ---------------------------------------------------------------------------
// libbz2.

class Bzip2Compressor final : public Compressor {
 public:
  ~Bzip2Compressor() override {
    if (initialized_) BZ2_bzCompressEnd(&s_);
  }
  Status Init(int level) {
    std::memset(&s_, 0, sizeof(s_));
    const int rc = BZ2_bzCompressInit(&s_, Clamp(level, 1, 9), 0, 0);
    if (rc == BZ_MEM_ERROR)
      return Status::ResourceExhausted("csv: BZ2_bzCompressInit: out of memory");
    if (rc != BZ_OK)
      return Status::Internal("csv: BZ2_bzCompressInit failed: " + std::to_string(rc));
    initialized_ = true;
    return Status::OK();
  }
  Status Write(std::span<const std::byte> input, ByteSink& sink) override {
    while (!input.empty()) {
      const std::size_t piece = std::min(input.size(), kMaxPiece);
      s_.next_in = reinterpret_cast<char*>(const_cast<std::byte*>(input.data()));
      s_.avail_in = static_cast<unsigned>(piece);
      while (s_.avail_in > 0) {
        std::span<std::byte> out = Out(sink);
        const int rc = BZ2_bzCompress(&s_, BZ_RUN);
        if (rc != BZ_RUN_OK) return Failed(rc);
        IOMIMIC_RETURN_IF_ERROR(sink.Commit(out.size() - s_.avail_out));
      }
      input = input.subspan(piece);
    }
    return Status::OK();
  }
  Status Finish(ByteSink& sink) override {
    while (true) {
      std::span<std::byte> out = Out(sink);
      const int rc = BZ2_bzCompress(&s_, BZ_FINISH);
      if (rc != BZ_FINISH_OK && rc != BZ_STREAM_END) return Failed(rc);
      IOMIMIC_RETURN_IF_ERROR(sink.Commit(out.size() - s_.avail_out));
      if (rc == BZ_STREAM_END) return Status::OK();
    }
  }

 private:
  std::span<std::byte> Out(ByteSink& sink) {
    std::span<std::byte> out = sink.Writable();
    out = out.first(std::min(out.size(), kMaxPiece));
    s_.next_out = reinterpret_cast<char*>(out.data());
    s_.avail_out = static_cast<unsigned>(out.size());
    return out;
  }
  static Status Failed(int rc) {
    return Status::Internal("csv: BZ2_bzCompress failed with code " + std::to_string(rc));
  }

  bz_stream s_{};
  bool initialized_ = false;
};

class Bzip2Decompressor final : public Decompressor {
 public:
  explicit Bzip2Decompressor(std::string path) : path_(std::move(path)) {}
  ~Bzip2Decompressor() override { End(); }
  Status Init() {
    buffer_.resize(kOutputSize);
    return Begin();
  }
  Status Feed(std::span<const std::byte> input, std::uint64_t offset,
              const TextSink& out) override {
    while (!input.empty()) {
      if (ended_) {
        End();  // another bz2 stream follows
        IOMIMIC_RETURN_IF_ERROR(Begin());
      }
      const std::size_t piece = std::min(input.size(), kMaxPiece);
      s_.next_in = reinterpret_cast<char*>(const_cast<std::byte*>(input.data()));
      s_.avail_in = static_cast<unsigned>(piece);
      started_ = true;
      while (s_.avail_in > 0 && !ended_) {
        s_.next_out = buffer_.data();
        s_.avail_out = static_cast<unsigned>(buffer_.size());
        const int rc = BZ2_bzDecompress(&s_);
        const std::size_t made = buffer_.size() - s_.avail_out;
        if (rc == BZ_STREAM_END) {
          ended_ = true;
        } else if (rc == BZ_DATA_ERROR || rc == BZ_DATA_ERROR_MAGIC) {
          return Status::Corruption(path_ + ": invalid bz2 data at offset " +
                                    std::to_string(offset + (piece - s_.avail_in)));
        } else if (rc == BZ_MEM_ERROR) {
          return Status::ResourceExhausted("csv: BZ2_bzDecompress: out of memory");
        } else if (rc != BZ_OK) {
          return Status::Internal("csv: BZ2_bzDecompress failed with code " + std::to_string(rc));
        }
        if (made > 0) {
          produced_ += made;
          IOMIMIC_RETURN_IF_ERROR(out(std::span<const char>(buffer_.data(), made)));
        }
      }
      const std::size_t used = piece - s_.avail_in;
      offset += used;
      input = input.subspan(used);
    }
    return Status::OK();
  }
  Status Finish(std::uint64_t end, const TextSink& out) override {
    while (started_ && !ended_) {
      s_.next_in = nullptr;
      s_.avail_in = 0;
      s_.next_out = buffer_.data();
      s_.avail_out = static_cast<unsigned>(buffer_.size());
      const int rc = BZ2_bzDecompress(&s_);
      const std::size_t made = buffer_.size() - s_.avail_out;
      if (made > 0) {
        produced_ += made;
        IOMIMIC_RETURN_IF_ERROR(out(std::span<const char>(buffer_.data(), made)));
      }
      if (rc == BZ_STREAM_END) ended_ = true;
      if (made == 0 || rc != BZ_OK) break;
    }
    if (!ended_) {
      return Status::Corruption(path_ + ": truncated bz2 stream: the file ends at offset " +
                                std::to_string(end) + " before the end of the compressed data");
    }
    return Status::OK();
  }
  std::uint64_t produced() const override { return produced_; }

 private:
  Status Begin() {
    std::memset(&s_, 0, sizeof(s_));
    const int rc = BZ2_bzDecompressInit(&s_, 0, 0);
    if (rc == BZ_MEM_ERROR)
      return Status::ResourceExhausted("csv: BZ2_bzDecompressInit: out of memory");
    if (rc != BZ_OK)
      return Status::Internal("csv: BZ2_bzDecompressInit failed: " + std::to_string(rc));
    initialized_ = true;
    ended_ = false;
    return Status::OK();
  }
  void End() {
    if (initialized_) BZ2_bzDecompressEnd(&s_);
    initialized_ = false;
  }

  std::string path_;
  bz_stream s_{};
  bool initialized_ = false;
  bool started_ = false;
  bool ended_ = false;
  std::uint64_t produced_ = 0;
  std::vector<char> buffer_;
};

// ---------------------------------------------------------------------------
// liblzma (.xz).

class XzCompressor final : public Compressor {
 public:
  ~XzCompressor() override { lzma_end(&s_); }
  Status Init(int level) {
    const lzma_ret rc =
        lzma_easy_encoder(&s_, static_cast<std::uint32_t>(Clamp(level, 0, 9)), LZMA_CHECK_CRC64);
    if (rc == LZMA_MEM_ERROR)
      return Status::ResourceExhausted("csv: lzma_easy_encoder: out of memory");
    if (rc != LZMA_OK)
      return Status::Internal("csv: lzma_easy_encoder failed: " + std::to_string(rc));
    return Status::OK();
  }
  Status Write(std::span<const std::byte> input, ByteSink& sink) override {
    s_.next_in = reinterpret_cast<const std::uint8_t*>(input.data());
    s_.avail_in = input.size();
    while (s_.avail_in > 0) {
      std::span<std::byte> out = Out(sink);
      const lzma_ret rc = lzma_code(&s_, LZMA_RUN);
      if (rc != LZMA_OK) return Failed(rc);
      IOMIMIC_RETURN_IF_ERROR(sink.Commit(out.size() - s_.avail_out));
    }
    return Status::OK();
  }
  Status Finish(ByteSink& sink) override {
    while (true) {
      std::span<std::byte> out = Out(sink);
      const lzma_ret rc = lzma_code(&s_, LZMA_FINISH);
      if (rc != LZMA_OK && rc != LZMA_STREAM_END) return Failed(rc);
      IOMIMIC_RETURN_IF_ERROR(sink.Commit(out.size() - s_.avail_out));
      if (rc == LZMA_STREAM_END) return Status::OK();
    }
  }

 private:
  std::span<std::byte> Out(ByteSink& sink) {
    std::span<std::byte> out = sink.Writable();
    s_.next_out = reinterpret_cast<std::uint8_t*>(out.data());
    s_.avail_out = out.size();
    return out;
  }
  static Status Failed(lzma_ret rc) {
    if (rc == LZMA_MEM_ERROR) return Status::ResourceExhausted("csv: lzma_code: out of memory");
    return Status::Internal("csv: lzma_code failed with code " + std::to_string(rc));
  }

  lzma_stream s_ = LZMA_STREAM_INIT;
};

class XzDecompressor final : public Decompressor {
 public:
  explicit XzDecompressor(std::string path) : path_(std::move(path)) {}
  ~XzDecompressor() override { lzma_end(&s_); }
  Status Init() {
    const lzma_ret rc = lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED);
    if (rc == LZMA_MEM_ERROR)
      return Status::ResourceExhausted("csv: lzma_stream_decoder: out of memory");
    if (rc != LZMA_OK)
      return Status::Internal("csv: lzma_stream_decoder failed: " + std::to_string(rc));
    buffer_.resize(kOutputSize);
    return Status::OK();
  }
  Status Feed(std::span<const std::byte> input, std::uint64_t offset,
              const TextSink& out) override {
    s_.next_in = reinterpret_cast<const std::uint8_t*>(input.data());
    s_.avail_in = input.size();
    while (s_.avail_in > 0) {
      IOMIMIC_RETURN_IF_ERROR(Step(LZMA_RUN, offset + (input.size() - s_.avail_in), out));
      if (ended_ && s_.avail_in > 0) {
        return Status::Corruption(path_ + ": data after the end of the xz stream at offset " +
                                  std::to_string(offset + (input.size() - s_.avail_in)));
      }
    }
    return Status::OK();
  }
  Status Finish(std::uint64_t end, const TextSink& out) override {
    s_.next_in = nullptr;
    s_.avail_in = 0;
    while (!ended_) {
      const std::uint64_t before = produced_;
      Status s = Step(LZMA_FINISH, end, out);
      if (!s.ok() || (!ended_ && produced_ == before)) {
        return Status::Corruption(path_ + ": truncated xz stream: the file ends at offset " +
                                  std::to_string(end) + " before the end of the compressed data" +
                                  (s.ok() ? "" : " (" + s.message() + ")"));
      }
    }
    return Status::OK();
  }
  std::uint64_t produced() const override { return produced_; }

 private:
  Status Step(lzma_action action, std::uint64_t offset, const TextSink& out) {
    s_.next_out = reinterpret_cast<std::uint8_t*>(buffer_.data());
    s_.avail_out = buffer_.size();
    const lzma_ret rc = lzma_code(&s_, action);
    const std::size_t made = buffer_.size() - s_.avail_out;
    if (made > 0) {
      produced_ += made;
      IOMIMIC_RETURN_IF_ERROR(out(std::span<const char>(buffer_.data(), made)));
    }
    switch (rc) {
      case LZMA_OK:
        return Status::OK();
      case LZMA_STREAM_END:
        ended_ = true;
        return Status::OK();
      case LZMA_BUF_ERROR:
        return Status::Corruption(path_ + ": xz stream cannot continue at offset " +
                                  std::to_string(offset));
      case LZMA_MEM_ERROR:
        return Status::ResourceExhausted("csv: lzma_code: out of memory");
      case LZMA_FORMAT_ERROR:
      case LZMA_OPTIONS_ERROR:
      case LZMA_DATA_ERROR:
        return Status::Corruption(path_ + ": invalid xz data (liblzma code " + std::to_string(rc) +
                                  ") at offset " + std::to_string(offset));
      default:
        return Status::Internal("csv: lzma_code failed with code " + std::to_string(rc));
    }
  }

  std::string path_;
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool ended_ = false;
  std::uint64_t produced_ = 0;
  std::vector<char> buffer_;
};

}  // namespace

const char* CodecName(Codec codec) {
  switch (codec) {
    case Codec::kNone:
      return "none";
    case Codec::kGzip:
      return "gzip";
    case Codec::kBzip2:
      return "bz2";
    case Codec::kXz:
      return "xz";
    case Codec::kZip:
      return "zip";
  }
  return "?";
}

Result<Codec> CodecFromName(const std::string& name) {
  if (name.empty() || name == "none") return Codec::kNone;
  if (name == "gzip") return Codec::kGzip;
  if (name == "bz2") return Codec::kBzip2;
  if (name == "xz") return Codec::kXz;
  if (name == "zip") return Codec::kZip;
  return Status::NotSupported("csv: compression '" + name +
                              "' is not supported (csv supports none, gzip, bz2, xz and zip)");
}

Codec SniffCodec(std::span<const std::byte> head) {
  auto starts = [&](std::initializer_list<unsigned char> magic) {
    if (head.size() < magic.size()) return false;
    std::size_t i = 0;
    for (unsigned char m : magic) {
      if (std::to_integer<unsigned char>(head[i++]) != m) return false;
    }
    return true;
  };
  if (starts({0x1f, 0x8b})) return Codec::kGzip;
  if (starts({'B', 'Z', 'h'})) return Codec::kBzip2;
  if (starts({0xfd, '7', 'z', 'X', 'Z', 0x00})) return Codec::kXz;
  if (starts({'P', 'K', 0x03, 0x04}) || starts({'P', 'K', 0x05, 0x06})) return Codec::kZip;
  return Codec::kNone;
}

Result<std::unique_ptr<Compressor>> Compressor::Make(Codec codec, int level) {
  switch (codec) {
    case Codec::kGzip:
    case Codec::kZip: {
      auto c = std::make_unique<ZlibCompressor>();
      IOMIMIC_RETURN_IF_ERROR(c->Init(codec == Codec::kGzip ? 16 + MAX_WBITS : -MAX_WBITS, level));
      return std::unique_ptr<Compressor>(std::move(c));
    }
    case Codec::kBzip2: {
      auto c = std::make_unique<Bzip2Compressor>();
      IOMIMIC_RETURN_IF_ERROR(c->Init(level));
      return std::unique_ptr<Compressor>(std::move(c));
    }
    case Codec::kXz: {
      auto c = std::make_unique<XzCompressor>();
      IOMIMIC_RETURN_IF_ERROR(c->Init(level));
      return std::unique_ptr<Compressor>(std::move(c));
    }
    case Codec::kNone:
      break;
  }
  return Status::Internal("csv: no compressor for codec " + std::string(CodecName(codec)));
}

Result<std::unique_ptr<Decompressor>> Decompressor::Make(Codec codec, const std::string& path) {
  switch (codec) {
    case Codec::kGzip:
    case Codec::kZip: {
      auto d = std::make_unique<ZlibDecompressor>(path, codec == Codec::kGzip);
      IOMIMIC_RETURN_IF_ERROR(d->Init());
      return std::unique_ptr<Decompressor>(std::move(d));
    }
    case Codec::kBzip2: {
      auto d = std::make_unique<Bzip2Decompressor>(path);
      IOMIMIC_RETURN_IF_ERROR(d->Init());
      return std::unique_ptr<Decompressor>(std::move(d));
    }
    case Codec::kXz: {
      auto d = std::make_unique<XzDecompressor>(path);
      IOMIMIC_RETURN_IF_ERROR(d->Init());
      return std::unique_ptr<Decompressor>(std::move(d));
    }
    case Codec::kNone:
      break;
  }
  return Status::Internal("csv: no decompressor for codec " + std::string(CodecName(codec)));
}

}  // namespace iomimic::csv
