// Unit tests of the s3 back end. The first cases need no server. The cases
// named "s3 live:" talk to the server named by IOMIMIC_S3_TEST_ENDPOINT
// (with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and IOMIMIC_S3_BUCKET), as
// tests/integration/s3_tests.py runs them against scripts/s3_server.sh's
// radosgw; without it they pass without checking anything and say so.

#include "s3_storage.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "iomimic/iomimic.h"
#include "iomimic/testing/storage_cases.h"
#include "s3_client.h"

namespace {

using iomimic::s3::CanonicalQuery;
using iomimic::s3::ParsePath;
using iomimic::s3::XmlElement;

std::map<std::string, std::string> g_env;
const char* FakeEnv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

iomimic::Result<iomimic::s3::S3Options> Parse(std::map<std::string, std::string> options) {
  return iomimic::s3::ParseOptions(iomimic::PluginOptions("storage plugin 's3'", options),
                                   &FakeEnv);
}

using iomimic::testing::Pattern;

}  // namespace

TEST_CASE("s3: paths name a bucket and a key") {
  auto a = ParsePath("s3://bucket/a/b.npz");
  REQUIRE(a.ok());
  CHECK(a->bucket == "bucket");
  CHECK(a->key == "a/b.npz");
  auto b = ParsePath("s3:/bucket//a/./b/");
  REQUIRE(b.ok());
  CHECK(b->bucket == "bucket");
  CHECK(b->key == "a/b");
  auto c = ParsePath("bucket");
  REQUIRE(c.ok());
  CHECK(c->key.empty());
  auto d = ParsePath("/bucket/x");
  REQUIRE(d.ok());
  CHECK(d->bucket == "bucket");
  CHECK(d->key == "x");
  CHECK(!ParsePath("s3://").ok());
  CHECK(!ParsePath("s3://b/../x").ok());
}

TEST_CASE("s3: path-style and virtual-hosted bucket URLs") {
  using iomimic::s3::Addressing;
  using iomimic::s3::BucketUrl;
  iomimic::s3::ClientOptions o;
  o.endpoint = "http://127.0.0.1:7480";
  CHECK(BucketUrl(o, "bkt") == "http://127.0.0.1:7480/bkt");  // auto: not AWS
  CHECK(BucketUrl(o, "") == "http://127.0.0.1:7480");
  o.addressing = Addressing::kVirtual;
  CHECK(BucketUrl(o, "bkt") == "http://bkt.127.0.0.1:7480");
  o.endpoint = "https://s3.eu-west-1.amazonaws.com";
  CHECK(BucketUrl(o, "my-data") == "https://my-data.s3.eu-west-1.amazonaws.com");
  o.addressing = Addressing::kPath;
  CHECK(BucketUrl(o, "my-data") == "https://s3.eu-west-1.amazonaws.com/my-data");
  o.addressing = Addressing::kAuto;
  CHECK(BucketUrl(o, "my-data") == "https://my-data.s3.eu-west-1.amazonaws.com");
  // Dots (TLS wildcard), capitals and leading hyphens stay in the path.
  CHECK(BucketUrl(o, "my.data") == "https://s3.eu-west-1.amazonaws.com/my.data");
  CHECK(BucketUrl(o, "MyData") == "https://s3.eu-west-1.amazonaws.com/MyData");
  CHECK(BucketUrl(o, "-data") == "https://s3.eu-west-1.amazonaws.com/-data");
}

TEST_CASE("s3: addressing options, DLIO's s3_force_path_style included") {
  auto parse = [](std::map<std::string, std::string> m) {
    m["endpoint_url"] = "http://127.0.0.1:1";
    m["access_key_id"] = "a";
    m["secret_access_key"] = "b";
    return Parse(m);
  };
  using iomimic::s3::Addressing;
  CHECK(parse({}).value().client.addressing == Addressing::kAuto);
  CHECK(parse({{"s3_force_path_style", "False"}}).value().client.addressing == Addressing::kAuto);
  CHECK(parse({{"s3_force_path_style", "True"}}).value().client.addressing == Addressing::kPath);
  CHECK(parse({{"addressing_style", "virtual"}}).value().client.addressing == Addressing::kVirtual);
  CHECK(!parse({{"addressing_style", "virtual"}, {"s3_force_path_style", "True"}}).ok());
  auto bad = parse({{"addressing_style", "dns"}});
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("'addressing_style' = 'dns'") != std::string::npos);
}

