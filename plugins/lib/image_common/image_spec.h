// Shared by the png, jpeg and tiff format plugins (compiled into each of
// them; nothing here is a plugin of its own): how a FileSpec maps onto an
// image, and the pixel content that generation writes.
//
// DLIO's png/jpeg generators write one image per file:
//   Image.fromarray(np.random.randint(255, size=(d1, d2), dtype=np.uint8))
// so an image has d1 rows (its height) and d2 columns (its width); PIL's
// Image.size is (d2, d1) and np.asarray(Image.open(f)).shape is (d1, d2).
// iomimic follows the same convention: sample_shape {d1, d2} (or
// {d1, d2, c} with c = 1 for greyscale or 3 for RGB) is rows x columns
// [x channels], pixels in row-major order, channels interleaved.
//
// The pixel bytes are the stream of iomimic::ContentStream(spec.seed,
// spec.content) (png and jpeg then compress them their own way), as if
// one Fill() produced the whole image (row-major, channels interleaved,
// multi-byte elements little-endian), whatever the chunking of the writer.

#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "iomimic/format.h"
#include "iomimic/random.h"
#include "iomimic/status.h"

namespace iomimic::image {

// What one image of a FileSpec looks like.
struct ImageGeometry {
  std::uint64_t rows = 0;      // d1, the image height
  std::uint64_t cols = 0;      // d2, the image width
  std::uint64_t channels = 1;  // 1 (greyscale) or 3 (RGB)
  std::size_t element_size = 1;

  std::uint64_t row_bytes() const { return cols * channels * element_size; }
  std::uint64_t bytes() const { return rows * row_bytes(); }
};

// What a format accepts; GeometryFromSpec checks a spec against it.
struct SpecRules {
  const char* format = "";        // plugin name, for messages
  std::uint64_t max_side = 0;     // largest rows or cols
  std::uint64_t max_bytes = 0;    // largest image in bytes
  bool any_element_type = false;  // false: uint8 only (png, jpeg)
  // Extra words for the message that refuses another element type.
  const char* element_type_note = "";
};

// Checks `spec` (shape rank, channels, element type, one sample per file,
// sizes) and returns its geometry. kInvalidArgument names the problem.
// Compression is the caller's business.
Result<ImageGeometry> GeometryFromSpec(const FileSpec& spec, const SpecRules& rules);

// "64x48" or "64x48x3", for messages.
std::string GeometryText(const ImageGeometry& g);

}  // namespace iomimic::image
