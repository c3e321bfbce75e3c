#include <tunekit/optimizer/contextual_annealing.hpp>
#include <tunekit/optimizer/draw_unvisited.hpp>
#include <tunekit/optimizer/exploration/contextual_epsilon.hpp>
#include <tunekit/optimizer/pick/diverse_pick.hpp>
#include <tunekit/optimizer/pick/top_pick.hpp>
#include <tunekit/space/features.hpp>
#include <tunekit/surrogate/random_forest.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <unordered_set>

namespace {

using tunekit::Candidate;
using tunekit::Config;
using tunekit::SearchSpace;

SearchSpace grid2(int n) {
  SearchSpace s;
  s.add(tunekit::Knob::range("a", 0, n - 1)).add(tunekit::Knob::range("b", 0, n - 1));
  return s;
}

}  // namespace

TEST_CASE("stochastic rounding has the right expectation") {
  tunekit::Rng rng(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) sum += static_cast<double>(tunekit::stochastic_round(3.2, rng));
  CHECK(sum / 100000 == doctest::Approx(3.2).epsilon(0.005));
  CHECK(tunekit::stochastic_round(5.0, rng) == 5);
  CHECK(tunekit::stochastic_round(0.0, rng) == 0);
}

TEST_CASE("submodular pick takes the candidates that cover the most new knob values") {
  SearchSpace s;
  s.add(tunekit::Knob::range("a", 0, 3)).add(tunekit::Knob::range("b", 0, 3)).add(tunekit::Knob::range("c", 0, 3));
  // Best-first candidates: 0..2 differ from each other in one knob only; 3 shares nothing with 0.
  const std::vector<Candidate> cands = {
      {{0, 0, 0}, 0, 9.0}, {{0, 0, 1}, 0, 8.0}, {{0, 1, 0}, 0, 7.0}, {{3, 3, 3}, 0, 1.0}, {{3, 3, 2}, 0, 0.5}};
  // AutoTVM's weights (scores ignored): the first, then the one with three new values, then the
  // first of those with one new value left (ties go to the better-scored).
  CHECK(tunekit::submodular_pick(s, cands, 3, 1.0, 0.0) == std::vector<std::size_t>{0, 3, 1});
  // Brute force over all 3-subsets: the greedy pick covers at least (1 - 1/e) of what the best
  // subset covers (Nemhauser et al.'s bound for a monotone submodular function).
  auto coverage = [&](std::vector<std::size_t> pick) {
    std::set<std::pair<std::size_t, std::uint32_t>> v;
    for (auto i : pick)
      for (std::size_t k = 0; k < 3; ++k) v.insert({k, cands[i].config[k]});
    return v.size();
  };
  std::size_t best = 0;
  for (std::size_t i = 0; i < 5; ++i)
    for (std::size_t j = i + 1; j < 5; ++j)
      for (std::size_t k = j + 1; k < 5; ++k) best = std::max(best, coverage({i, j, k}));
  CHECK(best == 8);  // {1, 2, 3}
  CHECK(static_cast<double>(coverage(tunekit::submodular_pick(s, cands, 3, 1.0, 0.0))) >= (1 - std::exp(-1.0)) * best);
  // A large score weight turns it into the top-n pick.
  CHECK(tunekit::submodular_pick(s, cands, 3, 1.0, 100.0) == std::vector<std::size_t>{0, 1, 2});
  // DiversePick asks for filter_ratio times the candidates.
  CHECK(tunekit::DiversePick{}.candidates(64) == 128);
  tunekit::Rng rng(1);
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  const tunekit::SearchContext ctx{s, h, visited};
  CHECK(tunekit::DiversePick{}.pick(ctx, cands, 2, rng) == std::vector<Config>{cands[0].config, cands[3].config});
  CHECK(tunekit::TopPick{}.pick(ctx, cands, 9, rng).size() == 5);
}

