/* seqheur lab FUSE bridge: a read-only FUSE file system served by synchronous libnfs calls on one
 * NFS mount, so that ordinary read()/mmap() on the mount go through the Linux page cache and the
 * kernel's own readahead decides which NFS READs reach the wire.
 *
 * usage: fusebridge SERVER EXPORT VERSION LOG MOUNTPOINT [extra fuse args...]
 *
 * Runs in the foreground and single-threaded (a libnfs context is not thread-safe). Every open
 * sets keep_cache = 0, so each open starts with a cold page cache. Logs, like loadgen:
 * "V vers", "P local_port", "F idx name size fh_hex" on first open of a file,
 * "R seq t_ns file offset length" before each NFS READ, "D seq t_ns status mismatches" after it;
 * "X reads failures mismatched_bytes" at unmount. */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <netinet/in.h>
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

/* Private in libnfs; see loadgen.c. */
struct nfs_fh {
    int len;
    char *val;
};

#define MAX_FILES 256

static struct nfs_context *nfs;
static FILE *logf;
static uint64_t rmax;
static long seq, failures;
static uint64_t mismatched_bytes;
static char *known[MAX_FILES];
static int nknown;

struct open_file {
    struct nfsfh *fh;
    int idx;
    const char *name;
};

static int b_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct nfs_stat_64 s;
    (void)fi;
    int rc = nfs_stat64(nfs, path, &s);
    if (rc < 0)
        return rc;
    memset(st, 0, sizeof *st);
    st->st_ino = s.nfs_ino;
    st->st_mode = (mode_t)s.nfs_mode;
    st->st_nlink = (nlink_t)s.nfs_nlink;
    st->st_uid = (uid_t)s.nfs_uid;
    st->st_gid = (gid_t)s.nfs_gid;
    st->st_size = (off_t)s.nfs_size;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((s.nfs_size + 511) / 512);
    st->st_atime = (time_t)s.nfs_atime;
    st->st_mtime = (time_t)s.nfs_mtime;
    st->st_ctime = (time_t)s.nfs_ctime;
    return 0;
}

static int b_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct nfsdir *dir;
    struct nfsdirent *ent;
    (void)off, (void)fi, (void)flags;
    int rc = nfs_opendir(nfs, path, &dir);
    if (rc < 0)
        return rc;
    while ((ent = nfs_readdir(nfs, dir)) != NULL)
        filler(buf, ent->name, NULL, 0, 0);
    nfs_closedir(nfs, dir);
    return 0;
}

static int b_open(const char *path, struct fuse_file_info *fi)
{
    if ((fi->flags & O_ACCMODE) != O_RDONLY)
        return -EROFS;
    struct open_file *of = calloc(1, sizeof *of);
    if (!of)
        return -ENOMEM;
    int rc = nfs_open(nfs, path, O_RDONLY, &of->fh);
    if (rc < 0) {
        free(of);
        return rc;
    }
    const char *name = path[0] == '/' ? path + 1 : path;
    of->idx = -1;
    for (int i = 0; i < nknown; i++)
        if (!strcmp(known[i], name))
            of->idx = i;
    if (of->idx < 0) {
        if (nknown == MAX_FILES) {
            nfs_close(nfs, of->fh);
            free(of);
            return -EMFILE;
        }
        struct nfs_stat_64 s;
        uint64_t size = nfs_fstat64(nfs, of->fh, &s) == 0 ? s.nfs_size : 0;
        of->idx = nknown;
        known[nknown++] = strdup(name);
        struct nfs_fh *fh = nfs_get_fh(of->fh);
        fprintf(logf, "F\t%d\t%s\t%llu\t", of->idx, name, (unsigned long long)size);
        for (int i = 0; i < fh->len; i++)
            fprintf(logf, "%02x", (unsigned char)fh->val[i]);
        fputc('\n', logf);
        fflush(logf);
    }
    of->name = known[of->idx];
    fi->fh = (uint64_t)(uintptr_t)of;
    fi->keep_cache = 0; /* every open starts cold: the kernel drops this file's cached pages */
    return 0;
}

static int b_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
    size_t done = 0;
    (void)path;
    while (done < size) {
        uint64_t chunk = size - done < rmax ? size - done : rmax;
        long my = seq++;
        fprintf(logf, "R\t%ld\t%llu\t%d\t%llu\t%llu\n", my, (unsigned long long)now_ns(), of->idx,
                (unsigned long long)(off + (off_t)done), (unsigned long long)chunk);
        int n = nfs_pread(nfs, of->fh, (uint64_t)off + done, chunk, buf + done);
        uint64_t bad = n > 0 ? pat_mismatches(of->name, (uint64_t)off + done, (unsigned char *)buf + done, (uint64_t)n) : 0;
        mismatched_bytes += bad;
        fprintf(logf, "D\t%ld\t%llu\t%d\t%llu\n", my, (unsigned long long)now_ns(), n,
                (unsigned long long)bad);
        if (n < 0) {
            failures++;
            fflush(logf);
            return n;
        }
        done += (size_t)n;
        if ((uint64_t)n < chunk)
            break; /* end of file */
    }
    return (int)done;
}

static int b_release(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = (struct open_file *)(uintptr_t)fi->fh;
    (void)path;
    nfs_close(nfs, of->fh);
    free(of);
    fflush(logf);
    return 0;
}

static void *b_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->kernel_cache = 0;
    cfg->direct_io = 0; /* reads must go through the page cache and its readahead */
    cfg->use_ino = 1;
    return NULL;
}

static const struct fuse_operations ops = {
    .init = b_init,
    .getattr = b_getattr,
    .readdir = b_readdir,
    .open = b_open,
    .read = b_read,
    .release = b_release,
};

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: fusebridge SERVER EXPORT VERSION LOG MOUNTPOINT [fuse args...]\n");
        return 2;
    }
    const char *server = argv[1], *export = argv[2], *logpath = argv[4];
    int version = atoi(argv[3]);
    logf = fopen(logpath, "w");
    if (!logf) {
        perror(logpath);
        return 2;
    }
    nfs = nfs_init_context();
    if (!nfs || nfs_set_version(nfs, version) != 0 || nfs_mount(nfs, server, export) != 0) {
        fprintf(stderr, "fusebridge: cannot mount %s:%s v%d: %s\n", server, export, version,
                nfs ? nfs_get_error(nfs) : "no context");
        return 2;
    }
    rmax = nfs_get_readmax(nfs) ? nfs_get_readmax(nfs) : 1048576;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int port = -1;
    if (getsockname(nfs_get_fd(nfs), (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET)
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    fprintf(logf, "V\t%d\nP\t%d\n", version, port);
    fflush(logf);

    /* fuse_main(prog, MOUNTPOINT, -f, -s, -o ro,..., extra...) */
    int fargc = 0;
    char **fargv = calloc((size_t)argc + 8, sizeof *fargv);
    fargv[fargc++] = argv[0];
    fargv[fargc++] = argv[5];
    fargv[fargc++] = "-f";
    fargv[fargc++] = "-s";
    fargv[fargc++] = "-o";
    fargv[fargc++] = "ro,default_permissions,fsname=seqheur-lab,subtype=nfsbridge";
    for (int i = 6; i < argc; i++)
        fargv[fargc++] = argv[i];
    int rc = fuse_main(fargc, fargv, &ops, NULL);
    fprintf(logf, "X\t%ld\t%ld\t%llu\n", seq, failures, (unsigned long long)mismatched_bytes);
    fclose(logf);
    nfs_umount(nfs);
    nfs_destroy_context(nfs);
    return rc ? rc : (failures || mismatched_bytes ? 1 : 0);
}
