// What the three ablation programs share besides the studies themselves (ablation.hpp): the
// --dataset and --kernel options, the live CPU kernels, the curves CSV of the single-task studies
// and their tables.
#pragma once

#include "ablation.hpp"
#include "cli.hpp"

#include <tunekit/kernels/cpu/conv2d.hpp>
#include <tunekit/kernels/cpu/gemm.hpp>
#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/kernels/cpu/simd.hpp>

#include <omp.h>

#include <memory>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
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

/// A live CPU kernel named on the command line: "gemm:N" (the bundled SGEMM at N^3) or
/// "resnet18.C1" .. "resnet18.C12" (the bundled conv2d on a ResNet-18 layer).
struct LiveKernel {
  std::string label;
  std::unique_ptr<tunekit::cpu::GemmKernel> gemm;
  std::unique_ptr<tunekit::cpu::Conv2dKernel> conv2d;
};

/// The SGEMM size of a "gemm:N" spec, 0 if it is not one.
inline std::size_t gemm_size(const std::string& spec) {
  if (spec.rfind("gemm:", 0) != 0 || spec.size() == 5 ||
      spec.find_first_not_of("0123456789", 5) != std::string::npos || spec.size() > 12)
    return 0;
  return std::stoul(spec.substr(5));
}

/// The ResNet-18 layer of a "resnet18.Cn" spec, nullptr if it is not one.
inline const tunekit::cpu::Conv2dTask* resnet18_layer(const std::string& spec) {
  try {
    return &tunekit::cpu::resnet18_conv2d_task(spec);
  } catch (const std::out_of_range&) {
    return nullptr;
  }
}

/// Builds the kernel (random data from `data_seed`, its reference computed).
inline LiveKernel make_live_kernel(const std::string& spec, std::uint64_t data_seed = 1) {
  LiveKernel k{.label = spec, .gemm = nullptr, .conv2d = nullptr};
  if (const std::size_t n = gemm_size(spec))
    k.gemm = std::make_unique<tunekit::cpu::GemmKernel>(n, n, n, tunekit::cpu::GemmKernelOptions{.seed = data_seed});
  else if (const auto* layer = resnet18_layer(spec))
    k.conv2d = std::make_unique<tunekit::cpu::Conv2dKernel>(
        layer->shape, tunekit::cpu::Conv2dOptions{.seed = data_seed, .name = spec});
  else
    throw std::invalid_argument("not a live kernel: " + spec + " (gemm:N or resnet18.C1 .. resnet18.C12)");
  return k;
}

/// --kernel SPEC (repeatable): the live kernels; fails on a spec that names none. "resnet18"
/// stands for its 12 layers.
inline std::vector<std::string> kernels_option(tunekit::cli::CommandLine& cl) {
  std::vector<std::string> specs;
  for (const auto& s : cl.texts("--kernel")) {
    if (s == "resnet18") {
      for (const auto& t : tunekit::cpu::resnet18_conv2d_tasks) specs.emplace_back(t.name);
      continue;
    }
    if (gemm_size(s) == 0 && !resnet18_layer(s))
      cl.fail("--kernel " + s + ": not a live kernel (gemm:N with N > 0, resnet18.C1 .. resnet18.C12, resnet18)");
    specs.push_back(s);
  }
  return specs;
}

/// A single-task study (adatune_pipelines, chameleon_pipelines) on each live kernel, scored
/// against the best time any pipeline found on it.
template <class Pipelines>
std::vector<PipelineRuns> live_study(Pipelines pipelines, const std::vector<std::string>& specs, const LiveSetup& s) {
  std::vector<PipelineRuns> out;
  for (const auto& spec : specs) {
    const LiveKernel k = make_live_kernel(spec);
    auto runs = k.gemm ? pipelines(LiveRunner<tunekit::cpu::GemmKernel>{*k.gemm, spec, s})
                       : pipelines(LiveRunner<tunekit::cpu::Conv2dKernel>{*k.conv2d, spec, s});
    for (auto& p : runs) out.push_back(std::move(p));
  }
  score_live_runs(out);
  return out;
}

