/* The supervisor's hot loop in C: receive a stopped syscall, read and resolve its path,
 * answer the ones whose before-image is already held (or that change nothing), link a
 * removed file into the store's trash, and hand everything else to Python.
 *
 * Built on first use into the user's cache (preimage/observe/compiled.py) and loaded with
 * ctypes; the Python loop (supervisor.py, judge.py, recorder.py) is the reference and the
 * fallback.  Every decision here is one the Python path makes the same way; whatever this
 * file is not sure of — a symlink on the way, another mount namespace, a /proc path, a
 * non-ASCII name, a path not yet recorded, any error — is handed to Python ("punted"), so
 * the compiled loop can only ever do less than the Python one, never something else.
 *
 * What it keeps: the recorder's sets of recorded trees and directory entries (Python adds
 * to them through fl_add), the trash folder, its journal descriptor and the next entry
 * number.  What it answers itself:
 *   - a path at or below a recorded tree, or ignored (the store, /proc, /sys, /dev, the
 *     session's own folders): let through, nothing to record;
 *   - a syscall that fails without changing anything (unlink of a missing name, mkdir of an
 *     existing one, rmdir of a non-empty directory, chmod of a missing file);
 *   - a directory whose entry is already recorded (utimensat of a directory, rmdir);
 *   - unlink of a regular file with one link on the trash's file system, whose directory's
 *     entry is recorded: link(2) into the trash, one journal line, then let through.
 * Paths are resolved as the kernel resolves them: the directory of a dirfd or of the cwd is
 * the kernel's own name for it (/proc/PID/fd/N, /proc/PID/cwd), and each component written
 * in the path is looked at with lstat; a symlink anywhere is left to Python.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FL_ABI 1
#define PATHBUF 8192
#define PAGE 4096
#define PMAX 4096

enum { FL_TIMEOUT = 0, FL_PUNT = 1, FL_FD = 2, FL_HUP = 3, FL_INTR = 4, FL_ERROR = 5 };
enum { ALLOW = 0, PUNT = 1, GONE = 2 };

/* ------------------------------------------------------------------ a set of strings */
typedef struct {
    char **slots;
    size_t cap, used;
} strset;

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int set_has(const strset *t, const char *s, size_t n) {
    if (!t->cap) return 0;
    size_t i = hash(s, n) & (t->cap - 1);
    for (;;) {
        const char *e = t->slots[i];
        if (!e) return 0;
        if (strncmp(e, s, n) == 0 && e[n] == 0) return 1;
        i = (i + 1) & (t->cap - 1);
    }
}

