#include "s3_client.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace iomimic::s3 {
namespace {

std::once_flag g_curl_init;
CURLcode g_curl_init_code = CURLE_OK;

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

std::string DecodeEntities(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out.push_back(text[i]);
      continue;
    }
    static constexpr std::pair<std::string_view, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool done = false;
    for (auto [entity, c] : kEntities) {
      if (text.substr(i, entity.size()) == entity) {
        out.push_back(c);
        i += entity.size() - 1;
        done = true;
        break;
      }
    }
    if (!done) out.push_back('&');
  }
  return out;
}

// libcurl callbacks.
std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Request*>(user);
  const std::size_t n = size * count;
  // Only a success writes into the caller's buffer; error bodies go to
  // `body` (OnHeader saw the status line before the body arrives).
  if (!r->download.empty() && r->http_code / 100 == 2) {
    if (r->received + n > r->download.size()) return CURL_WRITEFUNC_ERROR;
    std::memcpy(r->download.data() + r->received, data, n);
    r->received += n;
    return n;
  }
  if (r->sink != nullptr && r->http_code / 100 == 2) {
    if (r->too_large) return CURL_WRITEFUNC_ERROR;  // ends the transfer
    if (r->received + n > r->sink->capacity) {
      r->sink->Reserve(std::max(r->received + n, 2 * r->sink->capacity), r->received);
    }
    std::memcpy(r->sink->data.get() + r->received, data, n);
    r->received += n;
    return n;
  }
  if (r->body.size() + n > (std::size_t{64} << 20)) return CURL_WRITEFUNC_ERROR;
  r->body.append(data, n);
  return n;
}

std::size_t OnUpload(char* buffer, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Request*>(user);
  const std::size_t n = std::min(size * count, r->upload.size() - r->upload_position);
  std::memcpy(buffer, r->upload.data() + r->upload_position, n);
  r->upload_position += n;
  return n;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* r = static_cast<Request*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<std::size_t>(offset) > r->upload.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  r->upload_position = static_cast<std::size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// The status line's code, known before the body arrives (OnBody needs it).
std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* r = static_cast<Request*>(user);
  const std::size_t n = size * count;
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    const std::size_t space = line.find(' ');
    if (space != std::string_view::npos) {
      r->http_code = std::strtol(std::string(line.substr(space + 1, 3)).c_str(), nullptr, 10);
    }
    r->received = 0;  // a new response (after 100-continue or a retry)
    r->body.clear();
    r->too_large = false;
  } else if (r->sink != nullptr && r->http_code / 100 == 2 && line.size() > 15 &&
             strncasecmp(line.data(), "content-length:", 15) == 0) {
    // Size the sink before the body arrives (or refuse a body over max_body).
    const std::uint64_t length = std::strtoull(std::string(line.substr(15)).c_str(), nullptr, 10);
    r->content_length = length;
    if (r->max_body > 0 && length > r->max_body) {
      r->too_large = true;
    } else if (length > r->sink->capacity) {
      r->sink->Reserve(static_cast<std::size_t>(length), 0);
    }
  }
  return n;
}

bool Retryable(const Request& r, CURLcode code) {
  if (code != CURLE_OK) {
    // Transport failures; a body that overflows the caller's buffer is not.
    return code != CURLE_WRITE_ERROR && code != CURLE_URL_MALFORMAT &&
           code != CURLE_UNSUPPORTED_PROTOCOL;
  }
  return r.http_code >= 500 || r.http_code == 429;
}

}  // namespace

void BodyBuffer::Reserve(std::size_t bytes, std::size_t keep) {
  if (bytes <= capacity) return;
  auto bigger = std::make_unique_for_overwrite<std::byte[]>(bytes);
  if (keep > 0) std::memcpy(bigger.get(), data.get(), std::min(keep, capacity));
  data = std::move(bigger);
  capacity = bytes;
}