/// What a single-task ablation program (ablation_adatune, ablation_chameleon) was asked for:
/// a replay of `setup.datasets`, or live runs on `kernels` when any is given.
struct SingleTaskRequest {
  ReplaySetup setup;
  std::vector<std::string> kernels;
  std::size_t time_points = 100;
  std::string out;
  bool live() const { return !kernels.empty(); }
};

/// Reads --kernel or --dataset, --seeds, --budget, --plan-size, --overhead, --time-points and
/// --out (default `program`.csv); seeds, budget and plan size default to 15 (the papers' count),
/// 200, 32 on replay and to 3, 100, 16 live.
inline SingleTaskRequest read_single_task_request(tunekit::cli::CommandLine& cl, const std::string& program) {
  SingleTaskRequest r;
  r.kernels = kernels_option(cl);
  const bool live = r.live();
  if (!live)
    r.setup.datasets = datasets_option(cl);
  else if (!cl.texts("--dataset").empty())
    cl.fail("--dataset and --kernel exclude each other");
  r.setup.seeds = cl.count("--seeds", live ? 3 : 15);
  r.setup.budget = cl.count("--budget", live ? 100 : 200);
  r.setup.plan_size = cl.count("--plan-size", live ? 16 : 32);
  r.setup.overhead_seconds = cl.real("--overhead", 1.0);
  r.time_points = cl.count("--time-points", 100);
  r.out = cl.text("--out", program + ".csv");
  return r;
}

/// Prints what runs and runs the study's pipelines (adatune_pipelines, chameleon_pipelines) on
/// the datasets or live kernels of the request.
template <class Pipelines>
std::vector<PipelineRuns> run_single_task(const std::string& study, Pipelines pipelines, const SingleTaskRequest& r) {
  const ReplaySetup& s = r.setup;
  if (r.live())
    std::printf("%s ablation on live CPU kernels (%d threads, %s vectors): %zu seeds, budget %zu, plan size %zu\n",
                study.c_str(), omp_get_max_threads(), tunekit::cpu::simd_name(), s.seeds, s.budget, s.plan_size);
  else
    std::printf("%s ablation: %zu seeds, budget %zu, plan size %zu, %.2f s simulated overhead per config\n",
                study.c_str(), s.seeds, s.budget, s.plan_size, s.overhead_seconds);
  std::printf("cells: median over seeds [95%% CI of the median: order statistics, distribution-free]\n");
  std::fflush(stdout);
  if (r.live())
    return live_study(pipelines, r.kernels, {.seeds = s.seeds, .budget = s.budget, .plan_size = s.plan_size});
  return replay_study(pipelines, s);
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

/// Per dataset (or live kernel): score at B/4, B/2, B; GFLOPS at B; seconds at B (simulated on
/// replay, the tuner's clock on a live kernel); and trials and seconds to reach the `baseline`
/// pipeline's median final score (Chameleon's Table 2 and AdaTune's Fig. 11 measure: the same
/// quality). Medians [95% CI] over seeds.
inline void print_score_tables(const std::vector<PipelineRuns>& all, std::size_t budget, const std::string& baseline,
                               bool live = false) {
  const std::string clock = live ? "s" : "sim. s";
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
                ("GFLOPS@" + std::to_string(budget)).c_str(), (clock + "@" + std::to_string(budget)).c_str(),
                "trials to target", (clock + " to target").c_str());
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

/// The main of a single-task ablation program: reads the request (read_single_task_request),
/// runs `pipelines` (run_single_task), writes the curves CSV, prints the score tables against
/// `baseline`, then `extra(all, request)` (the study's own table). Returns the exit status: 1
/// with a message on an error.
template <class Pipelines, class Extra>
int single_task_main(int argc, char** argv, const std::string& program, const std::string& usage,
                     const std::string& study, Pipelines pipelines, const std::string& baseline, Extra extra) {
  tunekit::cli::CommandLine cl(argc, argv, program, usage);
  const SingleTaskRequest request = read_single_task_request(cl, program);
  cl.reject_unknown();
  try {
    const auto all = run_single_task(study, pipelines, request);
    std::ofstream out(request.out);
    if (!out) cl.fail("cannot write " + request.out);
    write_score_curves(out, all, request.setup.budget, request.time_points);
    print_score_tables(all, request.setup.budget, baseline, request.live());
    extra(all, request);
    std::printf("curves written to %s\n", request.out.c_str());
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace ablation
