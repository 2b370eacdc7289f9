#include "s3_storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace iomimic::s3 {

// The descriptor's flags, and what capabilities() may claim (async with read_mode ranged).
constexpr std::uint64_t kCapabilities = IOMIMIC_CAP_ASYNC | IOMIMIC_CAP_ENDPOINT;
namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// One multipart upload: initiate, parts, complete or abort.
class Upload {
 public:
  Upload(Client* client, const S3Options* options, S3Counters* counters, ObjectName name)
      : client_(client), options_(options), counters_(counters), name_(std::move(name)) {}

  bool started() const { return !upload_id_.empty(); }
  std::size_t parts() const { return etags_.size(); }

  Status Initiate() {
    Request r;
    r.method = "POST";
    r.bucket = name_.bucket;
    r.key = name_.key;
    r.query = {{"uploads", ""}};
    IOMIMIC_RETURN_IF_ERROR(client_->Perform(r));
    std::size_t at = 0;
    upload_id_ = XmlElement(r.body, "UploadId", &at);
    if (upload_id_.empty()) {
      return Status::IOError("s3: POST " + Describe(name_.bucket, name_.key) +
                             "?uploads: the answer has no UploadId");
    }
    counters_->multipart_uploads.fetch_add(1, std::memory_order_relaxed);
    return Status::OK();
  }

  // Uploads `data` as the next parts (part_size each, the last may be
  // shorter), parts_in_flight at a time.
  Status Parts(std::span<const std::byte> data) {
    if (!started()) IOMIMIC_RETURN_IF_ERROR(Initiate());
    const std::size_t part = static_cast<std::size_t>(options_->part_size);
    std::vector<Request> requests;
    for (std::size_t at = 0; at < data.size(); at += part) {
      const std::size_t number = etags_.size() + requests.size() + 1;
      if (options_->fail_after_parts >= 0 &&
          number > static_cast<std::size_t>(options_->fail_after_parts)) {
        // Upload what came before, then fail as a lost connection would.
        Status s = Send(requests);
        if (!s.ok()) return s;
        return Status::IOError("s3: PUT " + Describe(name_.bucket, name_.key) + " part " +
                               std::to_string(number) +
                               ": injected failure (storage option fail_after_parts = " +
                               std::to_string(options_->fail_after_parts) + ")");
      }
      Request r;
      r.method = "PUT";
      r.bucket = name_.bucket;
      r.key = name_.key;
      r.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id_}};
      r.upload = data.subspan(at, std::min(part, data.size() - at));
      requests.push_back(std::move(r));
    }
    return Send(requests);
  }

  Status Complete() {
    std::string xml = "<CompleteMultipartUpload>";
    for (std::size_t i = 0; i < etags_.size(); ++i) {
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags_[i] +
             "</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    Request r;
    r.method = "POST";
    r.bucket = name_.bucket;
    r.key = name_.key;
    r.query = {{"uploadId", upload_id_}};
    r.headers = {"Content-Type: application/xml"};
    r.upload = std::as_bytes(std::span(xml.data(), xml.size()));
    IOMIMIC_RETURN_IF_ERROR(client_->Perform(r));
    // S3 may answer 200 with an error in the body.
    if (r.body.find("<Error>") != std::string::npos) {
      r.http_code = 200;
      return StatusForHttp(r);
    }
    upload_id_.clear();
    return Status::OK();
  }

  // Cancels the upload: its parts are dropped, no object appears.
  Status Abort() {
    if (!started()) return Status::OK();
    Request r;
    r.method = "DELETE";
    r.bucket = name_.bucket;
    r.key = name_.key;
    r.query = {{"uploadId", upload_id_}};
    r.not_found_ok = true;
    upload_id_.clear();
    counters_->aborted_uploads.fetch_add(1, std::memory_order_relaxed);
    return client_->Perform(r);
  }

 private:
  Status Send(std::vector<Request>& requests) {
    std::vector<Request*> pointers;
    for (Request& r : requests) pointers.push_back(&r);
    Status s = client_->Perform(pointers, static_cast<std::size_t>(options_->parts_in_flight));
    if (!s.ok()) return s;
    for (const Request& r : requests) {
      if (r.etag.empty()) {
        return Status::IOError("s3: PUT " + Describe(name_.bucket, name_.key) +
                               " part: the answer has no ETag");
      }
      etags_.push_back(r.etag);
    }
    return Status::OK();
  }

  Client* client_;
  const S3Options* options_;
  S3Counters* counters_;
  ObjectName name_;
  std::string upload_id_;
  std::vector<std::string> etags_;
};

