// The KV-cache reference's simulated users and their per-request draws, as a
// pure function of the seed (docs/kvcache-reference.md, "Reference-identical draws").
//
// The reference (MLPerf Storage's kv-cache.py) seeds Python's global `random`
// with --seed, then draws its users first (UserSimulator.generate_mixed_users
// in its kv_cache/workload.py): per user, in this order,
//   type      = choice(['chatbot', 'coding', 'document'])
//   r         = random(): INTERACTIVE (priority 3) if r < interactive_probability,
//               else RESPONSIVE (2) if r < responsive_threshold, else BATCH (1)
//   context   = randint(template.context_range)
//   generation= randint(template.generation_range)
//   think     = uniform(template.think_time_range)
// and names them user_0000, user_0001, ... MakeUsers reproduces that exactly.
//
// Per request each user thread then draws (its generate_requests/user_worker):
//   think multiplier = uniform(0.8, 1.2)                   (sleep before the request)
//   end conversation = random() >= 0.8                      (multi-turn, not the first request)
//   context tokens   = randint(max(1, context_length // 4), context_length)
//   generation tokens= randint(max(1, generation_length // 4), generation_length)
// and the worker that serves the request draws, with prefix caching on,
//   system prompt    = random() < 0.2, then choice of 3 prompts
// The reference shares one global stream among all user and worker threads, so
// with more than one user its per-request draws depend on thread scheduling.
// iomimic gives each user its own stream instead (UserStream), which makes the
// run a pure function of the seed; user 0's stream continues the stream that
// made the users, and its draws are taken in the order the reference takes
// them with one user (request k's system-prompt draw comes after the think
// draw of request k + 1), so a one-user run draws exactly what the reference
// draws. RAG draws (--enable-rag) are not covered.

#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <vector>

#include "kvcache/pyrandom.h"

namespace iomimic::kvcache {

enum class UserType { kChatbot = 0, kCoding = 1, kDocument = 2 };
enum class QosLevel { kInteractive, kResponsive, kBatch };

// "chatbot", "coding", "document".
const char* UserTypeName(UserType type);
// "interactive", "responsive", "batch" (the reference's QoSLevel values).
const char* QosLevelName(QosLevel level);

// One user_templates entry of the reference's config.yaml: inclusive integer
// token ranges and a think-time range in seconds.
struct UserTemplate {
  std::int64_t context_min = 0;
  std::int64_t context_max = 0;
  std::int64_t generation_min = 0;
  std::int64_t generation_max = 0;
  double think_min = 0;
  double think_max = 0;
};

// Templates indexed by UserType.
using UserTemplates = std::array<UserTemplate, 3>;

// The reference's templates (its config.yaml and built-in defaults agree):
// chatbot 512-4096 / 50-200 / 0.1-0.5 s, coding 4096-25000 / 100-500 /
// 0.2-1.0 s, document 4096-16384 / 200-800 / 0.3-1.5 s.
UserTemplates ReferenceUserTemplates();

// qos_distribution of the reference's config.yaml.
struct QosDistribution {
  double interactive_probability = 0.15;
  double responsive_threshold = 0.50;
};

struct UserProfile {
  std::string user_id;  // user_0000, user_0001, ...
  UserType type = UserType::kChatbot;
  std::int64_t context_length = 0;
  std::int64_t generation_length = 0;
  double think_time = 0;  // seconds
  int priority = 1;       // 3 interactive, 2 responsive, 1 batch
  QosLevel qos = QosLevel::kBatch;
};

// The users and the stream that made them, left where the reference's global
// stream is when its user threads start.
struct Population {
  std::vector<UserProfile> users;
  PyRandom stream;
};

// Seeds a stream as random.seed(seed) and draws `num_users` users from it, as
// generate_mixed_users does. The templates' ranges must be min <= max.
Population MakeUsers(std::int64_t seed, std::size_t num_users,
                     const UserTemplates& templates = ReferenceUserTemplates(),
                     const QosDistribution& qos = QosDistribution{});

// Draws `num_users` users from `rng` (as MakeUsers, without seeding).
std::vector<UserProfile> DrawUsers(PyRandom& rng, std::size_t num_users,
                                   const UserTemplates& templates, const QosDistribution& qos);

// The per-request stream of user `user_index`: a copy of population.stream
// for user 0; for user k > 0 a stream seeded with init_by_array({low 32 bits
// of |seed|, high 32 bits, k}), i.e. Python's random.seed(|seed| + (k << 64)).
PyRandom UserStream(const Population& population, std::int64_t seed, std::size_t user_index);

// Switches of the reference that decide which per-request draws are made.
struct RequestDrawOptions {
  bool multi_turn = true;                  // not --disable-multi-turn
  bool prefix_caching = true;              // not --disable-prefix-caching
  double end_conversation_at = 0.8;        // ends when random() >= this
  double system_prompt_probability = 0.2;  // prefix_cache.system_prompt_hit_probability
  std::size_t system_prompt_count = 3;     // PrefixMatcher.COMMON_SYSTEM_PROMPTS
};

// One request's draws.
struct RequestDraw {
  double think_seconds = 0;       // sleep before the request: think_time * uniform(0.8, 1.2)
  bool end_conversation = false;  // close the open conversation before this request
  std::int64_t context_tokens = 0;
  std::int64_t generation_tokens = 0;
  int system_prompt = -1;  // index of the common system prompt, -1: no prefix hit
};

// The reference's common system prompts (its prefix_cache.py): the prefix
// cache key is derived from the text and its word count is the number of
// tokens a hit takes off the request's context.
struct SystemPrompt {
  const char* text;
  int token_count;  // words in text
};
const std::array<SystemPrompt, 3>& ReferenceSystemPrompts();

// Draws one user's requests in the reference's order. Not thread-safe: one
// drawer per user thread.
class RequestDrawer {
 public:
  RequestDrawer(const UserProfile& user, PyRandom stream, const RequestDrawOptions& options);