TEST_CASE("contextual epsilon is the mean predicted std over the best value, clamped to [0, 1]") {
  const SearchSpace s = grid2(16);
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  double sd_value = 0.3;
  tunekit::SearchContext ctx{s, h, visited, [](std::span<const Config> cs) { return std::vector<double>(cs.size()); },
                             0.0,
                             [&](std::span<const Config> cs, Eigen::VectorXd& m, Eigen::VectorXd& sd) {
                               m = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(cs.size()));
                               sd = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(cs.size()), sd_value);
                             },
                             1.5};
  tunekit::ContextualEpsilon eps;
  tunekit::Rng rng(1);
  CHECK(eps.epsilon(ctx, rng) == doctest::Approx(0.2));
  CHECK(eps.last_epsilon().epsilon == doctest::Approx(0.2));
  CHECK(eps.last_epsilon().mean_std == doctest::Approx(0.3));
  sd_value = 5.0;
  CHECK(eps.epsilon(ctx, rng) == 1.0);
  sd_value = 0.0;
  CHECK(eps.epsilon(ctx, rng) == 0.0);
  ctx.best_target = 0.0;  // nothing succeeded yet: explore
  CHECK(eps.epsilon(ctx, rng) == 1.0);
}

TEST_CASE("contextual epsilon of a random forest shrinks as the forest sees more data") {
  // A smooth landscape on a 64 x 64 grid; the forest is fitted on n random configs and the
  // contextual epsilon computed over K = 500 unvisited ones.
  const SearchSpace s = grid2(64);
  auto f = [](const Config& c) {
    const double a = c[0] / 63.0, b = c[1] / 63.0;
    return 10.0 + 4.0 * std::sin(3 * a) * std::cos(2 * b) + 3.0 * a * b;
  };
  std::vector<double> eps_by_n;
  for (std::size_t n : {8u, 32u, 128u, 512u}) {
    tunekit::Rng rng(n);
    tunekit::History h;
    std::unordered_set<std::uint64_t> visited;
    std::vector<Config> xs;
    Eigen::VectorXd y(static_cast<Eigen::Index>(n));
    double best = 0;
    while (xs.size() < n) {
      Config c = s.sample(rng);
      if (!visited.insert(s.to_index(c)).second) continue;
      y[static_cast<Eigen::Index>(xs.size())] = f(c);
      best = std::max(best, f(c));
      xs.push_back(c);
    }
    tunekit::RandomForest rf;
    rf.fit(tunekit::feature_matrix(s, xs), y, rng);
    tunekit::SearchContext ctx{s, h, visited, [](std::span<const Config> cs) { return std::vector<double>(cs.size()); },
                               0.0,
                               [&](std::span<const Config> cs, Eigen::VectorXd& m, Eigen::VectorXd& sd) {
                                 rf.predict(tunekit::feature_matrix(s, cs), m, sd);
                               },
                               best};
    tunekit::ContextualEpsilon eps;
    eps_by_n.push_back(eps.epsilon(ctx, rng));
  }
  MESSAGE("contextual epsilon at n = 8, 32, 128, 512: " << eps_by_n[0] << ", " << eps_by_n[1] << ", "
                                                         << eps_by_n[2] << ", " << eps_by_n[3]);
  for (std::size_t i = 1; i < eps_by_n.size(); ++i) CHECK(eps_by_n[i] < eps_by_n[i - 1]);
  CHECK(eps_by_n.back() < 0.5 * eps_by_n.front());
}

TEST_CASE("contextual annealing explores more while the model is uncertain") {
  // The same search with an uncertain and a confident model: the uncertain one gives more of the
  // batch to random configs.
  const SearchSpace s = grid2(64);
  tunekit::History h;
  std::unordered_set<std::uint64_t> visited;
  auto run = [&](double sd) {
    tunekit::SearchContext ctx{s, h, visited,
                               [](std::span<const Config> cs) {
                                 std::vector<double> v;
                                 for (const auto& c : cs) v.push_back(-std::abs(double(c[0]) - 20) - std::abs(double(c[1]) - 40));
                                 return v;
                               },
                               1.0,
                               [sd](std::span<const Config> cs, Eigen::VectorXd& m, Eigen::VectorXd& out) {
                                 m = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(cs.size()));
                                 out = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(cs.size()), sd);
                               },
                               2.0};
    tunekit::ContextualAnnealing ca;
    tunekit::Rng rng(3);
    std::size_t random = 0;
    for (int round = 0; round < 10; ++round) {
      (void)ca.propose(ctx, 64, rng);
      random += ca.last_batch().random;
    }
    return random;
  };
  CHECK(run(1.0) == doctest::Approx(320).epsilon(0.1));  // epsilon 0.5
  CHECK(run(0.1) == doctest::Approx(32).epsilon(0.3));   // epsilon 0.05
  CHECK(run(0.0) == 0);
}
