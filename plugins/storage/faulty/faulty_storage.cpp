#include "faulty_storage.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace iomimic::faulty {

// The descriptor's flags, and what capabilities() may claim (a decorator: capabilities() are its
// inner back end's).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_DECORATOR;
namespace {

double Uniform(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t state = MixSeed(seed, index);
  return static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53;
}

std::string RateText(double rate) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", rate);
  return buf;
}

}  // namespace

Result<FaultyOptions> ParseOptions(const PluginOptions& opts) {
  FaultyOptions out;
  const std::string owner =
      opts.owner().empty() ? std::string("storage plugin 'faulty'") : opts.owner();
  IOMIMIC_ASSIGN_OR_RETURN(out.mode, opts.GetChoice("mode", Mode::kEio,
                                                    {{"eio", Mode::kEio},
                                                     {"short_read", Mode::kShortRead},
                                                     {"enospc", Mode::kEnospc},
                                                     {"short_write", Mode::kShortWrite}}));
  IOMIMIC_ASSIGN_OR_RETURN(out.error_rate, opts.GetDouble("error_rate", 0));
  if (!(out.error_rate >= 0 && out.error_rate <= 1)) {
    return Status::InvalidArgument(owner + ": option 'error_rate' = " + RateText(out.error_rate) +
                                   " is not a probability between 0 and 1");
  }
  if (opts.Has("fail_at_offset")) {
    IOMIMIC_ASSIGN_OR_RETURN(std::uint64_t at, opts.GetBytes("fail_at_offset", 0));
    out.fail_at_offset = at;
  }
  IOMIMIC_ASSIGN_OR_RETURN(out.fail_path, opts.GetString("fail_path", ""));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t after, opts.GetInt("after_ops", 0));
  if (after < 0) {
    return Status::InvalidArgument(owner + ": option 'after_ops' = " + std::to_string(after) +
                                   " is negative");
  }
  out.after_ops = static_cast<std::uint64_t>(after);
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t seed, opts.GetInt("seed", 0));
  out.seed = static_cast<std::uint64_t>(seed);

  IOMIMIC_ASSIGN_OR_RETURN(std::string operations, opts.GetString("operations", "auto"));
  if (operations == "auto") {
    const bool write_mode = out.mode == Mode::kEnospc || out.mode == Mode::kShortWrite;
    out.reads = !write_mode;
    out.writes = write_mode;
  } else if (operations == "read" || operations == "write" || operations == "all") {
    out.reads = operations != "write";
    out.writes = operations != "read";
  } else {
    return Status::InvalidArgument(owner + ": option 'operations' = '" + operations +
                                   "' is not one of auto, read, write, all");
  }
  if (out.mode == Mode::kShortRead && out.writes) {
    return Status::InvalidArgument(owner + ": mode short_read applies to reads only (operations '" +
                                   operations + "')");
  }
  if ((out.mode == Mode::kEnospc || out.mode == Mode::kShortWrite) && out.reads) {
    const char* mode = out.mode == Mode::kEnospc ? "enospc" : "short_write";
    return Status::InvalidArgument(owner + ": mode " + mode +
                                   " applies to writes only (operations '" + operations + "')");
  }
  return out;
}

Fault FaultyStorage::Decide(OpKind kind, const std::string& path, std::uint64_t offset,
                            std::uint64_t length) {
  Fault fault;
  if (length == 0) return fault;
  if ((kind == OpKind::kRead && !options_.reads) || (kind == OpKind::kWrite && !options_.writes)) {
    return fault;
  }
  if (!options_.fail_path.empty() && path.find(options_.fail_path) == std::string::npos) {
    return fault;
  }
  const std::uint64_t number = counter_.fetch_add(1, std::memory_order_relaxed);
  if (number < options_.after_ops) return fault;
  if (options_.fail_at_offset && *options_.fail_at_offset >= offset &&
      *options_.fail_at_offset - offset < length) {
    fault.fail = true;
    fault.at_offset = true;
    fault.trigger = "fail_at_offset " + std::to_string(*options_.fail_at_offset);
  } else if (options_.error_rate > 0 && Uniform(options_.seed, number) < options_.error_rate) {
    fault.fail = true;
    fault.trigger = "error_rate " + RateText(options_.error_rate) + ", eligible operation #" +
                    std::to_string(number + 1);
  }
  if (fault.fail) {
    if (options_.after_ops > 0) {
      fault.trigger += ", after " + std::to_string(options_.after_ops) + " operations";
    }
    injected_.fetch_add(1, std::memory_order_relaxed);
  }
  return fault;
}

Status FaultyStorage::InjectedError(OpKind kind, const std::string& path, std::uint64_t offset,
                                    std::uint64_t length, const Fault& fault,
                                    std::size_t written) const {
  const std::string what = std::string(kind == OpKind::kRead ? "read" : "write") + " of " +
                           std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                           " in " + path;
  const std::string why = " (faulty storage, " + fault.trigger + ")";
  if (options_.mode == Mode::kEnospc) {
    return Status::ResourceExhausted("injected ENOSPC: " + what + ": No space left on device" +
                                     why);
  }
  if (options_.mode == Mode::kShortWrite) {
    return Status::IOError("injected short write: " + what + " stopped after " +
                           std::to_string(written) + " bytes: Input/output error" + why);
  }
  return Status::IOError("injected EIO: " + what + ": Input/output error" + why);
}

Result<std::unique_ptr<File>> FaultyStorage::WrapFile(std::unique_ptr<File> file,
                                                      const OpenOptions&) {
  return WrapIn<FaultyFile>("faulty", std::move(file), this);
}

