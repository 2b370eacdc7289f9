#include "hdf5_layout.h"

#include <cctype>
#include <cmath>
#include <exception>
#include <limits>
#include <new>

#include "iomimic/guard.h"

namespace iomimic::hdf5 {
namespace {

// Largest dataset accepted, so that size arithmetic stays far from overflow.
constexpr std::uint64_t kMaxDatasetBytes = std::uint64_t{1} << 62;

// h5py's guess_chunk constants (from PyTables).
constexpr double kChunkBase = 16.0 * 1024;
constexpr double kChunkMin = 8.0 * 1024;
constexpr double kChunkMax = 1024.0 * 1024;

std::string Trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

Result<std::uint64_t> NumDatasets(const FileSpec& spec) {
  auto it = spec.parameters.find(kNumDatasetsKey);
  if (it == spec.parameters.end() || Trim(it->second).empty()) return std::uint64_t{1};
  IOMIMIC_ASSIGN_OR_RETURN(std::vector<std::uint64_t> v, ParseDimList(kNumDatasetsKey, it->second));
  if (v.size() != 1 || v[0] < 1 || v[0] > kMaxDatasetsPerRecord) {
    return Status::InvalidArgument("hdf5: " + std::string(kNumDatasetsKey) + " = '" + it->second +
                                   "' must be an integer from 1 to " +
                                   std::to_string(kMaxDatasetsPerRecord));
  }
  return v[0];
}

Result<Compression> ParseCompression(const FileSpec& spec, int* level) {
  const std::string& c = spec.compression;
  if (c.empty() || c == "none") return Compression::kNone;
  if (c == "gzip") {
    if (spec.compression_level < 0 || spec.compression_level > 9) {
      return Status::InvalidArgument("hdf5: gzip compression_level " +
                                     std::to_string(spec.compression_level) +
                                     " is out of range (0-9)");
    }
    *level = spec.compression_level;
    return Compression::kGzip;
  }
  if (c == "lzf") {
    if (!LzfAvailable()) {
      return Status::NotSupported(
          "hdf5: compression 'lzf' needs HDF5's LZF filter (id 32000), which this libhdf5 "
          "cannot load (h5py carries its own copy; Debian's libhdf5 has none): use gzip or "
          "none, or put an LZF filter plugin on HDF5_PLUGIN_PATH");
    }
    return Compression::kLzf;
  }
  return Status::NotSupported("hdf5: compression '" + c +
                              "' is not supported (h5py, and so DLIO's hdf5 generator, accept "
                              "none, gzip and lzf)");
}

bool MulOverflows(std::uint64_t a, std::uint64_t b, std::uint64_t limit) {
  return b != 0 && a > limit / b;
}

Status Invalid(const std::string& what) { return Status::InvalidArgument("hdf5: " + what); }

// layout->max_dims from the max_shape parameter: (num_samples, *max_shape),
// 0 = unlimited; left empty without one. `*has_max` says whether there is one.
Status PlanMaxShape(const FileSpec& spec, FileLayout* layout, bool* has_max_shape) {
  const std::size_t rank = layout->dims.size();
  auto max_it = spec.parameters.find(kMaxShapeKey);
  const bool has_max = max_it != spec.parameters.end() && !Trim(max_it->second).empty();
  if (has_max) {
    IOMIMIC_ASSIGN_OR_RETURN(std::vector<std::uint64_t> m,
                             ParseDimList(kMaxShapeKey, max_it->second));
    if (m.size() != rank - 1) {
      return Invalid(std::string(kMaxShapeKey) + " has " + std::to_string(m.size()) +
                     " dimensions, but the samples have " + std::to_string(rank - 1) +
                     " (maxshape is (num_samples, *max_shape); dataset shape " +
                     DimsText(layout->dims) + ")");
    }
    layout->max_dims.push_back(spec.num_samples);
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i] == 0) {
        layout->max_dims.push_back(H5S_UNLIMITED);
      } else if (m[i] < layout->dims[i + 1]) {
        return Invalid(std::string(kMaxShapeKey) + " dimension " + std::to_string(i) + " is " +
                       std::to_string(m[i]) + ", smaller than the sample dimension " +
                       std::to_string(layout->dims[i + 1]));
      } else {
        layout->max_dims.push_back(m[i]);
      }
    }
  }
  *has_max_shape = has_max;
  return Status::OK();
}

