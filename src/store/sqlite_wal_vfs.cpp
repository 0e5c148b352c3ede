#include "store/sqlite_wal_vfs.hpp"

#include "core/metrics.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace sika::store::detail {

namespace {

constexpr const char* kVfsName = "sika-wal";
// Gathered bytes are written at the latest when this many are waiting.
constexpr std::size_t kWalBufferLimit = std::size_t{8} << 20;
constexpr std::size_t kInitialBuffer = std::size_t{1} << 20;
// The unix VFS writes at most 128 KiB - 1 bytes per call (it masks the length with 0x1ffff and
// reports a write it could not finish as a full disk), so gathered bytes go out in pieces of 124 KiB.
constexpr std::size_t kWriteChunk = std::size_t{124} << 10;
// A WAL frame header (https://sqlite.org/fileformat.html#wal_file_format): bytes 4..7 hold, for
// the frame that commits a transaction, the database size in pages after it; zero otherwise.
constexpr int kFrameHeaderSize = 24;

sqlite3_vfs g_vfs;
sqlite3_vfs* g_root = nullptr;

metrics::Counter& asked_writes() {
  static metrics::Counter& c = metrics::registry().counter(
      "sika_db_wal_writes_total", "Writes to the SQLite WAL: asked by SQLite, and made to the kernel",
      {{"kind", "asked"}});
  return c;
}
metrics::Counter& made_writes() {
  static metrics::Counter& c = metrics::registry().counter(
      "sika_db_wal_writes_total", "Writes to the SQLite WAL: asked by SQLite, and made to the kernel",
      {{"kind", "made"}});
  return c;
}

struct WalFile {
  sqlite3_file base;  // first: SQLite sees a WalFile as a sqlite3_file
  sqlite3_file* real;
  std::vector<unsigned char>* pending;
  sqlite3_int64 pending_offset;
  bool commit_header;  // the last write was the header of a commit frame
};

// The default VFS's file lives in the same allocation, after the WalFile.
constexpr std::size_t kRealOffset = (sizeof(WalFile) + 15) / 16 * 16;

WalFile* wal(sqlite3_file* f) { return reinterpret_cast<WalFile*>(f); }
sqlite3_file* real(sqlite3_file* f) { return wal(f)->real; }

int flush(WalFile* f) {
  std::vector<unsigned char>& p = *f->pending;
  int rc = SQLITE_OK;
  for (std::size_t done = 0; done < p.size() && rc == SQLITE_OK; done += kWriteChunk) {
    std::size_t n = std::min(kWriteChunk, p.size() - done);
    rc = f->real->pMethods->xWrite(f->real, p.data() + done, static_cast<int>(n),
                                   f->pending_offset + static_cast<sqlite3_int64>(done));
    made_writes().inc();
  }
  p.clear();
  return rc;
}

int wal_close(sqlite3_file* file) {
  WalFile* f = wal(file);
  int rc = flush(f);
  int closed = f->real->pMethods->xClose(f->real);
  delete f->pending;
  f->pending = nullptr;
  return rc != SQLITE_OK ? rc : closed;
}

int wal_read(sqlite3_file* file, void* out, int amount, sqlite3_int64 offset) {
  if (int rc = flush(wal(file)); rc != SQLITE_OK) return rc;
  return real(file)->pMethods->xRead(real(file), out, amount, offset);
}

int append(WalFile* f, const unsigned char* bytes, int amount) {
  std::vector<unsigned char>& p = *f->pending;
  try {
    if (p.capacity() == 0) p.reserve(kInitialBuffer);
    p.insert(p.end(), bytes, bytes + amount);
  } catch (const std::bad_alloc&) {
    return SQLITE_IOERR_NOMEM;
  }
  return SQLITE_OK;
}

int wal_write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  WalFile* f = wal(file);
  asked_writes().inc();
  std::vector<unsigned char>& p = *f->pending;
  const auto* bytes = static_cast<const unsigned char*>(data);
  // The page after a commit frame's header completes the transaction in the file.
  bool ends_commit = f->commit_header && amount != kFrameHeaderSize;
  f->commit_header = amount == kFrameHeaderSize && (bytes[4] | bytes[5] | bytes[6] | bytes[7]) != 0;
  const sqlite3_int64 begin = f->pending_offset;
  const sqlite3_int64 end = begin + static_cast<sqlite3_int64>(p.size());
  int rc = SQLITE_OK;
  if (p.empty() || offset == end) {
    if (p.empty()) f->pending_offset = offset;
    rc = append(f, bytes, amount);
  } else if (offset >= begin && offset + amount <= end) {
    // A frame of this transaction written again (SQLite rewrites a page it spilled earlier).
    std::memcpy(p.data() + (offset - begin), bytes, static_cast<std::size_t>(amount));
  } else if (offset + amount <= begin || offset > end) {
    // Bytes the waiting ones do not cover: straight to the kernel. Bytes gathered later at the
    // same place are newer, so writing them over these at the flush keeps the order of writes.
    rc = f->real->pMethods->xWrite(f->real, data, amount, offset);
    made_writes().inc();
  } else {
    rc = flush(f);
    if (rc == SQLITE_OK) {
      f->pending_offset = offset;
      rc = append(f, bytes, amount);
    }
  }
  if (rc != SQLITE_OK) return rc;
  if (ends_commit || p.size() >= kWalBufferLimit) return flush(f);
  return SQLITE_OK;
}

