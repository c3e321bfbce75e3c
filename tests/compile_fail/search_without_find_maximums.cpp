// A search whose find_maximums() is misnamed: ModelBased refuses it with check_search's message.
// expect: tunekit::Search: the search needs `std::vector<tunekit::Candidate> find_maximums
#include <tunekit/optimizer/model_based.hpp>
#include <tunekit/tuner.hpp>

struct GreedySearch {
#ifdef TUNEKIT_COMPILE_FAIL_OK
  std::vector<tunekit::Candidate> find_maximums(const tunekit::SearchContext&, std::size_t, tunekit::Rng&) {
    return {};
  }
#else
  std::vector<tunekit::Candidate> find_maximum(const tunekit::SearchContext&, std::size_t, tunekit::Rng&) {
    return {};
  }
#endif
};

using T = tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, tunekit::ModelBased<GreedySearch>>;
T make(tunekit::SearchSpace s) { return T(std::move(s)); }
