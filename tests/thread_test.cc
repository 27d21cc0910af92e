// common/thread.h: a thread's name and nice value, read back from the kernel.
#include "common/thread.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

namespace kobo {
namespace {

int own_nice() {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
}

TEST(Thread, ANameIsKeptToFifteenBytes) {
  std::string seen;
  std::thread([&] {
    name_this_thread("kobo-a-name-longer-than-linux-keeps");
    char name[32] = {};
    ASSERT_EQ(pthread_getname_np(pthread_self(), name, sizeof name), 0);
    seen = name;
  }).join();
  EXPECT_EQ(seen, "kobo-a-name-lon");
}

// Lowering a thread's priority needs no privilege, and is the thread's own: the caller's stays.
TEST(Thread, ANiceValueIsTheThreadsOwn) {
  const int before = own_nice();
  int inside = -100;
  std::thread([&] {
    ASSERT_TRUE(set_this_thread_nice(before + 3).ok());
    inside = own_nice();
  }).join();
  EXPECT_EQ(inside, before + 3);
  EXPECT_EQ(own_nice(), before);
}

// Raising it is refused without CAP_SYS_NICE, and the error says what it needs; with it (root
// in CI), it is set.
TEST(Thread, RaisingAPriorityIsSetOrRefusedNamingWhatItNeeds) {
  std::thread([] {
    const int before = own_nice();
    const Status s = set_this_thread_nice(before - 1);
    if (s.ok()) {
      EXPECT_EQ(own_nice(), before - 1);
    } else {
      EXPECT_NE(s.message().find("CAP_SYS_NICE"), std::string::npos) << s.message();
      EXPECT_EQ(own_nice(), before);
    }
  }).join();
}

}  // namespace
}  // namespace kobo
