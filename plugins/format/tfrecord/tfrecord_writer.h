// Writing TFRecord files the way DLIO's tf_generator does: one
// tf.train.Example per sample (features "image" and "size", see
// example_wire.h) written with TFRecordWriter's framing, followed by the
// DALI index file that DLIO makes with DALI's tfrecord2idx script.
//
// Content: the "image" bytes of sample i are bytes [i * sample_bytes(),
// (i + 1) * sample_bytes()) of spec.PayloadContent() (seed and content
// options; bool samples keep the lowest bit of each byte), so the content
// options' 4 KiB blocks count from the first sample's first image byte, not
// from the file's start. "size" holds the byte count.
//
// Index file: `<data_folder>/index/<split>/<file name>.idx`, one line
// "<offset> <length>\n" per record, where offset is the record's first byte
// (its length field) and length is the whole framed record (16 + payload),
// exactly as tfrecord2idx writes it. <data_folder> and <split> ("train" or
// "valid") come from the data path <data_folder>/<split>/[<sub>/]<name>; like
// DLIO the index folder is flat (no subfolders). A data path that does not
// follow that layout gets its index in `<its folder>/index/<name>.idx`. The
// index is written to a hidden temporary name in the same folder and renamed
// into place, so a crash never leaves a partial index under the real name.
//
// All writes go through File::WriteAt in chunk-aligned requests of
// WriterOptions::chunk_size bytes; memory stays at one chunk.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"

namespace iomimic::tfrecord {

struct WriterOptions {
  // Bytes per write request (rounded up to the storage alignment).
  std::size_t chunk_size = std::size_t{4} << 20;
  // Write the DALI index file beside the dataset.
  bool write_index = true;
};

// Protobuf refuses messages of 2 GiB or more, so no Example may be larger.
inline constexpr std::uint64_t kMaxPayloadSize = (std::uint64_t{1} << 31) - 1;

// Where the index file of the data file at `data_path` goes.
struct IndexLocation {
  std::string directory;  // created when missing
  std::string path;       // <directory>/<data file name>.idx
};
IndexLocation IndexLocationFor(const std::string& data_path);

// Checks that `spec` can be written: a non-empty sample shape without zero
// dimensions, at least one sample, an element type with a size, compression
// "none" (kNotSupported otherwise), an Example below 2 GiB and a file size
// that fits in 63 bits.
Status ValidateSpec(const FileSpec& spec);

// The exact size of the data file WriteTfRecordFile produces for `spec`.
Result<std::uint64_t> ComputeFileSize(const FileSpec& spec);

// The payload (serialized Example) size of every record of `spec`.
std::uint64_t RecordPayloadSize(const FileSpec& spec);

// Writes the records of `spec` into `file` (open for writing, empty) and,
// with options.write_index, the index file through `storage`. Never throws.
Status WriteTfRecordFile(Storage& storage, File& file, const FileSpec& spec,
                         const WriterOptions& options);

}  // namespace iomimic::tfrecord
