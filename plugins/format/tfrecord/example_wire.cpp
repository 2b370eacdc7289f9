#include "example_wire.h"

#include <cstring>

#include "crc32c.h"

namespace iomimic::tfrecord {
namespace {

// Wire types and tags (field number << 3 | wire type).
constexpr std::uint8_t kLengthDelimited = 2;
constexpr std::uint8_t Tag(int field, std::uint8_t wire_type) {
  return static_cast<std::uint8_t>((field << 3) | wire_type);
}
constexpr std::uint8_t kExampleFeatures = Tag(1, kLengthDelimited);   // Example.features
constexpr std::uint8_t kFeaturesEntry = Tag(1, kLengthDelimited);     // Features.feature
constexpr std::uint8_t kEntryKey = Tag(1, kLengthDelimited);          // map entry key
constexpr std::uint8_t kEntryValue = Tag(2, kLengthDelimited);        // map entry value
constexpr std::uint8_t kFeatureBytesList = Tag(1, kLengthDelimited);  // Feature.bytes_list
constexpr std::uint8_t kFeatureInt64List = Tag(3, kLengthDelimited);  // Feature.int64_list
constexpr std::uint8_t kListValue = Tag(1, kLengthDelimited);         // {Bytes,Int64}List.value

// Sizes of each nested message, innermost first.
struct Sizes {
  std::uint64_t bytes_list;     // BytesList
  std::uint64_t image_feature;  // Feature holding it
  std::uint64_t image_entry;    // map entry "image"
  std::uint64_t packed;         // packed int64 payload
  std::uint64_t int64_list;     // Int64List
  std::uint64_t size_feature;   // Feature holding it
  std::uint64_t size_entry;     // map entry "size"
  std::uint64_t features;       // Features
  std::uint64_t example;        // Example
};

// A length-delimited field of `body` bytes: tag, length varint, body.
constexpr std::uint64_t Field(std::uint64_t body) { return 1 + VarintSize(body) + body; }

Sizes ComputeSizes(std::uint64_t image_size, std::int64_t size_value) {
  Sizes s{};
  const std::uint64_t key_image = sizeof(kImageFeature) - 1;
  const std::uint64_t key_size = sizeof(kSizeFeature) - 1;
  s.bytes_list = Field(image_size);
  s.image_feature = Field(s.bytes_list);
  s.image_entry = Field(key_image) + Field(s.image_feature);
  s.packed = VarintSize(static_cast<std::uint64_t>(size_value));
  s.int64_list = Field(s.packed);
  s.size_feature = Field(s.int64_list);
  s.size_entry = Field(key_size) + Field(s.size_feature);
  s.features = Field(s.image_entry) + Field(s.size_entry);
  s.example = Field(s.features);
  return s;
}

void AppendTagAndLength(std::uint8_t tag, std::uint64_t length, std::string* out) {
  out->push_back(static_cast<char>(tag));
  AppendVarint(length, out);
}

}  // namespace

void AppendVarint(std::uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

ExampleLayout MakeExampleLayout(std::uint64_t image_size, std::int64_t size_value) {
  const Sizes s = ComputeSizes(image_size, size_value);
  ExampleLayout layout;
  layout.image_size = image_size;
  std::string& p = layout.prefix;
  AppendTagAndLength(kExampleFeatures, s.features, &p);
  // Features.feature["image"]
  AppendTagAndLength(kFeaturesEntry, s.image_entry, &p);
  AppendTagAndLength(kEntryKey, sizeof(kImageFeature) - 1, &p);
  p += kImageFeature;
  AppendTagAndLength(kEntryValue, s.image_feature, &p);
  AppendTagAndLength(kFeatureBytesList, s.bytes_list, &p);
  AppendTagAndLength(kListValue, image_size, &p);
  // Features.feature["size"]
  std::string& q = layout.suffix;
  AppendTagAndLength(kFeaturesEntry, s.size_entry, &q);
  AppendTagAndLength(kEntryKey, sizeof(kSizeFeature) - 1, &q);
  q += kSizeFeature;
  AppendTagAndLength(kEntryValue, s.size_feature, &q);
  AppendTagAndLength(kFeatureInt64List, s.int64_list, &q);
  AppendTagAndLength(kListValue, s.packed, &q);
  AppendVarint(static_cast<std::uint64_t>(size_value), &q);
  return layout;
}

std::uint64_t ExamplePayloadSize(std::uint64_t image_size, std::int64_t size_value) {
  return ComputeSizes(image_size, size_value).example;
}

void StoreLe32(std::uint32_t v, std::byte* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}

void StoreLe64(std::uint64_t v, std::byte* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint32_t LoadLe32(const std::byte* in) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(in[i]);
  return v;
}

std::uint64_t LoadLe64(const std::byte* in) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(in[i]);
  return v;
}

void EncodeRecordHeader(std::uint64_t length, std::byte out[kHeaderSize]) {
  StoreLe64(length, out);
  StoreLe32(MaskCrc(Crc32c(out, 8)), out + 8);
}

}  // namespace iomimic::tfrecord
