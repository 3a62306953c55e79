#include "cli/interrupt.h"

#include <csignal>

namespace nextn::cli {

namespace {

// The one process-wide mutable variable: a signal handler can reach nothing else.
volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) { g_interrupted = 1; }

}  // namespace

InterruptScope::InterruptScope() {
    g_interrupted = 0;
    std::signal(SIGINT, on_sigint);
}

InterruptScope::~InterruptScope() { std::signal(SIGINT, SIG_DFL); }

bool InterruptScope::requested() const { return g_interrupted != 0; }

}  // namespace nextn::cli
