#pragma once
/// \file
/// A small multilayer-perceptron toolkit on Eigen for the PPO agent's actor and critic: dense
/// layers, tanh, softmax over groups of outputs (one group per categorical head), and Adam.
///
/// Batches are matrices whose columns are samples, so a layer applied to a batch is one matrix
/// product. The products are evaluated coefficient-wise (Eigen's lazyProduct, vectorised): the
/// networks are small, and Eigen's blocked GEMM would start OpenMP threads for each of them,
/// which costs far more than the product (and much more on a loaded machine). Layers hold their parameters and the gradients accumulated by `backward`; the caller
/// composes them (the PPO network in stats/actor_critic.hpp is written this way) and hands
/// the parameter blocks to Adam.

#include "tunekit/core/deferred.hpp"
#include "tunekit/core/random.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
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

/// A parameter array and its gradient, as flat views (the memory belongs to a layer).
struct ParameterBlock {
  std::span<double> value{};
  std::span<const double> gradient{};
};

namespace detail {

/// A fully connected layer y = W x + b, applied to every column of a batch.
///
/// Initialised with Glorot-uniform weights (U(-a, a), a = sqrt(6 / (in + out)); Glorot & Bengio
/// 2010, TensorFlow's default for dense layers) and zero biases.
template <class Lazy = void>
class DenseImpl {
  // Eigen's types through Lazy: see Deferred.
  using MatrixXd = Deferred<Eigen::MatrixXd, Lazy>;
  using VectorXd = Deferred<Eigen::VectorXd, Lazy>;

 public:
  DenseImpl() = default;
  DenseImpl(std::size_t inputs, std::size_t outputs, Rng& rng)
      : weight_(static_cast<Eigen::Index>(outputs), static_cast<Eigen::Index>(inputs)),
        bias_(VectorXd::Zero(static_cast<Eigen::Index>(outputs))) {
    if (inputs == 0 || outputs == 0) throw std::invalid_argument("Dense: inputs and outputs must be >= 1");
    const double a = std::sqrt(6.0 / static_cast<double>(inputs + outputs));
    for (Eigen::Index j = 0; j < weight_.cols(); ++j)
      for (Eigen::Index i = 0; i < weight_.rows(); ++i) weight_(i, j) = a * (2.0 * uniform_real(rng) - 1.0);
    zero_grad();
  }

  std::size_t inputs() const noexcept { return static_cast<std::size_t>(weight_.cols()); }
  std::size_t outputs() const noexcept { return static_cast<std::size_t>(weight_.rows()); }

  /// W x + b for a batch x (inputs x batch).
  MatrixXd forward(const MatrixXd& x) const {
    if (static_cast<std::size_t>(x.rows()) != inputs())
      throw std::invalid_argument("Dense::forward: input has " + std::to_string(x.rows()) + " rows, layer takes " +
                                  std::to_string(inputs()));
    MatrixXd y = weight_.lazyProduct(x);
    y.colwise() += bias_;
    return y;
  }

  /// Given the layer's input x and dL/dy, adds dL/dW = dy x^T and dL/db = sum of dy's columns
  /// to the gradients and returns dL/dx = W^T dy.
  MatrixXd backward(const MatrixXd& x, const MatrixXd& dy) {
    grad_weight_ += dy.lazyProduct(x.transpose());
    grad_bias_ += dy.rowwise().sum();
    return weight_.transpose().lazyProduct(dy);
  }

  void zero_grad() {
    grad_weight_ = MatrixXd::Zero(weight_.rows(), weight_.cols());
    grad_bias_ = VectorXd::Zero(bias_.size());
  }

  /// The weight and the bias with their gradients, for an optimizer.
  void append_parameters(std::vector<ParameterBlock>& out) {
    out.push_back({{weight_.data(), static_cast<std::size_t>(weight_.size())},
                   {grad_weight_.data(), static_cast<std::size_t>(grad_weight_.size())}});
    out.push_back({{bias_.data(), static_cast<std::size_t>(bias_.size())},
                   {grad_bias_.data(), static_cast<std::size_t>(grad_bias_.size())}});
  }

  MatrixXd& weight() noexcept { return weight_; }
  VectorXd& bias() noexcept { return bias_; }
  const MatrixXd& weight() const noexcept { return weight_; }
  const VectorXd& bias() const noexcept { return bias_; }
  const MatrixXd& grad_weight() const noexcept { return grad_weight_; }
  const VectorXd& grad_bias() const noexcept { return grad_bias_; }

 private:
  MatrixXd weight_;
  VectorXd bias_;
  MatrixXd grad_weight_;
  VectorXd grad_bias_;
};
}  // namespace detail

/// detail::DenseImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using Dense = detail::DenseImpl<>;

/// tanh, elementwise.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd tanh_forward(const Eigen::MatrixXd& x) { return x.array().tanh().matrix(); }

