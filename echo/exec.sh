#!/bin/sh
# echo's per-process launcher, used when some copies run under a tool (a role's
# wrap: Valgrind, strace): it runs the program, or the program after the command
# the plan gives this process ("wrap <real rank> <command...>", already
# shell-quoted; echo/runformat/runfiles.py writes it).
# Builtins only: an external command here would load the preload library too,
# and a copy's output is redirected by it.
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}
while IFS= read -r line; do
    case "$line" in
    "wrap $rank "*)
        eval "set -- ${line#"wrap $rank "} \"\$@\""
        break
        ;;
    esac
done < "$ECHO_PLAN"
exec "$@"
