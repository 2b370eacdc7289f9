// The KV-cache workflow's users and their requests (docs/kvcache.md,
// "Users and requests"), drawn as the reference's UserSimulator and
// user_worker draw them, through a small random-source interface so that a
// Python-random-compatible source (kvcache/pyrandom.h) can replace the
// default one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace iomimic::kvcache {

// The draws the reference makes from Python's `random`.
class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual double Random() = 0;                                       // [0, 1)
  virtual std::int64_t RandInt(std::int64_t low, std::int64_t high) = 0;  // [low, high]
  virtual double Uniform(double low, double high) = 0;
  virtual std::size_t Choice(std::size_t n) = 0;  // [0, n)
};

// iomimic's own seeded source (xoshiro256**).
std::unique_ptr<RandomSource> MakeRandomSource(std::uint64_t seed);

enum class Qos : std::uint8_t { kInteractive = 0, kResponsive = 1, kBatch = 2 };
inline constexpr int kQosCount = 3;
const char* QosName(Qos qos);
double QosTargetP95Ms(Qos qos);  // 50, 100, 1000 (the reference's qos_profiles)

enum class UserType : std::uint8_t { kChatbot = 0, kCoding = 1, kDocument = 2 };

struct UserProfile {
  std::string id;  // user_0000
  UserType type = UserType::kChatbot;
  std::uint64_t context_tokens = 0;
  std::uint64_t generation_tokens = 0;
  double think_seconds = 0;
  Qos qos = Qos::kBatch;
};

// The reference's generate_mixed_users: per user a type (uniform over the
// three), a QoS class (15 % interactive, 35 % responsive, 50 % batch), then
// the context, generation and think time from the type's ranges.
std::vector<UserProfile> MakeUsers(const config::KvCacheConfig& c, RandomSource& random);

// The largest and the smallest context a request can have (for the tier
// capacity checks).
std::uint64_t LargestContext(const config::KvCacheConfig& c);
std::uint64_t SmallestContext(const config::KvCacheConfig& c);

}  // namespace iomimic::kvcache
