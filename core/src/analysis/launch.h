// Running iomimic itself as a child process, for the commands that run many
// experiments (sweep, search): each run is a fresh process (or an MPI job
// through a launcher), as a user would start it, so every run gets its own
// MPI world size and leaves its own run folder.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iomimic/status.h"

namespace iomimic::analysis {

// Runs `argv` (argv[0] looked up in PATH when it has no '/') and waits for it.
// Returns its exit status (128 + signal when a signal ended it); an error
// only when it could not be started.
Result<int> RunCommand(const std::vector<std::string>& argv);

// The command line of one run: `launcher` (with "{processes}" replaced) when
// processes > 1, then `iomimic run -q`, the workload (a manifest path when it
// ends in .yaml/.yml, else workload=NAME) and `overrides`.
std::vector<std::string> RunCommandLine(const std::string& iomimic,
                                        const std::vector<std::string>& launcher,
                                        std::uint64_t processes, const std::string& workload,
                                        const std::vector<std::string>& overrides);

// The launcher used when none is given: mpirun -np {processes}, with
// --allow-run-as-root when running as root (Open MPI refuses root otherwise).
std::vector<std::string> DefaultLauncher();

// This binary's path (/proc/self/exe).
std::string SelfPath();

// Splits a command or override list on spaces (double quotes group).
std::vector<std::string> SplitWords(const std::string& text);

}  // namespace iomimic::analysis
