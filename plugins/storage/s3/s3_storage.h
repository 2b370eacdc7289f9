// The `s3` storage back end: objects in an S3-compatible store (AWS S3, Ceph
// radosgw, MinIO...) over HTTP with libcurl (s3_client.h).
//
// Paths are "s3://bucket/key", or "bucket/key" (DLIO joins storage_root, the
// bucket, to relative folders). The back end declares `objects`
// (iomimic/storage.h): what it writes appears whole under its final key
// when Close succeeds and never otherwise; folders are key prefixes.
//
//   * Reads (read_mode): `whole` (default, DLIO's pattern) fetches the whole
//     object with one GET, straight into the caller's buffer when the read
//     covers the object, else into a per-file copy that later reads are
//     served from; objects larger than whole_object_max are read in ranges
//     instead. `ranged` splits every read into GETs of range_size bytes,
//     ranges_in_flight at once (ReadBatch puts all its requests' ranges in
//     flight together), as s3dlio and vendor tools measure.
//   * Writes are staged in memory. An object that ends at or below
//     multipart_threshold bytes is one PUT at Close. Above it, while the
//     writes arrive in order, parts of part_size bytes are uploaded
//     parts_in_flight at a time as they fill (memory: parts_in_flight
//     parts), and Close uploads the rest and completes the upload. A format
//     that writes out of order keeps the whole file in memory until Close
//     (then multipart); writing before bytes already uploaded is an error
//     that says so. A file being written reads back its staged bytes (HDF5
//     does). Any failure, File::Abort, or a file destroyed without Close
//     aborts the multipart upload: no partial object is ever visible.
//   * Requests failing with a transport error, HTTP 5xx or 429 are retried
//     with doubling backoff up to s3_max_attempts tries. Errors name the
//     method, s3://bucket/key, the HTTP code and S3's error code.
//   * Credentials: options access_key_id and secret_access_key, else the
//     environment's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and
//     AWS_SESSION_TOKEN); endpoint_url else AWS_ENDPOINT_URL_S3 or
//     AWS_ENDPOINT_URL; region else AWS_REGION, AWS_DEFAULT_REGION,
//     us-east-1. They are never printed; the run's results redact them.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"
#include "s3_client.h"

namespace iomimic::s3 {

enum class ReadMode { kWhole, kRanged };

struct S3Options {
  ClientOptions client;
  ReadMode read_mode = ReadMode::kWhole;
  std::uint64_t range_size = std::uint64_t{8} << 20;
  std::uint64_t ranges_in_flight = 8;
  std::uint64_t whole_object_max = std::uint64_t{512} << 20;
  std::uint64_t multipart_threshold = std::uint64_t{16} << 20;
  std::uint64_t part_size = std::uint64_t{8} << 20;
  std::uint64_t parts_in_flight = 4;
  std::int64_t fail_after_parts = -1;  // testing: a multipart upload fails after N parts
  std::string storage_library;         // MLPerf v3's client name, accepted and recorded
  // endpoint_per_rank: rank r sends every request to client.endpoints[r mod N]
  // (MLPerf v3's use_mpi_endpoint_distribution); applied at creation.
  bool endpoint_per_rank = false;
};

// Options, with the environment's values where an option is empty.
// `environment` looks a variable up (std::getenv in the plugin; tests pass
// their own). Errors name the option, never a credential's value.
Result<S3Options> ParseOptions(const PluginOptions& options,
                               const char* (*environment)(const char*));

// One entry of a listing.
struct ObjectEntry {
  std::string key;
  std::uint64_t size = 0;
};

struct S3Counters {
  std::atomic<std::uint64_t> multipart_uploads{0};
  std::atomic<std::uint64_t> aborted_uploads{0};
  std::atomic<std::uint64_t> whole_gets{0};
  std::atomic<std::uint64_t> ranged_gets{0};
  std::atomic<std::uint64_t> puts{0};
};

class S3Storage final : public Storage {
 public:
  S3Storage(const S3Options& options, std::unique_ptr<Client> client);

  std::string name() const override { return "s3"; }
  StorageCapabilities capabilities() const override;
  Result<std::unique_ptr<File>> Open(const std::string& path, const OpenOptions& options) override;
  // Folders are prefixes: nothing is created. Checks that the bucket exists
  // (once per bucket), so a wrong bucket fails here with a clear message.
  Status CreateDirectories(const std::string& path) override;
  Status Remove(const std::string& path) override;
  // Server-side copy, then delete of `from` (objects up to 5 GiB).
  Status Rename(const std::string& from, const std::string& to) override;
  // An object's size; a prefix with objects under it is a directory; a
  // bucket is a directory.
  Result<FileInfo> Stat(const std::string& path) override;
  std::vector<StorageStatistic> Statistics() const override;

  // ListObjectsV2 of every key under `prefix` (all pages).
  Result<std::vector<ObjectEntry>> List(const std::string& bucket, const std::string& prefix);

  Client& client() { return *client_; }

  // Buffers for whole objects (read_mode whole), reused from one object to
  // the next: Take returns the largest idle one (or a new empty one), Give
  // keeps it for the next object while at most 64 buffers and 1 GiB are
  // idle, else frees it. Thread-safe.
  std::unique_ptr<BodyBuffer> TakeBuffer();
  void GiveBuffer(std::unique_ptr<BodyBuffer> buffer);

 private:
  // A HEAD of `key` in `bucket` (of the bucket itself when `key` is empty):
  // the finished request, a 404 included (http_code 404, status OK); other
  // failures as Client::Perform returns them.
  Result<Request> Head(const std::string& bucket, const std::string& key);

  S3Options options_;
  std::unique_ptr<Client> client_;
  S3Counters counters_;
  std::mutex buckets_mutex_;
  std::vector<std::string> checked_buckets_;
  std::mutex buffers_mutex_;
  std::vector<std::unique_ptr<BodyBuffer>> idle_buffers_;
  std::size_t idle_bytes_ = 0;
};

Result<std::unique_ptr<Storage>> CreateS3Storage(const PluginContext& context);

}  // namespace iomimic::s3
