! A Fortran code that runs a command between its steps with execute_command_line (a post-processing script; here
! `date`, which reads the clock), once waiting for it and once not, and reduces the step's system_clock time over
! the ranks, as codes time their phases.  Prints "rR: ..." lines.
program f_command
  use mpi
  implicit none
  integer :: ierr, rank, stat, cstat
  integer(8) :: c0, c1, rate, mine, most
  character(len=200) :: msg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call system_clock(c0, rate)
  stat = -1
  cstat = -1
  msg = ''
  call execute_command_line('date +%s > /dev/null', exitstat=stat, cmdstat=cstat, cmdmsg=msg)
  print '("r",i0,": command exited ",i0,", command status ",i0)', rank, stat, cstat
  call execute_command_line('date +%s > /dev/null', wait=.false.)
  call system_clock(c1)
  mine = c1 - c0
  call MPI_Reduce(mine, most, 1, MPI_INTEGER8, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '("r0: slowest rank took ",i0," ticks")', most
  print '("r",i0,": done")', rank
  call MPI_Finalize(ierr)
end program f_command
