// InTurns: several surrogates taking turns, one per fit; the turn named by the caller or counted.
#include <tunekit/surrogate/gaussian_process.hpp>
#include <tunekit/surrogate/in_turns.hpp>
#include <tunekit/surrogate/random_forest.hpp>

#include <doctest/doctest.h>

#include <stdexcept>

namespace {

// A surrogate that predicts a constant: its own id, so a prediction says which model made it.
struct TurnConstant {
  double value = 0.0;
  void fit(const Eigen::MatrixXd&, const Eigen::VectorXd&, tunekit::Rng&) {}
  Eigen::VectorXd predict(const Eigen::MatrixXd& X) const { return Eigen::VectorXd::Constant(X.rows(), value); }
  void predict(const Eigen::MatrixXd& X, Eigen::VectorXd& mean, Eigen::VectorXd& sd) const {
    mean = predict(X);
    sd = Eigen::VectorXd::Constant(X.rows(), value / 10);
  }
};

}  // namespace

static_assert(tunekit::UncertainSurrogate<tunekit::InTurns<tunekit::RandomForest, tunekit::GaussianProcess>>);
static_assert(tunekit::UncertainSurrogate<tunekit::InTurns<TurnConstant, TurnConstant, TurnConstant>>);

TEST_CASE("InTurns: each fit the next model, or the one the turn names, predicting by the last fitted") {
  tunekit::InTurns<TurnConstant, TurnConstant, TurnConstant> turns(TurnConstant{1.0}, TurnConstant{2.0}, TurnConstant{3.0});
  const Eigen::MatrixXd X = Eigen::MatrixXd::Zero(2, 1);
  const Eigen::VectorXd y = Eigen::VectorXd::Zero(2);
  tunekit::Rng rng(1);
  CHECK(turns.fitted() == 3);
  CHECK_THROWS_AS(turns.predict(X), std::logic_error);  // nothing fitted yet
  for (double expected : {1.0, 2.0, 3.0, 1.0}) {
    turns.fit(X, y, rng);
    CHECK(turns.predict(X)(0) == expected);
  }
  turns.turn(5);  // 5 mod 3: the third model
  turns.fit(X, y, rng);
  CHECK(turns.fitted() == 2);
  Eigen::VectorXd mean, sd;
  turns.predict(X, mean, sd);
  CHECK(mean(1) == 3.0);
  CHECK(sd(1) == doctest::Approx(0.3));
  turns.fit(X, y, rng);  // then on in order
  CHECK(turns.fitted() == 0);
}

TEST_CASE("InTurns: a forest and a Gaussian process in turns predict as each alone") {
  Eigen::MatrixXd X(12, 2);
  Eigen::VectorXd y(12);
  for (int i = 0; i < 12; ++i) {
    X(i, 0) = i / 11.0;
    X(i, 1) = (i % 4) / 3.0;
    y(i) = X(i, 0) * X(i, 0) + 0.5 * X(i, 1);
  }
  tunekit::InTurns<tunekit::RandomForest, tunekit::GaussianProcess> turns(tunekit::RandomForest({.n_trees = 20}),
                                                                          tunekit::GaussianProcess());
  tunekit::RandomForest forest({.n_trees = 20});
  tunekit::GaussianProcess gp;
  tunekit::Rng a(3), b(3);
  turns.fit(X, y, a);
  forest.fit(X, y, b);
  CHECK((turns.predict(X) - forest.predict(X)).norm() == 0.0);
  turns.fit(X, y, a);
  gp.fit(X, y, b);
  CHECK((turns.predict(X) - gp.predict(X)).norm() == 0.0);
}
