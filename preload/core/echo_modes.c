/* The one table of modes: the plan's "mode" picks one, else the copies do (clones or plain).  A new mode is a
 * folder with its echo_mode_t and a line here (docs/architecture.md). */
#include "echo_internal.h"

#include <stdlib.h>
#include <string.h>

/* the plain and clone modes: the job's processes are the plan's, each rank's representative known */
void echo_rank_model_setup(void) {
    int real_rank, real_size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &real_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &real_size);
    if (real_size != echo.real_size || real_rank != echo.real_rank)
        echo_fatal("the job has %d processes but its plan has %d; start it with echorun, not mpirun", real_size,
                   echo.real_size);
    echo.rep_real_rank = malloc(sizeof(int) * (size_t)echo.app_size);
    echo_plan_representatives(echo.rep_real_rank);
    const char *worlds = echo_plan_value("worlds");
    echo.independent = echo.cloned && worlds && !strcmp(worlds, "independent");
}

/* what every mode's set-up does besides its own (after the rank model, before the records are opened): the
 * injectors and roles */
void echo_roles_setup(void) {
    echo_slow_setup();
    echo_collectors_init(); /* declares record slots: before the records are opened */
}

static void plain_setup(void) {
    echo_rank_model_setup();
    echo_roles_setup();
}

const echo_mode_t echo_mode_plain = {.name = "plain", .calls = &echo_calls_plain, .setup = plain_setup};

const echo_mode_t *echo_mode = &echo_mode_plain;
const struct echo_calls *echo_calls = &echo_calls_plain;

void echo_mode_choose(void) {
    echo_mode = echo.sdr ? &echo_mode_sdr : echo.reinit ? &echo_mode_reinit
              : echo.cloned ? &echo_mode_clone : &echo_mode_plain;
    echo_calls = echo_mode->calls;
}
