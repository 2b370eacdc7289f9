#include "kvcache/users.h"

#include <algorithm>
#include <cstdio>

#include "iomimic/random.h"

namespace iomimic::kvcache {
namespace {

class XoshiroSource final : public RandomSource {
 public:
  explicit XoshiroSource(std::uint64_t seed) : rng_(seed) {}
  double Random() override { return static_cast<double>(rng_.Next() >> 11) * 0x1.0p-53; }
  std::int64_t RandInt(std::int64_t low, std::int64_t high) override {
    if (high <= low) return low;
    const std::uint64_t span = static_cast<std::uint64_t>(high - low) + 1;
    return low + static_cast<std::int64_t>(rng_.Next() % span);
  }
  double Uniform(double low, double high) override { return low + (high - low) * Random(); }
  std::size_t Choice(std::size_t n) override {
    return n == 0 ? 0 : static_cast<std::size_t>(rng_.Next() % n);
  }

 private:
  Xoshiro256 rng_;
};

struct Ranges {
  std::uint64_t c0, c1, g0, g1;
  double t0, t1;
};

Ranges RangesOf(const config::KvCacheConfig& c, UserType type) {
  switch (type) {
    case UserType::kCoding:
      return {c.coding_context_min,     c.coding_context_max,     c.coding_generation_min,
              c.coding_generation_max,  c.coding_think_time_min,  c.coding_think_time_max};
    case UserType::kDocument:
      return {c.document_context_min,    c.document_context_max,    c.document_generation_min,
              c.document_generation_max, c.document_think_time_min, c.document_think_time_max};
    case UserType::kChatbot:
      break;
  }
  return {c.chatbot_context_min,    c.chatbot_context_max,    c.chatbot_generation_min,
          c.chatbot_generation_max, c.chatbot_think_time_min, c.chatbot_think_time_max};
}

}  // namespace

std::unique_ptr<RandomSource> MakeRandomSource(std::uint64_t seed) {
  return std::make_unique<XoshiroSource>(seed);
}

const char* QosName(Qos qos) {
  switch (qos) {
    case Qos::kInteractive:
      return "interactive";
    case Qos::kResponsive:
      return "responsive";
    case Qos::kBatch:
      break;
  }
  return "batch";
}

double QosTargetP95Ms(Qos qos) {
  switch (qos) {
    case Qos::kInteractive:
      return 50;
    case Qos::kResponsive:
      return 100;
    case Qos::kBatch:
      break;
  }
  return 1000;
}

std::vector<UserProfile> MakeUsers(const config::KvCacheConfig& c, RandomSource& random) {
  constexpr double kInteractive = 0.15, kResponsiveThreshold = 0.50;
  std::vector<UserProfile> users;
  users.reserve(c.num_users);
  for (std::uint64_t i = 0; i < c.num_users; ++i) {
    UserProfile u;
    u.type = static_cast<UserType>(random.Choice(3));
    const double r = random.Random();
    u.qos = r < kInteractive           ? Qos::kInteractive
            : r < kResponsiveThreshold ? Qos::kResponsive
                                       : Qos::kBatch;
    char id[32];
    std::snprintf(id, sizeof id, "user_%04llu", static_cast<unsigned long long>(i));
    u.id = id;
    const Ranges g = RangesOf(c, u.type);
    u.context_tokens = static_cast<std::uint64_t>(random.RandInt(
        static_cast<std::int64_t>(g.c0), static_cast<std::int64_t>(g.c1)));
    u.generation_tokens = static_cast<std::uint64_t>(random.RandInt(
        static_cast<std::int64_t>(g.g0), static_cast<std::int64_t>(g.g1)));
    u.think_seconds = random.Uniform(g.t0, g.t1);
    users.push_back(std::move(u));
  }
  return users;
}

std::uint64_t LargestContext(const config::KvCacheConfig& c) {
  return std::max({c.chatbot_context_max, c.coding_context_max, c.document_context_max});
}

std::uint64_t SmallestContext(const config::KvCacheConfig& c) {
  // A request draws from [max(1, context / 4), context]; the prefix check
  // may take up to 9 tokens off.
  const std::uint64_t least =
      std::min({c.chatbot_context_min, c.coding_context_min, c.document_context_min}) / 4;
  return least > 9 ? least - 9 : 1;
}

}  // namespace iomimic::kvcache
