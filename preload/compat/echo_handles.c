/* echo's own request handles, for either kind of MPI handle (see fallback.h).
 *
 * Integer handles (MPICH and its derivatives): MPICH encodes a handle's kind
 * in its two top bits and never gives out one whose kind bits are 00 except
 * its null handles; echo's are TABLE_BASE + index, with kind bits 00 and an
 * object type no null handle has. */
#include "echo_internal.h"

#include <stdlib.h>
#include <string.h>


#if ECHO_POINTER_HANDLES

MPI_Request echo_handle_new(void *state) {
    MPI_Request h;
    memcpy(&h, &state, sizeof h);
    return h;
}

void *echo_handle_state(MPI_Request h) {
    void *state;
    memcpy(&state, &h, sizeof state);
    return h == MPI_REQUEST_NULL ? NULL : state;
}

void echo_handle_free(MPI_Request h) { (void)h; }

MPI_Message echo_placeholder_message(int slot) {
    static char placeholders[4096]; /* distinct addresses, never given to MPI */
    if (slot < 0 || slot >= (int)sizeof placeholders) echo_fatal("too many matched-probe messages waiting");
    return (MPI_Message)(void *)&placeholders[slot];
}

#else

_Static_assert(sizeof(MPI_Request) == sizeof(int32_t), "an MPI whose handles are neither pointers nor 32-bit");

enum { TABLE_BASE = 0x0E000000, TABLE_MAX = 0x00FFFFFF, MESSAGE_BASE = 0x0F000000 };
static void **table;    /* index -> state; NULL: free */
static int ntable, cap; /* entries in use at the end of the table, its capacity */
static int *free_slots, nfree;

MPI_Request echo_handle_new(void *state) {
    int i;
    if (nfree) {
        i = free_slots[--nfree];
    } else {
        if (ntable == cap) {
            cap = cap ? 2 * cap : 256;
            if (cap > TABLE_MAX) echo_fatal("more than %d echo requests alive at once", TABLE_MAX);
            table = realloc(table, sizeof *table * (size_t)cap);
            free_slots = realloc(free_slots, sizeof *free_slots * (size_t)cap);
        }
        i = ntable++;
    }
    table[i] = state;
    return (MPI_Request)(TABLE_BASE + i);
}

static int index_of(MPI_Request h) {
    int32_t v = (int32_t)h;
    return v >= TABLE_BASE && v - TABLE_BASE < ntable ? v - TABLE_BASE : -1;
}

void *echo_handle_state(MPI_Request h) {
    int i = index_of(h);
    return i < 0 ? NULL : table[i];
}

void echo_handle_free(MPI_Request h) {
    int i = index_of(h);
    if (i < 0 || !table[i]) return;
    table[i] = NULL;
    free_slots[nfree++] = i;
}

MPI_Message echo_placeholder_message(int slot) {
    if (slot < 0 || slot > TABLE_MAX) echo_fatal("too many matched-probe messages waiting");
    return (MPI_Message)(MESSAGE_BASE + slot);
}

#endif