TEST_CASE("s3: query strings in SigV4's canonical form") {
  CHECK(CanonicalQuery({{"uploads", ""}}) == "uploads=");
  CHECK(CanonicalQuery({{"uploadId", "a+b/c="}, {"partNumber", "3"}}) ==
        "partNumber=3&uploadId=a%2Bb%2Fc%3D");
  CHECK(CanonicalQuery({{"prefix", "train/x y"}, {"list-type", "2"}}) ==
        "list-type=2&prefix=train%2Fx%20y");
  CHECK(iomimic::s3::UriEncode("a b/c~", true) == "a%20b/c~");
}

TEST_CASE("s3: XML elements and error statuses") {
  const std::string body =
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>a &amp; "
      "b</Message></Error>";
  std::size_t at = 0;
  CHECK(XmlElement(body, "Code", &at) == "SignatureDoesNotMatch");
  CHECK(XmlElement(body, "Message", &at) == "a & b");
  CHECK(XmlElement(body, "Code", &at).empty());
  CHECK(at == std::string::npos);
  iomimic::s3::Request r;
  r.method = "GET";
  r.bucket = "bkt";
  r.key = "k/1";
  r.http_code = 403;
  r.body = body;
  iomimic::Status s = iomimic::s3::StatusForHttp(r);
  CHECK(s.code() == iomimic::StatusCode::kIOError);
  CHECK(s.message().find("s3: GET s3://bkt/k/1: HTTP 403 SignatureDoesNotMatch") == 0);
  r.http_code = 404;
  r.body = "<Error><Code>NoSuchKey</Code></Error>";
  CHECK(iomimic::s3::StatusForHttp(r).IsNotFound());
  // With several endpoints, the one the request went to.
  r.endpoint = "http://rgw2:9000";
  r.http_code = 503;
  r.body = "<Error><Code>SlowDown</Code></Error>";
  CHECK(iomimic::s3::StatusForHttp(r).message().find(
            "s3: GET s3://bkt/k/1 at http://rgw2:9000: HTTP 503 SlowDown") == 0);
}

TEST_CASE("s3: an empty endpoint_url is refused unless the environment gives one") {
  g_env = {{"AWS_ACCESS_KEY_ID", "K"}, {"AWS_SECRET_ACCESS_KEY", "S"}};
  // Given empty (an unset ${AWS_ENDPOINT_URL}): refused, naming the option.
  auto empty = Parse({{"endpoint_url", ""}, {"region", "eu-west-1"}});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().message() ==
        "storage plugin 's3': option 'endpoint_url' is empty (an unset variable?) and neither "
        "AWS_ENDPOINT_URL_S3 nor AWS_ENDPOINT_URL is set; give the endpoint "
        "(http(s)://host:port), or leave the option out for AWS's regional endpoint "
        "(https://s3.eu-west-1.amazonaws.com)");
  // Left out: AWS's regional endpoint, as the AWS SDKs choose.
  auto absent = Parse({{"region", "eu-west-1"}});
  REQUIRE(absent.ok());
  CHECK(absent->client.endpoint == "https://s3.eu-west-1.amazonaws.com");
  // Empty with an endpoint from the environment, or with endpoint_urls: fine.
  g_env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:7480";
  auto from_env = Parse({{"endpoint_url", ""}});
  REQUIRE(from_env.ok());
  CHECK(from_env->client.endpoint == "http://127.0.0.1:7480");
  g_env.erase("AWS_ENDPOINT_URL");
  CHECK(Parse({{"endpoint_url", ""}, {"endpoint_urls", "http://a:1,http://b:2"}}).ok());
}

TEST_CASE("s3: with several endpoints, a failed request names its endpoint") {
  g_env = {{"AWS_ACCESS_KEY_ID", "K"}, {"AWS_SECRET_ACCESS_KEY", "S"}};
  auto o = Parse(
      {{"endpoint_urls", "http://127.0.0.1:9, http://127.0.0.1:19"}, {"s3_max_attempts", "1"}});
  REQUIRE(o.ok());
  auto client = iomimic::s3::Client::Create(o->client);
  REQUIRE(client.ok());
  for (const char* endpoint : {"http://127.0.0.1:9", "http://127.0.0.1:19"}) {
    iomimic::s3::Request r;
    r.method = "HEAD";
    r.bucket = "b";
    r.key = "k";
    iomimic::Status s = (*client)->Perform(r);
    REQUIRE_FALSE(s.ok());
    CAPTURE(s.message());
    // Round robin: the first request to the first endpoint, the next to the second.
    CHECK(s.message().find(std::string("s3: HEAD s3://b/k at ") + endpoint + ": ") == 0);
  }
}

