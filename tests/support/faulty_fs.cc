#include "tests/support/faulty_fs.h"

namespace kobo::testing {
namespace {

// A file whose writes and syncs answer the file system's fault while one is set.
class FaultyFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyFile(std::unique_ptr<rocksdb::FSWritableFile> file, FaultyFileSystem& fs, std::string name)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), name_(std::move(name)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("append to " + name_); !s.ok()) return s;
    if (auto s = FSWritableFileOwnerWrapper::Append(data, o, dbg); !s.ok()) return s;
    return fs_.take_lost_ack(name_);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("append to " + name_); !s.ok()) return s;
    if (auto s = FSWritableFileOwnerWrapper::Append(data, o, info, dbg); !s.ok()) return s;
    return fs_.take_lost_ack(name_);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("append to " + name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, o, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& o, const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("append to " + name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, o, info, dbg);
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("flush " + name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Flush(o, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("sync " + name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Sync(o, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("sync " + name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Fsync(o, dbg);
  }
  rocksdb::IOStatus RangeSync(std::uint64_t offset, std::uint64_t n, const rocksdb::IOOptions& o,
                              rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("sync " + name_); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::RangeSync(offset, n, o, dbg);
  }

 private:
  FaultyFileSystem& fs_;
  const std::string name_;
};

class FaultyDirectory final : public rocksdb::FSDirectoryWrapper {
 public:
  FaultyDirectory(std::unique_ptr<rocksdb::FSDirectory> dir, FaultyFileSystem& fs, std::string name)
      : FSDirectoryWrapper(std::move(dir)), fs_(fs), name_(std::move(name)) {}
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto s = fs_.check("sync directory " + name_); !s.ok()) return s;
    return FSDirectoryWrapper::Fsync(o, dbg);
  }
  rocksdb::IOStatus FsyncWithDirOptions(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg,
                                        const rocksdb::DirFsyncOptions& d) override {
    if (auto s = fs_.check("sync directory " + name_); !s.ok()) return s;
    return FSDirectoryWrapper::FsyncWithDirOptions(o, dbg, d);
  }

 private:
  FaultyFileSystem& fs_;
  const std::string name_;
};

}  // namespace

// Opens a writable file through `open` unless the fault refuses it, and wraps what it opened.
template <typename Open>
rocksdb::IOStatus FaultyFileSystem::writable(const std::string& what, const std::string& f, Open&& open,
                                             std::unique_ptr<rocksdb::FSWritableFile>* r) {
  if (auto s = check(what + " " + f); !s.ok()) return s;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  auto s = open(&file);
  if (s.ok()) *r = std::make_unique<FaultyFile>(std::move(file), *this, f);
  return s;
}

rocksdb::IOStatus FaultyFileSystem::NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                    rocksdb::IODebugContext* dbg) {
  return writable(
      "create", f, [&](auto* file) { return FileSystemWrapper::NewWritableFile(f, o, file, dbg); }, r);
}

rocksdb::IOStatus FaultyFileSystem::ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                       rocksdb::IODebugContext* dbg) {
  return writable(
      "open", f, [&](auto* file) { return FileSystemWrapper::ReopenWritableFile(f, o, file, dbg); }, r);
}

rocksdb::IOStatus FaultyFileSystem::ReuseWritableFile(const std::string& f, const std::string& old,
                                                      const rocksdb::FileOptions& o,
                                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                      rocksdb::IODebugContext* dbg) {
  return writable(
      "create", f, [&](auto* file) { return FileSystemWrapper::ReuseWritableFile(f, old, o, file, dbg); }, r);
}

rocksdb::IOStatus FaultyFileSystem::NewDirectory(const std::string& name, const rocksdb::IOOptions& o,
                                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                                 rocksdb::IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSDirectory> dir;
  auto s = FileSystemWrapper::NewDirectory(name, o, &dir, dbg);
  if (s.ok()) *r = std::make_unique<FaultyDirectory>(std::move(dir), *this, name);
  return s;
}

}  // namespace kobo::testing
