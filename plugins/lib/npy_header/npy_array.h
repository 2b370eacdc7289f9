// An NPY array whose samples lie on its last axis, as DLIO's npy and npz
// generators write it (x of shape (*sample_shape, num_samples)): the spec
// checks of the writers and the sample layout and gather of the readers,
// shared by the npy and npz plugins (plugins/format/npy, plugins/format/npz).

#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iomimic/buffer.h"
#include "iomimic/format.h"
#include "iomimic/status.h"
#include "iomimic/storage.h"
#include "npy_header/npy_header.h"

namespace iomimic::numpy {

// Largest array a writer accepts, so that every offset computation stays far
// from 64-bit overflow.
inline constexpr std::uint64_t kMaxArrayBytes = std::uint64_t{1} << 62;

// What ValidateArraySpec allows and how its messages read.
struct ArraySpecRules {
  std::string_view plugin;  // message prefix: "npy"
  std::string_view array;   // the array in messages: "the array", "x"
  // FileSpec::compression values accepted ("none" must be listed to be allowed).
  std::span<const std::string_view> compressions;
  // Said after "compression 'c' is not supported" (in parentheses).
  std::string_view compression_hint;
};

// Checks that `spec` describes an array a writer can produce: a non-empty
// sample shape with no zero dimension, at least one sample, a known element
// type whose descr matches its size, a compression of rules.compressions and
// at most kMaxArrayBytes of data. kInvalidArgument (kNotSupported for the
// compression) prefixed with rules.plugin.
Status ValidateArraySpec(const FileSpec& spec, const ArraySpecRules& rules);

// "(3, 4)", "(5,)": a shape as Python prints a tuple.
std::string ShapeText(std::span<const std::uint64_t> shape);

// Whether `a` and `b` describe the same array: descr, shape and order.
bool SameArray(const NpyHeader& a, const NpyHeader& b);

// "(now shape (2, 3), descr '<f4'; was (2, 4), '<f4')": how the array of a
// later load (`now`) differs from the first one's (`was`), for the error of
// a file that changed under its reader.
std::string ArrayChangeText(const NpyHeader& was, const NpyHeader& now);

// How the samples of an array lie: the last axis indexes them.
struct SampleLayout {
  std::uint64_t num_samples = 0;      // the length of the last axis
  std::uint64_t sample_elements = 0;  // the product of the other axes
  std::uint64_t sample_bytes = 0;     // sample_elements * itemsize
};

// The layout of `header`'s array (at least one axis). kCorruption ("sample
// shape overflows 64 bits", "sample size overflows 64 bits"; no path or
// offset, the caller adds them) when the sizes do not fit in 64 bits.
Result<SampleLayout> SampleLayoutOf(const NpyHeader& header);

// Reorders the C-order `array` of `header` so that every sample is
// contiguous (sample i is block i), into `out` (as large as the array); a
// tiled transpose of a sample_elements x num_samples matrix.
void MakeSampleMajor(const NpyHeader& header, const SampleLayout& layout, const std::byte* array,
                     std::byte* out);

// Gathers sample `index` (< layout.num_samples) of the array data `array` of
// `header` in C order: a view into `array` when the sample lies there
// contiguously (or `sample_major`, after MakeSampleMajor), else the sample
// copied into `scratch`, grown with AllocateHostBuffer(storage, ..., who) when
// too small. The view lives until `array` or `scratch` changes.
Result<std::span<const std::byte>> GatherSample(const NpyHeader& header, const SampleLayout& layout,
                                                const std::byte* array, std::uint64_t index,
                                                bool sample_major, Storage& storage,
                                                std::string_view who, Buffer* scratch);

}  // namespace iomimic::numpy