TEST_CASE("s3: options, environment fallbacks, and no credential in messages") {
  g_env = {{"AWS_ACCESS_KEY_ID", "ENVKEY"},
           {"AWS_SECRET_ACCESS_KEY", "ENVSECRET"},
           {"AWS_ENDPOINT_URL", "http://127.0.0.1:1"}};
  auto o = Parse({});
  REQUIRE(o.ok());
  CHECK(o->client.access_key_id == "ENVKEY");
  CHECK(o->client.secret_access_key == "ENVSECRET");
  CHECK(o->client.endpoint == "http://127.0.0.1:1");
  CHECK(o->client.region == "us-east-1");
  CHECK(o->read_mode == iomimic::s3::ReadMode::kWhole);
  // The manifest's pair wins over the environment's, never half of each.
  auto m = Parse({{"access_key_id", "MKEY"},
                  {"secret_access_key", "MSECRET"},
                  {"region", "eu-west-1"},
                  {"read_mode", "ranged"},
                  {"range_size", "1M"}});
  REQUIRE(m.ok());
  CHECK(m->client.access_key_id == "MKEY");
  CHECK(m->client.secret_access_key == "MSECRET");
  CHECK(m->client.region == "eu-west-1");
  CHECK(m->read_mode == iomimic::s3::ReadMode::kRanged);
  CHECK(m->range_size == (1u << 20));
  CHECK(!Parse({{"read_mode", "streamed"}}).ok());
  CHECK(!Parse({{"part_size", "1M"}}).ok());
  CHECK(!Parse({{"s3_max_attempts", "0"}}).ok());
  g_env.clear();
  auto none = Parse({});
  REQUIRE(none.ok());
  auto client = iomimic::s3::Client::Create(none->client);
  REQUIRE(!client.ok());
  CHECK(client.status().message().find("AWS_SECRET_ACCESS_KEY") != std::string::npos);
  auto bad = Parse({{"endpoint_url", "localhost:9000"},
                    {"secret_access_key", "TOPSECRET"},
                    {"access_key_id", "K"}});
  REQUIRE(bad.ok());
  auto refused = iomimic::s3::Client::Create(bad->client);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("TOPSECRET") == std::string::npos);
}

TEST_CASE("s3: an unreachable endpoint fails after s3_max_attempts tries") {
  g_env = {{"AWS_ACCESS_KEY_ID", "K"}, {"AWS_SECRET_ACCESS_KEY", "S"}};
  auto o = Parse({{"endpoint_url", "http://127.0.0.1:9"}, {"s3_max_attempts", "3"}});
  REQUIRE(o.ok());
  o->client.backoff_seconds = 0.001;
  auto client = iomimic::s3::Client::Create(o->client);
  REQUIRE(client.ok());
  iomimic::s3::Request r;
  r.method = "HEAD";
  r.bucket = "b";
  r.key = "k";
  iomimic::Status s = (*client)->Perform(r);
  CHECK(!s.ok());
  CHECK(r.attempts == 3);
  CHECK(s.message().find("s3: HEAD s3://b/k") == 0);
  CHECK(s.message().find("gave up after 3 attempts") != std::string::npos);
  CHECK((*client)->stats().retries == 2);
}

namespace {

struct Live {
  std::unique_ptr<iomimic::Storage> storage;
  std::string bucket;
  std::string prefix;
};

// The storage for the live tests, or null (with a message) without a server.
std::unique_ptr<Live> MakeLive(std::map<std::string, std::string> options = {}) {
  const char* endpoint = std::getenv("IOMIMIC_S3_TEST_ENDPOINT");
  const char* bucket = std::getenv("IOMIMIC_S3_BUCKET");
  if (endpoint == nullptr || bucket == nullptr) {
    MESSAGE("no S3 server (IOMIMIC_S3_TEST_ENDPOINT, IOMIMIC_S3_BUCKET unset): live test skipped");
    return nullptr;
  }
  options.emplace("endpoint_url", endpoint);  // unless the test names another
  iomimic::PluginContext ctx;
  ctx.options = iomimic::PluginOptions("storage plugin 's3'", options);
  auto made = iomimic::s3::CreateS3Storage(ctx);
  REQUIRE(made.ok());
  auto live = std::make_unique<Live>();
  live->storage = std::move(made).value();
  live->bucket = bucket;
  live->prefix = "s3://" + live->bucket + "/unit-" + std::to_string(::getpid()) + "/";
  return live;
}

iomimic::Status WriteAll(iomimic::Storage& s, const std::string& path,
                         const std::vector<std::byte>& data, std::size_t chunk) {
  auto f = s.Open(path, {iomimic::OpenMode::kWrite});
  if (!f.ok()) return f.status();
  for (std::size_t at = 0; at < data.size(); at += chunk) {
    auto piece = std::span(data).subspan(at, std::min(chunk, data.size() - at));
    IOMIMIC_RETURN_IF_ERROR((*f)->WriteAt(at, piece));
  }
  return (*f)->Close();
}

std::vector<std::byte> ReadAll(iomimic::Storage& s, const std::string& path) {
  auto f = s.Open(path, {iomimic::OpenMode::kRead});
  REQUIRE(f.ok());
  auto size = (*f)->Size();
  REQUIRE(size.ok());
  std::vector<std::byte> out(*size);
  auto n = (*f)->ReadAt(0, out);
  REQUIRE(n.ok());
  CHECK(*n == *size);
  return out;
}

}  // namespace

