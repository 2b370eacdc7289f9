#include "mds_format.h"

#include <utility>

#include "iomimic/format_helpers.h"
#include "iomimic/plugin.h"
#include "mds_reader.h"
#include "mds_writer.h"

namespace iomimic::mds {

std::string MdsFormat::name() const { return "mds"; }

FormatTraits MdsFormat::traits() const {
  // Fields left out keep FormatTraits' defaults; any ndarray element type.
  return {.extension = "mds", .partial_reads = true, .predictable_size = true, .element_type = ""};
}

Status MdsFormat::Validate(const FileSpec& spec) const { return ValidateSpec(spec, options_); }

Result<std::uint64_t> MdsFormat::ExpectedFileSize(const FileSpec& spec) const {
  IOMIMIC_ASSIGN_OR_RETURN(const ShardPlan plan, PlanShard(spec, options_));
  if (!plan.compression.empty()) {
    return Status::NotSupported("mds: the size of a zstd shard depends on its content");
  }
  return plan.raw_bytes;
}

std::vector<std::string> MdsFormat::CompanionPaths(const FileSpec& spec) const {
  return {IndexPathFor(spec.path)};
}

Status MdsFormat::WriteFile(Storage& storage, File& file, const FileSpec& spec) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    infos_.erase(spec.path);
  }
  return WriteMdsShard(storage, file, spec, options_);
}

Result<std::shared_ptr<const ShardInfo>> MdsFormat::InfoFor(Storage& storage,
                                                            const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = infos_.find(path);
    if (it != infos_.end()) return it->second;
  }
  // Read outside the lock: two threads may both read a new index; the
  // entries are equal.
  const std::string index_path = IndexPathFor(path);
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                           OpenForReading(storage, index_path, AccessHint::kWholeFile, "mds"));
  IOMIMIC_ASSIGN_OR_RETURN(const std::uint64_t size, file->Size());
  if (size > (std::uint64_t{1} << 30)) {
    return Status::Corruption(index_path + " at offset 0: an index of " + std::to_string(size) +
                              " bytes is not an MDS index");
  }
  IOMIMIC_ASSIGN_OR_RETURN(
      Buffer buffer,
      AllocateHostBuffer(storage, static_cast<std::size_t>(std::max<std::uint64_t>(size, 1)),
                         "mds"));
  std::uint64_t got = 0;
  while (got < size) {
    Result<std::size_t> n = file->ReadAt(
        got,
        buffer.span().subspan(static_cast<std::size_t>(got), static_cast<std::size_t>(size - got)));
    if (!n.ok()) return n.status().WithContext("mds: reading " + index_path);
    if (*n == 0) break;
    got += *n;
  }
  (void)file->Close();
  const std::string_view text(reinterpret_cast<const char*>(buffer.data()),
                              static_cast<std::size_t>(got));
  IOMIMIC_ASSIGN_OR_RETURN(ShardInfo info, ParseIndexFor(text, index_path, path));
  auto shared = std::make_shared<const ShardInfo>(std::move(info));
  std::lock_guard<std::mutex> lock(mutex_);
  infos_[path] = shared;
  return shared;
}

Result<std::unique_ptr<FileReader>> MdsFormat::OpenReader(const std::string& path,
                                                          const ReaderOptions& options) {
  if (options.storage == nullptr) {
    return Status::InvalidArgument("mds: ReaderOptions.storage is null (opening " + path + ")");
  }
  Result<std::shared_ptr<const ShardInfo>> info =
      Guard("mds", "opening the index of", path, [&] { return InfoFor(*options.storage, path); });
  if (!info.ok()) return info.status().WithContext("mds: the index of " + path);
  return MdsReader::Open(path, options, std::move(info).value());
}

namespace {

// The keys this plugin adds to the manifest, below dataset.mds.
const IomimicOptionSpec kKeys[] = {
    {"column", "string", "x", "the name of the one ndarray column of each sample"},
    {"size_limit", "int", "67108864",
     "MDSWriter's size_limit (bytes, 0 for none): a shard of more than one sample must fit it"},
    {nullptr, nullptr, nullptr, nullptr},
};

Result<std::unique_ptr<Format>> MakeFormat(const PluginContext& context) {
  MdsOptions options;
  IOMIMIC_ASSIGN_OR_RETURN(options.column, context.options.GetString("mds.column", "x"));
  if (options.column.empty()) {
    return Status::InvalidArgument("dataset.mds.column must not be empty");
  }
  IOMIMIC_ASSIGN_OR_RETURN(
      const std::int64_t limit,
      context.options.GetInt("mds.size_limit", static_cast<std::int64_t>(kDefaultSizeLimit)));
  // MDSWriter refuses negative limits and limits of 2**32 or more.
  if (limit < 0 || limit >= (std::int64_t{1} << 32)) {
    return Status::InvalidArgument("dataset.mds.size_limit " + std::to_string(limit) +
                                   " is out of range (0 to 4294967295)");
  }
  options.size_limit = static_cast<std::uint64_t>(limit);
  return std::unique_ptr<Format>(std::make_unique<MdsFormat>(std::move(options)));
}

}  // namespace

}  // namespace iomimic::mds

IOMIMIC_DEFINE_FORMAT_PLUGIN_WITH_KEYS(
    "mds", "1.0.0",
    "MosaicML Streaming MDS shards (version 2) with a per-shard index.json, zstd where built "
    "with libzstd; samples read at random as MDSReader reads them from its local cache",
    IOMIMIC_CAP_MULTI_SAMPLE | IOMIMIC_CAP_PARTIAL_READS, IOMIMIC_NO_OPTIONS, iomimic::mds::kKeys,
    &iomimic::mds::MakeFormat);
