#pragma once
// A RocksDB file system that fails writes on demand, for the fault tests of guarantee 8 (docs/architecture.md
// section 6): the real file system underneath (the databases are real and on disk), and while a fault is set,
// every write to a file, sync, new file, rename and directory sync answers it as the kernel would: EIO (an
// I/O error), EROFS (a read-only file system) or ENOSPC (a full disk). Reads are never failed: a disk that
// cannot be written can still be read.
//
// Use: auto fs = std::make_shared<FaultyFileSystem>(); auto env = env_over(fs); give env.get() to
// the log or the views (the env must outlive them); fs->set(Fault::io_error) ...
// fs->set(Fault::none). Thread-safe.

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <memory>
#include <string>

namespace kobo::testing {

enum class Fault { none, io_error, read_only, no_space };

class FaultyFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FaultyFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

  static const char* kClassName() { return "KoboFaultyFileSystem"; }
  const char* Name() const override { return kClassName(); }

  void set(Fault f) { fault_.store(f); }
  Fault fault() const { return fault_.load(); }
  // How many operations were failed since construction: a test shows its fault was met.
  std::uint64_t failed() const { return failed_.load(); }

  // The next append to a write-ahead log (a *.log file) is written and then answered with
  // `answer`'s error, as a disk whose acknowledgement is lost: RocksDB reports the write failed,
  // and a reopen recovers it from the log. Once.
  void lose_next_wal_ack(Fault answer) { lost_ack_.store(answer); }
  // The error to answer an append to `file` with after writing it; ok when none is due.
  rocksdb::IOStatus take_lost_ack(const std::string& file) {
    if (!file.ends_with(".log")) return rocksdb::IOStatus::OK();
    return answer(lost_ack_.exchange(Fault::none), "append to " + file);
  }

  // The error the current fault gives; ok while there is none.
  rocksdb::IOStatus check(const std::string& what) { return answer(fault_.load(), what); }

 private:
  rocksdb::IOStatus answer(Fault fault, const std::string& what) {
    switch (fault) {
      case Fault::none:
        return rocksdb::IOStatus::OK();
      case Fault::io_error:
        ++failed_;
        return rocksdb::IOStatus::IOError(what, "Input/output error");
      case Fault::read_only:
        ++failed_;
        return rocksdb::IOStatus::IOError(what, "Read-only file system");
      case Fault::no_space:
        ++failed_;
        return rocksdb::IOStatus::NoSpace(what, "No space left on device");
    }
    return rocksdb::IOStatus::OK();
  }

 public:
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& o,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& target, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override {
    if (auto s = check("rename " + src); !s.ok()) return s;
    return FileSystemWrapper::RenameFile(src, target, o, dbg);
  }

 private:
  template <typename Open>
  rocksdb::IOStatus writable(const std::string& what, const std::string& f, Open&& open,
                             std::unique_ptr<rocksdb::FSWritableFile>* r);

  std::atomic<Fault> fault_{Fault::none};
  std::atomic<Fault> lost_ack_{Fault::none};
  std::atomic<std::uint64_t> failed_{0};
};

// An Env with `fs` under it, for rocksdb::Options::env; it keeps `fs` alive.
inline std::unique_ptr<rocksdb::Env> env_over(std::shared_ptr<FaultyFileSystem> fs) {
  return rocksdb::NewCompositeEnv(std::move(fs));
}

}  // namespace kobo::testing
