#include <tunekit/stats/actor_critic.hpp>
#include <tunekit/stats/mlp.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <vector>

namespace {

Eigen::MatrixXd random_matrix(Eigen::Index rows, Eigen::Index cols, tunekit::Rng& rng, double scale = 1.0) {
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j)
    for (Eigen::Index i = 0; i < rows; ++i) m(i, j) = scale * (2 * tunekit::uniform_real(rng) - 1);
  return m;
}

// Central finite differences of `loss` with respect to every parameter of `blocks`, compared to
// the analytic gradients the blocks hold; returns the largest relative error,
// |g - fd| / max(1e-4, |g| + |fd|).
double max_gradient_error(const std::vector<tunekit::ParameterBlock>& blocks, const std::function<double()>& loss) {
  const double h = 1e-6;
  double worst = 0;
  for (const auto& b : blocks)
    for (std::size_t i = 0; i < b.value.size(); ++i) {
      const double keep = b.value[i];
      b.value[i] = keep + h;
      const double up = loss();
      b.value[i] = keep - h;
      const double down = loss();
      b.value[i] = keep;
      const double fd = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(b.gradient[i] - fd) / std::max(1e-4, std::abs(b.gradient[i]) + std::abs(fd)));
    }
  return worst;
}

}  // namespace

TEST_CASE("group softmax is a distribution per group and column") {
  tunekit::Rng rng(1);
  const Eigen::MatrixXd z = random_matrix(6, 4, rng, 30.0);  // large logits: the max shift matters
  const Eigen::MatrixXd p = tunekit::group_softmax(z, 3);
  for (Eigen::Index j = 0; j < 4; ++j) {
    CHECK(p.block(0, j, 3, 1).sum() == doctest::Approx(1.0));
    CHECK(p.block(3, j, 3, 1).sum() == doctest::Approx(1.0));
  }
  CHECK(p.allFinite());
  CHECK_THROWS_AS(tunekit::group_softmax(z, 4), std::invalid_argument);
}

TEST_CASE("dense and tanh layers backpropagate the gradient of a cross-entropy loss") {
  // x (3 x 5) -> Dense(3, 4) -> tanh -> Dense(4, 6) -> two softmax heads of 3; loss = mean over
  // samples of -sum of the log-probabilities of fixed labels.
  tunekit::Rng rng(7);
  tunekit::Dense l1(3, 4, rng), l2(4, 6, rng);
  l1.bias() = random_matrix(4, 1, rng, 0.5);
  l2.bias() = random_matrix(6, 1, rng, 0.5);
  const Eigen::MatrixXd x = random_matrix(3, 5, rng);
  const int labels[2][5] = {{0, 2, 1, 1, 0}, {2, 2, 0, 1, 1}};
  auto loss = [&] {
    const Eigen::MatrixXd lp = tunekit::group_log_softmax(l2.forward(tunekit::tanh_forward(l1.forward(x))), 3);
    double s = 0;
    for (int j = 0; j < 5; ++j) s -= lp(labels[0][j], j) + lp(3 + labels[1][j], j);
    return s / 5;
  };
  l1.zero_grad();
  l2.zero_grad();
  const Eigen::MatrixXd h = tunekit::tanh_forward(l1.forward(x));
  const Eigen::MatrixXd p = tunekit::group_softmax(l2.forward(h), 3);
  Eigen::MatrixXd dz = p / 5.0;
  for (int j = 0; j < 5; ++j) {
    dz(labels[0][j], j) -= 1.0 / 5;
    dz(3 + labels[1][j], j) -= 1.0 / 5;
  }
  l1.backward(x, tunekit::tanh_backward(h, l2.backward(h, dz)));
  std::vector<tunekit::ParameterBlock> blocks;
  l1.append_parameters(blocks);
  l2.append_parameters(blocks);
  CHECK(max_gradient_error(blocks, loss) < 1e-6);
}

TEST_CASE("the PPO loss gradient of the actor-critic matches finite differences") {
  // A batch where some ratios are clipped (old log-probabilities shifted away from the current
  // ones) and the advantages have both signs.
  tunekit::Rng rng(11);
  const std::size_t dims = 4, n = 24;
  tunekit::ActorCritic net(dims, 8, rng);
  tunekit::PpoBatch b;
  b.states = random_matrix(dims, n, rng).cwiseAbs();
  b.actions.resize(dims, n);
  for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(n); ++j)
    for (Eigen::Index k = 0; k < static_cast<Eigen::Index>(dims); ++k)
      b.actions(k, j) = static_cast<int>(tunekit::uniform_index(rng, 3));
  Eigen::MatrixXd log_probs;
  Eigen::RowVectorXd values;
  net.forward(b.states, log_probs, values);
  b.old_log_prob.resize(static_cast<Eigen::Index>(n));
  b.advantage = random_matrix(1, n, rng, 2.0).row(0);
  b.target = random_matrix(1, n, rng, 3.0).row(0);
  const tunekit::PpoLossParams params{};
  std::size_t clipped = 0;
  for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(n); ++j) {
    double lp = 0;
    for (Eigen::Index k = 0; k < static_cast<Eigen::Index>(dims); ++k) lp += log_probs(3 * k + b.actions(k, j), j);
    // ratios spread over [0.5, 1.6]; keep them away from the kinks at 0.7 and 1.3 (finite
    // differences across a kink are meaningless).
    double ratio = 0.5 + 1.1 * tunekit::uniform_real(rng);
    if (std::abs(ratio - 0.7) < 0.02 || std::abs(ratio - 1.3) < 0.02) ratio += 0.05;
    clipped += ratio < 0.7 || ratio > 1.3;
    b.old_log_prob[j] = lp - std::log(ratio);
  }
  REQUIRE(clipped > 3);
  net.ppo_loss(b, params, true);
  auto blocks = net.parameters();
  CHECK(max_gradient_error(blocks, [&] { return net.ppo_loss(b, params, false); }) < 1e-5);
}

TEST_CASE("Adam reduces a regression loss") {
  // Fit y = sin(3 x1) + x2^2 on 64 points with Dense(2, 16) -> tanh -> Dense(16, 1).
  tunekit::Rng rng(3);
  tunekit::Dense l1(2, 16, rng), l2(16, 1, rng);
  const Eigen::MatrixXd x = random_matrix(2, 64, rng);
  Eigen::RowVectorXd y(64);
  for (Eigen::Index j = 0; j < 64; ++j) y[j] = std::sin(3 * x(0, j)) + x(1, j) * x(1, j);
  std::vector<tunekit::ParameterBlock> blocks;
  l1.append_parameters(blocks);
  l2.append_parameters(blocks);
  tunekit::Adam adam({.learning_rate = 1e-2});
  auto step = [&] {
    l1.zero_grad();
    l2.zero_grad();
    const Eigen::MatrixXd h = tunekit::tanh_forward(l1.forward(x));
    const Eigen::RowVectorXd e = l2.forward(h).row(0) - y;
    const Eigen::MatrixXd de = (2.0 / 64) * e;
    l1.backward(x, tunekit::tanh_backward(h, l2.backward(h, de)));
    adam.step(blocks);
    return e.squaredNorm() / 64;
  };
  const double first = step();
  double last = first;
  for (int i = 0; i < 1000; ++i) last = step();
  MESSAGE("regression MSE: " << first << " -> " << last << " after 1000 Adam steps");
  CHECK(adam.steps() == 1001);
  CHECK(last < 0.02 * first);
  CHECK_THROWS_AS(tunekit::Adam({.learning_rate = 0.0}), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::Adam({.beta2 = 1.0}), std::invalid_argument);
}
