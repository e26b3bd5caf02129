/*
 * GridSteer bench load generator: a small closed-window / fixed-rate UDP DNS
 * query generator for loopback benchmarks (bench/dns-qps.sh).
 *
 * Every query asks for one name (type A, class IN) and carries an EDNS0 OPT
 * record with a Client Subnet option (RFC 7871: family 1, source /24, scope 0)
 * whose /24 is drawn in turn from a table of N distinct /24s (default 100000)
 * spread over the public IPv4 space by a seeded PRNG, so caches keyed on the
 * client subnet see as many distinct keys as a busy resolver fleet would give.
 *
 * Replies are matched to queries by DNS ID through a 65536-entry slot table;
 * free IDs are reused in FIFO order, so an ID whose query timed out is not
 * handed out again until ~65k other IDs have been used (a late answer is then
 * very unlikely to be taken for the new query).  A query that has no answer
 * after the timeout counts as lost and its slot is freed.
 *
 * Modes
 *   max   keep W queries outstanding for D seconds (saturation throughput)
 *   rate  send R queries per second (open loop, paced) for D seconds and
 *         record the latency of every answer (p50/p90/p99/p99.9/max)
 * Latency is recorded in both modes (in max mode it is mostly queueing).
 *
 * Sending: a batch of up to 64 queries goes out as one UDP GSO buffer (the
 * kernel splits it into datagrams; -G or an old kernel: sendmmsg). Receiving:
 * recvmmsg. While sending it busy-polls the socket (-Y: sleep in ppoll
 * instead): a sleeping client makes every answer the server sends also pay
 * for waking it up, which a server answering remote resolvers never pays.
 * With -P PID -C CPU it also reports the CPU used over the measured period by
 * that process, by that core, by itself, and by everything else.
 *
 * Bounds: D <= 600 s, warm-up <= 60 s, timeout <= 10 s; the process stops
 * sending at warm-up + D, drains for at most one timeout, and an alarm kills
 * it if anything ever overruns that by 5 s.  Destination must be loopback.
 *
 * Output: one JSON line on stdout ("{...}"), then one human line ("# ...").
 *
 * Build: cc -O2 -Wall -o loadgen loadgen.c -lm   (Linux)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAX_PKT 1500
#define NIDS 65536
#define NONE (-1)

/* ---------- options ---------- */
static const char *opt_server = "127.0.0.1";
static int opt_port = 53;
static const char *opt_name = "api.gslb.example.com";
static const char *opt_mode = "max";
static double opt_duration = 10.0;
static double opt_warmup = 0.0;
static double opt_rate = 1000.0;
static int opt_window = 200;
static double opt_timeout = 1.0;
static int opt_subnets = 100000;
static uint64_t opt_seed = 20261130;
static const char *opt_label = "";
static int opt_no_ecs = 0;
static int opt_verbose = 0;
static int opt_gso = 1;
static int opt_server_pid = 0;
static int opt_sleep = 0;
static int opt_server_cpu = -1;
/* -A N: send from N source addresses, one per /24 of 127.0.0.0/8 (127.0.1.1, 127.0.2.1, …),
 * round-robin per query (IP_PKTINFO), for a server that keys state on the source address
 * (response rate limiting); 0 = the socket's one address */
static int opt_sources = 0;

/* ---------- time ---------- */
static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------- PRNG (splitmix64) ---------- */
static uint64_t rng_state;
static inline uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---------- /24 table ---------- */
static uint32_t *subnets; /* top 24 bits of each /24, as 0x00AABBCC */

static int reserved24(uint32_t p) { /* p = a.b.c as 24-bit number */
    uint32_t a = p >> 16, b = (p >> 8) & 0xff, c = p & 0xff;
    if (a == 0 || a == 10 || a == 127 || a >= 224) return 1;   /* this, private, loopback, mcast/reserved */
    if (a == 100 && (b & 0xc0) == 64) return 1;                /* 100.64/10 CGN */
    if (a == 169 && b == 254) return 1;                        /* link local */
    if (a == 172 && (b & 0xf0) == 16) return 1;                /* 172.16/12 */
    if (a == 192 && b == 168) return 1;                        /* 192.168/16 */
    if (a == 192 && b == 0 && (c == 0 || c == 2)) return 1;    /* 192.0.0/24, TEST-NET-1 */
    if (a == 198 && (b & 0xfe) == 18) return 1;                /* 198.18/15 benchmarking */
    if (a == 198 && b == 51 && c == 100) return 1;             /* TEST-NET-2 */
    if (a == 203 && b == 0 && c == 113) return 1;              /* TEST-NET-3 */
    return 0;
}

