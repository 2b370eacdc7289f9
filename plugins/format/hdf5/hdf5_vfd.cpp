#include "hdf5_vfd.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

#if H5_VERSION_GE(1, 13, 0)
#include <H5FDdevelop.h>
#endif

namespace iomimic::hdf5 {
namespace {

// Marks driver info made by this plugin ("IOMH").
constexpr std::uint32_t kInfoMagic = 0x494F4D48u;
// The sec2 driver's limit: the largest off_t.
constexpr haddr_t kMaxAddress = (static_cast<haddr_t>(1) << 63) - 1;
// Source of zeros for growing a file.
constexpr std::size_t kZeroBlockSize = std::size_t{64} << 10;
const std::byte kZeroBlock[kZeroBlockSize] = {};

// sec2's feature flags minus the POSIX handle and SWMR support.
constexpr unsigned long kFeatures = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA |
                                    H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_AGGREGATE_SMALLDATA |
                                    H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;

#if H5_VERSION_GE(1, 13, 2)
// HDF5 >= 1.13.2 identifies driver classes by a value; >= 512 is outside the
// range reserved for the HDF Group and its tests. Not registered with them.
constexpr H5FD_class_value_t kDriverValue = 0x2A4D;
#endif

// What a file access property list carries for this driver. Copied and freed
// by HDF5 through InfoCopy/InfoFree.
struct DriverInfo {
  std::uint32_t magic = kInfoMagic;
  std::shared_ptr<StorageChannel> channel;
};

// Per-open-file state of the driver.
struct DriverState {
  std::shared_ptr<StorageChannel> channel;
  haddr_t eoa = 0;
  haddr_t eof = 0;
  bool writable = false;
};

// HDF5's view of an open file: the public part first, as the VFL requires.
struct DriverFile {
  H5FD_t pub;
  DriverState* state;
};
static_assert(std::is_standard_layout_v<DriverFile>, "H5FD_t must be at offset 0");

DriverState& StateOf(H5FD_t* file) { return *reinterpret_cast<DriverFile*>(file)->state; }
const DriverState& StateOf(const H5FD_t* file) {
  return *reinterpret_cast<const DriverFile*>(file)->state;
}

void PushError(const char* function, unsigned line, hid_t minor, const std::string& message) {
  H5Epush2(H5E_DEFAULT, __FILE__, function, line, H5E_ERR_CLS, H5E_VFL, minor, "%s",
           message.c_str());
}

#define IOMIMIC_VFD_ERROR(minor, message) PushError(__func__, __LINE__, minor, message)

bool RegionOverflows(haddr_t addr, std::size_t size) {
  return addr == HADDR_UNDEF || addr > kMaxAddress || size > kMaxAddress - addr;
}

std::string RegionText(haddr_t addr, std::size_t size) {
  return std::to_string(size) + " bytes at offset " + std::to_string(addr);
}

void* InfoCopy(const void* info) noexcept {
  if (info == nullptr) return nullptr;
  try {
    return new DriverInfo(*static_cast<const DriverInfo*>(info));
  } catch (const std::exception&) {
    return nullptr;
  }
}

herr_t InfoFree(void* info) noexcept {
  delete static_cast<DriverInfo*>(info);
  return 0;
}

void* InfoGet(H5FD_t* file) noexcept {
  try {
    auto* info = new DriverInfo;
    info->channel = StateOf(file).channel;
    return info;
  } catch (const std::exception&) {
    return nullptr;
  }
}

H5FD_t* Open(const char* name, unsigned flags, hid_t fapl, haddr_t /*maxaddr*/) noexcept {
  try {
    const auto* info = static_cast<const DriverInfo*>(H5Pget_driver_info(fapl));
    if (info == nullptr || info->magic != kInfoMagic || !info->channel) {
      IOMIMIC_VFD_ERROR(H5E_BADVALUE, std::string("opening '") + (name ? name : "") +
                                          "': the file access property list carries no "
                                          "iomimic storage channel");
      return nullptr;
    }
    auto state = std::make_unique<DriverState>();
    state->channel = info->channel;
    StorageChannel& channel = *state->channel;
    Result<std::uint64_t> size = channel.Size();
    if (!size.ok()) {
      IOMIMIC_VFD_ERROR(H5E_CANTOPENFILE, size.status().message());
      return nullptr;
    }
    if ((flags & H5F_ACC_TRUNC) != 0 && *size != 0) {
      Status s = Status::InvalidArgument(channel.path() + ": the file to create holds " +
                                         std::to_string(*size) +
                                         " bytes, but the hdf5 driver cannot truncate; it must "
                                         "be empty");
      channel.RecordError(s);
      IOMIMIC_VFD_ERROR(H5E_CANTOPENFILE, s.message());
      return nullptr;
    }
    state->eof = *size;
    state->writable = (flags & H5F_ACC_RDWR) != 0;
    auto file = std::make_unique<DriverFile>();
    std::memset(&file->pub, 0, sizeof(file->pub));
    file->state = state.release();
    return &file.release()->pub;
  } catch (const std::exception&) {
    IOMIMIC_VFD_ERROR(H5E_CANTALLOC, "out of memory opening a file");
    return nullptr;
  }
}

herr_t Close(H5FD_t* pub) noexcept {
  auto* file = reinterpret_cast<DriverFile*>(pub);
  delete file->state;
  delete file;
  return 0;
}

int Compare(const H5FD_t* a, const H5FD_t* b) noexcept {
  const StorageChannel* x = StateOf(a).channel.get();
  const StorageChannel* y = StateOf(b).channel.get();
  if (std::less<const StorageChannel*>()(x, y)) return -1;
  if (std::less<const StorageChannel*>()(y, x)) return 1;
  return 0;
}

herr_t Query(const H5FD_t* /*file*/, unsigned long* flags) noexcept {
  if (flags != nullptr) *flags = kFeatures;
  return 0;
}

haddr_t GetEoa(const H5FD_t* file, H5FD_mem_t /*type*/) noexcept { return StateOf(file).eoa; }

herr_t SetEoa(H5FD_t* file, H5FD_mem_t /*type*/, haddr_t addr) noexcept {
  if (addr == HADDR_UNDEF || addr > kMaxAddress) {
    IOMIMIC_VFD_ERROR(H5E_OVERFLOW, "end of allocation " + std::to_string(addr) +
                                        " is beyond the driver's address space");
    return -1;
  }
  StateOf(file).eoa = addr;
  return 0;
}

haddr_t GetEof(const H5FD_t* file, H5FD_mem_t /*type*/) noexcept { return StateOf(file).eof; }

herr_t GetHandle(H5FD_t* file, hid_t /*fapl*/, void** handle) noexcept {
  if (handle == nullptr) {
    IOMIMIC_VFD_ERROR(H5E_BADVALUE, "get_handle without a place to store the handle");
    return -1;
  }
  *handle = StateOf(file).channel.get();
  return 0;
}

herr_t Read(H5FD_t* file, H5FD_mem_t /*type*/, hid_t /*dxpl*/, haddr_t addr, std::size_t size,
            void* buffer) noexcept {
  try {
    DriverState& state = StateOf(file);
    if (RegionOverflows(addr, size)) {
      IOMIMIC_VFD_ERROR(H5E_OVERFLOW, "read of " + RegionText(addr, size) +
                                          " is beyond the driver's address space");
      return -1;
    }
    Status s =
        state.channel->Read(addr, std::span<std::byte>(static_cast<std::byte*>(buffer), size));
    if (!s.ok()) {
      IOMIMIC_VFD_ERROR(H5E_READERROR, s.message());
      return -1;
    }
    return 0;
  } catch (const std::exception&) {
    IOMIMIC_VFD_ERROR(H5E_CANTALLOC, "out of memory in a read");
    return -1;
  }
}

herr_t Write(H5FD_t* file, H5FD_mem_t /*type*/, hid_t /*dxpl*/, haddr_t addr, std::size_t size,
             const void* buffer) noexcept {
  try {
    DriverState& state = StateOf(file);
    if (!state.writable) {
      IOMIMIC_VFD_ERROR(H5E_WRITEERROR,
                        "write of " + RegionText(addr, size) + " to a file opened read-only");
      return -1;
    }
    if (RegionOverflows(addr, size)) {
      IOMIMIC_VFD_ERROR(H5E_OVERFLOW, "write of " + RegionText(addr, size) +
                                          " is beyond the driver's address space");
      return -1;
    }
    // A failure stays in the channel and is not reported to HDF5 (see
    // hdf5_vfd.h): HDF5 must be able to close the file afterwards.
    (void)state.channel->Write(
        addr, std::span<const std::byte>(static_cast<const std::byte*>(buffer), size));
    state.eof = std::max<haddr_t>(state.eof, addr + size);
    return 0;
  } catch (const std::exception&) {
    IOMIMIC_VFD_ERROR(H5E_CANTALLOC, "out of memory in a write");
    return -1;
  }
}

herr_t Truncate(H5FD_t* file, hid_t /*dxpl*/, hbool_t /*closing*/) noexcept {
  try {
    DriverState& state = StateOf(file);
    if (!state.writable || state.eoa <= state.eof) return 0;
    (void)state.channel->WriteZeros(state.eof, state.eoa);  // failures stay in the channel
    state.eof = state.eoa;
    return 0;
  } catch (const std::exception&) {
    IOMIMIC_VFD_ERROR(H5E_CANTALLOC, "out of memory growing a file");
    return -1;
  }
}

#undef IOMIMIC_VFD_ERROR

// Fills the class by field name, so the layout differences between HDF5
// 1.10 (this order: name ... unlock, fl_map) and 1.14 (version, value first;
// vector/selection I/O, del, ctl) do not matter; callbacks this driver does
// not have stay null.
H5FD_class_t MakeClass() {
  H5FD_class_t c;
  std::memset(&c, 0, sizeof(c));
#if H5_VERSION_GE(1, 13, 2)
  c.version = H5FD_CLASS_VERSION;
  c.value = kDriverValue;
#endif
  c.name = kDriverName;
  c.maxaddr = kMaxAddress;
  c.fc_degree = H5F_CLOSE_WEAK;
  c.fapl_size = sizeof(DriverInfo);
  c.fapl_get = &InfoGet;
  c.fapl_copy = &InfoCopy;
  c.fapl_free = &InfoFree;
  c.open = &Open;
  c.close = &Close;
  c.cmp = &Compare;
  c.query = &Query;
  c.get_eoa = &GetEoa;
  c.set_eoa = &SetEoa;
  c.get_eof = &GetEof;
  c.get_handle = &GetHandle;
  c.read = &Read;
  c.write = &Write;
  c.truncate = &Truncate;
  const H5FD_mem_t map[H5FD_MEM_NTYPES] = H5FD_FLMAP_DICHOTOMY;
  std::copy(std::begin(map), std::end(map), std::begin(c.fl_map));
  return c;
}

struct Registration {
  std::once_flag once;
  hid_t id = H5I_INVALID_HID;
  std::string error;
};

Registration& TheRegistration() {
  static Registration registration;
  return registration;
}

Status HdfFailure(const std::string& what) {
  return Status::Internal("hdf5: " + what + ": " + TakeErrorStack().Summary());
}

}  // namespace

// ---------------------------------------------------------------------------
// StorageChannel

StorageChannel::StorageChannel(File* file, std::string path)
    : file_(file), path_(std::move(path)) {}

void StorageChannel::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  file_ = nullptr;
}

