// The bytes of a TFRecord file, encoded by hand for the write path.
//
// A TFRecord file is a sequence of records, each framed as
//   uint64 length (little endian)
//   uint32 masked CRC-32C of the 8 length bytes
//   length bytes of payload
//   uint32 masked CRC-32C of the payload
// DLIO's payload is a serialized tf.train.Example
//   Example { features: Features { feature: {
//       "image": Feature { bytes_list: BytesList { value: [<sample bytes>] } },
//       "size":  Feature { int64_list: Int64List { value: [<size value>] } } } } }
// Writing the sample through protobuf would copy it twice (into the message,
// then into the serialized string), so the writer emits the protobuf wire
// format itself: everything before the sample bytes (the "prefix") and after
// them (the "suffix") depends only on the sample size and the size value.
// The map entries are in key order ("image", then "size"), which is what
// protobuf's deterministic serialization produces; tests check the bytes
// against Example::SerializeToString for many sizes.

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace iomimic::tfrecord {

// Bytes of framing around each payload.
inline constexpr std::size_t kHeaderSize = 12;  // length + masked CRC of the length
inline constexpr std::size_t kFooterSize = 4;   // masked CRC of the payload
inline constexpr std::size_t kFramingSize = kHeaderSize + kFooterSize;

inline constexpr char kImageFeature[] = "image";
inline constexpr char kSizeFeature[] = "size";

// Bytes of the base-128 varint encoding of `v` (1..10).
constexpr std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Appends the varint encoding of `v` to `out`.
void AppendVarint(std::uint64_t v, std::string* out);

// The serialized Example of one sample, without the sample bytes themselves.
struct ExampleLayout {
  std::string prefix;            // wire bytes before the sample bytes
  std::string suffix;            // wire bytes after them (the "size" feature)
  std::uint64_t image_size = 0;  // sample bytes between prefix and suffix

  std::uint64_t payload_size() const { return prefix.size() + image_size + suffix.size(); }
};

// The layout of an Example whose "image" holds `image_size` bytes and whose
// "size" holds `size_value`.
ExampleLayout MakeExampleLayout(std::uint64_t image_size, std::int64_t size_value);

// payload_size() of MakeExampleLayout(image_size, size_value), without
// building the strings.
std::uint64_t ExamplePayloadSize(std::uint64_t image_size, std::int64_t size_value);

// Writes the 12-byte record header for a payload of `length` bytes.
void EncodeRecordHeader(std::uint64_t length, std::byte out[kHeaderSize]);

// Little-endian helpers.
void StoreLe32(std::uint32_t v, std::byte* out);
void StoreLe64(std::uint64_t v, std::byte* out);
std::uint32_t LoadLe32(const std::byte* in);
std::uint64_t LoadLe64(const std::byte* in);

}  // namespace iomimic::tfrecord