class S3WriteFile final : public File {
 public:
  S3WriteFile(Client* client, const S3Options* options, S3Counters* counters, std::string path,
              ObjectName name, std::uint64_t expected_size)
      : client_(client),
        options_(options),
        counters_(counters),
        path_(std::move(path)),
        name_(name),
        upload_(client, options, counters, name) {
    if (expected_size > 0) {
      stage_.reserve(static_cast<std::size_t>(
          std::min(expected_size,
                   options->multipart_threshold + options->part_size * options->parts_in_flight)));
    }
  }
  ~S3WriteFile() override {
    if (!closed_) (void)Abort();
  }

  // Reads what was written and is still staged (libraries such as HDF5
  // read back what they wrote); bytes uploaded as parts already cannot be.
  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    if (closed_) return Status::InvalidArgument("s3: " + path_ + ": read on a closed file");
    if (offset >= end_ || destination.empty()) return std::size_t{0};
    if (offset < base_) {
      return Status::NotSupported("s3: " + path_ + ": read at offset " + std::to_string(offset) +
                                  " of bytes uploaded as multipart parts already; raise storage "
                                  "option multipart_threshold above the file size");
    }
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(destination.size(), end_ - offset));
    std::memcpy(destination.data(), stage_.data() + (offset - base_), n);
    return n;
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte> source) override {
    if (closed_) return Status::InvalidArgument("s3: " + path_ + ": write on a closed file");
    if (!failed_.ok()) return failed_;
    if (source.empty()) return Status::OK();
    if (offset < base_) {
      failed_ = Status::NotSupported(
          "s3: " + path_ + ": write at offset " + std::to_string(offset) +
          " after the bytes before " + std::to_string(base_) +
          " were uploaded as multipart parts (this format writes out of order); raise storage "
          "option multipart_threshold above the file size to stage the file whole in memory");
      return failed_;
    }
    if (offset != end_) sequential_ = false;
    const std::uint64_t stop = offset + source.size();
    if (stop - base_ > stage_.size()) stage_.resize(static_cast<std::size_t>(stop - base_));
    std::memcpy(stage_.data() + (offset - base_), source.data(), source.size());
    end_ = std::max(end_, stop);
    // Stream full parts while the writes come in order and the object is
    // bound for a multipart upload.
    const std::uint64_t batch = options_->part_size * options_->parts_in_flight;
    if (sequential_ && end_ > options_->multipart_threshold && stage_.size() >= batch) {
      const std::size_t whole = stage_.size() / static_cast<std::size_t>(options_->part_size) *
                                static_cast<std::size_t>(options_->part_size);
      Status s = upload_.Parts(std::span<const std::byte>(stage_.data(), whole));
      if (!s.ok()) {
        failed_ = s;
        return s;
      }
      stage_.erase(stage_.begin(), stage_.begin() + static_cast<std::ptrdiff_t>(whole));
      base_ += whole;
    }
    return Status::OK();
  }

  // Durable at Close (an object exists only once complete).
  Status Sync() override {
    if (closed_) return Status::InvalidArgument("s3: " + path_ + ": sync on a closed file");
    return failed_;
  }

  Result<std::uint64_t> Size() override { return end_; }

  Status Close() override {
    if (closed_) return Status::OK();
    if (!failed_.ok()) {
      (void)Abort();
      return failed_;
    }
    Status s;
    if (!upload_.started() && end_ <= options_->multipart_threshold) {
      Request r;
      r.method = "PUT";
      r.bucket = name_.bucket;
      r.key = name_.key;
      r.upload = std::span<const std::byte>(stage_.data(), stage_.size());
      s = client_->Perform(r);
      counters_->puts.fetch_add(1, std::memory_order_relaxed);
    } else {
      s = upload_.Parts(std::span<const std::byte>(stage_.data(), stage_.size()));
      if (s.ok()) s = upload_.Complete();
    }
    if (!s.ok()) {
      (void)upload_.Abort();
    }
    closed_ = true;
    stage_ = {};
    return s;
  }

  Status Abort() override {
    if (closed_) return Status::OK();
    closed_ = true;
    stage_ = {};
    return upload_.Abort();
  }

  const std::string& path() const override { return path_; }

 private:
  Client* client_;
  const S3Options* options_;
  S3Counters* counters_;
  std::string path_;
  ObjectName name_;
  Upload upload_;
  std::vector<std::byte> stage_;  // bytes [base_, base_ + stage_.size())
  std::uint64_t base_ = 0;
  std::uint64_t end_ = 0;
  bool sequential_ = true;
  bool closed_ = false;
  Status failed_;
};

