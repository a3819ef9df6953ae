/* An application's input, read as simulation codes read theirs: rank 0 parses a "key = value" file given on the
 * command line into a list of entries, then every rank calls a check that broadcasts the parse's status and the
 * line at fault.  The line is copied only when the parse failed; on good input the 512-byte local is broadcast as
 * the parser (fopen, fgets, strdup: the C library's frames, holding pointers to the program's heap) left the stack
 * there.  Natively harmless: the other ranks look at the line only when the status says the parse failed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *key, *value;
    struct entry *next;
};

/* 0, or the number of the first line that is not "key = value" (its text in `bad`) */
static int parse(const char *path, struct entry **list, char *bad, size_t badlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(bad, badlen, "cannot open %s", path);
        return -1;
    }
    char text[256];
    int number = 0;
    while (fgets(text, sizeof text, f)) {
        number++;
        char *eq = strchr(text, '=');
        if (text[0] == '#' || text[0] == '\n') continue;
        if (!eq) {
            snprintf(bad, badlen, "%s", text);
            fclose(f);
            return number;
        }
        *eq = 0;
        struct entry *e = malloc(sizeof *e);
        e->key = strdup(strtok(text, " \t"));
        e->value = strdup(strtok(eq + 1, " \t\n"));
        e->next = *list;
        *list = e;
    }
    fclose(f);
    return 0;
}

static void check_input(int status, const char *why) {
    char line[512];
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && status != 0) snprintf(line, sizeof line, "%s", why);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(line, sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (status != 0) {
        if (rank == 0) fprintf(stderr, "bad input at line %d: %s\n", status, line);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static double lookup(const struct entry *list, const char *key, double otherwise) {
    for (; list; list = list->next)
        if (strcmp(list->key, key) == 0) return atof(list->value);
    return otherwise;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct entry *list = NULL;
    char bad[512] = "";
    int status = 0;
    if (rank == 0) status = parse(argc > 1 ? argv[1] : "input.txt", &list, bad, sizeof bad);
    check_input(status, bad);
    double params[2] = {lookup(list, "steps", 10), lookup(list, "dt", 0.1)};
    MPI_Bcast(params, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double x = rank + 1, total;
    for (int step = 0; step < (int)params[0]; step++) x += params[1] * x / (step + 1);
    MPI_Allreduce(&x, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: steps %d total %.6f\n", rank, (int)params[0], total);
    while (list) {
        struct entry *next = list->next;
        free(list->key);
        free(list->value);
        free(list);
        list = next;
    }
    MPI_Finalize();
    return 0;
}
