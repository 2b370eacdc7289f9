#include "kvcache/pyrandom.h"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace iomimic::kvcache {
namespace {

// Expected values printed by CPython 3.11 (/usr/bin/python3), e.g.
//   python3 -c "import random; r=random.Random(42); print([r.getrandbits(32) for _ in range(3)])"

TEST_CASE("pyrandom: raw words and random() match CPython for seed 42") {
  // r=random.Random(42); [r.getrandbits(32) for _ in range(3)]
  PyRandom r(42);
  CHECK(r.NextU32() == 2746317213U);
  CHECK(r.NextU32() == 478163327U);
  CHECK(r.NextU32() == 107420369U);
  // r=random.Random(42); [repr(r.random()) for _ in range(3)]
  PyRandom s(42);
  CHECK(s.Random() == 0.6394267984578837);
  CHECK(s.Random() == 0.025010755222666936);
  CHECK(s.Random() == 0.27502931836911926);
}

TEST_CASE("pyrandom: seeds 0, negative and above 32 bits") {
  CHECK(PyRandom(0).Random() == 0.8444218515250481);                // random.Random(0).random()
  CHECK(PyRandom(-7).Random() == 0.32383276483316237);              // random.Random(-7).random()
  CHECK(PyRandom((1LL << 40) + 5).Random() == 0.5043802970418443);  // random.Random(2**40+5)
  // random.Random(42 | (3 << 32)).random(): a two-word key
  std::array<std::uint32_t, 2> key{42, 3};
  PyRandom r;
  r.SeedWords(key);
  CHECK(r.Random() == 0.7791088418906693);
}

TEST_CASE("pyrandom: getrandbits over and under 32 bits") {
  // r=random.Random(12345); r.getrandbits(33), r.getrandbits(7), r.getrandbits(64),
  // r.getrandbits(0)
  PyRandom r(12345);
  CHECK(r.GetRandBits(33) == 6084336007ULL);
  CHECK(r.GetRandBits(7) == 1ULL);
  CHECK(r.GetRandBits(64) == 15222373233177589868ULL);
  CHECK(r.GetRandBits(0) == 0ULL);
}

TEST_CASE("pyrandom: randint, randrange, uniform, choice, shuffle") {
  // r=random.Random(42); [r.randint(512,4096) for _ in range(5)]
  PyRandom a(42);
  std::vector<std::int64_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(a.RandInt(512, 4096));
  CHECK(got == std::vector<std::int64_t>{3131, 968, 614, 3549, 1638});
  // r=random.Random(42); [r.randrange(10) for _ in range(8)]
  PyRandom b(42);
  got.clear();
  for (int i = 0; i < 8; ++i) got.push_back(b.RandRange(0, 10));
  CHECK(got == std::vector<std::int64_t>{1, 0, 4, 3, 3, 2, 1, 8});
  // r=random.Random(42); [repr(r.uniform(0.8,1.2)) for _ in range(2)]
  PyRandom c(42);
  CHECK(c.Uniform(0.8, 1.2) == 1.0557707193831534);
  CHECK(c.Uniform(0.8, 1.2) == 0.8100043020890668);
  // r=random.Random(42); [r.choice(['a','b','c']) for _ in range(8)] -> c a a c b a a a
  PyRandom d(42);
  std::string picks;
  for (int i = 0; i < 8; ++i) picks += "abc"[d.ChoiceIndex(3)];
  CHECK(picks == "caacbaaa");
  // r=random.Random(42); x=list(range(10)); r.shuffle(x)
  PyRandom e(42);
  std::vector<int> x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  e.Shuffle(std::span<int>(x));
  CHECK(x == std::vector<int>{7, 3, 2, 8, 5, 6, 9, 4, 0, 1});
  // random.Random(7).randint(1, 2**40)
  CHECK(PyRandom(7).RandInt(1, 1LL << 40) == 868231286072LL);
}

}  // namespace
}  // namespace iomimic::kvcache