// An object opened for reading. In read_mode whole (DLIO's pattern: one GET
// per sample) the object was fetched whole by the open, into a buffer the
// storage lends (`body`), and reads copy from it; otherwise (ranged mode, or
// an object above whole_object_max) every read is one or more ranged GETs.
class S3ReadFile final : public File {
 public:
  S3ReadFile(S3Storage* storage, const S3Options* options, S3Counters* counters, std::string path,
             ObjectName name, std::uint64_t size, std::unique_ptr<BodyBuffer> body)
      : storage_(storage),
        client_(&storage->client()),
        options_(options),
        counters_(counters),
        path_(std::move(path)),
        name_(std::move(name)),
        size_(size),
        body_(std::move(body)) {}
  ~S3ReadFile() override { (void)Close(); }

  Result<std::size_t> ReadAt(std::uint64_t offset, std::span<std::byte> destination) override {
    if (closed_) return Status::InvalidArgument("s3: " + path_ + ": read on a closed file");
    if (offset >= size_ || destination.empty()) return std::size_t{0};
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(destination.size(), size_ - offset));
    destination = destination.first(n);
    if (body_ == nullptr) {
      ReadRequest one;
      one.offset = offset;
      one.destination = destination;
      IOMIMIC_RETURN_IF_ERROR(Ranged(std::span<ReadRequest>(&one, 1)));
      return one.bytes_read;
    }
    std::memcpy(destination.data(), body_->data.get() + offset, n);
    return n;
  }

  Status ReadBatch(std::span<ReadRequest> requests) override {
    if (body_ != nullptr) return File::ReadBatch(requests);
    if (closed_) return Status::InvalidArgument("s3: " + path_ + ": read on a closed file");
    return Ranged(requests);
  }

  Status WriteAt(std::uint64_t offset, std::span<const std::byte>) override {
    return Status::NotSupported("s3: " + path_ + ": write at offset " + std::to_string(offset) +
                                " of an object opened for reading");
  }
  Status Sync() override { return Status::OK(); }
  Result<std::uint64_t> Size() override { return size_; }
  Status Close() override {
    closed_ = true;
    if (body_ != nullptr) storage_->GiveBuffer(std::move(body_));
    return Status::OK();
  }
  const std::string& path() const override { return path_; }

 private:
  // Every request split into ranges of range_size, all in flight together
  // (ranges_in_flight at a time), each straight into its destination.
  Status Ranged(std::span<ReadRequest> requests) {
    std::vector<Request> gets;
    std::vector<std::size_t> owner;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      ReadRequest& rq = requests[i];
      rq.bytes_read = 0;
      rq.status = Status::OK();
      if (rq.offset >= size_) continue;
      const std::uint64_t n = std::min<std::uint64_t>(rq.destination.size(), size_ - rq.offset);
      for (std::uint64_t at = 0; at < n; at += options_->range_size) {
        Request r;
        r.bucket = name_.bucket;
        r.key = name_.key;
        r.range_offset = rq.offset + at;
        r.range_length = std::min(options_->range_size, n - at);
        r.download = rq.destination.subspan(static_cast<std::size_t>(at),
                                            static_cast<std::size_t>(r.range_length));
        gets.push_back(std::move(r));
        owner.push_back(i);
      }
    }
    std::vector<Request*> pointers;
    for (Request& r : gets) pointers.push_back(&r);
    (void)client_->Perform(pointers, static_cast<std::size_t>(options_->ranges_in_flight));
    counters_->ranged_gets.fetch_add(gets.size(), std::memory_order_relaxed);
    Status first;
    for (std::size_t k = 0; k < gets.size(); ++k) {
      ReadRequest& rq = requests[owner[k]];
      Status s = gets[k].status;
      if (s.ok() && gets[k].received != gets[k].range_length) {
        s = Status::Corruption("s3: GET " + Describe(name_.bucket, name_.key) + " bytes " +
                               std::to_string(gets[k].range_offset) + "+" +
                               std::to_string(gets[k].range_length) + ": got " +
                               std::to_string(gets[k].received) + " bytes");
      }
      if (!s.ok()) {
        if (rq.status.ok()) rq.status = s;
        if (first.ok()) first = s;
      } else {
        rq.bytes_read += gets[k].received;
      }
    }
    for (ReadRequest& rq : requests) {
      if (!rq.status.ok()) rq.bytes_read = 0;
    }
    return first;
  }

  S3Storage* storage_;
  Client* client_;
  const S3Options* options_;
  S3Counters* counters_;
  std::string path_;
  ObjectName name_;
  std::uint64_t size_;
  std::unique_ptr<BodyBuffer> body_;  // read_mode whole: the object
  bool closed_ = false;
};

}  // namespace

