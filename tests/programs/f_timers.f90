! Fortran battery, `use mpi` style: a code timing its own phases with system_clock, cpu_time and MPI_Wtime,
! reducing the timings over ranks (min, max, sum) and printing them, as performance reports of applications do.
! Timings differ from run to run: their lines carry "timing:" (tests compare them between a rank's copies only,
! where echo gives a copy its representative's clock); the lines checking them are compared with native.
program f_timers
  use mpi
  implicit none
  integer, parameter :: n = 200000
  integer :: ierr, rank, size, i, it
  integer(8) :: c0, c1, rate
  real :: cpu0, cpu1
  double precision :: w0, w1, mine(3), lo(3), hi(3), tot(3), x(1), s(1)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call system_clock(c0, rate)
  call cpu_time(cpu0)
  w0 = MPI_Wtime()
  s = 0d0
  do it = 1, 5
    x = 0d0
    do i = 1, n
      x(1) = x(1) + sin(dble(i + rank)) ** 2
    end do
    call MPI_Allreduce(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call system_clock(c1)
  call cpu_time(cpu1)
  w1 = MPI_Wtime()
  mine = [dble(c1 - c0) / dble(rate), dble(cpu1 - cpu0), w1 - w0]
  call MPI_Reduce(mine, lo, 3, MPI_DOUBLE_PRECISION, MPI_MIN, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(mine, hi, 3, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(mine, tot, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '("r",I0,": sum ",F0.4)') rank, s(1)
  write (*, '("r",I0,": timing: mine clock ",ES22.15," cpu ",ES22.15," wtime ",ES22.15)') rank, mine
  write (*, '("r",I0,": timing: total clock ",ES22.15," cpu ",ES22.15," wtime ",ES22.15)') rank, tot
  if (rank == 0) then
    write (*, '("r",I0,": timing: min ",3(ES22.15,:," ")," max ",3(ES22.15,:," "))') rank, lo, hi
    write (*, '("r",I0,": timers ordered ",L1," resolution ",L1)') rank, all(lo <= hi) .and. all(lo >= 0), &
      MPI_Wtick() > 0 .and. rate > 0
  end if
  write (*, '("r",I0,": done")') rank
  call MPI_Finalize(ierr)
end program f_timers