StorageChannel::Counters StorageChannel::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

Status StorageChannel::TakeStorageError() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(error_, Status::OK());
}

std::uint64_t StorageChannel::last_read_offset() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_read_offset_;
}

std::uint64_t StorageChannel::last_read_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_read_size_;
}

std::uint64_t StorageChannel::size_at_open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return size_at_open_;
}

Status StorageChannel::RecordLocked(Status status) {
  if (error_.ok()) error_ = status;
  return status;
}

void StorageChannel::RecordError(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  (void)RecordLocked(std::move(status));
}

Result<std::uint64_t> StorageChannel::Size() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_ == nullptr) {
    return RecordLocked(Status::Aborted(path_ + ": size requested after the file was closed"));
  }
  Result<std::uint64_t> size = file_->Size();
  if (!size.ok()) {
    return RecordLocked(Status(size.status().code(),
                               path_ + ": cannot get the file size: " + size.status().message()));
  }
  size_at_open_ = *size;
  return size;
}

Status StorageChannel::Read(std::uint64_t offset, std::span<std::byte> out) {
  std::lock_guard<std::mutex> lock(mu_);
  last_read_offset_ = offset;
  last_read_size_ = out.size();
  if (file_ == nullptr) {
    return RecordLocked(Status::Aborted(path_ + ": read of " + RegionText(offset, out.size()) +
                                        " after the file was closed"));
  }
  ++counters_.reads;
  counters_.read_bytes += out.size();
  if (out.empty()) return Status::OK();
  Result<std::size_t> n = file_->ReadAt(offset, out);
  if (!n.ok()) {
    return RecordLocked(Status(n.status().code(), path_ + ": read of " +
                                                      RegionText(offset, out.size()) +
                                                      " failed: " + n.status().message()));
  }
  const std::size_t got = std::min(*n, out.size());
  if (got < out.size()) std::memset(out.data() + got, 0, out.size() - got);
  return Status::OK();
}

