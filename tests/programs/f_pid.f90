! A Fortran code whose log starts with its process id (gfortran's GETPID), rank 0 gathering every rank's, and a
! scratch file named by it, as Fortran MD codes name theirs.  It prints only what does not depend on the ids.
! Usage: f_pid DIR
program f_pid
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, u, s, pid
  integer :: pids(64)
  character(len=512) :: dir, fname, scratch
  double precision :: local, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call get_command_argument(1, dir)
  pid = getpid()
  write(fname, '(a,a,i0,a)') trim(dir), '/run.', rank, '.log'
  write(scratch, '(a,a,i0,a)') trim(dir), '/scratch.', pid, '.dat'
  open(newunit=u, file=trim(fname), status='replace', action='write')
  write(u, '(a,i0,a,i0)') 'rank ', rank, ' runs as process ', pid
  call MPI_Gather(pid, 1, MPI_INTEGER, pids, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) write(u, '(a,64(1x,i0))') 'processes', pids(1:nprocs)
  open(newunit=s, file=trim(scratch), status='new', action='write')
  write(s, '(a,i0)') 'scratch of rank ', rank
  close(s, status='delete')
  local = 1.5d0 * (rank + 1)
  call MPI_Allreduce(local, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  write(u, '(a,f12.6)') 'total ', total
  close(u)
  write(*, '(a,i0,a,f12.6)') 'r', rank, ': total ', total
  call MPI_Finalize(ierr)
end program f_pid
