#include "kvcache/users.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <utility>

#include "iomimic/enum_names.h"

namespace iomimic::kvcache {

namespace {
constexpr const char* kUserTypeNames[] = {"chatbot", "coding", "document"};
static_assert(std::size(kUserTypeNames) == static_cast<std::size_t>(UserType::kDocument) + 1);
constexpr const char* kQosLevelNames[] = {"interactive", "responsive", "batch"};
static_assert(std::size(kQosLevelNames) == static_cast<std::size_t>(QosLevel::kBatch) + 1);
}  // namespace

const char* UserTypeName(UserType type) { return EnumName(type, kUserTypeNames, "chatbot"); }

const char* QosLevelName(QosLevel level) { return EnumName(level, kQosLevelNames, "batch"); }

UserTemplates ReferenceUserTemplates() {
  UserTemplates t;
  t[static_cast<int>(UserType::kChatbot)] = {512, 4096, 50, 200, 0.1, 0.5};
  t[static_cast<int>(UserType::kCoding)] = {4096, 25000, 100, 500, 0.2, 1.0};
  t[static_cast<int>(UserType::kDocument)] = {4096, 16384, 200, 800, 0.3, 1.5};
  return t;
}

const std::array<SystemPrompt, 3>& ReferenceSystemPrompts() {
  static const std::array<SystemPrompt, 3> prompts = {{
      {"You are a helpful assistant.", 5},
      {"You are an AI assistant helping with coding tasks.", 9},
      {"You are a professional writing assistant.", 6},
  }};
  return prompts;
}

std::vector<UserProfile> DrawUsers(PyRandom& rng, std::size_t num_users,
                                   const UserTemplates& templates, const QosDistribution& qos) {
  std::vector<UserProfile> users;
  users.reserve(num_users);
  for (std::size_t i = 0; i < num_users; ++i) {
    UserProfile u;
    u.type = static_cast<UserType>(rng.ChoiceIndex(3));
    double r = rng.Random();
    if (r < qos.interactive_probability) {
      u.qos = QosLevel::kInteractive;
      u.priority = 3;
    } else if (r < qos.responsive_threshold) {
      u.qos = QosLevel::kResponsive;
      u.priority = 2;
    } else {
      u.qos = QosLevel::kBatch;
      u.priority = 1;
    }
    const UserTemplate& t = templates[static_cast<int>(u.type)];
    u.context_length = rng.RandInt(t.context_min, t.context_max);
    u.generation_length = rng.RandInt(t.generation_min, t.generation_max);
    u.think_time = rng.Uniform(t.think_min, t.think_max);
    char id[32];
    std::snprintf(id, sizeof id, "user_%04zu", i);
    u.user_id = id;
    users.push_back(std::move(u));
  }
  return users;
}

Population MakeUsers(std::int64_t seed, std::size_t num_users, const UserTemplates& templates,
                     const QosDistribution& qos) {
  Population p{{}, PyRandom(seed)};
  p.users = DrawUsers(p.stream, num_users, templates, qos);
  return p;
}

PyRandom UserStream(const Population& population, std::int64_t seed, std::size_t user_index) {
  if (user_index == 0) return population.stream;
  std::uint64_t magnitude =
      seed < 0 ? ~static_cast<std::uint64_t>(seed) + 1 : static_cast<std::uint64_t>(seed);
  std::array<std::uint32_t, 3> key = {static_cast<std::uint32_t>(magnitude),
                                      static_cast<std::uint32_t>(magnitude >> 32),
                                      static_cast<std::uint32_t>(user_index)};
  PyRandom rng;
  rng.SeedWords(key);
  return rng;
}

namespace {

// One request drawn as the reference's threads draw it (see RequestDrawer::Next):
// end of conversation, context, generation, the next sleep, the system prompt.
RequestDraw DrawPlanned(PyRandom& rng, const UserProfile& u, bool started,
                        const RequestDrawOptions& options, double think, double* next_think) {
  RequestDraw d;
  d.think_seconds = think;
  if (options.multi_turn && started)
    d.end_conversation = rng.Random() >= options.end_conversation_at;
  d.context_tokens = rng.RandInt(std::max<std::int64_t>(1, u.context_length / 4), u.context_length);
  d.generation_tokens =
      rng.RandInt(std::max<std::int64_t>(1, u.generation_length / 4), u.generation_length);
  *next_think = u.think_time * rng.Uniform(0.8, 1.2);
  if (options.prefix_caching && options.system_prompt_count > 0 &&
      rng.Random() < options.system_prompt_probability) {
    d.system_prompt = static_cast<int>(rng.ChoiceIndex(options.system_prompt_count));
  }
  return d;
}

}  // namespace

RequestDrawer::RequestDrawer(const UserProfile& user, PyRandom stream,
                             const RequestDrawOptions& options)
    : user_(user), rng_(std::move(stream)), options_(options) {}

double RequestDrawer::DrawThink() { return user_.think_time * rng_.Uniform(0.8, 1.2); }

RequestDraw RequestDrawer::Next() {
  // The reference's user thread draws the next think time right after queueing
  // a request, before the worker serving it draws the system prompt.
  const double think = have_think_ ? next_think_ : DrawThink();
  RequestDraw d = DrawPlanned(rng_, user_, count_ > 0, options_, think, &next_think_);
  have_think_ = true;
  ++count_;
  return d;
}

ReferencePlan::ReferencePlan(const Population& population, const RequestDrawOptions& options,
                             double overhead_s)
    : users_(population.users),
      options_(options),
      overhead_s_(overhead_s),
      rng_(population.stream),
      started_(population.users.size(), false),
      pending_(population.users.size()) {
  // The user threads start at once and each draws its first sleep, user 0 first.
  for (std::size_t i = 0; i < users_.size(); ++i) {
    const double think = users_[i].think_time * rng_.Uniform(0.8, 1.2);
    wakes_.push(Wake{think, i, think});
  }
}

PlannedRequest ReferencePlan::StepLocked() {
  const Wake w = wakes_.top();
  wakes_.pop();
  double next_think = 0;
  PlannedRequest r;
  r.user = w.user;
  r.time_s = w.time;
  r.draw = DrawPlanned(rng_, users_[w.user], started_[w.user], options_, w.think, &next_think);
  started_[w.user] = true;
  wakes_.push(Wake{w.time + overhead_s_ + next_think, w.user, next_think});
  return r;
}

PlannedRequest ReferencePlan::Step() {
  std::lock_guard<std::mutex> lock(mu_);
  return StepLocked();
}

RequestDraw ReferencePlan::Next(std::size_t user) {
  std::lock_guard<std::mutex> lock(mu_);
  while (pending_[user].empty()) {
    PlannedRequest r = StepLocked();
    pending_[r.user].push_back(r.draw);
  }
  RequestDraw d = pending_[user].front();
  pending_[user].pop_front();
  return d;
}

std::vector<PlannedRequest> PlanReferenceRequests(const Population& population, std::size_t count,
                                                  const RequestDrawOptions& options,
                                                  double overhead_s) {
  std::vector<PlannedRequest> plan;
  if (population.users.empty()) return plan;
  ReferencePlan reference(population, options, overhead_s);
  plan.reserve(count);
  while (plan.size() < count) plan.push_back(reference.Step());
  return plan;
}

}  // namespace iomimic::kvcache
