// A preloaded library for Cellar's power-loss tests: it records every write and sync a process makes to files named
// data.mdb, in order, so that a test can build the files a power cut could have left at any moment.
//
//   CELLAR_CRASH_LOG=<log file> LD_PRELOAD=<this library> <program>
//
// Each record of the log is a byte saying what happened, then little-endian 64-bit numbers:
//   'W' offset length <length bytes>  a write of data.mdb, as the kernel took it (not yet on the disk)
//   'D' offset length <length bytes>  a write through a descriptor opened with O_DSYNC or O_SYNC: on the disk when
//                                     the call returned
//   'S'                               fsync or fdatasync of data.mdb: what was written is on the disk (Cellar maps
//                                     the file without MDB_WRITEMAP, so LMDB writes it only through these calls)
//   'T' length                        ftruncate of data.mdb
//   'A' number                        the program says: transaction <number> returned from its commit (it writes
//                                     the number, as text, to a file whose name ends in ".acknowledged")
// Writes that fail are not recorded. Calls are serialized by a lock, so the log's order is the order the calls
// returned in.
#define _GNU_SOURCE
// Fortified headers define open() inline, which would clash with the definitions below.
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { MAX_FDS = 4096 };
enum Kind { OTHER = 0, DATA = 1, DATA_SYNC = 2, ACK = 3 };
static unsigned char kinds[MAX_FDS];
static int log_fd = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name)

static int ends_with(const char *text, const char *suffix) {
    size_t a = strlen(text), b = strlen(suffix);
    return a >= b && strcmp(text + a - b, suffix) == 0;
}

static void raw_write(const void *bytes, size_t count) {
    REAL(write);
    const char *p = bytes;
    while (count > 0) {
        ssize_t n = real_write(log_fd, p, count);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) abort();  // a log with a hole would make every state after it a lie
        p += n;
        count -= (size_t)n;
    }
}

static void record(char op, uint64_t a, uint64_t b, const struct iovec *iov, int iovcnt) {
    if (log_fd < 0) {
        const char *path = getenv("CELLAR_CRASH_LOG");
        if (!path) return;
        REAL(open);
        log_fd = real_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) abort();
    }
    raw_write(&op, 1);
    if (op != 'S') raw_write(&a, 8);
    if (op == 'W' || op == 'D') {
        raw_write(&b, 8);
        uint64_t left = b;
        for (int i = 0; i < iovcnt && left > 0; i++) {
            size_t n = iov[i].iov_len < left ? iov[i].iov_len : (size_t)left;
            raw_write(iov[i].iov_base, n);
            left -= n;
        }
    }
}

static void track(int fd, const char *path, int flags) {
    if (fd < 0 || fd >= MAX_FDS || !path) return;
    if (ends_with(path, "/data.mdb") || strcmp(path, "data.mdb") == 0) {
        kinds[fd] = (flags & (O_DSYNC | O_SYNC)) ? DATA_SYNC : DATA;
    } else if (ends_with(path, ".acknowledged")) {
        kinds[fd] = ACK;
    } else {
        kinds[fd] = OTHER;
    }
}

static int kind(int fd) { return fd >= 0 && fd < MAX_FDS ? kinds[fd] : OTHER; }

static void wrote(int fd, uint64_t offset, ssize_t done, const struct iovec *iov, int iovcnt) {
    if (done <= 0) return;
    int k = kind(fd);
    if (k == DATA || k == DATA_SYNC) record(k == DATA ? 'W' : 'D', offset, (uint64_t)done, iov, iovcnt);
}

// The mode argument is there only with O_CREAT or O_TMPFILE (whose bits include O_DIRECTORY's).
static mode_t mode_of(int flags, va_list args) {
    return ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? (mode_t)va_arg(args, int) : 0;
}

int open(const char *path, int flags, ...) {
    va_list args; va_start(args, flags); mode_t mode = mode_of(flags, args); va_end(args);
    REAL(open);
    int fd = real_open(path, flags, mode);
    pthread_mutex_lock(&lock); track(fd, path, flags); pthread_mutex_unlock(&lock);
    return fd;
}

int open64(const char *path, int flags, ...) {
    va_list args; va_start(args, flags); mode_t mode = mode_of(flags, args); va_end(args);
    REAL(open64);
    int fd = real_open64(path, flags, mode);
    pthread_mutex_lock(&lock); track(fd, path, flags); pthread_mutex_unlock(&lock);
    return fd;
}