static void make_subnets(void) {
    uint8_t *seen = calloc(1 << 21, 1); /* 2^24 bits */
    subnets = malloc(sizeof(uint32_t) * (size_t)opt_subnets);
    if (!seen || !subnets) { perror("malloc"); exit(2); }
    rng_state = opt_seed;
    int n = 0;
    while (n < opt_subnets) {
        uint32_t p = (uint32_t)(rng_next() >> 40); /* 24 random bits */
        if (reserved24(p) || (seen[p >> 3] & (1u << (p & 7)))) continue;
        seen[p >> 3] |= (uint8_t)(1u << (p & 7));
        subnets[n++] = p;
    }
    free(seen);
}

/* ---------- query template ---------- */
static uint8_t tmpl[512];
static size_t tmpl_len, ecs_addr_off, qname_off = 12, qname_len;

static void make_template(void) {
    uint8_t *q = tmpl;
    size_t o = 0;
    memset(tmpl, 0, sizeof tmpl);
    /* header: id (patched), flags 0 (QUERY, RD=0), QD=1, AN=0, NS=0, AR=1 */
    q[4] = 0; q[5] = 1;
    q[10] = 0; q[11] = opt_no_ecs == 2 ? 0 : 1;
    o = 12;
    /* qname */
    const char *s = opt_name;
    while (*s) {
        const char *dot = strchr(s, '.');
        size_t l = dot ? (size_t)(dot - s) : strlen(s);
        if (l == 0 || l > 63 || o + l + 2 > 300) { fprintf(stderr, "bad name %s\n", opt_name); exit(2); }
        q[o++] = (uint8_t)l;
        memcpy(q + o, s, l);
        o += l;
        s += l;
        if (*s == '.') s++;
    }
    q[o++] = 0;
    qname_len = o - qname_off;
    q[o++] = 0; q[o++] = 1; /* A */
    q[o++] = 0; q[o++] = 1; /* IN */
    if (opt_no_ecs == 2) { tmpl_len = o; return; }
    /* OPT RR */
    q[o++] = 0;                        /* root name */
    q[o++] = 0; q[o++] = 41;           /* TYPE OPT */
    q[o++] = 1232 >> 8; q[o++] = 1232 & 0xff; /* UDP payload size */
    q[o++] = 0; q[o++] = 0; q[o++] = 0; q[o++] = 0; /* ext-rcode, version, flags (DO=0) */
    if (opt_no_ecs) { q[o++] = 0; q[o++] = 0; tmpl_len = o; return; }
    q[o++] = 0; q[o++] = 11;           /* RDLEN */
    q[o++] = 0; q[o++] = 8;            /* option ECS */
    q[o++] = 0; q[o++] = 7;            /* option length */
    q[o++] = 0; q[o++] = 1;            /* family IPv4 */
    q[o++] = 24;                       /* source prefix */
    q[o++] = 0;                        /* scope prefix */
    ecs_addr_off = o;
    o += 3;                            /* address (patched) */
    tmpl_len = o;
}

/* ---------- slot table: outstanding queries, doubly linked in send order ---------- */
typedef struct {
    int64_t sent;   /* ns */
    int32_t prev, next;
    uint8_t busy;
    uint8_t counted; /* 1 if sent during the measured period */
} slot_t;
static slot_t slots[NIDS];
static int32_t head = NONE, tail = NONE; /* head = oldest outstanding */
static uint16_t freeq[NIDS];
static uint32_t fq_head, fq_count; /* FIFO of free ids */
static int outstanding;