int wal_truncate(sqlite3_file* file, sqlite3_int64 size) {
  if (int rc = flush(wal(file)); rc != SQLITE_OK) return rc;
  return real(file)->pMethods->xTruncate(real(file), size);
}

int wal_sync(sqlite3_file* file, int flags) {
  if (int rc = flush(wal(file)); rc != SQLITE_OK) return rc;
  return real(file)->pMethods->xSync(real(file), flags);
}

int wal_file_size(sqlite3_file* file, sqlite3_int64* size) {
  if (int rc = flush(wal(file)); rc != SQLITE_OK) return rc;
  return real(file)->pMethods->xFileSize(real(file), size);
}

int wal_lock(sqlite3_file* file, int level) { return real(file)->pMethods->xLock(real(file), level); }
int wal_unlock(sqlite3_file* file, int level) { return real(file)->pMethods->xUnlock(real(file), level); }
int wal_check_reserved_lock(sqlite3_file* file, int* out) {
  return real(file)->pMethods->xCheckReservedLock(real(file), out);
}
int wal_file_control(sqlite3_file* file, int op, void* arg) {
  return real(file)->pMethods->xFileControl(real(file), op, arg);
}
int wal_sector_size(sqlite3_file* file) { return real(file)->pMethods->xSectorSize(real(file)); }
int wal_device_characteristics(sqlite3_file* file) { return real(file)->pMethods->xDeviceCharacteristics(real(file)); }
int wal_shm_map(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
  return real(file)->pMethods->xShmMap(real(file), region, size, extend, out);
}
int wal_shm_lock(sqlite3_file* file, int offset, int n, int flags) {
  return real(file)->pMethods->xShmLock(real(file), offset, n, flags);
}
void wal_shm_barrier(sqlite3_file* file) { real(file)->pMethods->xShmBarrier(real(file)); }
int wal_shm_unmap(sqlite3_file* file, int remove) { return real(file)->pMethods->xShmUnmap(real(file), remove); }
int wal_fetch(sqlite3_file* file, sqlite3_int64 offset, int amount, void** out) {
  if (int rc = flush(wal(file)); rc != SQLITE_OK) return rc;
  return real(file)->pMethods->xFetch(real(file), offset, amount, out);
}
int wal_unfetch(sqlite3_file* file, sqlite3_int64 offset, void* p) {
  return real(file)->pMethods->xUnfetch(real(file), offset, p);
}

const sqlite3_io_methods kWalMethods = {
    3,
    wal_close,
    wal_read,
    wal_write,
    wal_truncate,
    wal_sync,
    wal_file_size,
    wal_lock,
    wal_unlock,
    wal_check_reserved_lock,
    wal_file_control,
    wal_sector_size,
    wal_device_characteristics,
    wal_shm_map,
    wal_shm_lock,
    wal_shm_barrier,
    wal_shm_unmap,
    wal_fetch,
    wal_unfetch,
};

int vfs_open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  file->pMethods = nullptr;
  if ((flags & SQLITE_OPEN_WAL) == 0) return g_root->xOpen(g_root, name, file, flags, out_flags);
  auto* f = wal(file);
  auto* inner = reinterpret_cast<sqlite3_file*>(reinterpret_cast<unsigned char*>(file) + kRealOffset);
  int rc = g_root->xOpen(g_root, name, inner, flags, out_flags);
  if (rc != SQLITE_OK) return rc;
  if (inner->pMethods == nullptr || inner->pMethods->iVersion < 3) {
    // Not a file this VFS knows how to wrap: SQLite uses it as it is, after closing the copy.
    if (inner->pMethods != nullptr) inner->pMethods->xClose(inner);
    return g_root->xOpen(g_root, name, file, flags, out_flags);
  }
  f->pending = new (std::nothrow) std::vector<unsigned char>();
  if (f->pending == nullptr) {
    inner->pMethods->xClose(inner);
    return SQLITE_NOMEM;
  }
  f->real = inner;
  f->pending_offset = 0;
  f->commit_header = false;
  file->pMethods = &kWalMethods;
  return SQLITE_OK;
}

}  // namespace

const char* wal_buffering_vfs() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_root = sqlite3_vfs_find(nullptr);
    g_vfs = *g_root;
    g_vfs.pNext = nullptr;
    g_vfs.zName = kVfsName;
    g_vfs.szOsFile = static_cast<int>(kRealOffset) + g_root->szOsFile;
    g_vfs.xOpen = vfs_open;
    asked_writes();
    made_writes();
    sqlite3_vfs_register(&g_vfs, 0);
  });
  return kVfsName;
}

}  // namespace sika::store::detail