// layout->chunk_dims from the chunk_dims parameter, else h5py's guess when
// the dataset must be chunked (compression or a max shape); checks that a
// chunk stays under 4 GiB.
Status PlanChunks(const FileSpec& spec, bool has_max, FileLayout* layout) {
  const std::size_t rank = layout->dims.size();
  const std::uint64_t elem = layout->element_type.size;
  auto chunk_it = spec.parameters.find(kChunkDimsKey);
  const bool has_chunks = chunk_it != spec.parameters.end() && !Trim(chunk_it->second).empty();
  if (has_chunks) {
    IOMIMIC_ASSIGN_OR_RETURN(std::vector<std::uint64_t> c,
                             ParseDimList(kChunkDimsKey, chunk_it->second));
    if (c.size() + 1 == rank) c.insert(c.begin(), 1);
    if (c.size() != rank) {
      return Invalid(std::string(kChunkDimsKey) + " '" + chunk_it->second + "' has " +
                     std::to_string(c.size()) + " dimensions; the dataset " +
                     DimsText(layout->dims) + " needs " + std::to_string(rank) + " (or " +
                     std::to_string(rank - 1) + " without the sample axis)");
    }
    const std::vector<hsize_t>& limit = layout->max_dims.empty() ? layout->dims : layout->max_dims;
    for (std::size_t i = 0; i < rank; ++i) {
      if (c[i] == 0) return Invalid(std::string(kChunkDimsKey) + " has a zero dimension");
      if (limit[i] != H5S_UNLIMITED && c[i] > limit[i]) {
        return Invalid("chunk shape " + DimsText(std::vector<hsize_t>(c.begin(), c.end())) +
                       " must not be greater than the data shape " + DimsText(limit) +
                       " in any dimension");
      }
    }
    layout->chunk_dims.assign(c.begin(), c.end());
  } else if (layout->compression != Compression::kNone || has_max) {
    layout->chunk_dims = GuessChunk(layout->dims, elem);
    layout->chunks_guessed = true;
  }
  if (layout->chunked()) {
    std::uint64_t bytes = elem;
    for (hsize_t c : layout->chunk_dims) {
      if (MulOverflows(bytes, c, kMaxChunkBytes)) {
        return Invalid("chunk shape " + DimsText(layout->chunk_dims) +
                       " makes chunks of 4 GiB or more, which HDF5 does not allow");
      }
      bytes *= c;
    }
  }
  return Status::OK();
}

Result<FileLayout> PlanLayoutImpl(const FileSpec& spec) {
  FileLayout layout;
  if (spec.num_samples == 0) return Invalid("num_samples must be at least 1");
  Result<ElementType> known = ElementType::FromName(spec.element_type.name);
  if (!known.ok()) return Invalid(known.status().message());
  if (known->descr != spec.element_type.descr || known->size != spec.element_type.size) {
    return Invalid("element type '" + spec.element_type.name + "' has descr '" +
                   spec.element_type.descr + "' and size " +
                   std::to_string(spec.element_type.size) + ", expected '" + known->descr +
                   "' and " + std::to_string(known->size));
  }
  layout.element_type = *known;
  layout.num_samples = spec.num_samples;
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Invalid("sample_shape has a zero dimension");
  }
  IOMIMIC_ASSIGN_OR_RETURN(layout.num_datasets, NumDatasets(spec));

  std::vector<std::uint64_t> row = spec.sample_shape;
  const std::uint64_t k = layout.num_datasets;
  if (k > 1) {
    if (row.empty()) {
      return Invalid(std::string(kNumDatasetsKey) + " = " + std::to_string(k) +
                     " needs a sample shape to split, but the sample shape is empty");
    }
    if (row[0] % k != 0) {
      return Invalid(std::string(kNumDatasetsKey) + " = " + std::to_string(k) +
                     " does not divide the first sample dimension " + std::to_string(row[0]) +
                     " (DLIO requires record_dims[0] % num_dset_per_record == 0)");
    }
    row[0] /= k;
  }
  if (!row.empty() && row[0] == 1) row.erase(row.begin());
  if (row.size() + 1 > H5S_MAX_RANK) {
    return Invalid("sample shape has " + std::to_string(row.size()) +
                   " dimensions; HDF5 allows at most " + std::to_string(H5S_MAX_RANK - 1) +
                   " besides the sample axis");
  }
  layout.dims.push_back(spec.num_samples);
  for (std::uint64_t d : row) layout.dims.push_back(d);

  const std::uint64_t elem = layout.element_type.size;
  layout.row_elements = 1;
  for (std::uint64_t d : row) {
    if (MulOverflows(layout.row_elements, d, kMaxDatasetBytes / elem)) {
      return Invalid("sample too large");
    }
    layout.row_elements *= d;
  }
  layout.row_bytes = layout.row_elements * elem;
  if (MulOverflows(layout.row_bytes, spec.num_samples, kMaxDatasetBytes / k)) {
    return Invalid("file too large (sample bytes x num_samples x datasets)");
  }

  IOMIMIC_ASSIGN_OR_RETURN(layout.compression, ParseCompression(spec, &layout.gzip_level));

  bool has_max = false;
  IOMIMIC_RETURN_IF_ERROR(PlanMaxShape(spec, &layout, &has_max));
  IOMIMIC_RETURN_IF_ERROR(PlanChunks(spec, has_max, &layout));
  return layout;
}

Status TypeFailure(const std::string& name) {
  return Status::Internal("hdf5: cannot create the HDF5 type for '" + name +
                          "': " + TakeErrorStack().Summary());
}

}  // namespace