namespace {

// The options that say where and how the client connects (endpoint, region,
// keys, tries, addressing, TLS), with their environment fallbacks, into
// `*client`.
Status ParseConnection(const PluginOptions& opts, const char* (*environment)(const char*),
                       ClientOptions* client) {
  ClientOptions& c = *client;
  auto env = [&](const char* name) -> std::string {
    const char* v = environment == nullptr ? nullptr : environment(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  IOMIMIC_ASSIGN_OR_RETURN(c.endpoint, opts.GetString("endpoint_url", ""));
  if (c.endpoint.empty()) c.endpoint = env("AWS_ENDPOINT_URL_S3");
  if (c.endpoint.empty()) c.endpoint = env("AWS_ENDPOINT_URL");
  IOMIMIC_ASSIGN_OR_RETURN(c.region, opts.GetString("region", ""));
  if (c.region.empty()) c.region = env("AWS_REGION");
  if (c.region.empty()) c.region = env("AWS_DEFAULT_REGION");
  if (c.region.empty()) c.region = "us-east-1";
  IOMIMIC_ASSIGN_OR_RETURN(const std::string endpoint_urls, opts.GetString("endpoint_urls", ""));
  // An endpoint_url given empty (a ${VAR} or an override of an unset
  // variable) is a mistake, not a wish for AWS: refused rather than sent to
  // AWS's regional endpoint without a word. Left out, it means AWS.
  if (c.endpoint.empty() && opts.Has("endpoint_url") && endpoint_urls.empty()) {
    return Status::InvalidArgument(
        opts.owner() +
        ": option 'endpoint_url' is empty (an unset variable?) and neither "
        "AWS_ENDPOINT_URL_S3 nor AWS_ENDPOINT_URL is set; give the endpoint "
        "(http(s)://host:port), or leave the option out for AWS's regional endpoint (https://s3." +
        c.region + ".amazonaws.com)");
  }
  if (c.endpoint.empty()) c.endpoint = "https://s3." + c.region + ".amazonaws.com";
  IOMIMIC_ASSIGN_OR_RETURN(c.access_key_id, opts.GetString("access_key_id", ""));
  IOMIMIC_ASSIGN_OR_RETURN(c.secret_access_key, opts.GetString("secret_access_key", ""));
  // Both from the manifest, or both from the environment: never a mix.
  if (c.access_key_id.empty() && c.secret_access_key.empty()) {
    c.access_key_id = env("AWS_ACCESS_KEY_ID");
    c.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
    c.session_token = env("AWS_SESSION_TOKEN");
  }
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t attempts, opts.GetInt("s3_max_attempts", 5));
  if (attempts < 1 || attempts > 100) {
    return Status::InvalidArgument(opts.owner() + ": option 's3_max_attempts' = " +
                                   std::to_string(attempts) + " is not in 1..100");
  }
  c.max_attempts = static_cast<int>(attempts);
  IOMIMIC_ASSIGN_OR_RETURN(c.addressing, opts.GetChoice("addressing_style", Addressing::kAuto,
                                                        {{"auto", Addressing::kAuto},
                                                         {"path", Addressing::kPath},
                                                         {"virtual", Addressing::kVirtual}}));
  // DLIO's key: True forces path style; False leaves the choice to
  // addressing_style (auto: what the AWS SDKs do).
  IOMIMIC_ASSIGN_OR_RETURN(bool force_path, opts.GetBool("s3_force_path_style", false));
  if (force_path) {
    if (c.addressing == Addressing::kVirtual) {
      return Status::InvalidArgument(opts.owner() +
                                     ": options 's3_force_path_style' = True and "
                                     "'addressing_style' = virtual contradict each other");
    }
    c.addressing = Addressing::kPath;
  }
  IOMIMIC_ASSIGN_OR_RETURN(c.verify_tls, opts.GetBool("verify_tls", true));
  return Status::OK();
}

// The endpoints of a comma-separated list, spaces around each trimmed, empty
// ones left out.
std::vector<std::string> SplitEndpoints(const std::string& endpoint_urls) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < endpoint_urls.size();) {
    std::size_t comma = endpoint_urls.find(',', at);
    if (comma == std::string::npos) comma = endpoint_urls.size();
    std::string url = endpoint_urls.substr(at, comma - at);
    url.erase(0, url.find_first_not_of(' '));
    url.erase(url.find_last_not_of(' ') + 1);
    if (!url.empty()) out.push_back(std::move(url));
    at = comma + 1;
  }
  return out;
}

}  // namespace