std::string BucketUrl(const ClientOptions& options, std::string_view bucket) {
  return BucketUrl(options, options.endpoint, bucket);
}

std::string BucketUrl(const ClientOptions& options, const std::string& endpoint,
                      std::string_view bucket) {
  if (bucket.empty()) return endpoint;
  const std::size_t scheme_end = endpoint.find("://");
  const std::size_t host_begin = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  bool virtual_hosted = options.addressing == Addressing::kVirtual;
  if (options.addressing == Addressing::kAuto) {
    std::string_view host = std::string_view(endpoint).substr(host_begin);
    host = host.substr(0, std::min(host.find(':'), host.find('/')));
    const bool dns_label =
        bucket.size() >= 3 && bucket.size() <= 63 &&
        std::all_of(
            bucket.begin(), bucket.end(),
            [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }) &&
        bucket.front() != '-' && bucket.back() != '-';
    virtual_hosted = dns_label && host.ends_with(".amazonaws.com");
  }
  if (!virtual_hosted) return endpoint + "/" + UriEncode(bucket, false);
  return endpoint.substr(0, host_begin) + UriEncode(bucket, false) + "." +
         endpoint.substr(host_begin);
}

std::string Describe(std::string_view bucket, std::string_view key) {
  std::string out = "s3://";
  out += bucket;
  if (!key.empty()) {
    out += '/';
    out += key;
  }
  return out;
}

