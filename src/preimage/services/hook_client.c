/* The compiled hook client: what a harness runs before and after each tool call when a C
 * compiler was there at install time (see preimage/services/compiled_client.py).
 *
 *   hook-client-KEY PREIMAGE hook HARNESS [OPTION...]       payload on stdin
 *
 * It does what the Python client (hook_client.py) does on its fast paths, without starting
 * an interpreter: a post-call event with nothing to do is answered "{}" and logged; any
 * other call is sent to the user's decision service and its answer relayed.  Everything
 * else runs `PREIMAGE hook HARNESS OPTION...` (the Python client) with the same payload on
 * stdin: a session supervisor to tell, the service off, no runtime directory, help, an
 * environment this client cannot encode.  When the service was not reachable or died
 * holding the call, PREIMAGE_HOOK_FALLBACK tells the Python client so ("unavailable WHY",
 * "lost WHY"): it then decides in-process or gives the --on-failure answer exactly as if it
 * had met that itself, and never sends the call to the service a second time.  When even
 * that cannot be started, the call is refused (exit 2), never silently allowed.
 *
 * Every name here mirrors hook_client.py and wire.py; tests/layer/test_compiled_client.py
 * runs the same payloads through both clients and compares the answers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Set by the build (compiled_client.py): the parts of wire.installation() known when the
 * client is built, already JSON-escaped, and the path whose mtime completes it. */
#ifndef PI_PYTHON_JSON
#define PI_PYTHON_JSON ""
#endif
#ifndef PI_PACKAGE_JSON
#define PI_PACKAGE_JSON ""
#endif
#ifndef PI_STAMP_PATH
#define PI_STAMP_PATH ""
#endif

#define PROTOCOL 1
#define MAX_BODY (256u << 20)
#define CONNECT_MS 500
#define ACCEPT_MS 2000
#define ANSWER_MARGIN 30.0

extern char **environ;

/* ------------------------------------------------------------------ growing buffers */
typedef struct { char *p; size_t n, cap; } buf_t;

static void die_nomem(void);

