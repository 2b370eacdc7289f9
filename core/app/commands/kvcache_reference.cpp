// `kv-cache.py ...`: iomimic started under the name of MLPerf Storage's
// KV-cache benchmark (the kv-cache.py script installed beside iomimic execs
// it so), taking the reference's command line as mlpstorage builds it and
// running iomimic's KV-cache workflow (core/src/kvcache/reference_cli.h,
// docs/kvcache-reference.md).

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "cluster/arg_vector.h"
#include "cluster/cluster.h"
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
  if (const char* rank = std::getenv("OMPI_COMM_WORLD_RANK"); rank == nullptr || *rank == '0') {
    for (const std::string& note : cli->notes) std::cerr << "kv-cache.py: " << note << "\n";
  }
  const int code = CmdRun(static_cast<int>(run.size()), cargs.data());
  if (code != 0 || cli->output.empty()) return code;
  const cluster::Cluster* cluster = cluster::Cluster::Current();
  if (cluster != nullptr && cluster->rank() != 0) return 0;
  const std::size_t slash = cli->output.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : cli->output.substr(0, slash);
  if (Status s = kvcache::WriteReferenceResults(folder + "/summary.json", cli->output, cli->seed);
      !s.ok()) {
    return Fail(s);
  }
  return 0;
}

}  // namespace iomimic::app
