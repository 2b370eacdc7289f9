#include "session/interrupt.h"

#include <doctest/doctest.h>
#include <signal.h>

#include <string>

namespace iomimic::session {

// Issue 13, defect 7: the first signal is only noted (the run stops at the
// next step boundary); the handlers then give way to the default action.
TEST_CASE("the first SIGINT, SIGTERM or SIGHUP is noted, not fatal") {
  InstallInterruptHandlers();
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    CAPTURE(s);
    ResetInterruptForTesting();
    CHECK(InterruptSignal() == 0);
    REQUIRE(::raise(s) == 0);  // would end the process without the handler
    CHECK(InterruptSignal() == s);
    struct sigaction now {};
    REQUIRE(::sigaction(s, nullptr, &now) == 0);
    const bool default_action = now.sa_handler == SIG_DFL;
    CHECK(default_action);  // a second signal ends the process
  }
  ResetInterruptForTesting();
  // Leave the process as a test runner expects it.
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::signal(s, SIG_DFL);
  CHECK(std::string(SignalName(SIGINT)) == "SIGINT");
  CHECK(std::string(SignalName(SIGTERM)) == "SIGTERM");
  CHECK(std::string(SignalName(SIGHUP)) == "SIGHUP");
  CHECK(std::string(SignalName(10)) == "signal 10");
}

}  // namespace iomimic::session