static void put(buf_t *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) die_nomem();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void puts_(buf_t *b, const char *s) { put(b, s, strlen(s)); }
static void putf(buf_t *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* ------------------------------------------------------------------ the fallback */
static char **g_argv;          /* PREIMAGE hook HARNESS OPTION... */
static const char *g_socket;   /* the service's socket as this client computed it */
static const char *g_payload = "";
static size_t g_payload_n;

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Run the Python client with the payload on stdin and `said` (or nothing) in
 * PREIMAGE_HOOK_FALLBACK.  Returns only when it cannot: the call is then refused. */
static void fall_back(const char *said) {
    int fd = memfd_create("preimage-hook-payload", 0);
    if (fd < 0) {
        char tmpl[] = "/tmp/preimage-hook-XXXXXX";
        fd = mkstemp(tmpl);
        if (fd >= 0) unlink(tmpl);
    }
    if (fd >= 0) {
        write_all(fd, g_payload, g_payload_n);
        if (lseek(fd, 0, SEEK_SET) == 0 && dup2(fd, 0) == 0) {
            if (fd != 0) close(fd);
            if (said) setenv("PREIMAGE_HOOK_FALLBACK", said, 1);
            else unsetenv("PREIMAGE_HOOK_FALLBACK");
            /* so the Python client can tell a stale client (built for another
             * installation) from a service that is down */
            if (g_socket) setenv("PREIMAGE_HOOK_SOCKET", g_socket, 1);
            else unsetenv("PREIMAGE_HOOK_SOCKET");
            if (strchr(g_argv[0], '/')) execv(g_argv[0], g_argv);
            else execvp(g_argv[0], g_argv);
        }
    }
    int err = errno;
    dprintf(2, "preimage: cannot run the hook's Python client %s (%s); the call is refused, "
               "nothing was backed up — check that preimage is installed, or run "
               "`preimage install` again\n", g_argv[0], strerror(err));
    _exit(2);
}

static void die_nomem(void) {
    dprintf(2, "preimage: out of memory in the hook's client; the call is refused\n");
    _exit(2);
}

/* ------------------------------------------------------------------ JSON out */
/* One string as Python's json.dumps writes it (ASCII, \uXXXX), the bytes decoded as
 * os.environ decodes them: UTF-8, each undecodable byte as the surrogate U+DCxx. */
static void json_str(buf_t *b, const unsigned char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    puts_(b, "\"");
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        unsigned cp = 0, len = 0;
        if (c < 0x80) { cp = c; len = 1; }
        else if (c >= 0xC2 && c <= 0xDF) { cp = c & 0x1F; len = 2; }
        else if (c >= 0xE0 && c <= 0xEF) { cp = c & 0x0F; len = 3; }
        else if (c >= 0xF0 && c <= 0xF4) { cp = c & 0x07; len = 4; }
        int ok = len > 0 && i + len <= n;
        for (unsigned k = 1; ok && k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) ok = 0;
            else cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (ok && len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ok = 0;
        if (ok && len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ok = 0;
        if (!ok) { cp = 0xDC00 + c; len = 1; }
        i += len;
        char e[16];
        if (cp == '"') puts_(b, "\\\"");
        else if (cp == '\\') puts_(b, "\\\\");
        else if (cp == '\n') puts_(b, "\\n");
        else if (cp == '\r') puts_(b, "\\r");
        else if (cp == '\t') puts_(b, "\\t");
        else if (cp == '\b') puts_(b, "\\b");
        else if (cp == '\f') puts_(b, "\\f");
        else if (cp < 0x20 || cp > 0x7E) {
            if (cp == 0x7F) { put(b, "\x7f", 1); continue; }
            if (cp >= 0x10000) {
                unsigned v = cp - 0x10000, hi = 0xD800 + (v >> 10), lo = 0xDC00 + (v & 0x3FF);
                snprintf(e, sizeof e, "\\u%c%c%c%c\\u%c%c%c%c", hex[hi >> 12], hex[(hi >> 8) & 15],
                         hex[(hi >> 4) & 15], hex[hi & 15], hex[lo >> 12], hex[(lo >> 8) & 15],
                         hex[(lo >> 4) & 15], hex[lo & 15]);
            } else {
                snprintf(e, sizeof e, "\\u%c%c%c%c", hex[cp >> 12], hex[(cp >> 8) & 15],
                         hex[(cp >> 4) & 15], hex[cp & 15]);
            }
            puts_(b, e);
        } else {
            char ch = (char)cp;
            put(b, &ch, 1);
        }
    }
    puts_(b, "\"");
}
static void json_cstr(buf_t *b, const char *s) { json_str(b, (const unsigned char *)s, strlen(s)); }

/* ------------------------------------------------------------------ JSON in */
/* A reader for one JSON object's top level: the string and number members this client
 * needs; nested values are skipped.  Anything it does not follow makes it fail, and the
 * caller then takes the longer, Python way. */
typedef struct { const char *p, *end; } scan_t;

static void ws(scan_t *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void utf8(buf_t *out, unsigned cp) {
    char e[4];
    size_t n;
    if (cp < 0x80) { e[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { e[0] = (char)(0xC0 | (cp >> 6)); e[1] = (char)(0x80 | (cp & 63)); n = 2; }
    else if (cp < 0x10000) {
        e[0] = (char)(0xE0 | (cp >> 12)); e[1] = (char)(0x80 | ((cp >> 6) & 63));
        e[2] = (char)(0x80 | (cp & 63)); n = 3;
    } else {
        e[0] = (char)(0xF0 | (cp >> 18)); e[1] = (char)(0x80 | ((cp >> 12) & 63));
        e[2] = (char)(0x80 | ((cp >> 6) & 63)); e[3] = (char)(0x80 | (cp & 63)); n = 4;
    }
    put(out, e, n);
}

static int read_u4(scan_t *s, unsigned *v) {
    if (s->end - s->p < 4) return -1;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s->p[k]);
        if (h < 0) return -1;
        *v = (*v << 4) | (unsigned)h;
    }
    s->p += 4;
    return 0;
}

/* A string at s->p (the opening quote); decoded into `out` when given.  `plain` is
 * cleared when it held an escape or a byte outside printable ASCII. */
static int jstring(scan_t *s, buf_t *out, int *plain) {
    if (s->p >= s->end || *s->p != '"') return -1;
    s->p++;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p++;
        if (c == '"') return 0;
        if (c < 0x20) return -1;
        if (c != '\\') {
            if (c > 0x7E && plain) *plain = 0;
            if (out) put(out, &c, 1);
            continue;
        }
        if (plain) *plain = 0;
        if (s->p >= s->end) return -1;
        char e = *s->p++;
        unsigned cp;
        switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (read_u4(s, &cp)) return -1;
            if (cp >= 0xD800 && cp <= 0xDBFF && s->end - s->p >= 6 && s->p[0] == '\\'
                && s->p[1] == 'u') {
                scan_t peek = {s->p + 2, s->end};
                unsigned lo;
                if (read_u4(&peek, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    s->p = peek.p;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;   /* a lone surrogate */
            break;
        default: return -1;
        }
        if (out) utf8(out, cp);
    }
    return -1;
}

static int jvalue(scan_t *s, int depth);

static int jcontainer(scan_t *s, char open, char close, int depth) {
    if (depth > 512) return -1;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == close) { s->p++; return 0; }
    for (;;) {
        ws(s);
        if (open == '{') {
            if (jstring(s, NULL, NULL)) return -1;
            ws(s);
            if (s->p >= s->end || *s->p++ != ':') return -1;
            ws(s);
        }
        if (jvalue(s, depth + 1)) return -1;
        ws(s);
        if (s->p >= s->end) return -1;
        char c = *s->p++;
        if (c == close) return 0;
        if (c != ',') return -1;
    }
}

static int jvalue(scan_t *s, int depth) {
    if (s->p >= s->end) return -1;
    char c = *s->p;
    if (c == '"') return jstring(s, NULL, NULL);
    if (c == '{') return jcontainer(s, '{', '}', depth);
    if (c == '[') return jcontainer(s, '[', ']', depth);
    static const char *words[] = {"true", "false", "null", "NaN", "Infinity", "-Infinity"};
    for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
        size_t n = strlen(words[k]);
        if ((size_t)(s->end - s->p) >= n && memcmp(s->p, words[k], n) == 0) {
            s->p += n;
            return 0;
        }
    }
    const char *start = s->p;
    if (*s->p == '-') s->p++;
    while (s->p < s->end && strchr("0123456789+-.eE", *s->p)) s->p++;
    return s->p > start && (s->p - start > 1 || start[0] != '-') ? 0 : -1;
}

/* The members of one object this client reads.  `kind`: 0 absent, 's' string, 'n' number,
 * 'o' anything else. */
typedef struct {
    const char *name;
    int kind, plain;
    buf_t text;          /* a string's value, decoded; a number's text */
} member_t;

static int jobject(const char *p, size_t n, member_t *want, size_t nwant) {
    scan_t s = {p, p + n};
    ws(&s);
    if (s.p >= s.end || *s.p != '{') return -1;
    s.p++;
    ws(&s);
    if (s.p < s.end && *s.p == '}') { s.p++; goto tail; }
    for (;;) {
        ws(&s);
        buf_t key = {0};
        if (jstring(&s, &key, NULL)) { free(key.p); return -1; }
        ws(&s);
        if (s.p >= s.end || *s.p++ != ':') { free(key.p); return -1; }
        ws(&s);
        member_t *m = NULL;
        for (size_t k = 0; k < nwant; k++)
            if (key.p && strcmp(key.p, want[k].name) == 0 && strlen(want[k].name) == key.n)
                m = &want[k];
        free(key.p);
        const char *at = s.p;
        if (m) {   /* the last of duplicate keys wins, as in Python */
            m->text.n = 0;
            if (m->text.p) m->text.p[0] = 0;
            m->plain = 1;
        }
        if (m && s.p < s.end && *s.p == '"') {
            m->kind = 's';
            if (jstring(&s, &m->text, &m->plain)) return -1;
            if (!m->text.p) put(&m->text, "", 0);
        } else {
            if (jvalue(&s, 1)) return -1;
            if (m) {
                m->kind = (*at == '-' || (*at >= '0' && *at <= '9')) ? 'n' : 'o';
                put(&m->text, at, (size_t)(s.p - at));
            }
        }
        ws(&s);
        if (s.p >= s.end) return -1;
        char c = *s.p++;
        if (c == '}') break;
        if (c != ',') return -1;
    }
tail:
    ws(&s);
    return s.p == s.end ? 0 : -1;
}

static member_t *member(member_t *m, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(m[k].name, name) == 0) return &m[k];
    return NULL;
}

/* ------------------------------------------------------------------ where things are */
static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* dirname of the hook log (hook_client._log_path, wire.log_dir); NULL when this client
 * would have to normalise a path to know (the Python client then decides). */
static int log_folder(buf_t *out) {
    const char *log = env("PREIMAGE_LOG");
    if (log) {
        if (log[0] != '/' || strstr(log, "//") || strstr(log, "/./") || strstr(log, "/../"))
            return -1;
        const char *slash = strrchr(log, '/');
        size_t n = (size_t)(slash - log);
        if (n == 0 || strcmp(slash, "/.") == 0 || strcmp(slash, "/..") == 0) return -1;
        put(out, log, n);
        return 0;
    }
    const char *home = env("HOME");
    if (!home) return -1;
    const char *state = env("XDG_STATE_HOME");
    if (state) puts_(out, state);
    else {
        puts_(out, home);
        if (out->p[out->n - 1] != '/') puts_(out, "/");
        puts_(out, ".local/state");
    }
    if (out->p[out->n - 1] != '/') puts_(out, "/");
    puts_(out, "preimage/log");
    return 0;
}

static void mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(path, 0777);
        *p = '/';
    }
    mkdir(path, 0777);
}

