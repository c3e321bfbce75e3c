// A surrogate without predict(): Tuner refuses it with check_surrogate's message.
// expect: tunekit::Surrogate: the model needs `Eigen::VectorXd predict
#include <tunekit/tuner.hpp>

struct FitOnlyModel {
  void fit(const Eigen::MatrixXd&, const Eigen::VectorXd&, tunekit::Rng&) {}
#ifdef TUNEKIT_COMPILE_FAIL_OK
  Eigen::VectorXd predict(const Eigen::MatrixXd& x) const { return Eigen::VectorXd::Zero(x.rows()); }
#endif
};

tunekit::Tuner<FitOnlyModel> make(tunekit::SearchSpace s) { return tunekit::Tuner<FitOnlyModel>(std::move(s)); }
