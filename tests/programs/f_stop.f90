! `f_stop STATUS` (`use mpi`): a Fortran program reporting its outcome through its exit status after
! MPI_Finalize, as solvers do: `stop 3` on every rank (STATUS 3), or `error stop 4` on rank 1 only (STATUS 4).
program f_stop
  use mpi
  implicit none
  integer :: ierr, rank, x, sum
  character(len=8) :: arg

  call get_command_argument(1, arg)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = rank + 1
  call MPI_Allreduce(x, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '("r",I0,": sum ",I0)') rank, sum
  call MPI_Finalize(ierr)
  if (trim(arg) == "3") stop 3
  if (trim(arg) == "4" .and. rank == 1) error stop 4
end program f_stop
