#!/bin/sh
# echo's per-process launcher, used when some copies run under a Valgrind tool:
# it runs the program, or the program under the tool the plan gives this
# process ("valgrind_proc <real rank> <command...>", already shell-quoted).
# Builtins only: an external command here would load the preload library too,
# and a copy's output is redirected by it.
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}
while IFS= read -r line; do
    case "$line" in
    "valgrind_proc $rank "*)
        eval "set -- ${line#"valgrind_proc $rank "} \"\$@\""
        break
        ;;
    esac
done < "$ECHO_PLAN"
exec "$@"