Result<S3Options> ParseOptions(const PluginOptions& opts, const char* (*environment)(const char*)) {
  S3Options out;
  ClientOptions& c = out.client;
  IOMIMIC_RETURN_IF_ERROR(ParseConnection(opts, environment, &c));
  IOMIMIC_ASSIGN_OR_RETURN(
      out.read_mode, opts.GetChoice("read_mode", ReadMode::kWhole,
                                    {{"whole", ReadMode::kWhole}, {"ranged", ReadMode::kRanged}}));
  IOMIMIC_ASSIGN_OR_RETURN(out.range_size, opts.GetBytes("range_size", out.range_size));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t ranges, opts.GetInt("ranges_in_flight", 8));
  IOMIMIC_ASSIGN_OR_RETURN(out.whole_object_max,
                           opts.GetBytes("whole_object_max", out.whole_object_max));
  IOMIMIC_ASSIGN_OR_RETURN(out.multipart_threshold,
                           opts.GetBytes("multipart_threshold", out.multipart_threshold));
  IOMIMIC_ASSIGN_OR_RETURN(out.part_size, opts.GetBytes("part_size", out.part_size));
  IOMIMIC_ASSIGN_OR_RETURN(std::int64_t parts, opts.GetInt("parts_in_flight", 4));
  IOMIMIC_ASSIGN_OR_RETURN(out.fail_after_parts, opts.GetInt("fail_after_parts", -1));
  IOMIMIC_ASSIGN_OR_RETURN(out.storage_library, opts.GetString("storage_library", ""));
  IOMIMIC_ASSIGN_OR_RETURN(const std::string endpoint_urls, opts.GetString("endpoint_urls", ""));
  c.endpoints = SplitEndpoints(endpoint_urls);
  IOMIMIC_ASSIGN_OR_RETURN(c.balance,
                           opts.GetChoice("load_balance", Balance::kRoundRobin,
                                          {{"round_robin", Balance::kRoundRobin},
                                           {"least_connections", Balance::kLeastConnections},
                                           {"random", Balance::kRandom}}));
  IOMIMIC_ASSIGN_OR_RETURN(out.endpoint_per_rank, opts.GetBool("endpoint_per_rank", false));
  if (out.endpoint_per_rank && c.endpoints.empty()) {
    return Status::InvalidArgument(opts.owner() +
                                   ": option 'endpoint_per_rank' needs 'endpoint_urls'");
  }
  if (out.range_size == 0) {
    return Status::InvalidArgument(opts.owner() + ": option 'range_size' must be > 0");
  }
  if (ranges < 1 || ranges > 1024 || parts < 1 || parts > 1024) {
    return Status::InvalidArgument(opts.owner() +
                                   ": options 'ranges_in_flight' and 'parts_in_flight' must be "
                                   "in 1..1024");
  }
  out.ranges_in_flight = static_cast<std::uint64_t>(ranges);
  out.parts_in_flight = static_cast<std::uint64_t>(parts);
  // S3's limits: parts of 5 MiB..5 GiB (the last may be smaller).
  if (out.part_size < (std::uint64_t{5} << 20) || out.part_size > (std::uint64_t{5} << 30)) {
    return Status::InvalidArgument(opts.owner() +
                                   ": option 'part_size' = " + std::to_string(out.part_size) +
                                   " is outside S3's 5 MiB..5 GiB part sizes");
  }
  if (out.multipart_threshold > (std::uint64_t{5} << 30)) {
    return Status::InvalidArgument(opts.owner() + ": option 'multipart_threshold' = " +
                                   std::to_string(out.multipart_threshold) +
                                   " is above S3's 5 GiB single PUT");
  }
  return out;
}

S3Storage::S3Storage(const S3Options& options, std::unique_ptr<Client> client)
    : options_(options), client_(std::move(client)) {}

StorageCapabilities S3Storage::capabilities() const {
  StorageCapabilities caps = CapabilitiesAllowedBy(kCapabilities);
  caps.objects = true;
  caps.async = caps.async && options_.read_mode == ReadMode::kRanged;
  caps.queue_depth = caps.async ? static_cast<std::uint32_t>(options_.ranges_in_flight) : 1;
  caps.data_path = options_.read_mode == ReadMode::kRanged ? "s3-ranged-get" : "s3-whole-get";
  return caps;
}