Result<ObjectName> ParsePath(const std::string& path) {
  std::string_view rest = path;
  if (rest.starts_with("s3://")) {
    rest.remove_prefix(5);
  } else if (rest.starts_with("s3:/")) {  // "s3://" after lexical normalization
    rest.remove_prefix(4);
  }
  while (rest.starts_with('/')) rest.remove_prefix(1);
  while (rest.starts_with("./")) rest.remove_prefix(2);
  const std::size_t slash = rest.find('/');
  ObjectName name;
  name.bucket = std::string(rest.substr(0, slash));
  if (name.bucket.empty() || name.bucket == "." || name.bucket == "..") {
    return Status::InvalidArgument("s3: path '" + path +
                                   "' names no bucket (write s3://bucket/key, or bucket/key with "
                                   "storage.storage_root the bucket)");
  }
  if (slash != std::string_view::npos) {
    std::string_view key = rest.substr(slash + 1);
    std::string clean;
    std::size_t i = 0;
    while (i < key.size()) {
      std::size_t next = key.find('/', i);
      if (next == std::string_view::npos) next = key.size();
      std::string_view part = key.substr(i, next - i);
      if (part == "..") {
        return Status::InvalidArgument("s3: path '" + path + "' has a '..' component");
      }
      if (!part.empty() && part != ".") {
        if (!clean.empty()) clean += '/';
        clean += part;
      }
      i = next + 1;
    }
    name.key = std::move(clean);
  }
  return name;
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (Unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> parameters) {
  for (auto& [name, value] : parameters) {
    name = UriEncode(name, false);
    value = UriEncode(value, false);
  }
  std::sort(parameters.begin(), parameters.end());
  std::string out;
  for (const auto& [name, value] : parameters) {
    if (!out.empty()) out += '&';
    out += name;
    out += '=';
    out += value;
  }
  return out;
}

std::string XmlElement(std::string_view xml, std::string_view tag, std::size_t* position) {
  std::string open = "<";
  open.append(tag).append(">");
  std::string close = "</";
  close.append(tag).append(">");
  const std::size_t begin = xml.find(open, *position);
  if (begin == std::string_view::npos) {
    *position = std::string_view::npos;
    return {};
  }
  const std::size_t from = begin + open.size();
  const std::size_t end = xml.find(close, from);
  if (end == std::string_view::npos) {
    *position = std::string_view::npos;
    return {};
  }
  *position = end + close.size();
  return DecodeEntities(xml.substr(from, end - from));
}

namespace {

// "GET s3://bucket/key", and " at <endpoint>" with several endpoints.
std::string Attempted(const Request& r) {
  std::string text = r.method + " " + Describe(r.bucket, r.key);
  if (!r.endpoint.empty()) text += " at " + r.endpoint;
  return text;
}

}  // namespace

Status StatusForHttp(const Request& r) {
  std::size_t at = 0;
  const std::string code = XmlElement(r.body, "Code", &at);
  at = 0;
  const std::string message = XmlElement(r.body, "Message", &at);
  std::string text = "s3: " + Attempted(r) + ": HTTP " + std::to_string(r.http_code);
  if (!code.empty()) text += " " + code;
  if (!message.empty()) text += " (" + message + ")";
  if (r.http_code == 403) {
    text +=
        ": access denied; check the credentials (storage_options access_key_id and "
        "secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and the region";
  }
  if (r.attempts > 1) text += " after " + std::to_string(r.attempts) + " attempts";
  if (r.http_code == 404) return Status::NotFound(text);
  if (r.http_code == 409 || r.http_code == 412) return Status::AlreadyExists(text);
  return Status::IOError(text);
}

struct Client::Connection {
  CURLM* multi = nullptr;
  std::vector<CURL*> easy;  // reused: their connections stay in the multi's cache
  std::vector<curl_slist*> headers;
  ~Connection() {
    for (curl_slist* h : headers) curl_slist_free_all(h);
    for (CURL* e : easy) {
      if (multi != nullptr) curl_multi_remove_handle(multi, e);
      curl_easy_cleanup(e);
    }
    if (multi != nullptr) curl_multi_cleanup(multi);
  }
};

Client::Client(const ClientOptions& options)
    : options_(options), sigv4_("aws:amz:" + options.region + ":s3") {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  if (options.endpoints.empty() && options.endpoint.find("://") == std::string::npos) {
    return Status::InvalidArgument("s3: endpoint_url '" + options.endpoint +
                                   "' is not a URL (http://host:port or https://host)");
  }
  for (const std::string& endpoint : options.endpoints) {
    if (endpoint.find("://") == std::string::npos) {
      return Status::InvalidArgument("s3: endpoint '" + endpoint +
                                     "' of endpoint_urls is not a URL (http://host:port)");
    }
  }
  if (options.access_key_id.empty() || options.secret_access_key.empty()) {
    return Status::InvalidArgument(
        "s3: no credentials: set storage.storage_options access_key_id and secret_access_key, "
        "or the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  if (options.region.empty()) return Status::InvalidArgument("s3: region is empty");
  std::call_once(g_curl_init, [] { g_curl_init_code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (g_curl_init_code != CURLE_OK) {
    return Status::Internal(std::string("s3: curl_global_init: ") +
                            curl_easy_strerror(g_curl_init_code));
  }
  std::unique_ptr<Client> client(new Client(options));
  while (client->options_.endpoint.ends_with('/')) client->options_.endpoint.pop_back();
  client->endpoints_ = options.endpoints.empty()
                           ? std::vector<std::string>{client->options_.endpoint}
                           : options.endpoints;
  for (std::string& endpoint : client->endpoints_) {
    while (endpoint.ends_with('/')) endpoint.pop_back();
  }
  const std::size_t n = client->endpoints_.size();
  client->sent_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
  client->active_ = std::make_unique<std::atomic<std::uint64_t>[]>(n);
  return client;
}

std::size_t Client::PickEndpoint() {
  const std::size_t n = endpoints_.size();
  std::size_t pick = 0;
  if (options_.fixed_endpoint >= 0) {
    pick = static_cast<std::size_t>(options_.fixed_endpoint) % n;
  } else if (n > 1) {
    switch (options_.balance) {
      case Balance::kRoundRobin:
        pick = static_cast<std::size_t>(turn_.fetch_add(1, std::memory_order_relaxed) % n);
        break;
      case Balance::kRandom: {
        // SplitMix64 of a counter: independent draws without a shared generator.
        std::uint64_t z = turn_.fetch_add(0x9E3779B97F4A7C15ULL, std::memory_order_relaxed);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        pick = static_cast<std::size_t>((z ^ (z >> 31)) % n);
        break;
      }
      case Balance::kLeastConnections: {
        // The fewest requests in flight; ties go round robin.
        const std::size_t first =
            static_cast<std::size_t>(turn_.fetch_add(1, std::memory_order_relaxed) % n);
        std::uint64_t fewest = UINT64_MAX;
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t i = (first + k) % n;
          const std::uint64_t a = active_[i].load(std::memory_order_relaxed);
          if (a < fewest) {
            fewest = a;
            pick = i;
          }
        }
        break;
      }
    }
  }
  sent_[pick].fetch_add(1, std::memory_order_relaxed);
  active_[pick].fetch_add(1, std::memory_order_relaxed);
  return pick;
}

void Client::Release(std::size_t endpoint) {
  active_[endpoint].fetch_sub(1, std::memory_order_relaxed);
}

std::vector<std::uint64_t> Client::EndpointRequests() const {
  std::vector<std::uint64_t> out(endpoints_.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = sent_[i].load(std::memory_order_relaxed);
  return out;
}

std::unique_ptr<Client::Connection> Client::Checkout() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<Connection>();
  c->multi = curl_multi_init();
  return c;
}

void Client::Return(std::unique_ptr<Connection> connection) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(connection));
}

ClientStats Client::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

Status Client::Perform(std::span<Request*> requests, std::size_t in_flight) {
  for (Request* r : requests) {
    r->attempts = 0;
    r->status = Status::OK();
  }
  std::unique_ptr<Connection> connection = Checkout();
  if (connection->multi == nullptr) return Status::ResourceExhausted("s3: curl_multi_init failed");
  std::vector<Request*> pending(requests.begin(), requests.end());
  double wait = options_.backoff_seconds;
  Status first;
  for (;;) {
    Status done = PerformOnce(*connection, pending, std::max<std::size_t>(1, in_flight));
    (void)done;
    std::vector<Request*> again;
    for (Request* r : pending) {
      if (r->status.ok()) continue;
      if (r->retryable && r->attempts < options_.max_attempts) {
        again.push_back(r);
      }
    }
    if (again.empty()) break;
    {
      std::lock_guard lock(mutex_);
      stats_.retries += again.size();
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    wait = std::min(wait * 2, 2.0);
    pending = std::move(again);
  }
  Return(std::move(connection));
  for (Request* r : requests) {
    if (r->retryable && !r->status.ok()) {
      r->status =
          Status(r->status.code(), r->status.message() + " (gave up after " +
                                       std::to_string(r->attempts) + " attempts, s3_max_attempts)");
      r->retryable = false;
    }
    if (!r->status.ok() && first.ok()) first = r->status;
  }
  return first;
}

namespace {

// The request headers of `r`, in the order they are sent (the signature
// covers them). The caller owns the list.
curl_slist* RequestHeaders(const Request& r, const ClientOptions& options) {
  curl_slist* h = nullptr;
  h = curl_slist_append(h, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  // No "Expect:" line to suppress 100-continue: 7.88 signs the empty
  // header too, and the server then computes another signature.
  if (!options.session_token.empty()) {
    h = curl_slist_append(h, ("x-amz-security-token: " + options.session_token).c_str());
  }
  if (r.range_length > 0) {
    h = curl_slist_append(h, ("Range: bytes=" + std::to_string(r.range_offset) + "-" +
                              std::to_string(r.range_offset + r.range_length - 1))
                                 .c_str());
  }
  for (const std::string& line : r.headers) h = curl_slist_append(h, line.c_str());
  return h;
}

// Sets what the method of `r` needs on `e` (a PUT also adds its Content-Type
// to `*headers`).
void SetMethod(CURL* e, Request* r, curl_slist** headers) {
  if (r->method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (r->method == "PUT") {
    *headers = curl_slist_append(*headers, "Content-Type: application/octet-stream");
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, &OnUpload);
    curl_easy_setopt(e, CURLOPT_READDATA, r);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, &OnSeek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r->upload.size()));
  } else if (r->method == "POST") {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, reinterpret_cast<const char*>(r->upload.data()));
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r->upload.size()));
  } else if (r->method != "GET") {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method.c_str());
  }
}

