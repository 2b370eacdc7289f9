#include "mds_layout.h"

#include <algorithm>

#include "mds_json.h"

namespace iomimic::mds {
namespace {

// streaming's NDArray value dtypes (its _int2value_dtype table).
constexpr std::string_view kNdarrayTypes[] = {"uint8",   "int8",   "uint16", "int16",
                                              "float16", "uint32", "int32",  "float32",
                                              "uint64",  "int64",  "float64"};

std::string_view BaseName(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view Folder(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash + 1);
}

std::string Encoding(const FileSpec& spec) {
  std::string out = "ndarray:" + spec.element_type.name + ":";
  for (std::size_t i = 0; i < spec.sample_shape.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(spec.sample_shape[i]);
  }
  return out;
}

Result<std::string> CompressionOf(const FileSpec& spec) {
  if (spec.compression.empty() || spec.compression == "none") return std::string();
  if (spec.compression != "zstd") {
    return Status::NotSupported("mds: compression '" + spec.compression +
                                "' is not supported (none or zstd; streaming's br, bz2, gz and "
                                "snappy shards are not emulated)");
  }
  if (!HaveZstd()) {
    return Status::NotSupported("mds: compression 'zstd' needs libzstd, which this build lacks");
  }
  // streaming's zstd levels are 1..22, its default 3; level 0 asks for it.
  if (spec.compression_level < 0 || spec.compression_level > 22) {
    return Status::InvalidArgument("mds: zstd level " + std::to_string(spec.compression_level) +
                                   " is out of range (1 to 22, 0 for zstd's default)");
  }
  if (spec.compression_level == 0) return std::string("zstd");
  return "zstd:" + std::to_string(spec.compression_level);
}

// The writer's configuration as json.dumps(sort_keys=True) writes it; the
// members before "raw_data" are the config's, so the index entry continues it.
std::string ConfigMembers(const std::string& encoding, std::uint64_t sample_bytes,
                          const std::string& compression, std::string_view column) {
  std::string out = "\"column_encodings\": [" + JsonString(encoding) + "], ";
  out += "\"column_names\": [" + JsonString(column) + "], ";
  out += "\"column_sizes\": [" + std::to_string(sample_bytes) + "], ";
  out +=
      "\"compression\": " + (compression.empty() ? std::string("null") : JsonString(compression));
  out += ", \"format\": \"mds\", \"hashes\": []";
  return out;
}

std::string SizeLimitText(std::uint64_t size_limit) {
  return size_limit == 0 ? std::string("null") : std::to_string(size_limit);
}

std::string FileInfoText(const std::string& basename, std::uint64_t bytes) {
  return "{\"basename\": " + JsonString(basename) + ", \"bytes\": " + std::to_string(bytes) +
         ", \"hashes\": {}}";
}

Status BadIndex(const std::string& index_path, const std::string& why) {
  return Status::Corruption(index_path + " at offset 0: " + why);
}

Result<std::uint64_t> UintMember(const JsonValue& object, std::string_view key,
                                 const std::string& index_path, const std::string& where) {
  const JsonValue* v = object.Find(key);
  if (v == nullptr || v->kind != JsonValue::Kind::kNumber || !v->is_uint) {
    return BadIndex(index_path,
                    where + " has no non-negative integer \"" + std::string(key) + "\"");
  }
  return v->uint;
}

// The entry of `basename` in the index's shard list, or null.
const JsonValue* FindShard(const JsonValue& shards, const std::string& basename) {
  for (const JsonValue& shard : shards.items) {
    for (const char* key : {"zip_data", "raw_data"}) {
      const JsonValue* data = shard.Find(key);
      if (data == nullptr || data->kind != JsonValue::Kind::kObject) continue;
      const JsonValue* name = data->Find("basename");
      if (name != nullptr && name->kind == JsonValue::Kind::kString && name->text == basename) {
        return &shard;
      }
    }
  }
  return nullptr;
}

// Column sizes: the head (4 bytes per variable-size column) and the fixed
// size of a sample (0 when a column varies).
Status ReadColumns(const JsonValue& shard, const std::string& index_path, const std::string& where,
                   ShardInfo* info) {
  const JsonValue* sizes = shard.Find("column_sizes");
  if (sizes == nullptr || sizes->kind != JsonValue::Kind::kArray || sizes->items.empty()) {
    return BadIndex(index_path, where + " has no column_sizes list");
  }
  std::uint64_t fixed = 0;
  bool variable = false;
  for (const JsonValue& size : sizes->items) {
    if (size.kind == JsonValue::Kind::kNull) {
      info->sample_head += 4;
      variable = true;
    } else if (size.kind == JsonValue::Kind::kNumber && size.is_uint &&
               size.uint <= kMaxShardBytes) {
      fixed += size.uint;
    } else {
      return BadIndex(index_path, where + " has a column size that is neither a size nor null");
    }
  }
  info->sample_bytes = variable ? 0 : fixed;
  return Status::OK();
}

Status ReadCompression(const JsonValue& shard, const std::string& index_path,
                       const std::string& where, ShardInfo* info) {
  const JsonValue* compression = shard.Find("compression");
  if (compression == nullptr || compression->kind == JsonValue::Kind::kNull) return Status::OK();
  if (compression->kind != JsonValue::Kind::kString) {
    return BadIndex(index_path, where + " has a compression that is not a string");
  }
  const std::string& c = compression->text;
  if (c != "zstd" && c.rfind("zstd:", 0) != 0) {
    return Status::NotSupported(index_path + ": compression '" + c +
                                "' is not supported (none or zstd)");
  }
  if (!HaveZstd()) {
    return Status::NotSupported(index_path + ": zstd shards need libzstd, which this build lacks");
  }
  const JsonValue* zip = shard.Find("zip_data");
  if (zip == nullptr || zip->kind != JsonValue::Kind::kObject) {
    return BadIndex(index_path, where + " is compressed but has no zip_data");
  }
  IOMIMIC_ASSIGN_OR_RETURN(info->zip_bytes,
                           UintMember(*zip, "bytes", index_path, where + "'s zip_data"));
  info->compressed = true;
  return Status::OK();
}

}  // namespace

bool HaveZstd() {
#if IOMIMIC_MDS_ZSTD
  return true;
#else
  return false;
#endif
}

Status ValidateSpec(const FileSpec& spec, const MdsOptions& options) {
  return PlanShard(spec, options).status();
}

Result<ShardPlan> PlanShard(const FileSpec& spec, const MdsOptions& options) {
  if (spec.sample_shape.empty()) return Status::InvalidArgument("mds: sample_shape is empty");
  if (std::find(std::begin(kNdarrayTypes), std::end(kNdarrayTypes), spec.element_type.name) ==
      std::end(kNdarrayTypes)) {
    return Status::NotSupported("mds: element type '" + spec.element_type.name +
                                "' has no ndarray encoding in streaming (uint8..uint64, "
                                "int8..int64, float16, float32, float64)");
  }
  std::uint64_t bytes = spec.element_type.size;
  for (std::uint64_t d : spec.sample_shape) {
    if (d == 0) return Status::InvalidArgument("mds: sample_shape has a zero dimension");
    if (bytes > kMaxShardBytes / d) {
      return Status::InvalidArgument("mds: a sample of 4 GiB or more does not fit a shard");
    }
    bytes *= d;
  }
  if (spec.num_samples == 0) return Status::InvalidArgument("mds: num_samples must be at least 1");
  ShardPlan plan;
  IOMIMIC_ASSIGN_OR_RETURN(plan.compression, CompressionOf(spec));
  plan.encoding = Encoding(spec);
  plan.sample_bytes = bytes;
  plan.config = "{" + ConfigMembers(plan.encoding, bytes, plan.compression, options.column) +
                ", \"size_limit\": " + SizeLimitText(options.size_limit) + ", \"version\": 2}";
  const std::uint64_t n = spec.num_samples;
  if (n > kMaxShardBytes / (bytes + 4)) {
    return Status::InvalidArgument("mds: " + std::to_string(n) + " samples of " +
                                   std::to_string(bytes) +
                                   " bytes make a shard of 4 GiB or more (offsets are uint32)");
  }
  plan.header_bytes = 4 + 4 * (n + 1) + plan.config.size();
  plan.raw_bytes = plan.header_bytes + n * bytes;
  if (plan.raw_bytes > kMaxShardBytes) {
    return Status::InvalidArgument("mds: a shard of " + std::to_string(plan.raw_bytes) +
                                   " bytes reaches 4 GiB (offsets are uint32)");
  }
  // MDSWriter counts 8 bytes and the config per shard, each sample and its
  // offset, and starts a new shard before the count passes size_limit.
  const std::uint64_t counted = 8 + plan.config.size() + n * (bytes + 4);
  if (options.size_limit > 0 && n > 1 && counted > options.size_limit) {
    const std::uint64_t room = options.size_limit > 8 + plan.config.size()
                                   ? (options.size_limit - 8 - plan.config.size()) / (bytes + 4)
                                   : 0;
    return Status::InvalidArgument("mds: a shard of " + std::to_string(n) + " samples of " +
                                   std::to_string(bytes) + " bytes is " + std::to_string(counted) +
                                   " bytes as MDSWriter counts them, over "
                                   "size_limit " +
                                   std::to_string(options.size_limit) +
                                   ": MDSWriter starts a new shard after " +
                                   std::to_string(std::max<std::uint64_t>(room, 1)) +
                                   " (lower num_samples_per_file or raise dataset.mds.size_limit)");
  }
  return plan;
}

std::string IndexPathFor(const std::string& data_path) {
  std::string_view name = BaseName(data_path);
  std::string folder(Folder(data_path));
  if (name.size() > 4 && name.substr(name.size() - 4) == ".mds") {
    folder += name.substr(0, name.size() - 4);
  } else {
    folder += std::string(name) + ".index";
  }
  return folder + "/" + kIndexName;
}

std::string ShardBasename(const std::string& data_path) {
  return "../" + std::string(BaseName(data_path));
}

std::string RawBasename(const std::string& data_path) {
  std::string_view name = BaseName(data_path);
  if (name.size() > 4 && name.substr(name.size() - 4) == ".mds") name.remove_suffix(4);
  return "../" + std::string(name) + ".raw.mds";
}

std::string IndexText(const FileSpec& spec, const ShardPlan& plan, std::uint64_t zip_bytes) {
  const bool zipped = !plan.compression.empty();
  const std::string raw_name = zipped ? RawBasename(spec.path) : ShardBasename(spec.path);
  // The shard entry: the config's members in key order with raw_data and
  // samples among them, as json.dump(sort_keys=True) orders them.
  const std::string config = plan.config.substr(1, plan.config.size() - 2);
  const std::size_t size_limit_at = config.rfind("\"size_limit\"");
  std::string entry = "{" + config.substr(0, size_limit_at);
  entry += "\"raw_data\": " + FileInfoText(raw_name, plan.raw_bytes) + ", ";
  entry += "\"samples\": " + std::to_string(spec.num_samples) + ", ";
  entry += config.substr(size_limit_at) + ", \"zip_data\": ";
  entry += zipped ? FileInfoText(ShardBasename(spec.path), zip_bytes) : std::string("null");
  entry += "}";
  return "{\"shards\": [" + entry + "], \"version\": 2}";
}

Result<ShardInfo> ParseIndexFor(std::string_view text, const std::string& index_path,
                                const std::string& data_path) {
  IOMIMIC_ASSIGN_OR_RETURN(const JsonValue root, ParseJson(text, index_path));
  const JsonValue* version = root.Find("version");
  if (version == nullptr || !version->is_uint || version->uint != 2) {
    return BadIndex(index_path, "not a streaming index of version 2");
  }
  const JsonValue* shards = root.Find("shards");
  if (shards == nullptr || shards->kind != JsonValue::Kind::kArray) {
    return BadIndex(index_path, "no \"shards\" list");
  }
  const std::string basename = ShardBasename(data_path);
  const JsonValue* shard = FindShard(*shards, basename);
  if (shard == nullptr) {
    return BadIndex(index_path, "no shard named \"" + basename + "\" (the index of " + data_path +
                                    " must list it)");
  }
  const std::string where = "the shard \"" + basename + "\"";
  const JsonValue* format = shard->Find("format");
  if (format == nullptr || format->text != "mds") {
    return BadIndex(index_path, where + " is not of format \"mds\"");
  }
  ShardInfo info;
  info.index_path = index_path;
  IOMIMIC_ASSIGN_OR_RETURN(info.samples, UintMember(*shard, "samples", index_path, where));
  const JsonValue* raw = shard->Find("raw_data");
  if (raw == nullptr || raw->kind != JsonValue::Kind::kObject) {
    return BadIndex(index_path, where + " has no raw_data");
  }
  IOMIMIC_ASSIGN_OR_RETURN(info.raw_bytes,
                           UintMember(*raw, "bytes", index_path, where + "'s raw_data"));
  IOMIMIC_RETURN_IF_ERROR(ReadColumns(*shard, index_path, where, &info));
  IOMIMIC_RETURN_IF_ERROR(ReadCompression(*shard, index_path, where, &info));
  return info;
}

}  // namespace iomimic::mds
