// The HTTP side of the `s3` storage back end: S3 requests made with libcurl's
// multi interface and signed by libcurl itself (CURLOPT_AWS_SIGV4; no
// signing code here).
//
// What libcurl 7.88 (Debian 12) needs to be told, found against radosgw,
// which checks signatures strictly:
//   * it sends no x-amz-content-sha256 header: every request carries
//     "x-amz-content-sha256: UNSIGNED-PAYLOAD", which libcurl then signs;
//   * it signs the query string exactly as written: parameters are sorted
//     by name, values percent-encoded, and a parameter without a value is
//     written "name=" ("?uploads=", never "?uploads");
//   * CompleteMultipartUpload's body needs "Content-Type: application/xml";
//   * every header the request sets is signed, even an empty one that only
//     removes a header ("Expect:"), which the server then misses: none is set.
//
// A Client keeps a pool of connections (one curl multi handle with its easy
// handles each); a batch of requests checks one out, so threads making
// requests at the same time use separate connections, and connections are
// reused from one batch to the next (keep-alive). Requests are path style
// (<endpoint>/<bucket>/<key>) or virtual-hosted (<scheme>://<bucket>.<host>/
// <key>), see BucketUrl.
//
// Credentials live in the Client only: no message, statistic or result names
// them.

#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::s3 {

// How a request names its bucket: in the path, in the host name, or (auto)
// as the AWS SDKs choose.
enum class Addressing { kAuto, kPath, kVirtual };

// How a request picks one of several endpoints (MLPerf Storage v3.0's
// load_balance_strategy).
enum class Balance { kRoundRobin, kLeastConnections, kRandom };

struct ClientOptions {
  std::string endpoint;  // scheme://host[:port], without a trailing slash
  // When not empty, requests are spread over these (each scheme://host[:port])
  // by `balance`, and `endpoint` is ignored.
  std::vector<std::string> endpoints;
  Balance balance = Balance::kRoundRobin;
  // When >= 0, every request goes to endpoints[fixed_endpoint mod N]
  // (MLPerf v3's use_mpi_endpoint_distribution: the rank's own endpoint).
  int fixed_endpoint = -1;
  std::string region = "us-east-1";
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;      // optional (AWS_SESSION_TOKEN)
  int max_attempts = 5;           // tries of one request (1 = no retry)
  double backoff_seconds = 0.05;  // first retry's wait; doubles per retry, capped at 2 s
  long connect_timeout_seconds = 10;
  long stall_timeout_seconds = 60;  // a transfer below 1 byte/s this long fails
  bool verify_tls = true;
  Addressing addressing = Addressing::kAuto;
};

// The URL of `bucket`, without a trailing slash: "<endpoint>/<bucket>" in
// path style, "<scheme>://<bucket>.<host>[:port]" virtual-hosted. kAuto is
// virtual-hosted for AWS's own endpoints (hosts ending in .amazonaws.com)
// when the bucket name is a DNS label without dots (a dotted name breaks
// the TLS certificate's wildcard), and path style everywhere else (MinIO,
// Ceph, on-premises stores), as the AWS SDKs do. An empty bucket gives the
// endpoint.
std::string BucketUrl(const ClientOptions& options, std::string_view bucket);
// The same for `endpoint` in place of options.endpoint.
std::string BucketUrl(const ClientOptions& options, const std::string& endpoint,
                      std::string_view bucket);

// A bucket and key named by a path: "s3://bucket/key", "/bucket/key" or
// "bucket/key" (the first component is the bucket, as DLIO joins
// storage_root, the bucket, to relative folders). The key may be empty (the
// bucket itself). Repeated and trailing slashes of the key are dropped.
struct ObjectName {
  std::string bucket;
  std::string key;
};
Result<ObjectName> ParsePath(const std::string& path);

// RFC 3986 percent-encoding of everything but unreserved characters (and
// '/' when `keep_slash`), as SigV4's canonical form requires.
std::string UriEncode(std::string_view text, bool keep_slash);

// The query string of `parameters` in SigV4's canonical form: sorted by
// name (then value), names and values percent-encoded, "name=" for an empty
// value, joined by '&'.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> parameters);

// The text of the first <tag>...</tag> in `xml` at or after `*position`
// (XML entities &amp; &lt; &gt; &quot; &apos; decoded), and moves `*position`
// past it; empty with `*position` = npos when there is none.
std::string XmlElement(std::string_view xml, std::string_view tag, std::size_t* position);

// A GET body whose size the caller learns from the response: sized from its
// Content-Length before the body arrives (grown if more comes), not
// zero-filled, and reusable from one request to the next, so a reader that
// fetches object after object allocates and faults its memory in once.
struct BodyBuffer {
  std::unique_ptr<std::byte[]> data;
  std::size_t capacity = 0;
  // Makes room for `bytes`, keeping the first `keep` bytes.
  void Reserve(std::size_t bytes, std::size_t keep);
};