// Sets the options every request has on the freshly reset handle `e`: URL,
// SigV4 signing, timeouts, TLS checks, buffers and the callbacks into `r`.
void SetCommonOptions(CURL* e, Request* r, const ClientOptions& options, const std::string& url,
                      const std::string& sigv4) {
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(e, CURLOPT_USERNAME, options.access_key_id.c_str());
  curl_easy_setopt(e, CURLOPT_PASSWORD, options.secret_access_key.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_seconds);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, options.stall_timeout_seconds);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  // Large transfer buffers: fewer callbacks and system calls per MiB.
  curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
}

// Sets the outcome of `r` from its finished transfer on `e` (`code`, and
// r->http_code already read): OK for a 2xx (with its length and ETag), a
// too-large answer or an accepted 404; otherwise the error, and whether it
// may pass when tried again.
void SettleRequest(CURL* e, Request* r, CURLcode code) {
  if (code == CURLE_WRITE_ERROR && r->too_large) {
    r->status = Status::OK();  // an answer: the size, in content_length
    return;
  }
  if (code != CURLE_OK) {
    const std::string text = "s3: " + Attempted(*r) + ": " + curl_easy_strerror(code);
    if (code == CURLE_WRITE_ERROR && !r->download.empty()) {
      r->status = Status::Corruption(text + " (the object is larger than the " +
                                     std::to_string(r->download.size()) +
                                     " bytes expected; did it change?)");
    } else {
      r->status = Status::IOError(text);
      r->retryable = Retryable(*r, code);
    }
    return;
  }
  if (r->http_code / 100 == 2) {
    curl_off_t length = -1;
    curl_easy_getinfo(e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    r->content_length = length < 0 ? r->received : static_cast<std::uint64_t>(length);
    curl_header* etag = nullptr;
    if (curl_easy_header(e, "ETag", 0, CURLH_HEADER, -1, &etag) == CURLHE_OK) {
      r->etag = etag->value;
    }
    r->status = Status::OK();
    return;
  }
  if (r->http_code == 404 && r->not_found_ok) {
    r->status = Status::OK();
    return;
  }
  r->status = StatusForHttp(*r);
  r->retryable = Retryable(*r, CURLE_OK);
}

}  // namespace