std::size_t FaultyFile::Shortened(const Fault& fault, std::uint64_t offset, std::size_t n) const {
  const std::optional<std::uint64_t>& at = storage().options().fail_at_offset;
  if (fault.at_offset && *at - offset < n) return static_cast<std::size_t>(*at - offset);
  return n / 2;
}

Result<std::size_t> FaultyFile::ReadAt(std::uint64_t offset, std::span<std::byte> destination) {
  return Guard("faulty", "reading", path(), [&]() -> Result<std::size_t> {
    const Fault fault = storage().Decide(OpKind::kRead, path(), offset, destination.size());
    if (!fault.fail) return inner().ReadAt(offset, destination);
    if (storage().options().mode != Mode::kShortRead) {
      return storage().InjectedError(OpKind::kRead, path(), offset, destination.size(), fault);
    }
    Result<std::size_t> n = inner().ReadAt(offset, destination);
    if (!n.ok()) return n;
    return Shortened(fault, offset, *n);
  });
}

Status FaultyFile::WriteAt(std::uint64_t offset, std::span<const std::byte> source) {
  return Guard("faulty", "writing", path(), [&]() -> Status {
    const Fault fault = storage().Decide(OpKind::kWrite, path(), offset, source.size());
    if (!fault.fail) return inner().WriteAt(offset, source);
    std::size_t written = 0;
    if (storage().options().mode == Mode::kShortWrite) {
      // The first part reaches the file, as a write cut short by a full
      // device or a lost connection leaves it; then the error.
      written = Shortened(fault, offset, source.size());
      IOMIMIC_RETURN_IF_ERROR(inner().WriteAt(offset, source.first(written)));
    }
    return storage().InjectedError(OpKind::kWrite, path(), offset, source.size(), fault, written);
  });
}

std::vector<StorageStatistic> FaultyStorage::Statistics() const {
  std::vector<StorageStatistic> out = ForwardingStorage::Statistics();
  out.push_back({"faulty_eligible_operations", static_cast<double>(eligible_operations())});
  out.push_back({"faulty_injected_faults", static_cast<double>(injected())});
  return out;
}

Status FaultyFile::WriteAtAll(std::uint64_t offset, std::span<const std::byte> source) {
  return Guard("faulty", "writing", path(), [&]() -> Status {
    const Fault fault =
        source.empty() ? Fault{} : storage().Decide(OpKind::kWrite, path(), offset, source.size());
    if (!fault.fail) return inner().WriteAtAll(offset, source);
    // Take part in the collective call with nothing (short_write: with the
    // first part), then fail.
    const std::size_t written =
        storage().options().mode == Mode::kShortWrite ? Shortened(fault, offset, source.size()) : 0;
    (void)inner().WriteAtAll(offset, source.first(written));
    return storage().InjectedError(OpKind::kWrite, path(), offset, source.size(), fault, written);
  });
}

Status FaultyFile::ReadBatch(std::span<ReadRequest> requests) {
  return Guard("faulty", "reading", path(), [&]() -> Status {
    const bool short_reads = storage().options().mode == Mode::kShortRead;
    std::vector<Fault> faults(requests.size());
    std::vector<std::size_t> forwarded;
    std::vector<ReadRequest> sub;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      ReadRequest& r = requests[i];
      faults[i] = storage().Decide(OpKind::kRead, path(), r.offset, r.destination.size());
      if (faults[i].fail && !short_reads) {
        r.bytes_read = 0;
        r.status = storage().InjectedError(OpKind::kRead, path(), r.offset, r.destination.size(),
                                           faults[i]);
        continue;
      }
      ReadRequest copy;
      copy.offset = r.offset;
      copy.destination = r.destination;
      sub.push_back(copy);
      forwarded.push_back(i);
    }
    if (!sub.empty()) (void)inner().ReadBatch(sub);  // per-request statuses are copied below
    for (std::size_t k = 0; k < sub.size(); ++k) {
      ReadRequest& r = requests[forwarded[k]];
      r.status = sub[k].status;
      r.bytes_read = sub[k].bytes_read;
      if (r.status.ok() && faults[forwarded[k]].fail) {
        r.bytes_read = Shortened(faults[forwarded[k]], r.offset, r.bytes_read);
      }
    }
    for (const ReadRequest& r : requests) {
      if (!r.status.ok()) return r.status;
    }
    return Status::OK();
  });
}

Result<std::unique_ptr<Storage>> CreateFaultyStorage(const PluginContext& context) {
  return CreateDecorator<FaultyStorage>("faulty", context, &ParseOptions);
}

}  // namespace iomimic::faulty

namespace {
const IomimicOptionSpec kFaultyOptions[] = {
    {"mode", "string", "eio",
     "eio (reads fail), short_read (reads come back short), enospc "
     "(writes fail), short_write (writes stop partway, then fail)"},
    {"error_rate", "double", "0", "probability that an eligible operation fails (0..1)"},
    {"fail_at_offset", "bytes", "", "an operation covering this byte offset fails"},
    {"fail_path", "string", "", "only files whose path contains this text are affected"},
    {"after_ops", "int", "0", "the first N eligible operations always succeed"},
    {"seed", "int", "0", "seed of the error_rate draws"},
    {"operations", "string", "auto", "which operations may fail: auto (by mode), read, write, all"},
};
}  // namespace

IOMIMIC_DEFINE_STORAGE_PLUGIN("faulty", "1.0.0",
                              "decorator: injects I/O errors, short reads and ENOSPC",
                              iomimic::faulty::kCapabilities, kFaultyOptions,
                              &iomimic::faulty::CreateFaultyStorage, "inner=posix,error_rate=0");
