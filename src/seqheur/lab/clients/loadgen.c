/* seqheur lab load generator: keeps DEPTH NFS READs in flight on one libnfs connection, in a
 * chosen pattern, logs every READ it issues (and its completion) and checks every returned byte
 * against the export's verifiable contents (pattern.h).
 *
 * usage: loadgen -s SERVER -e EXPORT -v 3|4 -p seq|backward|stride|random|interleave
 *                -z SIZE -d DEPTH [-k STREAMS] [-n READS] [-S SEED] -l LOG FILE...
 *
 * Log lines (tab separated): "V vers", "P local_port", "F idx name size fh_hex",
 * "R seq t_ns file offset length" when a READ is queued, "D seq t_ns status mismatches" when it
 * completes. Exit status 0 only if every READ returned exactly the expected bytes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>

#include "pattern.h"

/* libnfs keeps this private; its layout (len, val) is stable across 1.x..5.x. The lab checks the
 * CRC-32 of these bytes against tshark's nfs.fh.hash, so a layout change would be caught. */
struct nfs_fh {
    int len;
    char *val;
};

struct req {
    long seq;
    int file;
    uint64_t off;
    uint32_t len;
};

static FILE *logf;
static const char **names;
static long inflight, done_count, failures;
static uint64_t mismatched_bytes;

static void die(const char *what, struct nfs_context *nfs)
{
    fprintf(stderr, "loadgen: %s: %s\n", what, nfs ? nfs_get_error(nfs) : strerror(errno));
    if (logf)
        fprintf(logf, "E\t%s\n", what), fflush(logf);
    exit(2);
}

