#include "kvcache/request_queue.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace iomimic::kvcache {
namespace {

struct Item {
  int klass = 0;
  std::string name;
};

struct ClassOfItem {
  int operator()(const Item& i) const { return i.klass; }
};

using Queue = RequestQueue<Item, ClassOfItem>;

TEST_CASE("request queue: lower classes first, then in arrival order") {
  Queue q;
  for (const Item& i : {Item{2, "a"}, Item{0, "b"}, Item{2, "c"}, Item{1, "d"}, Item{0, "e"},
                        Item{1, "f"}, Item{2, "g"}}) {
    CHECK(q.Push(i));
  }
  CHECK(q.size() == 7);
  std::string order;
  Item got;
  while (q.size() > 0 && q.Pop(&got)) order += got.name;
  CHECK(order == "bedfacg");
}

TEST_CASE("request queue: a push wakes an idle worker while users sleep their think time") {
  // The users start sleeping before the worker waits: with one condition
  // variable for both, notify_one woke the longest waiter, a user, which went
  // back to sleep, and the request stayed queued until the next push.
  Queue q;
  std::vector<std::thread> users;
  std::atomic<int> woke_early{0};
  for (int u = 0; u < 4; ++u) {
    users.emplace_back([&] {
      if (q.Sleep(60)) ++woke_early;  // only Stop may end it
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::promise<std::string> taken;
  std::future<std::string> got = taken.get_future();
  std::thread worker([&] {
    Item i;
    taken.set_value(q.Pop(&i) ? i.name : std::string("(stopped)"));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto pushed = std::chrono::steady_clock::now();
  CHECK(q.Push(Item{1, "request"}));
  const bool handed = got.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - pushed).count();
  CHECK(handed);
  CHECK(seconds < 1.0);
  q.Stop();  // ends the users' sleep (and the worker's wait if it never woke)
  worker.join();
  for (std::thread& t : users) t.join();
  CHECK(got.get() == "request");
  CHECK(woke_early.load() == 0);
}

TEST_CASE("request queue: every push is taken while workers are busy and users sleep") {
  // Two workers, many pushes from four users at once: every item comes out
  // once, whatever thread each wake-up reaches.
  Queue q;
  constexpr int kPerUser = 200;
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&] {
      Item i;
      while (q.Pop(&i)) ++taken;
    });
  }
  for (int u = 0; u < 4; ++u) {
    threads.emplace_back([&, u] {
      for (int k = 0; k < kPerUser; ++k) {
        q.Push(Item{u % 3, std::to_string(k)});
        q.Sleep(0.0001);
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (taken.load() < 4 * kPerUser && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(taken.load() == 4 * kPerUser);
  q.Stop();
  for (std::thread& t : threads) t.join();
}

TEST_CASE("request queue: Stop ends Pop and Sleep at once and refuses pushes") {
  Queue q;
  CHECK(q.Sleep(0));
  CHECK(q.Sleep(0.001));
  std::promise<bool> popped, slept;
  std::thread worker([&] {
    Item i;
    popped.set_value(q.Pop(&i));
  });
  std::thread user([&] { slept.set_value(q.Sleep(60)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto stopped = std::chrono::steady_clock::now();
  q.Stop();
  CHECK_FALSE(popped.get_future().get());
  CHECK_FALSE(slept.get_future().get());
  CHECK(std::chrono::steady_clock::now() - stopped < std::chrono::seconds(5));
  worker.join();
  user.join();
  CHECK(q.stopped());
  CHECK_FALSE(q.Push(Item{0, "late"}));
  CHECK(q.size() == 0);
  CHECK_FALSE(q.Sleep(0));
  Item i;
  CHECK_FALSE(q.Pop(&i));
}

}  // namespace
}  // namespace iomimic::kvcache
