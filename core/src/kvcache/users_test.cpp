#include "kvcache/users.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace iomimic::kvcache {
namespace {

// Expected users printed by the reference's own code (MLPerf Storage
// kv_cache_benchmark, kv_cache/workload.py) with CPython 3.11, from the
// benchmark's folder:
//   python3 -c "import random; from kv_cache.workload import UserSimulator; random.seed(42);
//     [print(u.user_id, u.context_length, u.generation_length, repr(u.think_time), u.priority,
//            u.qos_level.value) for u in UserSimulator.generate_mixed_users(12)]"
struct Expected {
  const char* id;
  std::int64_t context;
  std::int64_t generation;
  double think;
  int priority;
  const char* qos;
};
constexpr Expected kSeed42[] = {
    {"user_0000", 16245, 481, 0.5938702245641714, 3, "interactive"},
    {"user_0001", 3283, 189, 0.13477553305176648, 1, "batch"},
    {"user_0002", 7166, 211, 0.3861287147125917, 3, "interactive"},
    {"user_0003", 7353, 758, 0.8034237851539905, 3, "interactive"},
    {"user_0004", 4308, 488, 0.8446554014662464, 1, "batch"},
    {"user_0005", 8648, 359, 0.5583765145291065, 2, "responsive"},
    {"user_0006", 16545, 149, 0.48718350438770275, 3, "interactive"},
    {"user_0007", 5519, 473, 0.567539903737474, 1, "batch"},
    {"user_0008", 2062, 70, 0.3208162525092908, 1, "batch"},
    {"user_0009", 10021, 791, 0.5307463083079919, 1, "batch"},
    {"user_0010", 1445, 124, 0.4940886082643031, 3, "interactive"},
    {"user_0011", 2068, 121, 0.2813641209473742, 1, "batch"},
};

TEST_CASE("users: the first 12 users for seed 42 are the reference's") {
  Population p = MakeUsers(42, 12);
  REQUIRE(p.users.size() == 12);
  for (std::size_t i = 0; i < 12; ++i) {
    CAPTURE(i);
    const UserProfile& u = p.users[i];
    CHECK(u.user_id == kSeed42[i].id);
    CHECK(u.context_length == kSeed42[i].context);
    CHECK(u.generation_length == kSeed42[i].generation);
    CHECK(u.think_time == kSeed42[i].think);
    CHECK(u.priority == kSeed42[i].priority);
    CHECK(std::string(QosLevelName(u.qos)) == kSeed42[i].qos);
    // The context range tells the type apart where the ranges do not overlap.
    const UserTemplate t = ReferenceUserTemplates()[static_cast<int>(u.type)];
    CHECK(u.context_length >= t.context_min);
    CHECK(u.context_length <= t.context_max);
  }
  // A prefix of the population is the smaller population.
  CHECK(MakeUsers(42, 3).users[2].context_length == 7166);
}

// One user's requests in the order the reference's threads draw them
// (user thread: think, [end], context, generation, next think; worker:
// system prompt), printed with the reference's UserSimulator and PrefixMatcher:
//   random.seed(42); u = UserSimulator.generate_mixed_users(1)[0]
//   think = u.think_time * random.uniform(0.8, 1.2)
//   for k in range(8):
//     end = (random.random() >= 0.8) if k > 0 else False
//     ctx = random.randint(max(1, u.context_length // 4), u.context_length)
//     gen = random.randint(max(1, u.generation_length // 4), u.generation_length)
//     nthink = u.think_time * random.uniform(0.8, 1.2)
//     sp = P.index(random.choice(P)) if random.random() < 0.2 else -1   # P = COMMON_SYSTEM_PROMPTS
//     print(repr(think), int(end), ctx, gen, sp); think = nthink
TEST_CASE("users: one user's request draws follow the reference's stream") {
  Population p = MakeUsers(42, 1);
  RequestDrawer drawer(p.users[0], UserStream(p, 42, 0), RequestDrawOptions{});
  struct Row {
    double think;
    bool end;
    std::int64_t context, generation;
    int prompt;
  };
  const Row rows[] = {
      {0.5082431480307157, false, 5740, 466, -1},   {0.6510403875926295, false, 4581, 135, -1},
      {0.49735330490621626, false, 13256, 221, -1}, {0.6451852709787687, false, 11420, 421, -1},
      {0.5411798509987809, false, 6676, 477, -1},   {0.5754874226655262, false, 9575, 172, 1},
      {0.49712777758556187, false, 4772, 355, -1},  {0.6024761384872652, false, 13105, 270, -1},
  };
  for (const Row& row : rows) {
    RequestDraw d = drawer.Next();
    CAPTURE(drawer.count());
    CHECK(d.think_seconds == row.think);
    CHECK(d.end_conversation == row.end);
    CHECK(d.context_tokens == row.context);
    CHECK(d.generation_tokens == row.generation);
    CHECK(d.system_prompt == row.prompt);
  }
  CHECK(ReferenceSystemPrompts()[1].token_count == 9);
}

// User k > 0 has its own stream, random.seed(seed + (k << 64)):
//   random.seed(42); u = UserSimulator.generate_mixed_users(3)[1]; random.seed(42 + (1 << 64))
//   think = u.think_time * random.uniform(0.8, 1.2)
//   ctx, gen = randint(max(1, C // 4), C), randint(max(1, G // 4), G)
TEST_CASE("users: other users draw from their own seeded streams") {
  Population p = MakeUsers(42, 3);
  RequestDrawer drawer(p.users[1], UserStream(p, 42, 1), RequestDrawOptions{});
  RequestDraw d = drawer.Next();
  CHECK(d.think_seconds == 0.12666244642183153);
  CHECK(d.context_tokens == 2715);
  CHECK(d.generation_tokens == 186);
  // Streams are a pure function of (seed, user): drawing user 2 first changes nothing.
  RequestDrawer again(p.users[1], UserStream(MakeUsers(42, 3), 42, 1), RequestDrawOptions{});
  CHECK(again.Next().context_tokens == 2715);
}

TEST_CASE("users: switches remove their draws") {
  Population p = MakeUsers(42, 1);
  RequestDrawOptions off;
  off.multi_turn = false;
  off.prefix_caching = false;
  RequestDrawer drawer(p.users[0], UserStream(p, 42, 0), off);
  // Without the end-of-conversation and system-prompt draws the sequence is
  // think, context, generation, think, ...: the first request is unchanged.
  RequestDraw d = drawer.Next();
  CHECK(d.context_tokens == 5740);
  CHECK(d.system_prompt == -1);
  for (int i = 0; i < 50; ++i) {
    d = drawer.Next();
    CHECK_FALSE(d.end_conversation);
    CHECK(d.system_prompt == -1);
    CHECK(d.context_tokens >= 16245 / 4);
    CHECK(d.context_tokens <= 16245);
  }
}

// Four users in the reference's own order (PlanReferenceRequests), printed by
// a virtual-time play of the reference's threads with its own code:
//   random.seed(42); users = UserSimulator.generate_mixed_users(4); heap = []
//   for i, u in enumerate(users): th = u.think_time * random.uniform(0.8, 1.2); push (th, i, th)
//   repeat: pop (t, i, th); end = random() >= 0.8 if user i started; ctx, gen = randint(...)
//     nth = think_time * uniform(0.8, 1.2); push (t + 0.0004 + nth, i, nth)
//     sp = P.index(choice(P)) if random() < 0.2 else -1
// The reference (kv-cache.py --seed 42 --num-users 4 --max-requests 60
// --io-trace-log) wrote its Prefill writes in this order, of these contexts
// less the prompt's tokens (1473 - 9 = 1464, 2376, 997, 4891, 2301 - 5, ...).
TEST_CASE("users: four users are planned in the reference's wake order") {
  struct Row {
    std::size_t user;
    double time, think;
    bool end;
    std::int64_t context, generation;
    int prompt;
  };
  const Row rows[] = {
      {1, 0.12281774683814758, 0.12281774683814758, false, 1473, 155, 1},
      {1, 0.24938115117350124, 0.12616340433535367, false, 2376, 71, -1},
      {1, 0.3769542325586779, 0.12717308138517666, false, 997, 164, -1},
      {2, 0.44316769799688105, 0.44316769799688105, false, 4891, 72, -1},
      {1, 0.5140828297453466, 0.13672859718666866, false, 2301, 96, 0},
      {0, 0.5818049305284769, 0.5818049305284769, false, 8802, 160, -1},
      {1, 0.660286874106411, 0.14580404436106448, false, 2677, 140, -1},
      {1, 0.7772760176067302, 0.11658914350031925, false, 1112, 90, -1},
      {2, 0.837734165536018, 0.39416646753913687, false, 4002, 194, -1},
      {3, 0.886596582964045, 0.886596582964045, false, 2296, 423, -1},
      {1, 0.9142920387084968, 0.13661602110176674, false, 1091, 101, -1},
      {1, 1.0717398283042823, 0.15704778959578553, false, 1690, 174, -1},
      {2, 1.1809570272487002, 0.3428228617126822, false, 3960, 87, -1},
      {1, 1.2012888548887892, 0.12914902658450708, false, 3214, 156, -1},
      {0, 1.2604802010010063, 0.6782752704725293, false, 6327, 380, -1},
      {1, 1.3579111044196415, 0.15622224953085234, true, 1446, 87, -1},
  };
  const std::vector<PlannedRequest> plan =
      PlanReferenceRequests(MakeUsers(42, 4), 16, RequestDrawOptions{}, 0.0004);
  REQUIRE(plan.size() == 16);
  for (std::size_t k = 0; k < 16; ++k) {
    CAPTURE(k);
    CHECK(plan[k].user == rows[k].user);
    CHECK(plan[k].time_s == doctest::Approx(rows[k].time).epsilon(1e-12));
    CHECK(plan[k].draw.think_seconds == rows[k].think);
    CHECK(plan[k].draw.end_conversation == rows[k].end);
    CHECK(plan[k].draw.context_tokens == rows[k].context);
    CHECK(plan[k].draw.generation_tokens == rows[k].generation);
    CHECK(plan[k].draw.system_prompt == rows[k].prompt);
  }
  // One user: the plan is RequestDrawer's sequence for user 0.
  Population one = MakeUsers(42, 1);
  const std::vector<PlannedRequest> solo = PlanReferenceRequests(one, 8, RequestDrawOptions{});
  RequestDrawer drawer(one.users[0], UserStream(one, 42, 0), RequestDrawOptions{});
  for (const PlannedRequest& r : solo) {
    RequestDraw d = drawer.Next();
    CHECK(r.draw.context_tokens == d.context_tokens);
    CHECK(r.draw.think_seconds == d.think_seconds);
    CHECK(r.draw.system_prompt == d.system_prompt);
  }
}

// Each user's draws from ReferencePlan::Next are its requests of the plan, in
// order, however the user threads interleave their calls.
TEST_CASE("users: a reference plan gives each user thread its planned requests") {
  const Population p = MakeUsers(42, 4);
  const std::vector<PlannedRequest> plan = PlanReferenceRequests(p, 200, RequestDrawOptions{});
  std::vector<std::vector<RequestDraw>> want(4);
  for (const PlannedRequest& r : plan) want[r.user].push_back(r.draw);
  ReferencePlan reference(p, RequestDrawOptions{});
  std::vector<std::vector<RequestDraw>> got(4);
  std::vector<std::thread> threads;
  for (std::size_t u = 4; u-- > 0;) {  // the last user asks first
    threads.emplace_back([&, u] {
      for (std::size_t k = 0; k < want[u].size(); ++k) got[u].push_back(reference.Next(u));
    });
  }
  for (std::thread& t : threads) t.join();
  for (std::size_t u = 0; u < 4; ++u) {
    CAPTURE(u);
    REQUIRE(got[u].size() == want[u].size());
    for (std::size_t k = 0; k < want[u].size(); ++k) {
      CHECK(got[u][k].context_tokens == want[u][k].context_tokens);
      CHECK(got[u][k].generation_tokens == want[u][k].generation_tokens);
      CHECK(got[u][k].think_seconds == want[u][k].think_seconds);
      CHECK(got[u][k].end_conversation == want[u][k].end_conversation);
      CHECK(got[u][k].system_prompt == want[u][k].system_prompt);
    }
  }
  CHECK(want[1].front().context_tokens == 1473);  // the plan's first request (test above)
}

}  // namespace
}  // namespace iomimic::kvcache
