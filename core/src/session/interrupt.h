// Stopping a run on SIGINT, SIGTERM or SIGHUP (issue 13, defect 7;
// docs/security.md).
//
// The first signal only sets a flag. Training looks at it at each step
// boundary, in the per-step barrier, so that every rank stops after the same
// step (under mpirun a signal may reach the ranks at different times); the
// run then writes the statistics of the steps done so far, status.json says
// "interrupted", and the process exits with 128 + the signal number, as a
// shell reports a process killed by it. A second signal is not caught: the
// default action ends the process at once.

#pragma once

namespace iomimic::session {

// Installs the handlers (once per process; idempotent). Async-signal-safe
// handlers only store the signal number.
void InstallInterruptHandlers();

// The first signal received, or 0. Any thread; lock-free.
int InterruptSignal();

// Records `signal` as received when none was (a signal the ranks agreed on
// that reached another rank), so this rank reports and exits as if it had
// received it. Any thread.
void NoteAgreedInterrupt(int signal);

// "SIGINT", "SIGTERM", "SIGHUP", or "signal N".
const char* SignalName(int signal);

// For tests: forgets a received signal and re-arms the handlers.
void ResetInterruptForTesting();

}  // namespace iomimic::session