/* ------------------------------------------------------------------ nothing after */
static const char *const END_EVENTS[] = {"PostToolUse", "PostToolUseFailure", "AfterTool"};

/* hook_client.nothing_after: a post-call event with no pre-call note and not MCP is
 * answered "{}" here.  0 when answered; -1 when the call goes the whole way.  Gemini CLI's
 * calls have no id (the note's name ends in a digest of the mapped tool and input): its
 * event is answered here only when the session has no note at all. */
static int nothing_after(const char *harness) {
    int digest = strcmp(harness, "gemini") == 0;
    if (!digest && strcmp(harness, "claude-code") && strcmp(harness, "codex")
        && strcmp(harness, "qwen"))
        return -1;
    member_t m[] = {{"hook_event_name", 0, 1, {0}}, {"tool_name", 0, 1, {0}},
                    {"session_id", 0, 1, {0}}, {"tool_use_id", 0, 1, {0}},
                    {"mcp_context", 0, 1, {0}}};
    int rc = -1;
    buf_t folder = {0}, key = {0}, line = {0};
    if (jobject(g_payload, g_payload_n, m, 5)) goto out;
    member_t *event = &m[0], *tool = &m[1], *session = &m[2], *call = &m[3], *mcp = &m[4];
    int end = 0;
    for (size_t k = 0; k < 3; k++)
        if (event->kind == 's' && strcmp(event->text.p, END_EVENTS[k]) == 0
            && event->text.n == strlen(END_EVENTS[k]))
            end = 1;
    if (!end || tool->kind != 's' || !tool->plain || (session->kind && session->kind != 's')
        || !session->plain)
        goto out;
    if (digest ? (call->kind || mcp->kind)
               : (call->kind != 's' || !call->plain || call->text.n == 0
                  || memchr(call->text.p, 0, call->text.n)))
        goto out;
    if (memchr(tool->text.p, 0, tool->text.n)
        || (session->kind && memchr(session->text.p, 0, session->text.n)))
        goto out;
    for (size_t k = 0; k + 3 <= tool->text.n; k++) {
        const char *t = tool->text.p + k;
        if ((t[0] | 32) == 'm' && (t[1] | 32) == 'c' && (t[2] | 32) == 'p') goto out;
    }
    puts_(&key, harness);
    puts_(&key, "-");
    puts_(&key, session->kind && session->text.n ? session->text.p : "nosession");
    puts_(&key, "-");
    if (!digest) puts_(&key, call->text.p);
    for (size_t k = 0; k < key.n; k++) {
        char c = key.p[k];
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                   || c == '-' || c == '_' || c == '.';
        if (!keep) key.p[k] = '_';
    }
    if (digest && key.n > 160) goto out;   /* the digest would not fit in the name */
    if (key.n > 200) { key.n = 200; key.p[200] = 0; }
    if (log_folder(&folder)) goto out;
    buf_t note = {0};
    put(&note, folder.p, folder.n);
    puts_(&note, "/pending");
    if (digest) {
        DIR *d = opendir(note.p);
        int found = 0, failed = 0;
        if (!d) failed = errno != ENOENT;
        else {
            struct dirent *e;
            errno = 0;
            while ((e = readdir(d)) != NULL) {
                const char *name = e->d_name;
                while (*name == '.') name++;   /* ".<name>.<pid>.tmp": a note being written */
                if (strncmp(name, key.p, key.n) == 0) { found = 1; break; }
            }
            failed = !found && errno != 0;
            closedir(d);
        }
        free(note.p);
        if (found || failed) goto out;
    } else {
        puts_(&note, "/");
        puts_(&note, key.p);
        puts_(&note, ".json");
        struct stat st;
        int noted = lstat(note.p, &st) == 0;
        free(note.p);
        if (noted) goto out;
    }
    /* the log line hook_client._log writes */
    struct timeval now;
    gettimeofday(&now, NULL);
    putf(&line, "{\"time\": %lld.%06ld, \"event\": \"completed\", \"harness\": ",
         (long long)now.tv_sec, (long)now.tv_usec);
    json_cstr(&line, harness);
    puts_(&line, ", \"tool\": ");
    json_str(&line, (const unsigned char *)tool->text.p, tool->text.n);
    puts_(&line, ", \"tool_use_id\": ");
    if (digest) puts_(&line, "null");
    else json_str(&line, (const unsigned char *)call->text.p, call->text.n);
    puts_(&line, ", \"session_id\": ");
    if (session->kind) json_str(&line, (const unsigned char *)session->text.p, session->text.n);
    else puts_(&line, "null");
    puts_(&line, ", \"backup_id\": null, \"path\": \"nothing after\", \"client\": \"compiled\"}\n");
    buf_t path = {0};
    const char *log = env("PREIMAGE_LOG");
    if (log) puts_(&path, log);
    else { put(&path, folder.p, folder.n); puts_(&path, "/hook.log"); }
    mkdirs(folder.p);
    int fd = open(path.p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        write_all(fd, line.p, line.n);
        close(fd);
    }
    free(path.p);
    write_all(1, "{}\n", 3);
    rc = 0;
out:
    for (size_t k = 0; k < 5; k++) free(m[k].text.p);
    free(folder.p);
    free(key.p);
    free(line.p);
    return rc;
}

