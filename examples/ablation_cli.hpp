// What the three ablation programs share besides the studies themselves (ablation.hpp): the
// --dataset option, the curves CSV of the single-task studies and their tables.
#pragma once

#include "ablation.hpp"
#include "cli.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#ifndef TUNEKIT_DATASETS
#define TUNEKIT_DATASETS "../shared/datasets"
#endif

namespace ablation {

/// --dataset NAME|FILE (repeatable): a .csv path, or a name in the datasets folder
/// (TUNEKIT_DATASETS); all four recorded datasets when absent.
inline std::vector<std::filesystem::path> datasets_option(tunekit::cli::CommandLine& cl) {
  const auto given = cl.texts("--dataset");
  if (given.empty()) return recorded_datasets(TUNEKIT_DATASETS);
  std::vector<std::filesystem::path> out;
  for (const auto& g : given) {
    std::filesystem::path p(g);
    if (p.extension() != ".csv") p = std::filesystem::path(TUNEKIT_DATASETS) / (g + ".csv");
    if (!std::filesystem::exists(p)) cl.fail("no dataset " + p.string());
    out.push_back(p);
  }
  return out;
}

inline std::vector<std::string> dataset_names(const std::vector<PipelineRuns>& all) {
  std::vector<std::string> names;
  for (const auto& p : all)
    if (std::find(names.begin(), names.end(), p.dataset) == names.end()) names.push_back(p.dataset);
  return names;
}

/// One row per (dataset, pipeline, seed, point): axis "trials" (x = 1 .. budget) and axis
/// "seconds" (x on `points` equal steps up to the dataset's longest run; a run that has spent its
/// budget keeps its final score).
inline void write_score_curves(std::ostream& out, const std::vector<PipelineRuns>& all, std::size_t budget,
                               std::size_t points) {
  out << "dataset,pipeline,seed,axis,x,score,gflops\n";
  char line[256];
  for (const auto& name : dataset_names(all)) {
    const auto grid = time_grid(seconds_horizon(all, name), points);
    for (const auto& p : all) {
      if (p.dataset != name) continue;
      for (std::size_t s = 0; s < p.seeds.size(); ++s) {
        const auto& r = p.seeds[s];
        for (std::size_t t = 1; t <= budget; ++t) {
          const double sc = score_after(r, t);
          std::snprintf(line, sizeof line, "%s,%s,%zu,trials,%zu,%.6g,%.6g\n", p.dataset.c_str(),
                        p.pipeline.c_str(), s, t, sc, p.gflops(sc));
          out << line;
        }
        for (double x : grid) {
          const double sc = score_at_seconds(r, x);
          std::snprintf(line, sizeof line, "%s,%s,%zu,seconds,%.3f,%.6g,%.6g\n", p.dataset.c_str(),
                        p.pipeline.c_str(), s, x, sc, p.gflops(sc));
          out << line;
        }
      }
    }
  }
}

/// Per dataset: score at B/4, B/2, B; GFLOPS at B; simulated seconds at B; and trials and
/// simulated seconds to reach the `baseline` pipeline's median final score (Chameleon's Table 2
/// and AdaTune's Fig. 11 measure: the same quality). Medians [95% CI] over seeds.
inline void print_score_tables(const std::vector<PipelineRuns>& all, std::size_t budget, const std::string& baseline) {
  for (const auto& name : dataset_names(all)) {
    double target = 0.0;
    for (const auto& p : all)
      if (p.dataset == name && p.pipeline == baseline) {
        std::vector<double> f;
        for (const auto& r : p.seeds) f.push_back(score_after(r, budget));
        target = median_ci(f).median;
      }
    const std::size_t seeds = all.empty() ? 0 : all.front().seeds.size();
    std::printf("\n== %s (target: %s's median final score %.3f; CI coverage %.3f with %zu seeds)\n", name.c_str(),
                baseline.c_str(), target, median_ci(std::vector<double>(seeds, 0.0)).coverage, seeds);
    std::printf("%-12s %-24s %-24s %-24s %-30s %-26s %-26s %-30s\n", "pipeline", ("score@" + std::to_string(budget / 4)).c_str(),
                ("score@" + std::to_string(budget / 2)).c_str(), ("score@" + std::to_string(budget)).c_str(),
                ("GFLOPS@" + std::to_string(budget)).c_str(), ("sim. s@" + std::to_string(budget)).c_str(),
                "trials to target", "sim. s to target");
    for (const auto& p : all) {
      if (p.dataset != name) continue;
      std::vector<double> s1, s2, s3, g, sec, tt, ts;
      for (const auto& r : p.seeds) {
        s1.push_back(score_after(r, budget / 4));
        s2.push_back(score_after(r, budget / 2));
        s3.push_back(score_after(r, budget));
        g.push_back(p.gflops(s3.back()));
        sec.push_back(r.seconds.empty() ? 0.0 : r.seconds.back());
        const auto [trials, seconds] = first_reaching(r, target);
        tt.push_back(trials);
        ts.push_back(seconds);
      }
      std::printf("%-12s %-24s %-24s %-24s %-30s %-26s %-26s %-30s\n", p.pipeline.c_str(),
                  format_ci(median_ci(s1)).c_str(), format_ci(median_ci(s2)).c_str(),
                  format_ci(median_ci(s3)).c_str(), format_ci(median_ci(g), 0).c_str(),
                  format_ci(median_ci(sec), 1).c_str(), format_ci(median_ci(tt), 0).c_str(),
                  format_ci(median_ci(ts), 1).c_str());
    }
  }
}

}  // namespace ablation
