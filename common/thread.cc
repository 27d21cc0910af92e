#include "common/thread.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/file.h"

namespace kobo {

void name_this_thread(std::string_view name) {
  const std::string kept(name.substr(0, 15));
  pthread_setname_np(pthread_self(), kept.c_str());
}

Status set_this_thread_nice(int nice) {
  // On Linux a nice value is a thread's own: PRIO_PROCESS with a thread id sets that thread's.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) == 0) return {};
  const int error = errno;
  std::string message =
      "cannot set the thread's nice value to " + std::to_string(nice) + ": " + error_text(error);
  if (error == EACCES || error == EPERM) message += " (raising a priority needs CAP_SYS_NICE or RLIMIT_NICE)";
  return Status::error(std::move(message));
}

unsigned cores_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

}  // namespace kobo
