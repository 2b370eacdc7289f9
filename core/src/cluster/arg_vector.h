// An argument vector as C and MPI expect it.
//
// C (and POSIX exec) guarantee argv[argc] == nullptr, and MPI_Init_thread
// relies on it: Open MPI joins the vector by walking it to the null pointer
// (opal_argv_join). A vector built by hand must therefore end in a null
// pointer that argc does not count (issue 13, defect 1).

#pragma once

#include <vector>

namespace iomimic::cluster {

class ArgVector {
 public:
  // Keeps argv[0] and argv[1 + skip .. argc), dropping the `skip` words after
  // the program name (the command word). `argv` must outlive this object.
  ArgVector(int argc, char** argv, int skip);

  // The number of arguments, not counting the terminating null pointer.
  int argc() const { return static_cast<int>(args_.size()) - 1; }
  // The vector; argv()[argc()] is always nullptr.
  char** argv() { return args_.data(); }

 private:
  std::vector<char*> args_;  // always ends in nullptr
};

}  // namespace iomimic::cluster
