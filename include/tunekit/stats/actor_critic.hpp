#pragma once
/// \file
/// The actor-critic network of a PPO agent (Schulman et al. 2017) on the layers of stats/mlp.hpp,
/// and its loss: PpoLossParams, PpoBatch, ActorCritic (the network of Chameleon's adaptive
/// exploration, PpoSearch in optimizer/search/ppo.hpp).

#include "tunekit/core/deferred.hpp"
#include "tunekit/core/random.hpp"
#include "tunekit/stats/mlp.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

// GCC 12 reports false (maybe-)uninitialized warnings inside Eigen's AVX-512 code
// (-march=native); silence them for the code of this header only. (Eigen's vectorised exp and
// log of doubles are avoided altogether: their AVX-512 instantiations warn outside any pragma.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tunekit {

/// The coefficients of the PPO loss (Schulman et al. 2017, eq. 9; Chameleon's values).
struct PpoLossParams {
  /// epsilon of the clipped ratio, clip(r, 1 - epsilon, 1 + epsilon).
  double clip = 0.3;
  /// c1: weight of the value loss.
  double value_coef = 1.0;
  /// c2: weight of the entropy bonus.
  double entropy_coef = 0.1;

  void validate() const {
    if (!(clip > 0 && clip < 1)) throw std::invalid_argument("PpoLossParams: clip must be in (0, 1)");
    if (!(value_coef >= 0) || !std::isfinite(value_coef))
      throw std::invalid_argument("PpoLossParams: value_coef must be finite and >= 0");
    if (!(entropy_coef >= 0) || !std::isfinite(entropy_coef))
      throw std::invalid_argument("PpoLossParams: entropy_coef must be finite and >= 0");
  }
};

/// A batch of transitions for the PPO loss; column j of every member is transition j.
struct PpoBatch {
  /// dims x N states.
  Eigen::MatrixXd states;
  /// dims x N actions, each in {0, 1, 2} (decrement, stay, increment).
  Eigen::MatrixXi actions;
  /// log pi_old(a | s) of the policy that chose the actions.
  Eigen::RowVectorXd old_log_prob;
  /// Advantage estimates and the value targets (returns).
  Eigen::RowVectorXd advantage;
  Eigen::RowVectorXd target;
};

namespace detail {

/// The actor-critic network of the PPO agent: one action head per knob (a softmax over
/// {decrement, stay, increment}) and a state-value head, sharing their first layer:
///     h1 = tanh(W1 s + b1)                                  (shared)
///     actor:  logits = Wp tanh(Wa h1 + ba) + bp             (3 per knob)
///     critic: v = wv tanh(Wc h1 + bc) + bv
/// The policy is the product of the knobs' categorical distributions, so
/// log pi(a | s) = sum_k log softmax_k(logits)[a_k] and its entropy is the sum of the heads'.
template <class Lazy = void>
class ActorCriticImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using RowVectorXd = Deferred<Eigen::RowVectorXd, Lazy>;

 public:
  /// Actions per knob.
  static constexpr std::size_t actions = 3;

  ActorCriticImpl() = default;
  ActorCriticImpl(std::size_t dims, std::size_t hidden, Rng& rng)
      : shared_(dims, hidden, rng),
        actor_hidden_(hidden, hidden, rng),
        actor_out_(hidden, actions * dims, rng),
        critic_hidden_(hidden, hidden, rng),
        critic_out_(hidden, 1, rng) {}

  std::size_t dims() const noexcept { return shared_.inputs(); }
  std::size_t hidden() const noexcept { return shared_.outputs(); }
  bool empty() const noexcept { return shared_.inputs() == 0; }

  /// The log-probabilities of every action (3 dims x N, knob k's in rows 3k..3k+2) and the
  /// state values (1 x N) of a batch of states (dims x N).
  void forward(const MatrixXd& states, MatrixXd& log_probs, RowVectorXd& values) const {
    const MatrixXd h1 = tanh_forward(shared_.forward(states));
    log_probs = group_log_softmax(actor_out_.forward(tanh_forward(actor_hidden_.forward(h1))), actions);
    values = critic_out_.forward(tanh_forward(critic_hidden_.forward(h1))).row(0);
  }