std::string RecordsName(std::uint64_t k) { return kRecordsPrefix + std::to_string(k); }

Result<std::vector<std::uint64_t>> ParseDimList(const std::string& key, const std::string& text) {
  std::string s = Trim(text);
  if (s.size() >= 2 && (s.front() == '[' || s.front() == '(') &&
      (s.back() == ']' || s.back() == ')')) {
    s = Trim(s.substr(1, s.size() - 2));
  }
  std::vector<std::uint64_t> out;
  if (s.empty()) return out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = s.find(',', pos);
    const std::string item =
        Trim(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (item.empty() && comma == std::string::npos && !out.empty()) break;  // "1,2," is fine
    std::uint64_t v = 0;
    bool ok = !item.empty();
    for (char ch : item) {
      if (!std::isdigit(static_cast<unsigned char>(ch)) ||
          v > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) {
        ok = false;
        break;
      }
      v = v * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    if (!ok) {
      return Status::InvalidArgument("hdf5: " + key + " = '" + text +
                                     "' is not a list of non-negative integers such as 64,64");
    }
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::vector<hsize_t> GuessChunk(std::span<const hsize_t> shape, std::size_t type_size) {
  const std::size_t n = shape.size();
  std::vector<double> chunks(n);
  for (std::size_t i = 0; i < n; ++i) {
    chunks[i] = shape[i] == 0 ? 1024.0 : static_cast<double>(shape[i]);
  }
  if (n == 0) return {};
  auto product = [&chunks] {
    double p = 1.0;
    for (double c : chunks) p *= c;
    return p;
  };
  const double typesize = static_cast<double>(type_size);
  const double dset_size = product() * typesize;
  double target = kChunkBase * std::pow(2.0, std::log10(dset_size / (1024.0 * 1024.0)));
  if (target > kChunkMax) {
    target = kChunkMax;
  } else if (target < kChunkMin) {
    target = kChunkMin;
  }
  for (std::size_t idx = 0;; ++idx) {
    const double chunk_bytes = product() * typesize;
    if ((chunk_bytes < target || std::fabs(chunk_bytes - target) / target < 0.5) &&
        chunk_bytes < kChunkMax) {
      break;
    }
    if (product() == 1.0) break;  // one element larger than kChunkMax
    chunks[idx % n] = std::ceil(chunks[idx % n] / 2.0);
  }
  std::vector<hsize_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<hsize_t>(chunks[i]);
  return out;
}

Result<FileLayout> PlanLayout(const FileSpec& spec) {
  return Guard("hdf5", "planning", spec.path,
               [&]() -> Result<FileLayout> { return PlanLayoutImpl(spec); });
}

bool LzfAvailable() {
  static const bool available = [] {
    ApiLock lock;
    QuietErrors();
    const htri_t r = H5Zfilter_avail(kLzfFilter);
    if (r < 0) (void)TakeErrorStack();
    return r > 0;
  }();
  return available;
}

Result<Handle> CreateElementType(const ElementType& type) {
  const std::string& n = type.name;
  hid_t base = H5I_INVALID_HID;
  if (n == "uint8") base = H5T_STD_U8LE;
  if (n == "int8") base = H5T_STD_I8LE;
  if (n == "uint16") base = H5T_STD_U16LE;
  if (n == "int16") base = H5T_STD_I16LE;
  if (n == "uint32") base = H5T_STD_U32LE;
  if (n == "int32") base = H5T_STD_I32LE;
  if (n == "uint64") base = H5T_STD_U64LE;
  if (n == "int64") base = H5T_STD_I64LE;
  if (n == "float32") base = H5T_IEEE_F32LE;
  if (n == "float64") base = H5T_IEEE_F64LE;
  if (base >= 0) {
    Handle t(H5Tcopy(base));
    if (!t.valid()) return TypeFailure(n);
    return t;
  }
  if (n == "float16") {
    // h5py's IEEE_F16LE: IEEE single precision narrowed to 1+5+10 bits.
    Handle t(H5Tcopy(H5T_IEEE_F32LE));
    if (!t.valid() || H5Tset_fields(t.get(), 15, 10, 5, 0, 10) < 0 || H5Tset_size(t.get(), 2) < 0 ||
        H5Tset_ebias(t.get(), 15) < 0) {
      return TypeFailure(n);
    }
    return t;
  }
  if (n == "bool") {
    // h5py stores numpy.bool_ as an enum over int8.
    Handle t(H5Tenum_create(H5T_NATIVE_INT8));
    const std::int8_t f = 0;
    const std::int8_t tr = 1;
    if (!t.valid() || H5Tenum_insert(t.get(), "FALSE", &f) < 0 ||
        H5Tenum_insert(t.get(), "TRUE", &tr) < 0) {
      return TypeFailure(n);
    }
    return t;
  }
  return Status::InvalidArgument("hdf5: element type '" + n + "' has no HDF5 equivalent");
}

}  // namespace iomimic::hdf5