static int set_put_owned(strset *t, char *s) {
    if ((t->used + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        char **ns = calloc(ncap, sizeof(char *));
        if (!ns) return -1;
        for (size_t k = 0; k < t->cap; k++) {
            char *e = t->slots[k];
            if (!e) continue;
            size_t i = hash(e, strlen(e)) & (ncap - 1);
            while (ns[i]) i = (i + 1) & (ncap - 1);
            ns[i] = e;
        }
        free(t->slots);
        t->slots = ns;
        t->cap = ncap;
    }
    size_t n = strlen(s);
    size_t i = hash(s, n) & (t->cap - 1);
    while (t->slots[i]) {
        if (strcmp(t->slots[i], s) == 0) {
            free(s);
            return 0;
        }
        i = (i + 1) & (t->cap - 1);
    }
    t->slots[i] = s;
    t->used++;
    return 0;
}

static void set_clear(strset *t) {
    for (size_t k = 0; k < t->cap; k++) free(t->slots[k]);
    free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}

/* ------------------------------------------------------------------ state */
typedef struct {
    int listener;
    strset trees, entries;
    char *home;            /* the store's home, realpath */
    char **ignore;         /* more ignored paths (session mode) */
    int nignore;
    long long max_file_size;   /* -1: no cap */
    char ns_mnt[256];      /* our own mount namespace, as /proc/self/ns/mnt names it */
    /* the trash (set once Python opened it) */
    char *trash;
    int journal;
    dev_t trash_dev;
    long long next_n;
    /* links made since Python last took them: NUL-separated original paths */
    char *linked;
    size_t linked_len, linked_cap;
    long long answered;    /* syscalls answered here */
    long long made;        /* links made here */
} fl_state;

struct fl_result {
    int status;
    int fd;                /* FL_FD: the extra descriptor that is ready */
    int err;               /* FL_ERROR: errno */
    int pad;
    unsigned char notif[80];   /* FL_PUNT: the struct seccomp_notif to answer in Python */
};

int fl_abi(void) { return FL_ABI; }

void *fl_new(int listener, const char *home, const char *const *ignore, int nignore,
             long long max_file_size) {
    fl_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->listener = listener;
    s->home = strdup(home);
    s->ignore = calloc(nignore > 0 ? nignore : 1, sizeof(char *));
    for (int i = 0; i < nignore; i++) s->ignore[i] = strdup(ignore[i]);
    s->nignore = nignore;
    s->max_file_size = max_file_size;
    s->journal = -1;
    ssize_t n = readlink("/proc/self/ns/mnt", s->ns_mnt, sizeof s->ns_mnt - 1);
    s->ns_mnt[n > 0 ? n : 0] = 0;
    return s;
}

void fl_reset(fl_state *s, const char *home, const char *const *ignore, int nignore,
              long long max_file_size) {
    if (home) {
        free(s->home);
        s->home = strdup(home);
    }
    set_clear(&s->trees);
    set_clear(&s->entries);
    for (int i = 0; i < s->nignore; i++) free(s->ignore[i]);
    free(s->ignore);
    s->ignore = calloc(nignore > 0 ? nignore : 1, sizeof(char *));
    for (int i = 0; i < nignore; i++) s->ignore[i] = strdup(ignore[i]);
    s->nignore = nignore;
    s->max_file_size = max_file_size;
    free(s->trash);
    s->trash = NULL;
    s->journal = -1;
    s->linked_len = 0;
}

void fl_free(fl_state *s) {
    if (!s) return;
    fl_reset(s, NULL, NULL, 0, -1);
    free(s->ignore);
    free(s->home);
    free(s->linked);
    free(s);
}

int fl_add(fl_state *s, int entry, const char *path) {
    char *copy = strdup(path);
    if (!copy) return -1;
    return set_put_owned(entry ? &s->entries : &s->trees, copy);
}

int fl_set_trash(fl_state *s, const char *folder, int journal, unsigned long long dev,
                 long long next_n) {
    if (!s->trash || strcmp(s->trash, folder) != 0) {
        free(s->trash);
        s->trash = strdup(folder);
    }
    s->journal = journal;
    s->trash_dev = (dev_t)dev;
    s->next_n = next_n;
    return 0;
}

/* The links made since the last call: NUL-separated paths; *count of them. */
const char *fl_take_links(fl_state *s, long long *len) {
    *len = (long long)s->linked_len;
    s->linked_len = 0;
    return s->linked;
}

long long fl_answered(fl_state *s) { return s->answered; }

/* ------------------------------------------------------------------ what is covered */
static int starts(const char *p, const char *prefix) {
    return strncmp(p, prefix, strlen(prefix)) == 0;
}

static int under(const char *p, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;   /* Python strips a trailing slash */
    return strncmp(p, dir, n) == 0 && p[n] == '/';
}

static int same(const char *p, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    return strncmp(p, dir, n) == 0 && p[n] == 0;
}

static int ignored(const fl_state *s, const char *p) {
    if (strcmp(p, s->home) == 0 || starts(p, "/proc/") || starts(p, "/sys/") ||
        starts(p, "/dev/") || under(p, s->home))
        return 1;
    for (int i = 0; i < s->nignore; i++)
        if (same(p, s->ignore[i]) || under(p, s->ignore[i])) return 1;
    return 0;
}

static int covered(const fl_state *s, const char *p) {
    size_t n = strlen(p);
    for (;;) {
        if (set_has(&s->trees, p, n)) return 1;
        if (n <= 1) return 0;   /* "/" checked */
        while (n > 0 && p[n - 1] != '/') n--;   /* dirname */
        if (n > 1) n--;   /* drop the slash, except the root's */
    }
}

static void dirname_of(const char *p, char *out) {
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : 0;
    if (n == 0) n = 1;   /* "/x" -> "/" */
    memcpy(out, p, n);
    out[n] = 0;
}

/* an entry Python would not record again (Recorder.entry returns at once) */
static int entry_held(const fl_state *s, const char *p) {
    return set_has(&s->entries, p, strlen(p)) || ignored(s, p) || covered(s, p);
}

/* ------------------------------------------------------------------ reading the process */
static int read_string(pid_t pid, uint64_t addr, char *out) {
    if (!addr) return -1;
    size_t got = 0;
    while (got <= PMAX) {
        size_t size = PAGE - (addr + got) % PAGE;
        if (got + size > PMAX + 1) size = PMAX + 1 - got;
        if (size == 0) return -1;
        struct iovec local = {out + got, size}, remote = {(void *)(uintptr_t)(addr + got), size};
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) return -1;
        void *end = memchr(out + got, 0, (size_t)n);
        if (end) return 0;
        got += (size_t)n;
    }
    return -1;
}