  // The next request's draws. end_conversation is drawn from the second
  // request on when multi_turn is set (the reference draws it only while the
  // user has a conversation open, which is from its second request on).
  RequestDraw Next();
  // Requests drawn so far.
  std::uint64_t count() const { return count_; }

 private:
  double DrawThink();

  UserProfile user_;
  PyRandom rng_;
  RequestDrawOptions options_;
  std::uint64_t count_ = 0;
  bool have_think_ = false;
  double next_think_ = 0;
};

// One request of PlanReferenceRequests: whose, when, and its draws.
struct PlannedRequest {
  std::size_t user = 0;  // index in Population::users
  double time_s = 0;     // virtual time the user thread wakes and issues it
  RequestDraw draw;
};

// The reference's own order, for any number of users: its user threads all
// start at once and each draws its first sleep at once (user 0 first); then,
// in trace mode where an operation takes no time, whichever thread wakes
// first draws its request (end of conversation, context, generation), queues
// it, draws its next sleep, and the idle worker draws the request's system
// prompt before any other thread wakes. This plays that in virtual time from
// one stream (population.stream continued), waking each user at its last
// wake + `overhead_s` + its think time, and returns the first `count`
// requests in wake order (ties: the lower user index). overhead_s stands for
// the time a thread spends between waking and sleeping again (Python's own
// work and sleep overshoot, about 0.3-0.5 ms): it only decides which of two
// users waking within that time of each other goes first. One user gives
// RequestDrawer's sequence for user 0 whatever the overhead.
//
// Checked against the reference: for seed 42, llama3.1-8b, 4 users and
// --max-requests 60 in trace mode, its 60 Prefill writes were these requests
// in this order (context less the system prompt's tokens) with overhead_s
// between 0.0003 and 0.0005 (50 of 60 with 0, 26 with 0.005).
std::vector<PlannedRequest> PlanReferenceRequests(const Population& population, std::size_t count,
                                                  const RequestDrawOptions& options,
                                                  double overhead_s = 0.0004);

// PlanReferenceRequests for user threads: each user's requests in the plan,
// taken one at a time by that user's thread (Next), the plan extended as far
// as needed. The draws a user gets depend only on the seed, the users and the
// options, not on when the threads ask, so a multi-user run draws what the
// reference draws whatever the threads' real timing. A user that asks far
// ahead of the others makes the plan hold the others' requests until they
// take them. Thread-safe.
class ReferencePlan {
 public:
  ReferencePlan(const Population& population, const RequestDrawOptions& options,
                double overhead_s = 0.0004);
  ReferencePlan(const ReferencePlan&) = delete;
  ReferencePlan& operator=(const ReferencePlan&) = delete;

  // User `user`'s next request (user < the population's size).
  RequestDraw Next(std::size_t user);
  // The next request of the whole plan, in wake order (PlanReferenceRequests
  // is this, `count` times). Not to be mixed with Next on one plan.
  PlannedRequest Step();

 private:
  struct Wake {
    double time;
    std::size_t user;
    double think;
    bool operator>(const Wake& o) const { return time != o.time ? time > o.time : user > o.user; }
  };
  PlannedRequest StepLocked();

  std::mutex mu_;
  std::vector<UserProfile> users_;
  RequestDrawOptions options_;
  double overhead_s_;
  PyRandom rng_;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<Wake>> wakes_;
  std::vector<bool> started_;
  std::vector<std::deque<RequestDraw>> pending_;
};

}  // namespace iomimic::kvcache