Result<std::unique_ptr<File>> S3Storage::Open(const std::string& path, const OpenOptions& options) {
  IOMIMIC_ASSIGN_OR_RETURN(ObjectName name, ParsePath(path));
  if (name.key.empty()) {
    return Status::InvalidArgument("s3: " + path + " names a bucket, not an object");
  }
  switch (options.mode) {
    case OpenMode::kWrite:
      return std::unique_ptr<File>(
          new S3WriteFile(client_.get(), &options_, &counters_, path, name, options.expected_size));
    case OpenMode::kReadWrite:
      return Status::NotSupported("s3: " + path +
                                  ": objects cannot be opened for reading and writing (they are "
                                  "written whole, then read)");
    case OpenMode::kRead:
      break;
  }
  if (options_.read_mode == ReadMode::kWhole) {
    // DLIO's pattern: one GET of the whole object, made here so the open
    // needs no HEAD for the size; an object above whole_object_max stops
    // after the headers and is read with ranged GETs instead.
    std::unique_ptr<BodyBuffer> body = TakeBuffer();
    Request get;
    get.bucket = name.bucket;
    get.key = name.key;
    get.sink = body.get();
    get.max_body = options_.whole_object_max;
    get.not_found_ok = true;
    Status s = client_->Perform(get);
    if (s.ok() && get.http_code == 404) {
      s = Status::NotFound("s3: " + Describe(name.bucket, name.key) + ": no such object");
    }
    if (!s.ok() || get.too_large) {
      GiveBuffer(std::move(body));
      IOMIMIC_RETURN_IF_ERROR(s);
      return std::unique_ptr<File>(
          new S3ReadFile(this, &options_, &counters_, path, name, get.content_length, nullptr));
    }
    counters_.whole_gets.fetch_add(1, std::memory_order_relaxed);
    return std::unique_ptr<File>(
        new S3ReadFile(this, &options_, &counters_, path, name, get.received, std::move(body)));
  }
  IOMIMIC_ASSIGN_OR_RETURN(Request head, Head(name.bucket, name.key));
  if (head.http_code == 404) {
    return Status::NotFound("s3: " + Describe(name.bucket, name.key) + ": no such object");
  }
  return std::unique_ptr<File>(
      new S3ReadFile(this, &options_, &counters_, path, name, head.content_length, nullptr));
}

Result<Request> S3Storage::Head(const std::string& bucket, const std::string& key) {
  Request head;
  head.method = "HEAD";
  head.bucket = bucket;
  head.key = key;
  head.not_found_ok = true;
  IOMIMIC_RETURN_IF_ERROR(client_->Perform(head));
  return head;
}

std::unique_ptr<BodyBuffer> S3Storage::TakeBuffer() {
  std::lock_guard lock(buffers_mutex_);
  if (idle_buffers_.empty()) return std::make_unique<BodyBuffer>();
  auto largest =
      std::max_element(idle_buffers_.begin(), idle_buffers_.end(),
                       [](const auto& a, const auto& b) { return a->capacity < b->capacity; });
  std::unique_ptr<BodyBuffer> out = std::move(*largest);
  idle_buffers_.erase(largest);
  idle_bytes_ -= out->capacity;
  return out;
}

void S3Storage::GiveBuffer(std::unique_ptr<BodyBuffer> buffer) {
  constexpr std::size_t kMaxIdleBuffers = 64;
  constexpr std::size_t kMaxIdleBytes = std::size_t{1} << 30;
  if (buffer == nullptr || buffer->capacity == 0) return;
  std::lock_guard lock(buffers_mutex_);
  if (idle_buffers_.size() >= kMaxIdleBuffers || idle_bytes_ + buffer->capacity > kMaxIdleBytes) {
    return;  // freed
  }
  idle_bytes_ += buffer->capacity;
  idle_buffers_.push_back(std::move(buffer));
}

Status S3Storage::CreateDirectories(const std::string& path) {
  IOMIMIC_ASSIGN_OR_RETURN(ObjectName name, ParsePath(path));
  {
    std::lock_guard lock(buckets_mutex_);
    if (std::find(checked_buckets_.begin(), checked_buckets_.end(), name.bucket) !=
        checked_buckets_.end()) {
      return Status::OK();
    }
  }
  IOMIMIC_ASSIGN_OR_RETURN(Request r, Head(name.bucket, ""));
  if (r.http_code == 404) {
    return Status::NotFound("s3: bucket '" + name.bucket + "' does not exist (at " +
                            (r.endpoint.empty() ? options_.client.endpoint : r.endpoint) +
                            "); create it, or set storage_root / the folders to an existing "
                            "bucket");
  }
  std::lock_guard lock(buckets_mutex_);
  checked_buckets_.push_back(name.bucket);
  return Status::OK();
}