// The state of one PerformOnce: which request each easy handle (slot) runs
// and on which endpoint, the next request to start, and the transfer counts.
struct Client::Pass {
  explicit Pass(std::size_t slots) : request(slots, nullptr), endpoint(slots, 0) {}
  std::vector<Request*> request;
  std::vector<std::size_t> endpoint;
  std::size_t next = 0;
  std::size_t running = 0;
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t connects = 0;
};

void Client::StartRequest(Connection& c, Pass& pass, std::size_t slot, Request* r) {
  CURL* e = c.easy[slot];
  curl_easy_reset(e);
  if (c.headers[slot] != nullptr) {
    curl_slist_free_all(c.headers[slot]);
    c.headers[slot] = nullptr;
  }
  ++r->attempts;
  r->http_code = 0;
  r->received = 0;
  r->body.clear();
  r->etag.clear();
  r->upload_position = 0;
  r->retryable = false;
  pass.endpoint[slot] = PickEndpoint();
  r->endpoint = endpoints_.size() > 1 ? endpoints_[pass.endpoint[slot]] : std::string();
  std::string url = BucketUrl(options_, endpoints_[pass.endpoint[slot]], r->bucket);
  if (!r->key.empty()) url += "/" + UriEncode(r->key, true);
  if (!r->query.empty()) url += "?" + CanonicalQuery(r->query);
  SetCommonOptions(e, r, options_, url, sigv4_);
  curl_slist* h = RequestHeaders(*r, options_);
  SetMethod(e, r, &h);
  c.headers[slot] = h;
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_PRIVATE, reinterpret_cast<void*>(slot));
  pass.request[slot] = r;
  curl_multi_add_handle(c.multi, e);
  ++pass.running;
}