/* ------------------------------------------------------------------ the service's address */
static uint32_t crc32_(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

static uint32_t adler32_reversed(const unsigned char *p, size_t n) {
    uint32_t a = 1, b = 0;
    for (size_t i = n; i-- > 0;) {
        a = (a + p[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return (b << 16) | a;
}

/* wire.Address.from_env().socket; -1 when the runtime directory is missing or not the
 * user's alone (the Python client then says why, or makes it). */
static int socket_path(buf_t *out) {
    struct stat st;
    if (stat(PI_STAMP_PATH, &st)) return -1;
    long long stamp = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    buf_t doc = {0};
    putf(&doc, "[%u, %d, \"", (unsigned)getuid(), PROTOCOL);
    puts_(&doc, PI_PYTHON_JSON "|" PI_PACKAGE_JSON "|");
    putf(&doc, "%lld\"]", stamp);
    char key[17];
    snprintf(key, sizeof key, "%08x%08x", crc32_((unsigned char *)doc.p, doc.n),
             adler32_reversed((unsigned char *)doc.p, doc.n));
    free(doc.p);
    const char *dir = env("PREIMAGE_RUNTIME_DIR");
    if (dir) puts_(out, dir);
    else if (env("XDG_RUNTIME_DIR")) {
        puts_(out, env("XDG_RUNTIME_DIR"));
        if (out->p[out->n - 1] != '/') puts_(out, "/");
        puts_(out, "preimage");
    } else putf(out, "/tmp/preimage-%u", (unsigned)getuid());
    if (lstat(out->p, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid()
        || (st.st_mode & 077))
        return -1;
    if (out->p[out->n - 1] != '/') puts_(out, "/");
    putf(out, "serve-%s.sock", key);
    return 0;
}

/* ------------------------------------------------------------------ asking the service */
static void set_timeout(int fd, int opt, double seconds) {
    struct timeval tv = {(time_t)seconds, (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)};
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* The next reply line into `line` (without its newline): 0, or -1 at the end of the
 * stream, -2 on a timeout, -3 on another error or a line over `limit`. */
static int read_line(int fd, buf_t *in, size_t *used, buf_t *line, size_t limit) {
    for (;;) {
        char *nl = in->n > *used ? memchr(in->p + *used, '\n', in->n - *used) : NULL;
        if (nl) {
            line->n = 0;
            put(line, in->p + *used, (size_t)(nl - (in->p + *used)));
            *used = (size_t)(nl - in->p) + 1;
            return 0;
        }
        if (in->n - *used > limit) return -3;
        char chunk[65536];
        ssize_t r = recv(fd, chunk, sizeof chunk, 0);
        if (r == 0) return -1;
        if (r < 0) {
            if (errno == EINTR) continue;
            return (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : -3;
        }
        put(in, chunk, (size_t)r);
    }
}

static void said(buf_t *b, const char *what, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    puts_(b, what);
    puts_(b, " ");
    puts_(b, tmp);
}

static int send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* hook_client.ask_service.  Returns only to fall back; `why` then says so. */
static void ask_service(const char *sock_path, char **args, int nargs, buf_t *why) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(sock_path) >= sizeof addr.sun_path) {
        said(why, "unavailable", "no service at %s (%s)", sock_path,
             fd < 0 ? strerror(errno) : "the path is too long");
        return;
    }
    strcpy(addr.sun_path, sock_path);
    set_timeout(fd, SO_SNDTIMEO, CONNECT_MS / 1000.0);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr)) {
        said(why, "unavailable", "no service at %s (%s)", sock_path, strerror(errno));
        close(fd);
        return;
    }
    buf_t head = {0};
    puts_(&head, "{\"v\": 1, \"op\": \"hook\", \"harness\": ");
    json_cstr(&head, args[0]);
    puts_(&head, ", \"args\": [");
    for (int k = 1; k < nargs; k++) {
        if (k > 1) puts_(&head, ", ");
        json_cstr(&head, args[k]);
    }
    puts_(&head, "], \"cwd\": ");
    char *cwd = getcwd(NULL, 0);
    if (!cwd) {
        said(why, "unavailable", "the working directory is gone (%s)", strerror(errno));
        close(fd);
        free(head.p);
        return;
    }
    json_cstr(&head, cwd);
    free(cwd);
    puts_(&head, ", \"env\": {");
    int first = 1;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        /* mark_boundary's: a call is observed only once the supervisor said so */
        if (!eq || eq == *e || strncmp(*e, "PREIMAGE_OBSERVED_CALL=", 23) == 0) continue;
        if (!first) puts_(&head, ", ");
        first = 0;
        json_str(&head, (const unsigned char *)*e, (size_t)(eq - *e));
        puts_(&head, ": ");
        json_cstr(&head, eq + 1);
    }
    putf(&head, "}, \"body\": %zu}\n", g_payload_n);
    set_timeout(fd, SO_SNDTIMEO, ACCEPT_MS / 1000.0);
    int sent = send_all(fd, head.p, head.n) == 0 && send_all(fd, g_payload, g_payload_n) == 0;
    free(head.p);
    buf_t in = {0}, line = {0};
    size_t used = 0;
    set_timeout(fd, SO_RCVTIMEO, ACCEPT_MS / 1000.0);
    int r = read_line(fd, &in, &used, &line, 1u << 20);
    member_t m[] = {{"event", 0, 1, {0}}, {"error", 0, 1, {0}}, {"deadline", 0, 1, {0}},
                    {"stdout", 0, 1, {0}}, {"stderr", 0, 1, {0}}, {"exit_code", 0, 1, {0}}};
    const size_t nm = sizeof m / sizeof *m;
    int parsed = r == 0 && jobject(line.p, line.n, m, nm) == 0;
    member_t *event = member(m, nm, "event"), *error = member(m, nm, "error");
    if (!sent || r != 0 || !parsed) {
        /* _refusal: what a service that closed on us said */
        if (r == 0 && parsed && error->kind == 's' && error->text.n)
            said(why, "unavailable", "the service refused the call: %s", error->text.p);
        else if (!sent || r == -2 || r == -3 || (r == 0 && !parsed))
            said(why, "unavailable", "the service did not take the call (%s)",
                 !sent ? strerror(errno) : r == -2 ? "timed out" : "an unreadable reply");
        else
            said(why, "unavailable", "the service refused the call: it closed the connection");
        goto done;
    }
    if (event->kind != 's' || strcmp(event->text.p, "accepted") != 0) {
        said(why, "unavailable", "the service refused the call: %s",
             error->kind == 's' && error->text.n ? error->text.p : "it closed the connection");
        goto done;
    }
    member_t *dl = member(m, nm, "deadline");
    double deadline = dl->kind == 'n' ? strtod(dl->text.p, NULL) : 0.0;
    deadline = (deadline > 0 ? deadline : 45.0) + ANSWER_MARGIN;
    for (size_t k = 0; k < nm; k++) { m[k].kind = 0; m[k].text.n = 0; }
    set_timeout(fd, SO_RCVTIMEO, deadline);
    r = read_line(fd, &in, &used, &line, MAX_BODY);
    if (r == -2) { said(why, "lost", "the decision service did not answer within %.0f s", deadline); goto done; }
    if (r == -3) { said(why, "lost", "the decision service failed mid-call (%s)", strerror(errno)); goto done; }
    if (r == -1) {
        said(why, "lost", "the decision service stopped mid-call (it crashed or was killed)");
        goto done;
    }
    if (jobject(line.p, line.n, m, nm)) {
        said(why, "lost", "the decision service failed mid-call (an unreadable answer)");
        goto done;
    }
    member_t *out = member(m, nm, "stdout"), *err = member(m, nm, "stderr"),
             *code = member(m, nm, "exit_code");
    if (event->kind != 's' || strcmp(event->text.p, "answer") != 0) {
        said(why, "lost", "the decision service failed: %s",
             error->kind == 's' ? error->text.p : "an answer without an event");
        goto done;
    }
    if ((out->kind && out->kind != 's') || (err->kind && err->kind != 's')
        || (code->kind && code->kind != 'n')) {
        said(why, "lost", "the decision service failed mid-call (an unreadable answer)");
        goto done;
    }
    close(fd);
    if (out->kind) write_all(1, out->text.p, out->text.n);
    write_all(1, "\n", 1);
    if (err->kind) write_all(2, err->text.p, err->text.n);
    _exit(code->kind ? atoi(code->text.p) & 0xFF : 0);
done:
    for (size_t k = 0; k < nm; k++) free(m[k].text.p);
    free(in.p);
    free(line.p);
    close(fd);
}

/* ------------------------------------------------------------------ main */
static void read_stdin(void) {
    buf_t b = {0};
    char chunk[65536];
    for (;;) {
        ssize_t r = read(0, chunk, sizeof chunk);
        if (r == 0) break;
        if (r < 0) {
            if (errno == EINTR) continue;
            break;   /* as the Python client: an unreadable stdin is an empty payload */
        }
        put(&b, chunk, (size_t)r);
        if (b.n > MAX_BODY) break;
    }
    g_payload = b.p ? b.p : "";
    g_payload_n = b.n;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        dprintf(2, "usage: %s PREIMAGE hook HARNESS [OPTION...]\n", argv[0]);
        return 2;
    }
    g_argv = argv + 1;
    if (argc == 3 && strcmp(argv[2], "--service") == 0) {
        /* where the service of this installation listens and how long to wait for it (the
         * OpenCode and Kilo Code plugin asks once and then talks to it itself: no process
         * per call) */
        buf_t where = {0}, said = {0};
        if (socket_path(&where)) return 1;
        puts_(&said, "{\"socket\": ");
        json_cstr(&said, where.p);
        putf(&said, ", \"connect_ms\": %d, \"accept_ms\": %d, \"answer_margin\": %g}\n",
             CONNECT_MS, ACCEPT_MS, ANSWER_MARGIN);
        write_all(1, said.p, said.n);
        return 0;
    }
    read_stdin();
    /* anything but `PREIMAGE hook HARNESS …` (help, no harness) is the Python client's */
    if (argc < 4 || strcmp(argv[2], "hook") != 0 || argv[3][0] == '-')
        fall_back("python not a hook call it knows");
    const char *harness = argv[3];
    /* a session supervisor is told of every call boundary: the Python client does that */
    if (env("PREIMAGE_SUPERVISOR")) fall_back("python a session supervisor is told of each call");
    if (g_payload_n > MAX_BODY) fall_back("python the payload is too large");
    if (nothing_after(harness) == 0) return 0;
    const char *off = getenv("PREIMAGE_SERVICE");
    if (off && (!strcasecmp(off, "0") || !strcasecmp(off, "off") || !strcasecmp(off, "no")
                || !strcasecmp(off, "false")))
        fall_back("python PREIMAGE_SERVICE is off");
    buf_t sock = {0}, why = {0};
    if (socket_path(&sock))
        fall_back("python no runtime directory of the user's alone, or no installation stamp");
    g_socket = sock.p;
    ask_service(sock.p, argv + 3, argc - 3, &why);
    fall_back(why.p);
    return 2;
}