  /// The PPO loss to minimise on a batch of N transitions,
  ///     L = -mean(min(r A, clip(r, 1 - eps, 1 + eps) A)) + c1 mean((v(s) - R)^2) - c2 mean(H(s)),
  /// r = exp(log pi(a | s) - log pi_old(a | s)), H the policy's entropy. When `gradient`, sets
  /// the layers' gradients to dL/dtheta (zeroing them first).
  double ppo_loss(const PpoBatch& b, const PpoLossParams& p, bool gradient) {
    const auto n = b.states.cols();
    const double inv_n = 1.0 / static_cast<double>(n);
    const auto d = static_cast<Eigen::Index>(dims());
    const auto a = static_cast<Eigen::Index>(actions);
    const MatrixXd h1 = tanh_forward(shared_.forward(b.states));
    const MatrixXd ha = tanh_forward(actor_hidden_.forward(h1));
    const MatrixXd log_p = group_log_softmax(actor_out_.forward(ha), actions);
    const MatrixXd prob = log_p.array().unaryExpr([](double v) { return std::exp(v); }).matrix();
    const MatrixXd hc = tanh_forward(critic_hidden_.forward(h1));
    const RowVectorXd v = critic_out_.forward(hc).row(0);

    RowVectorXd log_pi = RowVectorXd::Zero(n);
    MatrixXd head_entropy(d, n);  // H_k per knob and sample
    for (Eigen::Index j = 0; j < n; ++j)
      for (Eigen::Index k = 0; k < d; ++k) {
        log_pi[j] += log_p(a * k + b.actions(k, j), j);
        double h = 0;
        for (Eigen::Index i = 0; i < a; ++i) h -= prob(a * k + i, j) * log_p(a * k + i, j);
        head_entropy(k, j) = h;
      }
    const RowVectorXd ratio = (log_pi - b.old_log_prob).array().unaryExpr([](double v) { return std::exp(v); }).matrix();
    // Scalar loops (not Eigen's packet min/max, which GCC 12 warns about with AVX-512).
    RowVectorXd surr1(n), surr2(n);
    double objective = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double clipped = std::clamp(ratio[j], 1.0 - p.clip, 1.0 + p.clip);
      surr1[j] = ratio[j] * b.advantage[j];
      surr2[j] = clipped * b.advantage[j];
      objective += std::min(surr1[j], surr2[j]);
    }
    const RowVectorXd value_error = v - b.target;
    const double loss = -objective * inv_n + p.value_coef * value_error.squaredNorm() * inv_n -
                        p.entropy_coef * head_entropy.sum() * inv_n;
    if (!gradient) return loss;

    // dL/dlogits: the clipped objective through log pi (d log pi / d z = onehot(a) - p, only where
    // the unclipped term is the minimum), plus the entropy bonus
    // (dH_k / dz_i = -p_i (log p_i + H_k)).
    MatrixXd d_logits(a * d, n);
    for (Eigen::Index j = 0; j < n; ++j) {
      const double g = surr1[j] <= surr2[j] ? -ratio[j] * b.advantage[j] * inv_n : 0.0;
      for (Eigen::Index k = 0; k < d; ++k)
        for (Eigen::Index i = 0; i < a; ++i) {
          const Eigen::Index r = a * k + i;
          const double onehot = b.actions(k, j) == i ? 1.0 : 0.0;
          d_logits(r, j) = g * (onehot - prob(r, j)) +
                           p.entropy_coef * inv_n * prob(r, j) * (log_p(r, j) + head_entropy(k, j));
        }
    }
    const MatrixXd d_value = (2.0 * p.value_coef * inv_n) * value_error;
    zero_grad();
    MatrixXd d_h1 = actor_hidden_.backward(h1, tanh_backward(ha, actor_out_.backward(ha, d_logits)));
    d_h1 += critic_hidden_.backward(h1, tanh_backward(hc, critic_out_.backward(hc, d_value)));
    shared_.backward(b.states, tanh_backward(h1, d_h1));
    return loss;
  }

  void zero_grad() {
    for (Dense* l : layers()) l->zero_grad();
  }

  /// Every weight and bias with its gradient, in a fixed order (for Adam).
  std::vector<ParameterBlock> parameters() {
    std::vector<ParameterBlock> out;
    for (Dense* l : layers()) l->append_parameters(out);
    return out;
  }

 private:
  std::vector<Dense*> layers() { return {&shared_, &actor_hidden_, &actor_out_, &critic_hidden_, &critic_out_}; }

  Dense shared_, actor_hidden_, actor_out_, critic_hidden_, critic_out_;
};
}  // namespace detail

/// detail::ActorCriticImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using ActorCritic = detail::ActorCriticImpl<>;

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