TEST_CASE("s3 live: single PUT, multipart, whole and ranged reads, stat, list, remove") {
  auto live = MakeLive({{"multipart_threshold", "6M"}, {"part_size", "5M"}});
  if (!live) return;
  iomimic::Storage& s = *live->storage;
  const std::string small = live->prefix + "dir/small.bin";
  const std::string big = live->prefix + "dir/big.bin";
  const auto a = Pattern(100000, 1);
  const auto b = Pattern((23u << 20) + 12345, 2);  // 5 parts, the last short
  {
    iomimic::Status made = s.CreateDirectories(live->prefix + "dir");
    INFO(made.ToString());
    REQUIRE(made.ok());
  }
  REQUIRE(WriteAll(s, small, a, 4096).ok());
  REQUIRE(WriteAll(s, big, b, 1u << 20).ok());
  CHECK(ReadAll(s, small) == a);
  CHECK(ReadAll(s, big) == b);
  auto info = s.Stat(big);
  REQUIRE(info.ok());
  CHECK(info->size == b.size());
  CHECK(!info->is_directory);
  auto dir = s.Stat(live->prefix + "dir");
  REQUIRE(dir.ok());
  CHECK(dir->is_directory);
  CHECK(s.Stat(live->prefix + "nothing").status().IsNotFound());
  // Whole mode (DLIO's pattern): the open is one GET of the object, with
  // no HEAD, and every piece read comes from it.
  auto* s3 = dynamic_cast<iomimic::s3::S3Storage*>(&s);
  REQUIRE(s3 != nullptr);
  {
    const std::uint64_t before = s3->client().stats().requests;
    auto f = s.Open(big, {iomimic::OpenMode::kRead});
    REQUIRE(f.ok());
    CHECK((*f)->Size().value() == b.size());
    std::vector<std::byte> piece(1000);
    auto n = (*f)->ReadAt(7u << 20, piece);
    REQUIRE(n.ok());
    CHECK(std::equal(piece.begin(), piece.end(), b.begin() + (7u << 20)));
    CHECK((*f)->ReadAt(b.size(), piece).value() == 0);
    CHECK(s3->client().stats().requests - before == 1);
  }
  CHECK(s.Open(live->prefix + "dir/missing.bin", {iomimic::OpenMode::kRead}).status().IsNotFound());
  // An object above whole_object_max stops after the GET's headers and is
  // read with ranged GETs.
  {
    auto capped = MakeLive({{"whole_object_max", "1M"}, {"range_size", "4M"}});
    auto f = capped->storage->Open(big, {iomimic::OpenMode::kRead});
    REQUIRE(f.ok());
    CHECK((*f)->Size().value() == b.size());
    std::vector<std::byte> piece(3000);
    REQUIRE((*f)->ReadAt(b.size() - 3000, piece).ok());
    CHECK(std::equal(piece.begin(), piece.end(), b.end() - 3000));
    double whole = -1, ranged_gets = -1;
    for (const auto& stat : capped->storage->Statistics()) {
      if (stat.name == "s3_whole_gets") whole = stat.value;
      if (stat.name == "s3_ranged_gets") ranged_gets = stat.value;
    }
    CHECK(whole == 0);
    CHECK(ranged_gets == 1);
  }
  // Ranged reads, batched.
  auto ranged = MakeLive({{"read_mode", "ranged"}, {"range_size", "1M"}});
  {
    auto f = ranged->storage->Open(big, {iomimic::OpenMode::kRead});
    REQUIRE(f.ok());
    std::vector<std::byte> x(3u << 20), y(500);
    std::vector<iomimic::ReadRequest> batch(2);
    batch[0].offset = 1;
    batch[0].destination = x;
    batch[1].offset = b.size() - 100;
    batch[1].destination = y;
    REQUIRE((*f)->ReadBatch(batch).ok());
    CHECK(batch[0].bytes_read == x.size());
    CHECK(batch[1].bytes_read == 100);
    CHECK(std::equal(x.begin(), x.end(), b.begin() + 1));
    CHECK(std::equal(y.begin(), y.begin() + 100, b.end() - 100));
  }
  auto listed = s3->List(live->bucket, live->prefix.substr(6 + live->bucket.size()));
  REQUIRE(listed.ok());
  CHECK(listed->size() == 2);
  CHECK(s.Rename(small, small + ".moved").ok());
  CHECK(s.Stat(small).status().IsNotFound());
  CHECK(s.Remove(small + ".moved").ok());
  CHECK(s.Remove(big).ok());
  CHECK(s.Remove(big).IsNotFound());
  bool multipart = false;
  for (const auto& stat : s.Statistics()) {
    if (stat.name == "s3_multipart_uploads") multipart = stat.value == 1;
  }
  CHECK(multipart);
}