Status S3Storage::Remove(const std::string& path) {
  IOMIMIC_ASSIGN_OR_RETURN(ObjectName name, ParsePath(path));
  IOMIMIC_ASSIGN_OR_RETURN(Request head, Head(name.bucket, name.key));
  if (head.http_code == 404) {
    return Status::NotFound("s3: remove " + Describe(name.bucket, name.key) + ": no such object");
  }
  Request r;
  r.method = "DELETE";
  r.bucket = name.bucket;
  r.key = name.key;
  return client_->Perform(r);
}

Status S3Storage::Rename(const std::string& from, const std::string& to) {
  IOMIMIC_ASSIGN_OR_RETURN(ObjectName source, ParsePath(from));
  IOMIMIC_ASSIGN_OR_RETURN(ObjectName target, ParsePath(to));
  Request copy;
  copy.method = "PUT";
  copy.bucket = target.bucket;
  copy.key = target.key;
  copy.headers = {"x-amz-copy-source: /" + UriEncode(source.bucket, false) + "/" +
                  UriEncode(source.key, true)};
  Status copied = client_->Perform(copy);
  if (copied.ok() && copy.body.find("<Error>") != std::string::npos) copied = StatusForHttp(copy);
  if (!copied.ok()) {
    // The copy is a PUT of the target; the caller asked to move the source.
    return Status(copied.code(), "s3: rename " + Describe(source.bucket, source.key) + " to " +
                                     Describe(target.bucket, target.key) + ": " + copied.message());
  }
  Request remove;
  remove.method = "DELETE";
  remove.bucket = source.bucket;
  remove.key = source.key;
  return client_->Perform(remove);
}

Result<FileInfo> S3Storage::Stat(const std::string& path) {
  IOMIMIC_ASSIGN_OR_RETURN(ObjectName name, ParsePath(path));
  IOMIMIC_ASSIGN_OR_RETURN(Request head, Head(name.bucket, name.key));
  FileInfo info;
  if (head.http_code != 404) {
    info.is_directory = name.key.empty();
    info.size = name.key.empty() ? 0 : head.content_length;
    return info;
  }
  if (name.key.empty()) {
    return Status::NotFound("s3: bucket '" + name.bucket + "' does not exist");
  }
  // A prefix with something under it is a folder.
  Request list;
  list.bucket = name.bucket;
  list.query = {{"list-type", "2"}, {"max-keys", "1"}, {"prefix", name.key + "/"}};
  IOMIMIC_RETURN_IF_ERROR(client_->Perform(list));
  std::size_t at = 0;
  if (!XmlElement(list.body, "Key", &at).empty()) {
    info.is_directory = true;
    return info;
  }
  return Status::NotFound("s3: " + Describe(name.bucket, name.key) +
                          ": no such object (nor objects under it)");
}

Result<std::vector<ObjectEntry>> S3Storage::List(const std::string& bucket,
                                                 const std::string& prefix) {
  std::vector<ObjectEntry> out;
  std::string token;
  for (;;) {
    Request list;
    list.bucket = bucket;
    list.query = {{"list-type", "2"}, {"prefix", prefix}};
    if (!token.empty()) list.query.push_back({"continuation-token", token});
    IOMIMIC_RETURN_IF_ERROR(client_->Perform(list));
    std::size_t at = 0;
    for (;;) {
      const std::string entry = XmlElement(list.body, "Contents", &at);
      if (at == std::string::npos) break;
      std::size_t in = 0;
      ObjectEntry e;
      e.key = XmlElement(entry, "Key", &in);
      in = 0;
      e.size = std::strtoull(XmlElement(entry, "Size", &in).c_str(), nullptr, 10);
      out.push_back(std::move(e));
    }
    at = 0;
    const bool truncated = Lower(XmlElement(list.body, "IsTruncated", &at)) == "true";
    at = 0;
    token = XmlElement(list.body, "NextContinuationToken", &at);
    if (!truncated || token.empty()) break;
  }
  return out;
}