/* 1: pid sees the supervisor's mounts from the supervisor's root (its paths are ours);
 * 0: another mount namespace or root (a sandbox: paths_of resolves them inside
 * /proc/<pid>/root, as paths.resolve does); -1: the links cannot be read (PUNT: Python
 * says why).  Read on every syscall: a process may unshare, setns or chroot at any time. */
static int own_namespace(const fl_state *s, pid_t pid) {
    char link[64], got[256];
    snprintf(link, sizeof link, "/proc/%d/ns/mnt", pid);
    ssize_t n = readlink(link, got, sizeof got - 1);
    if (n <= 0) return -1;
    got[n] = 0;
    int same = strcmp(got, s->ns_mnt) == 0;
    snprintf(link, sizeof link, "/proc/%d/root", pid);
    n = readlink(link, got, sizeof got - 1);
    if (n <= 0) return -1;
    return same && n == 1 && got[0] == '/';
}

/* what descriptor fd (AT_FDCWD: the cwd) of pid names; -1 when it cannot be read */
static int fd_path(pid_t pid, int64_t reg, char *out) {
    int fd = (int)(int32_t)(reg & 0xFFFFFFFF);
    char link[64];
    if (fd == AT_FDCWD)
        snprintf(link, sizeof link, "/proc/%d/cwd", pid);
    else
        snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, fd);
    ssize_t n = readlink(link, out, PATHBUF - 1);
    if (n <= 0) return -1;
    out[n] = 0;
    return 0;
}

static int ends_with(const char *p, const char *suffix) {
    size_t a = strlen(p), b = strlen(suffix);
    return a >= b && strcmp(p + a - b, suffix) == 0;
}

/* Resolve `text` against `base` (already the kernel's name for a directory) the way
 * os.path.realpath does for the components written in `text` (realpath_under inside
 * `root` when it is not NULL: every component is looked at as root + path); the last one
 * is looked at only when `follow`.  PUNT on a symlink, "..", "." or an empty last name,
 * or overflow. */
static int walk(const char *root, const char *base, const char *text, int follow, char *out) {
    size_t len;
    if (text[0] == '/') {
        out[0] = 0;
        len = 0;
    } else {
        len = strlen(base);
        if (len >= PATHBUF) return PUNT;
        memcpy(out, base, len + 1);
        if (len == 1) len = 0, out[0] = 0;   /* "/" */
    }
    /* the last name, without trailing slashes (rstrip("/") as Python does) */
    size_t tlen = strlen(text);
    while (tlen > 0 && text[tlen - 1] == '/') tlen--;
    size_t i = 0;
    while (i < tlen) {
        while (i < tlen && text[i] == '/') i++;
        if (i >= tlen) break;
        size_t j = i;
        while (j < tlen && text[j] != '/') j++;
        size_t n = j - i;
        int last = j >= tlen;
        if (n == 1 && text[i] == '.') {
            if (last && !follow) return PUNT;
            i = j;
            continue;
        }
        if (n == 2 && text[i] == '.' && text[i + 1] == '.') return PUNT;
        if (len + 1 + n >= PATHBUF) return PUNT;
        out[len] = '/';
        memcpy(out + len + 1, text + i, n);
        len += 1 + n;
        out[len] = 0;
        if (!last || follow) {
            struct stat st;
            static char seen[PATHBUF + 64];
            const char *at = out;
            if (root) {
                if ((size_t)snprintf(seen, sizeof seen, "%s%s", root, out) >= sizeof seen)
                    return PUNT;
                at = seen;
            }
            if (lstat(at, &st) == 0 && S_ISLNK(st.st_mode)) return PUNT;
        }
        i = j;
    }
    if (len == 0) return PUNT;   /* "/" or the base itself: left to Python */
    return ALLOW;
}