TEST_CASE("s3 live: a failed or abandoned upload leaves no object") {
  auto live = MakeLive({{"multipart_threshold", "5M"},
                        {"part_size", "5M"},
                        {"parts_in_flight", "1"},
                        {"fail_after_parts", "2"}});
  if (!live) return;
  iomimic::Storage& s = *live->storage;
  const std::string path = live->prefix + "failed.bin";
  iomimic::Status st = WriteAll(s, path, Pattern(30u << 20, 3), 1u << 20);
  CHECK(!st.ok());
  INFO(st.ToString());
  CHECK(st.message().find("injected failure") != std::string::npos);
  INFO(s.Stat(path).status().ToString());
  CHECK(s.Stat(path).status().IsNotFound());
  // Abandoned: destroyed without Close, or aborted.
  auto normal = MakeLive({{"multipart_threshold", "5M"}, {"part_size", "5M"}});
  for (int abort = 0; abort < 2; ++abort) {
    auto f = normal->storage->Open(path, {iomimic::OpenMode::kWrite});
    REQUIRE(f.ok());
    const auto data = Pattern(12u << 20, 4);
    for (std::size_t at = 0; at < data.size(); at += 1u << 20) {
      REQUIRE((*f)->WriteAt(at, std::span(data).subspan(at, 1u << 20)).ok());
    }
    if (abort == 1) CHECK((*f)->Abort().ok());
    f->reset();
    CHECK(normal->storage->Stat(path).status().IsNotFound());
  }
}

TEST_CASE("s3 live: virtual-hosted requests (<bucket>.localhost)") {
  // The test server answers for *.localhost (rgw dns name), and libcurl
  // resolves any *.localhost name to the loopback address itself.
  const char* endpoint = std::getenv("IOMIMIC_S3_TEST_ENDPOINT");
  if (endpoint == nullptr) return;
  std::string local = endpoint;
  const std::size_t host = local.find("127.0.0.1");
  if (host == std::string::npos) {
    MESSAGE("endpoint is not 127.0.0.1: virtual-hosted live test skipped");
    return;
  }
  local.replace(host, 9, "localhost");
  auto live = MakeLive({{"endpoint_url", local}, {"addressing_style", "virtual"}});
  if (!live) return;
  iomimic::Storage& s = *live->storage;
  const std::string path = live->prefix + "virtual/hosted.bin";
  const auto data = Pattern(300000, 5);
  {
    iomimic::Status made = s.CreateDirectories(live->prefix + "virtual");
    INFO(made.ToString());
    REQUIRE(made.ok());
  }
  iomimic::Status written = WriteAll(s, path, data, 65536);
  INFO(written.ToString());
  REQUIRE(written.ok());
  CHECK(ReadAll(s, path) == data);
  auto* s3 = dynamic_cast<iomimic::s3::S3Storage*>(&s);
  REQUIRE(s3 != nullptr);
  auto listed = s3->List(live->bucket, live->prefix.substr(6 + live->bucket.size()) + "virtual/");
  REQUIRE(listed.ok());
  CHECK(listed->size() == 1);
  CHECK(s.Remove(path).ok());
}

TEST_CASE("s3 live: a wrong secret is one clear 403") {
  auto live = MakeLive(
      {{"access_key_id", std::getenv("AWS_ACCESS_KEY_ID") ? std::getenv("AWS_ACCESS_KEY_ID") : "x"},
       {"secret_access_key", "wrong-secret-value"}});
  if (!live) return;
  auto st = live->storage->Stat(live->prefix + "x");
  REQUIRE(!st.ok());
  CHECK(st.status().message().find("HTTP 403") != std::string::npos);
  CHECK(st.status().message().find("wrong-secret-value") == std::string::npos);
}
