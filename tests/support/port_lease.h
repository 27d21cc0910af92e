#pragma once
// A loopback port that a test's server keeps across its restarts.
//
// A server that a test kills and starts again comes back on the port its clients know. A port from
// bind(0) lies in the kernel's ephemeral range, which the kernel also gives every outgoing
// connection and every bind(0) of every process: while the server is down (seconds, in the kill -9
// tests), a connection or a server of another test (ctest runs two at a time) can take it, and the
// restart then cannot bind it or, worse, its client reaches the other test's server. A lease takes
// a port beside the ephemeral range (/proc/sys/net/ipv4/ip_local_port_range: below it, else
// above), which the kernel never hands out by itself, and holds it against the other tests'
// leases with an abstract Unix socket named after it, which goes with the lease or with the
// process.
//
// Thread safety: none; one thread takes and drops a lease. Movable, not copyable.

#include <cstdint>

namespace kobo::testing {

class PortLease {
 public:
  // Ports [first, first + count).
  struct Range {
    std::uint16_t first = 0;
    int count = 0;
  };
  // Up to 8,192 ports beside the ephemeral range (inside it only where it leaves no room).
  static Range leasable();

  // A port of `range` that is free on 127.0.0.1 now and leased to no other test. Throws
  // std::runtime_error when every port of the range is taken.
  static PortLease take(Range range = leasable());

  PortLease(PortLease&& other) noexcept;
  PortLease& operator=(PortLease&& other) noexcept;
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  ~PortLease();

  std::uint16_t port() const { return port_; }

 private:
  PortLease(std::uint16_t port, int guard) : port_(port), guard_(guard) {}

  std::uint16_t port_ = 0;
  int guard_ = -1;  // the abstract Unix socket that holds the lease
};

}  // namespace kobo::testing