/* A sandboxed process's path `p` (as it sees it) is ours only where its parent is the
 * very directory we reach at the same path, and what it names, when it exists there, the
 * very file here (a file bound over another shares the directory): paths.resolve raises
 * ForeignPath otherwise, which Python records as uncaptured, saying why.  The pseudo file
 * systems Python returns unchecked are left to it. */
static int same_place(const char *root, const char *p) {
    if (starts(p, "/dev/") || starts(p, "/proc/") || starts(p, "/sys/")) return PUNT;
    char dir[PATHBUF];
    static char theirs[PATHBUF + 64];
    dirname_of(p, dir);
    if ((size_t)snprintf(theirs, sizeof theirs, "%s%s", root, dir) >= sizeof theirs)
        return PUNT;
    struct stat a, b;
    if (stat(theirs, &a) != 0 || stat(dir, &b) != 0) return PUNT;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return PUNT;
    if ((size_t)snprintf(theirs, sizeof theirs, "%s%s", root, p) >= sizeof theirs)
        return PUNT;
    if (lstat(theirs, &a) != 0) return (errno == ENOENT || errno == ENOTDIR) ? ALLOW : PUNT;
    if (lstat(p, &b) != 0) return PUNT;
    return (a.st_dev == b.st_dev && a.st_ino == b.st_ino) ? ALLOW : PUNT;
}

static int path_of(const fl_state *s, pid_t pid, const uint64_t *args, int arg, int dirfd,
                   int follow, char *out) {
    static char text[PMAX + 2], base[PATHBUF];
    char root[64];
    int own = own_namespace(s, pid);
    if (own < 0) return PUNT;
    if (!own) snprintf(root, sizeof root, "/proc/%d/root", pid);
    if (read_string(pid, args[arg], text) != 0) return PUNT;
    if (!text[0]) return PUNT;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (*c >= 0x80) return PUNT;   /* the journal and Python's decoding: left to Python */
    if (starts(text, "/proc")) return PUNT;
    if (text[0] != '/') {
        if (fd_path(pid, dirfd < 0 ? (int64_t)AT_FDCWD : (int64_t)args[dirfd], base) != 0)
            return PUNT;
        if (base[0] != '/' || ends_with(base, " (deleted)")) return PUNT;
        for (const unsigned char *c = (const unsigned char *)base; *c; c++)
            if (*c >= 0x80) return PUNT;
    }
    if (!own && text[0] != '/') {
        /* realpath_under looks at the base's components too (inside the sandbox's root
         * they are not the kernel's name for the directory): walk base + text whole */
        static char inside[PATHBUF + PMAX + 2];
        int m = snprintf(inside, sizeof inside, "%s/%s", base[1] ? base : "", text);
        if (m <= 0 || (size_t)m >= sizeof inside) return PUNT;
        if (walk(root, "/", inside, follow, out) != ALLOW) return PUNT;
    } else if (walk(own ? NULL : root, base, text, follow, out) != ALLOW) {
        return PUNT;
    }
    if (starts(out, "/proc")) return PUNT;
    if (!own && same_place(root, out) != ALLOW) return PUNT;
    return ALLOW;
}

/* ------------------------------------------------------------------ decisions */
/* object(): its content or metadata is about to change */
static int object(const fl_state *s, const char *p) {
    if (ignored(s, p) || covered(s, p)) return ALLOW;
    struct stat st;
    if (lstat(p, &st) != 0) return errno == ENOENT ? ALLOW : PUNT;
    if (S_ISDIR(st.st_mode)) return set_has(&s->entries, p, strlen(p)) ? ALLOW : PUNT;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode) ||
        S_ISSOCK(st.st_mode))
        return ALLOW;
    return PUNT;
}

