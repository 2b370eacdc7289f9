#include "image_common/image_spec.h"

#include <limits>
#include <vector>

namespace iomimic::image {

std::string GeometryText(const ImageGeometry& g) {
  std::string s = std::to_string(g.rows);
  s += 'x';
  s += std::to_string(g.cols);
  if (g.channels != 1) {
    s += 'x';
    s += std::to_string(g.channels);
  }
  return s;
}

Result<ImageGeometry> GeometryFromSpec(const FileSpec& spec, const SpecRules& rules) {
  const std::string fmt = rules.format;
  const std::vector<std::uint64_t>& shape = spec.sample_shape;
  if (shape.size() != 2 && shape.size() != 3) {
    return Status::InvalidArgument(
        fmt + ": sample_shape has " + std::to_string(shape.size()) +
        " dimensions; an image needs 2 (rows, columns) or 3 with a last dimension of 1 "
        "(greyscale) or 3 (RGB)");
  }
  ImageGeometry g;
  g.rows = shape[0];
  g.cols = shape[1];
  if (shape.size() == 3) {
    if (shape[2] != 1 && shape[2] != 3) {
      return Status::InvalidArgument(fmt + ": sample_shape's last dimension is " +
                                     std::to_string(shape[2]) +
                                     "; images have 1 (greyscale) or 3 (RGB) channels");
    }
    g.channels = shape[2];
  }
  if (g.rows == 0 || g.cols == 0) {
    return Status::InvalidArgument(fmt + ": sample_shape has a zero dimension");
  }
  if (g.rows > rules.max_side || g.cols > rules.max_side) {
    return Status::InvalidArgument(fmt + ": a " + std::to_string(g.rows) + "x" +
                                   std::to_string(g.cols) + " image is larger than the format's " +
                                   std::to_string(rules.max_side) + " pixels per side");
  }
  if (spec.num_samples != 1) {
    return Status::InvalidArgument(
        fmt + ": num_samples_per_file is " + std::to_string(spec.num_samples) +
        ", but an image file holds exactly one sample (DLIO writes one image per file); set "
        "dataset.num_samples_per_file to 1");
  }
  if (spec.element_type.size == 0 || spec.element_type.size > 8) {
    return Status::InvalidArgument(fmt + ": element type '" + spec.element_type.name +
                                   "' has an unusable size " +
                                   std::to_string(spec.element_type.size));
  }
  if (!rules.any_element_type && spec.element_type.name != "uint8") {
    return Status::InvalidArgument(fmt + ": element type '" + spec.element_type.name +
                                   "' is not supported: " + fmt + " files hold 8-bit pixels" +
                                   rules.element_type_note);
  }
  g.element_size = spec.element_type.size;
  const std::uint64_t limit = rules.max_bytes;
  if (g.cols > limit / g.channels / g.element_size ||
      g.rows > limit / (g.cols * g.channels * g.element_size)) {
    return Status::InvalidArgument(fmt + ": a " + GeometryText(g) + " image of " +
                                   spec.element_type.name + " is larger than " +
                                   std::to_string(limit) + " bytes");
  }
  return g;
}

}  // namespace iomimic::image