static void ids_init(void) {
    for (int i = 0; i < NIDS; i++) freeq[i] = (uint16_t)i;
    /* shuffle deterministically */
    for (int i = NIDS - 1; i > 0; i--) {
        int j = (int)(rng_next() % (uint64_t)(i + 1));
        uint16_t t = freeq[i]; freeq[i] = freeq[j]; freeq[j] = t;
    }
    fq_head = 0;
    fq_count = NIDS;
}
static inline int id_alloc(void) {
    if (fq_count == 0) return NONE;
    uint16_t id = freeq[fq_head];
    fq_head = (fq_head + 1) & (NIDS - 1);
    fq_count--;
    return id;
}
static inline void id_free(int id) {
    freeq[(fq_head + fq_count) & (NIDS - 1)] = (uint16_t)id;
    fq_count++;
}
static inline void link_tail(int id) {
    slots[id].prev = tail;
    slots[id].next = NONE;
    if (tail != NONE) slots[tail].next = id; else head = id;
    tail = id;
}
static inline void unlink_id(int id) {
    slot_t *s = &slots[id];
    if (s->prev != NONE) slots[s->prev].next = s->next; else head = s->next;
    if (s->next != NONE) slots[s->next].prev = s->prev; else tail = s->prev;
}

/* ---------- latency histogram ----------
 * 100 ns buckets below 1 ms, 1 us buckets below 100 ms, 100 us buckets to 10 s. */
#define H1 10000
#define H2 (H1 + 99000)
#define H3 (H2 + 99000)
static uint64_t hist[H3 + 1];
static uint64_t lat_count;
static int64_t lat_max_ns, lat_min_ns = INT64_MAX;
static long double lat_sum_ns;
static inline int bucket(int64_t ns) {
    if (ns < 0) ns = 0;
    if (ns < 1000000) return (int)(ns / 100);
    if (ns < 100000000) return H1 + (int)((ns - 1000000) / 1000);
    if (ns < 10000000000LL) return H2 + (int)((ns - 100000000) / 100000);
    return H3;
}
static double bucket_us(int b) { /* upper edge of bucket, microseconds */
    if (b < H1) return (b + 1) * 0.1;
    if (b < H2) return 1000.0 + (b - H1 + 1) * 1.0;
    if (b < H3) return 100000.0 + (b - H2 + 1) * 100.0;
    return 10000000.0;
}
static inline void record_latency(int64_t ns) {
    hist[bucket(ns)]++;
    lat_count++;
    lat_sum_ns += ns;
    if (ns > lat_max_ns) lat_max_ns = ns;
    if (ns < lat_min_ns) lat_min_ns = ns;
}
static double percentile(double p) {
    if (lat_count == 0) return NAN;
    uint64_t want = (uint64_t)ceill((long double)lat_count * p / 100.0L);
    if (want < 1) want = 1;
    uint64_t c = 0;
    for (int b = 0; b <= H3; b++) {
        c += hist[b];
        if (c >= want) return bucket_us(b);
    }
    return bucket_us(H3);
}

/* ---------- counters ---------- */
static uint64_t raw_answers;
static uint64_t sent, answered, answered_in_period, lost, rcodes[16], truncated, noanswer,
    unexpected, malformed, send_errors, send_errors_refused, window_full_skips;

/* ---------- CPU accounting over the measured period ----------
 * /proc/stat per-CPU ticks, the server's utime+stime (all threads) and our own
 * rusage, sampled when measuring starts and when sending stops. */
typedef struct {
    int ok;
    long long cpu[8][8]; /* [cpu index][user nice system idle iowait irq softirq steal]; [7] unused row guard */
    long long all[8];
    long long server_ticks;
    double self_s;
    int64_t t;
} cpusnap_t;
static int ncpu_seen;
static void cpu_snapshot(cpusnap_t *c) {
    memset(c, 0, sizeof *c);
    c->t = now_ns();
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        long long v[8] = {0};
        int idx;
        if (strncmp(line, "cpu ", 4) == 0) {
            sscanf(line + 4, "%lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
            memcpy(c->all, v, sizeof v);
        } else if (sscanf(line, "cpu%d %lld %lld %lld %lld %lld %lld %lld %lld", &idx, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                          &v[6], &v[7]) == 9 && idx >= 0 && idx < 8) {
            memcpy(c->cpu[idx], v, sizeof v);
            if (idx + 1 > ncpu_seen) ncpu_seen = idx + 1;
        }
    }
    fclose(f);
    if (opt_server_pid > 0) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", opt_server_pid);
        f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
            char *p = strrchr(buf, ')');
            long long ut = 0, st = 0;
            /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &ut, &st) == 2)
                c->server_ticks = ut + st;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    c->self_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    c->ok = 1;
}
static cpusnap_t snap_a, snap_b;