static int fd_object(const fl_state *s, pid_t pid, uint64_t reg) {
    static char where[PATHBUF];
    if (fd_path(pid, (int64_t)reg, where) != 0) return PUNT;
    if (where[0] != '/' || ends_with(where, " (deleted)")) return ALLOW;
    for (const unsigned char *c = (const unsigned char *)where; *c; c++)
        if (*c >= 0x80) return PUNT;
    if (starts(where, "/proc")) return PUNT;
    /* a sandboxed process's name for the file: ours only when it is the very file the
     * descriptor is open on (paths.fd_file: else ForeignPath, left to Python) */
    int own = own_namespace(s, pid);
    if (own < 0) return PUNT;
    if (!own && !starts(where, "/dev/") && !starts(where, "/sys/")) {
        int fd = (int)(int32_t)(reg & 0xFFFFFFFF);
        char link[64];
        if (fd == AT_FDCWD)
            snprintf(link, sizeof link, "/proc/%d/cwd", pid);
        else
            snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, fd);
        struct stat a, b;
        if (stat(link, &a) != 0 || lstat(where, &b) != 0) return PUNT;
        if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return PUNT;
    }
    return object(s, where);
}

static int valid(const fl_state *s, uint64_t id) {
    return ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static void quote_into(const char *p, char *out) {
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)p; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '_' || *c == '.' || *c == '-' || *c == '~' || *c == '/') {
            out[k++] = (char)*c;
        } else {
            out[k++] = '%';
            out[k++] = hex[*c >> 4];
            out[k++] = hex[*c & 15];
        }
    }
    out[k] = 0;
}

static int keep_link(fl_state *s, const char *p) {
    size_t n = strlen(p) + 1;
    if (s->linked_len + n > s->linked_cap) {
        size_t cap = s->linked_cap ? s->linked_cap * 2 : 65536;
        while (cap < s->linked_len + n) cap *= 2;
        char *grown = realloc(s->linked, cap);
        if (!grown) return -1;
        s->linked = grown;
        s->linked_cap = cap;
    }
    memcpy(s->linked + s->linked_len, p, n);
    s->linked_len += n;
    return 0;
}

/* unlink of p: Recorder.name(p, dropped=True) when it can end in a link */
static int dropped(fl_state *s, const char *p, uint64_t id) {
    if (ignored(s, p) || covered(s, p)) return ALLOW;
    struct stat st;
    if (lstat(p, &st) != 0) return errno == ENOENT ? ALLOW : PUNT;
    char dir[PATHBUF];
    dirname_of(p, dir);
    if (!entry_held(s, dir)) return PUNT;
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1) return PUNT;
    if (s->max_file_size >= 0 && st.st_size > s->max_file_size) return PUNT;
    if (!s->trash || s->journal < 0 || st.st_dev != s->trash_dev) return PUNT;
    /* access also fails on a read-only mount (EROFS): Python then records nothing */
    if (access(dir, W_OK | X_OK) != 0) return PUNT;
    if (!valid(s, id)) return GONE;
    static char stored[PATHBUF], line[3 * PATHBUF + 96], quoted[3 * PATHBUF];
    if ((size_t)snprintf(stored, sizeof stored, "%s/%lld", s->trash, s->next_n) >= sizeof stored)
        return PUNT;
    if (link(p, stored) != 0) return PUNT;
    quote_into(p, quoted);
    int m = snprintf(line, sizeof line, "%lld\t%s\t%lld\t%lld\n", s->next_n, quoted,
                     (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
    if (m <= 0 || (size_t)m >= sizeof line || write(s->journal, line, (size_t)m) != m ||
        keep_link(s, p) != 0) {
        unlink(stored);   /* Python tries again with the same number, and says why */
        return PUNT;
    }
    s->next_n++;
    s->made++;
    fl_add(s, 0, p);
    return ALLOW;
}

/* a name only created (mkdir, mknod, symlink): where something exists it fails */
static int created(const fl_state *s, const char *p) {
    if (ignored(s, p) || covered(s, p)) return ALLOW;
    struct stat st;
    if (lstat(p, &st) == 0) return ALLOW;
    return PUNT;
}

static int removed_dir(const fl_state *s, const char *p) {
    if (ignored(s, p) || covered(s, p)) return ALLOW;
    char dir[PATHBUF];
    dirname_of(p, dir);
    if (entry_held(s, dir) && set_has(&s->entries, p, strlen(p))) return ALLOW;
    DIR *d = opendir(p);
    if (!d) return PUNT;
    struct dirent *e;
    int full = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            full = 1;
            break;
        }
    }
    closedir(d);
    return full ? ALLOW : PUNT;   /* not empty: rmdir fails with ENOTEMPTY */
}

