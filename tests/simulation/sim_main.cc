// kobo_sim: runs the seeded simulation (tests/simulation/simulation.h) for many seeds.
//   kobo_sim --seeds N [--first S] [--steps K]   seeds S..S+N-1 (default S = 1)
//   kobo_sim --seed S [--steps K] [--verbose]     one seed, every step printed with --verbose
// Prints one line per seed; exits 1 if any seed failed, naming how to reproduce it.

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "tests/simulation/simulation.h"

int main(int argc, char** argv) {
  std::uint64_t first = 1, seeds = 1;
  int steps = 300;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto value = [&]() -> std::uint64_t {
      if (i + 1 >= argc) {
        std::cerr << "kobo_sim: " << a << " needs a value\n";
        std::exit(2);
      }
      return std::stoull(argv[++i]);
    };
    if (a == "--seed")
      first = value(), seeds = 1;
    else if (a == "--seeds")
      seeds = value();
    else if (a == "--first")
      first = value();
    else if (a == "--steps")
      steps = static_cast<int>(value());
    else if (a == "--verbose")
      verbose = true;
    else {
      std::cerr << "usage: kobo_sim [--seed S | --seeds N [--first S]] [--steps K] [--verbose]\n";
      return 2;
    }
  }
  int failed = 0;
  for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
    kobo::sim::Options o;
    o.seed = seed;
    o.steps = steps;
    o.verbose = verbose;
    const auto r = kobo::sim::run(o);
    std::cout << kobo::sim::summary(o, r) << std::endl;
    if (!r.ok) ++failed;
  }
  std::cout << "sim: " << seeds << " seeds, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