void Client::FinishRequest(Connection& c, Pass& pass, std::size_t slot, int code) {
  CURL* e = c.easy[slot];
  Request* r = pass.request[slot];
  pass.request[slot] = nullptr;
  Release(pass.endpoint[slot]);
  curl_multi_remove_handle(c.multi, e);
  --pass.running;
  long http = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &http);
  r->http_code = http;
  curl_off_t up = 0;
  curl_off_t down = 0;
  curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &up);
  curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &down);
  long new_connections = 0;
  curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &new_connections);
  pass.sent += static_cast<std::uint64_t>(up);
  pass.received += static_cast<std::uint64_t>(down);
  pass.connects += static_cast<std::uint64_t>(new_connections);
  SettleRequest(e, r, static_cast<CURLcode>(code));
}

void Client::AbandonPass(Connection& c, Pass& pass, std::span<Request*> requests, int code) {
  const Status failure = Status::IOError(std::string("s3: curl multi: ") +
                                         curl_multi_strerror(static_cast<CURLMcode>(code)));
  for (std::size_t slot = 0; slot < c.easy.size(); ++slot) {
    if (pass.request[slot] == nullptr) continue;
    pass.request[slot]->status = failure;
    pass.request[slot]->retryable = true;
    Release(pass.endpoint[slot]);
    curl_multi_remove_handle(c.multi, c.easy[slot]);
    pass.request[slot] = nullptr;
    --pass.running;
  }
  while (pass.next < requests.size()) {
    requests[pass.next]->status = failure;
    requests[pass.next++]->retryable = true;
  }
}

// One pass over `requests`: failures that may succeed when tried again get
// kUnavailable (Perform retries those).
Status Client::PerformOnce(Connection& c, std::span<Request*> requests, std::size_t in_flight) {
  const std::size_t slots = std::min(in_flight, requests.size());
  while (c.easy.size() < slots) {
    CURL* e = curl_easy_init();
    if (e == nullptr) break;
    c.easy.push_back(e);
    c.headers.push_back(nullptr);
  }
  if (c.easy.empty()) return Status::ResourceExhausted("s3: curl_easy_init failed");
  Pass pass(c.easy.size());
  while (pass.next < requests.size() || pass.running > 0) {
    for (std::size_t slot = 0; slot < c.easy.size() && pass.next < requests.size(); ++slot) {
      if (pass.request[slot] == nullptr) StartRequest(c, pass, slot, requests[pass.next++]);
    }
    int still = 0;
    CURLMcode mc = curl_multi_perform(c.multi, &still);
    if (mc == CURLM_OK && still > 0) mc = curl_multi_poll(c.multi, nullptr, 0, 1000, nullptr);
    if (mc != CURLM_OK) {
      AbandonPass(c, pass, requests, mc);
      break;
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(c.multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      void* slot_pointer = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &slot_pointer);
      FinishRequest(c, pass, reinterpret_cast<std::size_t>(slot_pointer), m->data.result);
    }
  }
  std::lock_guard lock(mutex_);
  stats_.requests += requests.size();
  stats_.bytes_sent += pass.sent;
  stats_.bytes_received += pass.received;
  stats_.connections += pass.connects;
  return Status::OK();
}

}  // namespace iomimic::s3
