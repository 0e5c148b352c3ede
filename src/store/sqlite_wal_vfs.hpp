#pragma once
// A SQLite VFS for the writer connection that hands each transaction's WAL frames to the kernel
// in one write instead of two per page.
//
// SQLite writes a WAL frame as two pwrite calls (its 24-byte header, then the page) and a group
// commit of a few dozen payments writes a hundred or more frames, each a system call on the
// writer thread. Through this VFS, writes that extend the WAL contiguously are gathered in memory
// (a write inside the gathered bytes, SQLite writing a frame of the same transaction again,
// overwrites them there; one entirely outside them goes to the kernel at once) and written:
//  - when the frame that commits a transaction has been written (so a commit is in the file
//    before SQLite publishes it in the WAL index, whatever the synchronous setting),
//  - before any read, sync, truncate, size query or close of the WAL file,
//  - before a write that overlaps the gathered bytes only in part, and
//  - when 8 MiB are waiting.
// Every other file (the database, its shared-memory index, temporary files) is the default VFS's
// own file, untouched. A crash loses only frames of a transaction that had not committed yet,
// which SQLite's recovery ignores in any case.
namespace sika::store::detail {

// Registers the VFS (once, thread-safe) and returns its name for sqlite3_open_v2.
const char* wal_buffering_vfs();

}  // namespace sika::store::detail