#define O_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)
#define TMPFILE_BIT 020000000

static int opened(const fl_state *s, pid_t pid, const uint64_t *a, int arg, int dirfd,
                  uint64_t flags) {
    static char p[PATHBUF];
    if (!(flags & O_WRITE_FLAGS) || (flags & TMPFILE_BIT)) return ALLOW;
    if (path_of(s, pid, a, arg, dirfd, !(flags & O_NOFOLLOW), p) != ALLOW) return PUNT;
    if (ignored(s, p) || covered(s, p)) return ALLOW;
    struct stat st;
    if (lstat(p, &st) != 0) {
        if (errno != ENOENT) return PUNT;
        return (flags & O_CREAT) ? PUNT : ALLOW;
    }
    if (S_ISLNK(st.st_mode)) return ALLOW;   /* O_NOFOLLOW on a symlink: ELOOP */
    if (flags & (O_WRONLY | O_RDWR | O_TRUNC)) return object(s, p);
    return ALLOW;   /* O_CREAT alone on a file that exists */
}

static int meta_path(const fl_state *s, pid_t pid, const uint64_t *a, int arg, int dirfd,
                     int follow) {
    static char p[PATHBUF];
    if (path_of(s, pid, a, arg, dirfd, follow, p) != ALLOW) return PUNT;
    return object(s, p);
}

/* fchmodat2, fchownat, utimensat, setxattrat, removexattrat: a path, or the descriptor */
static int meta_at(const fl_state *s, pid_t pid, const uint64_t *a, int flags_arg) {
    uint32_t flags = (uint32_t)a[flags_arg];
    if (!a[1]) return fd_object(s, pid, a[0]);
    if (flags & AT_EMPTY_PATH) return PUNT;   /* an empty path or not: Python reads it */
    return meta_path(s, pid, a, 1, 0, !(flags & AT_SYMLINK_NOFOLLOW));
}

static int renamed(const fl_state *s, pid_t pid, const uint64_t *a, int src, int sdir,
                   int dst, int ddir) {
    static char from[PATHBUF], to[PATHBUF];
    if (path_of(s, pid, a, src, sdir, 0, from) != ALLOW) return PUNT;
    if (path_of(s, pid, a, dst, ddir, 0, to) != ALLOW) return PUNT;
    struct stat st;
    if (lstat(from, &st) != 0) return errno == ENOENT ? ALLOW : PUNT;
    if ((ignored(s, from) || covered(s, from)) && (ignored(s, to) || covered(s, to)))
        return ALLOW;
    return PUNT;
}