std::vector<StorageStatistic> S3Storage::Statistics() const {
  const ClientStats s = client_->stats();
  std::vector<StorageStatistic> stats = {
      {"s3_requests", static_cast<double>(s.requests)},
      {"s3_retried_requests", static_cast<double>(s.retries)},
      {"s3_connections_opened", static_cast<double>(s.connections)},
      {"s3_received_bytes", static_cast<double>(s.bytes_received)},
      {"s3_sent_bytes", static_cast<double>(s.bytes_sent)},
      {"s3_whole_gets", static_cast<double>(counters_.whole_gets.load())},
      {"s3_ranged_gets", static_cast<double>(counters_.ranged_gets.load())},
      {"s3_single_puts", static_cast<double>(counters_.puts.load())},
      {"s3_multipart_uploads", static_cast<double>(counters_.multipart_uploads.load())},
      {"s3_aborted_uploads", static_cast<double>(counters_.aborted_uploads.load())},
  };
  // Several endpoints: the requests each received (retries included).
  if (!options_.client.endpoints.empty()) {
    const std::vector<std::uint64_t> per = client_->EndpointRequests();
    for (std::size_t i = 0; i < per.size(); ++i) {
      stats.push_back(
          {"s3_endpoint_" + std::to_string(i) + "_requests", static_cast<double>(per[i])});
    }
  }
  return stats;
}

Result<std::unique_ptr<Storage>> CreateS3Storage(const PluginContext& context) {
  IOMIMIC_ASSIGN_OR_RETURN(S3Options options,
                           ParseOptions(context.options, [](const char* name) -> const char* {
                             return std::getenv(name);
                           }));
  if (options.endpoint_per_rank) options.client.fixed_endpoint = std::max(0, context.rank);
  IOMIMIC_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, Client::Create(options.client));
  return std::unique_ptr<Storage>(new S3Storage(options, std::move(client)));
}

}  // namespace iomimic::s3

namespace {
const IomimicOptionSpec kS3Options[] = {
    {"endpoint_url", "string", "",
     "http(s)://host:port of the S3 service; empty: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL "
     "(refused when neither is set); left out: those, else AWS's regional endpoint"},
    {"region", "string", "", "SigV4 region; empty: AWS_REGION, AWS_DEFAULT_REGION, us-east-1"},
    {"access_key_id", "string", "", "access key; empty: AWS_ACCESS_KEY_ID (never printed)"},
    {"secret_access_key", "string", "", "secret key; empty: AWS_SECRET_ACCESS_KEY (never printed)"},
    {"s3_force_path_style", "bool", "false",
     "DLIO's key: True forces path style (<endpoint>/<bucket>/<key>); False leaves it to "
     "addressing_style"},
    {"addressing_style", "string", "auto",
     "auto (virtual-hosted on *.amazonaws.com for DNS-label buckets, else path), path, or "
     "virtual (<scheme>://<bucket>.<host>/<key>)"},
    {"s3_max_attempts", "int", "5",
     "tries of a request failing with a transport error, HTTP 5xx or 429 (doubling backoff)"},
    {"read_mode", "string", "whole",
     "whole: one GET per object (DLIO); ranged: GETs of range_size, ranges_in_flight at once"},
    {"range_size", "bytes", "8M", "bytes per ranged GET"},
    {"ranges_in_flight", "int", "8", "ranged GETs in flight per read or batch"},
    {"whole_object_max", "bytes", "512M",
     "read_mode whole: larger objects are read with ranged GETs instead"},
    {"multipart_threshold", "bytes", "16M",
     "objects up to this size are one PUT; larger ones a multipart upload"},
    {"part_size", "bytes", "8M", "multipart part size (5M..5G)"},
    {"parts_in_flight", "int", "4", "parts uploaded at once"},
    {"verify_tls", "bool", "true", "verify the server's TLS certificate (https)"},
    {"fail_after_parts", "int", "-1",
     "testing: a multipart upload fails after this many parts (-1: never)"},
    {"storage_library", "string", "",
     "MLPerf Storage v3's client library name (s3dlio, minio, s3torchconnector): accepted and "
     "recorded; this plugin is what runs"},
    {"endpoint_urls", "string", "",
     "comma-separated http(s)://host:port endpoints that requests are spread over (MLPerf v3's "
     "endpoint_uris); replaces endpoint_url; statistics s3_endpoint_<i>_requests"},
    {"load_balance", "string", "round_robin",
     "how a request picks one of endpoint_urls: round_robin, least_connections (fewest in "
     "flight), random"},
    {"endpoint_per_rank", "bool", "false",
     "rank r sends every request to endpoint_urls[r mod N] (MLPerf v3's "
     "use_mpi_endpoint_distribution)"},
};
}  // namespace

// Serves s3://bucket/prefix folders; with IOMIMIC_CAP_ENDPOINT it is given them
// as written (docs/s3.md, "Selecting it").
IOMIMIC_DEFINE_STORAGE_PLUGIN_SERVING(
    "s3", "s3", "1.0.0",
    "S3 objects over HTTP (libcurl, SigV4): whole or ranged GETs, "
    "single or multipart PUTs",
    iomimic::s3::kCapabilities, kS3Options, &iomimic::s3::CreateS3Storage);
