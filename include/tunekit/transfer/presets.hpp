#pragma once
/// \file
/// Tuners that start from earlier runs (docs/concepts.md, "Transfer"): tunekit's own transfer
/// for its default search (TpeTransferTuner), AutoTVM's (AutoTvmTransferTuner), and the
/// top-first baseline (TopFirstTuner), each made from a TransferSource by a make_ function.

#include "tunekit/optimizer/top_first.hpp"
#include "tunekit/optimizer/tpe/transfer.hpp"
#include "tunekit/presets.hpp"
#include "tunekit/transfer/transfer_margin.hpp"
#include "tunekit/transfer/transfer_prior.hpp"

#include <utility>

namespace tunekit {

/// TreeParzen<> with tunekit's transfer: TransferStart (the sources' good configs first, then
/// MaximinStart) and TransferModelStart (the sources as the model start's prior mean), both
/// weighed by RankAgreementGuard; its other parts are TreeParzen<>'s.
using TpeTransferSearch = TreeParzen<TransferStart<>, TransferModelStart<>>;
using TpeTransferTuner = Tuner<NoSurrogate, PredictedMean, TpeTransferSearch, Deterministic>;

/// The parts of a TpeTransferTuner made from `prior` (`evaluator` as the caller's).
inline TpeTransferTuner::Parts tpe_transfer_parts(const TransferPrior& prior, Deterministic evaluator = Deterministic()) {
  return {.optimizer = TpeTransferSearch({}, {.start = TransferStart<>(prior), .model_start = TransferModelStart<>(prior)}),
          .evaluator = std::move(evaluator)};
}

/// AutoTVM's tuner with its transfer learning (AutoTvm<TransferMargin<GradientBoostedTrees>>).
using AutoTvmTransferTuner = AutoTvm<TransferMargin<GradientBoostedTrees>>;
inline AutoTvmTransferTuner::Parts autotvm_transfer_parts(const TransferSource& source, Deterministic evaluator = Deterministic()) {
  return {.surrogate = TransferMargin<GradientBoostedTrees>(source), .evaluator = std::move(evaluator)};
}

/// The top-first baseline: the sources' fastest recorded configs in order, then random ones.
using TopFirstTuner = Tuner<NoSurrogate, PredictedMean, TopFirst, Deterministic>;
inline TopFirstTuner::Parts top_first_parts(const SearchSpace& space, const TransferPrior& prior,
                                            Deterministic evaluator = Deterministic()) {
  return {.optimizer = TopFirst(space, prior), .evaluator = std::move(evaluator)};
}

}  // namespace tunekit
