/* Verifiable export contents, shared by the lab's C clients. Must stay byte-identical to
 * seqheur/lab/data.py (expected_bytes). A file is a sequence of 4 KiB blocks of 128 records of
 * 32 bytes. Record 0 of block b stamps the file name and the block's byte offset, so a READ at
 * the wrong place or of the wrong file is caught; records 1..127 carry their index inside the
 * block, so a shift inside a block is caught too. Only record 0 changes from block to block,
 * which is what lets full-payload captures gzip about 80x. */
#ifndef SEQHEUR_LAB_PATTERN_H
#define SEQHEUR_LAB_PATTERN_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PAT_BLOCK 4096u
#define PAT_RECORD 32u

static void pat_record(const char *name, uint64_t block, unsigned idx, char out[PAT_RECORD])
{
    char tmp[96];
    int n;
    if (idx == 0)
        n = snprintf(tmp, sizeof tmp, "%s@%012llx", name, (unsigned long long)(block * PAT_BLOCK));
    else
        n = snprintf(tmp, sizeof tmp, "rec%03u", idx);
    if (n > 31)
        n = 31;
    memcpy(out, tmp, (size_t)n);
    memset(out + n, idx == 0 ? '=' : '.', 31 - (size_t)n);
    out[31] = '\n';
}

/* Number of bytes in [off, off+len) that differ from the expected contents of file `name`. */
static uint64_t pat_mismatches(const char *name, uint64_t off, const unsigned char *buf, uint64_t len)
{
    uint64_t bad = 0, i = 0;
    char rec[PAT_RECORD];
    while (i < len) {
        uint64_t pos = off + i;
        uint64_t recno = pos / PAT_RECORD;
        unsigned within = (unsigned)(pos % PAT_RECORD);
        pat_record(name, recno / (PAT_BLOCK / PAT_RECORD), (unsigned)(recno % (PAT_BLOCK / PAT_RECORD)), rec);
        uint64_t take = PAT_RECORD - within;
        if (take > len - i)
            take = len - i;
        for (uint64_t k = 0; k < take; k++)
            bad += (unsigned char)rec[within + k] != buf[i + k];
        i += take;
    }
    return bad;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