static void read_cb(int status, struct nfs_context *nfs, void *data, void *priv)
{
    struct req *r = priv;
    uint64_t bad = 0;
    (void)nfs;
    inflight--;
    done_count++;
    if (status < 0) {
        failures++;
        fprintf(stderr, "loadgen: READ seq %ld failed: %s\n", r->seq, (const char *)data);
    } else {
        if ((uint32_t)status != r->len)
            failures++; /* short read inside the file: the plan never reads past EOF */
        bad = pat_mismatches(names[r->file], r->off, data, (uint64_t)status);
        mismatched_bytes += bad;
    }
    fprintf(logf, "D\t%ld\t%llu\t%d\t%llu\n", r->seq, (unsigned long long)now_ns(), status,
            (unsigned long long)bad);
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static struct req *plan(const char *pattern, int nfiles, const uint64_t *sizes, uint32_t size,
                        int streams, long nreads, uint64_t seed, long *count)
{
    long cap = 0, n = 0;
    for (int f = 0; f < nfiles; f++)
        cap += (long)((sizes[f] + size - 1) / size);
    if (!strcmp(pattern, "random"))
        cap = nreads;
    struct req *rs = calloc((size_t)(cap ? cap : 1), sizeof *rs);
#define ADD(F, REC)                                                                    \
    do {                                                                               \
        rs[n].file = (F);                                                              \
        rs[n].off = (uint64_t)(REC) * size;                                            \
        rs[n].len = (uint32_t)(sizes[F] - rs[n].off < size ? sizes[F] - rs[n].off : size); \
        rs[n].seq = n;                                                                 \
        n++;                                                                           \
    } while (0)
    if (!strcmp(pattern, "seq")) {
        for (int f = 0; f < nfiles; f++)
            for (uint64_t rec = 0; rec * size < sizes[f]; rec++)
                ADD(f, rec);
    } else if (!strcmp(pattern, "backward")) {
        for (int f = 0; f < nfiles; f++)
            for (uint64_t rec = (sizes[f] + size - 1) / size; rec-- > 0;)
                ADD(f, rec);
    } else if (!strcmp(pattern, "stride")) {
        /* STREAMS interleaved sequential sub-streams: the file is cut into STREAMS equal
         * regions, read round-robin, each region front to back (Ellard & Seltzer's stride). */
        for (int f = 0; f < nfiles; f++) {
            uint64_t nrec = (sizes[f] + size - 1) / size;
            uint64_t per = (nrec + (uint64_t)streams - 1) / (uint64_t)streams;
            for (uint64_t j = 0; j < per; j++)
                for (int s = 0; s < streams; s++)
                    if ((uint64_t)s * per + j < nrec)
                        ADD(f, (uint64_t)s * per + j);
        }
    } else if (!strcmp(pattern, "interleave")) {
        uint64_t most = 0;
        for (int f = 0; f < nfiles; f++)
            if (sizes[f] > most)
                most = sizes[f];
        for (uint64_t rec = 0; rec * size < most; rec++)
            for (int f = 0; f < nfiles; f++)
                if (rec * size < sizes[f])
                    ADD(f, rec);
    } else if (!strcmp(pattern, "random")) {
        uint64_t st = seed * 2654435761u + 88172645463325252ull;
        for (long i = 0; i < nreads; i++) {
            int f = (int)(xorshift(&st) % (uint64_t)nfiles);
            uint64_t nrec = sizes[f] / size; /* whole records only */
            ADD(f, xorshift(&st) % (nrec ? nrec : 1));
        }
    } else {
        fprintf(stderr, "loadgen: unknown pattern %s\n", pattern);
        exit(2);
    }
#undef ADD
    if (nreads > 0 && nreads < n)
        n = nreads;
    *count = n;
    return rs;
}

int main(int argc, char **argv)
{
    const char *server = "127.0.0.1", *export = "/export", *pattern = "seq", *logpath = NULL;
    int version = 3, depth = 1, streams = 2, opt;
    uint32_t size = 65536;
    long nreads = 0;
    uint64_t seed = 1;
    while ((opt = getopt(argc, argv, "s:e:v:p:z:d:k:n:S:l:")) != -1) {
        switch (opt) {
        case 's': server = optarg; break;
        case 'e': export = optarg; break;
        case 'v': version = atoi(optarg); break;
        case 'p': pattern = optarg; break;
        case 'z': size = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'd': depth = atoi(optarg); break;
        case 'k': streams = atoi(optarg); break;
        case 'n': nreads = atol(optarg); break;
        case 'S': seed = strtoull(optarg, NULL, 0); break;
        case 'l': logpath = optarg; break;
        default: fprintf(stderr, "loadgen: bad option\n"); return 2;
        }
    }
    int nfiles = argc - optind;
    if (nfiles < 1 || !logpath || depth < 1 || size == 0 || streams < 1) {
        fprintf(stderr, "usage: loadgen -s SERVER -e EXPORT -v 3|4 -p PATTERN -z SIZE -d DEPTH "
                        "[-k STREAMS] [-n READS] [-S SEED] -l LOG FILE...\n");
        return 2;
    }
    names = (const char **)(argv + optind);
    logf = fopen(logpath, "w");
    if (!logf)
        die(logpath, NULL);

    struct nfs_context *nfs = nfs_init_context();
    if (!nfs)
        die("nfs_init_context", NULL);
    /* libnfs does not export NFS_V3/NFS_V4 in <nfsc/libnfs.h>; the values are 3 and 4. */
    if (nfs_set_version(nfs, version) != 0)
        die("nfs_set_version", nfs);
    if (nfs_mount(nfs, server, export) != 0)
        die("nfs_mount", nfs);
    /* libnfs 4.0 reports rsize only for v3 (0 for v4); ganesha's maximum is 1 MiB either way. */
    uint64_t rmax = nfs_get_readmax(nfs) ? nfs_get_readmax(nfs) : 1048576;
    if (size > rmax) {
        fprintf(stderr, "loadgen: request size %u above the server rsize %llu\n", size,
                (unsigned long long)rmax);
        exit(2);
    }

    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int port = -1;
    if (getsockname(nfs_get_fd(nfs), (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET)
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    fprintf(logf, "V\t%d\nP\t%d\n", version, port);

    struct nfsfh **fhs = calloc((size_t)nfiles, sizeof *fhs);
    uint64_t *sizes = calloc((size_t)nfiles, sizeof *sizes);
    for (int f = 0; f < nfiles; f++) {
        char path[4096];
        struct nfs_stat_64 st;
        snprintf(path, sizeof path, "/%s", names[f]);
        if (nfs_open(nfs, path, O_RDONLY, &fhs[f]) != 0)
            die(path, nfs);
        if (nfs_fstat64(nfs, fhs[f], &st) != 0)
            die("fstat", nfs);
        sizes[f] = st.nfs_size;
        struct nfs_fh *fh = nfs_get_fh(fhs[f]);
        fprintf(logf, "F\t%d\t%s\t%llu\t", f, names[f], (unsigned long long)sizes[f]);
        for (int i = 0; i < fh->len; i++)
            fprintf(logf, "%02x", (unsigned char)fh->val[i]);
        fputc('\n', logf);
    }

    long count;
    struct req *rs = plan(pattern, nfiles, sizes, size, streams, nreads, seed, &count);
    long next = 0;
    while (done_count < count) {
        while (next < count && inflight < depth) {
            struct req *r = &rs[next++];
            fprintf(logf, "R\t%ld\t%llu\t%d\t%llu\t%u\n", r->seq, (unsigned long long)now_ns(),
                    r->file, (unsigned long long)r->off, r->len);
            if (nfs_pread_async(nfs, fhs[r->file], r->off, r->len, read_cb, r) != 0)
                die("nfs_pread_async", nfs);
            inflight++;
        }
        struct pollfd pfd = {.fd = nfs_get_fd(nfs), .events = (short)nfs_which_events(nfs)};
        if (poll(&pfd, 1, 1000) < 0 && errno != EINTR)
            die("poll", NULL);
        if (nfs_service(nfs, pfd.revents) < 0)
            die("nfs_service", nfs);
    }
    for (int f = 0; f < nfiles; f++)
        nfs_close(nfs, fhs[f]);
    nfs_umount(nfs);
    nfs_destroy_context(nfs);
    fprintf(logf, "X\t%ld\t%ld\t%llu\n", count, failures, (unsigned long long)mismatched_bytes);
    fclose(logf);
    if (failures || mismatched_bytes) {
        fprintf(stderr, "loadgen: %ld failed READs, %llu mismatched bytes\n", failures,
                (unsigned long long)mismatched_bytes);
        return 1;
    }
    return 0;
}
