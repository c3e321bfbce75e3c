// tunekit-replay end to end: random search on each of the four recorded datasets.
#ifdef TUNEKIT_REPLAY_BIN
#include <tunekit/preset_registry.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {
int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }
}  // namespace

TEST_CASE("tunekit-replay runs random search on every dataset and writes its summary") {
  const auto dir = std::filesystem::temp_directory_path() / ("tunekit_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"gemm_RTX_3090", "gemm_RTX_2080_Ti", "convolution_A100", "convolution_A4000"}) {
    CAPTURE(name);
    const auto summary = dir / (std::string(name) + ".json");
    const auto trials = dir / (std::string(name) + ".csv");
    const std::string cmd = std::string(TUNEKIT_REPLAY_BIN) + " --dataset " + TUNEKIT_DATASETS + "/" +
                            name + ".csv --tuner random --budget 120 --seeds 4 --out " +
                            trials.string() + " --summary-json " + summary.string();
    REQUIRE(run(cmd) == 0);
    std::ifstream in(summary);
    const auto j = nlohmann::json::parse(in);
    std::set<std::string> keys;
    for (const auto& [key, v] : j.items()) keys.insert(key);
    CHECK(keys == std::set<std::string>{"dataset", "tuner", "seeds", "budget", "optimum_ms", "score_median",
                                        "score_p25", "score_p75", "evals_to_95_median",
                                        "evals_to_99_median", "wall_seconds_per_run", "evaluator",
                                        "measure_seconds_to_95_median", "measure_seconds_median",
                                        "found_score_median", "found_score_p25", "found_score_p75",
                                        "found_evals_to_95_median", "found_evals_to_99_median", "time_score",
                                        "score_mean", "found_score_mean", "objective", "higher_is_better"});
    CHECK(j["objective"] == "time");
    CHECK(j["higher_is_better"] == false);
    CHECK(j["seeds"] == 4);
    CHECK(j["budget"] == 120);
    CHECK(j["tuner"] == "random");
    std::set<std::string> checkpoints;
    for (const auto& [key, v] : j["score_median"].items()) {
      checkpoints.insert(key);
      CHECK(v.get<double>() > 0.0);
      CHECK(v.get<double>() <= 1.0);
      CHECK(j["score_p25"][key].get<double>() <= v.get<double>());
      CHECK(j["score_p75"][key].get<double>() >= v.get<double>());
      // The best measured config is at least as good as the one held best by noisy measurements.
      CHECK(j["found_score_median"][key].get<double>() >= v.get<double>());
    }
    CHECK(checkpoints == std::set<std::string>{"25", "50", "100"});
    // trials.csv: a header and one row per (seed, trial); its last column is the held score, whose
    // mean over the seeds at each checkpoint is score_mean.
    std::ifstream tin(trials);
    std::string line;
    std::size_t rows = 0;
    std::getline(tin, line);
    CHECK(line == "seed,trial,config,status,time_ms,best_time_ms,simulated_seconds,measure_seconds,score");
    std::map<std::string, double> sum;  // checkpoint -> sum over seeds of the score at it
    while (std::getline(tin, line)) {
      ++rows;
      const auto trial = std::stoul(line.substr(line.find(',') + 1));
      if (trial == 25 || trial == 50 || trial == 100)
        sum[std::to_string(trial)] += std::stod(line.substr(line.rfind(',') + 1));
    }
    CHECK(rows == 4 * 120);
    for (const auto& [key, v] : j["score_mean"].items()) {
      CAPTURE(key);
      CHECK(v.get<double>() == doctest::Approx(sum[key] / 4).epsilon(1e-5));
      CHECK(j["found_score_mean"][key].get<double>() >= v.get<double>());
      CHECK(j["found_score_mean"][key].get<double>() <= 1.0);
    }
    CHECK(j["score_mean"].size() == 3);
  }
  // Bad input: a clear error and a non-zero exit.
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + " --dataset /nonexistent.csv") != 0);
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + " --dataset x.csv --tuner nope") != 0);
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + " --dataset x.csv --budget 0") != 0);
  const std::string csv = std::string(" --dataset ") + TUNEKIT_DATASETS + "/gemm_RTX_3090.csv --budget 5 --seeds 1";
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + csv + " --higher-is-better maybe") != 0);
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + csv + " --objective energy") != 0);  // a CSV records time alone
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + csv + " --objective time") == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tunekit-replay without --tuner runs the default preset, and its --help names it") {
  const auto dir = std::filesystem::temp_directory_path() / ("tunekit_cli_default_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto summary = dir / "summary.json";
  REQUIRE(run(std::string(TUNEKIT_REPLAY_BIN) + " --dataset " + TUNEKIT_DATASETS +
              "/gemm_RTX_3090.csv --budget 12 --seeds 1 --summary-json " + summary.string()) == 0);
  std::ifstream in(summary);
  CHECK(nlohmann::json::parse(in)["tuner"] == std::string(tunekit::default_preset));
  const auto help = dir / "help.txt";
  REQUIRE(std::system((std::string(TUNEKIT_REPLAY_BIN) + " --help >" + help.string() + " 2>&1").c_str()) == 0);
  std::ifstream h(help);
  const std::string text((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  const auto line = text.find("  --tuner NAME ");
  REQUIRE(line != std::string::npos);
  CHECK(text.substr(line, text.find('\n', line) - line).ends_with("[" + std::string(tunekit::default_preset) + "]"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("tunekit-replay --evaluator adaptive measures the same configs for less simulated time") {
  const auto dir = std::filesystem::temp_directory_path() / ("tunekit_cli_ev_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string base = std::string(TUNEKIT_REPLAY_BIN) + " --dataset " + TUNEKIT_DATASETS +
                           "/gemm_RTX_3090.csv --tuner random --budget 60 --seeds 3 --overhead 0";
  auto summary = [&](const std::string& options, const std::string& name) {
    const auto file = dir / name;
    REQUIRE(run(base + " " + options + " --summary-json " + file.string()) == 0);
    std::ifstream in(file);
    return nlohmann::json::parse(in);
  };
  const auto det = summary("--evaluator deterministic --repeat 32", "det.json");
  const auto ada = summary("--evaluator adaptive --max-runs 32 --batch 4", "ada.json");
  CHECK(det["evaluator"] == "deterministic");
  CHECK(ada["evaluator"] == "adaptive");
  // Random search draws the same configs whatever the evaluator (the generator advances by the
  // same number of draws only for the same runs, so compare totals, not trial by trial): the
  // adaptive runs stop after 8 of 32 runs on these low-noise recordings.
  CHECK(ada["measure_seconds_median"].get<double>() < 0.5 * det["measure_seconds_median"].get<double>());
  CHECK(run(base + " --evaluator nope") != 0);
  CHECK(run(base + " --evaluator adaptive --batch 0") != 0);
  CHECK(run(base + " --evaluator adaptive --max-runs 10 --batch 8") != 0);
  std::filesystem::remove_all(dir);
}
TEST_CASE("tunekit-replay replays several datasets as one model with a scheduler") {
  const auto dir = std::filesystem::temp_directory_path() / ("tunekit_cli_mt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string data = std::string(" --dataset ") + TUNEKIT_DATASETS + "/";
  const std::string base = std::string(TUNEKIT_REPLAY_BIN) + data + "convolution_A100.csv" + data +
                           "gemm_RTX_3090.csv --tuner random --budget 96 --slot 8 --seeds 3 --weights 2,1 "
                           "--flops 7549747200,137472507904";
  for (const char* scheduler : {"sequential", "round-robin", "bandit", "gradient"}) {
    CAPTURE(scheduler);
    const auto summary = dir / (std::string(scheduler) + ".json");
    const auto out = dir / (std::string(scheduler) + ".csv");
    REQUIRE(run(base + " --scheduler " + scheduler + " --out " + out.string() + " --summary-json " +
                summary.string()) == 0);
    std::ifstream in(summary);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["mode"] == "multi-task");
    CHECK(j["scheduler"] == scheduler);
    CHECK(j["datasets"].size() == 2);
    CHECK(j["budget"] == 96);
    CHECK(j["seconds_to_1.05x"].size() == 3);
    CHECK(j["seconds_to_1.01x"].size() == 3);
    for (std::size_t s = 0; s < 3; ++s) {
      // Reaching 1.01x of the final objective takes at least as long as reaching 1.05x.
      CHECK(j["seconds_to_1.05x"][s].get<double>() <= j["seconds_to_1.01x"][s].get<double>());
      // The held configs at their recorded means: never below the optimum (the measured final
      // objective may be, by the luck of the draws).
      CHECK(j["final_recorded_objective_ms"][s].get<double>() >= j["optimum_objective_ms"].get<double>() * (1 - 1e-9));
      CHECK(j["recorded_seconds_to_1.05x_optimum"].size() == 3);
    }
    CHECK(j["seconds_to_1.05x_median"].is_number());
    CHECK(j["slots_per_task_median"].size() == 2);
    CHECK(j["objective_over_time"].size() == 10);
    std::size_t finite_points = 0;
    for (const auto& point : j["objective_over_time"]) {
      // The recorded objective is finite where the measured one is (null while a task is unmeasured);
      // over time too it is never below the optimum, and its quartiles are ordered.
      for (const char* q : {"p25_ms", "median_ms", "p75_ms"})
        CHECK(point[q].is_null() == point[std::string("recorded_") + q].is_null());
      if (point["recorded_p75_ms"].is_null()) continue;
      ++finite_points;
      CHECK(point["recorded_median_ms"].get<double>() >= j["optimum_objective_ms"].get<double>() * (1 - 1e-9));
      CHECK(point["recorded_p25_ms"].get<double>() <= point["recorded_median_ms"].get<double>());
      CHECK(point["recorded_median_ms"].get<double>() <= point["recorded_p75_ms"].get<double>());
    }
    CHECK(finite_points >= 5);
    std::ifstream oin(out);
    std::string line;
    std::size_t rows = 0;
    std::getline(oin, line);
    CHECK(line == "seed,trial,slot,task,simulated_seconds,objective_ms,recorded_objective_ms");
    std::vector<double> recorded;  // the recorded_objective_ms column
    while (std::getline(oin, line)) {
      ++rows;
      recorded.push_back(std::stod(line.substr(line.rfind(',') + 1)));
    }
    CHECK(rows == 3 * 96);
    // With 3 seeds, each median over time is one seed's recorded objective at that time: a value of
    // the per-trial column (written to 6 digits).
    for (const auto& point : j["objective_over_time"]) {
      if (point["recorded_median_ms"].is_null()) continue;
      const double m = point["recorded_median_ms"].get<double>();
      CHECK(std::any_of(recorded.begin(), recorded.end(), [m](double r) { return std::abs(r - m) <= 1e-5 * m; }));
    }
  }
  // --confirm K: each run ends by measuring each task's K fastest again; the confirmed configs'
  // recorded objective is reported per seed, never below the optimum, and the run's own columns
  // are those of the run without it (the confirmation comes after the run). 0: none.
  {
    const auto with = dir / "confirm.json", without = dir / "round-robin.json";
    REQUIRE(run(base + " --scheduler round-robin --confirm 3 --summary-json " + with.string()) == 0);
    std::ifstream win(with), woin(without);
    const auto j = nlohmann::json::parse(win), plain = nlohmann::json::parse(woin);
    CHECK(j["confirm"] == 3);
    CHECK(plain["confirm"] == 0);
    CHECK_FALSE(plain.contains("confirmed_recorded_objective_ms"));
    CHECK(j["final_recorded_objective_ms"] == plain["final_recorded_objective_ms"]);
    REQUIRE(j["confirmed_recorded_objective_ms"].size() == 3);
    for (std::size_t s = 0; s < 3; ++s) {
      CHECK(j["confirmed_recorded_objective_ms"][s].get<double>() >= j["optimum_objective_ms"].get<double>() * (1 - 1e-9));
      // 2 tasks x 3 candidates x 3 turns, each measurement at least the 1 s overhead.
      CHECK(j["confirm_seconds"][s].get<double>() >= 18.0);
    }
    CHECK(run(base + " --confirm 0") == 0);
    CHECK(run(base + " --confirm -1") != 0);
    CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + data + "gemm_RTX_3090.csv --confirm 2") != 0);  // single task
  }
  CHECK(run(base + " --scheduler nope") != 0);
  CHECK(run(base + " --weights 1") != 0);
  CHECK(run(base + " --weights 1,0") != 0);
  CHECK(run(std::string(TUNEKIT_REPLAY_BIN) + data + "gemm_RTX_3090.csv --slot 4") != 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("tunekit-replay --transfer: the other GPU's recorded GEMM space as source, each method, and its errors") {
  const auto dir = std::filesystem::temp_directory_path() / ("tunekit_cli_transfer_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string data = std::string(" --dataset ") + TUNEKIT_DATASETS + "/";
  const std::string target = std::string(TUNEKIT_REPLAY_BIN) + data + "gemm_RTX_3090.csv --budget 25 --seeds 5";
  const std::string source = std::string(" --transfer ") + TUNEKIT_DATASETS + "/gemm_RTX_2080_Ti.csv";
  // found score's mean at B = 25 over the 5 seeds, and the summary
  const auto found_25 = [&](const std::string& args, const std::string& name) {
    const auto summary = dir / (name + ".json");
    REQUIRE(run(target + args + " --summary-json " + summary.string()) == 0);
    std::ifstream in(summary);
    return nlohmann::json::parse(in);
  };
  const auto cold = found_25(" --tuner tpe", "cold");
  const auto tunekit = found_25(source, "tunekit");
  CHECK(tunekit["transfer_method"] == "tunekit");
  REQUIRE(tunekit["transfer"].size() == 1);
  CHECK(tunekit["transfer"][0].dump().find("gemm_RTX_2080_Ti.csv") != std::string::npos);
  CHECK_FALSE(cold.contains("transfer"));
  // The 2080 Ti's space ranks the 3090's configs well (docs/benchmarks.md, "Transfer"): each method
  // holds a better config after 25 than the cold run (20-seed means: 0.936, 0.971, 0.905 against 0.832).
  const double c = cold["found_score_mean"]["25"].get<double>();
  MESSAGE("found score at 25, cold " << c);
  CHECK(tunekit["found_score_mean"]["25"].get<double>() > c + 0.03);
  CHECK(found_25(source + " --transfer-method autotvm --tuner autotvm --plan-size 32", "autotvm")["found_score_mean"]["25"]
            .get<double>() > c + 0.03);
  CHECK(found_25(source + " --transfer-method top-first", "top")["found_score_mean"]["25"].get<double>() > c + 0.03);

  // Errors: a method on a preset it does not apply to, an unknown method, a method without a
  // source, a missing file, a source with no knob in common (a convolution for a GEMM).
  CHECK(run(target + source + " --tuner autotvm") != 0);
  CHECK(run(target + source + " --transfer-method autotvm --tuner tpe") != 0);
  CHECK(run(target + source + " --transfer-method nope") != 0);
  CHECK(run(target + " --transfer-method top-first") != 0);
  CHECK(run(target + " --transfer " + (dir / "missing.csv").string()) != 0);
  CHECK(run(target + " --transfer " + TUNEKIT_DATASETS + "/convolution_A100.csv") != 0);
  std::filesystem::remove_all(dir);
}
#endif