static void usage(void) {
    fprintf(stderr,
            "usage: loadgen -s ADDR -p PORT [-n NAME] [-m max|rate] [-d SECONDS] [-W WARMUP_S]\n"
            "               [-r QPS] [-w WINDOW] [-t TIMEOUT_S] [-N SUBNETS] [-S SEED] [-l LABEL] [-E] [-G] [-Y] [-v]\n"
            "               [-P SERVER_PID -C SERVER_CPU] [-A SOURCES]\n"
            "  -A  send from SOURCES loopback addresses, one per /24 (127.0.1.1, 127.0.2.1, ...; at most 65535; implies -G)\n"
            "  -E  no ECS option (plain EDNS0); -E -E no OPT record at all\n"
            "  -G  send with sendmmsg only (no UDP GSO batching)\n"
            "  -Y  sleep in ppoll() when idle instead of busy-polling the socket\n"
            "  -v  print answers/s every second to stderr\n"
            "  -P/-C  account CPU use of that process and core over the measured period\n");
    exit(2);
}

static void on_alarm(int sig) {
    (void)sig;
    static const char m[] = "loadgen: hard deadline exceeded, aborting\n";
    ssize_t r = write(2, m, sizeof m - 1);
    (void)r;
    _exit(3);
}

int main(int argc, char **argv) {
    int c;
    while ((c = getopt(argc, argv, "s:p:n:m:d:W:r:w:t:N:S:l:P:C:A:EGYvh")) != -1) {
        switch (c) {
        case 's': opt_server = optarg; break;
        case 'p': opt_port = atoi(optarg); break;
        case 'n': opt_name = optarg; break;
        case 'm': opt_mode = optarg; break;
        case 'd': opt_duration = atof(optarg); break;
        case 'W': opt_warmup = atof(optarg); break;
        case 'r': opt_rate = atof(optarg); break;
        case 'w': opt_window = atoi(optarg); break;
        case 't': opt_timeout = atof(optarg); break;
        case 'N': opt_subnets = atoi(optarg); break;
        case 'S': opt_seed = strtoull(optarg, NULL, 10); break;
        case 'l': opt_label = optarg; break;
        case 'E': opt_no_ecs++; break;
        case 'v': opt_verbose = 1; break;
        case 'G': opt_gso = 0; break;
        case 'A': opt_sources = atoi(optarg); break;
        case 'Y': opt_sleep = 1; break;
        case 'P': opt_server_pid = atoi(optarg); break;
        case 'C': opt_server_cpu = atoi(optarg); break;
        default: usage();
        }
    }
    int rate_mode = strcmp(opt_mode, "rate") == 0;
    if (!rate_mode && strcmp(opt_mode, "max") != 0) usage();
    if (!(opt_duration > 0 && opt_duration <= 600)) { fprintf(stderr, "duration must be in (0,600]\n"); return 2; }
    if (!(opt_warmup >= 0 && opt_warmup <= 60)) { fprintf(stderr, "warmup must be in [0,60]\n"); return 2; }
    if (!(opt_timeout > 0 && opt_timeout <= 10)) { fprintf(stderr, "timeout must be in (0,10]\n"); return 2; }
    if (opt_window < 1 || opt_window > 60000) { fprintf(stderr, "window must be in [1,60000]\n"); return 2; }
    if (rate_mode && !(opt_rate > 0 && opt_rate <= 5e6)) { fprintf(stderr, "rate must be in (0,5e6]\n"); return 2; }
    if (opt_subnets < 1 || opt_subnets > 1000000) { fprintf(stderr, "subnets must be in [1,1e6]\n"); return 2; }
    if (opt_port < 1 || opt_port > 65535) usage();

    /* loopback only */
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)opt_port);
    if (inet_pton(AF_INET, opt_server, &sa.sin_addr) != 1) { fprintf(stderr, "bad IPv4 address %s\n", opt_server); return 2; }
    if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127) { fprintf(stderr, "refusing non-loopback destination %s\n", opt_server); return 2; }

    signal(SIGALRM, on_alarm);
    alarm((unsigned)ceil(opt_warmup + opt_duration + opt_timeout) + 5);

    make_subnets();
    ids_init();
    make_template();

    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (fd < 0) { perror("socket"); return 2; }
    int bufsz = 4 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof bufsz) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof bufsz);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof bufsz) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
    if (opt_sources < 0 || opt_sources > 65535) usage();
    if (opt_sources > 0) {
        /* unconnected, bound to every local address: replies to any 127.0.x.1 reach it */
        struct sockaddr_in any;
        memset(&any, 0, sizeof any);
        any.sin_family = AF_INET;
        any.sin_addr.s_addr = htonl(INADDR_ANY);
        if (bind(fd, (struct sockaddr *)&any, sizeof any) < 0) { perror("bind"); return 2; }
        opt_gso = 0;
    } else if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) { perror("connect"); return 2; }
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
    if (opt_gso) {
        int seg = (int)tmpl_len;
        if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) < 0) opt_gso = 0;
    }

    /* queries of a batch are laid out back to back: sent either as one UDP GSO
     * buffer (the kernel splits it into BATCH datagrams, saving the load
     * generator most of its per-packet send cost) or with sendmmsg */
    static uint8_t gbuf[BATCH * 512];
    static uint8_t rbuf[BATCH][MAX_PKT];
    static struct mmsghdr smsg[BATCH], rmsg[BATCH];
    static struct iovec siov[BATCH], riov[BATCH];
    static int sids[BATCH];
    static uint8_t cbuf[BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
    uint64_t source_i = 0;
    for (int i = 0; i < BATCH; i++) {
        if (opt_sources > 0) {
            smsg[i].msg_hdr.msg_name = &sa;
            smsg[i].msg_hdr.msg_namelen = sizeof sa;
            smsg[i].msg_hdr.msg_control = cbuf[i];
            smsg[i].msg_hdr.msg_controllen = sizeof cbuf[i];
            struct cmsghdr *cm = CMSG_FIRSTHDR(&smsg[i].msg_hdr);
            cm->cmsg_level = IPPROTO_IP;
            cm->cmsg_type = IP_PKTINFO;
            cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
        }
        memcpy(gbuf + i * tmpl_len, tmpl, tmpl_len);
        siov[i].iov_base = gbuf + i * tmpl_len;
        siov[i].iov_len = tmpl_len;
        smsg[i].msg_hdr.msg_iov = &siov[i];
        smsg[i].msg_hdr.msg_iovlen = 1;
        riov[i].iov_base = rbuf[i];
        riov[i].iov_len = MAX_PKT;
        rmsg[i].msg_hdr.msg_iov = &riov[i];
        rmsg[i].msg_hdr.msg_iovlen = 1;
    }

    const int64_t timeout_ns = (int64_t)(opt_timeout * 1e9);
    const int64_t t_start = now_ns();
    const int64_t t_measure = t_start + (int64_t)(opt_warmup * 1e9);
    const int64_t t_end = t_measure + (int64_t)(opt_duration * 1e9);
    const int64_t t_hard = t_end + timeout_ns + 200000000LL;
    const double ns_per_q = rate_mode ? 1e9 / opt_rate : 0;
    uint64_t subnet_i = 0;
    uint64_t sched_sent = 0; /* rate mode: queries scheduled so far (incl. skipped) */
    int measuring = opt_warmup <= 0;
    if (measuring) cpu_snapshot(&snap_a);
    int64_t last_answer_ns = t_start;
    int64_t next_report = t_start + 1000000000LL;
    uint64_t rep_answered = 0, rep_lost = 0;

    for (;;) {
        int64_t now = now_ns();
        if (!measuring && now >= t_measure) {
            measuring = 1;
            cpu_snapshot(&snap_a);
        }
        if (!snap_b.ok && now >= t_end) cpu_snapshot(&snap_b);
        int sending = now < t_end;
        if (!sending && outstanding == 0) break;
        if (now >= t_hard) break;
        if (opt_verbose && now >= next_report) {
            fprintf(stderr, "  [%5.1fs] %8" PRIu64 " answers/s, lost %" PRIu64 ", outstanding %d\n",
                    (double)(now - t_start) / 1e9, raw_answers - rep_answered, lost - rep_lost, outstanding);
            rep_answered = raw_answers;
            rep_lost = lost;
            next_report += 1000000000LL;
        }

        /* 1. expire the oldest queries */
        while (head != NONE && now - slots[head].sent >= timeout_ns) {
            int id = head;
            unlink_id(id);
            slots[id].busy = 0;
            outstanding--;
            if (slots[id].counted) lost++;
            id_free(id);
        }

        /* 2. send */
        if (sending) {
            int want;
            if (rate_mode) {
                if (now < t_start) now = t_start;
                uint64_t due = (uint64_t)((double)(now - t_start) / ns_per_q) + 1;
                want = due > sched_sent ? (int)((due - sched_sent) > BATCH ? BATCH : (due - sched_sent)) : 0;
            } else {
                want = opt_window - outstanding;
                if (want > BATCH) want = BATCH;
            }
            int n = 0;
            for (; n < want; n++) {
                if (outstanding + n >= opt_window) break;
                int id = id_alloc();
                if (id == NONE) break;
                uint8_t *p = gbuf + (size_t)n * tmpl_len;
                p[0] = (uint8_t)(id >> 8);
                p[1] = (uint8_t)id;
                if (!opt_no_ecs) {
                    uint32_t sn = subnets[subnet_i++ % (uint64_t)opt_subnets];
                    p[ecs_addr_off] = (uint8_t)(sn >> 16);
                    p[ecs_addr_off + 1] = (uint8_t)(sn >> 8);
                    p[ecs_addr_off + 2] = (uint8_t)sn;
                }
                if (opt_sources > 0) {
                    uint32_t k = (uint32_t)(source_i++ % (uint64_t)opt_sources) + 1;
                    struct in_pktinfo pi;
                    memset(&pi, 0, sizeof pi);
                    pi.ipi_spec_dst.s_addr = htonl((127u << 24) | (k << 8) | 1u);
                    memcpy(CMSG_DATA(CMSG_FIRSTHDR(&smsg[n].msg_hdr)), &pi, sizeof pi);
                }
                sids[n] = id;
            }
            if (rate_mode && n < want) {
                /* window (or ID space) exhausted: the schedule slips; count it */
                window_full_skips += (uint64_t)(want - n);
                sched_sent += (uint64_t)(want - n);
            }
            if (n > 0) {
                int64_t ts = now_ns();
                int r;
                if (opt_gso && n > 1) {
                    ssize_t w = send(fd, gbuf, (size_t)n * tmpl_len, 0);
                    r = w < 0 ? -1 : (int)((size_t)w / tmpl_len);
                    if (w < 0 && (errno == EINVAL || errno == EIO || errno == EOPNOTSUPP)) {
                        opt_gso = 0; /* kernel or route cannot segment: fall back */
                        r = sendmmsg(fd, smsg, (unsigned)n, 0);
                    }
                } else {
                    r = sendmmsg(fd, smsg, (unsigned)n, 0);
                }
                int ok = r < 0 ? 0 : r;
                if (r < 0) {
                    if (errno == ECONNREFUSED) send_errors_refused++;
                    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS) {
                        perror("sendmmsg");
                    }
                    send_errors++;
                }
                for (int i = 0; i < n; i++) {
                    int id = sids[i];
                    if (i < ok) {
                        slots[id].sent = ts;
                        slots[id].busy = 1;
                        slots[id].counted = (uint8_t)measuring;
                        link_tail(id);
                        outstanding++;
                        if (measuring) sent++;
                    } else {
                        id_free(id);
                    }
                }
                if (rate_mode) sched_sent += (uint64_t)n;
                if (ok == 0 && r < 0) {
                    /* e.g. ECONNREFUSED while nothing listens: back off briefly */
                    struct timespec ts2 = {0, 1000000};
                    nanosleep(&ts2, NULL);
                }
            }
        }

        /* 3. receive whatever is there */
        int got = 0;
        for (;;) {
            for (int i = 0; i < BATCH; i++) rmsg[i].msg_hdr.msg_flags = 0;
            int r = recvmmsg(fd, rmsg, BATCH, MSG_DONTWAIT, NULL);
            if (r <= 0) {
                if (r < 0 && errno == ECONNREFUSED) send_errors_refused++;
                break;
            }
            int64_t ts = now_ns();
            got += r;
            for (int i = 0; i < r; i++) {
                const uint8_t *p = rbuf[i];
                unsigned len = rmsg[i].msg_len;
                if (len < 12) { malformed++; continue; }
                int id = (p[0] << 8) | p[1];
                if (!(p[2] & 0x80) || !slots[id].busy) { unexpected++; continue; }
                if (len < 12 + qname_len + 4 || p[4] != 0 || p[5] != 1 ||
                    memcmp(p + 12, tmpl + 12, qname_len) != 0) {
                    /* mismatched question: treat as not an answer to this slot */
                    unexpected++;
                    continue;
                }
                slot_t *s = &slots[id];
                raw_answers++;
                unlink_id(id);
                s->busy = 0;
                outstanding--;
                if (s->counted) {
                    answered++;
                    if (ts <= t_end) answered_in_period++;
                    int rc = p[3] & 0x0f;
                    rcodes[rc]++;
                    if (p[2] & 0x02) truncated++;
                    if (rc == 0 && p[6] == 0 && p[7] == 0) noanswer++;
                    record_latency(ts - s->sent);
                    last_answer_ns = ts;
                }
                id_free(id);
            }
            if (r < BATCH) break;
        }

        /* 4. wait if there is nothing to do right now */
        if (got == 0) {
            int64_t t = now_ns();
            int64_t wake = t_hard;
            if (head != NONE && slots[head].sent + timeout_ns < wake) wake = slots[head].sent + timeout_ns;
            if (t < t_end) {
                if (rate_mode) {
                    int64_t next = t_start + (int64_t)((double)sched_sent * ns_per_q);
                    if (next < wake) wake = next;
                } else if (outstanding < opt_window) {
                    wake = t; /* can send more: don't sleep */
                }
                if (t_end < wake) wake = t_end;
                if (t_measure > t && t_measure < wake) wake = t_measure;
            }
            /* While sending, busy-poll by default: a sleeping load generator
             * makes every answer the server sends also pay for waking it up
             * (an IPI, which is dear in a VM), a cost a real server talking
             * to remote resolvers never pays. While draining, sleep. */
            if (wake > t && (opt_sleep || t >= t_end)) {
                struct pollfd pfd = {fd, POLLIN, 0};
                int64_t d = wake - t;
                struct timespec tout = {(time_t)(d / 1000000000LL), (long)(d % 1000000000LL)};
                ppoll(&pfd, 1, &tout, NULL);
            }
        }
    }
    (void)last_answer_ns;
    close(fd);

    double elapsed = (double)(now_ns() - t_start) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu_user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    double cpu_sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    double qps = (double)answered_in_period / opt_duration;
    double loss_pct = sent ? 100.0 * (double)lost / (double)sent : 0.0;
    static const char *rcname[16] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
                                     "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "RC11",
                                     "RC12", "RC13", "RC14", "RC15"};
    double p50 = percentile(50), p90 = percentile(90), p99 = percentile(99), p999 = percentile(99.9);
    double mean = lat_count ? (double)(lat_sum_ns / lat_count) / 1000.0 : NAN;
    double maxus = lat_count ? lat_max_ns / 1000.0 : NAN;
    double minus = lat_count ? lat_min_ns / 1000.0 : NAN;
