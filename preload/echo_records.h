/* Record files: what every process of a run did, one fixed-size record per
 * intercepted MPI call.  Layout version 1 (read by echo/records.py; documented
 * in docs/records.md):
 *
 *   header, ECHO_REC_HEADER_SIZE bytes (little-endian, as the machine writes it):
 *     char     magic[8]        "ECHOREC\0"
 *     uint32   version         ECHO_REC_VERSION
 *     uint32   header_size     offset of the first record
 *     uint32   record_size     sizeof(echo_record_t)
 *     uint32   nfunctions      entries of the function-name table
 *     int32    app_rank, copy, ncopies, real_rank, pid
 *     uint32   nslots          role-data slots per record (ECHO_REC_SLOTS)
 *     double   start_time      Unix time of the first record's clock origin
 *     char     run_id[64], host[64], role[64], slot_names[ECHO_REC_SLOTS][32], mpi_library[256]
 *     char     functions[]     NUL-separated function names; a record's `fn` indexes them
 *   records, record_size bytes each, until the end of the file.
 */
#ifndef ECHO_RECORDS_H
#define ECHO_RECORDS_H

#include <mpi.h>
#include <stdint.h>

#define ECHO_REC_VERSION 1
#define ECHO_REC_SLOTS 6
#define ECHO_REC_HEADER_SIZE 16384

typedef struct echo_record {
    uint64_t seq;      /* 0, 1, 2, ... in call order */
    uint16_t fn;       /* index in the header's function table */
    uint16_t flags;    /* ECHO_REC_* */
    int32_t comm;      /* communicator id: 0 world, 1 self, then in order of first use; -1 none */
    int32_t peer;      /* application rank of dest/source/root; -1 none, -2 MPI_ANY_SOURCE, -3 MPI_PROC_NULL */
    int32_t tag;       /* -1 none or MPI_ANY_TAG */
    uint64_t bytes;    /* count x size of the datatype the call names (a receive's capacity) */
    double t_start;    /* seconds since start_time */
    double t_end;
    uint64_t slot[ECHO_REC_SLOTS]; /* role data (counter deltas, buffer hashes), named in the header */
} echo_record_t;

enum { ECHO_REC_ERROR = 1 }; /* the call returned an error code */

/* Called by every generated wrapper (after the call).  Cheap: fills the next
 * slot of an in-memory buffer; the buffer is written out when full, at exit,
 * and from the fatal-signal handler. */
void echo_record(uint16_t fn, double t_start, int32_t comm, int32_t peer, int32_t tag, uint64_t bytes, int rc);
double echo_now(void);
static inline int32_t echo_peer(int rank) {
    return rank == MPI_ANY_SOURCE ? -2 : rank == MPI_PROC_NULL ? -3 : rank;
}
int32_t echo_comm_id(MPI_Comm comm);
uint64_t echo_bytes(int64_t count, MPI_Datatype dt);
/* the slots of the record being made; role collectors fill them during the call */
uint64_t *echo_record_slots(void);

void echo_records_open(const char *const *functions, int nfunctions);
void echo_records_flush(void);       /* async-signal-safe */
void echo_records_close(void);

#endif