bool StorageChannel::write_failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return write_failed_;
}

Status StorageChannel::Write(std::uint64_t offset, std::span<const std::byte> data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (write_failed_) return Status::OK();
  if (file_ == nullptr) {
    write_failed_ = true;
    return RecordLocked(Status::Aborted(path_ + ": write of " + RegionText(offset, data.size()) +
                                        " after the file was closed"));
  }
  ++counters_.writes;
  counters_.write_bytes += data.size();
  if (data.empty()) return Status::OK();
  Status s = file_->WriteAt(offset, data);
  if (!s.ok()) {
    write_failed_ = true;
    return RecordLocked(Status(s.code(), path_ + ": write of " + RegionText(offset, data.size()) +
                                             " failed: " + s.message()));
  }
  return Status::OK();
}

Status StorageChannel::WriteZeros(std::uint64_t from, std::uint64_t to) {
  while (from < to) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(to - from, kZeroBlockSize));
    IOMIMIC_RETURN_IF_ERROR(Write(from, std::span<const std::byte>(kZeroBlock, n)));
    from += n;
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Registration and property lists

Result<hid_t> DriverId() {
  Registration& r = TheRegistration();
  try {
    std::call_once(r.once, [&r] {
      QuietErrors();
      static const H5FD_class_t kClass = MakeClass();
      const hid_t id = H5FDregister(&kClass);
      if (id < 0) {
        r.error = TakeErrorStack().Summary();
      } else {
        r.id = id;
      }
    });
  } catch (const std::exception& e) {
    return Status::Internal(std::string("hdf5: registering the iomimic virtual file driver: ") +
                            e.what());
  }
  if (r.id < 0) {
    return Status::Internal("hdf5: HDF5 refused to register the iomimic virtual file driver: " +
                            r.error);
  }
  return r.id;
}

Result<Handle> MakeFileAccess(std::shared_ptr<StorageChannel> channel,
                              const FileAccessOptions& options) {
  if (!channel) return Status::Internal("hdf5: MakeFileAccess without a storage channel");
  IOMIMIC_ASSIGN_OR_RETURN(hid_t driver, DriverId());
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.valid()) return HdfFailure("creating a file access property list");
  if (H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) < 0) {
    return HdfFailure("setting the file close degree");
  }
  if (options.latest_format &&
      H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0) {
    return HdfFailure("setting the library version bounds");
  }
  if (options.sieve_buffer_size >= 0 &&
      H5Pset_sieve_buf_size(fapl.get(), static_cast<std::size_t>(options.sieve_buffer_size)) < 0) {
    return HdfFailure("setting the sieve buffer size");
  }
  DriverInfo info;
  info.channel = std::move(channel);
  if (H5Pset_driver(fapl.get(), driver, &info) < 0) {
    return HdfFailure("selecting the iomimic virtual file driver");
  }
  return fapl;
}

}  // namespace iomimic::hdf5