#define JNUM(x) (isnan(x) ? -1.0 : (x))
    printf("{\"label\":\"%s\",\"mode\":\"%s\",\"server\":\"%s:%d\",\"name\":\"%s\",\"ecs\":%s,"
           "\"subnets\":%d,\"seed\":%" PRIu64 ",\"window\":%d,\"rate_target\":%.0f,\"duration_s\":%.3f,"
           "\"warmup_s\":%.3f,\"timeout_s\":%.3f,\"elapsed_s\":%.3f,"
           "\"sent\":%" PRIu64 ",\"answered\":%" PRIu64 ",\"answered_in_period\":%" PRIu64 ",\"qps\":%.1f,"
           "\"lost\":%" PRIu64 ",\"loss_pct\":%.4f,\"truncated\":%" PRIu64 ",\"noanswer\":%" PRIu64 ","
           "\"unexpected\":%" PRIu64 ",\"malformed\":%" PRIu64 ",\"send_errors\":%" PRIu64 ","
           "\"refused_icmp\":%" PRIu64 ",\"schedule_slips\":%" PRIu64 ",\"gso\":%s,\"busy_poll\":%s,\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f,"
           "\"rcodes\":{",
           opt_label, opt_mode, opt_server, opt_port, opt_name, opt_no_ecs ? "false" : "true", opt_subnets,
           opt_seed, opt_window, rate_mode ? opt_rate : 0.0, opt_duration, opt_warmup, opt_timeout, elapsed, sent,
           answered, answered_in_period, qps, lost, loss_pct, truncated, noanswer, unexpected, malformed,
           send_errors, send_errors_refused, window_full_skips, opt_gso ? "true" : "false", opt_sleep ? "false" : "true", cpu_user, cpu_sys);
    int first = 1;
    for (int i = 0; i < 16; i++) {
        if (!rcodes[i]) continue;
        printf("%s\"%s\":%" PRIu64, first ? "" : ",", rcname[i], rcodes[i]);
        first = 0;
    }
    printf("}");
    if (snap_a.ok && snap_b.ok) {
        long clk = sysconf(_SC_CLK_TCK);
        double win = (double)(snap_b.t - snap_a.t) / 1e9, ticks = win * (double)clk;
        int lc = sched_getcpu(), sc = opt_server_cpu;
        long long d[8], tot_all = 0, busy_all = 0;
        for (int i = 0; i < 8; i++) d[i] = snap_b.all[i] - snap_a.all[i];
        for (int i = 0; i < 8; i++) tot_all += d[i];
        busy_all = d[0] + d[1] + d[2] + d[5] + d[6]; /* user nice system irq softirq */
        double srv = (double)(snap_b.server_ticks - snap_a.server_ticks);
        double self = (snap_b.self_s - snap_a.self_s) * (double)clk;
        /* tick accounting charges softirq ticks to whichever task runs, so the
         * machine-wide busy total includes irq/softirq */
        double other = (double)busy_all - srv - self;
        printf(",\"cpu\":{\"window_s\":%.3f,\"loadgen_pct\":%.1f", win, ticks > 0 ? 100.0 * self / ticks : 0.0);
        if (opt_server_pid > 0) printf(",\"server_pct\":%.1f", ticks > 0 ? 100.0 * srv / ticks : 0.0);
        int cores[2] = {sc, lc};
        const char *names[2] = {"server_core", "loadgen_core"};
        for (int k = 0; k < 2; k++) {
            int cc = cores[k];
            if (cc < 0 || cc >= 8) continue;
            long long t = 0, x[8];
            for (int i = 0; i < 8; i++) { x[i] = snap_b.cpu[cc][i] - snap_a.cpu[cc][i]; t += x[i]; }
            if (t <= 0) continue;
            printf(",\"%s\":{\"cpu\":%d,\"user_pct\":%.1f,\"system_pct\":%.1f,\"softirq_pct\":%.1f,\"idle_pct\":%.1f,\"steal_pct\":%.1f}",
                   names[k], cc, 100.0 * (double)(x[0] + x[1]) / (double)t, 100.0 * (double)x[2] / (double)t,
                   100.0 * (double)(x[5] + x[6]) / (double)t, 100.0 * (double)(x[3] + x[4]) / (double)t,
                   100.0 * (double)x[7] / (double)t);
        }
        printf(",\"other_processes_pct\":%.1f,\"machine_busy_pct\":%.1f}", ticks > 0 ? 100.0 * other / ticks : 0.0,
               tot_all > 0 ? 100.0 * (double)ncpu_seen * (double)busy_all / (double)tot_all : 0.0);
    }
    printf(",\"latency_us\":{\"count\":%" PRIu64 ",\"min\":%.1f,\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,"
           "\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}}\n",
           lat_count, JNUM(minus), JNUM(mean), JNUM(p50), JNUM(p90), JNUM(p99), JNUM(p999), JNUM(maxus));
    printf("# %s %s: %.0f q/s answered over %.1fs (sent %" PRIu64 ", answered %" PRIu64 ", lost %" PRIu64
           " = %.3f%%), NOERROR %" PRIu64 ", other rcodes %" PRIu64 ", no-answer %" PRIu64
           ", latency p50 %.1f us p99 %.1f us p99.9 %.1f us max %.1f us\n",
           opt_label[0] ? opt_label : opt_server, opt_mode, qps, opt_duration, sent, answered, lost, loss_pct,
           rcodes[0], answered - rcodes[0], noanswer, p50, p99, p999, maxus);
    fflush(stdout);
    return 0;
}