int openat(int dir, const char *path, int flags, ...) {
    va_list args; va_start(args, flags); mode_t mode = mode_of(flags, args); va_end(args);
    REAL(openat);
    int fd = real_openat(dir, path, flags, mode);
    pthread_mutex_lock(&lock); track(fd, path, flags); pthread_mutex_unlock(&lock);
    return fd;
}

int openat64(int dir, const char *path, int flags, ...) {
    va_list args; va_start(args, flags); mode_t mode = mode_of(flags, args); va_end(args);
    REAL(openat64);
    int fd = real_openat64(dir, path, flags, mode);
    pthread_mutex_lock(&lock); track(fd, path, flags); pthread_mutex_unlock(&lock);
    return fd;
}

int close(int fd) {
    REAL(close);
    pthread_mutex_lock(&lock);
    if (fd >= 0 && fd < MAX_FDS) kinds[fd] = OTHER;
    int result = real_close(fd);
    pthread_mutex_unlock(&lock);
    return result;
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite);
    pthread_mutex_lock(&lock);
    ssize_t done = real_pwrite(fd, buf, count, offset);
    struct iovec iov = {(void *)buf, count};
    wrote(fd, (uint64_t)offset, done, &iov, 1);
    pthread_mutex_unlock(&lock);
    return done;
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    REAL(pwrite64);
    pthread_mutex_lock(&lock);
    ssize_t done = real_pwrite64(fd, buf, count, offset);
    struct iovec iov = {(void *)buf, count};
    wrote(fd, (uint64_t)offset, done, &iov, 1);
    pthread_mutex_unlock(&lock);
    return done;
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    REAL(pwritev);
    pthread_mutex_lock(&lock);
    ssize_t done = real_pwritev(fd, iov, iovcnt, offset);
    wrote(fd, (uint64_t)offset, done, iov, iovcnt);
    pthread_mutex_unlock(&lock);
    return done;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    REAL(pwritev64);
    pthread_mutex_lock(&lock);
    ssize_t done = real_pwritev64(fd, iov, iovcnt, offset);
    wrote(fd, (uint64_t)offset, done, iov, iovcnt);
    pthread_mutex_unlock(&lock);
    return done;
}

ssize_t write(int fd, const void *buf, size_t count) {
    REAL(write);
    REAL(lseek);
    pthread_mutex_lock(&lock);
    int k = kind(fd);
    off_t offset = (k == DATA || k == DATA_SYNC) ? real_lseek(fd, 0, SEEK_CUR) : 0;
    ssize_t done = real_write(fd, buf, count);
    if (k == ACK && done > 0) {
        char text[32] = {0};
        memcpy(text, buf, (size_t)done < sizeof text - 1 ? (size_t)done : sizeof text - 1);
        record('A', strtoull(text, NULL, 10), 0, NULL, 0);
    } else {
        struct iovec iov = {(void *)buf, count};
        wrote(fd, (uint64_t)offset, done, &iov, 1);
    }
    pthread_mutex_unlock(&lock);
    return done;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    REAL(writev);
    REAL(lseek);
    pthread_mutex_lock(&lock);
    int k = kind(fd);
    off_t offset = (k == DATA || k == DATA_SYNC) ? real_lseek(fd, 0, SEEK_CUR) : 0;
    ssize_t done = real_writev(fd, iov, iovcnt);
    wrote(fd, (uint64_t)offset, done, iov, iovcnt);
    pthread_mutex_unlock(&lock);
    return done;
}

static int synced(int fd, int result) {
    int k = kind(fd);
    if (result == 0 && (k == DATA || k == DATA_SYNC)) record('S', 0, 0, NULL, 0);
    return result;
}

int fsync(int fd) {
    REAL(fsync);
    pthread_mutex_lock(&lock);
    int result = synced(fd, real_fsync(fd));
    pthread_mutex_unlock(&lock);
    return result;
}

int fdatasync(int fd) {
    REAL(fdatasync);
    pthread_mutex_lock(&lock);
    int result = synced(fd, real_fdatasync(fd));
    pthread_mutex_unlock(&lock);
    return result;
}

int ftruncate(int fd, off_t length) {
    REAL(ftruncate);
    pthread_mutex_lock(&lock);
    int result = real_ftruncate(fd, length);
    if (result == 0 && (kind(fd) == DATA || kind(fd) == DATA_SYNC)) record('T', (uint64_t)length, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}

int ftruncate64(int fd, off_t length) {
    REAL(ftruncate64);
    pthread_mutex_lock(&lock);
    int result = real_ftruncate64(fd, length);
    if (result == 0 && (kind(fd) == DATA || kind(fd) == DATA_SYNC)) record('T', (uint64_t)length, 0, NULL, 0);
    pthread_mutex_unlock(&lock);
    return result;
}
