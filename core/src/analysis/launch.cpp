#include "analysis/launch.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace iomimic::analysis {

Result<int> RunCommand(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::InvalidArgument("empty command");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (err != 0) {
    return Status::FromErrno(err, "cannot start '" + argv[0] + "'");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "waiting for '" + argv[0] + "'");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::vector<std::string> RunCommandLine(const std::string& iomimic,
                                        const std::vector<std::string>& launcher,
                                        std::uint64_t processes, const std::string& workload,
                                        const std::vector<std::string>& overrides) {
  std::vector<std::string> argv;
  if (processes > 1) {
    for (const std::string& word : launcher) {
      std::string w = word;
      const std::size_t at = w.find("{processes}");
      if (at != std::string::npos) w.replace(at, 11, std::to_string(processes));
      argv.push_back(w);
    }
  }
  argv.push_back(iomimic);
  argv.push_back("run");
  argv.push_back("-q");
  const bool path = workload.ends_with(".yaml") || workload.ends_with(".yml");
  argv.push_back(path ? workload : "workload=" + workload);
  argv.insert(argv.end(), overrides.begin(), overrides.end());
  return argv;
}

std::vector<std::string> DefaultLauncher() {
  std::vector<std::string> l = {"mpirun"};
  if (geteuid() == 0) l.push_back("--allow-run-as-root");
  l.insert(l.end(), {"--oversubscribe", "-np", "{processes}"});
  return l;
}

std::string SelfPath() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("iomimic") : p.string();
}

std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool quoted = false, any = false;
  for (char ch : text) {
    if (ch == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (ch == ' ' || ch == '\t')) {
      if (any) words.push_back(word);
      word.clear();
      any = false;
    } else {
      word += ch;
      any = true;
    }
  }
  if (any) words.push_back(word);
  return words;
}

}  // namespace iomimic::analysis