static int decide(fl_state *s, const struct seccomp_notif *n) {
    const uint64_t *a = (const uint64_t *)n->data.args;
    pid_t pid = (pid_t)n->pid;
    static char p[PATHBUF];
    int nr = n->data.nr;
    /* a descriptor names its file by the kernel's d_path: no path to read */
    switch (nr) {
    case SYS_ftruncate: case SYS_fallocate:
    case SYS_fchmod: case SYS_fchown: case SYS_fsetxattr: case SYS_fremovexattr:
        return fd_object(s, pid, a[0]);
    default:
        break;
    }
    switch (nr) {
    case SYS_open: return opened(s, pid, a, 0, -1, a[1]);
    case SYS_openat: return opened(s, pid, a, 1, 0, a[2]);
    case SYS_creat: return opened(s, pid, a, 0, -1, O_CREAT | O_WRONLY | O_TRUNC);
    case SYS_truncate: return meta_path(s, pid, a, 0, -1, 1);
    case SYS_unlink:
        if (path_of(s, pid, a, 0, -1, 0, p) != ALLOW) return PUNT;
        return dropped(s, p, n->id);
    case SYS_unlinkat:
        if (path_of(s, pid, a, 1, 0, 0, p) != ALLOW) return PUNT;
        return ((uint32_t)a[2] & AT_REMOVEDIR) ? removed_dir(s, p) : dropped(s, p, n->id);
    case SYS_rmdir:
        if (path_of(s, pid, a, 0, -1, 0, p) != ALLOW) return PUNT;
        return removed_dir(s, p);
    case SYS_mkdir: case SYS_mknod:
        if (path_of(s, pid, a, 0, -1, 0, p) != ALLOW) return PUNT;
        return created(s, p);
    case SYS_mkdirat: case SYS_mknodat:
        if (path_of(s, pid, a, 1, 0, 0, p) != ALLOW) return PUNT;
        return created(s, p);
    case SYS_symlink:
        if (path_of(s, pid, a, 1, -1, 0, p) != ALLOW) return PUNT;
        return created(s, p);
    case SYS_symlinkat:
        if (path_of(s, pid, a, 2, 1, 0, p) != ALLOW) return PUNT;
        return created(s, p);
    case SYS_rename: return renamed(s, pid, a, 0, -1, 1, -1);
    case SYS_renameat: return renamed(s, pid, a, 1, 0, 3, 2);
    case SYS_renameat2: return renamed(s, pid, a, 1, 0, 3, 2);
    case SYS_chmod: case SYS_chown: case SYS_utime: case SYS_utimes:
    case SYS_setxattr: case SYS_removexattr:
        return meta_path(s, pid, a, 0, -1, 1);
    case SYS_lchown: case SYS_lsetxattr: case SYS_lremovexattr:
        return meta_path(s, pid, a, 0, -1, 0);
    case SYS_fchmodat: case SYS_futimesat:
        return meta_path(s, pid, a, 1, 0, 1);
    case SYS_fchownat: return meta_at(s, pid, a, 4);
    case SYS_utimensat: return meta_at(s, pid, a, 3);
    default:
        return PUNT;   /* openat2, link, linkat, bind, the *xattrat calls, fchmodat2, …  */
    }
}

static int send_continue(fl_state *s, uint64_t id) {
    struct seccomp_notif_resp r = {.id = id, .val = 0, .error = 0,
                                   .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
    if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, &r) != 0 && errno != ENOENT) return -1;
    return 0;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Answer syscalls until one needs Python (FL_PUNT), an extra descriptor is readable
 * (FL_FD), no watched process is left (FL_HUP), timeout_ms passed (FL_TIMEOUT, -1: never),
 * a signal arrived (FL_INTR) or the listener failed (FL_ERROR). */
int fl_serve(fl_state *s, const int *fds, int nfds, int timeout_ms, struct fl_result *out) {
    struct pollfd p[16];
    if (nfds > 15) nfds = 15;
    p[0].fd = s->listener;
    p[0].events = POLLIN;
    for (int i = 0; i < nfds; i++) {
        p[i + 1].fd = fds[i];
        p[i + 1].events = POLLIN;
    }
    long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            wait = left > 0 ? (int)left : 0;
        }
        int r = poll(p, (nfds_t)(nfds + 1), wait);
        if (r < 0) {
            if (errno == EINTR) return out->status = FL_INTR;
            out->err = errno;
            return out->status = FL_ERROR;
        }
        if (r == 0) return out->status = FL_TIMEOUT;
        if (p[0].revents & POLLIN) {
            struct seccomp_notif n;
            memset(&n, 0, sizeof n);
            if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, &n) != 0) {
                if (errno != ENOENT && errno != EINTR) {
                    out->err = errno;
                    return out->status = FL_ERROR;
                }
            } else {
                int d = decide(s, &n);
                if (d == PUNT) {
                    memcpy(out->notif, &n, sizeof n < 80 ? sizeof n : 80);
                    return out->status = FL_PUNT;
                }
                if (d == ALLOW && send_continue(s, n.id) != 0) {
                    out->err = errno;
                    return out->status = FL_ERROR;
                }
                s->answered++;
            }
        } else if (p[0].revents & (POLLHUP | POLLERR)) {
            int other = 0;
            for (int i = 0; i < nfds; i++) other |= p[i + 1].revents;
            if (!other) return out->status = FL_HUP;
        }
        for (int i = 0; i < nfds; i++) {
            if (p[i + 1].revents) {
                out->fd = fds[i];
                return out->status = FL_FD;
            }
        }
    }
}
