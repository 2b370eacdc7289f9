// `kv-cache.py ...`: iomimic started under the name of MLPerf Storage's
// KV-cache benchmark (the kv-cache.py script installed beside iomimic execs
// it so), taking the reference's command line as mlpstorage builds it and
// running iomimic's KV-cache workflow, which writes the reference's results
// file (core/src/kvcache/reference_cli.h, docs/kvcache-reference.md).

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "kvcache/reference_cli.h"

namespace iomimic::app {

int CmdKvCacheReference(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  Result<kvcache::ReferenceCommandLine> cli = kvcache::ParseReferenceCommandLine(args);
  if (!cli.ok()) return Fail(cli.status());
  if (cli->help) {
    std::cout << kvcache::ReferenceCommandLineHelp();
    return 0;
  }
  std::vector<std::string> run{"iomimic"};
  run.insert(run.end(), cli->run_args.begin(), cli->run_args.end());
  std::vector<char*> cargs;
  for (std::string& a : run) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  // Notes once, before the run (every rank parses the same command line).
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool leader = rank == nullptr || *rank == '0';
  if (leader) {
    for (const std::string& note : cli->notes) std::cerr << "kv-cache.py: " << note << "\n";
  }
  // The run writes the results file (kv_cache.reference_results); its errors
  // name the drop-in's flags, not the overrides it made of them.
  const int code =
      CmdRunRewritingErrors(static_cast<int>(run.size()), cargs.data(),
                            [&](const Status& s) { return kvcache::ReferenceError(*cli, s); });
  if (code == 0 && leader) {
    std::cerr << "kv-cache.py: results saved to " << cli->output << " (the run's files in "
              << cli->run_folder << ")\n";
  }
  return code;
}

}  // namespace iomimic::app