// One S3 request and, once performed, its outcome.
struct Request {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string bucket;
  std::string key;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::string> headers;   // extra "Name: value" lines
  std::span<const std::byte> upload;  // the body of PUT and POST
  // Where a GET's body goes: `download` when set (a longer body is an
  // error), else `sink` when set, else `body`.
  std::span<std::byte> download;
  BodyBuffer* sink = nullptr;
  // With `sink`: a body announced larger than this is not fetched; the
  // request ends after the headers with `too_large` set and
  // `content_length` the object's size. 0 = no limit.
  std::uint64_t max_body = 0;
  std::uint64_t range_offset = 0;  // with range_length > 0: a ranged GET
  std::uint64_t range_length = 0;
  // A "404" that is an answer, not an error (HEAD of a missing object).
  bool not_found_ok = false;

  // Outcome.
  Status status;
  long http_code = 0;
  std::string body;                  // error bodies, XML answers
  std::size_t received = 0;          // bytes written to `download` or `sink`
  std::uint64_t content_length = 0;  // HEAD, or a GET with `sink`: the body's size
  bool too_large = false;            // see max_body
  std::string etag;                  // PUT of a part: its ETag
  int attempts = 0;
  // With several endpoints (endpoint_urls): the one the last attempt went
  // to, which its errors name; empty with one endpoint.
  std::string endpoint;

  // Internal: upload cursor; whether the last failure may pass when tried again.
  std::size_t upload_position = 0;
  bool retryable = false;
};

// Counters of a Client (summed over its life; thread-safe reads).
struct ClientStats {
  std::uint64_t requests = 0;
  std::uint64_t retries = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t connections = 0;  // new connections opened
};

class Client {
 public:
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Checks the options (an endpoint with a scheme, keys present) and
  // initializes libcurl. Errors say which option is missing, never its value.
  static Result<std::unique_ptr<Client>> Create(const ClientOptions& options);

  // Performs every request, at most `in_flight` at once over one pooled
  // connection set, retrying transport errors, HTTP 5xx and 429/503
  // ("SlowDown") up to max_attempts with doubling backoff. Each request's
  // status is set (StatusForHttp; a 404 is OK when not_found_ok). Returns
  // the first error. Thread-safe.
  Status Perform(std::span<Request*> requests, std::size_t in_flight);
  Status Perform(Request& request) {
    Request* one = &request;
    return Perform(std::span<Request*>(&one, 1), 1);
  }

  ClientStats stats() const;
  // Requests sent to each endpoint (one entry per endpoint, retries
  // included), in the order of options().endpoints, or one entry.
  std::vector<std::uint64_t> EndpointRequests() const;
  const ClientOptions& options() const { return options_; }

 private:
  struct Connection;
  explicit Client(const ClientOptions& options);
  std::unique_ptr<Connection> Checkout();
  // The endpoint the next request goes to (index into endpoints_); counts
  // it as sent and active. Release marks it finished.
  std::size_t PickEndpoint();
  void Release(std::size_t endpoint);
  void Return(std::unique_ptr<Connection> connection);
  Status PerformOnce(Connection& connection, std::span<Request*> requests, std::size_t in_flight);
  // The steps of PerformOnce. A Pass is the state of one (s3_client.cpp).
  struct Pass;
  // Resets slot `slot`'s handle, sets it up for `r` on the next endpoint and
  // adds it to the transfers in flight.
  void StartRequest(Connection& connection, Pass& pass, std::size_t slot, Request* r);
  // Takes slot `slot`'s finished transfer (`code`) out of the multi handle,
  // counts its bytes and connections and sets its request's outcome. `code`
  // is the transfer's CURLcode (an int here: this header does not include
  // curl.h).
  void FinishRequest(Connection& connection, Pass& pass, std::size_t slot, int code);
  // After the multi handle failed with `code` (a CURLMcode): every request in
  // flight or not yet started fails with a retryable kIOError naming it.
  void AbandonPass(Connection& connection, Pass& pass, std::span<Request*> requests, int code);

  ClientOptions options_;
  std::vector<std::string> endpoints_;                    // at least one
  std::unique_ptr<std::atomic<std::uint64_t>[]> sent_;    // per endpoint
  std::unique_ptr<std::atomic<std::uint64_t>[]> active_;  // per endpoint, in flight
  std::atomic<std::uint64_t> turn_{0};                    // round robin, random draws
  std::string sigv4_;                                     // "aws:amz:<region>:s3"
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
  ClientStats stats_;
};

// The Status of a finished request that failed: names the method, the
// object (s3://bucket/key) and, with several endpoints, the endpoint ("at
// http://host:port"), the HTTP code and the S3 error code and message from
// the body. 404 (NoSuchKey, NoSuchBucket) -> kNotFound; 403 -> kIOError
// "access denied"; 409/412 -> kAlreadyExists; others kIOError.
Status StatusForHttp(const Request& request);

// "s3://bucket/key" for messages.
std::string Describe(std::string_view bucket, std::string_view key);

}  // namespace iomimic::s3