/// dL/dx of y = tanh(x), from y and dL/dy: dL/dy * (1 - y^2).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd tanh_backward(const Eigen::MatrixXd& y, const Eigen::MatrixXd& dy) {
  return (dy.array() * (1.0 - y.array().square())).matrix();
}

/// log softmax within each group of `group` consecutive rows, per column (one categorical
/// distribution per group and sample): z_i - max - log sum_j exp(z_j - max).
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd group_log_softmax(const Eigen::MatrixXd& logits, std::size_t group) {
  const auto g = static_cast<Eigen::Index>(group);
  if (group == 0 || logits.rows() % g != 0)
    throw std::invalid_argument("group_log_softmax: the rows must be a multiple of group >= 1");
  Eigen::MatrixXd out(logits.rows(), logits.cols());
  for (Eigen::Index r = 0; r < logits.rows(); r += g) {
    const auto block = logits.middleRows(r, g);
    const Eigen::RowVectorXd mx = block.colwise().maxCoeff();
    const Eigen::MatrixXd shifted = block.rowwise() - mx;
    const Eigen::RowVectorXd lse = shifted.array().unaryExpr([](double v) { return std::exp(v); }).colwise().sum().unaryExpr([](double v) { return std::log(v); }).matrix();
    out.middleRows(r, g) = shifted.rowwise() - lse;
  }
  return out;
}

/// softmax within each group of `group` consecutive rows, per column.
template <class = void>  // compiled where it is used: docs/getting-started.md, "Compile time"
Eigen::MatrixXd group_softmax(const Eigen::MatrixXd& logits, std::size_t group) {
  return group_log_softmax(logits, group).array().unaryExpr([](double v) { return std::exp(v); }).matrix();
}

/// Parameters of Adam (Kingma & Ba 2015).
struct AdamParams {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;

  void validate() const {
    if (!(learning_rate > 0) || !std::isfinite(learning_rate))
      throw std::invalid_argument("AdamParams: learning_rate must be positive and finite");
    if (!(beta1 >= 0 && beta1 < 1)) throw std::invalid_argument("AdamParams: beta1 must be in [0, 1)");
    if (!(beta2 >= 0 && beta2 < 1)) throw std::invalid_argument("AdamParams: beta2 must be in [0, 1)");
    if (!(epsilon > 0)) throw std::invalid_argument("AdamParams: epsilon must be positive");
  }
};

namespace detail {

/// Adam: per parameter, m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2, and
/// theta -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon). The moments of the
/// i-th block passed to `step` persist between steps: pass the same blocks in the same order.
template <class Lazy = void>
class AdamImpl {
  // Eigen's types through Lazy: see Deferred.
  using ArrayXd = Deferred<Eigen::ArrayXd, Lazy>;

 public:
  AdamImpl() = default;
  explicit AdamImpl(AdamParams params) : params_(params) { params_.validate(); }

  /// One descent step on every block, with the gradients they hold.
  void step(std::span<const ParameterBlock> blocks) {
    params_.validate();
    if (m_.empty()) {
      for (const auto& b : blocks) {
        if (b.value.size() != b.gradient.size())
          throw std::invalid_argument("Adam::step: a block's value and gradient differ in size");
        m_.push_back(ArrayXd::Zero(static_cast<Eigen::Index>(b.value.size())));
        v_.push_back(ArrayXd::Zero(static_cast<Eigen::Index>(b.value.size())));
      }
    }
    if (blocks.size() != m_.size()) throw std::invalid_argument("Adam::step: the parameter blocks changed");
    ++t_;
    const double c1 = 1.0 - std::pow(params_.beta1, static_cast<double>(t_));
    const double c2 = 1.0 - std::pow(params_.beta2, static_cast<double>(t_));
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const auto n = static_cast<Eigen::Index>(blocks[i].value.size());
      if (n != m_[i].size()) throw std::invalid_argument("Adam::step: a parameter block changed size");
      Eigen::Map<ArrayXd> theta(blocks[i].value.data(), n);
      const Eigen::Map<const ArrayXd> g(blocks[i].gradient.data(), n);
      m_[i] = params_.beta1 * m_[i] + (1.0 - params_.beta1) * g;
      v_[i] = params_.beta2 * v_[i] + (1.0 - params_.beta2) * g.square();
      theta -= params_.learning_rate * (m_[i] / c1) / ((v_[i] / c2).sqrt() + params_.epsilon);
    }
  }

  /// Steps taken.
  std::size_t steps() const noexcept { return t_; }
  const AdamParams& params() const noexcept { return params_; }

 private:
  AdamParams params_{};
  std::vector<ArrayXd> m_, v_;
  std::size_t t_ = 0;
};
}  // namespace detail

/// detail::AdamImpl<>: a template only so that it is compiled in the files that use it
/// (docs/getting-started.md, "Compile time").
using Adam = detail::AdamImpl<>;

}  // namespace tunekit

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
