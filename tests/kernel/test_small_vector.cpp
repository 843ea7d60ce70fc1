// SmallVector (kernel/include/clampai/kernel/small_vector.hpp) against std::vector, with an
// element type that counts its live objects: no element is lost, doubled or leaked whether the
// vector is inline or on the heap, copied, moved or grown from one of its own elements.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "clampai/kernel/small_vector.hpp"
#include "clampai/kernel/state.hpp"

namespace {

int live = 0;

struct Counted {
  std::string text;  // long enough to live on the heap: a bad move or copy shows
  explicit Counted(int i) : text("element number " + std::to_string(i) + " of the test") { ++live; }
  Counted(const Counted& o) : text(o.text) { ++live; }
  Counted(Counted&& o) noexcept : text(std::move(o.text)) { ++live; }
  Counted& operator=(const Counted&) = default;
  Counted& operator=(Counted&&) noexcept = default;
  ~Counted() { --live; }
  bool operator==(const Counted& o) const { return text == o.text; }
};

using Small = clampai::kernel::SmallVector<Counted, 3>;

void require_same(const Small& v, const std::vector<Counted>& model) {
  REQUIRE(v.size() == model.size());
  REQUIRE(v.empty() == model.empty());
  REQUIRE(v.capacity() >= v.size());
  for (std::size_t i = 0; i < model.size(); ++i) REQUIRE(v[i] == model[i]);
  REQUIRE(static_cast<std::size_t>(v.end() - v.begin()) == model.size());
}

}  // namespace

TEST_CASE("SmallVector behaves as std::vector, inline and on the heap") {
  live = 0;
  {
    std::mt19937 rng(20261128);
    for (int round = 0; round < 200; ++round) {
      Small v;
      std::vector<Counted> model;
      for (int op = 0; op < 40; ++op) {
        switch (rng() % 7) {
          case 0:
          case 1:
          case 2: {
            const int x = static_cast<int>(rng() % 1000);
            v.emplace_back(x);
            model.emplace_back(x);
            break;
          }
          case 3:
            if (!v.empty()) {
              // Grown from one of its own elements: the argument must survive the growth.
              v.push_back(v.front());
              model.push_back(model.front());
            }
            break;
          case 4: {
            Small copy(v);
            require_same(copy, model);
            Small moved(std::move(copy));
            require_same(moved, model);
            REQUIRE(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
            v = std::move(moved);
            break;
          }
          case 5: {
            Small other;
            other = v;
            require_same(other, model);
            REQUIRE(other == v);
            other.emplace_back(-1);
            REQUIRE_FALSE(other == v);
            break;
          }
          default:
            if (rng() % 4 == 0) {
              v.clear();
              model.clear();
            } else if (!v.empty()) {
              v.pop_back();
              model.pop_back();
            }
        }
        require_same(v, model);
      }
    }
  }
  REQUIRE(live == 0);  // every element constructed was destroyed once
}

TEST_CASE("SmallVector: reserve keeps the elements; the inline room is used first") {
  live = 0;
  {
    Small v;
    REQUIRE(v.capacity() == 3);
    for (int i = 0; i < 3; ++i) v.emplace_back(i);
    const Counted* inline_data = v.data();
    REQUIRE(v.capacity() == 3);
    v.reserve(10);
    REQUIRE(v.capacity() == 10);
    REQUIRE(v.data() != inline_data);
    REQUIRE(v[2] == Counted(2));
    Small w{Counted(7), Counted(8)};
    REQUIRE(w.size() == 2);
    REQUIRE(w.back() == Counted(8));
  }
  REQUIRE(live == 0);
}

TEST_CASE("Changes converts to a ChangeSpan") {
  clampai::kernel::Changes c;
  c.emplace_back(1u, clampai::kernel::Value::boolean(true));
  const clampai::kernel::ChangeSpan span = c;
  REQUIRE(span.size() == 1);
  REQUIRE(span[0].first == 1u);
}
